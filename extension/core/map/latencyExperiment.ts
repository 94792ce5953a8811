/**
 * Differential diagnosis of one pair's small-message latency (issue 12, "experiments, not guesses"): a 2-rank map
 * as-is (the baseline) and with one factor changed at a time — each a real setting a user can apply (LATENCY_FACTORS)
 * — every configuration N trials (separate launches through runMap, interleaved so that drift of a loaded machine
 * falls on every configuration alike). A factor EXPLAINS the gap only when its whole min–max range lies below the
 * baseline's and its median is at most half the baseline's; fewer than two measured trials on either side give no
 * verdict. A factor that cannot apply here is "not available", never "no effect". Never throws on a failed run.
 */
import { spreadOf, type Spread } from '../../shared/trialStats';
import type { Host } from '../host';
import type { LaunchConfig, LaunchSpec } from '../launch/launchSpec';
import { runMap, type MapEngineOptions } from './mapRunner';
import { startPrivateMps, type MpsDaemon } from './mpsDaemon';

/** How a factor changes the launch: a LaunchConfig delta, the engine's buffer kind, or an MPS daemon on the host. */
export type FactorChange =
	| { kind: 'launch'; env?: Array<[string, string]>; mca?: Array<[string, string]>; openmpiOnly: boolean }
	| { kind: 'memory'; memory: 'device' | 'host' }
	| { kind: 'mps' };

/** One setting the experiment may change. */
export interface LatencyFactor {
	id: string;
	/** What the user would set, exactly. */
	setting: string;
	/** What changing it tests. */
	tests: string;
	change: FactorChange;
}

/** Every factor the product may vary (ids are what `--factors` accepts). */
export const LATENCY_FACTORS: readonly LatencyFactor[] = [
	{ id: 'smcuda-no-ipc', setting: '--mca btl_smcuda_use_cuda_ipc 0', tests: 'Open MPI smcuda without CUDA IPC', change: { kind: 'launch', mca: [['btl_smcuda_use_cuda_ipc', '0']], openmpiOnly: true } },
	{ id: 'ucx-no-cuda-ipc', setting: '-x UCX_TLS=^cuda_ipc', tests: 'UCX without its cuda_ipc transport', change: { kind: 'launch', env: [['UCX_TLS', '^cuda_ipc']], openmpiOnly: false } },
	{ id: 'ob1-vader', setting: '--mca pml ob1 --mca btl vader,self', tests: 'Open MPI shared memory (vader)', change: { kind: 'launch', mca: [['pml', 'ob1'], ['btl', 'vader,self']], openmpiOnly: true } },
	{ id: 'ob1-tcp', setting: '--mca pml ob1 --mca btl tcp,self', tests: 'Open MPI TCP', change: { kind: 'launch', mca: [['pml', 'ob1'], ['btl', 'tcp,self']], openmpiOnly: true } },
	{ id: 'host-memory', setting: '--memory host', tests: 'host buffers instead of device buffers', change: { kind: 'memory', memory: 'host' } },
	{ id: 'device-memory', setting: '--memory device', tests: 'device buffers instead of host buffers', change: { kind: 'memory', memory: 'device' } },
	{ id: 'mps', setting: 'MPS on: nvidia-cuda-mps-control -d', tests: 'the two ranks\' CUDA contexts sharing the GPU through MPS (no time-slicing)', change: { kind: 'mps' } },
];

/** Default trials per configuration. */
export const DEFAULT_EXPERIMENT_TRIALS = 3;

/** What to run. */
export interface LatencyExperimentOptions {
	engine: string;
	/** The launch (its np is forced to 2). */
	spec: LaunchSpec;
	host?: Host;
	/** The user's configuration as-is. */
	baseline: LaunchConfig;
	/** Engine options of the baseline (memory included). */
	map: MapEngineOptions;
	factors: readonly LatencyFactor[];
	trials: number;
	/** Per trial. */
	timeoutMs: number;
	/** MPS on the launching host: the control program's path, or why MPS cannot apply here. */
	mps: { control: string } | { unavailable: string };
	onProgress?: (line: string) => void;
	signal?: AbortSignal;
}

