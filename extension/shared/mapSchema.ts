/**
 * Types of the transport map (`gpumpi map`, docs/map-schema.md): the engine's document (schema "gpumpi.map/1",
 * snake_case as printed by native/engine/map.cc) and what the runner adds (`runner`, per-pair `transport`).
 * No vscode, DOM or node imports: the webview, the CLI and the tests share this file.
 */
import type { RankAffinity } from './engineSchema';

/** Schema id of a map document. */
export const MAP_SCHEMA = 'gpumpi.map/1';

/** Path classes, from best to worst for GPU data. */
export const PATH_CLASSES = ['same_gpu', 'p2p', 'gpudirect_rdma', 'host_staging', 'not_cuda_aware', 'host_memory'] as const;
/** How MPI moves data between two ranks. */
export type PathClass = (typeof PATH_CLASSES)[number];

/** Human labels of the path classes. */
export const PATH_CLASS_LABELS: Readonly<Record<PathClass, string>> = {
	same_gpu: 'same GPU',
	p2p: 'P2P (NVLink/PCIe)',
	gpudirect_rdma: 'GPUDirect RDMA',
	host_staging: 'MPI host staging',
	not_cuda_aware: 'not CUDA-aware',
	host_memory: 'host memory only',
};

/** Which channel carries a pair's messages. */
export type MapChannel = 'self' | 'shared_memory' | 'network';
/** Labels of the channels. */
export const CHANNEL_LABELS: Readonly<Record<MapChannel, string>> = { self: 'self', shared_memory: 'shared memory', network: 'network' };

/** One NIC or RDMA device of a rank's host. */
export interface MapNic { name: string; kind: 'net' | 'ib'; numa_node: number; virtual: boolean; state: string }

/** Peer access from a rank's GPU to another GPU of its host. */
export interface MapGpuPeer { ordinal: number; pci_bus_id: string; can_access_peer: boolean }

/** The GPU a rank uses. */
export interface MapGpu { ordinal: number; name: string; uuid: string; pci_bus_id: string; numa_node: number; peers: MapGpuPeer[] }

/** Where one rank runs. */
export interface MapRank {
	rank: number;
	host: string;
	pid: number;
	local_rank: number;
	cpus: number[];
	cpu_list: string;
	gpu: MapGpu | null;
	nics: MapNic[];
	peermem: { loaded: boolean; module: string };
	/** The rank's CPU binding against its GPU's NUMA node (the same object as `gpumpi inspect`'s); absent from older engines. */
	affinity?: RankAffinity | null;
}

/** What the runner saw on the wire for one pair (Open MPI btl lines, UCX lanes). */
export interface PairTransport {
	/** Open MPI btl used a→b / b→a ("mca: bml: Using X btl for send to …"), or null when not logged. */
	btlAB: string | null;
	btlBA: string | null;
	/** UCX tag lanes logged by rank a's process (UCX_LOG_LEVEL=info "ep_cfg" lines), deduplicated. */
	ucxLanes: string[];
}

/**
 * A pair's real traffic as the guard saw it (`gpumpi-doctor guard`, docs/guard.md): messages and bytes each way,
 * the largest message, the buffer classes of both sides' calls and the guard's path for the pair.
 */
export interface PairTraffic {
	bytes_ab: number; bytes_ba: number; calls_ab: number; calls_ba: number; largest_message: number;
	buffer_classes: Record<string, number>;
	path: string;
}

/** One measured (or skipped) pair of ranks. */
export interface MapPair {
	a: number;
	b: number;
	same_host: boolean;
	class: PathClass;
	reason: string;
	evidence: string[];
	status: 'ok' | 'skipped' | 'mpi_error' | 'setup_error';
	bandwidth_gbps: number | null;
	latency_us: number | null;
	/** Added by the runner. */
	channel?: MapChannel;
	transport?: PairTransport;
	/** The engine's class when the runner's evidence changed it. */
	engine_class?: PathClass;
	/** Present in a guard map (`traffic_source` "gpumpi-guard"): what the program really sent; no bandwidth or latency. */
	traffic?: PairTraffic;
}

