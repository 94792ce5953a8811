/**
 * GPU memory that legacy CUDA IPC cannot export (issue 16 item 1): stream-ordered pool memory (cudaMallocAsync,
 * cuMemPoolCreate) and VMM memory (cuMemCreate + cuMemMap, PyTorch's expandable segments) are not
 * "legacy-IPC capable", so cuIpcGetMemHandle refuses them. What reads it: every rank's memory IPC capability probe in
 * `gpumpi inspect` (engine.ranks[].ipc_memory, native/engine/inspectIpcMem.hh). What UCX's cuda_ipc does with such
 * memory, read from src/uct/cuda/cuda_ipc/cuda_ipc_md.c at each tag: up to 1.17 it calls cuIpcGetMemHandle on every
 * buffer, which fails for it, and with it the registration (ucx#7110); 1.18–1.21 export it only as a fabric handle
 * (where the allocation allows one) and otherwise do not use CUDA IPC for it (1.18 "non_ipc", 1.19 on NO_IPC: the
 * staged pipeline or tcp, ucx#11548); 1.22 also exports cuMemCreate (VMM) memory that allows POSIX-FD handles
 * (cuMemRetainAllocationHandle + cuMemExportToShareableHandle), not pool memory. Open MPI's smcuda uses legacy IPC only.
 */
