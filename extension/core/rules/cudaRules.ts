/**
 * Rules about the GPU side: is there a GPU and driver, is the MPI CUDA-aware for it, had the ranks a CUDA context at
 * MPI_Init (observed, not a known cause), is GPUDirect RDMA possible, and what harmless-looking CUDA messages from Open MPI mean.
 */
import type { Evidence, Finding } from '../../shared/report';
import { componentsOf } from '../parsers/ompiInfo';
import { versionParts } from '../parsers/text';
import { compareVersions, envSettings, isOpenMpi, visibleGpus } from './helpers';
import { cudaAwareness } from './mpiRules';
import { ALL_VERSIONS, ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';
import { MEASURED as M } from './measured.generated';

const noGpu: Rule = {
	id: 'no-gpu-visible', severity: 'info', title: 'No GPU visible on this host',
	reads: ['gpu.gpus', 'gpu.topology', 'engine.ranks[].driverLoaded', 'engine.ranks[].deviceCount', 'which.nvidia-smi', 'probe.libraries'],
	appliesTo: { cuda: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.nvidiaSmi, 'nvidia-smi lists the GPUs the driver sees'),
		src(U.obsDebian, 'on a host without a GPU, dlopen("libcuda.so.1") fails cleanly and the engine reports 0 devices'),
	],
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
			{ text: 'Inspect from inside a GPU allocation (the site\'s partition and account as usual).', command: 'srun --gres=gpu:1 --pty bash  # then inspect again (--gpus=1 needs Slurm >= 19.05 with select/cons_tres)' })];
	},
};

const gpuButNotAware: Rule = {
	id: 'gpu-visible-mpi-not-cuda-aware', severity: 'error', title: 'GPUs are present but the MPI is not CUDA-aware',
	reads: ['gpu.gpus', 'engine.ranks[].deviceCount', 'engine.ranks[].runTime', 'mpi.openmpi.builtWithCuda'],
	appliesTo: { openmpi: '>=4.0', mpich: '>=4.0' },
	verifiedAgainst: [
		src(U.ompiCudaDocs, 'Open MPI: how to check CUDA support (ompi_info, MPIX_Query_cuda_support)'),
		src(U.mpichGpuQuery, 'MPICH: MPIX_GPU_query_support'),
		src(U.devInspect, 'H200 testbed: a GPU visible and MPIX_Query_cuda_support() = 0 when the CUDA component was not found'),
	],
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
	id: 'cuda-not-initialised-before-mpi-init', severity: 'info', title: 'No CUDA context was current at MPI_Init: fine for CUDA-aware transfers, not for receives into IPC imports under UCX (measured)',
	reads: ['engine.ranks[].initialisedBeforeMpiInit', 'engine.ranks[].deviceCount', 'engine.ranks[].runTime'],
	appliesTo: { openmpi: '>=4.0' },
	verifiedAgainst: [
		src(U.ompiCudaDocs, '"When do I need to select a CUDA device?": Open MPI allocates its CUDA resources lazily; the device must be selected before the first MPI call that needs them'),
		src(U.ompiAcceleratorCuda5, 'Open MPI 5.0.7: the CUDA accelerator component returns its module and retries a delayed initialisation', "int opal_accelerator_cuda_delayed_init()"),
		src(U.ompiCommonCuda41, 'Open MPI 4.1.4: common_cuda initialises CUDA lazily', "/* Structure to hold memory registrations that are delayed until first"),
		src(U.devCudaInit, `H200 testbed, Open MPI 5.0.7 + UCX 1.13.1: CUDA first touched after MPI_Init — device pointers to MPI 3 of 3 correct at ${M.cudaAfterUcx1G.text} (ucx) and ${M.cudaAfterOb11G.text} (ob1); receives into an IPC import under pml ucx crashed in ${M.ipcDirectCrashedAfter.text} trials (${M.ipcDirectCrashedBefore.text} with CUDA first), ob1 ${M.ipcOb1Correct.text} correct either way`),
	],
	fixSummary: 'Nothing to do for CUDA-aware transfers (Open MPI initialises CUDA lazily; measured). If the program receives into or sends from CUDA-IPC-imported memory under pml ucx, bounce through a buffer the rank owns: with CUDA first touched after MPI_Init that pattern crashed in every trial on the H200 testbed.',
	evaluate(facts) {
		const out: Finding[] = [];
		const bad = (facts.engine?.ranks ?? []).filter((r) => r.deviceCount.value > 0 && !r.initialisedBeforeMpiInit.value);
		const sig = facts.messages.find((m) => m.kind === 'cuCtxGetCurrent-failed');
		if (bad.length === 0 && !sig) { return out; }
		const r = bad[0];
		out.push(finding(this, `${bad.length > 0 ? `${bad.length} rank(s) had no current CUDA context when MPI_Init ran` : 'Open MPI printed "cuCtxGetCurrent failed" (no CUDA context was current)'}. For CUDA-aware transfers that is fine: Open MPI initialises CUDA lazily, and on the H200 testbed (Open MPI 5.0.7, UCX 1.13.1) device pointers to MPI were correct in 3 of 3 trials at the same bandwidth with CUDA first touched after MPI_Init, under pml ucx and ob1. It is not fine for one pattern: under pml ucx, receiving into memory imported with cudaIpcOpenMemHandle crashed in ${M.ipcDirectCrashedAfter.text} trials in that order (UCX's cma transport took the import for host memory), against ${M.ipcDirectCrashedBefore.text} with CUDA set up first; ob1 (smcuda) was correct in ${M.ipcOb1Correct.text} either way. What those trials can miss: failure rates under 24–39 %, other UCX releases.`,
			ev(r?.initialisedBeforeMpiInit.evidence, r?.deviceCount.evidence, sig?.evidence),
			{ text: 'Only if the program moves CUDA-IPC-imported memory through MPI under pml ucx: bounce it through a buffer the rank owns (or run it under gpumpi-doctor guard with GPUMPI_GUARD=fix); selecting the device before MPI_Init lowered, but did not remove, the crashes.', command: 'gpumpi-doctor repro ipc --pml-ucx --also GPUMPI_CUDA_INIT=after-mpi-init' }));
		return out;
	},
};

