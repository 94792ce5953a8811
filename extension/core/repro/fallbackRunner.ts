/**
 * Runs `gpumpi repro fallback` as n trials per mode (each its own mpirun, so a non-CUDA-aware MPI crashing on device
 * pointers in the `mpi` mode still leaves the staged and host numbers; in rounds, so a cancel keeps whole rounds),
 * with UCX lane/protocol logging on the `mpi` runs for transport evidence, then derives the pair's verdict from the
 * bandwidths' and memory growth's spread over the trials (median, min–max) AND the evidence.
 */
import {
	REPRO_FALLBACK_REPORT_SCHEMA, validateFallbackDocument,
	type FallbackModeSummary, type FallbackResult, type FallbackRun, type FallbackRunOutcome, type FallbackStat, type FallbackTrialResult,
	type FallbackVerdict, type ReproFallbackDocument, type ReproFallbackReport, type TransportEvidence,
} from '../../shared/reproSchema';
import { compareSpreads, DEFAULT_TRIALS, spreadOf, spreadText, type Spread } from '../../shared/trialStats';
import type { Host } from '../host';
import { LocalHost } from '../hosts/localHost';
import { formatSeconds, type ExecuteResult } from '../proc';
import { withConfig, type LaunchConfig, type LaunchSpec } from '../launch/launchSpec';
import { runLaunch } from '../launch/runLaunch';
import { withEvidence } from '../launch/evidenceSwitches';
import { rankFallback, statKey, type FallbackRanking } from './fallbackRanking';
import { errorLines } from './failureSignatures';
import { crashedWho, detectCrash, detectLaunchFailure, launchFailureText, parseRankLines } from '../launch/launcherOutput';
import { extractJsonDocument } from '../parsers/framedDocument';
import { gatherTransportEvidence } from '../parsers/transportLines';

/** What to run. */
export interface FallbackRunOptions {
	/** Engine path on the host that launches. */
	engine: string;
	spec: LaunchSpec;
	/** Where mpirun/srun runs (default: this machine). */
	host?: Host;
	config: LaunchConfig;
	modes: string[];
	/** Engine --sizes text, e.g. "1M..1G". */
	sizes: string;
	iters: number;
	chunk?: string;
	nbuf?: number;
	memory: 'device' | 'host';
	/** Trials per mode (default DEFAULT_TRIALS). */
	trials?: number;
	/** Per-run timeout. */
	timeoutMs: number;
	/** Limit of the whole run; default timeoutMs × every launch. */
	totalTimeoutMs?: number;
	/** Ask UCX for protocol tables too (UCX_PROTO_INFO=y, UCX_PROTO_ENABLE=y). */
	protoInfo: boolean;
	/** UCX settings to try: each trial also runs the `mpi` mode once per setting, with that one variable added to the
	 *  configuration's environment (`--try-ucx`); ranked beside the other options. */
	ucxSettings?: Array<[string, string]>;
	onProgress?: (line: string) => void;
	signal?: AbortSignal;
}

