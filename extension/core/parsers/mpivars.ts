/**
 * MPICH's control variables as `mpivars` lists them (MPICH's own MPI_T listing tool, shipped with Debian's mpich
 * package as /usr/bin/mpivars): one line per CVAR, `\tNAME<pad>=VALUE\tSCOPE\tBINDING\tMPI_TYPE\tVERBOSITY\tDESCRIPTION`,
 * the VALUE being what this MPICH read from the environment it was started with. A value MPICH cannot parse makes
 * MPI_Init abort ("Unable to parse environment variable (NAME)"): that is read too, as the CVAR that broke it.
 */
import { lineEvidence, splitLines } from './text';
import type { MpichCvar, MpivarsListing } from '../facts';

const CVAR_LINE = /^\s*(MPIR_CVAR_[A-Z0-9_]+)\s*=([^\t]*)\t(SCOPE_[A-Z_]+)\t[^\t]*\t(MPI_[A-Z_]+)\t[^\t]*(?:\t(.*))?$/;
const UNPARSABLE = /Unable to parse environment variable \((MPIR_CVAR_[A-Z0-9_]+)\)/;

/** Parse `mpivars` output (stdout and stderr together); never throws. */
export function parseMpivars(text: string, source: string): MpivarsListing {
	const cvars: MpichCvar[] = [];
	const seen = new Set<string>();
	let unparsable: MpivarsListing['unparsable'] = null;
	for (const l of splitLines(text)) {
		const m = CVAR_LINE.exec(l.text);
		if (m && !seen.has(m[1])) {
			seen.add(m[1]);
			cvars.push({ name: m[1], value: m[2].trim(), type: m[4], description: (m[5] ?? '').trim(), evidence: lineEvidence(source, l) });
			continue;
		}
		const u = UNPARSABLE.exec(l.text);
		if (u && !unparsable) { unparsable = { name: u[1], evidence: lineEvidence(source, l) }; }
	}
	return { cvars, unparsable };
}
