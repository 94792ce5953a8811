/**
 * Runs `gpumpi repro ipc` as n independent trials per variant and launcher configuration, each trial its own mpirun
 * with a timeout (so a crash or hang never loses the other trials), in rounds (trial 1 of every variant, then trial
 * 2, …) so a cancelled run still holds some trials of each; classifies each trial from its own output, reads its
 * failure signatures, and sums them up per variant (counts, class, failure modes). The answer: ipcVerdict.ts.
 */
import {
	MAX_TRIAL_LOG, REPRO_IPC_REPORT_SCHEMA, validateIpcDocument,
	type IpcVariantOutcome, type IpcVariantResult, type IpcVariantSummary, type OutcomeCounts, type ReproIpcReport, type ReproMpiInfo,
} from '../../shared/reproSchema';
import { DEFAULT_TRIALS, trialVerdict } from '../../shared/trialStats';
import type { Host } from '../host';
import { LocalHost } from '../hosts/localHost';
import { formatSeconds, type ExecuteResult } from '../proc';
import { withConfig, type LaunchConfig, type LaunchSpec } from '../launch/launchSpec';
import { runLaunch } from '../launch/runLaunch';
import { withEvidence } from '../launch/evidenceSwitches';
import { groupFailureModes, matchSignatures } from './failureSignatures';
import { ipcVerdict } from './ipcVerdict';
import { cleanLine } from '../parsers/text';
import { crashedWho, detectCrash, detectLaunchFailure, interestingLines, launchFailureText, parseRankLines } from '../launch/launcherOutput';
import { extractJsonDocument } from '../parsers/framedDocument';
import { gatherTransportEvidence } from '../parsers/transportLines';

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
	/** Trials per variant and configuration (default DEFAULT_TRIALS = 11). */
	trials?: number;
	/** Per-trial timeout. */
	timeoutMs: number;
	/** Limit of the whole run; default timeoutMs × every launch (it scales with the trial count). */
	totalTimeoutMs?: number;
	/**
	 * Extra engine arguments (e.g. ["--inject", "hang"]) for every trial. With `--inject crash-fraction=F` (or wrong-fraction) the runner
	 * also passes `--trial I` (the engine decides from the seed and I whether this trial crashes).
	 */
	engineArgs?: string[];
	/** Progress callback (one line per finished trial: "trial 3 of 11: default / direct: correct"). */
	onProgress?: (line: string) => void;
	signal?: AbortSignal;
}

/** Head and tail of a raw output within MAX_TRIAL_LOG characters (the middle is cut and marked). */
export function boundedLog(stdout: string, stderr: string, max = MAX_TRIAL_LOG): string {
	const text = stderr.trim() ? `${stdout.replace(/\s+$/, '')}\n--- stderr ---\n${stderr.replace(/\s+$/, '')}` : stdout.replace(/\s+$/, '');
	if (text.length <= max) { return text; }
	const keep = Math.floor((max - 80) / 2);
	return `${text.slice(0, keep)}\n… [${text.length - 2 * keep} characters cut] …\n${text.slice(text.length - keep)}`;
}

/** Classify one finished run from its raw output (pure: also used for saved device results). */
export function classifyIpcRun(variant: string, config: string, command: string[], r: ExecuteResult, timeoutMs: number, trial = 1): IpcVariantResult {
	const res = classifyOutput(variant, config, command, r, timeoutMs, trial);
	res.log = boundedLog(r.stdout, r.stderr);
	// Signatures are read from this trial's whole output (not only the kept evidence lines).
	res.signatures = matchSignatures(r.stdout + '\n' + r.stderr, res.outcome, res.signal, variant);
	return res;
}

