/**
 * The typed facts model: everything the parsers extracted from one host's raw tool outputs.
 * Every fact a rule may quote carries the line it came from (`Located`), so a finding can show its evidence.
 * Plain data only (JSON-serialisable): the report stores it as `facts` and offline bundles re-create it.
 */
import type { Evidence, Severity } from '../shared/report';
import type { EngineInspect, RankAffinity } from '../shared/engineSchema';
import type { ProbedLibrary, NvmlProbe } from '../shared/addonTypes';

/** A value together with the quoted line that shows it. */
export interface Located<T> { value: T; evidence: Evidence }

/** Which MPI family a library or launcher belongs to. */
export type MpiImplementation = 'openmpi' | 'mpich' | 'mvapich' | 'intel' | 'cray' | 'unknown';

/** Something a parser could not read (malformed, truncated, binary, failed run). Turned into a finding. */
export interface ParseIssue {
	/** RawOutput id. */
	source: string;
	severity: Severity;
	message: string;
	evidence: Evidence[];
}

/** One MCA component as `ompi_info` lists it. */
export interface McaComponent {
	framework: string;
	name: string;
	/** Component version, e.g. "5.0.7"; "" when the line did not say. */
	version: string;
	evidence: Evidence;
}

/** One MCA parameter from `ompi_info --parsable --all`. */
export interface McaParam {
	name: string;
	framework: string;
	component: string;
	value: string;
	/** Value source as ompi_info prints it: "default", "file (/etc/openmpi/openmpi-mca-params.conf:69)", "environment"... */
	source: string;
	evidence: Evidence;
	sourceEvidence: Evidence | null;
}

/** One `name = value` line of an MCA parameter file, or one `OMPI_MCA_name=value` environment variable. */
export interface McaSetting {
	name: string;
	value: string;
	/** File path, "env", or "engine rank N env". */
	origin: string;
	evidence: Evidence;
}

/** One MCA parameter file that was read. */
export interface McaParamFile {
	path: string;
	settings: McaSetting[];
}

/** What `ompi_info` (parsable or plain) says about one Open MPI installation. */
export interface OpenMpiFacts {
	format: 'parsable' | 'plain';
	version: Located<string> | null;
	ident: Located<string> | null;
	prefix: Located<string> | null;
	/** Where Open MPI's own components live (`path:pkglibdir`), parsable format only. */
	pkglibdir: Located<string> | null;
	/** `*_built_with_cuda_support` value, or derived from the CUDA components of a plain listing (see basis). */
	builtWithCuda: Located<boolean> | null;
	builtWithCudaBasis: 'parameter' | 'components' | 'configure' | null;
	configureLine: Located<string> | null;
	/** `--with-cuda[=dir]` argument of the configure line (value = the argument). */
	configuredWithCuda: Located<string> | null;
	configuredWithUcx: Located<string> | null;
	/** `MPI extensions` / `options:mpi_ext` line. */
	mpiExtensions: Located<string> | null;
	components: McaComponent[];
	/** Parameters by name (parsable format only). */
	params: Record<string, McaParam>;
}

/** What `mpichversion` (or MPICH's library version string) says. */
export interface MpichFacts {
	version: Located<string> | null;
	device: Located<string> | null;
	configure: Located<string> | null;
	/** The configure line enables a GPU (CUDA) backend (`--with-cuda`, `--enable-gpu`), when known. */
	configuredWithCuda: Located<boolean> | null;
	/** "mpichversion" or "engine". */
	from: string;
}

/** MPI as a whole, from every source that mentions it. */
export interface MpiFacts {
	implementation: Located<MpiImplementation> | null;
	version: Located<string> | null;
	/** `mpirun --version` first line. */
	launcherVersion: Located<string> | null;
	launcherImplementation: MpiImplementation | null;
	openmpi: OpenMpiFacts | null;
	mpich: MpichFacts | null;
	paramFiles: McaParamFile[];
	/** `OMPI_MCA_*` variables of the collector's environment. */
	envParams: McaSetting[];
}

/** One UCX transport on one device from `ucx_info -d`. */
export interface UcxTransport { name: string; device: string; memoryDomain: string; evidence: Evidence }

