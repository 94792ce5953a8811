/**
 * Rules about the GPU platform around the MPI: GPU/NIC NUMA placement (sysfs, nvidia-smi topo, MVAPICH2-GDR's
 * warning), each rank's CPU binding against its GPU's NUMA node (core/parsers/rankAffinity.ts), CUDA_VISIBLE_DEVICES hiding GPUs, exclusive compute modes with several ranks per GPU, and MIG.
 */
import type { Evidence, Finding } from '../../shared/report';
import type { Facts } from '../facts';
import { AFFINITY_FIX } from '../parsers/rankAffinity';
import { envSettings } from './helpers';
import { ALL_VERSIONS, ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';

/** GPUs whose NUMA node / PCIe path has no active RDMA port nearby, from every source that tells. */
function numaMismatches(facts: Facts): { text: string; evidence: Evidence[] }[] {
	const out: { text: string; evidence: Evidence[] }[] = [];
	const ports = (facts.sys.ibPorts ?? []).filter((p) => p.active && p.numaNode !== null);
	const nicNodes = new Set(ports.map((p) => p.numaNode));
	if (ports.length > 0) {
		for (const g of facts.sys.gpuNuma ?? []) {
			if (g.numaNode === null || nicNodes.has(g.numaNode)) { continue; }
			out.push({ text: `GPU ${g.pciBusId} is on NUMA node ${g.numaNode}, the active RDMA ports on node(s) ${[...nicNodes].join(', ')}`, evidence: [g.evidence, ports[0].evidence] });
		}
	}
	if (out.length === 0) {
		for (const row of facts.gpu.topology.filter((t) => /^GPU\d+$/.test(t.device))) {
			const nics = Object.entries(row.links).filter(([k]) => /^(NIC\d+|mlx\d+_\d+)$/.test(k));
			if (nics.length > 0 && nics.every(([, link]) => link === 'SYS')) {
				out.push({ text: `${row.device} reaches every NIC only across the CPU interconnect (SYS)`, evidence: [row.evidence] });
			}
		}
	}
	return out;
}

const gpuNicNuma: Rule = {
	id: 'gpu-nic-numa-mismatch', severity: 'warning', title: 'GPU and network card on different NUMA nodes',
	reads: ['sys.gpuNuma', 'sys.ibPorts', 'gpu.topology', 'messages[gpu-ib-different-socket]'],
	appliesTo: { any: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.ucxTopo118, 'UCX 1.18.0: devices under the system root on different NUMA nodes get the "sys" distance, 220 MB/s (same node: 17000 MB/s)', 'ucs_topo_set_distance(&ucs_global_opts.dist.sys, 220 * UCS_MBYTE,'),
		src(U.ucxTopo1131, 'UCX 1.13.1: 220 MB/s for devices on different PCIe root complexes', 'distance->bandwidth = 220 * UCS_MBYTE;'),
		src(U.ucxIssue11121, 'GPU and NIC on different NUMA nodes: 65 Gb/s staged instead of 85 Gb/s with GPUDirect RDMA'),
		src(U.reframe265, 'MVAPICH2-GDR\'s warning "The GPU and IB selected are not on the same socket"'),
		src(U.sysfsPci, 'sysfs numa_node of a PCI device (GPU, NIC)'),
		src(U.nvidiaSmi, 'nvidia-smi topo -m: SYS between a GPU and a NIC'),
	],
	fixSummary: 'Give each rank a GPU and a NIC on the same NUMA node (UCX_NET_DEVICES=<mlx5_N>:1 per local rank: the NIC on its GPU\'s NUMA node); mpirun --map-by numa alone can pair a rank with a GPU of another node (see rank-gpu-numa-binding); check with nvidia-smi topo -m.',
	evaluate(facts) {
		const mism = numaMismatches(facts);
		const sig = facts.messages.find((m) => m.kind === 'gpu-ib-different-socket');
		if (mism.length === 0 && !sig) { return []; }
		const what = mism.length > 0 ? `${mism.slice(0, 4).map((m) => m.text).join('; ')}${mism.length > 4 ? '; …' : ''}` : 'the MPI library reported that the GPU and InfiniBand card it selected are not on the same socket';
		return [finding(this, `${what}. UCX's topology model rates a GPU–NIC path across NUMA nodes at 220 MB/s (UCX 1.18 on; 1.13–1.17 rate any pair on different PCIe root complexes so), so from UCX 1.16 (its new protocol selection) it tends to stage through host memory even where GPUDirect RDMA across the sockets works: openucx/ucx#11121 measured 85 Gb/s with ib_write_bw across NUMA nodes and 65 Gb/s through UCX.`,
			ev(...mism.flatMap((m) => m.evidence).slice(0, 6), sig?.evidence),
			{ text: 'Pair each local rank with the GPU and NIC of one NUMA node.', command: 'nvidia-smi topo -m   # then e.g. UCX_NET_DEVICES=mlx5_0:1 for ranks on GPU0\'s node' })];
	},
};

