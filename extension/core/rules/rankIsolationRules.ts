/**
 * Rules about ranks on one node that cannot reach each other's GPU memory: ranks in different IPC / PID namespaces
 * (containers, `unshare`), and per-rank GPU isolation (CUDA_VISIBLE_DEVICES per task, Slurm --gpus-per-task).
 * Both read what every rank itself reported through the engine (`gpumpi inspect`), grouped by host.
 */
import type { Evidence, Finding } from '../../shared/report';
import type { EngineRankFacts, Facts } from '../facts';
import { ALL_VERSIONS, ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';
import { MEASURED as M } from './measured.generated';

/** Engine ranks grouped by host name (only hosts with two or more ranks). */
function ranksByHost(facts: Facts): Map<string, EngineRankFacts[]> {
	const groups = new Map<string, EngineRankFacts[]>();
	for (const r of facts.engine?.ranks ?? []) { groups.set(r.host, [...(groups.get(r.host) ?? []), r]); }
	for (const [h, g] of groups) { if (g.length < 2) { groups.delete(h); } }
	return groups;
}

/** The first pair of ranks whose namespace of `kind` differs (both readable), or null. */
function splitPair(ranks: EngineRankFacts[], kind: 'ipcNamespace' | 'pidNamespace'): [EngineRankFacts, EngineRankFacts] | null {
	const known = ranks.filter((r) => r[kind]?.value);
	const first = known[0];
	const other = known.find((r) => r[kind]?.value !== first?.[kind]?.value);
	return first && other ? [first, other] : null;
}

const namespacesDiffer: Rule = {
	id: 'ranks-namespaces-differ', severity: 'warning', title: 'Ranks on one node in different IPC / PID namespaces',
	reads: ['engine.ranks[].namespaces.ipc', 'engine.ranks[].namespaces.pid', 'engine.ranks[].host'],
	appliesTo: { ucx: ALL_VERSIONS, cuda: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.ucxIssue10070, 'two containers with one GPU each get no NVLink / PCIe peer path; UCX\'s docs quoted there: the processes must share an IPC namespace, and the maintainer\'s advice is to share the PID namespace too (--pid=container:<first>)'),
		src(U.ucxPr11514, 'UCX cuda_ipc: "Legacy CUDA IPC handles cannot be exchanged across PID namespaces"; a peer in another PID namespace is made unreachable unless both support fabric handles. Merged (commit 12fe22840b) but in no release tag up to v1.22.0'),
		src(U.ucxCudaIpcIface122, 'UCX 1.22.0 uct_cuda_ipc_iface_is_reachable_v2: a peer is reachable on the same machine (system id) or over MNNVL; no PID-namespace test, so released UCX may try CUDA IPC across namespaces', "uct_iface_fill_info_str_buf(params, \"different machine and no MNNVL\");"),
		src(U.ucxIssue4707, 'the "invalid device context" errors from cuda_ipc when IPC handles cannot be used'),
	],
	fixSummary: 'Start all ranks of a node in one container, or give the containers the host\'s namespaces (docker run --ipc=host --pid=host; Kubernetes hostIPC / hostPID or shareProcessNamespace); check with readlink /proc/self/ns/ipc in each rank.',
	evaluate(facts) {
		const out: Finding[] = [];
		for (const [host, ranks] of ranksByHost(facts)) {
			const ipc = splitPair(ranks, 'ipcNamespace');
			const pid = splitPair(ranks, 'pidNamespace');
			if (!ipc && !pid) { continue; }
			const parts: string[] = [];
			const evidence: Evidence[] = [];
			for (const [kind, pair] of [['IPC', ipc], ['PID', pid]] as const) {
				if (!pair) { continue; }
				const key = kind === 'IPC' ? 'ipcNamespace' : 'pidNamespace';
				parts.push(`${kind} (rank ${pair[0].rank}: ${pair[0][key]?.value}, rank ${pair[1].rank}: ${pair[1][key]?.value})`);
				evidence.push(...ev(pair[0][key]?.evidence, pair[1][key]?.evidence));
			}
			out.push(finding(this, `On host ${host} the ranks do not share their ${parts.join(' and ')} namespace. CUDA IPC handles (what UCX's cuda_ipc and Open MPI's smcuda use between ranks of one node) cannot be opened across these namespaces: expect "invalid device context" / cuIpcOpenMemHandle errors, or GPU messages between these ranks staged through host memory or the network. No released UCX (up to 1.22.0) tests for this: it may try CUDA IPC across the namespaces and fail (openucx/ucx#10070); the change that marks such peers unreachable (openucx/ucx#11514) is in no release yet. Recorded here with a rank started under unshare --ipc --pid --fork: the job still ran, so nothing fails visibly until GPU buffers move.`,
				evidence, { text: 'Run the ranks of a node in one set of namespaces.', command: 'docker run --ipc=host --pid=host ...   # or one container per node, all local ranks inside it' }));
		}
		return out;
	},
};

