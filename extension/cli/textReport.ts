/**
 * The CLI's readable plain-text report: summary, findings (grouped by severity, with evidence and fix), and one
 * line per raw output. Control characters from tools are made visible so they cannot drive the terminal.
 */
import { reportHeadline } from '../shared/headline';
import type { Finding, Report, Severity } from '../shared/report';

const SEVERITIES: readonly Severity[] = ['error', 'warning', 'info'];
const HEADINGS: Record<Severity, string> = { error: 'ERRORS', warning: 'WARNINGS', info: 'INFORMATION' };

/** Make terminal control sequences harmless (ESC, other C0 controls except tab). */
export function terminalSafe(s: unknown): string {
	return String(s ?? '').replace(/[\u0000-\u0008\u000b-\u001f\u007f\u009b]/g, c => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

function indent(text: string, prefix: string): string {
	return terminalSafe(text).split('\n').map(l => prefix + l).join('\n');
}

/** One finding as text: title, message, evidence, fix and sources (guard output uses it too). */
export function renderFindingText(f: Finding): string {
	const lines = [`  [${f.severity}] ${terminalSafe(f.title)}  (${terminalSafe(f.id)})`, indent(f.message, '      ')];
	if (f.evidence.length > 0) {
		lines.push('      evidence:');
		for (const ev of f.evidence) {
			const where = ev.lineNo !== undefined ? `${ev.source}:${ev.lineNo}` : ev.source;
			lines.push(`        ${terminalSafe(where)}: ${terminalSafe(ev.line)}`);
		}
	}
	if (f.fix) {
		lines.push(`      fix: ${terminalSafe(f.fix.text)}`);
		if (f.fix.command) { lines.push(indent(f.fix.command, '        $ ')); }
	}
	if (Array.isArray(f.sources) && f.sources.length > 0) {
		lines.push('      sources:');
		for (const r of f.sources) { lines.push(`        ${terminalSafe(r.url)}${r.shows ? ` — ${terminalSafe(r.shows)}` : ''}`); }
	} else if (f.source) { lines.push(`      source: ${terminalSafe(f.source)}`); }
	return lines.join('\n');
}

/** The whole text report, ending with a newline. */
export function renderReportText(report: Report): string {
	const s = report.summary;
	const out: string[] = [];
	out.push(`GPU-MPI Doctor ${terminalSafe(report.tool.version)} — host ${terminalSafe(s.hostname || report.host.label)} (${report.elapsedMs} ms, ${terminalSafe(report.createdAt)})`);
	out.push('');
	const h = report.headline ?? reportHeadline(report);
	out.push(`VERDICT  ${terminalSafe(h.text)}`);
	for (const x of h.evidence) { out.push(`  based on ${terminalSafe(x.ref)}: ${terminalSafe(x.text)}`); }
	out.push('');
	out.push(`  MPI          ${terminalSafe(s.mpi.label)}   CUDA-aware: ${s.mpi.cudaAware}${s.mpi.detail ? `  — ${terminalSafe(s.mpi.detail)}` : ''}`);
	out.push(`  UCX          ${terminalSafe(s.ucx.label)}   CUDA transports: ${s.ucx.cuda}${s.ucx.detail ? `  — ${terminalSafe(s.ucx.detail)}` : ''}`);
	out.push(`  CUDA driver  ${terminalSafe(s.cuda.label)}${s.cuda.driverVersion ? `  (${terminalSafe(s.cuda.driverVersion)})` : ''}`);
	if (s.gpus.length === 0) {
		out.push('  GPUs         none reported');
	} else {
		for (const g of s.gpus) { out.push(`  GPU ${g.index}        ${terminalSafe(g.name)}  ${terminalSafe(g.pciBusId)}  ${g.memoryMiB} MiB`); }
	}
	out.push('');
	const counts = SEVERITIES.map(sev => `${report.findings.filter(f => f.severity === sev).length} ${sev}`).join(', ');
	out.push(`FINDINGS (${counts})`);
	if (report.findings.length === 0) { out.push('  none'); }
	for (const sev of SEVERITIES) {
		const group = report.findings.filter(f => f.severity === sev);
		if (group.length === 0) { continue; }
		out.push('');
		out.push(`${HEADINGS[sev]}`);
		for (const f of group) { out.push(renderFindingText(f)); out.push(''); }
	}
	out.push('');
	out.push('RAW OUTPUTS');
	for (const r of report.raw) {
		const status = r.exitCode === null ? `not run: ${r.error ?? 'unknown'}` : `exit ${r.exitCode}${r.error ? ` (${r.error})` : ''}`;
		out.push(`  ${terminalSafe(r.id).padEnd(28)} ${terminalSafe(status)}  ${r.durationMs} ms`);
		for (const n of r.notes ?? []) { out.push(`  ${''.padEnd(28)} note: ${terminalSafe(n)}`); }
	}
	return out.join('\n') + '\n';
}
