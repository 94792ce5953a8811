/**
 * The parameter assignments of a fix command line, read once for every consumer: the typed-fix check
 * (core/params/fixParams.ts: each name and value against the host's definitions) and the quick fixes of the
 * Problems panel (shared/findingLocations.ts: which MCA parameters a fix sets, and to what). Pure: no vscode, no
 * Node, no DOM.
 *
 * A fix command is one shell line a user copies: `mpirun --mca pml ucx -mca pml_ucx_tls any ...`,
 * `export UCX_TLS=^cuda_ipc MPIR_CVAR_ENABLE_GPU=0`, and after a `#` often an alternative
 * (`# or: export OMPI_MCA_pml=ucx`). Assignments after the `#` are read too, marked `alternative`: the user may copy
 * either, so both are checked and both count as what the fix sets.
 */

/** One assignment in a fix command. */
export interface CommandAssignment {
	kind: 'mca' | 'ucx' | 'cvar';
	name: string;
	/** Null: no value (`--mca pml` at the end or before another option, `OMPI_MCA_x=`, a `...` placeholder). */
	value: string | null;
	/** After a `#` on the line: an alternative way to write the fix, not part of the command before it. */
	alternative: boolean;
}

const MCA_NAME = /^[a-z][a-z0-9_]*$/;
const ENV = /^(OMPI_MCA_([a-z][a-z0-9_]*)|UCX_([A-Z0-9_]+)|(MPIR_CVAR_[A-Z0-9_]+))=(.*)$/;

/** A word as a value: unquoted; null for none, an option, or a placeholder. */
function valueOf(word: string | undefined): string | null {
	if (word === undefined) { return null; }
	const v = word.replace(/^(['"])(.*)\1$/, '$2');
	return v === '' || v.startsWith('-') || v === '...' || v === ';' ? null : v;
}

/**
 * Every assignment in a fix command line, in order: `--mca N V` / `-mca N V`, `OMPI_MCA_N=V`, `UCX_N=V`,
 * `MPIR_CVAR_N=V` (`export` before them is fine); none where the command is not a string.
 */
export function commandAssignments(command: string | undefined): CommandAssignment[] {
	if (typeof command !== 'string') { return []; }
	const out: CommandAssignment[] = [];
	const words = command.split(/\s+/).filter(w => w.length > 0);
	let alternative = false;
	for (let i = 0; i < words.length; i++) {
		const w = words[i];
		if (w.startsWith('#')) { alternative = true; continue; }
		if ((w === '--mca' || w === '-mca') && words[i + 1] !== undefined && MCA_NAME.test(words[i + 1])) {
			const value = valueOf(words[i + 2]);
			out.push({ kind: 'mca', name: words[i + 1], value, alternative });
			i += value === null && words[i + 2] !== '...' ? 1 : 2;
			continue;
		}
		const m = ENV.exec(w);
		if (!m) { continue; }
		const raw = m[5].replace(/^(['"])(.*)\1$/, '$2');
		const value = raw === '' || raw === '...' ? null : raw;
		if (m[2]) { out.push({ kind: 'mca', name: m[2], value, alternative }); }
		else if (m[3]) { out.push({ kind: 'ucx', name: `UCX_${m[3]}`, value, alternative }); }
		else { out.push({ kind: 'cvar', name: m[4], value, alternative }); }
	}
	return out;
}
