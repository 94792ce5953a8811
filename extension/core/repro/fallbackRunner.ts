/**
 * Runs `gpumpi repro fallback` once per mode (each its own mpirun, so a non-CUDA-aware MPI crashing on device
 * pointers in the `mpi` mode still leaves the staged and host numbers), with UCX lane/protocol logging on the
 * `mpi` run for transport evidence, then derives the pair's verdict from bandwidths AND evidence.
 */
import {
	REPRO_FALLBACK_REPORT_SCHEMA, validateFallbackDocument,
	type FallbackResult, type FallbackRun, type FallbackVerdict, type ReproFallbackDocument, type ReproFallbackReport,
	type TransportEvidence,
} from '../../shared/reproSchema';
import type { Host } from '../hosts/host';
import { formatSeconds, type ExecuteResult } from '../proc';
import { runLaunch, withConfig, withEvidence, type LaunchConfig, type LaunchSpec } from './launcher';
import { detectCrash, extractJsonDocument, gatherTransportEvidence } from './reproParsers';

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
	/** Per-run timeout. */
	timeoutMs: number;
	/** Ask UCX for protocol tables too (UCX_PROTO_INFO=y, UCX_PROTO_ENABLE=y). */
	protoInfo: boolean;
	onProgress?: (line: string) => void;
	signal?: AbortSignal;
}

/** Classify one run; returns the run record and the document when there is one. */
export function classifyFallbackRun(modes: string[], config: string, command: string[], r: ExecuteResult, timeoutMs: number): { run: FallbackRun; doc: ReproFallbackDocument | null } {
	const run: FallbackRun = { modes, config, outcome: 'no_output', detail: '', command, exitCode: r.exitCode, durationMs: r.durationMs };
	if (r.timedOut) { return { run: { ...run, outcome: 'timed_out', detail: `no result within ${formatSeconds(timeoutMs)}; the run was stopped, every process of its session` }, doc: null }; }
	const ex = extractJsonDocument(r.stdout);
	if ('json' in ex) {
		const doc = validateFallbackDocument(ex.json);
		if (typeof doc !== 'string') { return { run: { ...run, outcome: doc.outcome, detail: doc.detail }, doc }; }
		run.detail = `invalid document: ${doc}`;
	}
	const crash = detectCrash(r.stdout, r.stderr, r.exitCode, r.signal);
	if (crash.crashed) {
		const who = crash.rank !== null ? `rank ${crash.rank}` : 'a rank';
		const sig = crash.signal !== null ? `signal ${crash.signal}${crash.signalName ? ` (${crash.signalName})` : ''}` : crash.signalName ?? 'a signal';
		return { run: { ...run, outcome: 'crashed', detail: `${who} was killed by ${sig}: ${crash.evidence.slice(0, 2).join(' | ')}` }, doc: null };
	}
	if (r.exitCode === null && r.error && r.signal === null) { return { run: { ...run, outcome: 'launch_error', detail: r.error }, doc: null }; }
	return { run: { ...run, detail: run.detail || `exit status ${r.exitCode ?? r.signal ?? '?'} and no result: ${'error' in ex ? ex.error : ''}` }, doc: null };
}

/** Run the modes and combine. Throws only on invalid options. */
export async function runFallbackRepro(opts: FallbackRunOptions): Promise<ReproFallbackReport> {
	const runs: FallbackRun[] = [];
	const docs: ReproFallbackDocument[] = [];
	let transports: TransportEvidence = { lanes: [], protocols: [], btls: [], lines: [] };
	for (const mode of opts.modes) {
		if (opts.signal?.aborted) { break; }
		const program = [opts.engine, 'repro', 'fallback', '--modes', mode, '--sizes', opts.sizes, '--iters', String(opts.iters), '--memory', opts.memory, '--json'];
		if (opts.chunk) { program.push('--chunk', opts.chunk); }
		if (opts.nbuf) { program.push('--nbuf', String(opts.nbuf)); }
		const config = mode === 'mpi' ? withEvidence(opts.config, opts.spec.flavor, opts.protoInfo) : opts.config;
		const { argv, result: r, notes: launchNotes } = await runLaunch(withConfig(opts.spec, config), program, { host: opts.host, timeoutMs: opts.timeoutMs, signal: opts.signal });
		const { run, doc } = classifyFallbackRun([mode], opts.config.label, argv, r, opts.timeoutMs);
		if (launchNotes.length > 0) { run.detail = `${run.detail} (${launchNotes.join('; ')})`; }
		runs.push(run);
		if (doc) { docs.push(doc); }
		if (mode === 'mpi') { transports = gatherTransportEvidence(r.stdout, r.stderr); }
		opts.onProgress?.(`${opts.config.label} / ${mode}: ${run.outcome}`);
	}
	return combineFallback(opts.config.label, runs, docs, transports);
}