const noGdr: Rule = {
	id: 'no-gpudirect-rdma', severity: 'info', title: 'No GPUDirect RDMA: inter-node GPU traffic is staged through host memory',
	reads: ['gpu.peermemLoaded', 'sys.modules', 'sys.peermemVersion', 'sys.peerMemoryClient', 'sys.ibPorts', 'gpu.gpus', 'ucx.version', 'engine.ranks[].cuda.devices[].dma_buf_supported', 'env.UCX_CUDA_COPY_DMABUF'],
	appliesTo: { ucx: ALL_VERSIONS, cuda: '>=11.7' },
	verifiedAgainst: [
		src(U.ucxIbMd, 'UCX checks /sys/module/nvidia_peermem/version, nv_peer_mem or /sys/kernel/mm/memory_peers/nv_mem, and dmabuf, before registering GPU memory with the NIC', "md, \"/sys/module/nvidia_peermem/version\","),
		src(U.gpudirectRdma, 'GPUDirect RDMA: the nvidia-peermem kernel module lets RDMA NICs access GPU memory'),
		src(U.ucxFaq, 'UCX FAQ: GPUDirect RDMA (UCX_IB_GPU_DIRECT_RDMA) and the peer-memory module'),
		src(U.nccl897, 'users seeing no GPUDirect RDMA when /sys/kernel/mm/memory_peers/nv_mem is missing'),
		src(U.ncclNetIb, 'ncclIbGdrSupport: NCCL takes GPUDirect RDMA as available when /sys/kernel/mm/memory_peers/nv_mem/version or …/nvidia-peermem/version exists', "(access(\"/sys/kernel/mm/memory_peers/nvidia-peermem/version\", F_OK) == -1)) ? 0 : 1;"),
		src(U.cudaDriverDeviceAttr, 'CUDA driver API: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, the device supports buffer sharing with the dma_buf mechanism'),
	],
	fixSummary: 'modprobe nvidia_peermem (with MLNX_OFED / inbox RDMA) or use UCX ≥ 1.14 with dmabuf (kernel ≥ 5.12, open GPU kernel module).',
	evaluate(facts) {
		const pm = facts.gpu.peermemLoaded;
		if (!pm || pm.value || visibleGpus(facts).count === 0) { return []; }
		const ports = facts.sys.ibPorts;
		const active = (ports ?? []).filter((p) => p.active);
		const rdma = active.length > 0
			? ` This host has ${active.length} active RDMA port(s) (${active.slice(0, 3).map((p) => `${p.device}:${p.port} ${p.linkLayer}`).join(', ')}), so GPU messages between nodes lose the direct path.`
			: ports !== null ? ' No active RDMA port is visible here either, so this matters only on nodes with InfiniBand/RoCE cards.' : '';
		// What the CUDA driver itself says per device (engine: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED / GPU_DIRECT_RDMA_SUPPORTED).
		const devs = (facts.engine?.ranks ?? []).flatMap((r) => r.devices).filter((d, i, all) => all.findIndex((x) => x.pciBusId === d.pciBusId) === i);
		const known = devs.filter((d) => d.dmaBuf !== null);
		const vp = versionParts(facts.ucx?.version?.value ?? '');
		// UCX_CUDA_COPY_DMABUF=no (UCX >= 1.16) takes the dmabuf path away (ucx-cuda-copy-dmabuf says so).
		const dmabufOff = envSettings(facts, 'UCX_CUDA_COPY_DMABUF').some((e) => /^(n|no|0|off)$/i.test(e.value.trim()));
		const ucxDmabuf = dmabufOff ? false : vp.length >= 2 ? compareVersions(vp, [1, 14]) >= 0 : null;
		const dmabuf = known.length === 0
			? ' Whether this GPU supports dma_buf is not known (the engine did not report it).'
			: known.every((d) => d.dmaBuf)
				? ` The CUDA driver reports dma_buf support for ${known.map((d) => d.pciBusId).join(', ')}${ucxDmabuf === true ? `, and UCX ${facts.ucx?.version?.value} can register GPU memory that way (1.14+), so the NIC may still reach GPU memory without the module` : dmabufOff ? ', but UCX_CUDA_COPY_DMABUF switches UCX\'s dmabuf export off' : ucxDmabuf === false ? `, but UCX ${facts.ucx?.version?.value} is older than 1.14, which is the first to register GPU memory through dma_buf` : ''}.`
				: ` The CUDA driver reports no dma_buf support for ${known.filter((d) => !d.dmaBuf).map((d) => d.pciBusId).join(', ')}: dma_buf is no way around the module there.`;
		return [finding(this, `The nvidia_peermem (or nv_peer_mem) kernel module is not loaded and no GPU peer-memory client is registered (/sys/kernel/mm/memory_peers/nv_mem, nv_mem_nc, nvidia-peermem), so the network card cannot read or write GPU memory directly (unless UCX ≥ 1.14 uses dmabuf). GPU messages between nodes are copied through host memory: lower bandwidth and extra staging memory.${rdma}${dmabuf}`,
			ev(pm.evidence, active[0]?.evidence, known[0]?.evidence, facts.ucx?.version?.evidence && known.length > 0 ? facts.ucx.version.evidence : undefined), { text: 'Load the peer-memory module on every node (needs an RDMA-capable NIC and driver).', command: 'sudo modprobe nvidia_peermem' }, active.length > 0 ? 'warning' : 'info')];
	},
};