const rankGpuNuma: Rule = {
	id: 'rank-gpu-numa-binding', severity: 'warning', title: 'Rank bound to CPUs on another NUMA node than its GPU',
	reads: ['engine.ranks[].affinity'],
	appliesTo: { any: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.ompiMpirun41, 'mpirun --map-by numa / --bind-to core: how Open MPI 4.1 places and binds ranks (round-robin over NUMA nodes; --report-bindings shows it)'),
		src(U.ompiMpirun5, 'the same options in Open MPI 5 (--map-by numa, --bind-to core)'),
		src(U.slurmSrun, 'srun --cpu-bind=cores and --gpu-bind=closest (bind each task to the GPU closest to its CPUs)'),
		src(U.nvidiaSmi, 'nvidia-smi topo -m: the CPU Affinity and NUMA Affinity of each GPU'),
		src(U.sysfsPci, 'numa_node of a PCI device'),
		src(U.sysfsNode, '/sys/devices/system/node/nodeX/cpulist: the CPUs of each NUMA node'),
	],
	fixSummary: "Give each rank CPUs on its GPU's NUMA node: srun --cpu-bind=cores --gpu-bind=closest, or with mpirun choose each rank's GPU from its binding (or bind it to its GPU's node); mpirun --map-by numa alone can cause the mismatch, since it spreads local ranks over NUMA nodes while local_rank % ngpus picks GPUs in order; check with mpirun --report-bindings and nvidia-smi topo -m.",
	evaluate(facts) {
		const ranks = (facts.engine?.ranks ?? []).filter((r) => r.affinity !== null);
		const remote = ranks.filter((r) => r.affinity!.judgement.verdict === 'remote');
		if (remote.length > 0) {
			const shown = remote.slice(0, 4).map((r) => r.affinity!.judgement.text).join('; ');
			return [finding(this, `${shown}${remote.length > 4 ? `; and ${remote.length - 4} more rank(s)` : ''}. Every copy between such a rank and its GPU (cudaMemcpy, MPI staging through host memory, pinned buffers) crosses the CPU interconnect, and the host memory it allocates lands on the wrong node.`,
				remote.slice(0, 3).flatMap((r) => r.affinity!.evidence), { ...AFFINITY_FIX })];
		}
		const loose = ranks.filter((r) => r.affinity!.judgement.verdict === 'unbound' || r.affinity!.judgement.verdict === 'spans');
		if (loose.length > 0) {
			return [finding(this, `${loose.slice(0, 4).map((r) => r.affinity!.judgement.text).join('; ')}${loose.length > 4 ? `; and ${loose.length - 4} more rank(s)` : ''}. Not wrong in itself, but nothing keeps the rank next to its GPU.`,
				loose.slice(0, 2).flatMap((r) => r.affinity!.evidence), { ...AFFINITY_FIX }, 'info')];
		}
		return [];
	},
};

const HIDDEN = /^\s*$|^-1$|^NoDevFiles$|^none$/i;

