/**
 * Readable summaries of the two repro reports (plain text for the CLI; the same lines can feed a webview), and the
 * reader of a saved device result (scripts/gpu/repro.sh's repro.json) that turns it back into reports.
 */
import {
	JSON_BEGIN_MARKER, JSON_END_MARKER, REPRO_IPC_REPORT_SCHEMA,
	type FallbackResult, type IpcVariantResult, type IpcVariantSummary, type ReproFallbackReport, type ReproIpcReport, type ReproMpiInfo,
} from '../../shared/reproSchema';
import { spreadText } from '../../shared/trialStats';
import { isFrameLine } from '../parsers/framedDocument';
import type { ExecuteResult } from '../proc';
import { classifyFallbackRun, combineFallback } from './fallbackRunner';
import { classifyIpcRun, summarizeAll } from './ipcRunner';
import { ipcVerdict } from './ipcVerdict';
import { gatherTransportEvidence } from '../parsers/transportLines';

function mpiLine(mpi: ReproMpiInfo | null): string {
	if (!mpi) { return 'MPI: unknown (no run printed a result)'; }
	const first = mpi.library_version.split('\n')[0].slice(0, 120);
	const ca = mpi.cuda_aware.run_time === null ? 'unknown' : mpi.cuda_aware.run_time ? 'yes' : 'no';
	const order = mpi.cuda_first_touched ? `, CUDA first touched ${mpi.cuda_first_touched}` : '';
	return `MPI: ${first} (CUDA-aware at run time: ${ca}${mpi.cuda_aware.query ? `, ${mpi.cuda_aware.query}` : ''}${order})`;
}

function pad(s: string, n: number): string { return s.length >= n ? s : s + ' '.repeat(n - s.length); }
function lpad(s: string, n: number): string { return s.length >= n ? s : ' '.repeat(n - s.length) + s; }

/** "correct 9 · crashed 2" for a summary's nonzero counts. */
export function countsText(v: IpcVariantSummary): string {
	const names: Record<string, string> = { timed_out: 'hung', wrong_data: 'wrong data', launch_error: 'launch error', no_output: 'no result' };
	return Object.entries(v.counts).filter(([, n]) => n > 0).map(([o, n]) => `${names[o] ?? o.replace(/_/g, ' ')} ${n}`).join(' · ');
}

/** One mark per trial: "+" correct, "C" crashed, "H" hung, "W" wrong data, "L" launch error, "E" other. */
export function trialMarks(runs: IpcVariantResult[]): string {
	// "+", not ".": a row of dots read as text cut off (issue 32).
	return runs.map(r => r.outcome === 'correct' ? '+' : r.outcome === 'crashed' ? 'C' : r.outcome === 'timed_out' ? 'H' : r.outcome === 'wrong_data' ? 'W' : r.outcome === 'launch_error' ? 'L' : 'E').join('');
}

/** What the text summaries show: the verdict and the per-variant / per-size table; `verbose` adds every trial's detail. */
export interface RenderOptions {
	/** Every trial, the transport lines and the failure samples (the CLI's --verbose). */
	verbose?: boolean;
}

const MORE = '(every trial, the transport lines and sample failures: --verbose; the whole result: --json)';

