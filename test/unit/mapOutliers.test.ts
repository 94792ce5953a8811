/**
 * The anomaly-first analysis of a map (extension/core/map/outliers.ts) on maps built here with the shapes real jobs
 * have (one rank per host on a network; 16 hosts of 4 GPUs and 4 RDMA NICs; a 1 024-rank generated fixture) and
 * numbers that say what the rule must answer: the slow host with its NIC, the NUMA-far NIC of one host, failed ranks,
 * single slow pairs as suspects, too few pairs to judge, latency judged only for pairs measured alone. The real
 * counterparts (a tc-shaped link in the Slurm lab, a killed rank) are test/engine/mapScale.test.ts and
 * test/unit/mapStream.test.ts.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CROWDED_RANKS_PER_CPU, crowding, findOutliers, mad, median, rankNic, renderOutlierLines } from '../../extension/core/map/outliers';
import { validateMapDocument, type MapDocument, type MapNic, type MapPair, type MapRank } from '../../extension/shared/mapSchema';
import { prng as seededRandom } from './prng';

const eth0: MapNic = { name: 'eth0', kind: 'net', numa_node: -1, virtual: true, state: 'up' };
const lo: MapNic = { name: 'lo', kind: 'net', numa_node: -1, virtual: true, state: 'unknown' };

function rank(n: number, host: string, extra: Partial<MapRank> = {}): MapRank {
	return { rank: n, host, pid: 1000 + n, local_rank: 0, cpus: [0], cpu_list: '0', gpu: null, nics: [lo, eth0], peermem: { loaded: false, module: '' }, ...extra };
}

function pair(a: number, b: number, bw: number, over: Partial<MapPair> = {}): MapPair {
	return { a, b, same_host: false, class: 'host_memory', reason: 'r', evidence: [], status: 'ok', bandwidth_gbps: bw, latency_us: 10, channel: 'network', ...over };
}

function doc(ranks: MapRank[], pairs: MapPair[], mode: 'rounds' | 'sequential' = 'rounds'): MapDocument {
	const d = {
		schema: 'gpumpi.map/1', tool: { name: 'gpumpi', version: '0' },
		options: { pairs: 'all', max_ranks: 16, large_bytes: 1 << 20, small_bytes: 8, iters: 5, latency_iters: 20, memory: 'host' },
		memory: 'host', gpu_unavailable_reason: null, mpi: { library_version: 'x', implementation: 'openmpi', cuda_aware: { compile_time: false, run_time: false, query: '' } },
		world_size: ranks.length, sampled: false, total_pairs: ranks.length * (ranks.length - 1) / 2, setup_error: null, ranks, pairs, errors: [],
		schedule: { mode, rounds: 1, max_concurrent_pairs: 1, pair_timeout_s: 60 },
	};
	const v = validateMapDocument(d);
	assert.ok(typeof v !== 'string', String(v));
	return v;
}

/** One rank on each of `n` hosts host-0 … host-(n-1), every pair measured; `bw(a, b)` gives the bandwidth. */
function perHost(n: number, bw: (a: number, b: number) => number): MapDocument {
	const ranks = Array.from({ length: n }, (_, i) => rank(i, `host-${i}`));
	const pairs: MapPair[] = [];
	for (let a = 0; a < n; a++) { for (let b = a + 1; b < n; b++) { pairs.push(pair(a, b, bw(a, b))); } }
	return doc(ranks, pairs);
}

