/**
 * Runs `gpumpi map` once under mpirun (the launch layer, extension/core/launch/) with the transport evidence
 * switched on (UCX_LOG_LEVEL=info; Open MPI --mca btl_base_verbose 100), reads the engine's streamed plan and round
 * records as they come (mapStream.ts), validates the engine's document and joins the evidence and the outlier
 * analysis (outliers.ts) to it. When the job ends before the document (a rank died and the launcher ended the job,
 * cancel, the timeout), the document is built from the streamed records: what was measured is kept. Never throws on
 * a failed run: the result says what went wrong.
 */
import { validateMapDocument, type MapDocument } from '../../shared/mapSchema';
import type { Host } from '../host';
import { LocalHost } from '../hosts/localHost';
import { formatSeconds } from '../proc';
import { posixQuoteArgv } from '../../shared/shellQuote';
import { buildLaunchArgv } from '../launch/launchArgv';
import { withConfig, withJobName, type LaunchConfig, type LaunchSpec } from '../launch/launchSpec';
import { runLaunch, singletonStart, type LaunchOutcome, type RunLaunchOptions } from '../launch/runLaunch';
import { withEvidence } from '../launch/evidenceSwitches';
import { cleanLine } from '../parsers/text';
import { crashedHow, crashedWho, detectCrash, detectLaunchFailure, failureLines, launchFailureText } from '../launch/launcherOutput';
import { extractJsonDocument } from '../parsers/framedDocument';
import { gatherTransportEvidence } from '../parsers/transportLines';
import { applyEvidence } from './mapEvidence';
import { applyRecord, emptyStreamState, MapStreamReader, partialMapDocument, srunFailedTasks, streamedMapDocument, type MapStreamRecord, type MapStreamState } from './mapStream';
import { findOutliersAsync } from './outliers';

/** Engine options of one map run (strings are validated again by the engine). */
export interface MapEngineOptions {
	pairs: 'all' | 'sampled';
	maxRanks: number;
	large: string;
	small: string;
	iters: number;
	memory: 'device' | 'host';
	/** auto: one pair at a time when all pairs are measured, rounds of concurrent pairs when sampled (docs/map-schema.md). */
	schedule: 'auto' | 'sequential' | 'rounds';
	/** Seconds each pair may take before it is a timeout (and the run goes on). */
	pairTimeout: number;
}

/** Default engine options (kept small: the run time grows with the number of pairs). */
export const DEFAULT_MAP_OPTIONS: MapEngineOptions = { pairs: 'all', maxRanks: 16, large: '64M', small: '8', iters: 5, memory: 'device', schedule: 'auto', pairTimeout: 60 };

/** What to run. */
export interface MapRunOptions {
	/** Engine path on the host that launches. */
	engine: string;
	spec: LaunchSpec;
	/** Where mpirun/srun runs (default: this machine). */
	host?: Host;
	config: LaunchConfig;
	map: MapEngineOptions;
	timeoutMs: number;
	onProgress?: (line: string) => void;
	/** Each streamed record as it completes, with everything measured so far. */
	onRecord?: (record: MapStreamRecord, state: MapStreamState) => void;
	signal?: AbortSignal;
	/** How to launch: runLaunch (default), or a batch job submitted and followed (launch/batchJob.ts BatchLauncher). */
	launch?: (spec: LaunchSpec, program: readonly string[], opts: RunLaunchOptions) => Promise<LaunchOutcome>;
}

/**
 * Outcome of a run: the map (`partial`: why the engine's own document did not come, the map then being what the
 * streamed records hold), or why there is none (with the output tail to show).
 */
export type MapRunResult =
	| { ok: true; doc: MapDocument; partial?: string; notes?: string[] }
	| { ok: false; error: string; command: string[]; outputTail: string };

const SIZE_RE = /^\d+[KMG]?$/;

/** The engine argv for `opts` (throws on invalid options). */
export function mapProgram(engine: string, o: MapEngineOptions): string[] {
	if (!SIZE_RE.test(o.large) || !SIZE_RE.test(o.small)) { throw new Error('sizes must look like 64M or 8'); }
	if (!Number.isInteger(o.iters) || o.iters < 1 || o.iters > 1000) { throw new Error('iters must be 1..1000'); }
	if (!Number.isInteger(o.maxRanks) || o.maxRanks < 2) { throw new Error('max ranks must be >= 2'); }
	if (!Number.isInteger(o.pairTimeout) || o.pairTimeout < 1 || o.pairTimeout > 86400) { throw new Error('pair timeout must be 1..86400 s'); }
	if (!['auto', 'sequential', 'rounds'].includes(o.schedule)) { throw new Error('schedule must be auto, sequential or rounds'); }
	return [engine, 'map', '--pairs', o.pairs, '--max-ranks', String(o.maxRanks), '--schedule', o.schedule, '--pair-timeout', String(o.pairTimeout),
		'--large', o.large, '--small', o.small, '--iters', String(o.iters), '--memory', o.memory, '--json', '--stream', '--final-without-pairs'];
}