import type { Evidence } from '../../shared/report';
import type { EngineRankFacts, Facts, IpcMemoryProbe } from '../facts';
import { versionParts } from '../parsers/text';
import { compareVersions } from './helpers';
import { ALL_VERSIONS, ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';
import { MEASURED as M } from './measured.generated';

/** The first rank whose probe shows a non-cuMemAlloc kind that is not legacy-IPC capable, with those kinds. */
function notLegacy(facts: Facts): { rank: EngineRankFacts; kinds: IpcMemoryProbe[]; baseline: IpcMemoryProbe | undefined } | null {
	for (const r of facts.engine?.ranks ?? []) {
		const kinds = (r.ipcMemory ?? []).filter((p) => p.kind !== 'cuMemAlloc' && p.allocated && p.legacyIpcCapable === false);
		if (kinds.length > 0) { return { rank: r, kinds, baseline: r.ipcMemory?.find((p) => p.kind === 'cuMemAlloc') }; }
	}
	return null;
}

/** What this stack does with non-legacy-IPC GPU memory of one kind, as gpu-memory-not-legacy-ipc reads it. */
export interface NonLegacyPath {
	/** One sentence per component that handles such memory (UCX's cuda_ipc, Open MPI's smcuda). */
	text: string;
	/** The stack exports GPU buffers with legacy CUDA IPC only, for this kind (UCX < 1.22 with cuda_ipc, or smcuda). */
	legacyOnly: boolean;
	evidence: Evidence[];
}

/**
 * What UCX's cuda_ipc (by its version, read from cuda_ipc_md.c at each tag) and Open MPI's smcuda do with pool or VMM
 * memory (`vmmPosixFd`: VMM memory that allows POSIX-FD handles, which UCX 1.22 exports). Null when neither is here
 * (no cuda_ipc listed, Open MPI not built with CUDA) or the facts do not say.
 */
export function nonLegacyPath(facts: Facts, kind: 'pool' | 'vmm', vmmPosixFd = false): NonLegacyPath | null {
	const u = facts.ucx;
	const cudaIpc = u?.transports.find((t) => t.name === 'cuda_ipc');
	const vp = versionParts(u?.version?.value ?? '');
	const known = cudaIpc !== undefined && vp.length >= 2;
	const ompiCuda = facts.mpi.openmpi?.builtWithCuda?.value === true;
	const parts: string[] = [];
	let legacyOnly = false;
	if (known && compareVersions(vp, [1, 18]) < 0) {
		parts.push(`UCX ${u?.version?.value} registers every GPU buffer with cuIpcGetMemHandle (cuda_ipc_md.c up to 1.17): for ${kind} memory that call fails, and with it the registration (ucx#7110)`);
		legacyOnly = true;
	} else if (known && compareVersions(vp, [1, 22]) < 0) {
		parts.push(`UCX ${u?.version?.value} exports ${kind} memory only as a fabric handle where the allocation allows one, and otherwise does not use CUDA IPC for it: its staged pipeline or tcp (ucx#11548: ~200 → ~0.3 GB/s, data correct)`);
		legacyOnly = true;
	} else if (known) {
		parts.push(kind === 'vmm' && vmmPosixFd
			? `UCX ${u?.version?.value} exports cuMemCreate memory that allows POSIX-FD handles (cuda_ipc_md.c@v1.22.0)`
			: `UCX ${u?.version?.value} exports cuMemCreate memory that allows POSIX-FD handles, but not ${kind === 'pool' ? 'pool memory' : 'VMM memory that allows no shareable handle'}: no CUDA IPC for it`);
	}
	if (ompiCuda) { parts.push('Open MPI\'s smcuda BTL exports GPU buffers with cuIpcGetMemHandle only'); legacyOnly = true; }
	if (parts.length === 0) { return null; }
	return { text: parts.join('; '), legacyOnly, evidence: ev(u?.version?.evidence, cudaIpc?.evidence, facts.mpi.openmpi?.builtWithCuda?.evidence) };
}

/** The engine probe's line for one allocation kind (first rank that allocated it), for evidence. */
export function probedKind(facts: Facts, kind: string): IpcMemoryProbe | null {
	for (const r of facts.engine?.ranks ?? []) {
		const p = (r.ipcMemory ?? []).find((x) => x.kind === kind && x.allocated);
		if (p) { return p; }
	}
	return null;
}

const notLegacyIpc: Rule = {
	id: 'gpu-memory-not-legacy-ipc', severity: 'warning', title: 'Pool / VMM GPU memory cannot use legacy CUDA IPC, which this stack relies on',
	reads: ['engine.ranks[].ipc_memory.allocations[]', 'ucx.version', 'ucx.transports', 'mpi.openmpi.builtWithCuda'],
	appliesTo: { ucx: '<1.22', openmpi: ALL_VERSIONS, cuda: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.nvidiaVmmBlog, 'NVIDIA: the VMM functions do not support the legacy cuIpc* functions with their memory; they export OS handles (POSIX FD) instead, and only when the handle type was requested at cuMemCreate'),
		src(U.ucxIssue7110, 'UCX: "Support IPC for allocations created by cuMemCreate" (open); the error seen: "The call to cuIpcGetMemHandle failed"'),
		src(U.cudaJl1053, 'the application failure ucx#7110 links: CUDA.jl arrays from the stream-ordered allocator through a CUDA-aware MPI'),
		src(U.devUcxVersions, `H100, Open MPI 5.0.7 over pml ucx, 64 MiB plain sends, 4 trials: cudaMallocAsync memory ${M.ucx113PoolSend.text} with UCX 1.13.1, ${M.ucx120PoolSend.text} with UCX 1.20.0; VMM (POSIX-FD) memory ${M.ucx113VmmSend.text} and ${M.ucx120VmmSend.text}`),
		src(U.ucxIssue11548, 'UCX cuda_ipc exports VMM / mempool memory only as fabric handles; POSIX-FD-only allocations (PyTorch expandable segments) became NO_IPC and fell from ~200 GB/s to ~0.3 GB/s (software emulation over tcp) with correct data'),
		src(U.ucxCudaIpcMd117, 'UCX 1.17.0: registration calls cuIpcGetMemHandle on every buffer and fails when it fails (no fabric, no NO_IPC path)', "status = UCT_CUDADRV_FUNC(cuIpcGetMemHandle(&key->ph, (CUdeviceptr)addr),"),
		src(U.ucxCudaIpcMd118, 'UCX 1.18.0: memory that is not legacy-IPC capable is exported as a fabric handle where CU_MEM_HANDLE_TYPE_FABRIC is allowed, otherwise goes to non_ipc', "if (!(allowed_handle_types & CU_MEM_HANDLE_TYPE_FABRIC)) { goto non_ipc; }"),
		src(U.ucxPr10189, 'UCX: NON_IPC keys send such memory down the staged pipeline instead of failing registration (UCT_CUDA_IPC_KEY_HANDLE_TYPE_NO_IPC from 1.19.0)'),
		src(U.ucxCudaIpcMd122, 'UCX 1.22.0: uct_cuda_ipc_mem_export_posix_fd: cuMemRetainAllocationHandle, then cuMemExportToShareableHandle(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR): VMM (cuMemCreate) allocations; otherwise NO_IPC', "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));"),
		src(U.ucxPr11183, 'UCX 1.22 (backport PR #11653): cuda_ipc exports VMM allocations that allow POSIX FD handles within a node (pidfd_getfd, Linux 5.6+)'),
		src(U.devIpcMem, 'the probe and repro ipc pool/vmm on the H200 testbed'),
	],
	fixSummary: 'Allocate the buffers you pass to MPI with cudaMalloc (cuMemAlloc), or with cuMemCreate and the POSIX-FD handle type on UCX >= 1.22 (not pools: UCX 1.22 exports no pool memory that way), or stage through libgpumpi; check with gpumpi repro ipc --variant pool|vmm.',
	evaluate(facts) {
		const hit = notLegacy(facts);
		if (!hit) { return []; }
		const u = facts.ucx;
		const cudaIpc = u?.transports.find((t) => t.name === 'cuda_ipc');
		const vp = versionParts(u?.version?.value ?? '');
		const ucxLegacy = cudaIpc !== undefined && vp.length >= 2 && compareVersions(vp, [1, 22]) < 0;
		const ucxNew = cudaIpc !== undefined && vp.length >= 2 && !ucxLegacy;
		const ompiCuda = facts.mpi.openmpi?.builtWithCuda?.value === true;
		if (!ucxLegacy && !ompiCuda && !ucxNew) { return []; }
		// UCX 1.22 exports only cuMemCreate (VMM) memory through POSIX FDs: a pool allowing them is still not exported.
		const fdKinds = hit.kinds.filter((k) => k.kind.startsWith('vmm') && (k.allowedHandleTypes ?? '').split(',').includes('posix_fd'));
		const stuck = ucxNew ? hit.kinds.filter((k) => !fdKinds.includes(k)) : hit.kinds;
		if (stuck.length === 0 && !ompiCuda) { return []; }
		const list = (ks: IpcMemoryProbe[]): string => ks.map((k) => `${k.kind} (${k.calls}: handles ${k.allowedHandleTypes ?? '?'}, cuIpcGetMemHandle ${k.ipcGetMemHandle})`).join('; ');
		const before118 = vp.length >= 2 && compareVersions(vp, [1, 18]) < 0;
		const who = [
			ucxLegacy && before118 ? `UCX ${u?.version?.value} has cuda_ipc, which registers every GPU buffer with cuIpcGetMemHandle (cuda_ipc_md.c up to 1.17): for such memory that call fails, and with it the registration (ucx#7110)` : '',
			ucxLegacy && !before118 ? `UCX ${u?.version?.value} has cuda_ipc, which exports such memory only as a fabric handle where the allocation allows one, and otherwise does not use CUDA IPC for it: UCX then takes its staged pipeline or tcp (ucx#11548: ~200 → ~0.3 GB/s, data correct)` : '',
			ucxNew ? `UCX ${u?.version?.value} exports cuMemCreate memory that allows POSIX-FD handles itself${fdKinds.length > 0 ? ` (${fdKinds.map((k) => k.kind).join(', ')} here)` : ''}, but not pool memory or memory that allows no shareable handle` : '',
			ompiCuda ? 'Open MPI\'s smcuda BTL exports GPU buffers with cuIpcGetMemHandle only' : '',
		].filter((x) => x !== '').join('; ');
		const sev = ucxLegacy || ompiCuda ? 'warning' : 'info';
		return [finding(this,
			`Rank ${hit.rank.rank}'s probe: GPU memory allocated these ways is not legacy-CUDA-IPC capable: ${list(ucxNew && !ompiCuda ? stuck : hit.kinds)}${hit.baseline ? ` (cuMemAlloc memory: legacy IPC ${hit.baseline.legacyIpcCapable ? 'yes' : 'no'}, cuIpcGetMemHandle ${hit.baseline.ipcGetMemHandle})` : ''}. ${who}. An application that passes such buffers to MPI between ranks of one node does not get the CUDA IPC path: it is slower, or fails where the stack insists on cuIpcGetMemHandle (ucx#7110). Measured (Open MPI 5.0.7 over pml ucx, H100, 64 MiB sends between ranks on one GPU, 4 trials): cudaMallocAsync memory ${M.ucx113PoolSend.text} with UCX 1.13.1 and was ${M.ucx120PoolSend.text} with UCX 1.20.0; VMM memory ${M.ucx113VmmSend.text} and ${M.ucx120VmmSend.text}.`,
			ev(...hit.kinds.map((k) => k.evidence), hit.baseline?.evidence, u?.version?.evidence, cudaIpc?.evidence, facts.mpi.openmpi?.builtWithCuda?.evidence),
			{ text: 'Allocate MPI buffers with cudaMalloc, or with cuMemCreate and the POSIX-FD handle type on UCX >= 1.22 (pool memory is not exported that way by any released UCX), or stage through libgpumpi; measure what your MPI does with it.', command: 'gpumpi-doctor repro ipc --variants pool,vmm,direct' },
			sev)];
	},
};

export const ipcMemoryRules: readonly Rule[] = [notLegacyIpc];
