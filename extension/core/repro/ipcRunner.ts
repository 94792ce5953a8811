/**
 * Runs `gpumpi repro ipc` once per variant (and per launcher configuration), each as its own mpirun with a timeout,
 * so a crash or hang in one variant never loses the others; classifies each run and answers the report's question.
 */
import {
	REPRO_IPC_REPORT_SCHEMA, validateIpcDocument,
	type IpcVariantResult, type IpcVerdict, type ReproIpcReport, type ReproMpiInfo,
} from '../../shared/reproSchema';
import type { Host } from '../hosts/host';
import { formatSeconds, type ExecuteResult } from '../proc';
import { runLaunch, withConfig, withEvidence, type LaunchConfig, type LaunchSpec } from './launcher';
import { cleanLine, detectCrash, extractJsonDocument, gatherTransportEvidence, interestingLines } from './reproParsers';

/** What to run. */
export interface IpcRunOptions {
	/** Engine path on the host that launches. */
	engine: string;
	spec: LaunchSpec;
	/** Where mpirun/srun runs (default: this machine). */
	host?: Host;
	/** Launcher configurations to try; default one plain configuration. */
	configs: LaunchConfig[];
	variants: string[];
	sizeBytes: number;
	memory: 'device' | 'host';
	/** Per-variant timeout. */
	timeoutMs: number;
	/** Extra engine arguments (e.g. ["--inject", "hang"]) for every variant. */
	engineArgs?: string[];
	/** Progress callback (one line per finished variant). */
	onProgress?: (line: string) => void;
	signal?: AbortSignal;
}

/** Classify one finished run from its raw output (pure: also used for saved device results). */
export function classifyIpcRun(variant: string, config: string, command: string[], r: ExecuteResult, timeoutMs: number): IpcVariantResult {
	const base: IpcVariantResult = {
		variant, config, outcome: 'no_output', detail: '', signal: null, signalName: null, crashedRank: null, ranks: [],
		evidence: [], command, exitCode: r.exitCode, durationMs: r.durationMs, memory: null, gpuUnavailableReason: null,
	};
	const transport = gatherTransportEvidence(r.stdout, r.stderr);
	const interesting = interestingLines(r.stdout + '\n' + r.stderr);
	if (r.timedOut) {
		return {
			...base, outcome: 'timed_out',
			detail: `no result${timeoutMs > 0 ? ` within ${formatSeconds(timeoutMs)}` : ''}; the run was stopped, every process of its session (a rank hung, e.g. waiting for a message that never completes)`,
			evidence: [...interesting, ...transport.lines].slice(0, 40),
		};
	}
	const extracted = extractJsonDocument(r.stdout);
	if ('json' in extracted) {
		const doc = validateIpcDocument(extracted.json);
		if (typeof doc !== 'string') {
			const extra = r.exitCode !== 0 && r.exitCode !== null ? [`mpirun exited with status ${r.exitCode} after the result was printed`] : [];
			return {
				...base, outcome: doc.outcome, detail: doc.detail, ranks: doc.ranks, memory: doc.memory,
				gpuUnavailableReason: doc.gpu_unavailable_reason,
				evidence: [...extra, ...interesting, ...transport.lines].slice(0, 40),
			};
		}
		base.detail = `the engine printed an invalid document: ${doc}`;
	}
	const crash = detectCrash(r.stdout, r.stderr, r.exitCode, r.signal);
	if (crash.crashed) {
		const who = crash.rank !== null ? `rank ${crash.rank}` : crash.pid !== null ? `process ${crash.pid}` : 'a rank';
		const sig = crash.signal !== null ? `signal ${crash.signal}${crash.signalName ? ` (${crash.signalName})` : ''}` : crash.signalName ?? 'a signal';
		return {
			...base, outcome: 'crashed', detail: `${who} was killed by ${sig}; no result was printed`,
			signal: crash.signal, signalName: crash.signalName, crashedRank: crash.rank,
			evidence: [...crash.evidence, ...interesting.filter(l => !crash.evidence.includes(l)), ...transport.lines].slice(0, 40),
		};
	}
	if (r.exitCode === null && r.error && !r.timedOut && r.signal === null) {
		return { ...base, outcome: 'launch_error', detail: `could not start ${command[0]}: ${r.error}` };
	}
	const tail = (r.stderr.trim() || r.stdout.trim()).split('\n').slice(-8).map(cleanLine);
	return {
		...base, outcome: 'no_output',
		detail: base.detail || `mpirun exited with status ${r.exitCode ?? r.signal ?? '?'} without a result (${'error' in extracted ? extracted.error : 'bad document'})`,
		evidence: [...interesting, ...tail].slice(0, 40),
	};
}