/** One launch of one configuration. */
export interface ExperimentTrial {
	trial: number;
	latency_us: number | null;
	bandwidth_gbps: number | null;
	/** Why this trial measured nothing; null when it did. */
	error: string | null;
}

/** One configuration's trials and their spread. */
export interface ConfigResult {
	label: string;
	/** The first trial's command line. */
	command: string[];
	/** Buffers the engine used (it falls back to host memory without a GPU), and why. */
	memory_used: 'device' | 'host' | null;
	gpu_unavailable_reason: string | null;
	/** The pair's evidence (class, btl / UCX lanes) from the first measured trial. */
	evidence: string[];
	trials: ExperimentTrial[];
	measured: number;
	latency_us: Spread | null;
	bandwidth_gbps: Spread | null;
	notes: string[];
}

/** What the comparison of a factor with the baseline says. */
export type FactorVerdict = 'explains' | 'lower' | 'no_difference' | 'higher' | 'no_verdict';

/** One factor's outcome. */
export interface FactorOutcome {
	id: string;
	setting: string;
	status: 'measured' | 'not_available' | 'same_as_baseline' | 'cancelled';
	/** Why it was not measured. */
	reason: string | null;
	result: ConfigResult | null;
	verdict: FactorVerdict | null;
	sentence: string;
}

/** The experiment's document (docs/map-schema.md, "Latency experiment"). */
export interface LatencyExperiment {
	schema: 'gpumpi.latency-experiment/1';
	small: string;
	large: string;
	iters: number;
	trials: number;
	baseline: ConfigResult;
	factors: FactorOutcome[];
	/** Ids of the factors that explain the baseline's latency. */
	explained_by: string[];
	headline: string;
	/** What could not be tested: factors not available, failed trials, configurations without a verdict. */
	untested: string[];
	cancelled: boolean;
}

/** "151", "7.9", "0.42": enough digits for a latency in µs. */
export function formatUs(x: number): string {
	return x >= 100 ? x.toFixed(0) : x >= 1 ? x.toFixed(1) : x.toFixed(2);
}

/**
 * Factor vs baseline latency spreads: explains = the whole factor range lies below the baseline's and its median is
 * at most half the baseline's; lower / higher = the ranges are apart; no_difference = they overlap; no_verdict = a
 * side with fewer than two measured trials (one trial is never a verdict).
 */
export function compareLatency(baseline: Spread | null, factor: Spread | null): { verdict: FactorVerdict; why: string } {
	const few = (s: Spread | null, who: string): string | null =>
		!s ? `${who} measured no trial` : s.n < 2 ? `${who} measured 1 trial, and one trial is not a verdict` : null;
	const short = few(baseline, 'the baseline') ?? few(factor, 'this configuration');
	if (short || !baseline || !factor) { return { verdict: 'no_verdict', why: short ?? '' }; }
	if (factor.max < baseline.min) {
		return factor.median <= baseline.median / 2
			? { verdict: 'explains', why: `explains it: ${(baseline.median / factor.median).toFixed(1)}× lower, the whole range below as-is` }
			: { verdict: 'lower', why: 'lower, but by less than half: does not explain it' };
	}
	if (factor.min > baseline.max) { return { verdict: 'higher', why: 'higher' }; }
	return { verdict: 'no_difference', why: 'no difference: the ranges overlap' };
}

function sizeWord(small: string): string {
	return /^\d+$/.test(small) ? `${small}-byte` : small;
}

function latencyText(s: Spread, trials: number, withCount: boolean): string {
	const range = s.n > 1 ? `${formatUs(s.min)}–${formatUs(s.max)}` : 'one value';
	return `${formatUs(s.median)} µs (${range}${withCount ? `, ${s.n} of ${trials} trials` : ''})`;
}

