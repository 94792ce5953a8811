/**
 * `gpumpi-doctor map …`: runs `gpumpi map` under mpirun and prints the transport map as a table (or the document
 * with --json; --out FILE also writes it). `--from-json FILE` prints a saved map (core/map/mapFile.ts) instead of
 * running anything; `--explain-latency` runs the latency experiment (core/map/latencyExperiment.ts) instead. The outlier
 * headline comes first; `--json-lines` streams the plan and the rounds, and a run interrupted or ended early writes the
 * map of what was measured (mapStreamCli.ts, kept apart from the option parsing). Every
 * option is checked (parseMapArgs) before anything is launched, ssh'd to or deployed; exit codes are the table of
 * io.ts (0 a map was produced, 2 usage error, 3 nothing could run, the run failed or a file could not be read or
 * written, 130 interrupted).
 */
import * as path from 'node:path';
import { writeFileWhole } from '../core/fileWrite';
import { mapJsonPieces, readMapFile, writeMapFileSync } from '../core/map/mapFileStream';
import { mapAffinity, renderAffinityLines } from '../core/map/mapAffinity';
import { LocalHost } from '../core/hosts/localHost';
import { DEFAULT_EXPERIMENT_TRIALS, LATENCY_FACTORS, renderLatencyExperiment, runLatencyExperiment, type LatencyFactor } from '../core/map/latencyExperiment';
import { DEFAULT_MAP_OPTIONS, mapProgram, type MapEngineOptions } from '../core/map/mapRunner';
import { runMapUseCase, type MapUseCaseOutcome } from '../core/map/mapUseCase';
import { buildLaunchArgv } from '../core/launch/launchArgv';
import { withConfig, withJobName, type LaunchConfig } from '../core/launch/launchSpec';
import { posixQuoteArgv } from '../shared/shellQuote';
import { MAP_LARGE_LIMITS, MAP_SMALL_LIMITS } from '../shared/sizeText';
import { MAX_TRIALS } from '../shared/trialStats';
import { flag, helpText, integer, nameList, oneOf, option, parseArgv, size, text, withHelp } from './argv';
import { EXIT, runSubcommand, UsageError, type CliIo } from './io';
import { checkLaunchOptions, cliLaunchTarget, launchCliOptions, LAUNCH_OPTIONS, TARGET_OPTIONS, type LaunchCliOptions } from './launchArgs';
import { PATH_CLASS_LABELS, type MapDocument } from '../shared/mapSchema';
import { incompleteNote, outlierText, partialNote, recordLines, withOutliers } from './mapStreamCli';
import { BATCH_OPTIONS, batchCliOptions, batchRequest, checkBatchOptions, followMain, reportBatch, type BatchCliOptions } from './mapBatchCli';

