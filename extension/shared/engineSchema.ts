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