/** Merge documents of separate runs into one report (also used for saved device results). */
export function combineFallback(config: string, runs: FallbackRun[], docs: ReproFallbackDocument[], transports: TransportEvidence): ReproFallbackReport {
	const first = docs[0] ?? null;
	const results = docs.flatMap(d => d.results);
	return {
		schema: REPRO_FALLBACK_REPORT_SCHEMA, config, mpi: first?.mpi ?? null, memory: first?.memory ?? null,
		gpuUnavailableReason: first?.gpu_unavailable_reason ?? null, runs, results, transports,
		verdict: fallbackVerdict(first?.memory ?? null, first?.gpu_unavailable_reason ?? null, runs, results, transports, first?.mpi.cuda_aware.run_time ?? null),
	};
}

const MiB = 1024 * 1024;

function peakRss(r: FallbackResult): number | null {
	const v = r.memory.map(m => m.rss_peak_growth_bytes).filter((x): x is number => typeof x === 'number');
	return v.length ? Math.max(...v) : null;
}

/** "MPI moves GPU data to this peer directly / through host staging / cannot", and the staging comparison. */
export function fallbackVerdict(memory: 'device' | 'host' | null, gpuReason: string | null, runs: FallbackRun[], results: FallbackResult[],
	transports: TransportEvidence, cudaAwareRunTime: boolean | null): FallbackVerdict {
	const gpu = memory === 'device';
	const text: string[] = [];
	const ok = (mode: string): FallbackResult[] => results.filter(r => r.mode === mode && r.status === 'ok' && r.best_gbps !== null);
	const mpiOk = ok('mpi'), stagedOk = ok('staged'), hostOk = ok('host');
	const common = mpiOk.map(r => r.size_bytes).filter(s => stagedOk.some(x => x.size_bytes === s));
	const at = common.length ? Math.max(...common) : null;
	const bw = (list: FallbackResult[]): number | null => at === null ? null : list.find(r => r.size_bytes === at)?.best_gbps ?? null;
	const mpiBw = bw(mpiOk), stagedBw = bw(stagedOk), hostBw = bw(hostOk);
	const ratio = mpiBw && stagedBw ? stagedBw / mpiBw : null;
	const rssOf = (list: FallbackResult[]): number | null => { const v = list.map(peakRss).filter((x): x is number => x !== null); return v.length ? Math.max(...v) : null; };
	const mpiExtra = rssOf(results.filter(r => r.mode === 'mpi'));
	const stagedExtra = rssOf(results.filter(r => r.mode === 'staged'));

	const mpiRun = runs.find(r => r.modes.includes('mpi'));
	const mpiFailed = results.filter(r => r.mode === 'mpi' && (r.status === 'mpi_error' || r.status === 'wrong_data'));
	let path: FallbackVerdict['path'] = 'unknown';
	let pathText: string;
	const tagLanes = transports.lanes.flatMap(l => l.lanes.tag ?? []);
	const cudaRows = transports.protocols.filter(p => /cuda/i.test(p.memoryType));
	// Only UCX names its GPU path; Open MPI's smcuda btl is chosen with or without CUDA IPC (btl_smcuda_use_cuda_ipc),
	// so for ob1 the bandwidth decides.
	const evidenceDirect = tagLanes.some(l => l.startsWith('cuda_ipc/')) || cudaRows.some(p => /cuda_ipc/.test(p.lanes));
	const evidenceStaged = cudaRows.some(p => /pipeline|mtype|cuda_copy/.test(p.protocol) && !/cuda_ipc/.test(p.lanes)) ||
		(tagLanes.some(l => l.startsWith('cuda_copy/')) && !tagLanes.some(l => l.startsWith('cuda_ipc/')));
	if (!gpu) {
		pathText = `No GPU verdict: the runs used host memory (${gpuReason ?? 'no GPU'}); the numbers compare the three paths on host buffers only.`;
	} else if ((mpiRun && (mpiRun.outcome === 'crashed' || mpiRun.outcome === 'timed_out')) || mpiFailed.length > 0) {
		path = 'cannot';
		const how = mpiRun && mpiRun.outcome !== 'ok' && mpiRun.outcome !== 'partial' ? `${mpiRun.outcome}: ${mpiRun.detail}` : `${mpiFailed[0].status}: ${mpiFailed[0].error ?? 'wrong data'}`;
		pathText = `MPI cannot move GPU data to this peer${cudaAwareRunTime === false ? ' (not CUDA-aware: the library says so at run time)' : ''}: device pointers to MPI ${how}.`;
	} else if (mpiBw !== null && hostBw !== null) {
		const fasterThanHost = mpiBw > 2 * Math.max(hostBw, stagedBw ?? 0);
		const likeHost = mpiBw <= 1.25 * Math.max(hostBw, stagedBw ?? 0);
		if (evidenceDirect && !likeHost) { path = 'direct'; } else if (evidenceStaged || likeHost) { path = 'staged'; } else if (fasterThanHost) { path = 'direct'; }
		// smcuda is chosen with and without CUDA IPC (btl_smcuda_use_cuda_ipc), so its line does not decide the path.
		const btlText = transports.btls.length === 0 ? null
			: `Open MPI's btl lines name ${transports.btls.join(', ')}${transports.btls.includes('smcuda') ? ', and smcuda carries GPU data with or without CUDA IPC, so the bandwidth decides' : ''}`;
		const ev = evidenceDirect ? 'the transport evidence shows a GPU-to-GPU path' : evidenceStaged ? 'the transport evidence shows GPU data copied through host memory (cuda_copy / pipeline)' : btlText ?? 'no transport lines were logged';
		pathText = path === 'direct'
			? `MPI moves GPU data to this peer directly (${mpiBw.toFixed(2)} GB/s vs ${hostBw.toFixed(2)} GB/s host-to-host; ${ev}).`
			: path === 'staged'
				? `MPI moves GPU data to this peer through host staging (${mpiBw.toFixed(2)} GB/s, host-to-host ${hostBw.toFixed(2)} GB/s; ${ev}).`
				: `Undecided: ${mpiBw.toFixed(2)} GB/s through MPI vs ${hostBw.toFixed(2)} GB/s host-to-host; ${ev}.`;
	} else {
		pathText = 'Not enough successful measurements to tell how MPI moves GPU data to this peer.';
	}
	text.push(pathText);
	if (ratio !== null && at !== null) {
		const sz = at >= 1024 * MiB ? `${at / (1024 * MiB)} GiB` : `${at / MiB} MiB`;
		text.push(ratio >= 1
			? `At ${sz}, manual staging is ${ratio.toFixed(2)}× faster than MPI (${stagedBw!.toFixed(2)} vs ${mpiBw!.toFixed(2)} GB/s).`
			: `At ${sz}, manual staging is ${(1 / ratio).toFixed(2)}× slower than MPI (${stagedBw!.toFixed(2)} vs ${mpiBw!.toFixed(2)} GB/s).`);
	}
	if (mpiExtra !== null) {
		text.push(`MPI needed ${(mpiExtra / MiB).toFixed(1)} MiB extra resident host memory (largest peak growth of a rank during the mpi-mode transfers)` +
			(stagedExtra !== null ? `; manual staging ${(stagedExtra / MiB).toFixed(1)} MiB beyond its persistent buffers.` : '.'));
	}
	return { path, pathText, atBytes: at, stagedOverMpi: ratio, mpiExtraHostBytes: mpiExtra, stagedExtraHostBytes: stagedExtra, text, gpuVerdict: gpu };
}