/** UCX as `ucx_info -v/-b/-d` show it. */
export interface UcxFacts {
	version: Located<string> | null;
	configureFlags: Located<string> | null;
	/** From `--with-cuda` in the configure flags or `#define HAVE_CUDA 1` in -b. */
	builtWithCuda: Located<boolean> | null;
	builtWithGdrcopy: Located<boolean> | null;
	/** Built with thread support (`#define ENABLE_MT 1` in `ucx_info -b`, configure --enable-mt); null when -b was
	 *  not read. Absent in reports saved before 2026-12-07. */
	threadSupport?: Located<boolean> | null;
	/** Whether `ucx_info -d` was read at all (transports are meaningful only then). */
	devicesListed: boolean;
	memoryDomains: Located<string>[];
	transports: UcxTransport[];
	/** `ucx_info -c` (effective configuration, NAME=value), when collected. */
	config: Record<string, Located<string>>;
}

/** One GPU as nvidia-smi shows it. */
export interface SmiGpu {
	index: number;
	name: string;
	pciBusId: string;
	uuid: string;
	memoryMiB: number;
	evidence: Evidence;
	/** `<product_architecture>`, e.g. "Hopper". */
	architecture: Located<string> | null;
	/** `<compute_mode>`: "Default", "Exclusive_Process", "Prohibited". */
	computeMode: Located<string> | null;
	/** `<mig_mode><current_mig>`: "Enabled", "Disabled", "N/A". */
	migMode: Located<string> | null;
	/** `<pcie_gen><current_link_gen>`, e.g. "5". */
	pcieGen: Located<string> | null;
}

/** One row of `nvidia-smi topo -m`. */
export interface TopoRow {
	device: string;
	/** Connection to each column device, e.g. { GPU1: "NV18", NIC0: "PIX" }. */
	links: Record<string, string>;
	cpuAffinity: string;
	numaAffinity: string;
	evidence: Evidence;
}

/** GPU facts from nvidia-smi. */
export interface GpuFacts {
	driverVersion: Located<string> | null;
	cudaVersion: Located<string> | null;
	gpus: SmiGpu[];
	topology: TopoRow[];
	/** `nvidia_peermem` (GPUDirect RDMA) kernel module loaded; null when not checked. */
	peermemLoaded: Located<boolean> | null;
}

/** One loaded kernel module (from /proc/modules or /sys/module). */
export interface KernelModule { name: string; evidence: Evidence }

/** One port of one RDMA device under /sys/class/infiniband. */
export interface IbPort {
	device: string;
	port: string;
	/** As sysfs prints it, e.g. "4: ACTIVE". */
	state: string;
	active: boolean;
	/** "InfiniBand", "Ethernet" (RoCE) or "?". */
	linkLayer: string;
	rate: string;
	/** NUMA node of the device's PCI function; null when unknown (-1 or unreadable). */
	numaNode: number | null;
	pci: string;
	evidence: Evidence;
}

/** NUMA placement of one NVIDIA GPU from sysfs. */
export interface GpuNuma { pciBusId: string; numaNode: number | null; localCpus: string; evidence: Evidence }

/** Kernel/sysfs facts (sysCollect.ts); each list is null when it was not read. */
export interface SysFacts {
	modules: KernelModule[] | null;
	/** /sys/module/nvidia_peermem/version (or nv_peer_mem), when present. */
	peermemVersion: Located<string> | null;
	/** A GPU peer-memory client registered with the RDMA core (/sys/kernel/mm/memory_peers/<client>/version), when
	 *  present: value is "<client> <version>". Absent in reports saved before 2026-12-04. */
	peerMemoryClient?: Located<string> | null;
	ibPorts: IbPort[] | null;
	gpuNuma: GpuNuma[] | null;
}

/** One buffer of the engine's memory IPC capability probe (EngineIpcAllocation). */
export interface IpcMemoryProbe {
	kind: string;
	calls: string;
	allocated: boolean;
	legacyIpcCapable: boolean | null;
	allowedHandleTypes: string | null;
	/** "ok", "not tried", or cuIpcGetMemHandle's error. */
	ipcGetMemHandle: string;
	evidence: Evidence;
}

