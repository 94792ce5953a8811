/**
 * `gpumpi-doctor map …`: runs `gpumpi map` under mpirun and prints the transport map as a table (or the document
 * with --json; --out FILE also writes it). `--from-json FILE` prints a saved map (core/map/mapFile.ts) instead of
 * running anything; `--explain-latency` runs the latency experiment (core/map/latencyExperiment.ts) instead. Every
 * option is checked (parseMapArgs) before anything is launched, ssh'd to or deployed; exit codes are the table of
 * io.ts (0 a map was produced, 2 usage error, 3 nothing could run, the run failed or a file could not be read or
 * written, 130 interrupted).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { writeFileWhole } from '../core/fileWrite';
import { loadMapText } from '../core/map/mapFile';
import { mapAffinity, renderAffinityLines } from '../core/map/mapAffinity';
import { LocalHost } from '../core/hosts/localHost';
import { DEFAULT_EXPERIMENT_TRIALS, LATENCY_FACTORS, renderLatencyExperiment, runLatencyExperiment, type LatencyFactor } from '../core/map/latencyExperiment';
import { DEFAULT_MAP_OPTIONS, mapProgram, runMap, type MapEngineOptions, type MapRunOptions, type MapRunResult } from '../core/map/mapRunner';
import { runMapBatch, type MapBatchResult } from '../core/map/mapBatch';
import { buildLaunchArgv } from '../core/launch/launchArgv';
import { withConfig, withJobName, type LaunchConfig } from '../core/launch/launchSpec';
import { posixQuoteArgv } from '../shared/shellQuote';
import { checkSizeText, MAP_LARGE_LIMITS, MAP_SMALL_LIMITS } from '../shared/sizeText';
import { MAX_TRIALS } from '../shared/trialStats';
import { EXIT, runSubcommand, shown, UsageError, type CliIo } from './io';
import { checkLaunchOptions, cliLaunchTarget, optionInt, optionValue, readLaunchOption, TARGET_USAGE, type LaunchCliOptions } from './launchArgs';
import { PATH_CLASS_LABELS, type MapDocument } from '../shared/mapSchema';
import { incompleteNote, jsonLine, outlierText, partialNote, recordLines, withOutliers } from './mapStreamCli';
import { BATCH_USAGE, batchRequest, checkBatchOptions, followMain, noBatchOptions, readBatchOption, reportBatch, type BatchCliOptions } from './mapBatchCli';

const USAGE = `Usage: gpumpi-doctor map [options]
  --json                 print the map document (schema gpumpi.map/1, docs/map-schema.md) instead of the table
  --json-lines           one JSON object per line as the run goes: the plan, a record per round, the map last
                         (progress on stderr); Ctrl-C writes the map of what was measured
  --out FILE             also write the map document to FILE (open it with "GPU-MPI: Show Transport Map")
  --np N                 ranks, 2..4096 (default 4)
  --mpirun PATH          launcher (default: mpirun on PATH); --flavor openmpi|mpich overrides detection
  --engine PATH          gpumpi engine (default: native/build/engine*/gpumpi)
  --memory device|host   buffers (default device; without a GPU the engine uses host memory and says why)
  --large S --small S    bandwidth / latency sizes, 1..1G / 1..1M (default 64M / 8)   --iters N, 1..1000 (default 5)
  --pairs all|sampled    --max-ranks N, 2..1048576 (default 16: all pairs up to N ranks, else sampled)
  --schedule S           auto|sequential|rounds: one pair at a time, or rounds of pairs that share no rank measured
                         at once (O(hosts) rounds); auto (default): sequential for all pairs, rounds when sampled
  --pair-timeout S       seconds a pair may take before it is a timeout finding and the run goes on (default 60)
  --mca K V              Open MPI MCA parameter, repeatable (e.g. btl tcp,self)
  --preset NAME=VALUE    environment for every rank, repeatable (e.g. UCX_TLS=^cuda_ipc)
  --loopback             keep TCP on loopback (Open MPI btl_tcp_if_include lo, UCX_NET_DEVICES=lo)
${TARGET_USAGE.trimEnd()}
  --timeout S            run timeout in seconds (default 600)