/**
 * The engine's stdout read line by line as the job runs (mapStream.ts): the plan and round records applied to `state`
 * and shown as progress, the final document kept; `finish()` at the end returns that document (undefined: none came).
 */
function streamTaker(opts: MapRunOptions): { state: MapStreamState; push: (line: string) => void; finish: () => unknown } {
	const reader = new MapStreamReader();
	const state = emptyStreamState();
	let finalDoc: unknown;
	const take = (records: MapStreamRecord[]): void => {
		for (const rec of records) {
			if (rec.kind === 'map') { finalDoc = rec.doc; continue; }
			applyRecord(state, rec);
			if (rec.kind === 'plan') {
				const s = rec.plan.schedule;
				opts.onProgress?.(`plan: ${rec.plan.pairs.length} pairs in ${s.rounds} ${s.mode === 'rounds' ? `rounds (up to ${s.max_concurrent_pairs} pairs at once)` : 'steps, one pair at a time'}; each pair within ${s.pair_timeout_s} s`);
			} else {
				const r = rec.round;
				const bad = r.pairs.filter(p => p.status !== 'ok').length;
				opts.onProgress?.(`${r.final ? 'end' : `round ${r.round + 1} of ${r.rounds}`}: ${r.pairs.length} pair${r.pairs.length === 1 ? '' : 's'} reported${bad > 0 ? ` (${bad} not ok)` : ''}, ${state.outcomes.size} so far, ${r.elapsed_s.toFixed(1)} s${r.synchronized ? '' : ' (rounds no longer synchronised)'}`);
			}
			try { opts.onRecord?.(rec, state); } catch { /* a listener never stops the run */ }
		}
	};
	return { state, push: line => take(reader.push(line)), finish: () => { take(reader.finish()); return finalDoc; } };
}

