/**
 * Fix commands are typed: every MCA parameter, UCX variable and MPICH CVAR a finding's fix sets is checked against
 * that parameter's definition on the inspected host itself, read from what the inspection collected there:
 * `ompi_info --parsable --all` (name, type, enumerators), `ucx_info -c` (the variables this UCX and
 * its loaded modules define; with `ucx_info -c -f` output also each one's syntax) and MPICH's `mpivars` (the CVARs
 * it defines). A fix whose parameter does not exist there, or whose value its type refuses, is never offered as a
 * command (core/analyze.ts); where the host's definitions were not collected nothing is claimed.
 */
import { commandAssignments, type CommandAssignment } from '../../shared/fixCommand';
import type { RawOutput } from '../../shared/report';

/** One assignment in a fix command (read by shared/fixCommand.ts, the one reader of fix command lines). */
export type ParamAssignment = CommandAssignment;

/** Every assignment in a fix command line, alternatives after a `#` included: each is checked. */
export function fixAssignments(command: string): ParamAssignment[] {
	return commandAssignments(command);
}

/**
 * An MCA parameter as `ompi_info --parsable --all` defines it. Its "status:read-only" is not read: that is the MPI_T
 * scope (not writable after MPI_Init), and such parameters are set on the command line as usual (pml_ucx_tls is
 * read-only there, and `--mca pml_ucx_tls any` was measured to work on Open MPI 4.1.4 and 5.0.7).
 */
export interface McaDef { type: string | null; enumerators: string[] }
/** A UCX variable as `ucx_info -c [-f]` defines it; syntax only from -f. */
export interface UcxDef { syntax: string | null }

/** The definitions the inspection collected on one host; null where that tool's output is missing. */
export interface ParamDefs {
	mca: Map<string, McaDef> | null;
	ucx: Map<string, UcxDef> | null;
	cvar: Set<string> | null;
	/**
	 * Whether this UCX's boolean parser takes "on" / "off" (exactly so, lower case): from 1.15.0 on
	 * (ucs_config_sscanf_bool in src/ucs/config/parser.c); false only where `ucx_info -v` says an older version.
	 */
	ucxOnOff?: boolean;
}

/** MCA definitions from `ompi_info --parsable --all` (synonyms included, with their main name's definition). */
export function mcaDefs(text: string): Map<string, McaDef> {
	const defs = new Map<string, McaDef>();
	const synonyms: Array<[string, string]> = [];
	const get = (n: string): McaDef => { let d = defs.get(n); if (!d) { d = { type: null, enumerators: [] }; defs.set(n, d); } return d; };
	for (const line of text.split('\n')) {
		const m = /^mca:[^:]+:[^:]+:param:([A-Za-z0-9_]+):(.*)$/.exec(line);
		if (!m) { continue; }
		const [, name, rest] = m;
		if (rest.startsWith('type:')) { get(name).type = rest.slice(5).trim(); }
		else if (rest.startsWith('value:')) { get(name); }
		else {
			const e = /^enumerator:value:([^:]*):(.*)$/.exec(rest);
			if (e) { get(name).enumerators.push(e[1], e[2]); continue; }
			const s = /^synonym:name:([A-Za-z0-9_]+)$/.exec(rest);
			if (s) { synonyms.push([s[1], name]); }
		}
	}
	for (const [syn, main] of synonyms) { if (!defs.has(syn)) { defs.set(syn, defs.get(main)!); } }
	return defs;
}

/** UCX definitions from `ucx_info -c` (names) or `ucx_info -c -f` (names with the "# syntax:" line above each). */
export function ucxDefs(text: string): Map<string, UcxDef> {
	const defs = new Map<string, UcxDef>();
	let syntax: string | null = null;
	for (const line of text.split('\n')) {
		const s = /^#\s*syntax:\s*(.*?)\s*$/.exec(line);
		if (s) { syntax = s[1]; continue; }
		const m = /^(UCX_[A-Z0-9_]+)=/.exec(line);
		if (m) { defs.set(m[1], { syntax }); syntax = null; }
	}
	return defs;
}

/**
 * CVAR names from MPICH's `mpivars` output; null unless it is the whole listing (its "N MPI Control Variables" head):
 * only a complete listing shows that a CVAR does not exist.
 */
export function cvarDefs(text: string): Set<string> | null {
	if (!/^\s*\d+ MPI Control Variables/m.test(text)) { return null; }
	return new Set([...text.matchAll(/^\s*(MPIR_CVAR_[A-Z0-9_]+)\s*[=:]/gm)].map(m => m[1]));
}

/** The definitions in an inspection's raw outputs (ids ompi_info, ucx_info_c, mpivars), each only if it ran cleanly. */
export function paramDefsOf(raw: readonly RawOutput[]): ParamDefs {
	const ok = (id: string): string | null => {
		// A bundle's raw outputs are untyped JSON: anything may be there.
		const r = Array.isArray(raw) ? raw.find(x => typeof x === 'object' && x !== null && x.id === id) : undefined;
		return r && !r.error && r.exitCode === 0 && typeof r.stdout === 'string' && r.stdout.length > 0 ? r.stdout : null;
	};
	const ompi = ok('ompi_info');
	const ucx = ok('ucx_info_c');
	const mpivars = ok('mpivars');
	const mca = ompi ? mcaDefs(ompi) : null;
	const v = /version:?\s+(\d+)\.(\d+)/i.exec(ok('ucx_info_v') ?? '');
	const ucxOnOff = !v || Number(v[1]) > 1 || Number(v[2]) >= 15;
	return { mca: mca && mca.size > 0 ? mca : null, ucx: ucx ? ucxDefs(ucx) : null, cvar: mpivars ? cvarDefs(mpivars) : null, ucxOnOff };
}