/** A rank's CUDA_VISIBLE_DEVICES entry, if set. */
function cvd(r: EngineRankFacts): { value: string; evidence: Evidence } | null {
	const e = r.env.find((x) => x.name === 'CUDA_VISIBLE_DEVICES');
	return e ? { value: e.value, evidence: e.evidence } : null;
}

/** What a rank can see: device UUIDs when CUDA listed devices, else its CUDA_VISIBLE_DEVICES entries. */
function visibleSet(r: EngineRankFacts): { ids: string[]; by: 'uuid' | 'cvd'; evidence: Evidence[] } | null {
	const uuids = r.devices.map((d) => d.uuid).filter((u) => u !== '');
	if (uuids.length > 0) { return { ids: uuids, by: 'uuid', evidence: r.devices.map((d) => d.evidence) }; }
	const c = cvd(r);
	if (!c) { return null; }
	const ids = c.value.split(',').map((x) => x.trim()).filter((x) => x !== '');
	return ids.length > 0 ? { ids, by: 'cvd', evidence: [c.evidence] } : null;
}

const isolatedPerRank: Rule = {
	id: 'gpu-isolated-per-rank', severity: 'warning', title: 'Each rank sees only its own GPU: no CUDA IPC between them',
	reads: ['engine.ranks[].env.CUDA_VISIBLE_DEVICES', 'engine.ranks[].cuda.devices[].uuid', 'engine.ranks[].env.SLURM_GPUS_PER_TASK', 'engine.ranks[].host'],
	appliesTo: { openmpi: ALL_VERSIONS, ucx: ALL_VERSIONS, slurm: ALL_VERSIONS, cuda: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.ompiIssue11949, 'srun -n 2 --gpus-per-task=1 with Open MPI 4.1.5 (ob1 + smcuda): "The call to cuIpcOpenMemHandle failed"'),
		src(U.climaSlurm54, '--gpus-per-task=1 gives each task CUDA_VISIBLE_DEVICES=0,1,2,3 one each; --gpus=4 shows all four to every task and the IPC error goes'),
		src(U.slurmMpiGuide, 'Slurm launching MPI tasks; GPU binding per task is a Slurm option'),
	],
	fixSummary: 'Show every local rank all the node\'s GPUs (srun --gpus=N or --gpu-bind=none instead of --gpus-per-task) and pick the device per local rank in the application (cudaSetDevice(local_rank % n)).',
	evaluate(facts) {
		const out: Finding[] = [];
		for (const [host, ranks] of ranksByHost(facts)) {
			const sets = ranks.map((r) => ({ r, s: visibleSet(r) })).filter((x): x is { r: EngineRankFacts; s: NonNullable<ReturnType<typeof visibleSet>> } => x.s !== null);
			let pair: [typeof sets[number], typeof sets[number]] | null = null;
			for (let i = 0; i < sets.length && !pair; ++i) {
				for (let j = i + 1; j < sets.length && !pair; ++j) {
					if (sets[i].s.by !== sets[j].s.by) { continue; }
					const a = new Set(sets[i].s.ids);
					if (!sets[j].s.ids.some((x) => a.has(x))) { pair = [sets[i], sets[j]]; }
				}
			}
			if (!pair) { continue; }
			const [a, b] = pair;
			const what = a.s.by === 'uuid' ? 'CUDA lists disjoint devices' : 'CUDA_VISIBLE_DEVICES names disjoint devices';
			const slurm = ranks.map((r) => r.env.find((e) => e.name === 'SLURM_GPUS_PER_TASK')).find((e) => e !== undefined);
			out.push(finding(this, `On host ${host}, ${what} to rank ${a.r.rank} (${a.s.ids.join(',')}) and rank ${b.r.rank} (${b.s.ids.join(',')})${slurm ? ` (SLURM_GPUS_PER_TASK=${slurm.value})` : ''}. Each rank numbers its own GPU as device 0. CUDA itself can open an IPC handle of a GPU the process does not see (cudaIpcOpenMemHandle's documentation; UCX's cuda_ipc relies on it), but where Slurm also limits each task's device access (task/cgroup with ConstrainDevices and per-task GPU binding, which --gpus-per-task implies since Slurm 21.08) the other GPU cannot be opened: open-mpi/ompi#11949 shows "The call to cuIpcOpenMemHandle failed" with srun --gpus-per-task=1 (Open MPI's smcuda also takes the two device 0s for one GPU); otherwise UCX stages the data through host memory.`,
				ev(...a.s.evidence.slice(0, 2), ...b.s.evidence.slice(0, 2), slurm?.evidence),
				{ text: 'Let every local rank reach all GPUs of the node: Slurm 24.05 and later keep one GPU per task but allow access to the others with --gres-flags=allow-task-sharing; older Slurm: --gpus-per-node=N with --gpu-bind=none, and the program selects its GPU (cudaSetDevice(local_rank % N)), or every rank lands on device 0.', command: 'srun --gpus-per-task=1 --gres-flags=allow-task-sharing ...   # Slurm >= 24.05; older: --gpus-per-node=N --gpu-bind=none' }));
		}
		return out;
	},
};

