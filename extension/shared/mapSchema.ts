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

/**
 * Outcome of a pair: measured (`ok`; `data_error`: a message arrived changed, the numbers are kept), not measured by
 * design (`skipped`), failed (`mpi_error`, `timeout`: no completion within the pair's deadline, `setup_error`), or
 * never reached (`not_measured`: the run ended or a rank went silent before it; partial documents).
 */
export type PairStatus = 'ok' | 'skipped' | 'mpi_error' | 'setup_error' | 'timeout' | 'data_error' | 'not_measured';

/** One measured (or skipped) pair of ranks. */
export interface MapPair {
	a: number;
	b: number;
	same_host: boolean;
	class: PathClass;
	reason: string;
	evidence: string[];
	status: PairStatus;
	bandwidth_gbps: number | null;
	latency_us: number | null;
	/** The round of the schedule that measured it (engines before schedules: absent). */
	round?: number;
	/** When its measurement started and ended, seconds since the run's start (rank 0's clock; other ranks' clocks as synchronised as the hosts'). */
	started_s?: number | null;
	ended_s?: number | null;
	/** Messages whose data was checked (both directions), and how many of them arrived changed. */
	verified_messages?: number;
	corrupted_messages?: number;
	/** What went wrong, with the rank that saw it ("rank 3: no answer from rank 5 within 60 s (…)"). */
	error?: string | null;
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
	/** The signal that ended the launcher when it did not exit by itself (exitCode is then null). */
	signal?: string | null;
	durationMs: number;
	/** Transport evidence lines (UCX lanes, Open MPI btl selection), deduplicated and cut. */
	evidenceLines: string[];
}

/** How the pairs were scheduled (docs/map-schema.md, "Schedules"). */
export interface MapScheduleInfo {
	mode: 'sequential' | 'rounds';
	rounds: number;
	max_concurrent_pairs: number;
	pair_timeout_s: number;
	/** How ranks wait: spinning, or napping between polls where a machine runs more ranks than it has CPUs. */
	wait?: {
		mode: 'spin' | 'nap'; nap_us: number; oversubscribed_ranks: number[];
		/** The most crowded machine's ranks per online CPU (null: unknown; absent in maps before 2026-12-07). */
		ranks_per_cpu?: number | null;
		reason: string | null;
	};
}

/** Why a run's end was not clean (the engine printed the document, then ended the job with MPI_Abort). */
export interface MapIncomplete {
	silent_ranks: number[];
	barrier_timeouts: number;
	first_unsynchronized_round: number;
	abandoned_requests: number;
	ends_with: string;
}

/** The whole map. */
export interface MapDocument {
	schema: typeof MAP_SCHEMA;
	tool: { name: string; version: string };
	options: { pairs: 'all' | 'sampled'; max_ranks: number; large_bytes: number; small_bytes: number; iters: number; latency_iters: number; memory: 'device' | 'host'; schedule?: 'auto' | 'sequential' | 'rounds'; pair_timeout_s?: number };
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
	/** The schedule (engines before schedules: absent, i.e. sequential). */
	schedule?: MapScheduleInfo;
	/** Seconds the measuring took (rounds, not start-up). */
	elapsed_s?: number;
	/** Set when the engine's end was not clean (a rank silent or stuck): it printed the document and called MPI_Abort. */
	incomplete?: MapIncomplete | null;
	/**
	 * The engine's document under `--stream --final-without-pairs`: `pairs` is empty, every pair's last outcome was in
	 * the round records (the runner puts the plan and the rounds together: mapStream.ts streamedMapDocument). Never
	 * set in a document the runner returns or writes.
	 */
	pairs_streamed?: boolean;
	/**
	 * Set by the runner when the engine's own document never arrived (the job was ended: a rank died, the launcher
	 * aborted, the user interrupted, the timeout): the document is built from the streamed plan and round records.
	 */
	partial?: { reason: string; rounds_received: number; failed_ranks: number[] } | null;
	/** Added by the runner: the anomaly-first analysis (extension/core/map/outliers.ts). */
	outliers?: MapOutlierReport;
	/** Present when the document came through the runner (gpumpi-doctor map / the VS Code command). */
	runner?: MapRunnerInfo;
	/** "gpumpi-guard": the pairs are a program's real traffic (`traffic`), not measurements of the engine. */
	traffic_source?: 'gpumpi-guard';
	/** Present on generated fixtures: how they were made. */
	generated?: { by: string; from: string; note: string };
}

