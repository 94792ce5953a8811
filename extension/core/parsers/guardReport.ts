/**
 * Typed parse and validation of one rank's guard report (schema gpumpi-guard-rank/1, written by
 * native/guard/guardReport.cc; contract in docs/guard.md#report). Pure: text in, a report or the problem out. A damaged
 * file is a value ({ ok: false, error } naming the field), never an exception: the merge turns it into a finding.
 */

/** Schema id of a per-rank guard report. */
export const GUARD_RANK_SCHEMA = 'gpumpi-guard-rank/1';
/** Largest report file read (a report of a few hundred peers is a few hundred KiB). */
export const MAX_GUARD_REPORT_BYTES = 16 * 1024 * 1024;

/** Buffer classes the guard tells apart. */
export const BUFFER_CLASSES = ['host', 'pinned-host', 'device', 'managed', 'pool', 'vmm', 'ipc-import'] as const;
export type BufferClass = (typeof BUFFER_CLASSES)[number];
export type BufferCounts = Record<BufferClass, number>;

/** How the guard saw a peer reached (libgpumpi's discovery). */
export const GUARD_PATHS = ['same-gpu', 'p2p', 'host-staged', 'network', 'host-only', 'unknown'] as const;
export type GuardPath = (typeof GUARD_PATHS)[number];

/** Danger kinds (docs/guard.md#dangers); an unknown kind is kept as text so a newer guard's report still reads. */
export type DangerKind = 'ipc-import-ucx-cuda-ipc' | 'device-buffer-mpi-not-cuda-aware' | 'pool-or-vmm-legacy-ipc' | 'huge-device-to-host-staged-peer' | 'ucx-memtype-cache-miss' | string;

export interface GuardCall { name: string; count: number; bytes: number; timeInMpiNs: number | null }
export interface GuardPeer {
	peer: number; sendCalls: number; recvCalls: number; sentBytes: number; recvBytes: number; largestMessage: number;
	bufferClasses: BufferCounts; path: GuardPath;
}
export interface GuardCollective { name: string; count: number; bytes: number; bufferClasses: BufferCounts }
export interface GuardSite { address: string | null; symbol: string | null; object: string | null; offset: string | null }
export interface GuardDanger {
	kind: DangerKind; call: string; peer: number | null; count: number; bytes: number; firstSite: GuardSite | null;
	detail: string; action: 'none' | 'warned' | 'bounced' | 'staged' | 'told-ucx' | string;
}
export interface GuardUnsupported { call: string; count: number; note: string }
/** One peer's staged messages under GPUMPI_GUARD_STAGE (stageDetail.peers). */
export interface GuardStagePeer { peer: number; sentMessages: number; sentBytes: number; recvMessages: number; recvBytes: number }
/** What STAGE did on this rank (report field stageDetail, written once the ranks agreed; docs/guard.md#stage-bounded-host-memory-without-a-code-change). */
export interface GuardStageDetail {
	chunk: number; buffers: number;
	/** Host staging libgpumpi holds (gpumpi_staging_bytes). */
	stagingBytes: number;
	/** Why STAGE turned itself off after agreeing (MPI_THREAD_MULTIPLE, libgpumpi setup), else null. */
	off: string | null;
	stagedPeers: number[];
	peers: GuardStagePeer[];
	/** Device messages to staged peers that went through MPI unchanged, per reason (send-mode, persistent, non-contiguous). */
	refused: Record<string, number>;
}

/** One rank's report, validated. */
export interface GuardRankReport {
	schema: typeof GUARD_RANK_SCHEMA;
	rank: number; size: number; host: string; pid: number;
	mode: string; stage: boolean; finalized: boolean;
	/** GPUMPI_GUARD_STAGE=1 on this rank / on every rank / how many ranks set it (absent in older reports: false, false, null). */
	stageAsked: boolean; stageAgreed: boolean; stageRanks: number | null;
	stageDetail: GuardStageDetail | null;
	/** Why this rank's guard turned itself off at MPI_Init (mode "off"; e.g. a mixed launch), else null. */
	off: string | null;
	/** Written at a danger, before the program ended (absent in reports of builds before 2026-12-03: false). */
	interim: boolean;
	mpi: { library: string | null; cudaAware: 'yes' | 'no' | 'unknown'; pml: string | null; ucxCudaIpc: boolean | null };
	cuda: { available: boolean; detail: string };
	wallS: number | null;
	calls: GuardCall[];
	peers: GuardPeer[];
	collectives: GuardCollective[];
	dangers: GuardDanger[];
	unsupported: GuardUnsupported[];
	overhead: { classifyQueries: number; cacheHits: number } | null;
}

export type ParsedGuardReport = { ok: true; report: GuardRankReport } | { ok: false; error: string };