/** Classify one run; returns the run record and the document when there is one. */
export function classifyFallbackRun(modes: string[], config: string, command: string[], r: ExecuteResult, timeoutMs: number, trial = 1): { run: FallbackRun; doc: ReproFallbackDocument | null } {
	const run: FallbackRun = { trial, modes, config, outcome: 'no_output', detail: '', command, exitCode: r.exitCode, durationMs: r.durationMs };
	if (r.timedOut) { return { run: { ...run, outcome: 'timed_out', detail: `no result within ${formatSeconds(timeoutMs)}; the run was stopped, every process of its session` }, doc: null }; }
	const ex = extractJsonDocument(r.stdout);
	if ('json' in ex) {
		const doc = validateFallbackDocument(ex.json);
		if (typeof doc !== 'string') { return { run: { ...run, outcome: doc.outcome, detail: doc.detail }, doc }; }
		run.detail = `invalid document: ${doc}`;
	}
	// The first error lines of the output are the evidence of why no result came (a launcher's SIGTERM of the other
	// ranks after one aborted in MPI_Init reads as a crash, and the cause is in these lines).
	const seen = errorLines(r.stdout, r.stderr);
	const why = seen.length > 0 ? `; the output said: ${seen.join(' | ')}` : '';
	const launch = detectLaunchFailure(r.stdout, r.stderr);
	if (launch !== null) { return { run: { ...run, outcome: 'launch_error', detail: `${launchFailureText(launch, command[0] ?? 'mpirun')}: ${launch.evidence.slice(0, 3).join(' | ')}` }, doc: null }; }
	const crash = detectCrash(r.stdout, r.stderr, r.exitCode, r.signal);
	if (crash.crashed) {
		const who = crashedWho(crash);
		const sig = crash.signal !== null ? `signal ${crash.signal}${crash.signalName ? ` (${crash.signalName})` : ''}` : crash.signalName ?? 'a signal';
		return { run: { ...run, outcome: 'crashed', detail: `${who} was killed by ${sig}: ${crash.evidence.slice(0, 2).join(' | ')}${why}` }, doc: null };
	}
	if (r.exitCode === null && r.error && r.signal === null) { return { run: { ...run, outcome: 'launch_error', detail: r.error }, doc: null }; }
	if (!run.detail && parseRankLines(r.stdout + '\n' + r.stderr).size === 0) {
		// No rank line (each rank prints one right after MPI_Init): no rank got that far, so nothing was measured.
		return { run: { ...run, outcome: 'launch_error', detail: `no rank reached the end of MPI_Init (no rank line) and ${command[0] ?? 'mpirun'} exited with status ${r.exitCode ?? r.signal ?? '?'}; the program may never have run${why || ', and it printed nothing'}` }, doc: null };
	}
	return { run: { ...run, detail: (run.detail || `exit status ${r.exitCode ?? r.signal ?? '?'} and no result: ${'error' in ex ? ex.error : ''}`) + why }, doc: null };
}

/** Run the modes' trials in rounds and combine. Throws only on invalid options. */
export async function runFallbackRepro(opts: FallbackRunOptions): Promise<ReproFallbackReport> {
	const trials = opts.trials ?? DEFAULT_TRIALS;
	if (!Number.isInteger(trials) || trials < 1) { throw new Error(`bad trial count ${trials}`); }
	const tries = opts.modes.includes('mpi') ? opts.ucxSettings ?? [] : [];
	const launches = trials * (opts.modes.length + tries.length);
	const deadline = Date.now() + (opts.totalTimeoutMs ?? opts.timeoutMs * launches);
	const runs: FallbackRun[] = [];
	const docs: Array<{ trial: number; doc: ReproFallbackDocument; setting?: string }> = [];
	let transports: TransportEvidence = { lanes: [], protocols: [], btls: [], lines: [] };
	let stopped = false;
	// One launch per mode, then the mpi mode once per tried UCX setting (null: the configuration itself).
	const plan: Array<{ mode: string; setting: [string, string] | null }> = [...opts.modes.map(mode => ({ mode, setting: null })), ...tries.map(t => ({ mode: 'mpi', setting: t }))];
	for (let trial = 1; trial <= trials && !stopped; trial++) {
		for (const { mode, setting } of plan) {
			if (opts.signal?.aborted || Date.now() >= deadline) { stopped = true; break; }
			const program = [opts.engine, 'repro', 'fallback', '--modes', mode, '--sizes', opts.sizes, '--iters', String(opts.iters), '--memory', opts.memory, '--json'];
			if (opts.chunk) { program.push('--chunk', opts.chunk); }
			if (opts.nbuf) { program.push('--nbuf', String(opts.nbuf)); }
			const name = setting ? `${setting[0]}=${setting[1]}` : null;
			const base: LaunchConfig = setting ? withUcxSetting(opts.config, setting) : opts.config;
			const config = mode === 'mpi' ? withEvidence(base, opts.spec.flavor, opts.protoInfo) : base;
			const left = Math.max(1000, Math.min(opts.timeoutMs, deadline - Date.now()));
			const { argv, result: r, notes: launchNotes } = await runLaunch(withConfig(opts.spec, config), program, { host: opts.host ?? new LocalHost(), timeoutMs: left, signal: opts.signal });
			if (opts.signal?.aborted) { stopped = true; break; }  // the cut run is dropped; finished trials are kept
			const { run, doc } = classifyFallbackRun([name ? `mpi+${name}` : mode], base.label, argv, r, left, trial);
			if (launchNotes.length > 0) { run.detail = `${run.detail} (${launchNotes.join('; ')})`; }
			runs.push(run);
			if (doc) { docs.push(name ? { trial, doc, setting: name } : { trial, doc }); }
			if (mode === 'mpi' && !name && transports.lines.length === 0) { transports = gatherTransportEvidence(r.stdout, r.stderr); }
			opts.onProgress?.(`trial ${trial} of ${trials}: ${base.label} / ${mode}: ${run.outcome}`);
		}
	}
	return combineFallback(opts.config.label, runs, docs, transports, trials, tries.map(([k, v]) => `${k}=${v}`));
}

