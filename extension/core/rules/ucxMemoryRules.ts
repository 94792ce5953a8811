/**
 * UCX and the memory it is handed (issue 35): GPU buffers UCX's memory-type cache never hears of (a statically linked
 * CUDA runtime with UCX's CUDA hooks in relocation-table mode), VMM buffers mapped from several allocations that
 * cuda_ipc exports as one (openucx/ucx PR 11283: only the first chunk's memory is reached), and cuda_copy's dmabuf
 * export (UCX_CUDA_COPY_DMABUF, rapidsai/ucxx#749) beside the GPUDirect RDMA path each rank has: dmabuf or the
 * nvidia-peermem module. Version ranges are read from UCX's sources at the release tags cited.
 */
import type { Evidence, Finding } from '../../shared/report';
import type { Facts } from '../facts';
import { mpiFlavorOfSoname } from '../parsers/linkOrder';
import { componentsOf } from '../parsers/ompiInfo';
import { versionParts } from '../parsers/text';
import { compareVersions, envSettings, ucxTransports, visibleGpus } from './helpers';
import { ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';
import { MEASURED as M } from './measured.generated';

/** A UCX setting as the ranks get it: the environment (engine ranks first), else ucx_info -c, else null. */
function ucxSetting(facts: Facts, name: string): { value: string; evidence: Evidence; origin: string } | null {
	const e = envSettings(facts, name)[0];
	if (e) { return e; }
	const c = facts.ucx?.config[name];
	return c ? { value: c.value, evidence: c.evidence, origin: 'ucx_info -c' } : null;
}

/** UCX's boolean / ternary forms (ucs_config_sscanf_bool / _ternary): off, on, try, or something else. */
function ucxTernary(v: string): 'on' | 'off' | 'try' | 'other' {
	const s = v.trim();
	if (/^(y|yes)$/i.test(s) || s === '1' || s === 'on') { return 'on'; }
	if (/^(n|no)$/i.test(s) || s === '0' || s === 'off') { return 'off'; }
	if (/^(try|maybe)$/i.test(s)) { return 'try'; }
	return 'other';
}

/** Whether the MPI a program links runs its data over UCX here, with the line that shows it (null: no / unknown). */
function ucxUnder(facts: Facts, soname: string): Evidence | null {
	const flavor = mpiFlavorOfSoname(soname);
	if (flavor === 'mpich') {
		const d = facts.mpi.mpich?.device;
		return d && /ucx/.test(d.value) ? d.evidence : null;
	}
	if (flavor === 'openmpi') { return componentsOf(facts.mpi.openmpi, 'pml').find((c) => c.name === 'ucx')?.evidence ?? null; }
	return null;
}

const staticCudart: Rule = {
	id: 'ucx-memtype-cache-static-cudart', severity: 'info', title: 'Static CUDA runtime with UCX\'s CUDA hooks in reloc mode: GPU buffers taken for host memory',
	reads: ['programLinks[] (readelf: cudaFree defined in the program)', 'env.UCX_MEM_CUDA_HOOK_MODE', 'ucx.config.UCX_MEM_CUDA_HOOK_MODE', 'env.UCX_MEMTYPE_CACHE', 'env.UCX_MEM_EVENTS', 'mpi.mpich.device', 'mpi.openmpi.components (pml ucx)'],
	appliesTo: { ucx: '>=1.13', cuda: 'all' },
	verifiedAgainst: [
		src(U.ucxUcmOpts1131, 'UCX 1.13.1 UCX_MEM_CUDA_HOOK_MODE: in reloc mode, with the CUDA runtime linked statically "some memory events may be missed and not reported"; bistro (the default where built) intercepts the runtime\'s calls to the driver, so statically linked programs are covered', 'part of the application is linked with Cuda runtime statically,'),
		src(U.ucxUcmOpts122, 'the same two modes and the same default in UCX 1.22.0', 'Cuda driver APIs, so memory events are reported properly even'),
		src(U.ucxCudamem1131, 'UCX 1.13.1 installs its driver-API hooks in bistro and reloc mode and its runtime-API hooks (cudaMalloc, …) in reloc mode only', 'status = ucm_cuda_install_hooks(ucm_cuda_runtime_funcs, "runtime", UCM_MMAP_HOOK_RELOC, &runtime_api_hooks);'),
		src(U.ucxFaq1131, 'UCX 1.13.1 FAQ: statically compiled CUDA programs "must disable memory detection cache by setting UCX_MEMTYPE_CACHE=n"', 'must disable memory detection cache by setting `UCX_MEMTYPE_CACHE=n`.'),
		src(U.ucxUcpContextH122, 'UCX 1.22.0: a buffer the memtype cache does not know is taken for host memory', 'ucs_trace_req("address %p length %zu: not found in memtype cache, "'),
		src(U.ucxMemtypeCache1131Src, 'UCX 1.13.1: without memory-event hooks the memtype cache is not created (UCX then asks the driver for every buffer)', 'ucs_diag("failed to set UCM memtype event handler: %s",'),
		src(U.ucxGlobalOpts1131, 'the fix\'s variable: UCX_MEMTYPE_CACHE, a ternary defaulting to try, in UCX 1.13.1 (n takes the cache away)', '{"MEMTYPE_CACHE", "try", "Enable memory type (cuda/rocm) cache", ucs_offsetof(ucs_global_opts_t, enable_memtype_cache), UCS_CONFIG_TYPE_TERNARY},'),
		src(U.ucxGlobalOpts122, 'the same definition in UCX 1.22.0: the fix is valid across the rule\'s range', '{"MEMTYPE_CACHE", "try", "Enable memory type (cuda/rocm) cache", ucs_offsetof(ucs_global_opts_t, enable_memtype_cache), UCS_CONFIG_TYPE_TERNARY},'),
		src(U.devStaticCudart, `H100, Open MPI 5.0.7 + UCX 1.13.1 with UCX_MEM_CUDA_HOOK_MODE=reloc and the memtype cache on: the static-cudart program ${M.relocStaticCudart.text} launches (the miss UCX documents was not seen there; info, not warning)`),
		src(U.devStaticCudart, 'H200 / H100 testbed, UCX 1.13.1 with its default bistro hooks: a program built with nvcc\'s default static cudart passed cudaMalloc, pool and VMM buffers through pml ucx correctly in every trial (c-malloc, c-pool, c-vmm)'),
	],
	fixSummary: 'UCX_MEMTYPE_CACHE=n for programs with a static CUDA runtime whenever UCX\'s CUDA hooks are not in bistro mode (UCX then asks the driver for each buffer: slower small messages); or unset UCX_MEM_CUDA_HOOK_MODE (bistro is the default where built); or link the runtime shared (nvcc -cudart shared).',
	evaluate(facts) {
		const out: Finding[] = [];
		const hook = ucxSetting(facts, 'UCX_MEM_CUDA_HOOK_MODE');
		const modes = (hook?.value ?? 'bistro').toLowerCase().split(',').map((m) => m.trim()).filter((m) => m !== '');
		// bistro patches the driver functions themselves: the static runtime's calls reach the hooks. none: no hooks,
		// no memtype cache (memtype_cache.c), UCX asks the driver. Only reloc alone misses them.
		if (!hook || modes.includes('bistro') || modes.includes('none') || modes.length === 0) { return out; }
		const cache = ucxSetting(facts, 'UCX_MEMTYPE_CACHE');
		if (cache && ucxTernary(cache.value) === 'off') { return out; }
		const events = ucxSetting(facts, 'UCX_MEM_EVENTS');
		if (events && ucxTernary(events.value) === 'off') { return out; }
		for (const { program, order } of facts.programLinks) {
			if (!order.staticCudart || !order.mpi) { continue; }
			const under = ucxUnder(facts, order.mpi.soname);
			if (!under) { continue; }
			out.push(finding(this, `${program} has the CUDA runtime linked in statically (cudaFree is defined in the program) and runs its MPI (${order.mpi.soname}) over UCX, whose CUDA memory hooks are in ${modes.join(',')} mode here (UCX_MEM_CUDA_HOOK_MODE=${hook.value}, ${hook.origin}). In that mode UCX hooks the program's relocation tables; a statically linked runtime calls the driver past them, and UCX says so itself: "some memory events may be missed and not reported". Its memory-type cache (UCX_MEMTYPE_CACHE=${cache?.value ?? 'try'}, the default) then never hears of the program's cudaMalloc buffers, and a buffer it does not know is taken for host memory: the CPU touches GPU memory (SIGSEGV, "Bad address") or the data is wrong. UCX's 1.13 FAQ: statically compiled programs "must disable memory detection cache by setting UCX_MEMTYPE_CACHE=n". In bistro mode, UCX's default where it is built, the hooks see these allocations (a static-cudart program was correct in every trial on the testbed with it). Measured in reloc mode too (H100, Open MPI 5.0.7 + UCX 1.13.1, cudaMalloc and pool buffers): the program ${M.relocStaticCudart.text} launches, so the miss was not seen there; it depends on which allocations the program makes before UCX hooks in: measure yours with and without the fix.`,
				ev(order.staticCudart, order.mpi.evidence, hook.evidence, cache?.evidence, under),
				{ text: 'Switch the memory-type cache off for this program (UCX then asks the driver for each buffer: slower small messages), or unset UCX_MEM_CUDA_HOOK_MODE so UCX uses its default bistro hooks, or link the CUDA runtime shared (nvcc -cudart shared).', command: 'export UCX_MEMTYPE_CACHE=n' }));
		}
		return out;
	},
};

/** The engine's rank-0 report of the GPU's VMM / export support (null: not probed or older engine). */
function vmmSupport(facts: Facts): { vmm: boolean; posixFd: boolean; evidence: Evidence } | null {
	const d = facts.engine?.document?.ranks[0]?.ipc_memory?.device;
	if (!d) { return null; }
	return { vmm: d.vmm_supported === 1, posixFd: d.posix_fd_supported === 1, evidence: { source: 'engine', line: `ranks[0].ipc_memory.device: vmm_supported ${d.vmm_supported}, posix_fd_supported ${d.posix_fd_supported}` } };
}

const vmmMultiChunk: Rule = {
	id: 'ucx-cuda-ipc-vmm-multi-chunk', severity: 'info', title: 'UCX cuda_ipc exports one VMM allocation per buffer: buffers mapped from several may arrive wrong',
	reads: ['ucx.version', 'ucx.transports (cuda_ipc)', 'ucx.builtWithCuda', 'engine.document.ranks[0].ipc_memory.device'],
	appliesTo: { ucx: '>=1.18', cuda: '>=12.3' },
	verifiedAgainst: [
		src(U.ucxPr11283, 'openucx/ucx PR 11283 (open): "cuda_ipc only exports a single fabric handle per region, which covers just the first chunk", so "transfers involving multi-chunk VMM regions silently access only the first chunk\'s memory, producing incorrect results for offsets beyond the first chunk boundary"'),
		src(U.ucxCudaIpcMd118Src, 'UCX 1.18.0 (the first release exporting VMM memory from cuda_ipc): one cuMemRetainAllocationHandle on the buffer\'s address, one fabric handle', 'status = UCT_CUDADRV_FUNC(cuMemRetainAllocationHandle(&handle, addr),'),
		src(U.ucxCudaIpcMd122, 'UCX 1.22.0: the same one-handle export, now also as a POSIX file descriptor for VMM memory allowing that handle type', 'status = UCT_CUDADRV_FUNC(cuMemRetainAllocationHandle(&alloc_handle, addr),'),
		src(U.ucxCudaIpcMd117, 'UCX 1.17.0 and older export no VMM memory from cuda_ipc (legacy handles only): the case does not arise there', 'status = UCT_CUDADRV_FUNC(cuIpcGetMemHandle(&key->ph, (CUdeviceptr)addr),'),
		src(U.ucxPr11461, 'the registration side of the same pattern (cuda_copy, dmabuf for the NIC, fixed after 1.22.0): cuMemGetAddressRange "returns only the bounds of the cuMem handle containing the base pointer", the NIC then fails with IBV_WC_LOC_PROT_ERR; workaround UCX_CUDA_COPY_REG_WHOLE_ALLOC=off'),
		src(U.nvidiaVmmBlog, 'the VMM API maps several physical allocations (cuMemCreate) into one reserved virtual range (cuMemMap): the pattern of growable allocators'),
	],
	fixSummary: 'Give MPI buffers that lie within one cuMemCreate allocation (e.g. PyTorch without expandable_segments, or a VMM allocator with one allocation per buffer), or check your transfers\' data until a UCX release includes PR 11283; single-allocation VMM buffers and cudaMalloc memory are not affected.',
	evaluate(facts) {
		const u = facts.ucx;
		const vp = versionParts(u?.version?.value ?? '');
		if (!u?.version || vp.length < 2 || compareVersions(vp, [1, 18]) < 0) { return []; }
		const ipc = u.transports.find((t) => t.name === 'cuda_ipc');
		if (!ipc && !(u.builtWithCuda?.value === true && !u.devicesListed)) { return []; }
		const dev = vmmSupport(facts);
		if (dev && !dev.vmm) { return []; }
		const posix = compareVersions(vp, [1, 22]) >= 0;
		const paths = `fabric handles (UCX 1.18 on: VMM memory allocated with CU_MEM_HANDLE_TYPE_FABRIC, as on multi-node NVLink systems)${posix ? ' and POSIX file descriptors (UCX 1.22 on: VMM memory allocated with the POSIX-FD handle type' + (dev ? `; this GPU ${dev.posixFd ? 'supports it' : 'does not support it'}` : '') + ')' : ''}`;
		return [finding(this, `UCX ${u.version.value} has cuda_ipc${ipc ? '' : ' (built with CUDA; ucx_info -d was not read)'} and exports VMM memory (cuMemCreate + cuMemMap) to the peer process through ${paths}. It exports one allocation per buffer: the handle of the cuMemCreate allocation at the buffer's address (cuda_ipc_md.c). A buffer mapped from several allocations into one virtual range, as growable allocators build them (PyTorch's expandable segments among them), then reaches only the first allocation's memory: "transfers involving multi-chunk VMM regions silently access only the first chunk's memory, producing incorrect results" (openucx/ucx PR 11283, still open: no release has the fix). Nothing here shows whether your program sends such buffers; cudaMalloc memory and single-allocation VMM buffers are not affected.`,
			ev(u.version.evidence, ipc?.evidence, dev?.evidence),
			{ text: 'Keep each MPI buffer within one cuMemCreate allocation (for PyTorch: no expandable_segments for tensors passed to MPI), or compare checksums of received data while UCX has no fix; the bounce through a cudaMalloc buffer that gpumpi-doctor guard --mode fix applies to VMM buffers also avoids the export.' })];
	},
};

/** Each engine rank's GPUDirect RDMA facts, one phrase per rank (bus id, dma_buf, GPUDirect RDMA attribute). */
function rankGdr(facts: Facts): { text: string; evidence: Evidence[]; noDmabuf: boolean } {
	const parts: string[] = [];
	const evidence: Evidence[] = [];
	let noDmabuf = false;
	for (const r of facts.engine?.ranks ?? []) {
		for (const d of r.devices) {
			const yn = (b: boolean | null): string => (b === null ? 'unknown' : b ? 'yes' : 'no');
			parts.push(`rank ${r.rank} (${r.host}) GPU ${d.pciBusId}: dma_buf ${yn(d.dmaBuf)}, GPUDirect RDMA attribute ${yn(d.gpuDirectRdma)}`);
			if (evidence.length < 4) { evidence.push(d.evidence); }
			if (d.dmaBuf === false) { noDmabuf = true; }
		}
	}
	return { text: parts.slice(0, 8).join('; '), evidence, noDmabuf };
}

const cudaCopyDmabuf: Rule = {
	id: 'ucx-cuda-copy-dmabuf', severity: 'info', title: 'UCX_CUDA_COPY_DMABUF and each rank\'s GPUDirect RDMA path (dmabuf or nvidia-peermem)',
	reads: ['env.UCX_CUDA_COPY_DMABUF', 'engine.ranks[].env.UCX_CUDA_COPY_DMABUF', 'ucx.version', 'engine.ranks[].devices[].dmaBuf', 'engine.ranks[].devices[].gpuDirectRdma', 'engine.ranks[].driverVersion', 'gpu.peermemLoaded', 'sys.ibPorts'],
	appliesTo: { ucx: '>=1.16', cuda: '>=11.7' },
	verifiedAgainst: [
		src(U.ucxCudaCopyMd116, 'UCX 1.16.0 adds UCX_CUDA_COPY_DMABUF (ternary, default try): "Enable using cross-device dmabuf file descriptor"', '{"DMABUF", "try", "Enable using cross-device dmabuf file descriptor",'),
		src(U.ucxCudaCopyMd122, 'the same ternary in UCX 1.22.0: the fix (=no) is valid from 1.16 to 1.22', '{"DMABUF", "try", "Enable using cross-device dmabuf file descriptor", ucs_offsetof(uct_cuda_copy_md_config_t, enable_dmabuf), UCS_CONFIG_TYPE_TERNARY},'),
		src(U.ucxCudaCopyMd122, 'UCX 1.22.0: with UCX_CUDA_COPY_DMABUF=no the md never reports dmabuf support; with yes and no driver support it refuses to open ("dmabuf support requested but not found")', 'ucs_error("dmabuf support requested but not found");'),
		src(U.ucxCudaCopyMd122, 'UCX 1.22.0 uct_cuda_copy_md_query_attributes: IS_MANAGED is tested first, so memory from a managed stream-ordered pool is typed CUDA_MANAGED without is_async_managed, and the dmabuf probe that is_async_managed skips runs for it', '} else if ((cuda_mem_ctx == NULL) && md->config.cuda_async_managed) {'),
		src(U.ucxxIssue749, 'rapidsai/ucxx#749: on CUDA 13.1, UCX 1.22.0 asks the driver for a dmabuf of memory from a managed stream-ordered pool and the driver crashes (SIGSEGV); "The immediate workaround is: export UCX_CUDA_COPY_DMABUF=no"'),
		src(U.ucxIbMd, 'UCX registers GPU memory with the NIC through the peer-memory module (/sys/module/nvidia_peermem) or through a dmabuf (ibv_reg_dmabuf_mr)', 'title = "ibv_reg_dmabuf_mr";'),
		src(U.cudaDriverDeviceAttr, 'CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED and CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, the per-device attributes the engine reports for each rank'),
		src(U.gpudirectRdma, 'GPUDirect RDMA through nvidia-peermem or dmabuf'),
	],
	fixSummary: 'Keep UCX_CUDA_COPY_DMABUF=no only for programs that hit rapidsai/ucxx#749 (UCX 1.22 + CUDA 13 managed stream-ordered pools); with it, GPUDirect RDMA needs nvidia_peermem on every node. Never =yes where a rank\'s GPU reports no dma_buf support.',
	evaluate(facts) {
		const vp = versionParts(facts.ucx?.version?.value ?? '');
		const known = vp.length >= 2;
		const s = envSettings(facts, 'UCX_CUDA_COPY_DMABUF')[0];
		const ranks = rankGdr(facts);
		const pm = facts.gpu.peermemLoaded;
		const ports = (facts.sys.ibPorts ?? []).filter((p) => p.active);
		const perRank = ranks.text ? ` Per rank: ${ranks.text}; nvidia_peermem ${pm === null ? 'not checked' : pm.value ? 'loaded' : 'not loaded'} on the inspected host.` : '';
		if (s) {
			const state = ucxTernary(s.value);
			const v = facts.ucx?.version?.value;
			if (known && compareVersions(vp, [1, 16]) < 0) {
				return [finding(this, `UCX_CUDA_COPY_DMABUF=${s.value} (${s.origin}) does nothing with UCX ${v}: the variable exists from UCX 1.16 (cuda_copy_md.c), and UCX warns of unused variables it does not know.${perRank}`,
					ev(s.evidence, facts.ucx?.version?.evidence), { text: 'Remove it from this stack\'s job scripts (it is for UCX 1.16 and newer).', command: 'unset UCX_CUDA_COPY_DMABUF' })];
			}
			if (state === 'off') {
				const noPeermem = pm !== null && !pm.value;
				const sev = noPeermem && ports.length > 0 ? 'warning' : 'info';
				return [finding(this, `UCX_CUDA_COPY_DMABUF=${s.value} (${s.origin}): UCX's cuda_copy never offers a dmabuf of GPU memory, so the NIC can reach GPU memory only through the peer-memory module (nvidia_peermem / nv_peer_mem). ${pm === null ? 'Whether that module is loaded was not checked.' : pm.value ? 'It is loaded here: GPUDirect RDMA keeps working through it.' : `It is not loaded here${ports.length > 0 ? ` and ${ports.length} RDMA port(s) are active` : ''}: GPU messages between nodes are staged through host memory.`} The setting is the workaround of rapidsai/ucxx#749 (UCX 1.22.0 with CUDA 13: a managed stream-ordered pool crashes the driver when UCX asks for its dmabuf); without that allocator it only costs the dmabuf path.${perRank}`,
					ev(s.evidence, pm?.evidence, ports[0]?.evidence, ...ranks.evidence.slice(0, 2)),
					{ text: noPeermem ? 'Unset it unless your program allocates from a managed stream-ordered pool on UCX 1.22 / CUDA 13; if it must stay, load nvidia_peermem on every node for GPUDirect RDMA.' : 'Keep it only for programs that hit rapidsai/ucxx#749.', command: noPeermem ? 'unset UCX_CUDA_COPY_DMABUF' : undefined }, sev)];
			}
			if (state === 'on') {
				return [finding(this, `UCX_CUDA_COPY_DMABUF=${s.value} (${s.origin}) demands dmabuf: where the driver reports no dma_buf support UCX's cuda_copy memory domain refuses to open ("dmabuf support requested but not found") and UCX has no CUDA transport at all.${ranks.noDmabuf ? ' A GPU here reports no dma_buf support: this setting breaks GPU transfers on it.' : ''}${perRank}`,
					ev(s.evidence, ...ranks.evidence.slice(0, 2)), { text: 'Leave it at its default (try): UCX uses dmabuf where the driver offers it.', command: 'unset UCX_CUDA_COPY_DMABUF' }, ranks.noDmabuf ? 'warning' : 'info')];
			}
			return [];
		}
		// Not set: UCX 1.22's dmabuf probe of managed-pool memory (ucxx#749), with a CUDA 13 driver on a rank.
		const driver = Math.max(0, ...(facts.engine?.ranks ?? []).map((r) => r.driverVersion));
		const cuda = ucxTransports(facts).includes('cuda_copy') || facts.ucx?.builtWithCuda?.value === true;
		if (!known || compareVersions(vp, [1, 22]) < 0 || driver < 13000 || !cuda || visibleGpus(facts).count === 0) { return []; }
		const d = facts.engine?.ranks.find((r) => r.driverVersion === driver);
		return [finding(this, `UCX ${facts.ucx?.version?.value} with a CUDA ${Math.floor(driver / 1000)}.${(driver % 1000) / 10} driver: if the program allocates from a managed stream-ordered memory pool (CUDA 13; RMM's managed_async resource, for one), UCX 1.22 asks the driver for a dmabuf of that memory (its attribute query takes it for managed memory first, so the skip meant for stream-ordered allocations does not apply) and the driver crashes with SIGSEGV (rapidsai/ucxx#749, seen with CUDA 13.1). The reported workaround is UCX_CUDA_COPY_DMABUF=no; it costs the dmabuf path to the NIC, so GPUDirect RDMA then needs nvidia_peermem (${pm === null ? 'not checked here' : pm.value ? 'loaded here' : 'not loaded here'}).${perRank}`,
			ev(facts.ucx?.version?.evidence, d?.driverLoaded.evidence, ...ranks.evidence.slice(0, 2)),
			{ text: 'Only for programs that allocate from a managed stream-ordered pool: set it for that job, and load nvidia_peermem where GPUDirect RDMA matters.', command: 'export UCX_CUDA_COPY_DMABUF=no' })];
	},
};

/** Rules about the memory UCX is handed. */
export const ucxMemoryRules: readonly Rule[] = [staticCudart, vmmMultiChunk, cudaCopyDmabuf];

/** The ones that read a program's link order: run on the program a guarded run starts (collect/programLinks.ts). */
export const programLinkUcxRules: readonly Rule[] = [staticCudart];
