/**
 * Contracts of the two reproducers (docs/repro-schema.md):
 * - the engine documents `gpumpi repro ipc --json` ("gpumpi.repro.ipc/1") and `gpumpi repro fallback --json`
 *   ("gpumpi.repro.fallback/1"), printed framed in checked chunks; field names are snake_case (written by C++);
 * - the runner's combined reports ("gpumpi.repro.ipc-report/1", "gpumpi.repro.fallback-report/1"), camelCase.
 * No node, no vscode, no DOM here.
 */

export const REPRO_IPC_SCHEMA = 'gpumpi.repro.ipc/1';
export const REPRO_FALLBACK_SCHEMA = 'gpumpi.repro.fallback/1';
export const REPRO_IPC_REPORT_SCHEMA = 'gpumpi.repro.ipc-report/2';
export const REPRO_FALLBACK_REPORT_SCHEMA = 'gpumpi.repro.fallback-report/2';
/** Reports saved before trials (one run per variant); still read, as one trial each (never a verdict). */
export const REPRO_IPC_REPORT_SCHEMA_V1 = 'gpumpi.repro.ipc-report/1';
export const REPRO_FALLBACK_REPORT_SCHEMA_V1 = 'gpumpi.repro.fallback-report/1';

/** Marker lines of the engine's framed JSON document on stdout (native/common/docFrame.hh, docs/repro-schema.md). */
export const JSON_BEGIN_MARKER = '@@GPUMPI-JSON-BEGIN@@';
export const JSON_CHUNK_MARKER = '@@GPUMPI-JSON@@';
export const JSON_END_MARKER = '@@GPUMPI-JSON-END@@';
/** Prefix of the line every rank prints on stderr after MPI_Init: "@@GPUMPI-RANK@@ rank=1 pid=123 host=h". */
export const RANK_LINE_MARKER = '@@GPUMPI-RANK@@';

/** IPC variants the engine knows (crash-test is a test hook). */
export const IPC_VARIANTS = ['direct', 'bounce', 'host', 'send-from-import'] as const;
/** Variants run only when named (--variants): MPI with a buffer from a stream-ordered pool / the VMM API, no app IPC. */
export const IPC_ALLOC_VARIANTS = ['pool', 'vmm'] as const;
/** One IPC variant name. */
export type IpcVariant = (typeof IPC_VARIANTS)[number] | (typeof IPC_ALLOC_VARIANTS)[number] | 'crash-test';

/** Fallback modes: MPI, the user-style pipeline, host baseline, and the same transfers through libgpumpi. */
export const FALLBACK_MODES = ['mpi', 'staged', 'host', 'lib-auto', 'lib-staged', 'lib-shm'] as const;
/** The libgpumpi modes (engine/libModes.hh); absent from documents of engines before 2026-12-03. */
export const FALLBACK_LIB_MODES = ['lib-auto', 'lib-staged', 'lib-shm'] as const;
/** One fallback mode. */
export type FallbackMode = (typeof FALLBACK_MODES)[number];

/** The MPI library as the engine saw it. */
export interface ReproMpiInfo {
	library_version: string;
	implementation: 'openmpi' | 'mpich' | 'unknown';
	cuda_aware: { compile_time: boolean | null; run_time: boolean | null; query: string };
	/** When the engine first touched CUDA (GPUMPI_CUDA_INIT); absent in documents of engines before 2026-12-03. */
	cuda_first_touched?: 'before MPI_Init' | 'after MPI_Init';
}

/** Outcomes the engine itself can report for an IPC variant. */
export type IpcEngineOutcome = 'correct' | 'wrong_data' | 'mpi_error' | 'setup_error' | 'placement_error' | 'usage_error';

/** One rank of an IPC run. */
export interface IpcRankRecord {
	rank: number;
	host: string;
	local_rank: number;
	pid: number;
	/** CUDA device ordinal, -1 on host memory. */
	device: number;
	role: 'owner' | 'importer' | '';
	/** What this rank handed to MPI, e.g. "imported pointer (receive)". */
	buffer: string;
	status: 'ok' | 'wrong_data' | 'mpi_error' | 'setup_error';
	/** Present for mpi_error (class = MPI_Error_class) and setup_error. */
	error?: { call: string; class?: number; message: string };
	/** Present on ranks that checked words (the owners). */
	verified?: { words: number; wrong: number; first_wrong_index?: number; first_wrong_value?: string; first_wrong_expected?: string };
	transfer_seconds: number;
}

