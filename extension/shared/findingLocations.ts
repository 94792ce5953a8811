/**
 * Where a finding's evidence lives, for the Problems panel, its quick fixes and the panel's evidence links: a line
 * of a file on this machine (an MCA parameter file the collector read, any evidence whose source is an absolute
 * path), or a line of one raw tool output of the report. Pure, no vscode, no DOM: the extension host maps the
 * result to vscode.Diagnostics and code actions (extension/vscode/findingDiagnostics.ts), the webview uses
 * evidenceTarget to scroll its raw-output view.
 */
import { commandAssignments, type CommandAssignment } from './fixCommand';
import type { Evidence, Finding, RawOutput, Report, Severity } from './report';

/** The prefix of the raw output id of an MCA parameter file the collector read (`mca_params:/etc/openmpi/…`). */
export const MCA_PARAMS_PREFIX = 'mca_params:';

/** A line (1-based) of a file on the inspected machine, or of one raw output's stdout / stderr (line absent: no line known). */
export type EvidenceTarget =
	| { kind: 'file'; path: string; line: number }
	| { kind: 'raw'; rawId: string; stream: 'stdout' | 'stderr'; line?: number };

/** The file an evidence source names, when it names one (MCA parameter files; absolute paths). */
export function evidenceFile(source: string): string | null {
	const p = source.startsWith(MCA_PARAMS_PREFIX) ? source.slice(MCA_PARAMS_PREFIX.length) : source;
	return p.startsWith('/') && !p.includes('\0') ? p : null;
}

function isLineNo(n: unknown): n is number {
	return typeof n === 'number' && Number.isInteger(n) && n >= 1;
}

/**
 * Where one evidence line can be shown. A file only when the report is of this machine (`hostKind` 'local': the
 * extension runs where the files are; an SSH host's or a bundle's file is not here) and the line is known;
 * otherwise the raw output it was read from, in the stream whose line `lineNo` is the quoted line (stdout first).
 */
export function evidenceTarget(ev: Evidence, raw: readonly RawOutput[], hostKind: string): EvidenceTarget | null {
	if (typeof ev?.source !== 'string') { return null; }
	const file = evidenceFile(ev.source);
	if (file && hostKind === 'local' && isLineNo(ev.lineNo)) { return { kind: 'file', path: file, line: ev.lineNo }; }
	const r = (Array.isArray(raw) ? raw : []).find(x => x?.id === ev.source);
	if (!r) { return null; }
	if (!isLineNo(ev.lineNo)) { return { kind: 'raw', rawId: r.id, stream: 'stdout' }; }
	const at = (text: unknown): string | undefined => typeof text === 'string' ? text.split('\n')[ev.lineNo! - 1]?.replace(/\r$/, '') : undefined;
	const quoted = (ev.line ?? '').trim();
	const stream = at(r.stdout)?.trim() === quoted ? 'stdout' : at(r.stderr)?.trim() === quoted ? 'stderr' : (at(r.stdout) !== undefined ? 'stdout' : 'stderr');
	return { kind: 'raw', rawId: r.id, stream, line: ev.lineNo };
}

/** One line edit a quick fix makes; applied only while the line still reads `expected` (else the file changed). */
export interface LineEdit {
	title: string;
	path: string;
	line: number;
	expected: string;
	replacement: string;
	/** The one to prefer when there are several (VS Code's "preferred" quick fix). */
	preferred: boolean;
}

/**
 * One Problems-panel entry: a finding at a file line (`path` set: a file of this machine), or at its own line of the
 * host's findings document (`path` null: the finding has no file line here, e.g. tool output or an SSH host's file).
 */
export interface DiagnosticSpec {
	path: string | null;
	/** 1-based: of the file, or of the findings document (reportDocument). */
	line: number;
	severity: Severity;
	message: string;
	findingId: string;
	/** Index of the finding in report.findings (the panel reveals it). */
	findingIndex: number;
	/** The first public source of the finding, linked from the diagnostic's code. */
	sourceUrl?: string;
	/** The fix command the finding suggests (copied by a code action). */
	fixCommand?: string;
	edits: LineEdit[];
}

/**
 * The plain-text findings document of one host's inspection (the Problems entries of findings with no file line sit
 * on its lines): a heading, the headline, the counts, then one line per finding, in report order.
 */
