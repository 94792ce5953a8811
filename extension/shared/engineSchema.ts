/**
 * The JSON that `gpumpi inspect` prints (schema "gpumpi.inspect/1").
 * This file is the one TypeScript home of that contract; native/engine writes it, `parseEngineInspect` reads it.
 * Field names are snake_case because they are produced by C++ and documented in docs/engine-schema.md.
 */

export const ENGINE_INSPECT_SCHEMA = 'gpumpi.inspect/1';

/** One GPU as the CUDA driver API reports it. */
export interface EngineCudaDevice {
	ordinal: number;
	name: string;
	/** e.g. "0000:19:00.0" from cuDeviceGetPCIBusId. */
	pci_bus_id: string;
	/** "GPU-xxxxxxxx-..." from cuDeviceGetUuid, or "" if unavailable. */
	uuid: string;
	total_mem_bytes: number;
	/** "9.0" */
	compute_capability: string;
	/** CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: "default", "exclusive_process", "prohibited", "exclusive_thread"; "" when unknown or from an older engine. */
	compute_mode: string;
	/** CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED; null when the driver did not answer or an older engine. */
	gpu_direct_rdma_supported: boolean | null;
	/** CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (a NIC can register this GPU's memory through dma_buf); null: unknown. */
	dma_buf_supported: boolean | null;
}

/** What the CUDA driver API (loaded with dlopen at run time) reported in one rank. */
export interface EngineCuda {
	/** dlopen("libcuda.so.1") succeeded. */
	driver_loaded: boolean;
	/** Path dlopen resolved (from dladdr), or the error dlerror() gave. */
	library: string;
	/** dlerror() text or CUDA error name/string when something failed, else "". */
	error: string;
	/** cuDriverGetVersion, e.g. 13000; 0 when unknown. */
	driver_version: number;
	/** cuInit's CUresult (0 = success); -1 when the driver was not loaded. */
	init_result: number;
	device_count: number;
	devices: EngineCudaDevice[];
	/** p2p[i][j]: cuDeviceCanAccessPeer(i, j); diagonal is true. Empty when < 2 devices. */
	p2p: boolean[][];
	/** The device this rank made current before MPI_Init (local rank modulo device count), or -1. */
	selected_device: number;
	/** True when a context was current on selected_device before MPI_Init was called. */
	initialised_before_mpi_init: boolean;
}

/** CUDA awareness as the MPI library itself states it. null = that query does not exist in this MPI. */
export interface EngineCudaAwareness {
	/** Open MPI: MPIX_CUDA_AWARE_SUPPORT from mpi-ext.h; MPICH: null (no compile-time macro). */
	compile_time: boolean | null;
	/** Open MPI: MPIX_Query_cuda_support(); MPICH: MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA). */
	run_time: boolean | null;
	/** Which call produced run_time, e.g. "MPIX_Query_cuda_support", or "" when none. */
	query: string;
}

/** What one rank saw of its MPI. */
export interface EngineMpi {
	/** MPI_Get_library_version, trailing NULs and whitespace removed (may be multi-line for MPICH). */
	library_version: string;
	/** MPI_Get_version */
	standard_version: string;
	/** From compile-time macros: "openmpi", "mpich" or "unknown". */
	implementation: 'openmpi' | 'mpich' | 'unknown';
	cuda_aware: EngineCudaAwareness;
}

/** The rank's Linux namespaces (readlink /proc/self/ns/{ipc,pid}); null when unreadable or from an older engine. */
export interface EngineNamespaces {
	/** e.g. "ipc:[4026531839]" */
	ipc: string | null;
	/** e.g. "pid:[4026531836]" */
	pid: string | null;
	error: string;
}

/** Where this rank's CUDA MPS client would find the control daemon. */
export interface EngineMps {
	/** CUDA_MPS_PIPE_DIRECTORY, or the default /tmp/nvidia-mps. */
	pipe_directory: string;
	pipe_directory_from: 'CUDA_MPS_PIPE_DIRECTORY' | 'default';
	/** `<pipe_directory>/control` exists (the daemon's control FIFO). */
	control_pipe_exists: boolean;
	control_pipe_is_fifo: boolean;
}