/** How the runner launched the map. */
export interface MapRunnerInfo {
	command: string[];
	flavor: 'openmpi' | 'mpich';
	exitCode: number | null;
	durationMs: number;
	/** Transport evidence lines (UCX lanes, Open MPI btl selection), deduplicated and cut. */
	evidenceLines: string[];
}

/** The whole map. */
export interface MapDocument {
	schema: typeof MAP_SCHEMA;
	tool: { name: string; version: string };
	options: { pairs: 'all' | 'sampled'; max_ranks: number; large_bytes: number; small_bytes: number; iters: number; latency_iters: number; memory: 'device' | 'host' };
	memory: 'device' | 'host';
	gpu_unavailable_reason: string | null;
	mpi: { library_version: string; implementation: string; cuda_aware: { compile_time: boolean | null; run_time: boolean | null; query: string } };
	world_size: number;
	sampled: boolean;
	total_pairs: number;
	setup_error: string | null;
	ranks: MapRank[];
	pairs: MapPair[];
	errors: Array<{ pair: number; rank: number; error: string }>;
	/** Present when the document came through the runner (gpumpi-doctor map / the VS Code command). */
	runner?: MapRunnerInfo;
	/** "gpumpi-guard": the pairs are a program's real traffic (`traffic`), not measurements of the engine. */
	traffic_source?: 'gpumpi-guard';
	/** Present on generated fixtures: how they were made. */
	generated?: { by: string; from: string; note: string };
}

function isObj(v: unknown): v is Record<string, unknown> {
	return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const CLASS_SET = new Set<string>(PATH_CLASSES);
/** Largest map accepted (ranks); the webview's matrix is drawn on a canvas up to this size. */
export const MAX_MAP_RANKS = 8192;

/** Check that `v` is a map document (shape and ranges that the renderers rely on). Returns it or the problem. */
export function validateMapDocument(v: unknown): MapDocument | string {
	if (!isObj(v)) { return 'not a JSON object'; }
	if (v.schema !== MAP_SCHEMA) { return `schema is ${JSON.stringify(v.schema)}, expected ${MAP_SCHEMA}`; }
	if (typeof v.world_size !== 'number' || !Number.isInteger(v.world_size) || v.world_size < 1 || v.world_size > MAX_MAP_RANKS) { return 'world_size missing or out of range'; }
	if (!Array.isArray(v.ranks) || !Array.isArray(v.pairs) || !isObj(v.mpi) || !isObj(v.options)) { return 'missing ranks/pairs/mpi/options'; }
	if (v.ranks.length > v.world_size) { return 'more ranks than world_size'; }
	const n = v.world_size;
	for (const r of v.ranks) {
		if (!isObj(r) || typeof r.rank !== 'number' || typeof r.host !== 'string' || !Array.isArray(r.nics) || !Array.isArray(r.cpus)) { return 'a rank lacks rank/host/nics/cpus'; }
		if (r.gpu !== null && (!isObj(r.gpu) || typeof r.gpu.uuid !== 'string' || typeof r.gpu.pci_bus_id !== 'string')) { return `rank ${r.rank}: bad gpu`; }
	}
	for (const p of v.pairs) {
		if (!isObj(p) || typeof p.a !== 'number' || typeof p.b !== 'number' || !Number.isInteger(p.a) || !Number.isInteger(p.b)) { return 'a pair lacks a/b'; }
		if (p.a < 0 || p.b < 0 || p.a >= n || p.b >= n || p.a === p.b) { return `pair ${p.a}-${p.b} is out of range`; }
		if (typeof p.class !== 'string' || !CLASS_SET.has(p.class)) { return `pair ${p.a}-${p.b}: unknown class ${JSON.stringify(p.class)}`; }
		if (!Array.isArray(p.evidence) || typeof p.reason !== 'string') { return `pair ${p.a}-${p.b}: no reason/evidence`; }
		for (const k of ['bandwidth_gbps', 'latency_us'] as const) {
			if (p[k] !== null && (typeof p[k] !== 'number' || !Number.isFinite(p[k]) || (p[k] as number) < 0)) { return `pair ${p.a}-${p.b}: bad ${k}`; }
		}
	}
	return v as unknown as MapDocument;
}