/** Run the map once. */
export async function runMap(opts: MapRunOptions): Promise<MapRunResult> {
	const program = mapProgram(opts.engine, opts.map);
	const spec = withJobName(withConfig(opts.spec, withEvidence(opts.config, opts.spec.flavor, false)));
	buildLaunchArgv(spec, program); // an invalid spec throws here, before anything is shown or created
	const pairsTotal = opts.spec.np * (opts.spec.np - 1) / 2;
	// The command line as launched (runLaunch adds the private shm directory of Open MPI launches), quoted so it pastes.
	const onLaunch = (argv: readonly string[]): void => {
		opts.onProgress?.(`running ${opts.spec.np} ranks: ${posixQuoteArgv(argv)}`);
		opts.onProgress?.(`${pairsTotal} pairs in all; the engine's plan follows`);
	};
	const stream = streamTaker(opts);
	const { state } = stream;
	const onLine = (from: 'stdout' | 'stderr', line: string): void => { if (from === 'stdout') { stream.push(line); } };
	const { argv, result: r, notes: launchNotes, ended } = await (opts.launch ?? runLaunch)(spec, program, { host: opts.host ?? new LocalHost(), timeoutMs: opts.timeoutMs, signal: opts.signal, onLaunch, onLine });
	const finalDoc = stream.finish();
	const tail = [...launchNotes, ...(r.stderr + '\n' + r.stdout).split('\n').filter(l => !l.includes('mca: bml') && !l.includes('UCX  INFO') && !l.includes('@@GPUMPI-JSON@@')).slice(-30).map(cleanLine)].join('\n');
	const fail = (error: string): MapRunResult => ({ ok: false, error, command: argv, outputTail: tail });
	// The analysis gives the event loop a turn every few tens of ms: in VS Code this runs on the extension host's thread.
	const finish = async (doc: MapDocument, partial?: string): Promise<MapRunResult> => {
		const withEv = applyEvidence(doc, r.stdout, r.stderr);
		const ev = gatherTransportEvidence(r.stdout, r.stderr);
		withEv.runner = { command: argv, flavor: opts.spec.flavor, exitCode: r.exitCode, signal: r.signal ?? null, durationMs: r.durationMs, evidenceLines: ev.lines.slice(0, 40) };
		withEv.outliers = await findOutliersAsync(withEv);
		const measured = withEv.pairs.filter(p => p.status === 'ok' || p.status === 'data_error').length;
		opts.onProgress?.(`map ${partial ? 'cut short' : 'done'}: ${measured} of ${withEv.pairs.length} pairs measured in ${formatSeconds(r.durationMs)}`);
		return partial ? { ok: true, doc: withEv, partial, notes: launchNotes } : { ok: true, doc: withEv };
	};
	// The engine's own document wins (it may also say the run ended with MPI_Abort: `incomplete`).
	const single = singletonStart(r.stdout, opts.spec.np);
	if (single) { return fail(single); }
	// With --final-without-pairs the pairs are those of the plan and the rounds (a 16 384-rank map would repeat ~1 GB).
	const engineDoc = finalDoc !== undefined ? validateMapDocument(finalDoc) : null;
	const complete = engineDoc !== null && typeof engineDoc !== 'string' ? streamedMapDocument(state, engineDoc) : engineDoc;
	if (complete !== null && typeof complete !== 'string') { return finish(complete); }
	// No document: what ended the run, then the map from the streamed records when the plan came.
	const crash = detectCrash(r.stdout, r.stderr, r.exitCode, r.signal);
	// srun names the task that died where the generic reading does not (it reads mpirun's and Hydra's words).
	// With --kill-on-bad-exit srun ends the others with SIGTERM and lists them as "Terminated": the one that died first is not.
	const tasks = spec.srun && crash.rank === null ? srunFailedTasks(r.stderr).filter(t => !/^Terminated\b/.test(t.how)) : [];
	const cause = ended ?? (r.timedOut ? `no map within ${formatSeconds(opts.timeoutMs)}; the run was stopped, every process of its session`
		: opts.signal?.aborted ? 'interrupted: the run was stopped (Ctrl-C or cancel)'
			: tasks.length > 0 ? tasks.map(t => `rank ${t.rank} (srun task ${t.rank} on ${t.host}): ${t.how}`).join('; ')
				: crash.crashed ? `${crashedWho(crash)} crashed (${crashedHow(crash)}): ${crash.evidence.slice(0, 2).join(' | ')}`
					: null);
	if (cause !== null && state.plan) {
		const failedRanks = tasks.length > 0 ? tasks.map(t => t.rank) : crash.crashed && crash.rank !== null ? [crash.rank] : [];
		const partial = partialMapDocument(state, { reason: cause, failedRanks });
		if (partial) { return finish(partial, cause); }
	}
	if (ended) { return fail(ended); }
	if (r.timedOut) { return fail(`${cause} (a pair may hang: try fewer ranks, --pairs sampled or a shorter --pair-timeout)`); }
	if (opts.signal?.aborted) { return fail('cancelled'); }
	const ex = extractJsonDocument(r.stdout);
	if (typeof complete === 'string') { return fail(`the engine's map is invalid: ${complete}`); }
	if ('error' in ex || finalDoc === undefined) {
		const launch = detectLaunchFailure(r.stdout, r.stderr);
		if (launch !== null) { return fail(`${launchFailureText(launch, argv[0] ?? 'mpirun')}: ${launch.evidence.slice(0, 3).join(' | ')}`); }
		if (crash.crashed) { return fail(`${crashedWho(crash)} crashed (${crashedHow(crash)}): ${crash.evidence.slice(0, 2).join(' | ')}`); }
		// What the output itself said went wrong, so that a caller keeping only this line (explain-latency's trials)
		// keeps the cause too: e.g. Open MPI's "shmem: mmap: an error occurred …" before "An error occurred in MPI_Init".
		const said = failureLines(r.stdout + '\n' + r.stderr);
		const why = 'error' in ex ? ex.error : 'no map document in the output';
		if (state.plan) {
			const partial = partialMapDocument(state, { reason: `${r.error ?? `exit status ${r.exitCode ?? r.signal ?? '?'}`}: ${why}`, failedRanks: [] });
			if (partial) { return finish(partial, partial.partial?.reason ?? why); }
		}
		return fail(`${r.error ?? `exit status ${r.exitCode ?? r.signal ?? '?'}`}: ${why}${said.length > 0 ? `; the output says: ${said.join(' | ')}` : ''}`);
	}
	const doc = validateMapDocument(ex.json);
	if (typeof doc === 'string') { return fail(`the engine's map is invalid: ${doc}`); }
	return finish(doc);
}
