/**
 * Readable summaries of the two repro reports (plain text for the CLI; the same lines can feed a webview), and the
 * reader of a saved device result (scripts/gpu/repro.sh's repro.json) that turns it back into reports.
 */
import {
	JSON_BEGIN_MARKER, JSON_END_MARKER, REPRO_IPC_REPORT_SCHEMA,
	type FallbackResult, type ReproFallbackReport, type ReproIpcReport, type ReproMpiInfo,
} from '../../shared/reproSchema';
import type { ExecuteResult } from '../proc';
import { classifyFallbackRun, combineFallback } from './fallbackRunner';
import { classifyIpcRun, ipcVerdict } from './ipcRunner';
import { gatherTransportEvidence } from './reproParsers';

function mpiLine(mpi: ReproMpiInfo | null): string {
	if (!mpi) { return 'MPI: unknown (no run printed a result)'; }
	const first = mpi.library_version.split('\n')[0].slice(0, 120);
	const ca = mpi.cuda_aware.run_time === null ? 'unknown' : mpi.cuda_aware.run_time ? 'yes' : 'no';
	return `MPI: ${first} (CUDA-aware at run time: ${ca}${mpi.cuda_aware.query ? `, ${mpi.cuda_aware.query}` : ''})`;
}

function pad(s: string, n: number): string { return s.length >= n ? s : s + ' '.repeat(n - s.length); }
function lpad(s: string, n: number): string { return s.length >= n ? s : ' '.repeat(n - s.length) + s; }

