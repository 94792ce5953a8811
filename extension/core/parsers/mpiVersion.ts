/**
 * Parsers for the version texts of MPI launchers and libraries: `mpirun --version`, `mpichversion`,
 * and `MPI_Get_library_version` strings (as the engine reports them).
 */
import type { Located, MpichFacts, MpiImplementation, ParseIssue } from '../facts';
import { firstLineEvidence, issue, lineEvidence, looksBinary, NumberedLine, splitLines } from './text';

/** What a version text says about the MPI family and version. */
export interface MpiVersionInfo {
	implementation: MpiImplementation;
	version: Located<string> | null;
	/** The line that identified the family. */
	line: Located<string> | null;
}

const FAMILIES: { impl: MpiImplementation; re: RegExp }[] = [
	{ impl: 'cray', re: /CRAY MPICH/i },
	{ impl: 'intel', re: /Intel\(R\) MPI Library/i },
	{ impl: 'mvapich', re: /MVAPICH/i },
	{ impl: 'openmpi', re: /\bOpen MPI\b|\bOpenRTE\b|\bPRRTE\b/ },
	{ impl: 'mpich', re: /\bMPICH\b|HYDRA build details/ },
];

/** Identify the MPI family and version in any version text (launcher or library). */
export function classifyVersionText(text: string, source: string): MpiVersionInfo {
	const lines = splitLines(text.length > 1_000_000 ? text.slice(0, 1_000_000) : text);
	for (const fam of FAMILIES) {
		const hit = lines.find((l) => fam.re.test(l.text));
		if (!hit) { continue; }
		return { implementation: fam.impl, line: { value: hit.text, evidence: lineEvidence(source, hit) }, version: findVersion(lines, hit, fam.impl, source) };
	}
	return { implementation: 'unknown', version: null, line: null };
}

function findVersion(lines: NumberedLine[], hit: NumberedLine, impl: MpiImplementation, source: string): Located<string> | null {
	const patterns: RegExp[] = impl === 'openmpi'
		? [/\((?:Open MPI|OpenRTE|PRRTE)\)\s+(\S+)/, /Open MPI v(\S+?),/, /Open MPI:\s*(\S+)/]
		: impl === 'cray' ? [/CRAY MPICH version\s+(\S+)/i]
			: impl === 'intel' ? [/Intel\(R\) MPI Library\s+(?:for .*?Version\s+)?(\d[\w.]*)/i, /Version\s+(\d[\w.]*)/]
				: [/Version\s*:\s*(\S+)/i, /version\s+(\d[\w.]*)/i];
	for (const re of patterns) {
		const m = re.exec(hit.text);
		if (m) { return { value: m[1], evidence: lineEvidence(source, hit) }; }
	}
	// MPICH/Hydra put the version on a later "Version:" line.
	for (const l of lines) {
		const m = /^\s*(?:MPICH |MVAPICH2 )?Version\s*:\s*(\S+)/i.exec(l.text);
		if (m) { return { value: m[1], evidence: lineEvidence(source, l) }; }
	}
	return null;
}

/** Parse `mpirun --version` output. */
export function parseMpirunVersion(text: string, source = 'mpirun_version'): { info: MpiVersionInfo; issues: ParseIssue[] } {
	const issues: ParseIssue[] = [];
	if (looksBinary(text)) {
		issues.push(issue(source, 'warning', 'mpirun --version output looks binary or corrupted.', firstLineEvidence(source, text)));
		return { info: { implementation: 'unknown', version: null, line: null }, issues };
	}
	const info = classifyVersionText(text, source);
	if (info.implementation === 'unknown' && text.trim() !== '') {
		issues.push(issue(source, 'info', 'mpirun --version did not name a known MPI (Open MPI, MPICH, MVAPICH, Intel MPI, Cray MPICH).', firstLineEvidence(source, text)));
	}
	return { info, issues };
}

/** Parse MPICH's `mpichversion` output (`MPICH Version:\t4.0.2`, `MPICH Device:\tch4:ucx`, `MPICH configure:\t...`). */
export function parseMpichVersion(text: string, source = 'mpichversion', from = 'mpichversion'): { facts: MpichFacts | null; issues: ParseIssue[] } {
	const issues: ParseIssue[] = [];
	if (text.trim() === '') { return { facts: null, issues }; }
	if (looksBinary(text)) {
		issues.push(issue(source, 'warning', `${source} output looks binary or corrupted.`, firstLineEvidence(source, text)));
		return { facts: null, issues };
	}
	const f: MpichFacts = { version: null, device: null, configure: null, configuredWithCuda: null, from };
	for (const l of splitLines(text)) {
		const m = /^\s*(?:MPICH|MVAPICH2)\s+([A-Za-z ]+?):\s*(.*)$/.exec(l.text);
		if (!m) { continue; }
		const key = m[1].toLowerCase();
		const value = m[2].trim();
		if (key === 'version' && !f.version) { f.version = { value, evidence: lineEvidence(source, l) }; }
		else if (key === 'device' && !f.device) { f.device = { value, evidence: lineEvidence(source, l) }; }
		else if (key === 'configure' && !f.configure) {
			f.configure = { value, evidence: lineEvidence(source, l) };
			const cuda = /--with-cuda(?:=(\S+))?|--enable-gpu|--with-gpu/.exec(value);
			f.configuredWithCuda = { value: cuda !== null && cuda[1] !== 'no', evidence: lineEvidence(source, l) };
		}
	}
	if (!f.version) {
		issues.push(issue(source, 'info', `${source} output has no "MPICH Version:" line.`, firstLineEvidence(source, text)));
		return { facts: null, issues };
	}
	return { facts: f, issues };
}