const cvdHides: Rule = {
	id: 'cuda-visible-devices-hides-gpus', severity: 'error', title: 'CUDA_VISIBLE_DEVICES hides the GPUs from CUDA',
	reads: ['env.CUDA_VISIBLE_DEVICES', 'engine.ranks[].env.CUDA_VISIBLE_DEVICES', 'engine.ranks[].deviceCount', 'gpu.gpus'],
	appliesTo: { cuda: ALL_VERSIONS },
	verifiedAgainst: [src(U.cudaProgrammingGuide, 'CUDA environment variables: CUDA_VISIBLE_DEVICES lists the devices CUDA applications see; an invalid entry hides it and the devices after it')],
	fixSummary: 'Request GPUs for the job step (srun --gres=gpu:N; Slurm then sets CUDA_VISIBLE_DEVICES), or list real device indices/UUIDs; do not simply unset a value a scheduler set to keep the job off GPUs it did not request.',
	evaluate(facts) {
		const out: Finding[] = [];
		const smiGpus = facts.gpu.gpus.length;
		const ranks = facts.engine?.ranks ?? [];
		for (const s of envSettings(facts, 'CUDA_VISIBLE_DEVICES')) {
			if (!HIDDEN.test(s.value)) { continue; }
			// Only the collector's shell had it, and every rank saw devices: the ranks did not get it (no claim).
			if (s.origin === 'collector environment' && ranks.length > 0 && ranks.every((r) => r.deviceCount.value > 0)) { continue; }
			out.push(finding(this, `CUDA_VISIBLE_DEVICES=${JSON.stringify(s.value)} (${s.origin}) leaves CUDA no device at all${smiGpus > 0 ? `, although nvidia-smi (which ignores the variable) lists ${smiGpus} GPU(s)` : ''}: cudaGetDeviceCount returns 0 or "no CUDA-capable device is detected", and a CUDA-aware MPI has nothing to work with.`,
				ev(s.evidence, facts.gpu.gpus[0]?.evidence), { text: 'Request GPUs for the job step so the scheduler sets it (where a site or an old Slurm set it to hide GPUs the job did not ask for, unsetting it would put the job on other jobs\' GPUs).', command: 'srun --gres=gpu:<GPUs per node> ...   # the step gets CUDA_VISIBLE_DEVICES from Slurm' }, smiGpus > 0 ? 'error' : 'warning'));
			return out;
		}
		// No variable seen, but the ranks saw no device while nvidia-smi did.
		const blind = (facts.engine?.ranks ?? []).find((r) => r.driverLoaded.value && r.deviceCount.value === 0);
		if (blind && smiGpus > 0) {
			const cvd = blind.env.find((e) => e.name === 'CUDA_VISIBLE_DEVICES');
			// A loaded driver whose cuInit failed for another reason (a driver / library mismatch, a missing
			// /dev/nvidia-uvm, …) also leaves 0 devices: then that error is the cause, not the variable.
			if (!cvd && blind.cudaError !== '' && !/NO_DEVICE|no CUDA devices|no CUDA-capable device/i.test(blind.cudaError)) {
				out.push(finding(this, `Rank ${blind.rank} loaded the CUDA driver but saw 0 devices, while nvidia-smi lists ${smiGpus}: CUDA said "${blind.cudaError}", which is the cause here, not CUDA_VISIBLE_DEVICES (the rank had none).`,
					ev(blind.deviceCount.evidence, facts.gpu.gpus[0]?.evidence), { text: 'Fix what that CUDA error names (driver and CUDA library versions, the /dev/nvidia* device files in a container), then inspect again.', command: 'nvidia-smi; ls -l /dev/nvidia*' }, 'warning'));
				return out;
			}
			out.push(finding(this, `Rank ${blind.rank} loaded the CUDA driver but saw 0 devices, while nvidia-smi lists ${smiGpus}: the rank's CUDA_VISIBLE_DEVICES${cvd ? `=${cvd.value}` : ' (or a container/cgroup device filter)'} hides them.`,
				ev(blind.deviceCount.evidence, cvd?.evidence, facts.gpu.gpus[0]?.evidence), { text: 'Check what the launcher exports to ranks.', command: 'mpirun -np 1 env | grep CUDA_VISIBLE_DEVICES' }));
		}
		return out;
	},
};

/** Ranks per (host, device) from the engine, or the local size from its environment. */
function ranksPerGpu(facts: Facts): { count: number; evidence: Evidence[] } {
	const ranks = facts.engine?.ranks ?? [];
	const groups = new Map<string, typeof ranks>();
	for (const r of ranks) {
		if (r.selectedDevice < 0) { continue; }
		// The physical GPU (its UUID): with per-rank CUDA_VISIBLE_DEVICES every rank's device 0 is another GPU.
		const uuid = r.devices[r.selectedDevice]?.uuid;
		const k = uuid ? `uuid#${uuid}` : `${r.host}#${r.selectedDevice}`;
		groups.set(k, [...(groups.get(k) ?? []), r]);
	}
	let best: typeof ranks = [];
	for (const g of groups.values()) { if (g.length > best.length) { best = g; } }
	return { count: best.length, evidence: best.slice(0, 2).map((r) => ({ source: 'engine', line: `ranks[${ranks.indexOf(r)}]: host ${r.host}, selected_device ${r.selectedDevice}` })) };
}