/** Which part of the job an outlier is: a host, a GPU, a NIC, a link between two hosts, a pair of ranks, a rank. */
export type OutlierLevel = 'node' | 'gpu' | 'nic' | 'link' | 'pair' | 'rank';

/** One finding of the analysis, with the evidence for it. */
export interface MapOutlier {
	level: OutlierLevel;
	/** "host-c", "host-c GPU 0 (0000:18:00.0)", "host-c mlx5_2", "host-b — host-c", "3-5", "rank 3 (host-c)". */
	subject: string;
	/** `failed`: its pairs failed; `slow`: bandwidth below the rule; `high_latency`: latency above it. */
	kind: 'failed' | 'slow' | 'high_latency';
	/** Path class and channel of the pairs compared ("host_memory over network"). */
	path_class: string;
	/** Its median (GB/s or µs), the median of the rest of its path class, the MAD of the rest's logarithms, the value the rule needed it beyond, how many pairs each. */
	value: number | null;
	reference: number | null;
	mad: number | null;
	threshold?: number | null;
	pairs: number;
	reference_pairs: number;
	/** The pairs (a, b) behind it, with their numbers. */
	evidence_pairs: Array<{ a: number; b: number; value: number | null; status: PairStatus }>;
	/** Facts the engine read that bear on it (NIC and GPU NUMA nodes, PCI bus ids, virtual NIC, …). */
	facts: string[];
	/** Findings of finer levels this one explains (a slow node explains its slow links). */
	explains: string[];
	sentence: string;
}

/** The anomaly-first analysis of a map. */
export interface MapOutlierReport {
	/** The rule, in words. */
	rule: string;
	/** The first finding's sentence, or "no outlier: …". */
	headline: string;
	outliers: MapOutlier[];
	/** Single pairs (a link or pair measured once) beyond the rule: one measurement each, not named as outliers. */
	suspects: MapOutlier[];
	/**
	 * Speed findings not named because the ranks outnumbered the CPUs beyond what the rule was seen to hold at
	 * (`caveat` says why); absent in reports before 2026-12-07.
	 */
	held_back?: MapOutlier[];
	/** Under which condition the verdict was made when it is weaker than usual (ranks sharing CPUs), else null. */
	caveat?: string | null;
	/** Per level and subject: median, MAD (of the logarithm) and count of its pairs' bandwidth (the populations the rule used). */
	summaries: Array<{ level: OutlierLevel; subject: string; path_class: string; median: number; mad: number; pairs: number }>;
}

/** Schema ids of the streamed records (`gpumpi map --json --stream`, `gpumpi-doctor map --json-lines`). */
export const MAP_PLAN_SCHEMA = 'gpumpi.map-plan/1';
export const MAP_ROUND_SCHEMA = 'gpumpi.map-round/1';

/** The plan: the document before anything was measured (every pair with its round and class; no numbers). */
export interface MapPlanRecord extends Omit<MapDocument, 'schema' | 'pairs' | 'errors' | 'setup_error'> {
	schema: typeof MAP_PLAN_SCHEMA;
	schedule: MapScheduleInfo;
	pairs: Array<Omit<MapPair, 'status' | 'bandwidth_gbps' | 'latency_us'> & { round: number; measure: boolean }>;
}

/** A pair's measured fields in a round record. */
export type MapRoundPair = Pick<MapPair, 'a' | 'b' | 'status' | 'bandwidth_gbps' | 'latency_us' | 'started_s' | 'ended_s' | 'verified_messages' | 'corrupted_messages' | 'error'> & { pair: number; round: number };

/** What a round changed (rank 0 hands every round over; a sequential schedule at most once a second). */
export interface MapRoundRecord {
	schema: typeof MAP_ROUND_SCHEMA;
	/** The round handed over (= rounds for the final record). */
	round: number;
	rounds: number;
	final: boolean;
	elapsed_s: number;
	synchronized: boolean;
	pairs: MapRoundPair[];
}

function isObj(v: unknown): v is Record<string, unknown> {
	return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const CLASS_SET = new Set<string>(PATH_CLASSES);
/**
 * Largest map accepted (ranks). Issue 36 asks for 16 384; the panel draws maps of any size node by node
 * (shared/mapOverview.ts) and a rank-level matrix only for small ones.
 */
export const MAX_MAP_RANKS = 65536;

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