/** `gpumpi repro ipc --json`. */
export interface ReproIpcDocument {
	schema: typeof REPRO_IPC_SCHEMA;
	variant: string;
	inject: string;
	description: string;
	memory: 'device' | 'host';
	requested_memory: 'device' | 'host';
	/** Why there is no GPU verdict (null on device memory). */
	gpu_unavailable_reason: string | null;
	size_bytes: number;
	np: number;
	mpi: ReproMpiInfo;
	topology: { hosts: string[]; imports_intra_node: boolean; sends_inter_node: boolean };
	outcome: IpcEngineOutcome;
	detail: string;
	ranks: IpcRankRecord[];
}

/** Memory figures of one rank for one (mode, size); null when the kernel/driver does not report it. */
export interface FallbackRankMemory {
	rank: number;
	rss_baseline_bytes: number | null;
	rss_peak_growth_bytes: number | null;
	pinned_peak_growth_bytes: number | null;
	locked_peak_growth_bytes: number | null;
	/** cuMemGetInfo used growth: counts every process on that GPU. */
	device_used_peak_growth_bytes: number | null;
	/** Pinned host bytes the reproducer itself holds (staging buffers). */
	library_pinned_bytes: number;
	samples: number;
}

/** One (mode, size) measurement. */
export interface FallbackResult {
	mode: FallbackMode;
	size_bytes: number;
	messages: number;
	status: 'ok' | 'wrong_data' | 'mpi_error' | 'setup_error' | 'skipped';
	/** Why a mode does not apply here (lib-shm across hosts); absent otherwise. */
	skipped_reason?: string;
	/** lib-* modes: the libgpumpi protocol used (direct | staged | shm), null when nothing ran. */
	protocol?: string | null;
	error?: string;
	error_class?: number;
	/** Slowest rank's time of each iteration. */
	seconds: number[];
	best_gbps: number | null;
	median_gbps: number | null;
	verified: { words: number; wrong: number };
	memory: FallbackRankMemory[];
}

/** `gpumpi repro fallback --json`. */
export interface ReproFallbackDocument {
	schema: typeof REPRO_FALLBACK_SCHEMA;
	memory: 'device' | 'host';
	requested_memory: 'device' | 'host';
	gpu_unavailable_reason: string | null;
	np: number;
	mpi: ReproMpiInfo;
	hosts: string[];
	same_node: boolean;
	device_ordinals: number[];
	/** Each rank's host memory from /proc/meminfo before the buffers; absent before 2026-12-03. */
	node_memory?: { rank: number; mem_total_bytes: number | null; mem_available_bytes: number | null }[];
	chunk_bytes: number;
	nbuf: number;
	iters: number;
	max_message_bytes: number;
	results: FallbackResult[];
	outcome: 'ok' | 'partial' | 'setup_error' | 'usage_error';
	detail: string;
}

/** What the runner concludes about one IPC variant run (engine outcomes plus what only the runner can see). */
export type IpcVariantOutcome = IpcEngineOutcome | 'crashed' | 'timed_out' | 'no_output' | 'launch_error';

/** A failure signature found in one trial's own output (core/repro/failureSignatures.ts). */
export interface SignatureHit {
	id: string;
	/** The first line of the trial's output that carries it. */
	line: string;
}

/** One isolated trial of a variant (its own mpirun). */
export interface IpcVariantResult {
	/** 1-based trial index within its variant and configuration. */
	trial: number;
	variant: string;
	/** Label of the launcher configuration, e.g. "ob1" or "ucx, UCX_TLS=^cuda_ipc". */
	config: string;
	outcome: IpcVariantOutcome;
	detail: string;
	/** Signal that ended a crashed rank (e.g. 11), when it could be read. */
	signal: number | null;
	signalName: string | null;
	crashedRank: number | null;
	ranks: IpcRankRecord[];
	/** Lines of the raw output that explain the outcome (crash lines, UCX lanes, errors). */
	evidence: string[];
	command: string[];
	exitCode: number | null;
	durationMs: number;
	memory: 'device' | 'host' | null;
	gpuUnavailableReason: string | null;
	/** Failure signatures present in this trial's output. */
	signatures: SignatureHit[];
	/** This trial's raw output (stdout then stderr), head and tail kept within MAX_TRIAL_LOG characters. */
	log: string;
}