export function reportDocument(report: Pick<Report, 'findings' | 'host' | 'createdAt'> & { headline?: { text: string } }, counts: string): { text: string; lineOf: (findingIndex: number) => number } {
	const one = (s: unknown): string => String(s ?? '').replace(/[\r\n]+/g, ' ');
	const head = [
		`GPU-MPI Doctor: inspection of ${one(report.host?.label)} (${one(report.createdAt)})`,
		one(report.headline?.text ?? ''),
		`Findings: ${counts}`,
		'',
	];
	const findings = Array.isArray(report.findings) ? report.findings : [];
	const lines = findings.map(f => `[${one(f?.severity)}] ${one(f?.title)} (${one(f?.id)}): ${one(f?.message)}${f?.fix?.text ? ` Fix: ${one(f.fix.text)}` : ''}`);
	return { text: [...head, ...lines, ''].join('\n'), lineOf: (i: number) => head.length + i + 1 };
}

const SETTING = /^\s*([A-Za-z0-9_]+)\s*=\s*(.*?)\s*$/;

/** The MCA assignments of a fix command (alternatives after a `#` included), in order. */
function mcaAssignments(command: string | undefined): CommandAssignment[] {
	return commandAssignments(command).filter(a => a.kind === 'mca');
}

/** The value a fix command gives MCA parameter `name` (`--mca name value`, `OMPI_MCA_name=value`), if it gives one. */
export function fixValueFor(name: string, command: string | undefined): string | null {
	return mcaAssignments(command).find(a => a.name === name && a.value !== null)?.value ?? null;
}

/** Every MCA parameter a fix command sets (`--mca name value`, `OMPI_MCA_name=value`), once each. */
export function mcaParamsOf(command: string | undefined): string[] {
	return [...new Set(mcaAssignments(command).map(a => a.name))];
}

/** The quick fixes for one finding's evidence line in an MCA parameter file: set it to the fix's value, or comment it out. */
function mcaEdits(f: Finding, path: string, line: number, text: string): LineEdit[] {
	const m = SETTING.exec(text);
	if (!m || text.trimStart().startsWith('#')) { return []; }
	const [, name, value] = m;
	const out: LineEdit[] = [];
	// A fix that needs other parameters too (e.g. pml ucx with pml_ucx_tls any where its defaults refuse every
	// transport) is not this line's edit: setting or removing the line alone would not work. Copy the fix instead.
	const others = mcaParamsOf(f.fix?.command).filter(n => n !== name);
	if (others.length > 0) { return []; }
	const wanted = fixValueFor(name, f.fix?.command);
	if (wanted !== null && wanted !== value) {
		out.push({ title: `Set "${name} = ${wanted}" in ${path}`, path, line, expected: text, replacement: `${name} = ${wanted}`, preferred: true });
	}
	out.push({ title: `Comment out "${name} = ${value}" in ${path} (Open MPI's default applies)`, path, line, expected: text, replacement: `# ${text.trim()}   # commented out by GPU-MPI Doctor (${f.id})`, preferred: out.length === 0 });
	return out;
}

/**
 * The Problems-panel entries of a report: one per finding. A finding with an evidence line in a file on this machine
 * sits on that line (the first such line; the MCA file edits come from it); any other finding sits on its line of the
 * host's findings document (`path` null, reportDocument). So Problems counts what the panel, the Hosts row and the
 * status bar count.
 */
export function diagnosticsOf(report: Pick<Report, 'findings' | 'raw' | 'host'>, documentLine: (findingIndex: number) => number = i => i + 1): DiagnosticSpec[] {
	const out: DiagnosticSpec[] = [];
	const findings = Array.isArray(report.findings) ? report.findings : [];
	findings.forEach((f, findingIndex) => {
		if (!f || typeof f !== 'object') { return; }
		const sourceUrl = (Array.isArray(f.sources) ? f.sources : []).map(s => s?.url).find(u => typeof u === 'string' && /^https:\/\//.test(u));
		const common = {
			severity: f.severity, findingId: f.id, findingIndex,
			message: `${f.title}: ${f.message}${f.fix?.text ? ` Fix: ${f.fix.text}` : ''}`,
			...(sourceUrl ? { sourceUrl } : {}),
			...(typeof f.fix?.command === 'string' && f.fix.command.length > 0 ? { fixCommand: f.fix.command } : {}),
		};
		for (const ev of Array.isArray(f.evidence) ? f.evidence : []) {
			const t = evidenceTarget(ev, report.raw, report.host?.kind ?? '');
			if (t?.kind !== 'file') { continue; }
			out.push({ ...common, path: t.path, line: t.line, edits: ev.source.startsWith(MCA_PARAMS_PREFIX) ? mcaEdits(f, t.path, t.line, ev.line) : [] });
			return;
		}
		out.push({ ...common, path: null, line: documentLine(findingIndex), edits: [] });
	});
	return out;
}
