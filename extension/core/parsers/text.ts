/**
 * Line-level helpers shared by the tool-output parsers: splitting, evidence, binary detection, issues.
 * Every parser reads pure tool output one line at a time and never throws on bad input.
 */
import type { Evidence, Severity } from '../../shared/report';
import type { ParseIssue } from '../facts';

/** Evidence lines longer than this are cut (a hostile or broken output must not bloat the report). */
export const MAX_EVIDENCE_CHARS = 400;

/** Parsers stop looking at lines beyond this count (a few MB of output is fine, a runaway one is cut). */
export const MAX_LINES = 200_000;

/** One physical line with its 1-based number. */
export interface NumberedLine { text: string; lineNo: number }

/** Split output into lines (\n, \r\n or \r), dropping a trailing empty line. */
export function splitLines(text: string): NumberedLine[] {
	const parts = text.split(/\r\n|\n|\r/);
	if (parts.length > 0 && parts[parts.length - 1] === '') { parts.pop(); }
	const n = Math.min(parts.length, MAX_LINES);
	const out: NumberedLine[] = new Array(n);
	for (let i = 0; i < n; i++) { out[i] = { text: parts[i], lineNo: i + 1 }; }
	return out;
}

/** Make evidence for a line, cutting it to a sane length and removing control characters (except tab). */
export function evidence(source: string, line: string, lineNo?: number): Evidence {
	const clean = cleanLine(line);
	return lineNo === undefined ? { source, line: clean } : { source, line: clean, lineNo };
}

/** A line as evidence text: control characters (except tab) replaced, cut to MAX_EVIDENCE_CHARS. */
export function cleanLine(line: string): string {
	// eslint-disable-next-line no-control-regex
	const clean = line.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '\uFFFD');
	return clean.length > MAX_EVIDENCE_CHARS ? clean.slice(0, MAX_EVIDENCE_CHARS) + '…' : clean;
}

/** Evidence for a numbered line. */
export function lineEvidence(source: string, l: NumberedLine): Evidence {
	return evidence(source, l.text, l.lineNo);
}

/**
 * True when text does not look like tool output: NUL bytes, or many control / replacement characters.
 * Checks only the first 64 KiB so huge outputs stay cheap.
 */
export function looksBinary(text: string): boolean {
	const sample = text.length > 65536 ? text.slice(0, 65536) : text;
	if (sample.length === 0) { return false; }
	let bad = 0;
	for (let i = 0; i < sample.length; i++) {
		const c = sample.charCodeAt(i);
		if (c === 0) { return true; }
		if ((c < 32 && c !== 9 && c !== 10 && c !== 13 && c !== 27) || c === 0xfffd) { bad++; }
	}
	return bad / sample.length > 0.05;
}

/** Build a ParseIssue. */
export function issue(source: string, severity: Severity, message: string, ev: Evidence[] = []): ParseIssue {
	return { source, severity, message, evidence: ev };
}

/** First non-empty line of a text, as evidence, for "could not parse" issues. */
export function firstLineEvidence(source: string, text: string): Evidence[] {
	const lines = splitLines(text.length > 4096 ? text.slice(0, 4096) : text);
	const first = lines.find((l) => l.text.trim() !== '');
	return first ? [lineEvidence(source, first)] : [];
}

/** Parse `NAME=value` lines (env, which, identity). Lines without "=" are returned as `bad`. */
export function parseKeyValueLines(text: string): { entries: { name: string; value: string; line: NumberedLine }[]; bad: NumberedLine[] } {
	const entries: { name: string; value: string; line: NumberedLine }[] = [];
	const bad: NumberedLine[] = [];
	for (const l of splitLines(text)) {
		if (l.text.trim() === '') { continue; }
		const m = /^([A-Za-z_][A-Za-z0-9_.-]*)=(.*)$/.exec(l.text);
		if (m) { entries.push({ name: m[1], value: m[2], line: l }); } else { bad.push(l); }
	}
	return { entries, bad };
}

/** Split a configure command line (`'--a=b' '--c'` or `--a=b --c`) into arguments. */
export function splitConfigureArgs(line: string): string[] {
	const args: string[] = [];
	const re = /'([^']*)'|"([^"]*)"|(\S+)/g;
	let m: RegExpExecArray | null;
	while ((m = re.exec(line)) !== null) { args.push(m[1] ?? m[2] ?? m[3]); }
	return args;
}

/** Parse a dotted version into numbers ("1.15.0rc3" → [1, 15, 0]); empty when none. */
export function versionParts(v: string): number[] {
	const m = /(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(v);
	if (!m) { return []; }
	return [m[1], m[2], m[3]].filter((x): x is string => x !== undefined).map((x) => Number(x));
}
