/**
 * Runs `gpumpi map` once under mpirun (the launch layer, extension/core/launch/) with the transport evidence
 * switched on (UCX_LOG_LEVEL=info; Open MPI --mca btl_base_verbose 100), validates the engine's document and joins
 * the evidence to it (mapEvidence.ts). Never throws on a failed run: the result says what went wrong.
 */
import { validateMapDocument, type MapDocument } from '../../shared/mapSchema';
import type { Host } from '../host';
import { LocalHost } from '../hosts/localHost';
import { formatSeconds } from '../proc';
import { posixQuoteArgv } from '../../shared/shellQuote';
import { buildLaunchArgv } from '../launch/launchArgv';
import { withConfig, withJobName, type LaunchConfig, type LaunchSpec } from '../launch/launchSpec';
import { runLaunch, singletonStart } from '../launch/runLaunch';
import { withEvidence } from '../launch/evidenceSwitches';
import { cleanLine } from '../parsers/text';
import { crashedHow, crashedWho, detectCrash, detectLaunchFailure, failureLines, launchFailureText } from '../launch/launcherOutput';
import { extractJsonDocument } from '../parsers/framedDocument';
import { gatherTransportEvidence } from '../parsers/transportLines';
import { applyEvidence } from './mapEvidence';

/** Engine options of one map run (strings are validated again by the engine). */
export interface MapEngineOptions {
	pairs: 'all' | 'sampled';
	maxRanks: number;
	large: string;
	small: string;
	iters: number;
	memory: 'device' | 'host';
}

/** Default engine options (kept small: the run time grows with the number of pairs). */
export const DEFAULT_MAP_OPTIONS: MapEngineOptions = { pairs: 'all', maxRanks: 16, large: '64M', small: '8', iters: 5, memory: 'device' };

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
	signal?: AbortSignal;
}

/** Outcome of a run: the map, or why there is none (with the output tail to show). */
export type MapRunResult =
	| { ok: true; doc: MapDocument }
	| { ok: false; error: string; command: string[]; outputTail: string };

const SIZE_RE = /^\d+[KMG]?$/;

/** The engine argv for `opts` (throws on invalid options). */
export function mapProgram(engine: string, o: MapEngineOptions): string[] {
	if (!SIZE_RE.test(o.large) || !SIZE_RE.test(o.small)) { throw new Error('sizes must look like 64M or 8'); }
	if (!Number.isInteger(o.iters) || o.iters < 1 || o.iters > 1000) { throw new Error('iters must be 1..1000'); }
	if (!Number.isInteger(o.maxRanks) || o.maxRanks < 2) { throw new Error('max ranks must be >= 2'); }
	return [engine, 'map', '--pairs', o.pairs, '--max-ranks', String(o.maxRanks), '--large', o.large, '--small', o.small,
		'--iters', String(o.iters), '--memory', o.memory, '--json'];
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
		opts.onProgress?.(`measuring up to ${pairsTotal} pairs one at a time`);
	};
	const { argv, result: r, notes: launchNotes } = await runLaunch(spec, program, { host: opts.host ?? new LocalHost(), timeoutMs: opts.timeoutMs, signal: opts.signal, onLaunch });
	const tail = [...launchNotes, ...(r.stderr + '\n' + r.stdout).split('\n').filter(l => !l.includes('mca: bml') && !l.includes('UCX  INFO')).slice(-30).map(cleanLine)].join('\n');
	const fail = (error: string): MapRunResult => ({ ok: false, error, command: argv, outputTail: tail });
	if (r.timedOut) { return fail(`no map within ${formatSeconds(opts.timeoutMs)}; the run was stopped, every process of its session (a pair may hang: try fewer ranks or --pairs sampled)`); }
	if (opts.signal?.aborted) { return fail('cancelled'); }
	const single = singletonStart(r.stdout, opts.spec.np);
	if (single) { return fail(single); }
	const ex = extractJsonDocument(r.stdout);
	if ('error' in ex) {
		const launch = detectLaunchFailure(r.stdout, r.stderr);
		if (launch !== null) { return fail(`${launchFailureText(launch, argv[0] ?? 'mpirun')}: ${launch.evidence.slice(0, 3).join(' | ')}`); }
		const crash = detectCrash(r.stdout, r.stderr, r.exitCode, r.signal);
		if (crash.crashed) { return fail(`${crashedWho(crash)} crashed (${crashedHow(crash)}): ${crash.evidence.slice(0, 2).join(' | ')}`); }
		// What the output itself said went wrong, so that a caller keeping only this line (explain-latency's trials)
		// keeps the cause too: e.g. Open MPI's "shmem: mmap: an error occurred …" before "An error occurred in MPI_Init".
		const said = failureLines(r.stdout + '\n' + r.stderr);
		return fail(`${r.error ?? `exit status ${r.exitCode ?? r.signal ?? '?'}`}: ${ex.error}${said.length > 0 ? `; the output says: ${said.join(' | ')}` : ''}`);
	}
	const doc = validateMapDocument(ex.json);
	if (typeof doc === 'string') { return fail(`the engine's map is invalid: ${doc}`); }
	const withEv = applyEvidence(doc, r.stdout, r.stderr);
	const ev = gatherTransportEvidence(r.stdout, r.stderr);
	withEv.runner = { command: argv, flavor: opts.spec.flavor, exitCode: r.exitCode, durationMs: r.durationMs, evidenceLines: ev.lines.slice(0, 40) };
	opts.onProgress?.(`map done: ${withEv.pairs.length} pairs in ${formatSeconds(r.durationMs)}`);
	return { ok: true, doc: withEv };
}
