/**
 * Readers for the JSON the native parts print: `gpumpi inspect` (EngineInspect, schema gpumpi.inspect/1) and the
 * addon's ProbeResult. Every field is checked; anything missing or mistyped becomes an issue, never an exception.
 * The engine's stdout may carry other lines (UCX logs go to stdout): the JSON document is located inside it.
 */
import type { Evidence } from '../../shared/report';
import { ENGINE_INSPECT_SCHEMA, EngineCuda, EngineCudaDevice, EngineInspect, EngineIpcAllocation, EngineIpcMemory, EngineMps, EngineNamespaces, EngineRank } from '../../shared/engineSchema';
import type { NvmlProbe, ProbedLibrary, ProbeResult, ProbedLibraryKind } from '../../shared/addonTypes';
import type { EngineRankFacts, EnvEntry, ParseIssue } from '../facts';
import { JSON_BEGIN_MARKER, JSON_CHUNK_MARKER } from '../../shared/reproSchema';
import { extractJsonDocument } from './framedDocument';
import { evidence, firstLineEvidence, issue, looksBinary, splitLines } from './text';
import { judgeAffinity, readRankAffinity } from './rankAffinity';

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj { return typeof v === 'object' && v !== null && !Array.isArray(v); }
function str(o: Obj, k: string): string { const v = o[k]; return typeof v === 'string' ? v : ''; }
function num(o: Obj, k: string, d: number): number { const v = o[k]; return typeof v === 'number' && Number.isFinite(v) ? v : d; }
function bool(o: Obj, k: string): boolean { return o[k] === true; }
function triBool(o: Obj, k: string): boolean | null { const v = o[k]; return typeof v === 'boolean' ? v : null; }

/** Find and parse the first JSON object in a text that may have other lines around it. */
export function extractJson(text: string): { value: unknown; error: string } {
	const start = text.indexOf('{');
	const end = text.lastIndexOf('}');
	if (start < 0 || end <= start) { return { value: null, error: 'no JSON object found' }; }
	try {
		return { value: JSON.parse(text.slice(start, end + 1)) as unknown, error: '' };
	} catch (e) {
		return { value: null, error: e instanceof Error ? e.message : String(e) };
	}
}

function readDevice(v: unknown): EngineCudaDevice | null {
	if (!isObj(v)) { return null; }
	return {
		ordinal: num(v, 'ordinal', -1), name: str(v, 'name'), pci_bus_id: str(v, 'pci_bus_id'), uuid: str(v, 'uuid'),
		total_mem_bytes: num(v, 'total_mem_bytes', 0), compute_capability: str(v, 'compute_capability'),
		compute_mode: str(v, 'compute_mode'),
		gpu_direct_rdma_supported: typeof v.gpu_direct_rdma_supported === 'boolean' ? v.gpu_direct_rdma_supported : null,
		dma_buf_supported: typeof v.dma_buf_supported === 'boolean' ? v.dma_buf_supported : null,
	};
}

function readCuda(v: unknown): EngineCuda {
	const o: Obj = isObj(v) ? v : {};
	const devices = Array.isArray(o.devices) ? o.devices.map(readDevice).filter((d): d is EngineCudaDevice => d !== null) : [];
	const p2p = Array.isArray(o.p2p) ? o.p2p.map((row) => (Array.isArray(row) ? row.map((x) => x === true) : [])) : [];
	return {
		driver_loaded: bool(o, 'driver_loaded'), library: str(o, 'library'), error: str(o, 'error'),
		driver_version: num(o, 'driver_version', 0), init_result: num(o, 'init_result', -1),
		device_count: num(o, 'device_count', 0), devices, p2p, selected_device: num(o, 'selected_device', -1),
		initialised_before_mpi_init: bool(o, 'initialised_before_mpi_init'),
	};
}

function nullableStr(o: Obj, k: string): string | null { const v = o[k]; return typeof v === 'string' && v !== '' ? v : null; }

function readNamespaces(v: unknown): EngineNamespaces | null {
	if (!isObj(v)) { return null; }
	return { ipc: nullableStr(v, 'ipc'), pid: nullableStr(v, 'pid'), error: str(v, 'error') };
}