/** Text summary of an IPC report. */
export function renderIpcReport(rep: ReproIpcReport): string {
	const out: string[] = ['GPU-MPI Doctor: IPC-imported pointer reproducer', mpiLine(rep.mpi)];
	const mem = rep.variants.find(v => v.memory)?.memory;
	if (mem === 'host') { out.push(`Memory: host (no GPU verdict: ${rep.variants.find(v => v.gpuUnavailableReason)?.gpuUnavailableReason ?? 'no GPU'})`); }
	else if (mem === 'device') { out.push('Memory: device (CUDA IPC between the ranks)'); }
	out.push('');
	out.push(`  ${pad('config', 28)} ${pad('variant', 18)} ${pad('outcome', 16)} detail`);
	for (const v of rep.variants) {
		out.push(`  ${pad(v.config, 28)} ${pad(v.variant, 18)} ${pad(v.outcome, 16)} ${v.detail}`);
	}
	out.push('', `Verdict: ${rep.verdict.answer}`);
	for (const w of rep.verdict.why) { out.push(`  ${w}`); }
	if (rep.verdict.worksInstead.length > 0 && rep.verdict.directWorks !== true) { out.push(`  Use instead: ${rep.verdict.worksInstead.join(', ')}`); }
	for (const v of rep.variants.filter(x => x.variant === 'direct')) {
		const lanes = v.evidence.filter(l => /ep_cfg\[|mca: bml: Using/.test(l)).slice(0, 6);
		if (lanes.length > 0) {
			out.push('', `Transports of direct (${v.config}):`);
			for (const l of lanes) { out.push(`  | ${l}`); }
		}
	}
	const crashed = rep.variants.filter(v => v.outcome === 'crashed' || v.outcome === 'timed_out');
	for (const v of crashed) {
		out.push('', `${v.variant} (${v.config}) ${v.outcome}:`);
		for (const e of v.evidence.slice(0, 6)) { out.push(`  | ${e}`); }
	}
	return out.join('\n') + '\n';
}

function sizeText(b: number): string {
	if (b >= 1 << 30 && b % (1 << 30) === 0) { return `${b / (1 << 30)} GiB`; }
	if (b >= 1 << 20 && b % (1 << 20) === 0) { return `${b / (1 << 20)} MiB`; }
	if (b >= 1024 && b % 1024 === 0) { return `${b / 1024} KiB`; }
	return `${b} B`;
}

function mib(v: number | null): string { return v === null ? '-' : (v / (1 << 20)).toFixed(1); }
function maxOf(r: FallbackResult, f: (m: FallbackResult['memory'][number]) => number | null): number | null {
	const v = r.memory.map(f).filter((x): x is number => typeof x === 'number');
	return v.length ? Math.max(...v) : null;
}

/** Text summary of a fallback report. */
export function renderFallbackReport(rep: ReproFallbackReport): string {
	const out: string[] = [`GPU-MPI Doctor: GPU-buffer fallback reproducer (${rep.config})`, mpiLine(rep.mpi)];
	if (rep.memory === 'host') { out.push(`Memory: host (no GPU verdict: ${rep.gpuUnavailableReason ?? 'no GPU'})`); }
	else if (rep.memory === 'device') { out.push('Memory: device buffers on both ranks'); }
	for (const r of rep.runs) {
		if (r.outcome !== 'ok') { out.push(`Run ${r.modes.join(',')}: ${r.outcome}${r.detail ? `: ${r.detail}` : ''}`); }
	}
	out.push('', `  ${pad('mode', 7)} ${lpad('size', 8)} ${lpad('best GB/s', 10)} ${lpad('median', 8)} ${pad(' data', 12)} ${lpad('RSS+ MiB', 9)} ${lpad('pin+ MiB', 9)} ${lpad('dev+ MiB', 9)} ${lpad('own pin', 8)}`);
	for (const r of rep.results) {
		const data = r.status !== 'ok' ? ` ${r.status}` : r.verified.wrong === 0 ? ' verified' : ` ${r.verified.wrong} wrong`;
		const pin = maxOf(r, m => Math.max(m.pinned_peak_growth_bytes ?? -1, m.locked_peak_growth_bytes ?? -1) >= 0 ? Math.max(m.pinned_peak_growth_bytes ?? 0, m.locked_peak_growth_bytes ?? 0) : null);
		out.push(`  ${pad(r.mode, 7)} ${lpad(sizeText(r.size_bytes), 8)} ${lpad(r.best_gbps === null ? '-' : r.best_gbps.toFixed(2), 10)} ${lpad(r.median_gbps === null ? '-' : r.median_gbps.toFixed(2), 8)} ${pad(data, 12)} ${lpad(mib(maxOf(r, m => m.rss_peak_growth_bytes)), 9)} ${lpad(mib(pin), 9)} ${lpad(mib(maxOf(r, m => m.device_used_peak_growth_bytes)), 9)} ${lpad(mib(maxOf(r, m => m.library_pinned_bytes)), 8)}`);
		if (r.error) { out.push(`          ${r.error}`); }
	}
	out.push('  (RSS+/pin+/dev+: largest peak growth of either rank during the transfers; own pin: the reproducer\'s staging buffers)');
	if (rep.transports.lines.length > 0) {
		out.push('', 'Transport evidence (mpi mode):');
		for (const l of rep.transports.lines.slice(0, 12)) { out.push(`  | ${l}`); }
	}
	out.push('', 'Verdict:');
	for (const t of rep.verdict.text) { out.push(`  ${t}`); }
	return out.join('\n') + '\n';
}

/** One entry of scripts/gpu/repro.sh's repro.json. */
interface DeviceEntry {
	kind: 'ipc' | 'fallback';
	config: string;
	variant?: string;
	modes?: string;
	command: string;
	exit_code: number;
	timed_out: boolean;
	duration_s: number;
	output: string;
	document: unknown;
}

function isEntry(v: unknown): v is DeviceEntry {
	if (typeof v !== 'object' || v === null) { return false; }
	const o = v as Record<string, unknown>;
	return (o.kind === 'ipc' || o.kind === 'fallback') && typeof o.config === 'string' && typeof o.exit_code === 'number' && typeof o.output === 'string';
}

function asExecResult(e: DeviceEntry): ExecuteResult {
	const doc = e.document !== null && e.document !== undefined ? `\n${JSON_BEGIN_MARKER}\n${JSON.stringify(e.document)}\n${JSON_END_MARKER}\n` : '';
	const timedOut = e.timed_out || e.exit_code === 124;
	return { exitCode: timedOut ? null : e.exit_code, signal: null, stdout: e.output + doc, stderr: '', timedOut, durationMs: Math.round((e.duration_s || 0) * 1000) };
}

/** Reports rebuilt from a saved device result; throws Error with a clear message when the file is not one. */
export function reportsFromDeviceJson(data: unknown): { ipc: ReproIpcReport | null; fallback: ReproFallbackReport[] } {
	if (!Array.isArray(data)) { throw new Error('not a repro.json from scripts/gpu/repro.sh (expected a JSON array)'); }
	const entries = data.filter(isEntry);
	if (entries.length === 0) { throw new Error('no repro entries in the file'); }
	const ipcEntries = entries.filter(e => e.kind === 'ipc');
	let ipc: ReproIpcReport | null = null;
	if (ipcEntries.length > 0) {
		const variants = ipcEntries.map(e => classifyIpcRun(e.variant ?? '?', e.config, e.command.split(' '), asExecResult(e), 0));
		const mpiDoc = ipcEntries.map(e => e.document).find(d => typeof d === 'object' && d !== null) as { mpi?: ReproMpiInfo } | undefined;
		ipc = { schema: REPRO_IPC_REPORT_SCHEMA, mpi: mpiDoc?.mpi ?? null, variants, verdict: ipcVerdict(variants) };
	}
	const fallback: ReproFallbackReport[] = [];
	const configs = [...new Set(entries.filter(e => e.kind === 'fallback').map(e => e.config))];
	for (const config of configs) {
		const es = entries.filter(e => e.kind === 'fallback' && e.config === config);
		const classified = es.map(e => classifyFallbackRun((e.modes ?? '').split(','), config, e.command.split(' '), asExecResult(e), 0));
		const withMpi = es.find(e => (e.modes ?? '').split(',').includes('mpi'));
		const transports = withMpi ? gatherTransportEvidence(withMpi.output, '') : { lanes: [], protocols: [], btls: [], lines: [] };
		fallback.push(combineFallback(config, classified.map(c => c.run), classified.flatMap(c => (c.doc ? [c.doc] : [])), transports));
	}
	return { ipc, fallback };
}