/** The options of `map`, in help order. */
export const MAP_OPTIONS = {
	json: flag('print the map document (schema gpumpi.map/1, docs/map-schema.md) instead of the table'),
	'json-lines': flag('one JSON object per line as the run goes: the plan, a record per round, the map last (progress on stderr); Ctrl-C writes the map of what was measured'),
	out: option(text('FILE', { empty: 'a file name' }), 'also write the map document to FILE (open it with "GPU-MPI: Show Transport Map")'),
	np: option(integer(2, 4096), 'ranks, 2..4096 (default 4)'),
	mpirun: LAUNCH_OPTIONS.mpirun,
	flavor: LAUNCH_OPTIONS.flavor,
	engine: LAUNCH_OPTIONS.engine,
	memory: LAUNCH_OPTIONS.memory,
	large: option(size(MAP_LARGE_LIMITS), `bandwidth size, 1..1G (default ${DEFAULT_MAP_OPTIONS.large})`),
	small: option(size(MAP_SMALL_LIMITS), `latency size, 1..1M (default ${DEFAULT_MAP_OPTIONS.small})`),
	iters: option(integer(1, 1000), `iterations per pair and size, 1..1000 (default ${DEFAULT_MAP_OPTIONS.iters})`),
	pairs: option(oneOf(['all', 'sampled'] as const), 'which pairs are measured (default: see --max-ranks)'),
	'max-ranks': option(integer(2, 1 << 20), `2..1048576 (default ${DEFAULT_MAP_OPTIONS.maxRanks}: all pairs up to N ranks, else sampled)`),
	schedule: option(oneOf(['auto', 'sequential', 'rounds'] as const), 'one pair at a time, or rounds of pairs that share no rank measured at once (O(hosts) rounds); auto (default): sequential for all pairs, rounds when sampled'),
	'pair-timeout': option(integer(1, 86400, 'S'), `seconds a pair may take before it is a timeout finding and the run goes on (default ${DEFAULT_MAP_OPTIONS.pairTimeout})`),
	mca: LAUNCH_OPTIONS.mca,
	preset: withHelp(LAUNCH_OPTIONS.preset, 'environment for every rank, repeatable (e.g. UCX_TLS=^cuda_ipc)'),
	loopback: flag('keep TCP on loopback (Open MPI btl_tcp_if_include lo, UCX_NET_DEVICES=lo)'),
	...TARGET_OPTIONS,
	timeout: withHelp(LAUNCH_OPTIONS.timeout, 'run timeout in seconds, 1..86400 (default 600)'),
	...BATCH_OPTIONS,
	'from-json': withHelp(LAUNCH_OPTIONS['from-json'], 'print a saved map (or scripts/gpu/map.sh\'s map.json, evidence joined) instead of running'),
	'explain-latency': flag(`find out by experiment what sets the latency of a pair: 2 ranks as-is and with one factor changed at a time, each --trials launches (default ${DEFAULT_EXPERIMENT_TRIALS}, at least 2); default sizes 1M / 8, --iters 20; --json prints the experiment (gpumpi.latency-experiment/1, docs/map-schema.md)`),
	factors: option(nameList(LATENCY_FACTORS.map(f => f.id), 'factor'), `with --explain-latency: the factors to change (default all), of\n${LATENCY_FACTORS.map(f => `  ${f.id.padEnd(16)}${f.setting}`).join('\n')}`),
	trials: option(integer(2, MAX_TRIALS), `with --explain-latency: launches per configuration, 2..${MAX_TRIALS}`),
};

const USAGE = helpText(MAP_OPTIONS, { usage: 'gpumpi-doctor map [options]' });

/** What `map` runs, from its command line. */
export interface MapCliOptions extends LaunchCliOptions {
	json: boolean; jsonLines: boolean; out: string | null; np: number; map: MapEngineOptions; loopback: boolean;
	/** `--explain-latency`: the factors to change (null: a plain map). */
	explain: LatencyFactor[] | null;
	trials: number;
	/** `--sbatch …` / `--follow FILE` (mapBatchCli.ts). */
	batch: BatchCliOptions;
}

/**
 * `map` argv → options, every value checked against what the engine accepts (native/cli/mapCmd.cc); UsageError
 * otherwise (an empty message: --help). Pure: nothing is run, read or launched.
 */
export function parseMapArgs(argv: readonly string[]): MapCliOptions {
	const { values: v, given } = parseArgv(MAP_OPTIONS, argv);
	const o: MapCliOptions = {
		...launchCliOptions(v, { memory: DEFAULT_MAP_OPTIONS.memory, timeoutS: 600 }),
		json: v.json === true, jsonLines: v['json-lines'] === true, out: v.out ?? null, np: v.np ?? 4, loopback: v.loopback === true,
		map: {
			...DEFAULT_MAP_OPTIONS, pairs: v.pairs ?? DEFAULT_MAP_OPTIONS.pairs, large: v.large?.text ?? DEFAULT_MAP_OPTIONS.large,
			small: v.small?.text ?? DEFAULT_MAP_OPTIONS.small, iters: v.iters ?? DEFAULT_MAP_OPTIONS.iters, maxRanks: v['max-ranks'] ?? DEFAULT_MAP_OPTIONS.maxRanks,
			schedule: v.schedule ?? DEFAULT_MAP_OPTIONS.schedule, pairTimeout: v['pair-timeout'] ?? DEFAULT_MAP_OPTIONS.pairTimeout,
		},
		explain: null, trials: v.trials ?? DEFAULT_EXPERIMENT_TRIALS, batch: batchCliOptions(v),
	};
	o.map.memory = o.memory;
	if (o.json && o.jsonLines) { throw new UsageError('--json prints the map once; --json-lines prints it as it is measured: give one of them'); }
	if (o.jsonLines && given.has('explain-latency')) { throw new UsageError('--json-lines streams a map; --explain-latency prints an experiment (use --json)'); }
	if (given.has('factors') || given.has('trials') || given.has('explain-latency')) {
		if (!given.has('explain-latency')) { throw new UsageError('--factors and --trials need --explain-latency'); }
		if (given.has('np') && o.np !== 2) { throw new UsageError(`--explain-latency measures one pair: 2 ranks, got --np ${o.np}`); }
		if (o.fromJson !== null) { throw new UsageError('--explain-latency runs an experiment; --from-json prints a saved file'); }
		o.explain = (v.factors ?? LATENCY_FACTORS.map(f => f.id)).map(id => LATENCY_FACTORS.find(f => f.id === id)!);
		o.np = 2;
		if (!given.has('large')) { o.map.large = '1M'; }
		if (!given.has('iters')) { o.map.iters = 20; }
	}
	checkBatchOptions(o, given);
	if (o.fromJson !== null) {
		if (o.host || o.srun) { throw new UsageError('--from-json prints a saved file; --host and --srun launch runs'); }
	} else {
		checkLaunchOptions(o, o.np);
	}
	return o;
}