function readMps(v: unknown): EngineMps | null {
	if (!isObj(v)) { return null; }
	return {
		pipe_directory: str(v, 'pipe_directory'), pipe_directory_from: v.pipe_directory_from === 'CUDA_MPS_PIPE_DIRECTORY' ? 'CUDA_MPS_PIPE_DIRECTORY' : 'default',
		control_pipe_exists: bool(v, 'control_pipe_exists'), control_pipe_is_fifo: bool(v, 'control_pipe_is_fifo'),
	};
}

function nullableBool(o: Obj, k: string): boolean | null { return typeof o[k] === 'boolean' ? o[k] as boolean : null; }

function readIpcMemory(v: unknown): EngineIpcMemory | null {
	if (!isObj(v)) { return null; }
	const dev: Obj = isObj(v.device) ? v.device : {};
	const allocations = (Array.isArray(v.allocations) ? v.allocations : []).filter(isObj).map((a): EngineIpcAllocation => ({
		kind: str(a, 'kind'), calls: str(a, 'calls'), allocated: bool(a, 'allocated'), alloc_error: str(a, 'alloc_error'),
		legacy_ipc_capable: nullableBool(a, 'legacy_ipc_capable'),
		allowed_handle_types: typeof a.allowed_handle_types === 'string' ? a.allowed_handle_types : null,
		allowed_handle_types_mask: typeof a.allowed_handle_types_mask === 'number' ? a.allowed_handle_types_mask : null,
		from_pool: nullableBool(a, 'from_pool'), attributes_result: num(a, 'attributes_result', -1), ipc_get_mem_handle: str(a, 'ipc_get_mem_handle'),
	}));
	return {
		probed: bool(v, 'probed'), skipped: str(v, 'skipped'), bytes: num(v, 'bytes', 0),
		device: {
			memory_pools_supported: num(dev, 'memory_pools_supported', -1), vmm_supported: num(dev, 'vmm_supported', -1),
			posix_fd_supported: num(dev, 'posix_fd_supported', -1), mempool_supported_handle_types: num(dev, 'mempool_supported_handle_types', -1),
		},
		allocations,
	};
}

function readRank(v: unknown, i: number, issues: ParseIssue[], source: string): EngineRank | null {
	if (!isObj(v)) { issues.push(issue(source, 'warning', `engine ranks[${i}] is not an object.`)); return null; }
	const mpi: Obj = isObj(v.mpi) ? v.mpi : {};
	const ca: Obj = isObj(mpi.cuda_aware) ? mpi.cuda_aware : {};
	if (!isObj(v.mpi) || !isObj(v.cuda)) {
		issues.push(issue(source, 'warning', `engine ranks[${i}] lacks its "mpi" or "cuda" section.`));
	}
	const env: Record<string, string> = {};
	if (isObj(v.env)) { for (const [k, val] of Object.entries(v.env)) { if (typeof val === 'string') { env[k] = val; } } }
	const implRaw = str(mpi, 'implementation');
	return {
		rank: num(v, 'rank', i), local_rank: num(v, 'local_rank', -1), host: str(v, 'host'), pid: num(v, 'pid', 0),
		mpi: {
			library_version: str(mpi, 'library_version'), standard_version: str(mpi, 'standard_version'),
			implementation: implRaw === 'openmpi' || implRaw === 'mpich' ? implRaw : 'unknown',
			cuda_aware: { compile_time: triBool(ca, 'compile_time'), run_time: triBool(ca, 'run_time'), query: str(ca, 'query') },
		},
		cuda: readCuda(v.cuda), namespaces: readNamespaces(v.namespaces), mps: readMps(v.mps), ipc_memory: readIpcMemory(v.ipc_memory), affinity: readRankAffinity(v.affinity), env,
	};
}

/** A line of the framed document (begin, chunk or end line). */
const FRAME_LINE = /@@GPUMPI-JSON(-BEGIN|-END)?@@ (v2 id=|[0-9a-f]{8} )/;

