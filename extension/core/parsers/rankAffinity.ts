/**
 * A rank's CPU binding against its GPU's NUMA node (issue 16 item 5): reads the `affinity` object the engine writes
 * per rank in `gpumpi map` and `gpumpi inspect` (native/engine/rankAffinity.hh, docs/map-schema.md) and judges which
 * CPUs the rank may run on, which NUMA nodes they belong to, and whether they are local to the GPU it uses (the GPU's
 * sysfs local_cpulist, else the CPUs of its numa_node). Pure: the engine parser (engineJson.ts: the facts), the rule
 * (core/rules/platformRules.ts `rank-gpu-numa-binding`) and the map's text output (core/map/mapAffinity.ts) share it.
 */
import type { RankAffinity, RankGpuLocality, RankNumaNode } from '../../shared/engineSchema';
import type { RankAffinityJudgement } from '../facts';

/** "0-3,8,10-11" → [0,1,2,3,8,10,11] (ascending, unique; malformed parts skipped, ranges capped at 65 536 CPUs). */
export function parseCpuList(text: string): number[] {
	const out = new Set<number>();
	for (const part of text.split(',')) {
		const m = /^\s*(\d+)(?:-(\d+))?\s*$/.exec(part);
		if (!m) { continue; }
		const a = Number(m[1]);
		const b = m[2] === undefined ? a : Number(m[2]);
		if (b < a || b - a >= 65_536) { continue; }
		for (let c = a; c <= b; c++) { out.add(c); }
	}
	return [...out].sort((x, y) => x - y);
}

function isObj(v: unknown): v is Record<string, unknown> {
	return typeof v === 'object' && v !== null && !Array.isArray(v);
}
function str(o: Record<string, unknown>, k: string): string { return typeof o[k] === 'string' ? o[k] as string : ''; }
function int(o: Record<string, unknown>, k: string): number { return typeof o[k] === 'number' && Number.isInteger(o[k]) ? o[k] as number : -1; }

/** The engine's `affinity` object, checked field by field; null when absent (older engines) or not an object. */
export function readRankAffinity(v: unknown): RankAffinity | null {
	if (!isObj(v)) { return null; }
	const nodes: RankNumaNode[] = (Array.isArray(v.numa_nodes) ? v.numa_nodes : []).filter(isObj)
		.map((n) => ({ node: int(n, 'node'), cpulist: str(n, 'cpulist') })).filter((n) => n.node >= 0);
	let gpu: RankGpuLocality | null = null;
	if (isObj(v.gpu)) {
		gpu = { pci_bus_id: str(v.gpu, 'pci_bus_id'), sysfs_path: str(v.gpu, 'sysfs_path'), numa_node: int(v.gpu, 'numa_node'), local_cpulist: str(v.gpu, 'local_cpulist') };
	}
	const cpuNodes = (Array.isArray(v.cpu_numa_nodes) ? v.cpu_numa_nodes : []).filter((n): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 0);
	return { cpu_list: str(v, 'cpu_list'), cpu_numa_nodes: cpuNodes, numa_nodes: nodes, gpu, sysfs_root: str(v, 'sysfs_root'), error: str(v, 'error') };
}

function nodesText(nodes: readonly number[]): string {
	return nodes.length === 0 ? 'no known NUMA node' : `NUMA node${nodes.length > 1 ? 's' : ''} ${nodes.join(',')}`;
}