const smcudaHostRegister: Rule = {
	id: 'smcuda-cumemhostregister-warning', severity: 'info', title: 'smcuda "cuMemHostRegister … failed" warning',
	reads: ['messages[cuMemHostRegister-failed]', 'mpi.openmpi.components'],
	appliesTo: { openmpi: '>=4.0' },
	verifiedAgainst: [
		src(U.obsH200, 'H200 testbed, Open MPI 5.0.7: the message for the 128 MiB segment, with correct data in those runs'),
		src(U.ompiSmcudaBtl507, 'Open MPI 5.0.7 smcuda: a failed registration of its segment is reported and the run goes on', 'If registering the memory fails, print a message and continue.'),
		src(U.ompiCommonCuda41, 'Open MPI 4.x: mpi_common_cuda_register_memory switches the page-locking of preallocated BTL buffers off (no such parameter in 5.0)', '"Whether to cuMemHostRegister preallocated BTL buffers",'),
	],
	fixSummary: 'Harmless for correctness. Open MPI 4.x: --mca mpi_common_cuda_register_memory 0 stops the page-locking of preallocated BTL buffers and keeps CUDA IPC; 5.x has no such switch: ignore it (excluding smcuda costs CUDA IPC within a node under ob1).',
	evaluate(facts) {
		const hits = facts.messages.filter((m) => m.kind === 'cuMemHostRegister-failed');
		if (hits.length === 0 || !isOpenMpi(facts)) { return []; }
		const smcuda = componentsOf(facts.mpi.openmpi, 'btl').find((c) => c.name === 'smcuda');
		const vp = versionParts(facts.mpi.version?.value ?? '');
		const v4 = vp.length >= 1 && vp[0] === 4;
		return [finding(this, 'Open MPI\'s smcuda btl tried to page-lock (cuMemHostRegister) its shared-memory segment and the CUDA driver refused. Data stayed correct with this message on the H200 testbed (every word checked); its cost for host-staged copies was not measured. It is a warning to understand, not an error.',
			ev(hits[0].evidence, smcuda?.evidence), v4 ? { text: 'Ignore it; or stop the page-locking of preallocated BTL buffers, which keeps CUDA IPC (excluding smcuda would cost it under ob1).', command: 'mpirun --mca mpi_common_cuda_register_memory 0 ...' } : { text: 'Ignore it: Open MPI 5 has no switch for this registration, and excluding smcuda would cost CUDA IPC within a node under ob1.' })];
	},
};