/** One engine rank, flattened for rules, with evidence lines pointing into the engine JSON. */
export interface EngineRankFacts {
	rank: number;
	localRank: number;
	host: string;
	implementation: Located<string>;
	libraryVersion: Located<string>;
	compileTime: Located<boolean | null>;
	runTime: Located<boolean | null>;
	query: string;
	driverLoaded: Located<boolean>;
	cudaError: string;
	deviceCount: Located<number>;
	driverVersion: number;
	selectedDevice: number;
	initialisedBeforeMpiInit: Located<boolean>;
	/** /proc/self/ns/ipc and /pid ids ("ipc:[4026531839]"); null when the engine predates the field, value null when unreadable. */
	ipcNamespace: Located<string | null> | null;
	pidNamespace: Located<string | null> | null;
	/** Whether the MPS control pipe exists where this rank would look (CUDA_MPS_PIPE_DIRECTORY or /tmp/nvidia-mps). */
	mpsControlPipe: (Located<boolean> & { directory: string }) | null;
	/** The devices CUDA showed this rank (after CUDA_VISIBLE_DEVICES). */
	/** gpuDirectRdma / dmaBuf: the CUDA device attributes (null: the driver did not answer, or an older engine). */
	devices: { uuid: string; pciBusId: string; computeMode: string; gpuDirectRdma: boolean | null; dmaBuf: boolean | null; evidence: Evidence }[];
	/** cuDeviceCanAccessPeer between the visible devices (empty with < 2). */
	p2p: boolean[][];
	/** The memory IPC capability probe, one entry per allocation kind; null when not probed or from an older engine. */
	ipcMemory: IpcMemoryProbe[] | null;
	/** The rank's CPU binding against its GPU's NUMA node, judged (core/parsers/rankAffinity.ts); null from older engines. */
	affinity: { value: RankAffinity; judgement: RankAffinityJudgement; evidence: Evidence[] } | null;
	/** The rank's environment (full variable names). */
	env: EnvEntry[];
}

/** What the engine (`gpumpi inspect` under mpirun) reported. */
export interface EngineFacts {
	document: EngineInspect | null;
	ranks: EngineRankFacts[];
	/** The argv the collector launched the engine with. */
	command: string[];
}

/** What the native probe reported. */
export interface ProbeFacts {
	libraries: ProbedLibrary[];
	nvml: NvmlProbe | null;
}

/** Who ran the collection. */
export interface IdentityFacts {
	uid: Located<number> | null;
	user: Located<string> | null;
	hostname: Located<string> | null;
}

/** One `NAME=value` line of an output. */
export interface EnvEntry { name: string; value: string; evidence: Evidence }

/** Message kinds recognised in tool/engine output. */
export type LogSignatureKind =
	| 'cuMemHostRegister-failed' | 'pmix-bad-prefix' | 'ucm-memtype-handler' | 'cuda-ipc-register-failed'
	| 'pml-none-opened' | 'pml-ucx-transport-mismatch' | 'cuCtxGetCurrent-failed' | 'gtl-not-linked'
	| 'run-as-root-refused' | 'not-enough-slots' | 'gpu-ib-different-socket' | 'direct-launch-without-pmi' | 'singleton-start'
	| 'cuda-host-unregister-failed' | 'cuda-ipc-close-failed' | 'ompi-no-slurm-support' | 'ompi5-no-pmix'
	| 'cxil-map-write-error'
	| 'pml-ucx-no-thread-multiple';

/** One recognised message line. */
export interface LogSignature { kind: LogSignatureKind; evidence: Evidence }

/** Status of one raw output the analysis saw. */
export interface RawStatus { id: string; ok: boolean; exitCode: number | null; error: string }

/** The whole model. */
export interface Facts {
	hostLabel: string;
	raw: RawStatus[];
	mpi: MpiFacts;
	ucx: UcxFacts | null;
	gpu: GpuFacts;
	engine: EngineFacts | null;
	probe: ProbeFacts | null;
	sys: SysFacts;
	identity: IdentityFacts;
	env: EnvEntry[];
	/** `which` results: tool name → absolute path, value null when the tool was not found. */
	which: Record<string, Located<string | null>>;
	/** Known messages seen in stderr / engine output. */
	messages: LogSignature[];
	/** A program's link order (raw outputs readelf_d:<program> + readelf_s:<program>); empty when none was read. */
	programLinks: { program: string; order: LinkOrder }[];
	/** MPICH's control variables as `mpivars` listed them (raw output `mpivars`); null when it was not run. */
	mpichCvars: MpivarsListing | null;
	/** libfabric as its `fi_info` saw it (raw outputs fi_info_version, fi_info, fi_info_hmem); null when none was collected. */
	libfabric: LibfabricFacts | null;
	/** The program a guarded command runs, or `inspect --program` names (raw output `program`); null when none. */
	program: ProgramFacts | null;
	/** `ldd` of the program, or of mpi4py's MPI module (raw outputs `ldd:<object>`): the libraries the loader resolves. */
	programLibs: { object: string; libs: LddLibrary[] }[];
	/** The lines of the program's script that set allocator or mpi4py options (raw outputs `script:<path>`). */
	scripts: { path: string; lines: ScriptLine[] }[];
	/** The mpi4py probe (raw output `mpi4py`); null when it was not run or the interpreter was not found. */
	mpi4py: Mpi4pyFacts | null;
	/** Per guarded rank: the pml it ran with and the buffer classes it passed to MPI (raw `guard_ranks`); null outside the guard. */
	guardRanks: GuardRankFacts[] | null;
	issues: ParseIssue[];
}