/** Parse the engine's stdout into an EngineInspect document. */
export function parseEngineInspect(text: string, source = 'engine'): { doc: EngineInspect | null; issues: ParseIssue[] } {
	const issues: ParseIssue[] = [];
	// `gpumpi inspect --framed` (what the product runs) frames its document; a plain one is still read (older engines).
	// A framed document is checked chunk by chunk, so other ranks' binary garbage around it does not matter.
	const framed = text.includes(JSON_BEGIN_MARKER) || text.includes(JSON_CHUNK_MARKER);
	if (!framed && looksBinary(text)) {
		issues.push(issue(source, 'warning', 'engine output looks binary or corrupted.', firstLineEvidence(source, text)));
		return { doc: null, issues };
	}
	let value: unknown = null;
	let error = '';
	if (framed) {
		const ex = extractJsonDocument(text);
		if ('json' in ex) { value = ex.json; } else { error = ex.error; }
	} else {
		({ value, error } = extractJson(text));
	}
	if (!isObj(value)) {
		issues.push(issue(source, 'warning', `engine output is not a JSON document (${error || 'not an object'}).`, firstLineEvidence(source, text)));
		return { doc: null, issues };
	}
	if (value.schema !== ENGINE_INSPECT_SCHEMA) {
		issues.push(issue(source, 'warning', `engine JSON has schema ${JSON.stringify(value.schema ?? null)}, expected ${ENGINE_INSPECT_SCHEMA}; read as far as possible.`));
	}
	const ranksRaw = Array.isArray(value.ranks) ? value.ranks : [];
	if (ranksRaw.length === 0) { issues.push(issue(source, 'warning', 'engine JSON has no ranks.')); }
	const ranks = ranksRaw.map((r, i) => readRank(r, i, issues, source)).filter((r): r is EngineRank => r !== null);
	const doc: EngineInspect = {
		schema: ENGINE_INSPECT_SCHEMA, engine_version: str(value, 'engine_version'),
		world_size: num(value, 'world_size', ranks.length), ranks,
	};
	// Lines that are not part of the JSON (UCX/Open MPI messages on stdout) are worth showing, but are not errors.
	const extra = framed
		? splitLines(text).filter((l) => l.text.trim() !== '' && !FRAME_LINE.test(l.text))
		: splitLines(text.slice(0, Math.max(0, text.indexOf('{')))).filter((l) => l.text.trim() !== '');
	if (extra.length > 0) {
		issues.push(issue(source, 'info', `engine stdout had ${extra.length} line(s) besides its JSON (launcher or UCX messages).`,
			extra.slice(0, 3).map((l) => evidence(source, l.text, l.lineNo))));
	}
	return { doc, issues };
}

function rankAffinityFacts(r: EngineRank, index: number, source: string): EngineRankFacts['affinity'] {
	if (!r.affinity) { return null; }
	const judgement = judgeAffinity(r.rank, r.host, r.affinity);
	return { value: r.affinity, judgement, evidence: judgement.lines.map((l) => evidence(source, `ranks[${index}].${l}`)) };
}

