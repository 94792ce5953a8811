/**
 * Rules about the GPU side: is there a GPU and driver, is the MPI CUDA-aware for it, is CUDA initialised before
 * MPI_Init, is GPUDirect RDMA possible, and what harmless-looking CUDA messages from Open MPI mean.
 */
import type { Evidence, Finding } from '../../shared/report';
import { componentsOf } from '../parsers/ompiInfo';
import { isOpenMpi, visibleGpus } from './helpers';
import { cudaAwareness } from './mpiRules';
import { ev, finding, Rule } from './rule';

const noGpu: Rule = {
	id: 'no-gpu-visible', severity: 'info', title: 'No GPU visible on this host',
	reads: ['gpu.gpus', 'gpu.topology', 'engine.ranks[].driverLoaded', 'engine.ranks[].deviceCount', 'which.nvidia-smi', 'probe.libraries'],
	source: 'observed.md A (no GPU: dlopen("libcuda.so.1") fails cleanly)',
	fixSummary: 'Run the inspection on a GPU node (e.g. inside srun/salloc), or install the NVIDIA driver.',
	evaluate(facts) {
		if (visibleGpus(facts).count > 0) { return []; }
		const smi = facts.which['nvidia-smi'];
		const r0 = facts.engine?.ranks[0];
		const cudaLib = facts.probe?.libraries.find((l) => l.kind === 'cuda');
		const evidence = ev(smi && smi.value === null ? smi.evidence : undefined, r0?.driverLoaded.evidence, r0?.deviceCount.evidence,
			cudaLib && !cudaLib.loaded ? { source: 'probe', line: `${cudaLib.soname}: ${cudaLib.error || 'not loaded'}` } : undefined);
		const smiFailed = facts.raw.some((r) => r.id.startsWith('nvidia_smi') && !r.ok);
		if (evidence.length === 0 && !smiFailed) { return []; }
		const why = r0 && !r0.driverLoaded.value ? `the CUDA driver library could not be loaded${r0.cudaError ? ` (${r0.cudaError})` : ''}` : smi && smi.value === null ? 'nvidia-smi is not installed' : 'no tool reported a GPU';
		return [finding(this, `No NVIDIA GPU is visible here: ${why}. GPU-aware MPI findings below describe the software stack only; run the inspection on a GPU node to check the GPU side.`, evidence,
			{ text: 'Inspect from inside a GPU allocation.', command: 'srun --gpus=1 --pty bash  # then inspect again' })];
	},
};

const gpuButNotAware: Rule = {
	id: 'gpu-visible-mpi-not-cuda-aware', severity: 'error', title: 'GPUs are present but the MPI is not CUDA-aware',
	reads: ['gpu.gpus', 'engine.ranks[].deviceCount', 'engine.ranks[].runTime', 'mpi.openmpi.builtWithCuda'],
	source: 'observed.md A/B; gpu-mpi-sources.md §3',
	fixSummary: 'Load the CUDA-aware MPI of the site (module avail openmpi / spack find openmpi +cuda), or copy device buffers to host before MPI calls.',
	evaluate(facts) {
		const gpus = visibleGpus(facts);
		const a = cudaAwareness(facts);
		if (gpus.count === 0 || a.aware !== false) { return []; }
		return [finding(this, `${gpus.count} GPU(s) are visible, but the MPI is not CUDA-aware (${a.stage}: ${a.detail}). Device pointers passed to MPI_Send/MPI_Recv will be treated as host memory: segmentation faults or wrong data.`,
			[...gpus.evidence.slice(0, 2), ...a.evidence],
			{ text: 'Use a CUDA-aware MPI build, or stage through host buffers (cudaMemcpy to pinned host memory before sending).', command: 'ompi_info --parsable --all | grep built_with_cuda_support:value' })];
	},
};

const cudaInitOrder: Rule = {
	id: 'cuda-not-initialised-before-mpi-init', severity: 'warning', title: 'CUDA was not initialised before MPI_Init',
	reads: ['engine.ranks[].initialisedBeforeMpiInit', 'engine.ranks[].deviceCount', 'engine.ranks[].runTime'],
	source: 'observed.md B (accelerator component: "CUDA: cuCtxGetCurrent failed" → null accelerator)',
	fixSummary: 'Call cudaSetDevice(local_rank); cudaFree(0) before MPI_Init (local rank from OMPI_COMM_WORLD_LOCAL_RANK / MPI_LOCALRANKID).',
	evaluate(facts) {
		const out: Finding[] = [];
		const bad = (facts.engine?.ranks ?? []).filter((r) => r.deviceCount.value > 0 && !r.initialisedBeforeMpiInit.value);
		const sig = facts.messages.find((m) => m.kind === 'cuCtxGetCurrent-failed');
		if (bad.length === 0 && !sig) { return out; }
		const r = bad[0];
		out.push(finding(this, `${bad.length > 0 ? `${bad.length} rank(s) had no current CUDA context when MPI_Init ran` : 'Open MPI reported that no CUDA context was current'}: Open MPI's CUDA accelerator component then fails (cuCtxGetCurrent failed) and falls back to the null accelerator, so device pointers are treated as host memory.`,
			ev(r?.initialisedBeforeMpiInit.evidence, r?.deviceCount.evidence, sig?.evidence),
			{ text: 'Select and initialise the device before MPI_Init.', command: 'cudaSetDevice(atoi(getenv("OMPI_COMM_WORLD_LOCAL_RANK"))); cudaFree(0); MPI_Init(&argc, &argv);' }));
		return out;
	},
};