function fmt(v: number | null, digits: number): string {
	return v === null ? '—' : v.toFixed(digits);
}

/** The map as a text table: the hosts and GPUs, each rank's CPU affinity against its GPU's NUMA node (when the engine recorded it), then one line per pair. */
export function renderMapText(doc: MapDocument): string {
	return [...renderMapLines(doc)].join('');
}

/** renderMapText in pieces of whole lines (two million pairs are ~200 MB of text: written as it is made). */
export function* renderMapLines(doc: MapDocument, linesPerPiece = 10000): Generator<string> {
	const out: string[] = [];
	const sched = doc.schedule ? `, ${doc.schedule.mode === 'rounds' ? `${doc.schedule.rounds} rounds of up to ${doc.schedule.max_concurrent_pairs} pairs at once` : 'one pair at a time'}${doc.elapsed_s !== undefined ? ` in ${doc.elapsed_s.toFixed(1)} s` : ''}` : '';
	out.push(`Transport map: ${doc.world_size} ranks, ${doc.pairs.length} of ${doc.total_pairs} pairs${doc.sampled ? ' (sampled)' : ''}${sched}, ${doc.memory} memory, ${doc.mpi.library_version.split(',')[0]}`);
	if (doc.partial) { out.push(`  partial: ${doc.partial.reason}`); }
	if (doc.gpu_unavailable_reason) { out.push(`  no GPU: ${doc.gpu_unavailable_reason}`); }
	const hosts = new Map<string, MapDocument['ranks']>();
	for (const r of doc.ranks) {
		const list = hosts.get(r.host);
		if (list) { list.push(r); } else { hosts.set(r.host, [r]); }
	}
	for (const [h, ranks] of hosts) {
		out.push(`  host ${h}: ranks ${ranks.map(r => r.rank).join(',')}`);
		for (const r of ranks) {
			const rank = r.rank;
			const gpu = r.gpu ? `${r.gpu.name} ${r.gpu.pci_bus_id} NUMA ${r.gpu.numa_node}` : 'no GPU';
			out.push(`    rank ${rank}: cpus ${r.cpu_list}; ${gpu}`);
		}
	}
	out.push(...renderAffinityLines(mapAffinity(doc)));
	out.push('', '  pair      class               channel         GB/s       µs  reason');
	for (const p of doc.pairs) {
		out.push(`  ${`${p.a}-${p.b}`.padEnd(8)}  ${PATH_CLASS_LABELS[p.class].padEnd(18)}  ${(p.channel ?? '').replace('_', ' ').padEnd(14)} ${fmt(p.bandwidth_gbps, 2).padStart(6)} ${fmt(p.latency_us, 2).padStart(8)}  ${p.status === 'ok' ? '' : `[${p.status}] `}${p.error ?? p.reason}`);
		if (out.length >= linesPerPiece) { yield out.join('\n') + '\n'; out.length = 0; }
	}
	if (out.length > 0) { yield out.join('\n') + '\n'; }
}

