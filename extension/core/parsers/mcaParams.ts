/**
 * Parsers for Open MPI MCA settings outside ompi_info: parameter files (`name = value`, `#` comments) and
 * `OMPI_MCA_name=value` environment variables, plus the collector's `env`, `which` and `identity` outputs.
 */
import type { EnvEntry, IdentityFacts, Located, McaParamFile, McaSetting, ParseIssue } from '../facts';
import { firstLineEvidence, issue, lineEvidence, looksBinary, parseKeyValueLines, splitLines } from './text';

/** Parse an Open MPI MCA parameter file. Lines that are neither comments nor `name = value` become an issue. */
export function parseMcaParamFile(text: string, path: string, source: string): { file: McaParamFile; issues: ParseIssue[] } {
	const issues: ParseIssue[] = [];
	const file: McaParamFile = { path, settings: [] };
	if (looksBinary(text)) {
		issues.push(issue(source, 'warning', `MCA parameter file ${path} looks binary; it was not parsed.`, firstLineEvidence(source, text)));
		return { file, issues };
	}
	const bad: Located<string>[] = [];
	for (const l of splitLines(text)) {
		const t = l.text.trim();
		if (t === '' || t.startsWith('#')) { continue; }
		const m = /^([A-Za-z0-9_]+)\s*=\s*(.*?)\s*$/.exec(t);
		if (m) {
			file.settings.push({ name: m[1], value: m[2], origin: path, evidence: lineEvidence(source, l) });
		} else {
			bad.push({ value: t, evidence: lineEvidence(source, l) });
		}
	}
	if (bad.length > 0) {
		issues.push(issue(source, 'info', `${bad.length} line(s) of ${path} are not "name = value" and are ignored by Open MPI too.`,
			bad.slice(0, 3).map((b) => b.evidence)));
	}
	return { file, issues };
}

/** Parse the collector's `env` output (`NAME=value` lines). */
export function parseEnv(text: string, source = 'env'): { entries: EnvEntry[]; issues: ParseIssue[] } {
	const issues: ParseIssue[] = [];
	if (looksBinary(text)) {
		issues.push(issue(source, 'warning', 'Environment listing looks binary; it was not parsed.', firstLineEvidence(source, text)));
		return { entries: [], issues };
	}
	const { entries, bad } = parseKeyValueLines(text);
	if (bad.length > 0) {
		issues.push(issue(source, 'info', `${bad.length} line(s) of the environment listing are not NAME=value.`, bad.slice(0, 3).map((b) => lineEvidence(source, b))));
	}
	return { entries: entries.map((e) => ({ name: e.name, value: e.value, evidence: lineEvidence(source, e.line) })), issues };
}

/** `OMPI_MCA_*` variables of an environment, as MCA settings. */
export function mcaSettingsFromEnv(entries: readonly EnvEntry[], origin: string): McaSetting[] {
	return entries
		.filter((e) => e.name.startsWith('OMPI_MCA_') && e.name.length > 9)
		.map((e) => ({ name: e.name.slice(9), value: e.value, origin, evidence: e.evidence }));
}

/** Parse the collector's `which` output (`name=/abs/path` or `name=`). */
export function parseWhich(text: string, source = 'which'): { which: Record<string, Located<string | null>>; issues: ParseIssue[] } {
	const which: Record<string, Located<string | null>> = {};
	const issues: ParseIssue[] = [];
	if (looksBinary(text)) {
		issues.push(issue(source, 'warning', 'Tool path listing looks binary; it was not parsed.', firstLineEvidence(source, text)));
		return { which, issues };
	}
	const { entries, bad } = parseKeyValueLines(text);
	for (const e of entries) {
		const v = e.value.trim();
		which[e.name] = { value: v === '' ? null : v, evidence: lineEvidence(source, e.line) };
	}
	if (bad.length > 0) {
		issues.push(issue(source, 'info', `${bad.length} line(s) of the tool path listing are not name=path.`, bad.slice(0, 3).map((b) => lineEvidence(source, b))));
	}
	return { which, issues };
}

/** Parse the collector's `identity` output (`uid=0`, `user=root`, `hostname=vm`). */
export function parseIdentity(text: string, source = 'identity'): { identity: IdentityFacts; issues: ParseIssue[] } {
	const identity: IdentityFacts = { uid: null, user: null, hostname: null };
	const issues: ParseIssue[] = [];
	if (looksBinary(text)) {
		issues.push(issue(source, 'warning', 'Identity output looks binary; it was not parsed.', firstLineEvidence(source, text)));
		return { identity, issues };
	}
	const { entries } = parseKeyValueLines(text);
	for (const e of entries) {
		const ev = lineEvidence(source, e.line);
		if (e.name === 'uid' && /^\d+$/.test(e.value.trim())) { identity.uid = { value: Number(e.value.trim()), evidence: ev }; }
		else if (e.name === 'user') { identity.user = { value: e.value.trim(), evidence: ev }; }
		else if (e.name === 'hostname') { identity.hostname = { value: e.value.trim(), evidence: ev }; }
	}
	if (!identity.uid && text.trim() !== '') {
		issues.push(issue(source, 'info', 'Identity output has no numeric uid= line.', firstLineEvidence(source, text)));
	}
	return { identity, issues };
}