/** "changing X: 8-byte latency 7.9 µs (7.5–8.3, 3 of 3 trials) vs 151 µs (148–160) as-is — explains it: …". */
export function factorSentence(setting: string, small: string, base: ConfigResult, f: ConfigResult, why: string): string {
	const fl = f.latency_us, bl = base.latency_us;
	const fText = fl ? latencyText(fl, f.trials.length, true) : `not measured (0 of ${f.trials.length} trials)`;
	const bText = bl ? latencyText(bl, base.trials.length, false) : 'not measured';
	const bw = f.bandwidth_gbps && base.bandwidth_gbps
		? `; bandwidth ${f.bandwidth_gbps.median.toFixed(2)} GB/s (${f.bandwidth_gbps.min.toFixed(2)}–${f.bandwidth_gbps.max.toFixed(2)}) vs ${base.bandwidth_gbps.median.toFixed(2)} (${base.bandwidth_gbps.min.toFixed(2)}–${base.bandwidth_gbps.max.toFixed(2)})` : '';
	return `changing ${setting}: ${sizeWord(small)} latency ${fText} vs ${bText} as-is${bw} — ${why}`;
}

/** Baseline with `delta` applied: a name already set is replaced, never appended (Open MPI joins repeated --mca values with commas). */
function replaced(base: Array<[string, string]>, delta: Array<[string, string]> = []): Array<[string, string]> {
	const names = new Set(delta.map(d => d[0]));
	return [...base.filter(([k]) => !names.has(k)), ...delta];
}

/** The configuration a factor makes of the baseline, or why it cannot (not available / same as the baseline). */
export function planFactor(f: LatencyFactor, o: Pick<LatencyExperimentOptions, 'baseline' | 'map' | 'spec' | 'mps'>):
	{ config: LaunchConfig; memory: 'device' | 'host'; mps: boolean } | { status: 'not_available' | 'same_as_baseline'; reason: string } {
	const c = f.change;
	const label = `changing ${f.setting}`;
	if (c.kind === 'memory') {
		if (c.memory === o.map.memory) { return { status: 'same_as_baseline', reason: `the baseline already uses ${c.memory} memory` }; }
		return { config: { ...o.baseline, label }, memory: c.memory, mps: false };
	}
	if (c.kind === 'mps') {
		if ('unavailable' in o.mps) { return { status: 'not_available', reason: o.mps.unavailable }; }
		return { config: { ...o.baseline, label }, memory: o.map.memory, mps: true };
	}
	if (c.openmpiOnly && o.spec.flavor !== 'openmpi') { return { status: 'not_available', reason: 'an Open MPI setting; this launcher is MPICH' }; }
	const has = (list: Array<[string, string]>, d: Array<[string, string]> = []): boolean => d.every(([k, v]) => list.some(([k2, v2]) => k2 === k && v2 === v));
	if (has(o.baseline.mca, c.mca) && has(o.baseline.env, c.env)) { return { status: 'same_as_baseline', reason: `the baseline already sets ${f.setting}` }; }
	return { config: { ...o.baseline, label, env: replaced(o.baseline.env, c.env), mca: replaced(o.baseline.mca, c.mca) }, memory: o.map.memory, mps: false };
}

function emptyResult(label: string): ConfigResult {
	return { label, command: [], memory_used: null, gpu_unavailable_reason: null, evidence: [], trials: [], measured: 0, latency_us: null, bandwidth_gbps: null, notes: [] };
}

interface Planned { id: string | null; config: LaunchConfig; memory: 'device' | 'host'; mps: boolean; result: ConfigResult }