/** Text summary of an IPC report: the verdict first, then one row per variant; details with `verbose`. */
export function renderIpcReport(rep: ReproIpcReport, opts: RenderOptions = {}): string {
	const out: string[] = ['GPU-MPI Doctor: IPC-imported pointer reproducer', mpiLine(rep.mpi)];
	const runs = rep.variants.flatMap(v => v.runs);
	const mem = runs.find(v => v.memory)?.memory;
	if (mem === 'host') { out.push(`Memory: host (no GPU verdict: ${runs.find(v => v.gpuUnavailableReason)?.gpuUnavailableReason ?? 'no GPU'})`); }
	else if (mem === 'device') { out.push('Memory: device (CUDA IPC between the ranks)'); }
	out.push(`Trials: ${rep.trials} per variant and configuration, each its own launch${rep.partial ? ' — PARTIAL: cancelled before every trial ran' : ''}`);
	out.push('', `Verdict: ${rep.verdict.answer}`);
	for (const w of rep.verdict.why) { out.push(`  ${w}`); }
	if (rep.verdict.bounceFix) {
		out.push('', `The bounce with libgpumpi (complete program: ${rep.verdict.bounceFix.example}):`);
		for (const l of rep.verdict.bounceFix.code.trimEnd().split('\n')) { out.push(`    ${l}`); }
	}
	out.push('');
	// The config column is as wide as its longest label ("ucx UCX_TLS=^cuda_ipc UCX_MEMTYPE_CACHE=n" is 41), so the
	// columns after it stay aligned.
	const cw = Math.max(28, ...rep.variants.map(v => v.config.length));
	out.push(`  ${pad('config', cw)} ${pad('variant', 18)} ${pad('class', 13)} ${pad('trials', 14)} counts`);
	for (const v of rep.variants) {
		out.push(`  ${pad(v.config, cw)} ${pad(v.variant, 18)} ${pad(v.class, 13)} ${pad(trialMarks(v.runs), 14)} ${countsText(v)}`);
		out.push(`  ${pad('', cw)} ${pad('', 18)} ${v.sentence}`);
	}
	out.push('  (trials: + correct, C crashed, H hung, W wrong data, L launch error, E other)');
	if (!opts.verbose) {
		for (const v of rep.variants) {
			for (const m of v.failureModes) { out.push(`  ${v.variant} (${v.config}): ${m.label} — ${m.count} of ${v.trials}`); }
		}
		out.push('', MORE);
		return out.join('\n') + '\n';
	}
	for (const v of rep.variants.filter(x => x.variant === 'direct')) {
		const lanes = [...new Set(v.runs.flatMap(r => r.evidence.filter(l => /ep_cfg\[|mca: bml: Using/.test(l))))].slice(0, 6);
		if (lanes.length > 0) {
			out.push('', `Transports of direct (${v.config}):`);
			for (const l of lanes) { out.push(`  | ${l}`); }
		}
	}
	for (const v of rep.variants) {
		for (const m of v.failureModes) {
			out.push('', `${v.variant} (${v.config}): ${m.label} — ${m.count} of ${v.trials}; sample: trial ${m.sampleTrial}:`);
			for (const e of m.sampleEvidence.slice(0, 6)) { out.push(`  | ${e}`); }
		}
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

/** Text summary of a fallback report: the verdict and the fix first, then one row per mode and size; details with `verbose`. */
export function renderFallbackReport(rep: ReproFallbackReport, opts: RenderOptions = {}): string {
	const out: string[] = [`GPU-MPI Doctor: GPU-buffer fallback reproducer (${rep.config})`, mpiLine(rep.mpi)];
	if (rep.memory === 'host') { out.push(`Memory: host (no GPU verdict: ${rep.gpuUnavailableReason ?? 'no GPU'})`); }
	else if (rep.memory === 'device') { out.push('Memory: device buffers on both ranks'); }
	out.push(`Trials: ${rep.trials} per mode, each its own launch${rep.partial ? ' — PARTIAL: cancelled before every trial ran' : ''}; ` +
		rep.modes.map(m => `${m.mode} ${Object.entries(m.counts).filter(([, n]) => n > 0).map(([o, n]) => `${o} ${n}`).join(', ')}`).join('; '));
	out.push('', 'Verdict:');
	for (const t of rep.verdict.text) { out.push(`  ${t}`); }
	const fix = rep.ranking?.fix;
	if (fix) {
		out.push('', `The fix (${fix.mode}): replace MPI_Isend/MPI_Irecv for this peer with libgpumpi (complete program: ${fix.example})`);
		for (const l of fix.code.trimEnd().split('\n')) { out.push(`    ${l}`); }
		out.push('  Build:');
		for (const l of fix.build) { out.push(`    ${l}`); }
	}
	out.push('', `  ${pad('mode', 10)} ${lpad('size', 8)} ${lpad('ok', 6)}  ${pad('best GB/s: median (min–max)', 30)} RSS+ MiB: median (min–max)`);
	for (const st of rep.stats) {
		const rss = st.rssGrowth ? spreadText({ ...st.rssGrowth, median: st.rssGrowth.median / (1 << 20), min: st.rssGrowth.min / (1 << 20), max: st.rssGrowth.max / (1 << 20) }, 1) : '-';
		out.push(`  ${pad(st.mode, 10)} ${lpad(sizeText(st.sizeBytes), 8)} ${lpad(`${st.ok}/${st.trials}`, 6)}  ${pad(st.bestGbps ? spreadText(st.bestGbps) : '-', 30)} ${rss}`);
	}
	const failed = rep.runs.filter(r => r.outcome !== 'ok');
	if (!opts.verbose) {
		if (failed.length > 0) { out.push('', `${failed.length} run(s) did not end ok: ${[...new Set(failed.map(r => r.outcome))].join(', ')}`); }
		out.push('', MORE);
		return out.join('\n') + '\n';
	}
	for (const r of failed) { out.push(`Run ${r.modes.join(',')} (trial ${r.trial}): ${r.outcome}${r.detail ? `: ${r.detail}` : ''}`); }
	out.push('', 'Every trial:');
	out.push(`  ${pad('mode', 10)} ${lpad('trial', 5)} ${lpad('size', 8)} ${lpad('best GB/s', 10)} ${lpad('median', 8)} ${pad(' data', 12)} ${lpad('RSS+ MiB', 9)} ${lpad('pin+ MiB', 9)} ${lpad('dev+ MiB', 9)} ${lpad('own pin', 8)}`);
	for (const r of rep.results) {
		const data = r.status !== 'ok' ? ` ${r.status}` : r.verified.wrong === 0 ? ' verified' : ` ${r.verified.wrong} wrong`;
		const pin = maxOf(r, m => Math.max(m.pinned_peak_growth_bytes ?? -1, m.locked_peak_growth_bytes ?? -1) >= 0 ? Math.max(m.pinned_peak_growth_bytes ?? 0, m.locked_peak_growth_bytes ?? 0) : null);
		out.push(`  ${pad(r.mode, 10)} ${lpad(String(r.trial), 5)} ${lpad(sizeText(r.size_bytes), 8)} ${lpad(r.best_gbps === null ? '-' : r.best_gbps.toFixed(2), 10)} ${lpad(r.median_gbps === null ? '-' : r.median_gbps.toFixed(2), 8)} ${pad(data, 12)} ${lpad(mib(maxOf(r, m => m.rss_peak_growth_bytes)), 9)} ${lpad(mib(pin), 9)} ${lpad(mib(maxOf(r, m => m.device_used_peak_growth_bytes)), 9)} ${lpad(mib(maxOf(r, m => m.library_pinned_bytes)), 8)}`);
		if (r.error) { out.push(`          ${r.error}`); }
	}
	out.push('  (RSS+/pin+/dev+: largest peak growth of either rank during the transfers; own pin: the reproducer\'s staging buffers)');
	if (rep.transports.lines.length > 0) {
		out.push('', 'Transport evidence (mpi mode):');
		for (const l of rep.transports.lines.slice(0, 12)) { out.push(`  | ${l}`); }
	}
	return out.join('\n') + '\n';
}

/**
 * The text two reproducer results are compared by (VS Code's diff editor): where they came from, then each summary as
 * the CLI prints it (verdict, one row per variant / mode and size), so the diff shows what changed: versions, classes,
 * counts, bandwidth and host memory.
 */
export function reproComparableText(r: { ipc: ReproIpcReport | null; fallback: ReproFallbackReport[]; source?: string }): string {
	const parts = [`Source: ${r.source ?? 'unknown'}`, ''];
	if (r.ipc) { parts.push(renderIpcReport(r.ipc)); }
	for (const f of r.fallback) { parts.push(renderFallbackReport(f)); }
	if (!r.ipc && r.fallback.length === 0) { parts.push('(no reproducer runs)'); }
	return parts.join('\n');
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
	const hasDoc = e.document !== null && e.document !== undefined;
	const doc = hasDoc ? `\n${JSON_BEGIN_MARKER}\n${JSON.stringify(e.document)}\n${JSON_END_MARKER}\n` : '';
	// The script kept the document it reassembled from every chunk; the chunk lines left in its output tail are only
	// some of them (a 25 KB fallback document is 42 chunks, the tail 40 lines: seen on the H200, 2026-12-03), and a
	// reader would take those (with the frame's BEGIN/END lines) for a damaged framed document.
	const output = hasDoc ? e.output.split('\n').filter(l => !isFrameLine(l)).join('\n') : e.output;
	const timedOut = e.timed_out || e.exit_code === 124;
	return { exitCode: timedOut ? null : e.exit_code, signal: null, stdout: output + doc, stderr: '', timedOut, durationMs: Math.round((e.duration_s || 0) * 1000) };
}

/** Reports rebuilt from a saved device result; throws Error with a clear message when the file is not one. */
export function reportsFromDeviceJson(data: unknown): { ipc: ReproIpcReport | null; fallback: ReproFallbackReport[] } {
	if (!Array.isArray(data)) { throw new Error('not a repro.json from scripts/gpu/repro.sh (expected a JSON array)'); }
	const entries = data.filter(isEntry);
	if (entries.length === 0) { throw new Error('no repro entries in the file'); }
	const ipcEntries = entries.filter(e => e.kind === 'ipc');
	let ipc: ReproIpcReport | null = null;
	if (ipcEntries.length > 0) {
		// Entries of the same configuration and variant are trials of it (older files hold one each: never a verdict).
		const seen = new Map<string, number>();
		const runs = ipcEntries.map(e => {
			const k = `${e.config}\u0000${e.variant ?? '?'}`;
			const trial = (seen.get(k) ?? 0) + 1;
			seen.set(k, trial);
			return classifyIpcRun(e.variant ?? '?', e.config, e.command.split(' '), asExecResult(e), 0, trial);
		});
		const mpiDoc = ipcEntries.map(e => e.document).find(d => typeof d === 'object' && d !== null) as { mpi?: ReproMpiInfo; size_bytes?: number } | undefined;
		const variants = summarizeAll(runs, 1);
		ipc = { schema: REPRO_IPC_REPORT_SCHEMA, mpi: mpiDoc?.mpi ?? null, trials: Math.max(...variants.map(v => v.trials)), partial: false, cut: null, variants,
			verdict: ipcVerdict(variants, { sizeBytes: typeof mpiDoc?.size_bytes === 'number' ? mpiDoc.size_bytes : null }) };
	}
	const fallback: ReproFallbackReport[] = [];
	const configs = [...new Set(entries.filter(e => e.kind === 'fallback').map(e => e.config))];
	for (const config of configs) {
		const es = entries.filter(e => e.kind === 'fallback' && e.config === config);
		const seen = new Map<string, number>();
		const classified = es.map(e => {
			const trial = (seen.get(e.modes ?? '') ?? 0) + 1;
			seen.set(e.modes ?? '', trial);
			return { trial, ...classifyFallbackRun((e.modes ?? '').split(','), config, e.command.split(' '), asExecResult(e), 0, trial) };
		});
		const withMpi = es.find(e => (e.modes ?? '').split(',').includes('mpi'));
		const transports = withMpi ? gatherTransportEvidence(withMpi.output, '') : { lanes: [], protocols: [], btls: [], lines: [] };
		fallback.push(combineFallback(config, classified.map(c => c.run), classified.flatMap(c => (c.doc ? [{ trial: c.trial, doc: c.doc }] : [])), transports));
	}
	return { ipc, fallback };
}