/** The configuration with one tried UCX setting added (replacing the configuration's own value of that variable). */
export function withUcxSetting(config: LaunchConfig, setting: [string, string]): LaunchConfig {
	return { ...config, label: `${config.label}, ${setting[0]}=${setting[1]}`, env: [...config.env.filter(([k]) => k !== setting[0]), setting] };
}

const RUN_OUTCOMES: readonly FallbackRunOutcome[] = ['ok', 'partial', 'setup_error', 'usage_error', 'crashed', 'timed_out', 'no_output', 'launch_error'];

function modeSummaries(runs: FallbackRun[], requested: number): FallbackModeSummary[] {
	const modes = [...new Set(runs.flatMap(r => r.modes))];
	return modes.map(mode => {
		const mine = runs.filter(r => r.modes.includes(mode));
		const counts = Object.fromEntries(RUN_OUTCOMES.map(o => [o, mine.filter(r => r.outcome === o).length])) as Record<FallbackRunOutcome, number>;
		return { mode, trials: mine.length, requested: Math.max(requested, mine.length), counts };
	});
}

/** Per (mode, size): the spread of the trials' best bandwidth and peak resident growth. */
export function fallbackStats(results: FallbackTrialResult[]): FallbackStat[] {
	const keys = [...new Map(results.map(r => [`${statKey(r)}\u0000${r.size_bytes}`, r] as const)).values()];
	return keys.map(k => {
		const mine = results.filter(r => statKey(r) === statKey(k) && r.size_bytes === k.size_bytes);
		const ok = mine.filter(r => r.status === 'ok');
		return { mode: statKey(k), sizeBytes: k.size_bytes, trials: mine.length, ok: ok.length, bestGbps: spreadOf(ok.map(r => r.best_gbps)), rssGrowth: spreadOf(ok.map(peakRss)) };
	});
}

/**
 * Merge documents of separate runs into one report (also used for saved device results). `docs` may be plain
 * documents (one trial each, as in saved results of before trials) or documents tagged with their trial.
 */