/** Judge one rank from its `affinity` object (`cpus`: the rank's CPU list when the object lacks one, e.g. map's `cpu_list`). */
export function judgeAffinity(rank: number, host: string, a: RankAffinity, cpuListFallback = ''): RankAffinityJudgement {
	const cpuList = a.cpu_list || cpuListFallback;
	const cpus = parseCpuList(cpuList);
	const nodes = a.numa_nodes.map((n) => ({ node: n.node, cpus: new Set(parseCpuList(n.cpulist)) }));
	const cpuNodes = nodes.length > 0 ? nodes.filter((n) => cpus.some((c) => n.cpus.has(c))).map((n) => n.node) : [...a.cpu_numa_nodes];
	const localCpus = a.gpu ? parseCpuList(a.gpu.local_cpulist) : [];
	let gpuNode: number | null = a.gpu && a.gpu.numa_node >= 0 ? a.gpu.numa_node : null;
	if (gpuNode === null && localCpus.length > 0) {
		const touched = nodes.filter((n) => localCpus.some((c) => n.cpus.has(c)));
		if (touched.length === 1 && nodes.length > 1) { gpuNode = touched[0].node; }
	}
	const lines = [`affinity.cpu_list: ${JSON.stringify(cpuList)}`, `affinity.numa_nodes: ${JSON.stringify(a.numa_nodes)}`];
	if (a.gpu) {
		lines.push(`affinity.gpu: ${JSON.stringify({ pci_bus_id: a.gpu.pci_bus_id, numa_node: a.gpu.numa_node, local_cpulist: a.gpu.local_cpulist })}`);
	}
	if (a.sysfs_root) { lines.push(`affinity.sysfs_root: ${JSON.stringify(a.sysfs_root)} (GPUMPI_TEST_SYSFS_ROOT: a fake sysfs tree, tests only)`); }
	const base = {
		rank, host, cpuList, cpuNodes, gpuBusId: a.gpu?.pci_bus_id ?? null, gpuNode, gpuLocalCpulist: a.gpu ? a.gpu.local_cpulist : null,
		hostNodes: nodes.length, lines, fakeSysfs: a.sysfs_root !== '',
	};
	const who = `rank ${rank} (${host}) may run on CPUs ${cpuList || '?'} (${nodesText(cpuNodes)})`;
	if (!a.gpu) { return { ...base, verdict: 'unknown', text: `${who}; it uses no GPU` }; }
	const gpuWhere = `GPU ${a.gpu.pci_bus_id} is local to CPUs ${a.gpu.local_cpulist || '?'}${gpuNode !== null ? ` (NUMA node ${gpuNode})` : ''}`;
	// Compare with the GPU's own local_cpulist when the kernel gives one, else with the CPUs of its node.
	const local = new Set(localCpus.length > 0 ? localCpus : nodes.find((n) => n.node === gpuNode)?.cpus ?? []);
	if (nodes.length <= 1 && (local.size === 0 || cpus.every((c) => local.has(c)))) {
		return { ...base, verdict: 'single_node', text: `${who}; the host has ${nodes.length === 0 ? 'no NUMA nodes in sysfs' : 'one NUMA node'}, so every CPU is as close to ${a.gpu.pci_bus_id} as any other` };
	}
	if (local.size === 0 || cpus.length === 0) {
		return { ...base, verdict: 'unknown', text: `${who}; sysfs gives GPU ${a.gpu.pci_bus_id} no NUMA node and no local CPUs, so its placement cannot be judged` };
	}
	const inside = cpus.filter((c) => local.has(c));
	if (inside.length === cpus.length) { return { ...base, verdict: 'local', text: `${who}; ${gpuWhere}: bound next to its GPU` }; }
	if (inside.length === 0) { return { ...base, verdict: 'remote', text: `${who}; ${gpuWhere}: none of the rank's CPUs is on its GPU's NUMA node` }; }
	const all = new Set(nodes.flatMap((n) => [...n.cpus]));
	const unbound = all.size > 0 && [...all].every((c) => cpus.includes(c));
	return {
		...base, verdict: unbound ? 'unbound' : 'spans',
		text: `${who}; ${gpuWhere}: ${unbound ? 'the rank is not bound, so the OS may move it off its GPU\'s node' : `the binding spans nodes, ${inside.length} of its ${cpus.length} CPUs are local to the GPU`}`,
	};
}

/** The fix for a rank bound away from its GPU, per launcher. */
export const AFFINITY_FIX = {
	text: 'Give each rank CPUs on its GPU\'s NUMA node. Under Slurm, srun --cpu-bind=cores --gpu-bind=closest picks each task\'s GPU from its CPUs. With mpirun, --map-by numa --bind-to core alone does not do it: it spreads a node\'s ranks over the NUMA nodes (local rank 1 on node 1), and the usual local_rank % ngpus choice can then give that rank a GPU of node 0; choose each rank\'s GPU from its binding (the GPU whose NUMA Affinity in nvidia-smi topo -m matches the rank\'s CPUs), or bind each rank to its GPU\'s node (numactl --cpunodebind). Check with mpirun --report-bindings.',
	command: 'srun --cpu-bind=cores --gpu-bind=closest ...   # mpirun: --report-bindings, then match each rank\'s GPU to its NUMA node (nvidia-smi topo -m)',
} as const;