const peerPath: Rule = {
	id: 'gpu-peer-access-missing', severity: 'info', title: 'GPU pairs without peer-to-peer access: their traffic is staged',
	reads: ['engine.document.ranks[].cuda.p2p', 'gpu.topology'],
	appliesTo: { cuda: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.cudaProgrammingGuide, 'peer-to-peer memory access between devices (cudaDeviceCanAccessPeer) and CUDA IPC'),
		src(U.nvidiaSmi, 'nvidia-smi topo -m: SYS means the path crosses the CPU interconnect'),
		src(U.devFallback, `H200 testbed, two ranks on its one GPU, 1 GiB: staged through host memory ob1 moved ${M.smcudaNoIpc1G.text} and UCX sm + cuda_copy ${M.ucxSmStaged1G.text} (no GPU pair was measured)`),
	],
	fixSummary: 'Place ranks that exchange most on GPUs with NVLink / a common PCIe switch (CUDA_VISIBLE_DEVICES, rank mapping), or expect host-staged bandwidth between them.',
	evaluate(facts) {
		const pairs: string[] = [];
		const evidence: Evidence[] = [];
		const doc = facts.engine?.document;
		doc?.ranks.slice(0, 1).forEach((r, ri) => {
			r.cuda.p2p.forEach((row, i) => row.forEach((ok, j) => {
				if (i < j && !ok) {
					// Named by PCI bus id (what nvidia-smi topo -m and the admin see): the indices are rank 0's CUDA
					// numbering, which follows its CUDA_VISIBLE_DEVICES, not nvidia-smi's.
					const bus = (k: number): string => r.cuda.devices[k]?.pci_bus_id || `CUDA device ${k} of rank 0`;
					pairs.push(`${bus(i)}↔${bus(j)} (cuDeviceCanAccessPeer = false)`);
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
		return [finding(this, `${pairs.length} GPU pair(s) cannot reach each other directly: ${pairs.slice(0, 6).join(', ')}. MPI then stages these transfers through host memory instead of a direct PCIe / NVLink copy (cuda_ipc / smcuda IPC need peer access); staged, the H200 testbed moved ${M.smcudaNoIpc1G.text} with ob1 and ${M.ucxSmStaged1G.text} with UCX sm + cuda_copy at 1 GiB (docs/device-results.md). Where only the topology (SYS) says so, peer access may still exist: the engine's cuDeviceCanAccessPeer result decides.`,
			evidence.slice(0, 6), { text: 'Map communicating ranks to directly connected GPUs.', command: 'nvidia-smi topo -m' })];
	},
};

/** Rules about the GPU side. */
export const cudaRules: Rule[] = [noGpu, gpuButNotAware, cudaInitOrder, noGdr, peerPath, smcudaHostRegister];