function classifyOutput(variant: string, config: string, command: string[], r: ExecuteResult, timeoutMs: number, trial: number): IpcVariantResult {
	const base: IpcVariantResult = {
		trial, variant, config, outcome: 'no_output', detail: '', signal: null, signalName: null, crashedRank: null, ranks: [],
		evidence: [], command, exitCode: r.exitCode, durationMs: r.durationMs, memory: null, gpuUnavailableReason: null, signatures: [], log: '',
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
	const launch = detectLaunchFailure(r.stdout, r.stderr);
	if (launch !== null) {
		return { ...base, outcome: 'launch_error', detail: launchFailureText(launch, command[0] ?? 'mpirun'), evidence: [...launch.evidence, ...interesting.filter(l => !launch.evidence.includes(l))].slice(0, 40) };
	}
	const crash = detectCrash(r.stdout, r.stderr, r.exitCode, r.signal);
	if (crash.crashed) {
		const who = crashedWho(crash);
		const sig = crash.signal !== null ? `signal ${crash.signal}${crash.signalName ? ` (${crash.signalName})` : ''}` : crash.signalName ?? 'a signal';
		return {
			...base, outcome: 'crashed', detail: `${who} was killed by ${sig}; no result was printed`,
			signal: crash.signal, signalName: crash.signalName, crashedRank: crash.rank,
			evidence: [...crash.evidence, ...interesting.filter(l => !crash.evidence.includes(l)), ...transport.lines].slice(0, 40),
		};
	}
	if (r.exitCode === null && r.error && !r.timedOut && r.signal === null) {
		// A run that had started (its remote session was stopped afterwards: `cleanup`, e.g. after the ssh connection
		// ended mid-run) is not one that could not start.
		const what = r.cleanup !== undefined ? `${command[0]} started but did not finish` : `could not start ${command[0]}`;
		return { ...base, outcome: 'launch_error', detail: `${what}: ${r.error}` };
	}
	const tail = (r.stderr.trim() || r.stdout.trim()).split('\n').slice(-8).map(cleanLine);
	const said = tail.filter(l => l.trim().length > 0);
	if (!base.detail && parseRankLines(r.stdout + '\n' + r.stderr).size === 0) {
		// Every rank prints its rank line right after MPI_Init: none means no rank got that far (the program did not
		// start, or MPI_Init never returned), so the run measured nothing of the pattern (NOT_MEASURED), whatever it exited with.
		return {
			...base, outcome: 'launch_error',
			detail: `no rank reached the end of MPI_Init (no rank line) and ${command[0] ?? 'mpirun'} exited with status ${r.exitCode ?? r.signal ?? '?'}; the program may never have run${said.length > 0 ? `; the output ends: ${said.slice(-3).join(' | ')}` : ', and it printed nothing'}`,
			evidence: [...interesting, ...said].slice(0, 40),
		};
	}
	return {
		...base, outcome: 'no_output',
		detail: base.detail || `mpirun exited with status ${r.exitCode ?? r.signal ?? '?'} without a result (${'error' in extracted ? extracted.error : 'bad document'})`,
		evidence: [...interesting, ...tail].slice(0, 40),
	};
}

const OUTCOMES: readonly IpcVariantOutcome[] = ['correct', 'wrong_data', 'mpi_error', 'setup_error', 'placement_error', 'usage_error', 'crashed', 'timed_out', 'no_output', 'launch_error'];
/** Outcomes that measured nothing about the transport: not a failure, not a success. */
export const NOT_MEASURED: readonly IpcVariantOutcome[] = ['launch_error', 'usage_error', 'placement_error'];

/** Zero counts for every outcome. */
export function emptyCounts(): OutcomeCounts {
	return Object.fromEntries(OUTCOMES.map(o => [o, 0])) as OutcomeCounts;
}

/** The trials of one variant under one configuration, summed up. */
export function summarizeTrials(variant: string, config: string, runs: IpcVariantResult[], requested: number): IpcVariantSummary {
	const counts = emptyCounts();
	for (const r of runs) { counts[r.outcome] = (counts[r.outcome] ?? 0) + 1; }
	const notMeasured = NOT_MEASURED.reduce((n, o) => n + counts[o], 0);
	const measured = runs.length - notMeasured;
	const failures = measured - counts.correct;
	const v = trialVerdict(runs.length, measured, failures);
	return {
		variant, config, trials: runs.length, requested, counts, failures, class: v.class, ruledOutAbove: v.ruledOutAbove, sentence: v.sentence,
		failureModes: groupFailureModes(runs), runs,
	};
}

/** Group trial records by (config, variant) in first-seen order and sum each group up. */
export function summarizeAll(runs: IpcVariantResult[], requested: number): IpcVariantSummary[] {
	const groups = new Map<string, IpcVariantResult[]>();
	for (const r of runs) {
		const k = `${r.config}\u0000${r.variant}`;
		groups.set(k, [...(groups.get(k) ?? []), r]);
	}
	return [...groups.values()].map(g => summarizeTrials(g[0].variant, g[0].config, g, Math.max(requested, g.length)));
}

/** Every (config, variant) trial in rounds. Never throws for run failures; throws only on invalid options. */
export async function runIpcVariants(opts: IpcRunOptions): Promise<ReproIpcReport> {
	const trials = opts.trials ?? DEFAULT_TRIALS;
	if (!Number.isInteger(trials) || trials < 1) { throw new Error(`bad trial count ${trials}`); }
	const configs = opts.configs.length > 0 ? opts.configs : [{ label: 'default', env: [], mca: [], extraArgs: [] }];
	const launches = trials * configs.length * opts.variants.length;
	const deadline = Date.now() + (opts.totalTimeoutMs ?? opts.timeoutMs * launches);
	const fraction = (opts.engineArgs ?? []).some(a => /^(crash|wrong)-fraction=/.test(a));
	const results: IpcVariantResult[] = [];
	let mpi: ReproMpiInfo | null = null;
	let stopped = false;
	let cut: IpcVariantResult | null = null;
	let done = 0;
	for (let trial = 1; trial <= trials && !stopped; trial++) {
		for (const config of configs) {
			for (const variant of opts.variants) {
				if (opts.signal?.aborted || Date.now() >= deadline) { stopped = true; break; }
				const program = [opts.engine, 'repro', 'ipc', '--variant', variant, '--size', String(opts.sizeBytes), '--memory', opts.memory, '--json',
					...(opts.engineArgs ?? []), ...(fraction ? ['--trial', String(trial)] : [])];
				const left = Math.max(1000, Math.min(opts.timeoutMs, deadline - Date.now()));
				const { argv, result: r, notes: launchNotes } = await runLaunch(withConfig(opts.spec, withEvidence(config, opts.spec.flavor, false)), program,
					{ host: opts.host ?? new LocalHost(), timeoutMs: left, signal: opts.signal });
				const res = classifyIpcRun(variant, config.label, argv, r, left, trial);
				if (launchNotes.length > 0) { res.evidence = [...launchNotes, ...res.evidence].slice(0, 40); }
				// A trial cut by the cancel is not a finished trial: not counted (kept apart for its evidence).
				if (opts.signal?.aborted) { cut = res; stopped = true; break; }
				if (!mpi) {
					const ex = extractJsonDocument(r.stdout);
					if ('json' in ex) { const d = validateIpcDocument(ex.json); if (typeof d !== 'string') { mpi = d.mpi; } }
				}
				results.push(res);
				done++;
				opts.onProgress?.(`trial ${trial} of ${trials}: ${config.label} / ${variant}: ${res.outcome} (${done} of ${launches} runs)`);
			}
			if (stopped) { break; }
		}
	}
	const variants = summarizeAll(results, trials);
	return { schema: REPRO_IPC_REPORT_SCHEMA, mpi, trials, partial: done < launches, cut, variants, verdict: ipcVerdict(variants, { sizeBytes: opts.sizeBytes, partial: done < launches }) };
}
