// A simulated transport map at scale (issue 36): `hosts` nodes of 8 GPUs (one rank per GPU, 8 RDMA NICs, one NIC
// and one NUMA node per GPU), device memory, a CUDA-aware Open MPI, the engine's sampled schedule in rounds (every pair
// within a node, one pair per pair of nodes, the node's representative rank rotating with the round exactly as
// native/engine/mapSchedule.cc and extension/shared/mapSchedule.ts do), pairs with the engine's own reason and
// evidence strings, and a few PLANTED faults whose findings the outlier code must name — and nothing else:
//   slow node     every network pair of one node at 1/4 (e.g. its HCAs' PCIe link trained down)
//   slow NIC      the NIC of one GPU of another node at 1/4 (400 → 100 Gb/s): its pairs only
//   slow GPU      the NVLink pairs of one GPU at 1/6 (its 7 pairs within its node)
//   silent rank   one rank whose pairs from a round on are timeouts (the partner's error text)
//   slow link     one pair of two nodes at 1/5: a single measurement, a suspect, never an outlier
// Numbers are SYNTHETIC (no 2 048-node machine measured them): p2p 145 GB/s, GPUDirect RDMA 47 GB/s, each times a
// seeded uniform noise of ±4 % (mulberry32): inside the rule's 10 % floor, so only the planted faults cross it.
// Pure (no imports, no I/O): scripts/genMapFixture.mjs --scale writes it, scripts/benchMap.mjs and
// test/unit/mapScale16k.test.ts build it in memory. Pairs share their reason strings; evidence is per pair.