const exclusiveMode: Rule = {
	id: 'gpu-compute-mode-exclusive', severity: 'error', title: 'GPU compute mode allows one process, several ranks share the GPU',
	reads: ['gpu.gpus[].computeMode', 'engine.ranks[].selectedDevice', 'engine.ranks[].host'],
	appliesTo: { cuda: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.nvidiaSmi, '-c / --compute-mode: EXCLUSIVE_PROCESS allows only one context per device, PROHIBITED none'),
		src(U.cudaMps, 'CUDA MPS: client processes share a GPU through one MPS server, also in exclusive mode'),
	],
	fixSummary: 'Run one rank per GPU, use CUDA MPS (a job-private pipe directory), or ask the admin for compute mode Default on that GPU (nvidia-smi -i <bus id> -c DEFAULT).',
	evaluate(facts) {
		const gpus = facts.gpu.gpus.filter((g) => g.computeMode && /exclusive|prohibited/i.test(g.computeMode.value));
		if (gpus.length === 0) { return []; }
		const g = gpus[0];
		const mode = g.computeMode?.value ?? '';
		const share = ranksPerGpu(facts);
		if (/prohibited/i.test(mode)) {
			return [finding(this, `GPU ${g.pciBusId} is in compute mode ${mode}: no process can create a CUDA context on it.`, ev(g.computeMode?.evidence), { text: 'Have the compute mode of that GPU set back to Default (root; the site may have set it on purpose).', command: `nvidia-smi -i ${g.pciBusId} -c DEFAULT   # needs root` })];
		}
		if (share.count > 1) {
			// The engine records a selected device only once its context exists: these ranks held contexts on one
			// exclusive-mode GPU at the same time, which only CUDA MPS allows (or the nvidia-smi snapshot is of another time).
			return [finding(this, `GPU ${g.pciBusId} is in compute mode ${mode}, and ${share.count} ranks held a CUDA context on that one GPU at the same time: only CUDA MPS allows that (the setup NVIDIA recommends for sharing an exclusive-mode GPU), so MPS was serving them, or the nvidia-smi output is from another moment. Without MPS, every rank after the first fails with "CUDA-capable device(s) is/are busy or unavailable" ("all CUDA-capable devices are busy or unavailable" in older CUDA).`,
				ev(g.computeMode?.evidence, ...share.evidence), { text: 'Keep MPS running for jobs that share this GPU, or run one rank per GPU.', command: 'nvidia-smi -q | grep -E "Compute Mode|MPS"' }, 'info')];
		}
		return [finding(this, `GPU ${g.pciBusId} is in compute mode ${mode}: only one process may hold a context on it at a time. Two ranks on this GPU fail (the second with "CUDA-capable device(s) is/are busy or unavailable") unless CUDA MPS is running.`,
			ev(g.computeMode?.evidence), { text: 'Launch at most one rank per GPU (or use CUDA MPS with a pipe directory of the job).', command: 'nvidia-smi -q | grep "Compute Mode"' }, 'info')];
	},
};

const migEnabled: Rule = {
	id: 'gpu-mig-enabled', severity: 'warning', title: 'MIG is enabled: no CUDA IPC or peer access between instances',
	reads: ['gpu.gpus[].migMode'],
	appliesTo: { cuda: '>=11.0' },
	verifiedAgainst: [src(U.migUserGuide, 'MIG user guide: CUDA IPC and peer-to-peer between GPU instances are not supported; each process sees its instance')],
	fixSummary: 'Use whole GPUs for communication-heavy MPI jobs, or expect host-staged transfers between MIG GPU instances; under ob1 set btl_smcuda_use_cuda_ipc_same_gpu 0 (smcuda takes every instance for "device 0" and may try CUDA IPC).',
	evaluate(facts) {
		const migs = facts.gpu.gpus.filter((g) => g.migMode && /^enabled$/i.test(g.migMode.value));
		if (migs.length === 0) { return []; }
		return [finding(this, `${migs.length} GPU(s) run in MIG mode (${migs.map((g) => g.pciBusId).join(', ')}). CUDA IPC does not work between GPU instances, and each process sees only its own instance, as its device 0. UCX's cuda_ipc then finds the peer unreachable and stages through host memory; Open MPI's smcuda (ob1) takes two ranks that both report device 0 for ranks on one GPU and tries CUDA IPC, which can abort the run (the failure of open-mpi/ompi#11949 with one GPU per rank; inferred for MIG from the same code path, not measured).`,
			ev(...migs.slice(0, 3).map((g) => g.migMode?.evidence)), { text: 'Use full GPUs (MIG disabled) for ranks that exchange GPU buffers; under ob1 keep smcuda from trying CUDA IPC between instances.', command: 'mpirun --mca btl_smcuda_use_cuda_ipc_same_gpu 0 ...   # ob1; UCX stages by itself' })];
	},
};

/** GPU platform rules. */
export const platformRules: Rule[] = [cvdHides, exclusiveMode, gpuNicNuma, rankGpuNuma, migEnabled];