/** Run the experiment. Never rejects for a failed run: trials carry their errors. */
export async function runLatencyExperiment(o: LatencyExperimentOptions): Promise<LatencyExperiment> {
	const spec = { ...o.spec, np: 2 };
	const outcomes: FactorOutcome[] = [];
	const runs: Planned[] = [{ id: null, config: { ...o.baseline, label: 'as-is' }, memory: o.map.memory, mps: false, result: emptyResult('as-is') }];
	for (const f of o.factors) {
		const p = planFactor(f, o);
		if ('status' in p) { outcomes.push({ id: f.id, setting: f.setting, status: p.status, reason: p.reason, result: null, verdict: null, sentence: `${f.setting}: ${p.status === 'not_available' ? 'not available here' : 'not tested'}: ${p.reason}` }); continue; }
		runs.push({ id: f.id, ...p, result: emptyResult(p.config.label) });
		outcomes.push({ id: f.id, setting: f.setting, status: 'measured', reason: null, result: null, verdict: null, sentence: '' });
	}
	let daemon: MpsDaemon | null = null;
	const mpsRun = runs.find(r => r.mps);
	if (mpsRun && 'control' in o.mps) {
		const d = await startPrivateMps(o.mps.control);
		if ('error' in d) {
			runs.splice(runs.indexOf(mpsRun), 1);
			Object.assign(outcomes.find(x => x.id === mpsRun.id)!, { status: 'not_available', reason: d.error, sentence: `MPS: not available here: ${d.error}` });
		} else {
			daemon = d;
			mpsRun.config = { ...mpsRun.config, env: [...mpsRun.config.env, ...d.env] };
			mpsRun.result.notes.push(d.started);
		}
	}
	let cancelled = false;
	try {
		// Round-robin: trial t of every configuration before trial t + 1 of any.
		for (let t = 1; t <= o.trials && !cancelled; t++) {
			for (const r of runs) {
				if (o.signal?.aborted) { cancelled = true; break; }
				o.onProgress?.(`trial ${t} of ${o.trials}: ${r.config.label}`);
				const trial = await oneTrial(o, spec, r, t);
				// A trial stopped by the cancel measured nothing and failed nothing: it is not counted.
				if (o.signal?.aborted) { cancelled = true; break; }
				r.result.trials.push(trial);
			}
		}
		if (daemon && mpsRun) { mpsRun.result.notes.push(await daemon.servers()); }
	} finally {
		if (daemon && mpsRun) { mpsRun.result.notes.push(await daemon.stop()); }
	}
	return summarize(o, runs, outcomes, cancelled);
}

async function oneTrial(o: LatencyExperimentOptions, spec: LaunchSpec, r: Planned, t: number): Promise<ExperimentTrial> {
	const m = await runMap({ engine: o.engine, spec, host: o.host, config: r.config, map: { ...o.map, memory: r.memory }, timeoutMs: o.timeoutMs, signal: o.signal });
	const res = r.result;
	const fail = (error: string): ExperimentTrial => ({ trial: t, latency_us: null, bandwidth_gbps: null, error });
	if (!m.ok) {
		if (res.command.length === 0) { res.command = m.command; }
		return fail(m.error);
	}
	if (res.command.length === 0) { res.command = m.doc.runner?.command ?? []; }
	const pair = m.doc.pairs.find(p => p.a === 0 && p.b === 1);
	if (!pair) { return fail('the map has no pair 0-1'); }
	if (pair.status !== 'ok' || pair.latency_us === null) { return fail(`pair 0-1 ${pair.status}: ${pair.reason}`); }
	if (res.memory_used === null) {
		res.memory_used = m.doc.memory;
		res.gpu_unavailable_reason = m.doc.gpu_unavailable_reason;
		res.evidence = [`${pair.class}${pair.channel ? ` over ${pair.channel.replace('_', ' ')}` : ''}: ${pair.reason}`, ...pair.evidence];
	}
	return { trial: t, latency_us: pair.latency_us, bandwidth_gbps: pair.bandwidth_gbps, error: null };
}