class FieldError extends Error {}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function obj(v: unknown, field: string): Obj {
	if (!isObj(v)) { throw new FieldError(`${field} is not an object`); }
	return v;
}
function arr(v: unknown, field: string): unknown[] {
	if (!Array.isArray(v)) { throw new FieldError(`${field} is not an array`); }
	return v;
}
/** A whole number from 0 to 2^53 (sizes and counts are integers). */
function count(v: unknown, field: string): number {
	if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) { throw new FieldError(`${field} is not a whole number ≥ 0 (${JSON.stringify(v)})`); }
	return v;
}
function str(v: unknown, field: string, max = 4096): string {
	if (typeof v !== 'string') { throw new FieldError(`${field} is not a string`); }
	return v.length > max ? `${v.slice(0, max)}…` : v;
}
function strOrNull(v: unknown, field: string): string | null {
	return v === null || v === undefined ? null : str(v, field);
}
function bool(v: unknown, field: string): boolean {
	if (typeof v !== 'boolean') { throw new FieldError(`${field} is not true/false`); }
	return v;
}

function classes(v: unknown, field: string): BufferCounts {
	const o = obj(v, field);
	const out = {} as BufferCounts;
	for (const c of BUFFER_CLASSES) { out[c] = o[c] === undefined ? 0 : count(o[c], `${field}.${c}`); }
	return out;
}

function site(v: unknown, field: string): GuardSite | null {
	if (v === null || v === undefined) { return null; }
	const o = obj(v, field);
	return { address: strOrNull(o.address, `${field}.address`), symbol: strOrNull(o.symbol, `${field}.symbol`), object: strOrNull(o.object, `${field}.object`), offset: strOrNull(o.offset, `${field}.offset`) };
}

function stageDetail(v: unknown, size: number): GuardStageDetail | null {
	if (v === null || v === undefined) { return null; }
	const o = obj(v, 'stageDetail');
	const peerRank = (x: unknown, f: string): number => {
		const p = count(x, f);
		if (p >= size) { throw new FieldError(`${f} ${p} is not below size ${size}`); }
		return p;
	};
	const refused: Record<string, number> = {};
	for (const [k, n] of Object.entries(o.refused === undefined ? {} : obj(o.refused, 'stageDetail.refused')).slice(0, 32)) {
		refused[str(k, 'stageDetail.refused key', 32)] = count(n, `stageDetail.refused.${k.slice(0, 32)}`);
	}
	return {
		chunk: count(o.chunk, 'stageDetail.chunk'), buffers: count(o.buffers, 'stageDetail.buffers'),
		stagingBytes: count(o.stagingBytes, 'stageDetail.stagingBytes'), off: strOrNull(o.off, 'stageDetail.off'),
		stagedPeers: arr(o.stagedPeers, 'stageDetail.stagedPeers').map((p, i) => peerRank(p, `stageDetail.stagedPeers[${i}]`)),
		peers: arr(o.peers, 'stageDetail.peers').map((p, i) => {
			const q = obj(p, `stageDetail.peers[${i}]`);
			const f = (k: string): number => count(q[k], `stageDetail.peers[${i}].${k}`);
			return { peer: peerRank(q.peer, `stageDetail.peers[${i}].peer`), sentMessages: f('sentMessages'), sentBytes: f('sentBytes'), recvMessages: f('recvMessages'), recvBytes: f('recvBytes') };
		}),
		refused,
	};
}

/** Validate a report's stageDetail alone (the device captures keep only it). */
export function validateStageDetail(raw: unknown, size: number): { ok: true; detail: GuardStageDetail | null } | { ok: false; error: string } {
	try { return { ok: true, detail: stageDetail(raw, size) }; } catch (e) {
		if (e instanceof FieldError) { return { ok: false, error: e.message }; }
		throw e;
	}
}

