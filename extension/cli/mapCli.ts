/**
 * `gpumpi-doctor map …`: runs `gpumpi map` under mpirun and prints the transport map as a table (or the document
 * with --json; --out FILE also writes it). `--from-json FILE` prints a saved map instead of running anything.
 * Exit codes: 0 a map was produced, 1 nothing could run or the run failed, 2 usage error.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { applyEvidence } from '../core/map/mapEvidence';
import { DEFAULT_MAP_OPTIONS, runMap, type MapEngineOptions } from '../core/map/mapRunner';
import type { LaunchConfig } from '../core/launch/launchSpec';
import { posixQuoteArgv } from '../shared/shellQuote';
import { cliLaunchTarget, optionInt, optionValue, readLaunchOption, TARGET_USAGE, UsageError, type LaunchCliOptions } from './launchArgs';
import { PATH_CLASS_LABELS, validateMapDocument, type MapDocument } from '../shared/mapSchema';

/** The I/O the map command needs (a subset of gpumpiDoctor's CliIo). */
export interface MapCliIo {
	stdout(text: string): void;
	stderr(text: string): void;
	cwd: string;
	signal: AbortSignal;
}

const USAGE = `Usage: gpumpi-doctor map [options]
  --json                 print the map document (schema gpumpi.map/1, docs/map-schema.md) instead of the table
  --out FILE             also write the map document to FILE (open it with "GPU-MPI: Show Transport Map")
  --np N                 ranks (default 4)
  --mpirun PATH          launcher (default: mpirun on PATH); --flavor openmpi|mpich overrides detection
  --engine PATH          gpumpi engine (default: native/build/engine*/gpumpi)
  --memory device|host   buffers (default device; without a GPU the engine uses host memory and says why)
  --large S --small S    bandwidth / latency sizes (default 64M / 8)   --iters N (default 5)
  --pairs all|sampled    --max-ranks N (default 16: all pairs up to N ranks, else sampled)
  --mca K V              Open MPI MCA parameter, repeatable (e.g. btl tcp,self)
  --preset NAME=VALUE    environment for every rank, repeatable (e.g. UCX_TLS=^cuda_ipc)
  --loopback             keep TCP on loopback (Open MPI btl_tcp_if_include lo, UCX_NET_DEVICES=lo)
${TARGET_USAGE.trimEnd()}
  --timeout S            run timeout in seconds (default 600)
  --from-json FILE       print a saved map (or scripts/gpu/map.sh's map.json, evidence joined) instead of running
`;


interface MapCliOptions extends LaunchCliOptions {
	json: boolean; out: string | null; np: number; map: MapEngineOptions; loopback: boolean;
}

function parseArgs(argv: string[]): MapCliOptions {
	const o: MapCliOptions = {
		json: false, out: null, np: 4, mpirun: 'mpirun', flavor: null, engine: null, map: { ...DEFAULT_MAP_OPTIONS },
		memory: DEFAULT_MAP_OPTIONS.memory, env: [], mca: [], loopback: false, timeoutS: 600, fromJson: null,
	};
	const value = (i: number, name: string): string => optionValue(argv, i, name);
	const int = optionInt;
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		const last = readLaunchOption(argv, i, o);
		if (last >= 0) { i = last; continue; }
		switch (a) {
			case '--json': o.json = true; break;
			case '--loopback': o.loopback = true; break;
			case '--out': o.out = value(i++, a); break;
			case '--np': o.np = int(value(i++, a), a, 2, 4096); break;
			case '--pairs': {
				const p = value(i++, a);
				if (p !== 'all' && p !== 'sampled') { throw new UsageError('--pairs needs all or sampled'); }
				o.map.pairs = p;
				break;
			}
			case '--large': case '--small': {
				const s = value(i++, a);
				if (!/^\d+[KMG]?$/.test(s)) { throw new UsageError(`${a} needs e.g. 64M or 8`); }
				if (a === '--large') { o.map.large = s; } else { o.map.small = s; }
				break;
			}
			case '--iters': o.map.iters = int(value(i++, a), a, 1, 1000); break;
			case '--max-ranks': o.map.maxRanks = int(value(i++, a), a, 2, 1 << 20); break;
			default: throw new UsageError(`unknown option ${JSON.stringify(a)}`);
		}
	}
	o.map.memory = o.memory;
	return o;
}

function fmt(v: number | null, digits: number): string {
	return v === null ? '—' : v.toFixed(digits);
}

/** The map as a text table (one line per pair, then the hosts and GPUs). */
export function renderMapText(doc: MapDocument): string {
	const out: string[] = [];
	out.push(`Transport map: ${doc.world_size} ranks, ${doc.pairs.length} of ${doc.total_pairs} pairs${doc.sampled ? ' (sampled)' : ''}, ${doc.memory} memory, ${doc.mpi.library_version.split(',')[0]}`);
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
	out.push('', '  pair      class               channel         GB/s       µs  reason');
	for (const p of doc.pairs) {
		out.push(`  ${`${p.a}-${p.b}`.padEnd(8)}  ${PATH_CLASS_LABELS[p.class].padEnd(18)}  ${(p.channel ?? '').replace('_', ' ').padEnd(14)} ${fmt(p.bandwidth_gbps, 2).padStart(6)} ${fmt(p.latency_us, 2).padStart(8)}  ${p.status === 'ok' ? '' : `[${p.status}] `}${p.reason}`);
	}
	return out.join('\n') + '\n';
}