/** One buffer of the memory IPC capability probe (native/engine/inspectIpcMem.hh). */
export interface EngineIpcAllocation {
	/** cuMemAlloc | pool-default | pool | pool-posix-fd | vmm | vmm-posix-fd */
	kind: string;
	/** The calls that allocated it, for people. */
	calls: string;
	allocated: boolean;
	/** "call: CUDA_ERROR_X: text" when not allocated. */
	alloc_error: string;
	/** CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE; null when not allocated or not queried. */
	legacy_ipc_capable: boolean | null;
	/** CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES as names: "none", "posix_fd", "posix_fd,fabric", …; null as above. */
	allowed_handle_types: string | null;
	allowed_handle_types_mask: number | null;
	/** CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE is non-null. */
	from_pool: boolean | null;
	/** cuPointerGetAttributes' CUresult (-1: not called). */
	attributes_result: number;
	/** "ok", "not tried", or the error of cuIpcGetMemHandle ("CUDA_ERROR_INVALID_VALUE: invalid argument"). */
	ipc_get_mem_handle: string;
}

/** The rank's memory IPC capability probe: a small buffer allocated each way, and what the driver says of each. */
export interface EngineIpcMemory {
	probed: boolean;
	/** Why not probed ("no CUDA device selected in this rank", "GPUMPI_INSPECT_IPC_MEM=0"). */
	skipped: string;
	bytes: number;
	/** Device attributes (-1: unknown). */
	device: { memory_pools_supported: number; vmm_supported: number; posix_fd_supported: number; mempool_supported_handle_types: number };
	allocations: EngineIpcAllocation[];
}

/** One NUMA node of a rank's host: /sys/devices/system/node/node<N>/cpulist. */
export interface RankNumaNode { node: number; cpulist: string }

/** The PCI device of the GPU a rank uses, as sysfs describes it. */
export interface RankGpuLocality {
	/** Normalized ("0000:18:00.0") from the CUDA driver's cuDeviceGetPCIBusId. */
	pci_bus_id: string;
	/** The directory read: <sysfs_root>/sys/bus/pci/devices/<pci_bus_id>. */
	sysfs_path: string;
	/** Its numa_node file; -1 when the kernel reports none (one-node machines, many VMs) or it is unreadable. */
	numa_node: number;
	/** Its local_cpulist file (the CPUs local to the device, "0-15,32-47"); "" when unreadable. */
	local_cpulist: string;
}

/**
 * Where a rank may run against where its GPU sits (native/engine/rankAffinity.hh; `gpumpi map` and `gpumpi inspect`
 * per rank; extension/core/parsers/rankAffinity.ts judges it). null / absent in documents from older engines.
 */
export interface RankAffinity {
	/** The rank's affinity mask (sched_getaffinity) after the launcher's binding, "0-3,8". */
	cpu_list: string;
	/** The NUMA nodes holding at least one CPU of cpu_list. */
	cpu_numa_nodes: number[];
	/** Every NUMA node of the host with its CPUs (empty when the kernel exposes none). */
	numa_nodes: RankNumaNode[];
	/** The GPU's PCI device; null when the rank has no GPU. */
	gpu: RankGpuLocality | null;
	/** TESTS ONLY: the fake sysfs tree the engine read (GPUMPI_TEST_SYSFS_ROOT); "" on every real run. */
	sysfs_root: string;
	/** What could not be read, "" when nothing is missing. */
	error: string;
}

/** One rank's record. */
export interface EngineRank {
	rank: number;
	/** OMPI_COMM_WORLD_LOCAL_RANK / MPI_LOCALRANKID / shared-memory split rank. */
	local_rank: number;
	host: string;
	pid: number;
	mpi: EngineMpi;
	cuda: EngineCuda;
	/** null in documents from engines older than these fields. */
	namespaces: EngineNamespaces | null;
	mps: EngineMps | null;
	/** null in documents from engines before 2026-12-03 (docs/engine-schema.md "ipc_memory"). */
	ipc_memory: EngineIpcMemory | null;
	/** The rank's CPU binding against its GPU's NUMA node; null from engines before 2026-12-04. */
	affinity: RankAffinity | null;
	/**
	 * The rank's own environment, filtered to names starting with OMPI_MCA_, PMIX_MCA_, OMPI_COMM_WORLD_, UCX_,
	 * CUDA_, MPICH_, MPIR_CVAR_, I_MPI_, MV2_, FI_, SLURM_ (what the launcher really handed the rank, which can
	 * differ from the login shell: see shared/knowledge/observed.md B).
	 */
	env: Record<string, string>;
}

/** The whole document printed by rank 0 on stdout. */
export interface EngineInspect {
	schema: typeof ENGINE_INSPECT_SCHEMA;
	engine_version: string;
	world_size: number;
	ranks: EngineRank[];
}