export function combineFallback(config: string, runs: FallbackRun[], docs: Array<ReproFallbackDocument | { trial: number; doc: ReproFallbackDocument; setting?: string }>,
	transports: TransportEvidence, requested = 1, tried: string[] = []): ReproFallbackReport {
	const tagged: Array<{ trial: number; doc: ReproFallbackDocument; setting?: string }> = docs.map(d => ('doc' in d ? d : { trial: 1, doc: d }));
	const first = (tagged.find(d => !d.setting) ?? tagged[0])?.doc ?? null;
	const results: FallbackTrialResult[] = tagged.flatMap(d => d.doc.results.map(r => (d.setting ? { ...r, trial: d.trial, ucx_setting: d.setting } : { ...r, trial: d.trial })));
	// The verdict is about the configuration as given; the tried settings are compared with it in the ranking.
	const own = results.filter(r => !r.ucx_setting);
	const ownRuns = runs.filter(r => !r.modes.some(m => m.startsWith('mpi+')));
	const triedRuns = tried.map(setting => ({ setting, runs: runs.filter(r => r.modes.includes(`mpi+${setting}`)) }));
	const stats = fallbackStats(results);
	const trialsRun = Math.max(0, ...runs.map(r => r.trial));
	const modes = modeSummaries(runs, requested);
	const avail = tagged.flatMap(d => (d.doc.node_memory ?? []).map(m => m.mem_available_bytes)).filter((x): x is number => typeof x === 'number');
	const ranking = rankFallback(stats, results, avail.length ? Math.min(...avail) : null, first?.memory === 'device', first?.chunk_bytes, first?.nbuf,
		first?.mpi.implementation ?? 'unknown', triedRuns);
	return {
		schema: REPRO_FALLBACK_REPORT_SCHEMA, config, mpi: first?.mpi ?? null, memory: first?.memory ?? null,
		gpuUnavailableReason: first?.gpu_unavailable_reason ?? null, trials: Math.max(requested, trialsRun),
		partial: modes.some(m => m.trials < m.requested), modes, runs, results, stats, transports,
		verdict: withRanking(fallbackVerdict(first?.memory ?? null, first?.gpu_unavailable_reason ?? null, ownRuns, own, transports, first?.mpi.cuda_aware.run_time ?? null, stats.filter(st => !st.mode.startsWith('mpi+'))), ranking),
		ranking,
	};
}

const MiB = 1024 * 1024;

/** 268435456 → "256 MiB", 1073741824 → "1 GiB". */
function sizeText(bytes: number): string {
	return bytes >= 1024 * MiB ? `${bytes / (1024 * MiB)} GiB` : `${bytes / MiB} MiB`;
}

/** The verdict's text gains the ranking's lines (after the path and the staging comparison). */
function withRanking(v: FallbackVerdict, r: FallbackRanking): FallbackVerdict {
	return { ...v, text: [...v.text, ...r.text] };
}

function peakRss(r: FallbackResult): number | null {
	const v = r.memory.map(m => m.rss_peak_growth_bytes).filter((x): x is number => typeof x === 'number');
	return v.length ? Math.max(...v) : null;
}

/** The spread over trials of each trial's largest peak RSS growth among `mode`'s results. */
function rssSpread(results: FallbackTrialResult[], mode: string): Spread | null {
	const trials = [...new Set(results.filter(r => r.mode === mode).map(r => r.trial))];
	return spreadOf(trials.map(t => { const v = results.filter(r => r.mode === mode && r.trial === t).map(peakRss).filter((x): x is number => x !== null); return v.length ? Math.max(...v) : null; }));
}

function mibText(s: Spread): string {
	const f = (x: number): string => (x / MiB).toFixed(1);
	return s.n === 1 || s.min === s.max ? `${f(s.median)} MiB` : `${f(s.median)} MiB (${f(s.min)}–${f(s.max)})`;
}

/**
 * "MPI moves GPU data to this peer directly / through host staging / cannot", and the staging comparison, from the
 * trials: bandwidths are the median of each trial's best (with min–max), a difference is claimed only when the
 * ranges do not overlap.
 */