/** Characters of raw output kept per trial. */
export const MAX_TRIAL_LOG = 24_000;

/** Trials per outcome. */
export type OutcomeCounts = Record<IpcVariantOutcome, number>;

/** Distinct failure mode of a variant: failing trials that share outcome, signal and signatures. */
export interface FailureMode {
	key: string;
	/** e.g. "crashed (SIGSEGV): SIGSEGV in ucp_dt_pack". */
	label: string;
	outcome: IpcVariantOutcome;
	signal: number | null;
	count: number;
	/** Trial indices. */
	trials: number[];
	/** Ranks that crashed. */
	ranks: number[];
	signatures: string[];
	/** Explanations of the signatures present (with the line seen). */
	explanations: string[];
	sampleTrial: number;
	sampleLog: string;
	sampleEvidence: string[];
}

/** Verdict class of a variant under a configuration (extension/shared/trialStats.ts). */
export type TrialClass = 'works' | 'fails' | 'unreliable' | 'inconclusive';

/** All trials of one variant under one configuration, and what they say together. */
export interface IpcVariantSummary {
	variant: string;
	config: string;
	/** Trials run. */
	trials: number;
	/** Trials asked for (more than `trials` when cancelled). */
	requested: number;
	counts: OutcomeCounts;
	/** Trials that failed (not correct, not a launch/usage/placement error). */
	failures: number;
	class: TrialClass;
	/** With 0 failures: the failure rate ruled out at 95 % (fraction). */
	ruledOutAbove: number | null;
	/** "0 of 11 failed: a failure rate above 24 % is ruled out at 95 %". */
	sentence: string;
	failureModes: FailureMode[];
	/** Every trial, in order. */
	runs: IpcVariantResult[];
}

/** What the IPC answer holds under: message size and protocol, placement, memory kind. */
export interface IpcConditions {
	sizeBytes: number | null;
	/** "rendezvous (64 MiB is above every eager threshold)" etc. */
	protocol: string;
	placement: string;
	memory: 'device' | 'host' | null;
	/** What the trials could still have missed. */
	missed: string[];
}

/** The answer to the IPC report's question. */
export interface IpcVerdict {
	/** Receiving into an imported pointer works here (null: not tested / no result). */
	directWorks: boolean | null;
	/** True only when the runs used GPU memory. */
	gpuVerdict: boolean;
	/** One sentence. */
	answer: string;
	/** Why, with evidence. */
	why: string[];
	/** Variants that worked instead: every trial correct, with their count ("bounce (ucx): 11 of 11 correct"). */
	worksInstead: string[];
	/** When bounce works instead: libgpumpi's IPC helper calls that do the bounce (extension/core/repro/fallbackFix.ts);
	 *  absent in reports saved before 2026-12-03. */
	bounceFix?: { exporter: string; importer: string; code: string; example: string };
	/** The direct variant's verdict class over all configurations (null when not run). */
	directClass: TrialClass | null;
	conditions: IpcConditions;
}

/** Combined IPC report (one document for all variants and configurations). */
export interface ReproIpcReport {
	schema: typeof REPRO_IPC_REPORT_SCHEMA;
	mpi: ReproMpiInfo | null;
	/** Trials asked for per variant and configuration. */
	trials: number;
	/** True when cancelled (or cut by the total time limit) before every trial ran. */
	partial: boolean;
	/** The trial that was running when the run was cancelled: kept for its evidence (e.g. scancel), not counted. */
	cut: IpcVariantResult | null;
	variants: IpcVariantSummary[];
	verdict: IpcVerdict;
}

/** One UCX endpoint configuration line (`UCX_LOG_LEVEL=info`). */
export interface UcxLaneLine {
	host: string;
	pid: number;
	epCfg: number;
	/** e.g. {tag: ["self/memory0", "cma/memory"], rma: [...], am: [...]} */
	lanes: Record<string, string[]>;
	line: string;
}

