/**
 * A saved inspection (`gpumpi-doctor inspect --json`, or "Save…" in VS Code) read back: the text is checked to be a
 * report of this schema with the fields every view reads typed as they must be; anything else is refused with the
 * field that is wrong (never thrown at a view, never half-shown). Strings stay data: the views escape them. Pure.
 */
import { REPORT_SCHEMA, type Report } from './report';

/** Largest saved report read (an inspection with every raw output is a few MiB). */
export const MAX_REPORT_BYTES = 64 * 1024 * 1024;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const SEVERITIES = new Set(['error', 'warning', 'info']);

/** The report in `text`, or why it is not one. */
export function parseReportText(text: string): { ok: true; report: Report } | { ok: false; error: string } {
	if (text.length > MAX_REPORT_BYTES) { return { ok: false, error: `larger than ${MAX_REPORT_BYTES / 1024 / 1024} MiB` }; }
	let v: unknown;
	try { v = JSON.parse(text); } catch (e) { return { ok: false, error: `not JSON (${e instanceof Error ? e.message : String(e)})` }; }
	if (!isObj(v)) { return { ok: false, error: 'not a JSON object' }; }
	if (v.schema !== REPORT_SCHEMA) { return { ok: false, error: `schema is ${JSON.stringify(v.schema)?.slice(0, 80)}, not ${REPORT_SCHEMA} (an inspection saved by gpumpi-doctor inspect --json or "Save…")` }; }
	if (typeof v.createdAt !== 'string') { return { ok: false, error: 'createdAt is not a string' }; }
	const host = v.host;
	if (!isObj(host) || typeof host.id !== 'string' || typeof host.label !== 'string' || !['local', 'ssh', 'bundle'].includes(String(host.kind))) { return { ok: false, error: 'host is not {id, label, kind: local|ssh|bundle}' }; }
	const s = v.summary;
	if (!isObj(s) || typeof s.hostname !== 'string' || !isObj(s.mpi) || !isObj(s.ucx) || !isObj(s.cuda) || !Array.isArray(s.gpus)) { return { ok: false, error: 'summary is not {hostname, mpi, ucx, cuda, gpus}' }; }
	if (!Array.isArray(v.findings)) { return { ok: false, error: 'findings is not an array' }; }
	for (const [i, f] of v.findings.entries()) {
		if (!isObj(f) || typeof f.id !== 'string' || !SEVERITIES.has(String(f.severity)) || typeof f.title !== 'string' || typeof f.message !== 'string' || !Array.isArray(f.evidence)) {
			return { ok: false, error: `findings[${i}] is not {id, severity: error|warning|info, title, message, evidence[]}` };
		}
		for (const [j, e] of f.evidence.entries()) {
			if (!isObj(e) || typeof e.source !== 'string' || typeof e.line !== 'string' || (e.lineNo !== undefined && !Number.isInteger(e.lineNo))) { return { ok: false, error: `findings[${i}].evidence[${j}] is not {source, line, lineNo?}` }; }
		}
	}
	if (!Array.isArray(v.raw)) { return { ok: false, error: 'raw is not an array' }; }
	for (const [i, r] of v.raw.entries()) {
		if (!isObj(r) || typeof r.id !== 'string' || !Array.isArray(r.command) || typeof r.stdout !== 'string' || typeof r.stderr !== 'string' || !(r.exitCode === null || Number.isInteger(r.exitCode))) {
			return { ok: false, error: `raw[${i}] is not {id, command[], exitCode, stdout, stderr}` };
		}
	}
	if (v.headline !== undefined && (!isObj(v.headline) || typeof v.headline.text !== 'string' || typeof v.headline.verdict !== 'string' || !Array.isArray(v.headline.evidence))) { return { ok: false, error: 'headline is not {verdict, text, evidence[]}' }; }
	if (!isObj(v.tool)) { return { ok: false, error: 'tool is not {name, version}' }; }
	return { ok: true, report: { ...v, engine: v.engine ?? null, probe: v.probe ?? null, facts: v.facts ?? null, elapsedMs: typeof v.elapsedMs === 'number' ? v.elapsedMs : 0 } as Report };
}