/** Ranks of one host that made the same GPU (by UUID) current, largest group first. */
function sharedGpu(facts: Facts): { host: string; uuid: string; ranks: EngineRankFacts[] } | null {
	let best: { host: string; uuid: string; ranks: EngineRankFacts[] } | null = null;
	for (const [host, ranks] of ranksByHost(facts)) {
		const byUuid = new Map<string, EngineRankFacts[]>();
		for (const r of ranks) {
			const uuid = r.devices[r.selectedDevice]?.uuid;
			if (uuid) { byUuid.set(uuid, [...(byUuid.get(uuid) ?? []), r]); }
		}
		for (const [uuid, g] of byUuid) { if (g.length > 1 && (!best || g.length > best.ranks.length)) { best = { host, uuid, ranks: g }; } }
	}
	return best;
}

const sharedWithoutMps: Rule = {
	id: 'gpu-shared-without-mps', severity: 'info', title: 'Several ranks share one GPU without CUDA MPS',
	reads: ['engine.ranks[].cuda.selected_device', 'engine.ranks[].cuda.devices[].uuid', 'engine.ranks[].mps.control_pipe_exists', 'engine.ranks[].host'],
	appliesTo: { cuda: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.devMps, `H200, Open MPI 5.0.7 + UCX 1.13.1, 2 ranks on one GPU: 8-byte device latency ${M.latencyAsIs.text} without MPS, ${M.latencyMps.text} with nvidia-cuda-mps-control -d`),
		src(U.cudaMps, 'CUDA MPS: client processes share a GPU through one MPS server; CUDA_MPS_PIPE_DIRECTORY, default /tmp/nvidia-mps'),
	],
	fixSummary: 'Start the CUDA MPS control daemon for the job with a job-private CUDA_MPS_PIPE_DIRECTORY (the same for all its ranks; the default directory is shared by every user of the node), or run one rank per GPU.',
	evaluate(facts) {
		const g = sharedGpu(facts);
		if (!g) { return []; }
		const pipes = g.ranks.map((r) => r.mpsControlPipe);
		if (pipes.some((p) => p?.value === true)) { return []; }
		const recorded = pipes.find((p) => p !== null);
		const mpsText = recorded ? `no MPS control pipe at ${recorded.directory}/control` : 'whether an MPS daemon runs was not recorded (the engine predates that field)';
		return [finding(this, `${g.ranks.length} ranks on host ${g.host} (ranks ${g.ranks.map((r) => r.rank).join(', ')}) use the same GPU ${g.uuid}, and ${mpsText}. Without MPS their contexts time-share the GPU: on the H200 the 8-byte device latency between two ranks on one GPU was ${M.latencyAsIs.text}, and ${M.latencyMps.text} with MPS on (docs/device-results.md).`,
			ev(...g.ranks.slice(0, 2).map((r) => r.devices[r.selectedDevice]?.evidence), recorded?.evidence),
			{ text: 'Start MPS for the job with a pipe directory of its own (the default /tmp/nvidia-mps is shared by every user of the node, and a daemon of another user shuts down yours), stop it after; or give each rank its own GPU. Where the site runs MPS (Slurm gres/mps), use that instead. With CUDA_VISIBLE_DEVICES set before the daemon starts, the MPS server renumbers the devices: give it GPU UUIDs, not indices.', command: 'export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-$SLURM_JOB_ID CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log-$SLURM_JOB_ID; nvidia-cuda-mps-control -d   # once per node before the ranks start, the same variables in every rank; after the job: echo quit | nvidia-cuda-mps-control' })];
	},
};

/** Rules about ranks isolated from each other on one node, or crowded onto one GPU. */
export const rankIsolationRules: Rule[] = [namespacesDiffer, isolatedPerRank, sharedWithoutMps];