${BATCH_USAGE.trimEnd()}
  --from-json FILE       print a saved map (or scripts/gpu/map.sh's map.json, evidence joined) instead of running
  --explain-latency      find out by experiment what sets the latency of a pair: 2 ranks as-is and with one factor
                         changed at a time, each --trials launches (default ${DEFAULT_EXPERIMENT_TRIALS}, at least 2); default sizes 1M / 8,
                         --iters 20; --json prints the experiment (gpumpi.latency-experiment/1, docs/map-schema.md)
  --factors LIST         with --explain-latency: the factors to change (default all), of
${LATENCY_FACTORS.map(f => `                           ${f.id.padEnd(16)}${f.setting}`).join('\n')}
  --trials N             with --explain-latency: launches per configuration, 2..${MAX_TRIALS}
`;


/** What `map` runs, from its command line. */
export interface MapCliOptions extends LaunchCliOptions {
	json: boolean; out: string | null; np: number; map: MapEngineOptions; loopback: boolean;
	/** `--json-lines`: the streamed records and the map, one JSON object per line. */
	jsonLines: boolean;
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
	const o: MapCliOptions = {
		json: false, jsonLines: false, out: null, np: 4, mpirun: 'mpirun', flavor: null, engine: null, map: { ...DEFAULT_MAP_OPTIONS },
		memory: DEFAULT_MAP_OPTIONS.memory, env: [], mca: [], loopback: false, timeoutS: 600, fromJson: null,
		explain: null, trials: DEFAULT_EXPERIMENT_TRIALS, batch: noBatchOptions(),
	};
	const given = new Set<string>();
	const value = (i: number, name: string): string => optionValue(argv, i, name);
	const int = optionInt;
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		given.add(a);
		const last = readLaunchOption(argv, i, o);
		if (last >= 0) { i = last; continue; }
		const batchLast = readBatchOption(argv, i, o.batch);
		if (batchLast >= 0) { i = batchLast; continue; }
		switch (a) {
			case '--json': o.json = true; break;
			case '--json-lines': o.jsonLines = true; break;
			case '--schedule': {
				const v = value(i++, a);
				if (v !== 'auto' && v !== 'sequential' && v !== 'rounds') { throw new UsageError(`--schedule needs auto, sequential or rounds, got ${shown(v)}`); }
				o.map.schedule = v;
				break;
			}
			case '--pair-timeout': o.map.pairTimeout = int(value(i++, a), a, 1, 86400); break;
			case '--loopback': o.loopback = true; break;
			case '--out': o.out = value(i++, a); if (o.out === '') { throw new UsageError('--out needs a file name'); } break;
			case '--np': o.np = int(value(i++, a), a, 2, 4096); break;
			case '--pairs': {
				const p = value(i++, a);
				if (p !== 'all' && p !== 'sampled') { throw new UsageError(`--pairs needs all or sampled, got ${shown(p)}`); }
				o.map.pairs = p;
				break;
			}
			case '--large': case '--small': {
				const s = value(i++, a);
				const n = checkSizeText(s, a === '--large' ? MAP_LARGE_LIMITS : MAP_SMALL_LIMITS);
				if (typeof n === 'string') { throw new UsageError(`${a} needs ${n}, got ${shown(s)}`); }
				if (a === '--large') { o.map.large = s; } else { o.map.small = s; }
				break;
			}
			case '--iters': o.map.iters = int(value(i++, a), a, 1, 1000); break;
			case '--max-ranks': o.map.maxRanks = int(value(i++, a), a, 2, 1 << 20); break;
			case '--explain-latency': o.explain ??= [...LATENCY_FACTORS]; break;
			case '--factors': o.explain = parseFactors(value(i++, a)); break;
			case '--trials': o.trials = int(value(i++, a), a, 2, MAX_TRIALS); break;
			case '--help': case '-h': throw new UsageError('');
			default: throw new UsageError(`unknown option ${shown(a)}`);
		}
	}
	o.map.memory = o.memory;
	if (o.json && o.jsonLines) { throw new UsageError('--json prints the map once; --json-lines prints it as it is measured: give one of them'); }
	if (o.jsonLines && o.explain !== null) { throw new UsageError('--json-lines streams a map; --explain-latency prints an experiment (use --json)'); }
	if (o.explain !== null || given.has('--trials')) {
		if (!given.has('--explain-latency')) { throw new UsageError('--factors and --trials need --explain-latency'); }
		if (given.has('--np') && o.np !== 2) { throw new UsageError(`--explain-latency measures one pair: 2 ranks, got --np ${o.np}`); }
		if (o.fromJson !== null) { throw new UsageError('--explain-latency runs an experiment; --from-json prints a saved file'); }
		o.np = 2;
		if (!given.has('--large')) { o.map.large = '1M'; }
		if (!given.has('--iters')) { o.map.iters = 20; }
	}
	checkBatchOptions(o, given);
	if (o.fromJson !== null) {
		if (o.fromJson === '') { throw new UsageError('--from-json needs a file name'); }
		if (o.host || o.srun) { throw new UsageError('--from-json prints a saved file; --host and --srun launch runs'); }
	} else {
		checkLaunchOptions(o, o.np);
	}
	return o;
}

/** "ob1-vader,mps" → those factors, in the order given; UsageError naming the known ones otherwise. */
function parseFactors(text: string): LatencyFactor[] {
	const ids = text.split(',');
	const known = LATENCY_FACTORS.map(f => f.id).join(', ');
	if (ids.some(id => id === '')) { throw new UsageError(`--factors needs a comma-separated list of ${known}, got ${shown(text)}`); }
	return [...new Set(ids)].map(id => {
		const f = LATENCY_FACTORS.find(x => x.id === id);
		if (!f) { throw new UsageError(`--factors: unknown factor ${shown(id)} (known: ${known})`); }
		return f;
	});
}

function fmt(v: number | null, digits: number): string {
	return v === null ? '—' : v.toFixed(digits);
}

/** The map as a text table: the hosts and GPUs, each rank's CPU affinity against its GPU's NUMA node (when the engine recorded it), then one line per pair. */
export function renderMapText(doc: MapDocument): string {
	const out: string[] = [];
	const sched = doc.schedule ? `, ${doc.schedule.mode === 'rounds' ? `${doc.schedule.rounds} rounds of up to ${doc.schedule.max_concurrent_pairs} pairs at once` : 'one pair at a time'}${doc.elapsed_s !== undefined ? ` in ${doc.elapsed_s.toFixed(1)} s` : ''}` : '';
	out.push(`Transport map: ${doc.world_size} ranks, ${doc.pairs.length} of ${doc.total_pairs} pairs${doc.sampled ? ' (sampled)' : ''}${sched}, ${doc.memory} memory, ${doc.mpi.library_version.split(',')[0]}`);
	if (doc.partial) { out.push(`  partial: ${doc.partial.reason}`); }
	if (doc.gpu_unavailable_reason) { out.push(`  no GPU: ${doc.gpu_unavailable_reason}`); }
	const hosts = new Map<string, number[]>();
	for (const r of doc.ranks) { hosts.set(r.host, [...(hosts.get(r.host) ?? []), r.rank]); }
	for (const [h, ranks] of hosts) {
		out.push(`  host ${h}: ranks ${ranks.join(',')}`);
		for (const rank of ranks) {
			const r = doc.ranks.find(x => x.rank === rank)!;
			const gpu = r.gpu ? `${r.gpu.name} ${r.gpu.pci_bus_id} NUMA ${r.gpu.numa_node}` : 'no GPU';
			out.push(`    rank ${rank}: cpus ${r.cpu_list}; ${gpu}`);
		}
	}
	out.push(...renderAffinityLines(mapAffinity(doc)));
	out.push('', '  pair      class               channel         GB/s       µs  reason');
	for (const p of doc.pairs) {
		out.push(`  ${`${p.a}-${p.b}`.padEnd(8)}  ${PATH_CLASS_LABELS[p.class].padEnd(18)}  ${(p.channel ?? '').replace('_', ' ').padEnd(14)} ${fmt(p.bandwidth_gbps, 2).padStart(6)} ${fmt(p.latency_us, 2).padStart(8)}  ${p.status === 'ok' ? '' : `[${p.status}] `}${p.error ?? p.reason}`);
	}
	return out.join('\n') + '\n';
}

/** Entry point of `gpumpi-doctor map`. Never rejects. */
export function mapMain(argv: readonly string[], io: CliIo): Promise<number> {
	return runSubcommand('map', USAGE, io, async () => {
		const o = parseMapArgs(argv);
		const emit = (saved: MapDocument): number => {
			const doc = withOutliers(saved);
			if (o.out) {
				try { writeFileWhole(path.resolve(io.cwd, o.out), JSON.stringify(doc, null, 1) + '\n'); } catch (e) {
					io.stderr(`gpumpi-doctor map: cannot write ${o.out}: ${e instanceof Error ? e.message : String(e)}\n`);
					return EXIT.failed;
				}
			}
			io.stdout(o.jsonLines ? jsonLine(doc) : o.json ? JSON.stringify(doc, null, 2) + '\n' : outlierText(doc) + renderMapText(doc));
			return EXIT.ok;
		};
		if (o.fromJson) { return fromJson(o.fromJson, io, emit); }
		if (o.explain) { return explainLatency(o, o.explain, io); }
		if (o.batch.follow !== null) { return followMain(o, io, emit, { onRecord: o.jsonLines ? recordLines(io) : undefined }); }
		const target = await cliLaunchTarget(o, o.np, io.cwd, l => io.stderr(`${l}\n`), io.signal);
		for (const n of target.notes) { io.stderr(`gpumpi-doctor map: ${n}\n`); }
		if (!target.ok && io.signal.aborted) { io.stderr('gpumpi-doctor map: interrupted before the run started; nothing was launched\n'); return EXIT.interrupted; }
		if (!target.ok) { io.stderr(`gpumpi-doctor map: ${target.error}\n`); return EXIT.failed; }
		let r: MapRunResult;
		let batch: MapBatchResult | null = null;
		try {
			const spec = { ...target.spec, loopbackOnly: o.loopback && target.flavor === 'openmpi' };
			const env = [...o.env];
			if (o.loopback) { env.push(['UCX_NET_DEVICES', 'lo']); }
			const config: LaunchConfig = { label: 'map', env, mca: o.mca, extraArgs: [] };
			// Known only once the flavour is detected (MCA parameters with an MPICH launcher): still before any launch.
			try { buildLaunchArgv(withJobName(withConfig(spec, config)), mapProgram(target.engine, o.map)); } catch (e) { throw new UsageError((e as Error).message); }
			const run: MapRunOptions = {
				engine: target.engine, host: target.host, spec, config, map: o.map, timeoutMs: o.timeoutS * 1000, signal: io.signal,
				onProgress: l => io.stderr(`${l}\n`), onRecord: o.jsonLines ? recordLines(io) : undefined,
			};
			// --sbatch: the same run as a batch job (core/map/mapBatch.ts); its outcome is printed by mapBatchCli.ts.
			if (o.batch.sbatch) { batch = await runMapBatch({ ...run, host: target.host }, batchRequest(o.batch, io.cwd, Boolean(o.host))); }
			r = batch ? batch.run : await runMap(run);
		} finally {
			await target.close();
		}
		if (batch) { return reportBatch(batch, o, io, emit); }
		// Interrupted or ended early: the map of what was measured, when the plan had come (mapStream.ts); the exit status
		// still says the run did not end well (130 interrupted, 3 a rank died or the timeout).
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
	});
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

/** `--from-json FILE`: print a saved map, or every run of a scripts/gpu/map.sh result (evidence joined). */
function fromJson(file: string, io: CliIo, emit: (doc: MapDocument) => number): number {
	let text: string;
	try { text = fs.readFileSync(path.resolve(io.cwd, file), 'utf8'); } catch (e) {
		io.stderr(`gpumpi-doctor map: cannot read ${file}: ${e instanceof Error ? e.message : String(e)}\n`);
		return EXIT.failed;
	}
	const loaded = loadMapText(text);
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
