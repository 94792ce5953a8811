/**
 * Reads a saved reproducer result from its text: a device result of scripts/gpu/repro.sh (repro.json: an array of
 * run entries, with raw outputs) or a report saved with `gpumpi-doctor repro … --json` (an ipc-report object, a
 * fallback-report object or an array of them), or the reproducer panel's "Save…" (REPRO_RESULTS_SCHEMA: both of one
 * host). Pure (text in, reports out); throws Error with a clear message.
 */
import {
	REPRO_FALLBACK_REPORT_SCHEMA, REPRO_FALLBACK_REPORT_SCHEMA_V1, REPRO_IPC_REPORT_SCHEMA, REPRO_IPC_REPORT_SCHEMA_V1,
	type FallbackResult, type FallbackRun, type FallbackTrialResult, type IpcVariantResult, type ReproFallbackReport, type ReproIpcReport,
} from '../../shared/reproSchema';
import { runKey } from './bugReport';
import { fallbackStats, fallbackVerdict } from './fallbackRunner';
import { matchSignatures } from './failureSignatures';
import { summarizeAll } from './ipcRunner';
import { ipcVerdict } from './ipcVerdict';
import { reportsFromDeviceJson } from './reproRender';

/** Schema of the results the reproducer panel saves ("Save…"): both reproducers' reports of one host, read back here. */
export const REPRO_RESULTS_SCHEMA = 'gpumpi.repro.results/1';

/** The document "Save…" writes: what the panel shows (its source line says where and when it ran). */
export function reproResultsDocument(data: { ipc: ReproIpcReport | null; fallback: ReproFallbackReport[]; source: string }): { schema: typeof REPRO_RESULTS_SCHEMA; source: string; ipc: ReproIpcReport | null; fallback: ReproFallbackReport[] } {
	return { schema: REPRO_RESULTS_SCHEMA, source: data.source, ipc: data.ipc, fallback: data.fallback };
}

/** Everything a saved result yields. */
export interface LoadedRepro {
	ipc: ReproIpcReport | null;
	fallback: ReproFallbackReport[];
	/** Raw output per run (device results only), keyed by runKey(config, variant-or-modes). */
	outputs: Record<string, string>;
	kind: 'device-result' | 'report';
}