/** Entry point of `gpumpi-doctor map`. Never rejects. */
export function mapMain(argv: readonly string[], io: CliIo): Promise<number> {
	return runSubcommand('map', USAGE, io, async () => {
		const o = parseMapArgs(argv);
		const emit = (saved: MapDocument): number => {
			const doc = withOutliers(saved);
			// In pieces, never one string: a 16 384-rank map is ~1 GB of JSON, past V8's longest string (mapFileStream.ts).
			if (o.out) {
				try { writeMapFileSync(path.resolve(io.cwd, o.out), doc); } catch (e) {
					io.stderr(`gpumpi-doctor map: cannot write ${o.out}: ${e instanceof Error ? e.message : String(e)}\n`);
					return EXIT.failed;
				}
			}
			if (o.json || o.jsonLines) {
				for (const piece of mapJsonPieces(doc, { oneLine: o.jsonLines })) { io.stdout(piece); }
			} else {
				io.stdout(outlierText(doc));
				for (const piece of renderMapLines(doc)) { io.stdout(piece); }
			}
			return EXIT.ok;
		};
		if (o.fromJson) { return fromJson(o.fromJson, io, emit); }
		if (o.explain) { return explainLatency(o, o.explain, io); }
		if (o.batch.follow !== null) { return followMain(o, io, emit, { onRecord: o.jsonLines ? recordLines(io) : undefined }); }
		const target = await cliLaunchTarget(o, o.np, io.cwd, l => io.stderr(`${l}\n`), io.signal);
		for (const n of target.notes) { io.stderr(`gpumpi-doctor map: ${n}\n`); }
		if (!target.ok && io.signal.aborted) { io.stderr('gpumpi-doctor map: interrupted before the run started; nothing was launched\n'); return EXIT.interrupted; }
		if (!target.ok) { io.stderr(`gpumpi-doctor map: ${target.error}\n`); return EXIT.failed; }
		let r;
		try {
			const env = [...o.env];
			if (o.loopback) { env.push(['UCX_NET_DEVICES', 'lo']); }
			const config: LaunchConfig = { label: 'map', env, mca: o.mca, extraArgs: [] };
			r = await runMapUseCase({
				target, config, loopback: o.loopback, map: o.map, timeoutMs: o.timeoutS * 1000, signal: io.signal,
				onProgress: l => io.stderr(`${l}\n`), onRecord: o.jsonLines ? recordLines(io) : undefined,
				// --sbatch: the same run as a batch job (core/map/mapBatch.ts); its outcome is printed by mapBatchCli.ts.
				batch: o.batch.sbatch ? batchRequest(o.batch, io.cwd, Boolean(o.host)) : undefined,
			});
		} finally {
			await target.close();
		}
		// Known only once the flavour is detected (MCA parameters with an MPICH launcher): still before any launch.
		if (!r.ok && r.refused) { throw new UsageError(r.error); }
		if (r.batch) { return reportBatch({ ...r.batch, run: r }, o, io, emit); }
		return mapOutcome(r, io, emit);
	});
}

/**
 * A run's exit: the map (exit 3 when the engine ended the job with MPI_Abort after it); interrupted or ended early, the
 * map of what was measured when the plan had come (mapStream.ts), the exit status still saying the run did not end
 * well (130 interrupted, 3 a rank died or the timeout); else why there is no map.
 */
function mapOutcome(r: Exclude<MapUseCaseOutcome, { refused: true }>, io: CliIo, emit: (doc: MapDocument) => number): number {
	if (r.ok && r.partial) {
		for (const n of r.notes ?? []) { io.stderr(`gpumpi-doctor map: ${n}\n`); }
		io.stderr(partialNote(r.doc, r.partial, io.signal.aborted));
		const code = emit(r.doc);
		return io.signal.aborted ? EXIT.interrupted : code === EXIT.ok ? EXIT.failed : code;
	}
	if (io.signal.aborted) { io.stderr('gpumpi-doctor map: interrupted before the plan came; nothing was measured\n'); return EXIT.interrupted; }
	if (!r.ok) {
		io.stderr(`gpumpi-doctor map: ${r.error}\n  command: ${posixQuoteArgv(r.command)}\n${r.outputTail}\n`);
		return EXIT.failed;
	}
	const code = emit(r.doc);
	if (r.doc.incomplete) { io.stderr(incompleteNote(r.doc.incomplete)); return code === EXIT.ok ? EXIT.failed : code; }
	return code;
}

