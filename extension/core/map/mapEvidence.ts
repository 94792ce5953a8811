/**
 * Pure functions that join the runner's transport evidence to the engine's map: Open MPI btl selection lines per
 * pair (pid → rank through the engine's rank lines), UCX lanes per rank, and the refined path class of a pair.
 * No I/O; never throws on garbage.
 */
import type { UcxLaneLine } from '../../shared/reproSchema';
import type { MapChannel, MapDocument, MapPair, PairTransport, PathClass } from '../../shared/mapSchema';
import { parseRankLines } from '../launch/launcherOutput';
import { parseUcxLanes } from '../parsers/transportLines';

/** "from→to" → btl name, from "[host:pid] mca: bml: Using X btl for send to [[job,1],VPID] on node N". */
export function parseBtlPairs(text: string): Map<string, string> {
	const pids = parseRankLines(text);
	const out = new Map<string, string>();
	for (const l of text.split(/\r\n|\n|\r/)) {
		const m = /\[[^\]:]+:0*(\d+)\] mca: bml: Using (\S+) btl for send to \[\[\d+,\d+\],(\d+)\]/.exec(l);
		if (!m) { continue; }
		const from = pids.get(Number(m[1]));
		if (!from) { continue; }
		out.set(`${from.rank}>${Number(m[3])}`, m[2]);
	}
	return out;
}

/** rank → UCX tag lanes logged by that rank's process. */
export function lanesByRank(lanes: UcxLaneLine[], text: string): Map<number, string[]> {
	const pids = parseRankLines(text);
	const out = new Map<number, string[]>();
	for (const l of lanes) {
		const r = pids.get(l.pid);
		if (!r) { continue; }
		const set = new Set(out.get(r.rank) ?? []);
		for (const lane of l.lanes.tag ?? []) { set.add(lane); }
		out.set(r.rank, [...set].sort());
	}
	return out;
}

/** btls that can move GPU memory without host staging (Open MPI 4.x ob1). */
const GPU_CAPABLE_BTLS = new Set(['smcuda', 'openib', 'self']);

/** The channel of a pair: from the btl when logged, else from the hosts. */
export function pairChannel(p: Pick<MapPair, 'a' | 'b' | 'same_host'>, t: PairTransport | undefined): MapChannel {
	if (p.a === p.b) { return 'self'; }
	const btl = t?.btlAB ?? t?.btlBA ?? null;
	if (btl === 'tcp' || btl === 'openib' || btl === 'uct' || btl === 'ofi') { return 'network'; }
	if (t && t.ucxLanes.length > 0 && !p.same_host) { return 'network'; }
	return p.same_host ? 'shared_memory' : 'network';
}

/**
 * Refine the engine's class of a device-memory pair with what the MPI actually chose: a GPU path (same_gpu / p2p /
 * gpudirect_rdma) over a btl without GPU support, or UCX lanes with cuda_copy but no cuda_ipc on the same host, is
 * host staging. Returns the class, and one evidence line per fact used.
 */
export function refineClass(p: MapPair, memory: 'device' | 'host', t: PairTransport | undefined): { cls: PathClass; evidence: string[] } {
	const evidence: string[] = [];
	if (!t) { return { cls: p.class, evidence }; }
	const btls = [t.btlAB, t.btlBA].filter((b): b is string => b !== null);
	if (btls.length > 0) { evidence.push(`Open MPI btl: ${t.btlAB ?? '?'} (${p.a}→${p.b}), ${t.btlBA ?? '?'} (${p.b}→${p.a})`); }
	if (t.ucxLanes.length > 0) { evidence.push(`UCX tag lanes of rank ${p.a}: ${t.ucxLanes.join(' ')}`); }
	const gpuPath = p.class === 'same_gpu' || p.class === 'p2p' || p.class === 'gpudirect_rdma';
	if (memory !== 'device' || !gpuPath) { return { cls: p.class, evidence }; }
	const badBtl = btls.find(b => !GPU_CAPABLE_BTLS.has(b));
	if (badBtl) {
		evidence.push(`the ${badBtl} btl has no GPU path: device buffers are copied through host memory`);
		return { cls: 'host_staging', evidence };
	}
	const ipc = t.ucxLanes.some(l => l.startsWith('cuda_ipc/'));
	const copy = t.ucxLanes.some(l => l.startsWith('cuda_copy/'));
	if (p.same_host && copy && !ipc) {
		evidence.push('UCX chose cuda_copy without cuda_ipc: device buffers are copied through host memory');
		return { cls: 'host_staging', evidence };
	}
	if (ipc) { evidence.push('UCX chose cuda_ipc: GPU-to-GPU copies'); }
	if (btls.includes('smcuda')) { evidence.push('the smcuda btl can use CUDA IPC (unless btl_smcuda_use_cuda_ipc=0)'); }
	return { cls: p.class, evidence };
}

/** Apply the runner's evidence to every pair of `doc` (a new document; the input is not changed). */
export function applyEvidence(doc: MapDocument, stdout: string, stderr: string): MapDocument {
	const text = stderr + '\n' + stdout;
	const btl = parseBtlPairs(text);
	const lanes = lanesByRank(parseUcxLanes(text), text);
	const pairs = doc.pairs.map(p => {
		const t: PairTransport = { btlAB: btl.get(`${p.a}>${p.b}`) ?? null, btlBA: btl.get(`${p.b}>${p.a}`) ?? null, ucxLanes: lanes.get(p.a) ?? [] };
		const known = t.btlAB !== null || t.btlBA !== null || t.ucxLanes.length > 0;
		const r = refineClass(p, doc.memory, known ? t : undefined);
		const out: MapPair = { ...p, evidence: [...p.evidence, ...r.evidence], channel: pairChannel(p, known ? t : undefined) };
		if (known) { out.transport = t; }
		if (r.cls !== p.class) { out.engine_class = p.class; out.class = r.cls; out.reason = `${r.evidence[r.evidence.length - 1]} (engine: ${p.reason})`; }
		else if (p.same_host && out.channel === 'network') { out.reason = `${p.reason}; but MPI chose a network transport (${t.btlAB ?? t.btlBA ?? 'network'}) within the host`; }
		return out;
	});
	return { ...doc, pairs };
}