const noGdr: Rule = {
	id: 'no-gpudirect-rdma', severity: 'info', title: 'No GPUDirect RDMA: inter-node GPU traffic is staged through host memory',
	reads: ['gpu.peermemLoaded', 'sys.modules', 'sys.peermemVersion', 'sys.ibPorts', 'gpu.gpus', 'ucx.version'],
	source: 'gpu-mpi-sources.md §3 (UCX checks /sys/module/nvidia_peermem/version, nv_peer_mem or dmabuf; ib_md.c, UCX FAQ)',
	fixSummary: 'modprobe nvidia_peermem (with MLNX_OFED / inbox RDMA) or use UCX ≥ 1.14 with dmabuf (kernel ≥ 5.12, open GPU kernel module).',
	evaluate(facts) {
		const pm = facts.gpu.peermemLoaded;
		if (!pm || pm.value || visibleGpus(facts).count === 0) { return []; }
		const ports = facts.sys.ibPorts;
		const active = (ports ?? []).filter((p) => p.active);
		const rdma = active.length > 0
			? ` This host has ${active.length} active RDMA port(s) (${active.slice(0, 3).map((p) => `${p.device}:${p.port} ${p.linkLayer}`).join(', ')}), so GPU messages between nodes lose the direct path.`
			: ports !== null ? ' No active RDMA port is visible here either, so this matters only on nodes with InfiniBand/RoCE cards.' : '';
		return [finding(this, `The nvidia_peermem (or nv_peer_mem) kernel module is not loaded, so the network card cannot read or write GPU memory directly (unless UCX ≥ 1.14 uses dmabuf). GPU messages between nodes are copied through host memory: lower bandwidth and extra staging memory.${rdma}`,
			ev(pm.evidence, active[0]?.evidence), { text: 'Load the peer-memory module on every node (needs an RDMA-capable NIC and driver).', command: 'sudo modprobe nvidia_peermem' }, active.length > 0 ? 'warning' : 'info')];
	},
};

const smcudaHostRegister: Rule = {
	id: 'smcuda-cumemhostregister-warning', severity: 'info', title: 'smcuda "cuMemHostRegister … failed" warning',
	reads: ['messages[cuMemHostRegister-failed]', 'mpi.openmpi.components'],
	source: 'observed.md B (transfers were correct with this warning on the H200 testbed)',
	fixSummary: 'Harmless for correctness; to silence it, exclude smcuda (--mca btl ^smcuda) at the cost of CUDA IPC within a node.',
	evaluate(facts) {
		const hits = facts.messages.filter((m) => m.kind === 'cuMemHostRegister-failed');
		if (hits.length === 0 || !isOpenMpi(facts)) { return []; }
		const smcuda = componentsOf(facts.mpi.openmpi, 'btl').find((c) => c.name === 'smcuda');
		return [finding(this, 'Open MPI\'s smcuda btl tried to page-lock (cuMemHostRegister) its shared-memory segment and the CUDA driver refused. smcuda then uses the segment unpinned: host-staged copies are somewhat slower, but data stays correct (measured on the H200 testbed). It is a warning to understand, not an error.',
			ev(hits[0].evidence, smcuda?.evidence), { text: 'Ignore, or exclude smcuda if the message is unwanted (loses CUDA IPC inside a node with ob1).', command: '--mca btl ^smcuda' })];
	},
};

const peerPath: Rule = {
	id: 'gpu-peer-access-missing', severity: 'info', title: 'GPU pairs without peer-to-peer access: their traffic is staged',
	reads: ['engine.document.ranks[].cuda.p2p', 'gpu.topology'],
	source: 'observed.md B (smcuda with CUDA IPC 1995 GB/s vs staged through host 4.26 GB/s); seed B (GPUs "indirectly connected through a CPU interconnect")',
	fixSummary: 'Place ranks that exchange most on GPUs with NVLink / a common PCIe switch (CUDA_VISIBLE_DEVICES, rank mapping), or expect host-staged bandwidth between them.',
	evaluate(facts) {
		const pairs: string[] = [];
		const evidence: Evidence[] = [];
		const doc = facts.engine?.document;
		doc?.ranks.slice(0, 1).forEach((r, ri) => {
			r.cuda.p2p.forEach((row, i) => row.forEach((ok, j) => {
				if (i < j && !ok) {
					pairs.push(`GPU${i}↔GPU${j} (cuDeviceCanAccessPeer = false)`);
					evidence.push({ source: 'engine', line: `ranks[${ri}].cuda.p2p[${i}][${j}]: false` });
				}
			}));
		});
		if (pairs.length === 0) {
			for (const row of facts.gpu.topology.filter((t) => /^GPU\d+$/.test(t.device))) {
				for (const [other, link] of Object.entries(row.links)) {
					if (/^GPU\d+$/.test(other) && other > row.device && link === 'SYS') {
						pairs.push(`${row.device}↔${other} (${link}: across the CPU interconnect)`);
						evidence.push(row.evidence);
					}
				}
			}
		}
		if (pairs.length === 0) { return []; }
		return [finding(this, `${pairs.length} GPU pair(s) cannot reach each other directly: ${pairs.slice(0, 6).join(', ')}. MPI moves data between them through host memory (cuda_ipc / smcuda IPC need peer access), typically at a few GB/s instead of hundreds.`,
			evidence.slice(0, 6), { text: 'Map communicating ranks to directly connected GPUs.', command: 'nvidia-smi topo -m' })];
	},
};

/** Rules about the GPU side. */
export const cudaRules: Rule[] = [noGpu, gpuButNotAware, cudaInitOrder, noGdr, peerPath, smcudaHostRegister];