export interface LinkOrder {
	/** DT_NEEDED sonames in order. */
	needed: { soname: string; evidence: Evidence }[];
	/** libmpich / libmpi (MPICH ABI) among them. */
	mpi: { soname: string; index: number; evidence: Evidence } | null;
	/** libcudart among them. */
	cudart: { soname: string; index: number; evidence: Evidence } | null;
	/** cudaFree defined in the program itself (static cudart), with its symbol line. */
	staticCudart: Evidence | null;
}

/** One listed control variable. */
export interface MpichCvar {
	name: string;
	/** The value as MPICH holds it (the default when the environment does not set it). */
	value: string;
	/** MPI datatype of the CVAR (MPI_INT, MPI_CHAR, …). */
	type: string;
	description: string;
	evidence: Evidence;
}
/** What one `mpivars` run said. */
export interface MpivarsListing {
	cvars: MpichCvar[];
	/** A CVAR whose environment value MPICH refused (MPI_Init aborted), with its line. */
	unparsable: { name: string; evidence: Evidence } | null;
}

/** One provider/domain pair as fi_info prints it. */
export interface FiInfoEntry { provider: string; fabric: string; domain: string; evidence: Located<string>['evidence'] }
/** What libfabric's core said about one GPU memory interface at start-up. */
export interface HmemIface {
	/** "FI_HMEM_CUDA", "FI_HMEM_ROCR", "FI_HMEM_ZE", … */
	iface: string;
	state: 'not supported' | 'failed';
	/** The error text of a failed initialisation (empty for "not supported"). */
	detail: string;
	evidence: Located<string>['evidence'];
}
/** How one fi_info run ended. */
export type FiInfoRun = 'ok' | 'no match' | 'timeout' | 'failed' | 'not installed' | 'unreadable';
/** Everything the three fi_info outputs said; null in Facts when none was collected. */
export interface LibfabricFacts {
	/** The "libfabric: X.Y.Z" line of fi_info --version. */
	version: Located<string> | null;
	/** The pairs plain fi_info listed; null when it did not run cleanly. */
	providers: FiInfoEntry[] | null;
	/** The pairs fi_info -c FI_HMEM listed (empty: none matched); null when it did not run cleanly. */
	hmemProviders: FiInfoEntry[] | null;
	/** How the FI_HMEM query ended, with the line or note that shows it. */
	hmemRun: { state: FiInfoRun; detail: string; seconds: number | null; evidence: Located<string>['evidence'] | null };
	/** Whether the FI_HMEM run's stderr carried libfabric's core log at all (FI_LOG_LEVEL=info took effect). */
	logSeen: boolean;
	/** GPU interfaces libfabric did not initialise (an interface that initialised prints neither line). */
	hmemIfaces: HmemIface[];
	/** hmem_cuda.c: the CUDA runtime (unversioned libcudart.so) could not be dlopen'ed. */
	cudaRuntimeMissing: Located<string> | null;
	/** hmem_cuda.c: "Number of CUDA devices detected: N". */
	cudaDevices: Located<number> | null;
	/** FI_ variables libfabric reported reading ("read string var mr_cache_monitor=userfaultfd"), by its own name. */
	settingsRead: { name: string; value: string; evidence: Located<string>['evidence'] }[];
}