function isObj(v: unknown): v is Record<string, unknown> {
	return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A report saved before trials (ipc-report/1: one run per variant): each run becomes trial 1 of its variant, the
 * signatures are read from its kept evidence lines (the raw output was not saved), the verdict is made again — so
 * it is inconclusive (one trial is never a verdict).
 */
export function upgradeIpcReportV1(v: Record<string, unknown>): ReproIpcReport {
	const old = v.variants as Array<Record<string, unknown>>;
	const runs: IpcVariantResult[] = old.map(x => {
		const evidence = (x.evidence as unknown[]).map(String);
		const r = { ...(x as unknown as IpcVariantResult), trial: 1, evidence, log: evidence.join('\n') };
		return { ...r, signatures: matchSignatures(r.log, r.outcome, r.signal ?? null, r.variant) };
	});
	const command = runs[0]?.command ?? [];
	const at = command.indexOf('--size');
	const size = at >= 0 && /^\d+$/.test(command[at + 1] ?? '') ? Number(command[at + 1]) : null;
	const variants = summarizeAll(runs, 1);
	return { schema: REPRO_IPC_REPORT_SCHEMA, mpi: (v.mpi ?? null) as ReproIpcReport['mpi'], trials: 1, partial: false, cut: null, variants, verdict: ipcVerdict(variants, { sizeBytes: size }) };
}

/** A fallback report saved before trials: its runs and results become trial 1, the verdict is made again. */
export function upgradeFallbackReportV1(v: Record<string, unknown>): ReproFallbackReport {
	const old = v as unknown as ReproFallbackReport;
	const runs: FallbackRun[] = old.runs.map(r => ({ ...r, trial: 1 }));
	const results: FallbackTrialResult[] = (old.results as FallbackResult[]).map(r => ({ ...r, trial: 1 }));
	const stats = fallbackStats(results);
	const modes = [...new Set(runs.flatMap(r => r.modes))].map(mode => {
		const mine = runs.filter(r => r.modes.includes(mode));
		const counts = { ok: 0, partial: 0, setup_error: 0, usage_error: 0, crashed: 0, timed_out: 0, no_output: 0, launch_error: 0 };
		for (const r of mine) { counts[r.outcome]++; }
		return { mode, trials: mine.length, requested: mine.length, counts };
	});
	return {
		...old, schema: REPRO_FALLBACK_REPORT_SCHEMA, trials: 1, partial: false, modes, runs, results, stats,
		verdict: fallbackVerdict(old.memory, old.gpuUnavailableReason, runs, results, old.transports, old.mpi?.cuda_aware.run_time ?? null, stats),
	};
}

function isIpcReportV1(v: unknown): v is Record<string, unknown> {
	return isObj(v) && v.schema === REPRO_IPC_REPORT_SCHEMA_V1 && Array.isArray(v.variants) &&
		v.variants.every(x => isObj(x) && typeof x.variant === 'string' && typeof x.config === 'string' && typeof x.outcome === 'string' && Array.isArray(x.evidence) && Array.isArray(x.command));
}

function isFallbackReportV1(v: unknown): v is Record<string, unknown> {
	return isObj(v) && v.schema === REPRO_FALLBACK_REPORT_SCHEMA_V1 && typeof v.config === 'string' && Array.isArray(v.results) && Array.isArray(v.runs) && isObj(v.transports) &&
		v.results.every(r => isObj(r) && typeof r.mode === 'string' && typeof r.size_bytes === 'number' && Array.isArray(r.memory) && Array.isArray(r.seconds)) &&
		v.runs.every(r => isObj(r) && Array.isArray(r.modes) && typeof r.outcome === 'string');
}

function isIpcReport(v: unknown): v is ReproIpcReport {
	return isObj(v) && v.schema === REPRO_IPC_REPORT_SCHEMA && Array.isArray(v.variants) && isObj(v.verdict) && typeof v.trials === 'number' &&
		v.variants.every(x => isObj(x) && typeof x.variant === 'string' && typeof x.config === 'string' && typeof x.trials === 'number' && isObj(x.counts) &&
			Array.isArray(x.failureModes) && Array.isArray(x.runs) &&
			x.runs.every(r => isObj(r) && typeof r.trial === 'number' && typeof r.outcome === 'string' && Array.isArray(r.evidence) && Array.isArray(r.command) && Array.isArray(r.signatures) && typeof r.log === 'string'));
}

function isFallbackReport(v: unknown): v is ReproFallbackReport {
	return isObj(v) && v.schema === REPRO_FALLBACK_REPORT_SCHEMA && typeof v.config === 'string' && Array.isArray(v.results) && Array.isArray(v.runs) &&
		typeof v.trials === 'number' && Array.isArray(v.stats) && Array.isArray(v.modes) &&
		isObj(v.verdict) && Array.isArray((v.verdict as Record<string, unknown>).text) && isObj(v.transports) &&
		v.results.every(r => isObj(r) && typeof r.mode === 'string' && typeof r.size_bytes === 'number' && Array.isArray(r.memory));
}

/** Parse and recognise a saved result. */
export function loadReproText(text: string): LoadedRepro {
	let data: unknown;
	try { data = JSON.parse(text); } catch (e) { throw new Error(`not JSON: ${e instanceof Error ? e.message : String(e)}`); }
	if (isObj(data) && data.schema === REPRO_RESULTS_SCHEMA) {
		const ipc = data.ipc === null ? null : isIpcReport(data.ipc) ? data.ipc : undefined;
		const fallback = Array.isArray(data.fallback) && data.fallback.every(x => isFallbackReport(x)) ? data.fallback as ReproFallbackReport[] : undefined;
		if (ipc === undefined) { throw new Error(`${REPRO_RESULTS_SCHEMA}: ipc is neither null nor a ${REPRO_IPC_REPORT_SCHEMA}`); }
		if (fallback === undefined) { throw new Error(`${REPRO_RESULTS_SCHEMA}: fallback is not an array of ${REPRO_FALLBACK_REPORT_SCHEMA}`); }
		return { ipc, fallback, outputs: {}, kind: 'report' };
	}
	if (isIpcReport(data)) { return { ipc: data, fallback: [], outputs: {}, kind: 'report' }; }
	if (isIpcReportV1(data)) { return { ipc: upgradeIpcReportV1(data), fallback: [], outputs: {}, kind: 'report' }; }
	if (isFallbackReport(data)) { return { ipc: null, fallback: [data], outputs: {}, kind: 'report' }; }
	if (isFallbackReportV1(data)) { return { ipc: null, fallback: [upgradeFallbackReportV1(data)], outputs: {}, kind: 'report' }; }
	if (Array.isArray(data) && data.length > 0 && data.every(x => isFallbackReport(x) || isFallbackReportV1(x))) {
		return { ipc: null, fallback: data.map(x => (isFallbackReport(x) ? x : upgradeFallbackReportV1(x as Record<string, unknown>))), outputs: {}, kind: 'report' };
	}
	if (Array.isArray(data)) {
		const rep = reportsFromDeviceJson(data);
		const outputs: Record<string, string> = {};
		for (const e of data) {
			if (isObj(e) && typeof e.config === 'string' && typeof e.output === 'string') {
				const what = typeof e.variant === 'string' ? e.variant : typeof e.modes === 'string' ? e.modes : '';
				outputs[runKey(e.config, what)] = e.output;
			}
		}
		return { ipc: rep.ipc, fallback: rep.fallback, outputs, kind: 'device-result' };
	}
	throw new Error(`not a repro.json from scripts/gpu/repro.sh (expected a JSON array) nor a saved report (${REPRO_IPC_REPORT_SCHEMA} / ${REPRO_FALLBACK_REPORT_SCHEMA})`);
}