function validate(raw: unknown): GuardRankReport {
	const r = obj(raw, 'report');
	if (r.schema !== GUARD_RANK_SCHEMA) { throw new FieldError(`schema is ${JSON.stringify(r.schema)}, expected ${GUARD_RANK_SCHEMA}`); }
	const size = count(r.size, 'size');
	if (size < 1) { throw new FieldError('size is 0'); }
	const rank = count(r.rank, 'rank');
	if (rank >= size) { throw new FieldError(`rank ${rank} is not below size ${size}`); }
	const mpi = obj(r.mpi, 'mpi');
	const cudaAware = mpi.cudaAware === 'yes' || mpi.cudaAware === 'no' ? mpi.cudaAware : 'unknown';
	const cuda = obj(r.cuda, 'cuda');
	const peerRank = (v: unknown, f: string): number => {
		const p = count(v, f);
		if (p >= size) { throw new FieldError(`${f} ${p} is not below size ${size}`); }
		return p;
	};
	const ov = r.overhead === null || r.overhead === undefined ? null : obj(r.overhead, 'overhead');
	return {
		schema: GUARD_RANK_SCHEMA,
		rank, size,
		host: str(r.host, 'host', 256),
		pid: count(r.pid, 'pid'),
		mode: str(r.mode, 'mode', 32),
		stage: bool(r.stage, 'stage'),
		stageAsked: r.stageAsked === true, stageAgreed: r.stageAgreed === true,
		stageRanks: r.stageRanks === undefined || r.stageRanks === null ? null : count(r.stageRanks, 'stageRanks'),
		stageDetail: stageDetail(r.stageDetail, size),
		off: strOrNull(r.off, 'off'),
		finalized: bool(r.finalized, 'finalized'),
		interim: r.interim === true,
		mpi: { library: strOrNull(mpi.library, 'mpi.library'), cudaAware, pml: strOrNull(mpi.pml, 'mpi.pml'), ucxCudaIpc: typeof mpi.ucxCudaIpc === 'boolean' ? mpi.ucxCudaIpc : null },
		cuda: { available: bool(cuda.available, 'cuda.available'), detail: typeof cuda.detail === 'string' ? str(cuda.detail, 'cuda.detail') : '' },
		wallS: typeof r.wallS === 'number' && Number.isFinite(r.wallS) && r.wallS >= 0 ? r.wallS : null,
		calls: arr(r.calls, 'calls').map((c, i) => {
			const o = obj(c, `calls[${i}]`);
			return { name: str(o.name, `calls[${i}].name`, 64), count: count(o.count, `calls[${i}].count`), bytes: count(o.bytes, `calls[${i}].bytes`), timeInMpiNs: o.timeInMpiNs === null ? null : count(o.timeInMpiNs, `calls[${i}].timeInMpiNs`) };
		}),
		peers: arr(r.peers, 'peers').map((p, i) => {
			const o = obj(p, `peers[${i}]`);
			const f = (k: string): number => count(o[k], `peers[${i}].${k}`);
			const path = (GUARD_PATHS as readonly string[]).includes(o.path as string) ? o.path as GuardPath : 'unknown';
			return { peer: peerRank(o.peer, `peers[${i}].peer`), sendCalls: f('sendCalls'), recvCalls: f('recvCalls'), sentBytes: f('sentBytes'), recvBytes: f('recvBytes'), largestMessage: f('largestMessage'), bufferClasses: classes(o.bufferClasses, `peers[${i}].bufferClasses`), path };
		}),
		collectives: arr(r.collectives, 'collectives').map((c, i) => {
			const o = obj(c, `collectives[${i}]`);
			return { name: str(o.name, `collectives[${i}].name`, 64), count: count(o.count, `collectives[${i}].count`), bytes: count(o.bytes, `collectives[${i}].bytes`), bufferClasses: classes(o.bufferClasses, `collectives[${i}].bufferClasses`) };
		}),
		dangers: arr(r.dangers, 'dangers').map((d, i) => {
			const o = obj(d, `dangers[${i}]`);
			return {
				kind: str(o.kind, `dangers[${i}].kind`, 64), call: str(o.call, `dangers[${i}].call`, 64),
				peer: o.peer === null || o.peer === undefined ? null : peerRank(o.peer, `dangers[${i}].peer`),
				count: count(o.count, `dangers[${i}].count`), bytes: count(o.bytes, `dangers[${i}].bytes`),
				firstSite: site(o.firstSite, `dangers[${i}].firstSite`),
				detail: typeof o.detail === 'string' ? str(o.detail, `dangers[${i}].detail`) : '',
				action: typeof o.action === 'string' ? str(o.action, `dangers[${i}].action`, 32) : 'none',
			};
		}),
		unsupported: arr(r.unsupported ?? [], 'unsupported').map((u, i) => {
			const o = obj(u, `unsupported[${i}]`);
			return { call: str(o.call, `unsupported[${i}].call`, 64), count: count(o.count, `unsupported[${i}].count`), note: typeof o.note === 'string' ? str(o.note, `unsupported[${i}].note`) : '' };
		}),
		overhead: ov ? { classifyQueries: count(ov.classifyQueries, 'overhead.classifyQueries'), cacheHits: count(ov.cacheHits, 'overhead.cacheHits') } : null,
	};
}

/** Validate an already parsed value. */
export function validateGuardReport(raw: unknown): ParsedGuardReport {
	try { return { ok: true, report: validate(raw) }; } catch (e) {
		if (e instanceof FieldError) { return { ok: false, error: e.message }; }
		throw e;
	}
}

/** Parse one report file's text ("not JSON: …" for a damaged one). */
export function parseGuardReport(text: string): ParsedGuardReport {
	if (text.trim() === '') { return { ok: false, error: 'empty file' }; }
	let raw: unknown;
	try { raw = JSON.parse(text); } catch (e) { return { ok: false, error: `not JSON: ${e instanceof Error ? e.message : String(e)}` }; }
	return validateGuardReport(raw);
}

/** "main+0x1a2b in app" style text of a call site (object base name; offset from the object when no symbol). */
export function siteText(s: GuardSite | null): string {
	if (!s) { return 'unknown call site'; }
	const object = s.object ? s.object.split('/').pop() ?? s.object : null;
	if (s.symbol) { return `${object ? `${object} ` : ''}${s.symbol}${s.offset ? `+${s.offset}` : ''}`; }
	if (object) { return `${object}+${s.offset ?? '?'}${s.address ? ` (${s.address})` : ''}`; }
	return s.address ?? 'unknown call site';
}