describe('map outliers (anomaly first, against the job\'s own population)', () => {
	it('median and MAD', () => {
		assert.equal(median([3, 1, 2]), 2);
		assert.equal(median([4, 1, 2, 3]), 2.5);
		assert.equal(mad([1, 2, 3, 4, 100]), 1);
		assert.equal(mad([5, 5, 5]), 0);
	});

	it('the NIC of a rank: named by UCX\'s lanes, else the only candidate, else the one on the GPU\'s NUMA node', () => {
		assert.equal(rankNic(rank(0, 'h')), 'eth0', 'lo is never a candidate; a virtual NIC is when it is the only one');
		const ib = (name: string, numa: number): MapNic => ({ name, kind: 'ib', numa_node: numa, virtual: false, state: '' });
		const gpu = (numa: number): MapRank['gpu'] => ({ ordinal: 0, name: 'G', uuid: 'GPU-1', pci_bus_id: '0000:18:00.0', numa_node: numa, peers: [] });
		const r = rank(0, 'h', { nics: [lo, eth0, ib('mlx5_0', 0), ib('mlx5_1', 1)], gpu: gpu(1) });
		assert.equal(rankNic(r), 'mlx5_1');
		assert.equal(rankNic(r, ['rc_mlx5/mlx5_0:1']), 'mlx5_0', 'what UCX used wins');
		assert.equal(rankNic(rank(0, 'h', { nics: [lo, eth0, ib('mlx5_0', 0), ib('mlx5_1', 0)], gpu: gpu(1) })), null, 'two RDMA NICs, none near the GPU: unknown');
	});

	it('ranks sharing CPUs: named up to ' + CROWDED_RANKS_PER_CPU + ' per CPU with the condition in the headline; beyond, speed findings held back, failures still named', () => {
		const rnd = seededRandom(11);
		const slow = (): MapDocument => perHost(8, (a, b) => (a === 2 || b === 2 ? 0.048 : 0.6) * (0.75 + 0.5 * rnd()));
		const crowd = (d: MapDocument, perCpu: number | undefined, reason: string): MapDocument => {
			const wait = { mode: 'nap' as const, nap_us: 50, oversubscribed_ranks: d.ranks.map(r => r.rank), reason, ...(perCpu === undefined ? {} : { ranks_per_cpu: perCpu }) };
			return { ...d, schedule: { mode: 'rounds', rounds: 7, max_concurrent_pairs: 4, pair_timeout_s: 60, ...d.schedule, wait } };
		};
		// 4 per CPU (the Slurm lab's 8 ranks on 2 CPUs): named, and the headline says under which condition.
		const four = findOutliers(crowd(slow(), 4, '8 ranks share the 2 CPUs of one machine (kernel boot id x): …'));
		assert.equal(four.outliers[0]?.subject, 'host-2', four.headline);
		assert.match(four.headline, /^node host-2: .* — ranks share CPUs \(4 per CPU\): the timings include the CPU scheduler's share; the rule was seen to hold up to 4 per CPU$/);
		assert.deepEqual(four.held_back, []);
		// 16 per CPU (32 ranks on 2 CPUs): the same slow host is held back, not named.
		const sixteen = findOutliers(crowd(slow(), 16, '32 ranks share the 2 CPUs of one machine (kernel boot id x): …'));
		assert.deepEqual(sixteen.outliers, [], sixteen.headline);
		assert.equal(sixteen.held_back?.[0]?.subject, 'host-2');
		assert.match(sixteen.headline, /^no failure in 28 measured pairs; 1 speed finding held back — speeds not judged: 16 ranks per CPU \(32 ranks share the 2 CPUs/);
		assert.ok(renderOutlierLines(sixteen).some(l => /^ {2}~ held back \(ranks outnumbered the CPUs\): node host-2/.test(l)), renderOutlierLines(sixteen).join('\n'));
		// A map written before ranks_per_cpu: read off the engine's reason.
		assert.equal(crowding(crowd(slow(), undefined, '32 ranks share the 2 CPUs of one machine (kernel boot id x): …'))?.perCpu, 16);
		// Failures are not speeds: a timed-out rank still heads the crowded map.
		const failed = slow();
		failed.pairs = failed.pairs.map(p => p.a === 5 || p.b === 5 ? { ...p, status: 'timeout', bandwidth_gbps: null, latency_us: null, error: 'no answer' } : p);
		const withFailure = findOutliers(crowd(failed, 16, '32 ranks share the 2 CPUs of one machine: …'));
		assert.match(withFailure.headline, /^rank 5 \(host-5\) its pairs failed: 7 pairs/);
		// Spinning ranks (one per CPU or fewer): no caveat, no held_back field.
		const plain = findOutliers(slow());
		assert.equal(plain.caveat, undefined);
		assert.doesNotMatch(plain.headline, /CPU/);
	});

	it('a slow host among 8 (its link shaped): named first, through its NIC, explaining its links; nothing else', () => {
		const rnd = seededRandom(7);
		const d = perHost(8, (a, b) => (a === 2 || b === 2 ? 0.048 : 0.6) * (0.75 + 0.5 * rnd()));
		const r = findOutliers(d);
		assert.equal(r.outliers.length, 1, r.outliers.map(o => o.sentence).join(' | '));
		const f = r.outliers[0];
		assert.deepEqual([f.level, f.subject, f.kind, f.pairs, f.reference_pairs], ['node', 'host-2', 'slow', 7, 21]);
		assert.match(r.headline, /^node host-2: every pair through eth0 at 0\.0\d+ GB\/s vs 0\.\d+ GB\/s median of the other 21 pairs \(spread ×[\d.]+, below 0\.\d+ GB\/s; host memory only over network\)$/);
		assert.ok(f.explains.includes('nic host-2 eth0'), f.explains.join(', '));
		assert.ok(f.facts.some(x => /^rank 2 on host-2; NIC eth0 \(net, virtual, NUMA -1, up\)$/.test(x)), f.facts.join(' | '));
		assert.deepEqual(r.suspects, []);
		assert.match(renderOutlierLines(r)[1], /^ {2}- node host-2: /);
	});

	it('no outlier in an unshaped map whose pairs spread evenly over 2.25x (the CI lab\'s spread); a single pair 3x below is a suspect, not an outlier', () => {
		// 28 pairs from 0.4 to 0.9 GB/s, evenly on a log scale, in a scrambled order.
		const values = Array.from({ length: 28 }, (_, i) => 0.4 * 2.25 ** (((i * 11) % 28) / 27));
		let k = 0;
		const d = perHost(8, () => values[k++]);
		const r = findOutliers(d);
		assert.deepEqual(r.outliers, []);
		assert.match(r.headline, /^no outlier: 28 measured pairs in 1 path class, no node, NIC, GPU or link beyond 3 MAD and 10 % of its class$/);
		d.pairs[5].bandwidth_gbps = 0.2;
		const s = findOutliers(d);
		assert.deepEqual(s.outliers, []);
		assert.equal(s.suspects.length, 1);
		assert.equal(s.suspects[0].level, 'link', 'the link explains its one pair');
		assert.match(s.headline, /; 1 single pair below the rule \(suspects, one measurement each\)$/);
		assert.match(renderOutlierLines(s).join('\n'), /\? suspect \(one pair, measure again before blaming it\): link host-\d — host-\d: /);
	});

	it('16 hosts of 4 GPUs and 4 RDMA NICs: the NUMA-far mlx5_2 of b07 named with its NUMA facts', () => {
		const ib = (name: string, numa: number): MapNic => ({ name, kind: 'ib', numa_node: numa, virtual: false, state: '' });
		const hosts = Array.from({ length: 16 }, (_, i) => `b${String(i).padStart(2, '0')}`);
		const ranks: MapRank[] = [];
		for (const [h, host] of hosts.entries()) {
			for (let g = 0; g < 4; g++) {
				// Every host: mlx5_0/1 on NUMA 0 with GPUs 0/1, mlx5_2/3 on NUMA 1 with GPUs 2/3 — except b07, whose mlx5_2 sits on NUMA 0.
				const nics = [lo, ib('mlx5_0', 0), ib('mlx5_1', 0), ib('mlx5_2', host === 'b07' ? 0 : 1), ib('mlx5_3', 1)];
				ranks.push(rank(h * 4 + g, host, { local_rank: g, nics, gpu: { ordinal: g, name: 'H100', uuid: `GPU-${h}-${g}`, pci_bus_id: `0000:${18 + g}:00.0`, numa_node: g < 2 ? 0 : 1, peers: [] } }));
			}
		}
		const rnd = seededRandom(3);
		// The sampled rounds schedule: host pair (x, y) in round r measured by local rank r mod 4 on both sides.
		const pairs: MapPair[] = [];
		for (let x = 0; x < 16; x++) {
			for (let y = x + 1; y < 16; y++) {
				const g = (x + y) % 4;
				const a = x * 4 + g;
				const b = y * 4 + g;
				const slow = (hosts[x] === 'b07' || hosts[y] === 'b07') && g === 2;
				pairs.push(pair(a, b, (slow ? 11 : 23) * (0.97 + 0.06 * rnd()), { class: 'gpudirect_rdma', transport: { btlAB: null, btlBA: null, ucxLanes: [`rc_mlx5/mlx5_${g}:1`] } }));
			}
		}
		const d = doc(ranks, pairs);
		const r = findOutliers(d);
		const f = r.outliers[0];
		assert.ok(f, r.headline);
		assert.equal(f.level, 'nic', r.headline);
		// Local rank (x + y) mod 4 measures host pair (x, y): rank 30 (b07, GPU 2) measures 3 host pairs. The runner has
		// UCX's lanes of rank a only (transport.ucxLanes): they name mlx5_2 in its 2 pairs with later hosts; as rank b its
		// NIC is inferred from its GPU's NUMA node, which finds mlx5_3 (the NUMA-far placement fools that inference:
		// docs/map-schema.md says so).
		assert.equal(f.pairs, 2);
		assert.match(r.headline, /^node b07: every pair through mlx5_2 at 1\d\.?\d* GB\/s vs 2\d\.?\d* GB\/s median of the other \d+ pairs .*GPUDirect RDMA over network\) — NUMA-far NIC/);
		assert.ok(f.facts.some(x => /^rank 30 on b07; GPU 2 0000:20:00\.0 NUMA 1; NIC mlx5_2 \(ib, NUMA 0\) — NUMA-far from its GPU$/.test(x)), f.facts.join(' | '));
	});

	it('failed ranks first: a rank whose pairs timed out, then single failed pairs', () => {
		const d = perHost(8, () => 0.6);
		for (const p of d.pairs) { if (p.a === 5 || p.b === 5) { Object.assign(p, { status: 'timeout', bandwidth_gbps: null, latency_us: null, error: `rank ${p.a === 5 ? p.b : p.a}: no answer from rank 5 within 60 s (…)` }); } }
		Object.assign(d.pairs[0], { status: 'data_error', error: 'rank 1: the message from rank 0 differs (…)' });
		const r = findOutliers(d);
		assert.equal(r.outliers[0].subject, 'rank 5 (host-5)');
		assert.match(r.outliers[0].sentence, /^rank 5 \(host-5\) its pairs failed: 7 pairs \(7 timeout\) — rank \d: no answer from rank 5 within 60 s/);
		assert.equal(r.outliers[1].subject, '0-1');
		assert.match(r.outliers[1].sentence, /^pair 0-1 \(host-0 — host-1\): data error — rank 1: the message from rank 0 differs/);
	});

	it('latency is judged only where pairs were measured alone (sequential), never under a round\'s load', () => {
		const make = (mode: 'rounds' | 'sequential'): MapDocument => {
			const d = perHost(8, () => 0.6);
			for (const p of d.pairs) { p.latency_us = p.a === 4 || p.b === 4 ? 90 : 10; }
			return doc(d.ranks, d.pairs, mode);
		};
		assert.deepEqual(findOutliers(make('rounds')).outliers, []);
		assert.match(findOutliers(make('rounds')).rule, /latency not judged/);
		const seq = findOutliers(make('sequential'));
		assert.equal(seq.outliers[0]?.kind, 'high_latency');
		assert.match(seq.headline, /^node host-4: latency: every pair through eth0 at 90 µs vs 10 µs median/);
	});

	it('too few pairs to judge: no verdict, and the headline says why', () => {
		const r = findOutliers(perHost(4, (a, b) => (a === 1 || b === 1 ? 0.01 : 1)));
		assert.deepEqual(r.outliers, []);
		assert.match(r.headline, /\(1 class with too few pairs to judge: fewer than 9\)/);
	});

	it('the 1 024-rank generated map (11 712 pairs) is analysed in a few seconds', function () {
		this.timeout(20_000);
		const d = validateMapDocument(JSON.parse(fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures', 'map', 'map-1024.json'), 'utf8')));
		assert.ok(typeof d !== 'string', String(d));
		const t0 = Date.now();
		const r = findOutliers(d);
		const ms = Date.now() - t0;
		assert.ok(ms < 8000, `${ms} ms`);
		assert.ok(r.summaries.length >= 128, 'a summary per host at least');
		console.log(`  [outliers 1024 ranks] ${ms} ms: ${r.headline.slice(0, 160)}`);
	});
});