/** Open MPI's boolean MCA values (mca_base_var_enum bool: true/false, 1/0, yes/no and the like, any case). */
const BOOL = ['y', 'yes', 'n', 'no', '1', '0', 'true', 'false', 'on', 'off'];

/**
 * UCX's boolean forms (ucs_config_sscanf_bool, src/ucs/config/parser.c): y / yes / n / no in any case, 1 and 0; and
 * from 1.15.0 "on" / "off" compared exactly (strcmp). "true" / "false" never: such a value makes UCX refuse its
 * configuration (a fatal error for the global options at library load).
 */
function ucxBool(value: string, onOff: boolean): boolean {
	return /^(y|yes|n|no)$/i.test(value) || value === '1' || value === '0' || (onOff && (value === 'on' || value === 'off'));
}

/**
 * Whether `value` fits a UCX syntax line (the common forms of ucx_info -c -f; an unknown form: true). `onOff`: whether
 * this UCX's booleans take on / off (ParamDefs.ucxOnOff).
 */
export function fitsUcxSyntax(syntax: string, value: string, onOff = true): boolean {
	const v = value.toLowerCase();
	const list = /^comma-separated list(?: \(use "all" for including all items or '\^' for negation\))? of: (.*)$/.exec(syntax);
	if (list) {
		const items = v.replace(/^\^/, '').split(',');
		return v === 'all' || items.every(i => i.length > 0 && fitsUcxSyntax(list[1], i, onOff));
	}
	const choice = /^<([a-z|]+)>$/.exec(syntax);
	if (choice) {
		const allowed = choice[1].split('|');
		if (allowed.includes('y') || allowed.includes('yes')) {
			// a boolean or a ternary (yes / no / try (or maybe) [/ auto]): the boolean forms, then the extra words
			return ucxBool(value, onOff) || (allowed.includes('try') && (v === 'try' || v === 'maybe')) || (allowed.includes('auto') && v === 'auto');
		}
		return allowed.includes(v);
	}
	const en = /^\[([A-Za-z0-9_|.-]+)\]$/.exec(syntax);
	if (en) { return en[1].toLowerCase().split('|').includes(v); }
	const words = (s: string): string[] => [...s.matchAll(/"([a-z]+)"/g)].map(m => m[1]);
	if (/^(unsigned integer|unsigned long)/.test(syntax)) { return /^\d+$/.test(v) || words(syntax).includes(v); }
	if (/^integer/.test(syntax)) { return /^-?\d+$/.test(v); }
	if (/^memory units/.test(syntax)) { return /^\d+(\.\d+)?[kmgt]?b?$/.test(v) || words(syntax).includes(v); }
	if (/^bandwidth value/.test(syntax)) { return /^\d+(\.\d+)?[tgmk]?b([p/]?s)?$/.test(v) || v === 'auto'; }
	if (/^floating point/.test(syntax)) { return /^-?\d+(\.\d+)?$/.test(v); }
	return true;
}

/** Why `a` cannot work on the host these definitions come from, or null (fits, or nothing to check it against). */
export function assignmentProblem(a: Omit<ParamAssignment, 'alternative'>, defs: ParamDefs): string | null {
	if (a.value === null) { return null; }
	if (a.kind === 'mca') {
		if (!defs.mca) { return null; }
		const d = defs.mca.get(a.name);
		if (!d) { return `this Open MPI has no MCA parameter ${a.name} (ompi_info --parsable --all does not list it)`; }
		if (d.enumerators.length > 0 && !d.enumerators.some(e => e.toLowerCase() === a.value!.toLowerCase())) {
			return `${a.name} takes ${[...new Set(d.enumerators)].join(', ')} in this Open MPI, not ${a.value}`;
		}
		if (d.type === 'int' && d.enumerators.length === 0 && !/^-?\d+$/.test(a.value)) { return `${a.name} is an integer in this Open MPI, not ${a.value}`; }
		if (d.type === 'bool' && !BOOL.includes(a.value.toLowerCase())) { return `${a.name} is a boolean in this Open MPI, not ${a.value}`; }
		return null;
	}
	if (a.kind === 'ucx') {
		if (!defs.ucx) { return null; }
		const d = defs.ucx.get(a.name);
		if (!d) { return `this UCX defines no ${a.name} (ucx_info -c does not list it: not in this version, or its module is not built or loaded)`; }
		if (d.syntax && !fitsUcxSyntax(d.syntax, a.value, defs.ucxOnOff ?? true)) { return `${a.name} takes ${d.syntax} in this UCX, not ${a.value}`; }
		return null;
	}
	if (!defs.cvar) { return null; }
	return defs.cvar.has(a.name) ? null : `this MPICH defines no ${a.name} (mpivars does not list it)`;
}

/** The problems of a fix command on this host (empty: offer it). */
export function fixCommandProblems(command: string, defs: ParamDefs): string[] {
	return fixAssignments(command).map(a => assignmentProblem(a, defs)).filter((p): p is string => p !== null);
}

/**
 * The findings with every fix command checked against this host's definitions: a command with a problem is not
 * offered (its text says why, naming the parameter and what this host's MPI / UCX takes); the rest unchanged.
 */
export function withTypedFixes<F extends { fix?: { text: string; command?: string } }>(findings: F[], defs: ParamDefs): F[] {
	return findings.map(f => {
		const command = f.fix?.command;
		if (!f.fix || typeof command !== 'string') { return f; }
		const problems = fixCommandProblems(command, defs);
		if (problems.length === 0) { return f; }
		return { ...f, fix: { text: `${f.fix.text} Not offered as a command on this host: ${problems.join('; ')}.` } };
	});
}