/** mulberry32 (the same as test/unit/prng.ts). */
function prng(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

/** Round-robin tournament of m (circle method), the twin of extension/shared/mapSchedule.ts tournament(). */
function tournament(m) {
	const out = [];
	if (m < 2) { return out; }
	const slots = m % 2 === 0 ? m : m + 1;
	const at = new Array(slots).fill(0);
	for (let r = 0; r < slots - 1; r++) {
		at[0] = 0;
		for (let i = 1; i < slots; i++) { at[i] = 1 + (i - 1 + r) % (slots - 1); }
		const round = [];
		for (let i = 0; i < slots / 2; i++) {
			const x = at[i], y = at[slots - 1 - i];
			if (x >= m || y >= m) { continue; }
			round.push([Math.min(x, y), Math.max(x, y)]);
		}
		out.push(round);
	}
	return out;
}

export const GPUS_PER_NODE = 8;
export const P2P_GBPS = 145;
export const RDMA_GBPS = 47;

const REASON_P2P = 'GPUs on one host with peer access (NVLink or PCIe P2P): CUDA IPC can move data GPU to GPU';
const REASON_RDMA = 'different hosts, RDMA devices and nvidia_peermem on both: the NIC can read and write GPU memory';
const CUDA_HOW = 'MPI CUDA-awareness: MPIX_Query_cuda_support() = 1';
const BUS = ['0000:18:00.0', '0000:2a:00.0', '0000:3a:00.0', '0000:5d:00.0', '0000:9a:00.0', '0000:ab:00.0', '0000:ba:00.0', '0000:db:00.0'];

/** Host name of node h ("node0000"). */
export function nodeName(h) { return `node${String(h).padStart(4, '0')}`; }

/**
 * The planted faults for `hosts` nodes (deterministic; spread over the node range so none shares a node), with the
 * findings the outlier code must report: `outliers` in its order (failures first, then node, NIC, GPU) and `suspects`.
 * Those hold from 64 nodes on (checked at 64, 100, 256 and 2 048): below, a NIC has only hosts/8 network pairs and the
 * planted slow node's partners make some of them outliers too, as the rule says they are.
 */
export function plantedFaults(hosts) {
	if (!(Number.isInteger(hosts) && hosts >= 8)) { throw new Error(`plantedFaults: at least 8 nodes (got ${hosts})`); }
	// Each fault on its own node (a small map would put two on one).
	const used = new Set();
	const at = f => { let h = Math.min(hosts - 1, Math.floor(hosts * f)); while (used.has(h)) { h = (h + 1) % hosts; } used.add(h); return h; };
	const slowNode = at(0.75), nicNode = at(0.38), gpuNode = at(0.59), silentNode = at(0.8), linkA = at(0.05), linkB = at(0.1);
	const nicGpu = 3, slowGpu = 6, silentLocal = 1;
	return {
		slowNode: { host: slowNode, factor: 0.25 },
		slowNic: { host: nicNode, gpu: nicGpu, nic: `mlx5_${nicGpu}`, factor: 0.25 },
		slowGpu: { host: gpuNode, gpu: slowGpu, factor: 1 / 6 },
		// From round 40 (or half-way through a small map's rounds) on, its pairs time out.
		silentRank: { rank: silentNode * GPUS_PER_NODE + silentLocal, fromRound: Math.min(40, Math.floor((GPUS_PER_NODE - 1 + hosts) / 2)) },
		slowLink: { a: linkA, b: linkB, factor: 0.2 },
		expected: {
			outliers: [
				{ level: 'rank', kind: 'failed', subject: `rank ${silentNode * GPUS_PER_NODE + silentLocal} (${nodeName(silentNode)})` },
				{ level: 'node', kind: 'slow', subject: nodeName(slowNode) },
				{ level: 'nic', kind: 'slow', subject: `${nodeName(nicNode)} mlx5_${nicGpu}` },
				{ level: 'gpu', kind: 'slow', subject: `${nodeName(gpuNode)} GPU ${slowGpu} (${BUS[slowGpu]})` },
			],
			suspects: [{ level: 'link', kind: 'slow', subject: `${nodeName(linkA)} — ${nodeName(linkB)}` }],
		},
	};
}

function rankRecord(r, hosts) {
	const h = Math.floor(r / GPUS_PER_NODE), g = r % GPUS_PER_NODE, host = nodeName(h);
	const nics = [
		{ name: 'eth0', kind: 'net', numa_node: 0, virtual: false, state: 'up' },
		...BUS.map((_, i) => ({ name: `mlx5_${i}`, kind: 'ib', numa_node: i, virtual: false, state: 'up' })),
		{ name: 'lo', kind: 'net', numa_node: -1, virtual: true, state: 'unknown' },
	];
	return {
		rank: r, host, pid: 200000 + (r % 65536), local_rank: g, cpus: [g * 12, g * 12 + 1], cpu_list: `${g * 12}-${g * 12 + 1}`,
		gpu: {
			ordinal: g, name: 'NVIDIA H100 80GB HBM3', uuid: `GPU-${String(h).padStart(8, '0')}-5e6d-4c3b-${String(g).padStart(4, '0')}-00000000${String(hosts).padStart(4, '0')}`,
			pci_bus_id: BUS[g], numa_node: g, peers: BUS.map((b, i) => ({ ordinal: i, pci_bus_id: b, can_access_peer: true })).filter(p => p.ordinal !== g),
		},
		nics, peermem: { loaded: true, module: 'nvidia_peermem' },
	};
}

/**
 * The whole document (gpumpi.map/1 as the runner writes it, `outliers` not yet added) for `hosts` nodes of 8 ranks.
 * `options.seed` changes the noise. 2 048 nodes: 16 384 ranks, 57 344 + 2 096 128 pairs.
 */
export function generateScaleMap(hosts = 2048, options = {}) {
	const rnd = prng(options.seed ?? 36);
	const faults = plantedFaults(hosts);
	const n = hosts * GPUS_PER_NODE;
	const ranks = Array.from({ length: n }, (_, r) => rankRecord(r, hosts));
	const pairs = [];
	let round = 0;
	const noise = () => 0.96 + 0.08 * rnd();
	const silent = faults.silentRank.rank;
	const hostOf = r => Math.floor(r / GPUS_PER_NODE);
	const push = (a, b) => {
		const ha = hostOf(a), hb = hostOf(b), same = ha === hb, A = nodeName(ha), B = nodeName(hb);
		let bw = (same ? P2P_GBPS : RDMA_GBPS) * noise();
		if (same && ha === faults.slowGpu.host && (a % GPUS_PER_NODE === faults.slowGpu.gpu || b % GPUS_PER_NODE === faults.slowGpu.gpu)) { bw *= faults.slowGpu.factor; }
		if (!same && (ha === faults.slowNode.host || hb === faults.slowNode.host)) { bw *= faults.slowNode.factor; }
		if (!same && ((ha === faults.slowNic.host && a % GPUS_PER_NODE === faults.slowNic.gpu) || (hb === faults.slowNic.host && b % GPUS_PER_NODE === faults.slowNic.gpu))) { bw *= faults.slowNic.factor; }
		if (!same && ((ha === faults.slowLink.a && hb === faults.slowLink.b) || (ha === faults.slowLink.b && hb === faults.slowLink.a))) { bw *= faults.slowLink.factor; }
		const evidence = same
			? [`same host ${A}`, CUDA_HOW, `cuDeviceCanAccessPeer(${BUS[a % GPUS_PER_NODE]} -> ${BUS[b % GPUS_PER_NODE]}) = 1`]
			: [`hosts ${A} and ${B}`, CUDA_HOW, `nvidia_peermem: loaded on ${A}, loaded on ${B}`, `RDMA devices: 8 on ${A}, 8 on ${B}`];
		const p = { a, b, round, same_host: same, class: same ? 'p2p' : 'gpudirect_rdma', reason: same ? REASON_P2P : REASON_RDMA, evidence, status: 'ok', bandwidth_gbps: bw, latency_us: (same ? 2.9 : 3.8) * noise(), channel: same ? 'shared_memory' : 'network' };
		if ((a === silent || b === silent) && round >= faults.silentRank.fromRound) {
			const other = a === silent ? b : a;
			Object.assign(p, { status: 'timeout', bandwidth_gbps: null, latency_us: null, error: `rank ${other}: no answer from rank ${silent} within 60 s (round ${round})` });
		}
		pairs.push(p);
	};
	// The engine's sampled schedule: the node-local tournaments' round k together, then one round per round of the nodes' tournament.
	const local = tournament(GPUS_PER_NODE);
	const byPair = (p, q) => p[0] - q[0] || p[1] - q[1];
	for (const lr of local) {
		const rp = [];
		for (let h = 0; h < hosts; h++) { for (const [x, y] of lr) { rp.push([h * GPUS_PER_NODE + x, h * GPUS_PER_NODE + y]); } }
		for (const [a, b] of rp.sort(byPair)) { push(a, b); }
		round++;
	}
	tournament(hosts).forEach((hr, k) => {
		const rp = hr.map(([x, y]) => { const a = x * GPUS_PER_NODE + k % GPUS_PER_NODE, b = y * GPUS_PER_NODE + k % GPUS_PER_NODE; return [Math.min(a, b), Math.max(a, b)]; });
		for (const [a, b] of rp.sort(byPair)) { push(a, b); }
		round++;
	});
	return {
		schema: 'gpumpi.map/1', tool: { name: 'gpumpi', version: '0.1.0' },
		options: { pairs: 'sampled', max_ranks: 16, large_bytes: 67108864, small_bytes: 8, iters: 5, latency_iters: 20, memory: 'device', schedule: 'auto', pair_timeout_s: 60 },
		memory: 'device', gpu_unavailable_reason: null,
		mpi: { library_version: 'Open MPI v5.0.7, package: Open MPI root@vm Distribution, ident: 5.0.7, repo rev: v5.0.7, Feb 14, 2025', implementation: 'openmpi', cuda_aware: { compile_time: true, run_time: true, query: 'MPIX_Query_cuda_support' } },
		world_size: n, sampled: true, total_pairs: n * (n - 1) / 2, setup_error: null,
		schedule: { mode: 'rounds', rounds: round, max_concurrent_pairs: Math.max(hosts * local[0].length, Math.floor(hosts / 2)), pair_timeout_s: 60 },
		ranks, pairs, errors: [],
		generated: {
			by: 'scripts/mapScaleGen.mjs',
			from: `simulated: ${hosts} nodes x ${GPUS_PER_NODE} GPUs, seed ${options.seed ?? 36}`,
			note: `synthetic numbers (p2p ${P2P_GBPS} GB/s, GPUDirect RDMA ${RDMA_GBPS} GB/s, +-4 % noise) with planted faults: slow node ${nodeName(faults.slowNode.host)}, slow NIC ${nodeName(faults.slowNic.host)} ${faults.slowNic.nic}, slow GPU ${nodeName(faults.slowGpu.host)} GPU ${faults.slowGpu.gpu}, silent rank ${silent}, slow link ${nodeName(faults.slowLink.a)} — ${nodeName(faults.slowLink.b)}`,
		},
	};
}