/** One row of a `UCX_PROTO_INFO=y` table. */
export interface UcxProtoRow {
	pid: number;
	epCfg: number;
	/** Table title, e.g. "tagged message by ucp_tag_send*() from host memory". */
	operation: string;
	/** "host memory", "cuda/GPU0", … (from the title), or "". */
	memoryType: string;
	fromBytes: number;
	/** null = inf */
	toBytes: number | null;
	protocol: string;
	lanes: string;
	line: string;
}

/** Transport evidence gathered from one run's mixed output. */
export interface TransportEvidence {
	lanes: UcxLaneLine[];
	protocols: UcxProtoRow[];
	/** Open MPI `mca: bml: Using X btl for send to … on node …` → btl names. */
	btls: string[];
	/** Raw lines worth showing. */
	lines: string[];
}

/** How MPI moves GPU data to the peer. */
export type FallbackPath = 'direct' | 'staged' | 'cannot' | 'unknown';

/** The fallback report's verdict for the pair. */
export interface FallbackVerdict {
	path: FallbackPath;
	/** "MPI moves GPU data to this peer directly" etc. */
	pathText: string;
	/** Size the comparison used (largest size where mpi and staged both worked), or null. */
	atBytes: number | null;
	/** staged / mpi median of the per-trial best bandwidths (> 1: manual staging is faster). */
	stagedOverMpi: number | null;
	/** False when the staged and mpi ranges overlap ("no difference"); null without both. */
	differs: boolean | null;
	/** Largest peak resident-memory growth of any rank during mpi-mode transfers, bytes. */
	mpiExtraHostBytes: number | null;
	/** The same for staged mode (the staging buffers are allocated before, so this is usually ~0). */
	stagedExtraHostBytes: number | null;
	text: string[];
	gpuVerdict: boolean;
}

/** One engine run of the fallback report (the runner starts one per mode and trial, for isolation). */
export interface FallbackRun {
	/** 1-based trial index. */
	trial: number;
	modes: string[];
	config: string;
	outcome: 'ok' | 'partial' | 'setup_error' | 'usage_error' | 'crashed' | 'timed_out' | 'no_output' | 'launch_error';
	detail: string;
	command: string[];
	exitCode: number | null;
	durationMs: number;
}

/** Outcomes of a fallback run. */
export type FallbackRunOutcome = FallbackRun['outcome'];

/** A measurement of one trial. */
export interface FallbackTrialResult extends FallbackResult {
	/** 1-based trial index. */
	trial: number;
	/** The UCX setting ("NAME=VALUE") this `mpi`-mode result ran with on top of the configuration (`--try-ucx`);
	 *  absent for the configuration itself. Its statistics and ranking key is `mpi+NAME=VALUE`. */
	ucx_setting?: string;
}

/** The statistics / ranking key of a result: its mode, or `mpi+NAME=VALUE` for a tried UCX setting (`--try-ucx`). */
export function fallbackResultKey(r: Pick<FallbackTrialResult, 'mode' | 'ucx_setting'>): string {
	return r.ucx_setting ? `mpi+${r.ucx_setting}` : r.mode;
}

/** The runs of one mode over the trials. */
export interface FallbackModeSummary {
	mode: string;
	/** Trials run. */
	trials: number;
	requested: number;
	counts: Record<FallbackRunOutcome, number>;
}

/** Median and range of a repeated value (extension/shared/trialStats.ts Spread). */
export interface ValueSpread { median: number; min: number; max: number; n: number }

/** One (mode, size) over the trials: best bandwidth and peak resident growth of each trial. */
export interface FallbackStat {
	mode: string;
	sizeBytes: number;
	/** Trials with a result for this (mode, size). */
	trials: number;
	/** Trials whose status was ok. */
	ok: number;
	/** Per-trial best GB/s. */
	bestGbps: ValueSpread | null;
	/** Per-trial largest peak RSS growth of a rank, bytes. */
	rssGrowth: ValueSpread | null;
}