export function fallbackVerdict(memory: 'device' | 'host' | null, gpuReason: string | null, runs: FallbackRun[], results: FallbackResult[] | FallbackTrialResult[],
	transports: TransportEvidence, cudaAwareRunTime: boolean | null, statsIn?: FallbackStat[]): FallbackVerdict {
	const tagged: FallbackTrialResult[] = results.map(r => ('trial' in r ? r as FallbackTrialResult : { ...r, trial: 1 }));
	const stats = statsIn ?? fallbackStats(tagged);
	const gpu = memory === 'device';
	const text: string[] = [];
	const okStat = (mode: string): FallbackStat[] => stats.filter(s => s.mode === mode && s.bestGbps !== null);
	const mpiOk = okStat('mpi'), stagedOk = okStat('staged'), hostOk = okStat('host');
	const common = mpiOk.map(r => r.sizeBytes).filter(s => stagedOk.some(x => x.sizeBytes === s));
	const at = common.length ? Math.max(...common) : mpiOk.length ? Math.max(...mpiOk.map(r => r.sizeBytes)) : null;
	const bwS = (list: FallbackStat[]): Spread | null => at === null ? null : list.find(r => r.sizeBytes === at)?.bestGbps ?? null;
	const mpiS = bwS(mpiOk), stagedS = bwS(stagedOk), hostS = bwS(hostOk);
	const mpiBw = mpiS?.median ?? null, stagedBw = stagedS?.median ?? null, hostBw = hostS?.median ?? null;
	const cmp = mpiS && stagedS ? compareSpreads('manual staging', stagedS, 'MPI', mpiS) : null;
	const ratio = mpiBw && stagedBw ? stagedBw / mpiBw : null;
	const mpiRss = rssSpread(tagged, 'mpi'), stagedRss = rssSpread(tagged, 'staged');
	const mpiExtra = mpiRss?.median ?? null;
	const stagedExtra = stagedRss?.median ?? null;

	// The modes this run asked for (each launch's modes; results alone when no launch is known, as in older files).
	const ran = [...new Set(runs.length > 0 ? runs.flatMap(r => r.modes) : tagged.map(r => r.mode))];
	const mpiRuns = runs.filter(r => r.modes.includes('mpi'));
	const mpiBad = mpiRuns.filter(r => r.outcome === 'crashed' || r.outcome === 'timed_out');
	const mpiFailed = tagged.filter(r => r.mode === 'mpi' && (r.status === 'mpi_error' || r.status === 'wrong_data'));
	const failedTrials = new Set([...mpiBad.map(r => r.trial), ...mpiFailed.map(r => r.trial)]);
	const allFailed = mpiRuns.length > 0 && failedTrials.size >= mpiRuns.length;
	let path: FallbackVerdict['path'] = 'unknown';
	let pathText: string;
	const tagLanes = transports.lanes.flatMap(l => l.lanes.tag ?? []);
	const cudaRows = transports.protocols.filter(p => /cuda/i.test(p.memoryType));
	// Only UCX names its GPU path; Open MPI's smcuda btl is chosen with or without CUDA IPC (btl_smcuda_use_cuda_ipc),
	// so for ob1 the bandwidth decides.
	const evidenceDirect = tagLanes.some(l => l.startsWith('cuda_ipc/')) || cudaRows.some(p => /cuda_ipc/.test(p.lanes));
	const evidenceStaged = cudaRows.some(p => /pipeline|mtype|cuda_copy/.test(p.protocol) && !/cuda_ipc/.test(p.lanes)) ||
		(tagLanes.some(l => l.startsWith('cuda_copy/')) && !tagLanes.some(l => l.startsWith('cuda_ipc/')));
	const n = mpiRuns.length;
	const howFailed = (): string => {
		const r = mpiBad[0];
		return r ? `${r.outcome}: ${r.detail}` : mpiFailed.length > 0 ? `${mpiFailed[0].status}: ${mpiFailed[0].error ?? 'wrong data'}` : 'failed';
	};
	if (memory === null && runs.length > 0 && tagged.length === 0) {
		// No trial printed a document: what memory the engine would have used is unknown too (never "no GPU").
		const first = runs[0];
		pathText = `No result: none of the ${runs.length} run${runs.length === 1 ? '' : 's'} printed a result document, so nothing is known about how MPI moves GPU data to this peer (${first.outcome.replace(/_/g, ' ')}: ${first.detail}).`;
	} else if (!gpu) {
		pathText = `No GPU verdict: the runs used host memory (${gpuReason ?? 'no GPU'}); the numbers compare the three paths on host buffers only.`;
	} else if (allFailed || (failedTrials.size > 0 && mpiBw === null)) {
		path = 'cannot';
		pathText = `MPI cannot move GPU data to this peer${cudaAwareRunTime === false ? ' (not CUDA-aware: the library says so at run time)' : ''}: device pointers to MPI failed in ${failedTrials.size} of ${n} trial${n === 1 ? '' : 's'} (${howFailed()}).`;
	} else if (mpiS !== null && hostS !== null && mpiBw !== null && hostBw !== null) {
		const fasterThanHost = mpiS.min > 2 * Math.max(hostS.max, stagedS?.max ?? 0);
		const likeHost = mpiBw <= 1.25 * Math.max(hostBw, stagedBw ?? 0);
		if (evidenceDirect && !likeHost) { path = 'direct'; } else if (evidenceStaged || likeHost) { path = 'staged'; } else if (fasterThanHost) { path = 'direct'; }
		// smcuda is chosen with and without CUDA IPC (btl_smcuda_use_cuda_ipc), so its line does not decide the path.
		const btlText = transports.btls.length === 0 ? null
			: `Open MPI's btl lines name ${transports.btls.join(', ')}${transports.btls.includes('smcuda') ? ', and smcuda carries GPU data with or without CUDA IPC, so the bandwidth decides' : ''}`;
		const ev = evidenceDirect ? 'the transport evidence shows a GPU-to-GPU path' : evidenceStaged ? 'the transport evidence shows GPU data copied through host memory (cuda_copy / pipeline)' : btlText ?? 'no transport lines were logged';
		const nums = `${spreadText(mpiS)} GB/s through MPI, host-to-host ${spreadText(hostS)} GB/s, median (min–max) of ${Math.min(mpiS.n, hostS.n)} trial${Math.min(mpiS.n, hostS.n) === 1 ? '' : 's'}`;
		pathText = path === 'direct'
			? `MPI moves GPU data to this peer directly (${nums}; ${ev}).`
			: path === 'staged'
				? `MPI moves GPU data to this peer through host staging (${nums}; ${ev}).`
				: `Undecided: ${nums}; ${ev}.`;
		if (failedTrials.size > 0) { pathText += ` But device pointers to MPI failed in ${failedTrials.size} of ${n} trials (${howFailed()}): unreliable.`; }
	} else if (!ran.includes('mpi')) {
		pathText = `The mpi mode was not run (this run's modes: ${ran.join(', ')}), so this says nothing about how MPI moves GPU data to this peer; the lines below are about the modes that ran.`;
	} else if (mpiS !== null && at !== null && !ran.includes('host')) {
		// Without the comparison modes there is no baseline: say what MPI did and what was not run, not "not enough".
		const ev = evidenceDirect ? 'the transport evidence shows a GPU-to-GPU path' : evidenceStaged ? 'the transport evidence shows GPU data copied through host memory (cuda_copy / pipeline)' : 'no transport lines were logged';
		const skipped = ['host', 'staged'].filter(m => !ran.includes(m));
		pathText = `MPI moved GPU data to this peer at ${spreadText(mpiS)} GB/s at ${sizeText(at)} (median (min–max) of ${mpiS.n} trial${mpiS.n === 1 ? '' : 's'}); ${ev}. `
			+ `This run's modes were ${ran.join(', ')}: without the ${skipped.join(' and ')} comparison mode${skipped.length === 1 ? '' : 's'} there is no baseline to tell a direct path from host staging by bandwidth (add ${skipped.join(',')} to --modes).`;
	} else {
		pathText = 'Not enough successful measurements to tell how MPI moves GPU data to this peer.';
	}
	text.push(pathText);
	if (cmp && at !== null) { text.push(`At ${sizeText(at)}, ${cmp.sentence}`); }
	if (Math.max(mpiS?.n ?? 0, stagedS?.n ?? 0) === 1) { text.push('One trial per mode: the numbers have no spread, and a difference between them is not established.'); }
	if (mpiRss !== null) {
		text.push(`MPI needed ${mibText(mpiRss)} extra resident host memory (per trial the largest peak growth of a rank during the mpi-mode transfers; median (min–max) of ${mpiRss.n})` +
			(stagedRss !== null ? `; manual staging ${mibText(stagedRss)} beyond its persistent buffers.` : '.'));
	}
	return { path, pathText, atBytes: at, stagedOverMpi: ratio, differs: cmp ? cmp.differs : null, mpiExtraHostBytes: mpiExtra, stagedExtraHostBytes: stagedExtra, text, gpuVerdict: gpu };
}