/** One library of an `ldd` listing: soname (as the program or a library names it) and where it resolved. */
export interface LddLibrary { soname: string; path: string | null; evidence: Evidence }
/** What kind of program a command runs. */
export type ProgramKind = 'elf' | 'python' | 'julia' | 'other';
/** The program a command runs (raw `program`). */
export interface ProgramFacts {
	/** The program as resolved on the host (absolute where it could be resolved). */
	path: Located<string>;
	kind: ProgramKind;
	/** The script a Python / Julia interpreter runs, when the command names one. */
	script: Located<string> | null;
}
/** One kept script line, with its own line number as evidence. */
export interface ScriptLine { text: string; evidence: Evidence }
/** What the mpi4py probe printed (collect/mpi4pyProbe.ts). */
export interface Mpi4pyFacts {
	/** The interpreter that was asked. */
	python: string;
	/** mpi4py's version; null when it is not installed for that interpreter. */
	version: Located<string> | null;
	/** `mpi4py.rc.thread_level` / `mpi4py.rc.threads` as the package sets them before any program changes them. */
	rcThreadLevel: Located<string> | null;
	rcThreads: Located<string> | null;
	/** The MPI extension module's file (its `ldd` tells which MPI library it loads). */
	mpiModule: Located<string> | null;
	/** The first line of MPI_Get_library_version as this mpi4py's MPI reports it. */
	libraryVersion: Located<string> | null;
	/** `mpi4py.get_config()` (the mpicc it was built with). */
	config: Located<string> | null;
}
/** One guarded rank as the internal `guard_ranks` output summarises its report. */
export interface GuardRankFacts {
	rank: number;
	/** The pml the guard saw loaded (Open MPI) or "ucx" for MPICH's ch4:ucx; null when it could not tell. */
	pml: string | null;
	/** Buffers passed to MPI, by class (device, pool, vmm, managed, ipc-import, …), summed over peers and collectives. */
	buffers: Record<string, number>;
	evidence: Evidence;
}

/**
 * - `local`: every CPU the rank may use is local to its GPU;
 * - `remote`: none is: the rank is bound to another NUMA node than its GPU (the warning);
 * - `spans`: some are, some are not (bound to several nodes); `unbound`: it may run on every CPU of a multi-node host;
 * - `single_node`: the host has one NUMA node, nothing to choose; `unknown`: no GPU, or sysfs does not say.
 */
export type AffinityVerdict = 'local' | 'remote' | 'spans' | 'unbound' | 'single_node' | 'unknown';
/** One rank's placement, judged. */
export interface RankAffinityJudgement {
	rank: number;
	host: string;
	cpuList: string;
	/** NUMA nodes of the rank's CPUs (from the host's node cpulists; the engine's own list when those are missing). */
	cpuNodes: number[];
	gpuBusId: string | null;
	/** The GPU's NUMA node: sysfs numa_node, else the one node its local_cpulist falls in; null when unknown. */
	gpuNode: number | null;
	gpuLocalCpulist: string | null;
	/** Number of NUMA nodes of the host. */
	hostNodes: number;
	verdict: AffinityVerdict;
	/** One sentence for people. */
	text: string;
	/** The fields it was judged from, as `affinity.<field>: <value>` lines (the finding's evidence). */
	lines: string[];
	/** GPUMPI_TEST_SYSFS_ROOT was in effect (a test document, not a real machine). */
	fakeSysfs: boolean;
}

/** A Facts with nothing known yet. */
export function emptyFacts(hostLabel: string): Facts {
	return {
		hostLabel,
		raw: [],
		mpi: {
			implementation: null, version: null, launcherVersion: null, launcherImplementation: null,
			openmpi: null, mpich: null, paramFiles: [], envParams: [],
		},
		ucx: null,
		gpu: { driverVersion: null, cudaVersion: null, gpus: [], topology: [], peermemLoaded: null },
		engine: null,
		probe: null,
		sys: { modules: null, peermemVersion: null, ibPorts: null, gpuNuma: null },
		identity: { uid: null, user: null, hostname: null },
		env: [],
		which: {},
		messages: [],
		programLinks: [],
		mpichCvars: null,
		libfabric: null,
		program: null,
		programLibs: [],
		scripts: [],
		mpi4py: null,
		guardRanks: null,
		issues: [],
	};
}

/** Shorthand for building a Located value. */
export function located<T>(value: T, evidence: Evidence): Located<T> {
	return { value, evidence };
}

/** Look up an environment variable of the collector's environment. */
export function envValue(facts: Facts, name: string): EnvEntry | undefined {
	return facts.env.find((e) => e.name === name);
}