/** Runs of a scripts/gpu/map.sh result ("gpumpi.map-gpu/1"), each with the evidence joined; null for other JSON. */
export function fromDeviceResult(raw: unknown): Array<{ name: string; doc: MapDocument | string }> | null {
	if (typeof raw !== 'object' || raw === null || (raw as { schema?: unknown }).schema !== 'gpumpi.map-gpu/1') { return null; }
	const runs = (raw as { runs?: unknown }).runs;
	if (!Array.isArray(runs)) { return []; }
	return runs.map((r: unknown, i) => {
		const run = (typeof r === 'object' && r !== null ? r : {}) as { name?: unknown; document?: unknown; evidence_text?: unknown; exit_code?: unknown };
		const name = typeof run.name === 'string' ? run.name : `run ${i}`;
		if (run.document === null || run.document === undefined) { return { name, doc: `no map document (exit status ${String(run.exit_code)})` }; }
		const doc = validateMapDocument(run.document);
		if (typeof doc === 'string') { return { name, doc }; }
		return { name, doc: applyEvidence(doc, '', typeof run.evidence_text === 'string' ? run.evidence_text : '') };
	});
}

/** Entry point of `gpumpi-doctor map`. Never rejects. */
export async function mapMain(argv: string[], io: MapCliIo): Promise<number> {
	if (argv.includes('--help') || argv.includes('-h')) { io.stdout(USAGE); return 0; }
	let o: MapCliOptions;
	try { o = parseArgs(argv); } catch (e) {
		if (e instanceof UsageError) { io.stderr(`gpumpi-doctor map: ${e.message}\n\n${USAGE}`); return 2; }
		throw e;
	}
	const emit = (doc: MapDocument): number => {
		if (o.out) {
			try { fs.writeFileSync(path.resolve(io.cwd, o.out), JSON.stringify(doc, null, 1) + '\n'); } catch (e) {
				io.stderr(`gpumpi-doctor map: cannot write ${o.out}: ${e instanceof Error ? e.message : String(e)}\n`);
				return 1;
			}
		}
		io.stdout(o.json ? JSON.stringify(doc, null, 2) + '\n' : renderMapText(doc));
		return 0;
	};
	if (o.fromJson) {
		let raw: unknown;
		try { raw = JSON.parse(fs.readFileSync(path.resolve(io.cwd, o.fromJson), 'utf8')); } catch (e) {
			io.stderr(`gpumpi-doctor map: cannot read ${o.fromJson}: ${e instanceof Error ? e.message : String(e)}\n`);
			return 1;
		}
		const device = fromDeviceResult(raw);
		if (device) {
			// scripts/gpu/map.sh's map.json: one engine document per run, joined with that run's evidence lines.
			let code = 0;
			for (const r of device) {
				if (typeof r.doc === 'string') { io.stderr(`gpumpi-doctor map: run ${r.name}: ${r.doc}\n`); code = 1; continue; }
				io.stdout(`== ${r.name}\n`);
				if (emit(r.doc) !== 0) { code = 1; }
			}
			return code;
		}
		const doc = validateMapDocument(raw);
		if (typeof doc === 'string') { io.stderr(`gpumpi-doctor map: ${o.fromJson} is not a map: ${doc}\n`); return 1; }
		return emit(doc);
	}
	let target;
	try {
		target = await cliLaunchTarget(o, o.np, io.cwd, l => io.stderr(`${l}\n`));
	} catch (e) {
		io.stderr(`gpumpi-doctor map: ${e instanceof Error ? e.message : String(e)}\n`);
		return 2;
	}
	for (const n of target.notes) { io.stderr(`gpumpi-doctor map: ${n}\n`); }
	if (!target.ok) { io.stderr(`gpumpi-doctor map: ${target.error}\n`); return 1; }
	const spec = { ...target.spec, loopbackOnly: o.loopback && target.flavor === 'openmpi' };
	const env = [...o.env];
	if (o.loopback) { env.push(['UCX_NET_DEVICES', 'lo']); }
	const config: LaunchConfig = { label: 'map', env, mca: o.mca, extraArgs: [] };
	let r;
	try {
		r = await runMap({ engine: target.engine, host: target.host, spec, config, map: o.map, timeoutMs: o.timeoutS * 1000, signal: io.signal, onProgress: l => io.stderr(`${l}\n`) });
	} catch (e) {
		io.stderr(`gpumpi-doctor map: ${e instanceof Error ? e.message : String(e)}\n`);
		return 2;
	} finally {
		await target.close();
	}
	if (!r.ok) {
		io.stderr(`gpumpi-doctor map: ${r.error}\n  command: ${posixQuoteArgv(r.command)}\n${r.outputTail}\n`);
		return 1;
	}
	return emit(r.doc);
}