/**
 * `--explain-latency`: the experiment of core/map/latencyExperiment.ts with the command line's launch as the baseline.
 * Exit 0 when the baseline measured at least two trials (the comparisons are the output), 3 otherwise.
 */
async function explainLatency(o: MapCliOptions, factors: LatencyFactor[], io: CliIo): Promise<number> {
	const target = await cliLaunchTarget(o, 2, io.cwd, l => io.stderr(`${l}\n`), io.signal);
	for (const n of target.notes) { io.stderr(`gpumpi-doctor map: ${n}\n`); }
	if (!target.ok) { io.stderr(`gpumpi-doctor map: ${target.error}\n`); return EXIT.failed; }
	let e;
	try {
		const spec = { ...target.spec, np: 2, loopbackOnly: o.loopback && target.flavor === 'openmpi' };
		const baseline: LaunchConfig = { label: 'as-is', env: [...o.env, ...(o.loopback ? [['UCX_NET_DEVICES', 'lo'] as [string, string]] : [])], mca: o.mca, extraArgs: [] };
		try { buildLaunchArgv(withJobName(withConfig(spec, baseline)), mapProgram(target.engine, o.map)); } catch (err) { throw new UsageError((err as Error).message); }
		// MPS is started on this machine, so it applies only where the ranks run here too.
		const remote = o.host ? `--host ${o.host}` : o.srun ? '--srun' : o.hostList ? `--hosts ${o.hostList}` : null;
		const control = remote ? null : await new LocalHost().which('nvidia-cuda-mps-control');
		const mps = remote ? { unavailable: `the ranks do not run on this machine (${remote}), where the MPS daemon would be started` }
			: control ? { control } : { unavailable: 'nvidia-cuda-mps-control is not on PATH (no NVIDIA driver utilities here)' };
		e = await runLatencyExperiment({
			engine: target.engine, host: target.host, spec, baseline, map: o.map, factors, trials: o.trials,
			timeoutMs: o.timeoutS * 1000, mps, signal: io.signal, onProgress: l => io.stderr(`${l}\n`),
		});
	} finally {
		await target.close();
	}
	if (o.out) {
		try { writeFileWhole(path.resolve(io.cwd, o.out), JSON.stringify(e, null, 1) + '\n'); } catch (err) {
			io.stderr(`gpumpi-doctor map: cannot write ${o.out}: ${err instanceof Error ? err.message : String(err)}\n`);
			return EXIT.failed;
		}
	}
	io.stdout(o.json ? JSON.stringify(e, null, 2) + '\n' : renderLatencyExperiment(e));
	if (io.signal.aborted) { io.stderr('gpumpi-doctor map: interrupted; the finished trials are reported\n'); return EXIT.interrupted; }
	return e.baseline.measured >= 2 ? EXIT.ok : EXIT.failed;
}

/** `--from-json FILE`: print a saved map of any size (read in slices past 256 MiB), or every run of a scripts/gpu/map.sh result (evidence joined). */
async function fromJson(file: string, io: CliIo, emit: (doc: MapDocument) => number): Promise<number> {
	let loaded;
	try { loaded = await readMapFile(path.resolve(io.cwd, file)); } catch (e) {
		io.stderr(`gpumpi-doctor map: cannot read ${file}: ${e instanceof Error ? e.message : String(e)}\n`);
		return EXIT.failed;
	}
	if (loaded.kind === 'invalid') { io.stderr(`gpumpi-doctor map: ${file}: ${loaded.error}\n`); return EXIT.failed; }
	if (loaded.kind === 'map') { return emit(loaded.doc); }
	let code: number = EXIT.ok;
	for (const r of loaded.runs) {
		if (typeof r.doc === 'string') { io.stderr(`gpumpi-doctor map: run ${r.name}: ${r.doc}\n`); code = EXIT.failed; continue; }
		io.stdout(`== ${r.name}\n`);
		if (emit(r.doc) !== EXIT.ok) { code = EXIT.failed; }
	}
	return code;
}