function summarize(o: LatencyExperimentOptions, runs: Planned[], outcomes: FactorOutcome[], cancelled: boolean): LatencyExperiment {
	for (const r of runs) {
		const ok = r.result.trials.filter(t => t.error === null);
		r.result.measured = ok.length;
		r.result.latency_us = spreadOf(ok.map(t => t.latency_us));
		r.result.bandwidth_gbps = spreadOf(ok.map(t => t.bandwidth_gbps));
	}
	const base = runs[0].result;
	const untested: string[] = [];
	const failed = (r: ConfigResult): void => {
		const bad = r.trials.filter(t => t.error !== null);
		if (bad.length > 0) { untested.push(`${r.label}: ${bad.length} of ${r.trials.length} trials failed (${bad[0].error!.split('\n')[0].slice(0, 600)})`); }
	};
	failed(base);
	for (const out of outcomes) {
		const run = runs.find(r => r.id === out.id);
		if (!run) {
			if (out.status === 'not_available') { untested.push(out.sentence); }
			continue;
		}
		out.result = run.result;
		if (run.result.trials.length === 0) { out.status = 'cancelled'; out.sentence = `${out.setting}: not run (cancelled)`; untested.push(out.sentence); continue; }
		const c = compareLatency(base.latency_us, run.result.latency_us);
		out.verdict = c.verdict;
		out.sentence = factorSentence(out.setting, o.map.small, base, run.result, c.verdict === 'no_verdict' ? `no verdict: ${c.why}` : c.why);
		failed(run.result);
		if (c.verdict === 'no_verdict') { untested.push(`${out.setting}: no verdict (${c.why})`); }
	}
	const explained = outcomes.filter(x => x.verdict === 'explains');
	const word = `${sizeWord(o.map.small)} latency`;
	let headline: string;
	if (!base.latency_us || base.latency_us.n < 2) {
		headline = `No verdict: as-is, ${base.measured} of ${base.trials.length} trials measured the ${word}, and a comparison needs at least two.`;
	} else if (explained.length > 0) {
		headline = `The ${word} of ${formatUs(base.latency_us.median)} µs as-is is explained by ${explained.map(x => `changing ${x.setting} (${formatUs(x.result!.latency_us!.median)} µs)`).join(' and ')}.`;
	} else {
		const tried = outcomes.filter(x => x.status === 'measured').length;
		headline = `None of the ${tried} factor${tried === 1 ? '' : 's'} tested explains the ${word} of ${formatUs(base.latency_us.median)} µs as-is.`;
	}
	return {
		schema: 'gpumpi.latency-experiment/1', small: o.map.small, large: o.map.large, iters: o.map.iters, trials: o.trials,
		baseline: base, factors: outcomes, explained_by: explained.map(x => x.id), headline, untested, cancelled,
	};
}

/** The experiment as text: the headline, one sentence per factor, what could not be tested. */
export function renderLatencyExperiment(e: LatencyExperiment): string {
	const b = e.baseline;
	const out = [e.headline, ''];
	out.push(`as-is: ${b.latency_us ? latencyText(b.latency_us, b.trials.length, true) : `no measurement (0 of ${b.trials.length} trials)`}${b.memory_used ? `, ${b.memory_used} memory` : ''}${b.gpu_unavailable_reason ? ` (no GPU: ${b.gpu_unavailable_reason})` : ''}`);
	if (b.evidence[0]) { out.push(`  path: ${b.evidence[0]}`); }
	if (b.command.length > 0) { out.push(`  command: ${b.command.join(' ')}`); }
	for (const f of e.factors) {
		out.push(`- ${f.sentence}`);
		if (f.result?.evidence[0]) { out.push(`    path: ${f.result.evidence[0]}`); }
		for (const n of f.result?.notes ?? []) { out.push(`    ${n}`); }
	}
	if (e.untested.length > 0) { out.push('', 'Could not test:', ...e.untested.map(u => `- ${u}`)); }
	if (e.cancelled) { out.push('', 'Cancelled: the finished trials are kept above.'); }
	return out.join('\n') + '\n';
}
