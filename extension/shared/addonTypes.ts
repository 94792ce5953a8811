/**
 * The typed surface of the native addon (native/addon, built by cmake-js into gpumpi_addon.node).
 * The addon never throws a C++ exception across the boundary: failures come back as rejected promises
 * (Error with a message) or as `error` fields in the result.
 */

/** Which library family a probe looked for. */
export type ProbedLibraryKind = 'mpi' | 'ucx' | 'cuda' | 'nvml';

/** One library the addon tried to dlopen. */
export interface ProbedLibrary {
	kind: ProbedLibraryKind;
	/** The soname asked for, e.g. "libmpi.so.40". */
	soname: string;
	loaded: boolean;
	/** Absolute path the dynamic loader resolved (dladdr), "" if not loaded. */
	path: string;
	/** Version string the library reported about itself ("" if it has no such call or failed). */
	version: string;
	/** dlerror() or call failure text, "" when fine. */
	error: string;
}

/** One NVLink of one GPU as NVML reports it. */
export interface NvmlLink {
	link: number;
	active: boolean;
	/** PCI bus id of the remote end, "" if unknown. */
	remote_pci_bus_id: string;
}

/** One GPU as NVML reports it. */
export interface NvmlDevice {
	index: number;
	name: string;
	uuid: string;
	pci_bus_id: string;
	/** NVLinks whose state could be read (empty on PCIe-only GPUs). */
	nvlinks: NvmlLink[];
}

/** NVML section of the probe; present only when libnvidia-ml.so.1 loaded. */
export interface NvmlProbe {
	/** nvmlInit_v2 result text ("" = success). */
	error: string;
	driver_version: string;
	cuda_driver_version: number;
	devices: NvmlDevice[];
}

/** Result of `probe()`. */
export interface ProbeResult {
	/** Every library tried, in order, loaded or not. */
	libraries: ProbedLibrary[];
	nvml: NvmlProbe | null;
	/** Wall time the probe took, milliseconds. */
	elapsed_ms: number;
}

/** The addon module as loaded by `require()`. */
export interface NativeAddon {
	/** Probe the libraries of this host without spawning or MPI_Init. Runs on a worker thread. */
	probe(): Promise<ProbeResult>;
	/** Version of the addon build, e.g. "0.1.0". */
	version(): string;
}