/** Run every (config, variant) pair in turn. Never throws for run failures; throws only on invalid options. */
export async function runIpcVariants(opts: IpcRunOptions): Promise<ReproIpcReport> {
	const results: IpcVariantResult[] = [];
	let mpi: ReproMpiInfo | null = null;
	const configs = opts.configs.length > 0 ? opts.configs : [{ label: 'default', env: [], mca: [], extraArgs: [] }];
	for (const config of configs) {
		for (const variant of opts.variants) {
			if (opts.signal?.aborted) { break; }
			const program = [opts.engine, 'repro', 'ipc', '--variant', variant, '--size', String(opts.sizeBytes), '--memory', opts.memory, '--json', ...(opts.engineArgs ?? [])];
			const { argv, result: r, notes: launchNotes } = await runLaunch(withConfig(opts.spec, withEvidence(config, opts.spec.flavor, false)), program,
				{ host: opts.host, timeoutMs: opts.timeoutMs, signal: opts.signal });
			const res = classifyIpcRun(variant, config.label, argv, r, opts.timeoutMs);
			if (launchNotes.length > 0) { res.evidence = [...launchNotes, ...res.evidence].slice(0, 40); }
			if (!mpi) {
				const ex = extractJsonDocument(r.stdout);
				if ('json' in ex) { const d = validateIpcDocument(ex.json); if (typeof d !== 'string') { mpi = d.mpi; } }
			}
			results.push(res);
			opts.onProgress?.(`${config.label} / ${variant}: ${res.outcome}`);
		}
	}
	return { schema: REPRO_IPC_REPORT_SCHEMA, mpi, variants: results, verdict: ipcVerdict(results) };
}

function label(v: IpcVariantResult, multiConfig: boolean): string {
	return multiConfig ? `${v.variant} (${v.config})` : v.variant;
}

/** The answer: does receiving into an IPC-imported pointer work here, why not, and what works instead. */
export function ipcVerdict(variants: IpcVariantResult[]): IpcVerdict {
	const real = variants.filter(v => v.variant !== 'crash-test');
	const multi = new Set(real.map(v => v.config)).size > 1;
	const gpu = real.some(v => v.memory === 'device');
	const direct = real.filter(v => v.variant === 'direct');
	const instead = real.filter(v => v.variant !== 'direct' && v.outcome === 'correct').map(v => label(v, multi));
	const why: string[] = [];
	if (direct.length === 0) {
		return { directWorks: null, gpuVerdict: gpu, answer: 'The direct variant (receive into the imported pointer) was not run.', why, worksInstead: instead };
	}
	const ok = direct.filter(v => v.outcome === 'correct');
	const bad = direct.filter(v => v.outcome !== 'correct');
	for (const v of bad) {
		why.push(`${label(v, multi)}: ${v.outcome}: ${v.detail}`);
		const cudaIpc = v.evidence.filter(l => /cuIpc|cuda_ipc/i.test(l));
		if (cudaIpc.length > 0) {
			why.push('UCX\'s cuda_ipc transport tries to export the buffer again (cuIpcGetMemHandle on memory this process only imported) and has no fallback when that fails (openucx/ucx cuda_ipc_md.c, uct_cuda_ipc_mem_add_reg; open-mpi/ompi#14305).');
		}
		why.push(...v.evidence.slice(0, 6).map(l => `  ${l}`));
	}
	const hostNote = gpu ? '' : ` No GPU verdict: the runs used host memory (${real.find(v => v.gpuUnavailableReason)?.gpuUnavailableReason ?? 'no GPU'}); the same flow with POSIX shared memory in place of CUDA IPC was exercised.`;
	let answer: string;
	let works: boolean;
	if (bad.length === 0) {
		works = true;
		answer = gpu
			? `Yes: receiving into an IPC-imported GPU pointer works on this stack (${ok.map(v => v.config).join(', ')}).`
			: `The flow works with this MPI on host memory.${hostNote}`;
	} else if (ok.length === 0) {
		works = false;
		answer = gpu
			? `No: receiving into an IPC-imported GPU pointer fails on this stack (${bad.map(v => `${label(v, multi)}: ${v.outcome}`).join('; ')}).`
			: `The flow fails with this MPI even on host memory (${bad.map(v => v.outcome).join(', ')}).${hostNote}`;
	} else {
		works = false;
		answer = `It depends on the transport: it works with ${ok.map(v => v.config).join(', ')} but not with ${bad.map(v => `${v.config} (${v.outcome})`).join(', ')}.${hostNote}`;
	}
	if (!works && instead.length > 0) { why.push(`Works instead: ${instead.join(', ')}.`); }
	return { directWorks: works, gpuVerdict: gpu, answer, why, worksInstead: instead };
}