/** Combined fallback report. */
export interface ReproFallbackReport {
	schema: typeof REPRO_FALLBACK_REPORT_SCHEMA;
	config: string;
	mpi: ReproMpiInfo | null;
	memory: 'device' | 'host' | null;
	gpuUnavailableReason: string | null;
	/** Trials asked for per mode. */
	trials: number;
	partial: boolean;
	modes: FallbackModeSummary[];
	runs: FallbackRun[];
	/** Every trial's measurements. */
	results: FallbackTrialResult[];
	stats: FallbackStat[];
	transports: TransportEvidence;
	verdict: FallbackVerdict;
	/** Every measured option ranked, the recommendation and its code (extension/core/repro/fallbackRanking.ts);
	 *  absent in reports saved before 2026-12-03. */
	ranking?: FallbackRankingJson;
}

/** The ranking as the report carries it (shared/ cannot import core/: the same shape, structurally). */
export interface FallbackRankingJson {
	atBytes: number | null;
	options: { mode: string; label: string; bestGbps: ValueSpread; extraHostBytes: ValueSpread | null; extraDeviceBytes: ValueSpread | null }[];
	best: { mode: string; label: string } | null;
	mpiGrowthPerGiB: number | null;
	mpiOomBytes: number | null;
	fix: { mode: string; code: string; build: string[]; example: string; setup: string; exchange: string; teardown: string } | null;
	/** The UCX settings tried beside the configuration (`--try-ucx`), each compared with MPI as configured; absent in
	 *  reports saved before 2026-12-04 and [] when none was tried. */
	ucxSettings?: UcxSettingOutcomeJson[];
	/** The tried setting the verdict names as the best measured one, or null (none kept MPI's bandwidth, or none
	 *  tried); absent in reports saved before 2026-12-04's picker. */
	ucxBest?: string | null;
	text: string[];
}

/** One tried UCX setting (extension/core/repro/fallbackRanking.ts UcxSettingOutcome). */
export interface UcxSettingOutcomeJson {
	setting: string;
	/** Trials with a result at the comparison size / trials launched. */
	ok: number;
	launched: number;
	bestGbps: ValueSpread | null;
	extraHostBytes: ValueSpread | null;
	/** 'faster' / 'slower' than MPI as configured when the trial ranges do not overlap, else 'same'; null: not compared. */
	bandwidth: 'faster' | 'slower' | 'same' | null;
	/** Host growth per GiB of message below 64 MiB in every trial; null when not measured. */
	boundsMemory: boolean | null;
	/** Why it has no result (the first failed run's detail), or null. */
	failure: string | null;
}

function isObj(v: unknown): v is Record<string, unknown> {
	return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Check the shape of an engine IPC document; returns it typed, or a reason. */
export function validateIpcDocument(v: unknown): ReproIpcDocument | string {
	if (!isObj(v)) { return 'not a JSON object'; }
	if (v.schema !== REPRO_IPC_SCHEMA) { return `schema is ${JSON.stringify(v.schema)}, expected ${REPRO_IPC_SCHEMA}`; }
	if (typeof v.outcome !== 'string' || typeof v.detail !== 'string' || typeof v.variant !== 'string') { return 'missing outcome/detail/variant'; }
	if (!Array.isArray(v.ranks) || !isObj(v.mpi) || !isObj(v.topology)) { return 'missing ranks/mpi/topology'; }
	if (v.memory !== 'device' && v.memory !== 'host') { return 'memory is neither device nor host'; }
	for (const r of v.ranks) {
		if (!isObj(r) || typeof r.rank !== 'number' || typeof r.status !== 'string') { return 'a rank record lacks rank/status'; }
	}
	return v as unknown as ReproIpcDocument;
}

/** Check the shape of an engine fallback document; returns it typed, or a reason. */
export function validateFallbackDocument(v: unknown): ReproFallbackDocument | string {
	if (!isObj(v)) { return 'not a JSON object'; }
	if (v.schema !== REPRO_FALLBACK_SCHEMA) { return `schema is ${JSON.stringify(v.schema)}, expected ${REPRO_FALLBACK_SCHEMA}`; }
	if (!Array.isArray(v.results) || !isObj(v.mpi) || typeof v.outcome !== 'string') { return 'missing results/mpi/outcome'; }
	for (const r of v.results) {
		if (!isObj(r) || typeof r.mode !== 'string' || typeof r.size_bytes !== 'number' || !Array.isArray(r.memory) || !Array.isArray(r.seconds)) {
			return 'a result lacks mode/size_bytes/seconds/memory';
		}
	}
	return v as unknown as ReproFallbackDocument;
}