/** Flatten one engine rank for rules, with evidence lines naming the JSON field. */
export function engineRankFacts(r: EngineRank, index: number, source = 'engine'): EngineRankFacts {
	const at = (path: string, v: unknown): Evidence => evidence(source, `ranks[${index}].${path}: ${JSON.stringify(v)}`);
	const env: EnvEntry[] = Object.entries(r.env).map(([k, v]) => ({ name: k, value: v, evidence: at(`env.${k}`, v) }));
	return {
		rank: r.rank, localRank: r.local_rank, host: r.host,
		implementation: { value: r.mpi.implementation, evidence: at('mpi.implementation', r.mpi.implementation) },
		libraryVersion: { value: r.mpi.library_version, evidence: at('mpi.library_version', r.mpi.library_version.split('\n')[0]) },
		compileTime: { value: r.mpi.cuda_aware.compile_time, evidence: at('mpi.cuda_aware.compile_time', r.mpi.cuda_aware.compile_time) },
		runTime: { value: r.mpi.cuda_aware.run_time, evidence: at('mpi.cuda_aware.run_time', r.mpi.cuda_aware.run_time) },
		query: r.mpi.cuda_aware.query,
		driverLoaded: { value: r.cuda.driver_loaded, evidence: at('cuda.driver_loaded', r.cuda.driver_loaded) },
		cudaError: r.cuda.error,
		deviceCount: { value: r.cuda.device_count, evidence: at('cuda.device_count', r.cuda.device_count) },
		driverVersion: r.cuda.driver_version,
		selectedDevice: r.cuda.selected_device,
		initialisedBeforeMpiInit: { value: r.cuda.initialised_before_mpi_init, evidence: at('cuda.initialised_before_mpi_init', r.cuda.initialised_before_mpi_init) },
		ipcNamespace: r.namespaces ? { value: r.namespaces.ipc, evidence: at('namespaces.ipc', r.namespaces.ipc) } : null,
		pidNamespace: r.namespaces ? { value: r.namespaces.pid, evidence: at('namespaces.pid', r.namespaces.pid) } : null,
		mpsControlPipe: r.mps ? { value: r.mps.control_pipe_exists, evidence: at('mps.control_pipe_exists', r.mps.control_pipe_exists), directory: r.mps.pipe_directory } : null,
		devices: r.cuda.devices.map((d, j) => ({
			uuid: d.uuid, pciBusId: d.pci_bus_id, computeMode: d.compute_mode, gpuDirectRdma: d.gpu_direct_rdma_supported, dmaBuf: d.dma_buf_supported,
			evidence: at(`cuda.devices[${j}]`, { uuid: d.uuid, pci_bus_id: d.pci_bus_id, compute_mode: d.compute_mode, ...(d.dma_buf_supported !== null || d.gpu_direct_rdma_supported !== null ? { gpu_direct_rdma_supported: d.gpu_direct_rdma_supported, dma_buf_supported: d.dma_buf_supported } : {}) }),
		})),
		p2p: r.cuda.p2p,
		ipcMemory: r.ipc_memory?.probed ? r.ipc_memory.allocations.map((a, j) => ({
			kind: a.kind, calls: a.calls, allocated: a.allocated, legacyIpcCapable: a.legacy_ipc_capable, allowedHandleTypes: a.allowed_handle_types,
			ipcGetMemHandle: a.ipc_get_mem_handle,
			evidence: at(`ipc_memory.allocations[${j}]`, { kind: a.kind, legacy_ipc_capable: a.legacy_ipc_capable, allowed_handle_types: a.allowed_handle_types, ipc_get_mem_handle: a.ipc_get_mem_handle }),
		})) : null,
		affinity: rankAffinityFacts(r, index, source),
		env,
	};
}

const KINDS: ProbedLibraryKind[] = ['mpi', 'ucx', 'cuda', 'nvml'];

/** Parse the addon's ProbeResult JSON. */
export function parseProbe(text: string, source = 'probe'): { probe: ProbeResult | null; issues: ParseIssue[] } {
	const { value, error } = extractJson(text);
	if (!isObj(value) || !Array.isArray(value.libraries)) {
		return { probe: null, issues: [issue(source, 'warning', `probe output is not a ProbeResult JSON (${error || 'no libraries array'}).`, firstLineEvidence(source, text))] };
	}
	const libraries: ProbedLibrary[] = value.libraries.filter(isObj).map((l) => {
		const k = str(l, 'kind');
		return {
			kind: (KINDS as string[]).includes(k) ? (k as ProbedLibraryKind) : 'mpi', soname: str(l, 'soname'), loaded: bool(l, 'loaded'),
			path: str(l, 'path'), version: str(l, 'version'), error: str(l, 'error'),
		};
	});
	let nvml: NvmlProbe | null = null;
	if (isObj(value.nvml)) {
		const n = value.nvml;
		nvml = {
			error: str(n, 'error'), driver_version: str(n, 'driver_version'), cuda_driver_version: num(n, 'cuda_driver_version', 0),
			devices: (Array.isArray(n.devices) ? n.devices.filter(isObj) : []).map((d) => ({
				index: num(d, 'index', 0), name: str(d, 'name'), uuid: str(d, 'uuid'), pci_bus_id: str(d, 'pci_bus_id'),
				nvlinks: (Array.isArray(d.nvlinks) ? d.nvlinks.filter(isObj) : []).map((k) => ({ link: num(k, 'link', 0), active: bool(k, 'active'), remote_pci_bus_id: str(k, 'remote_pci_bus_id') })),
			})),
		};
	}
	return { probe: { libraries, nvml, elapsed_ms: num(value, 'elapsed_ms', 0) }, issues: [] };
}
