/**
 * The node-level reduction the panel sends to its webview (extension/shared/mapOverview.ts), the drill-downs and the
 * pair look-up, on maps built here (medians of several pairs per node pair, failed cells, classes side by side) and
 * on the 1 024-rank fixture; and the live model of a running map (extension/shared/mapLive.ts) fed the REAL streamed
 * output of the engine (test-fixtures/map/stream) through the runner's own stream reader.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { MapStreamReader, type MapStreamRecord } from '../../extension/core/map/mapStream';
import { MapLiveModel, Throttle } from '../../extension/shared/mapLive';
import { buildOverview, mapDrill, MapPairIndex, nodeIndex } from '../../extension/shared/mapOverview';
import { validateMapDocument, type MapDocument, type MapPair, type MapRank, type MapRoundRecord } from '../../extension/shared/mapSchema';

const FIXTURES = path.resolve(process.cwd(), 'test-fixtures', 'map');

function rank(n: number, host: string): MapRank {
	return { rank: n, host, pid: 1000 + n, local_rank: 0, cpus: [0], cpu_list: '0', gpu: null, nics: [], peermem: { loaded: false, module: '' } };
}

function pair(a: number, b: number, bw: number | null, over: Partial<MapPair> = {}): MapPair {
	return { a, b, same_host: false, class: 'host_memory', reason: 'r', evidence: [], status: bw === null ? 'timeout' : 'ok', bandwidth_gbps: bw, latency_us: 10, channel: 'network', ...over };
}

function doc(ranks: MapRank[], pairs: MapPair[]): MapDocument {
	const d = {
		schema: 'gpumpi.map/1', tool: { name: 'gpumpi', version: '0' },
		options: { pairs: 'all', max_ranks: 16, large_bytes: 1 << 20, small_bytes: 8, iters: 5, latency_iters: 20, memory: 'host' },
		memory: 'host', gpu_unavailable_reason: null, mpi: { library_version: 'Open MPI v4.1.4, package: x', implementation: 'openmpi', cuda_aware: { compile_time: false, run_time: false, query: '' } },
		world_size: ranks.length, sampled: false, total_pairs: ranks.length * (ranks.length - 1) / 2, setup_error: null, ranks, pairs, errors: [],
	};
	const v = validateMapDocument(d);
	assert.ok(typeof v !== 'string', String(v));
	return v;
}

/** Hosts b, a, c with ranks interleaved (rank order decides node order: b first), every pair measured. */
function threeHosts(): MapDocument {
	const hosts = ['b', 'a', 'c', 'b', 'a', 'c'];
	const ranks = hosts.map((h, i) => rank(i, h));
	const pairs: MapPair[] = [];
	for (let x = 0; x < 6; x++) {
		for (let y = x + 1; y < 6; y++) {
			const same = hosts[x] === hosts[y];
			const bw = same ? 10 + x : hosts[x] === 'c' || hosts[y] === 'c' ? (x === 2 && y === 3 ? null : 1) : 2 + y;
			pairs.push(pair(x, y, bw, same ? { same_host: true, channel: 'shared_memory' } : {}));
		}
	}
	return doc(ranks, pairs);
}

describe('map overview (the node matrix the panel sends)', () => {
	it('nodes in rank order, one cell per node pair and class, medians of several pairs, failed cells', () => {
		const d = threeHosts();
		const o = buildOverview(d);
		assert.deepEqual(o.hosts, ['b', 'a', 'c']);
		assert.deepEqual([...o.rankHost], [0, 1, 2, 0, 1, 2]);
		assert.deepEqual([...o.ranksPerHost], [2, 2, 2]);
		assert.deepEqual(o.layers.map(l => l.label), ['host memory only over network', 'host memory only over shared memory']);
		const [net, shm] = o.layers;
		// Network: b—a (cell 1) has 4 pairs (0-1 3, 0-4 6, 1-3 5, 3-4 6: median 5.5), b—c (2) and a—c (5) 1 GB/s.
		assert.deepEqual([...net.cells], [1, 2, 5]);
		assert.deepEqual([...net.median], [5.5, 1, 1]);
		assert.deepEqual([...net.pairs], [4, 3, 4], 'b—c: 0-2, 0-5, 3-5 measured; 2-3 timed out');
		// Shared memory: the diagonal (0-3 within b: 10, 1-4 within a: 11, 2-5 within c: 12).
		assert.deepEqual([...shm.cells], [0, 4, 8]);
		assert.deepEqual([...shm.median], [10, 11, 12]);
		assert.deepEqual([...o.failedCells], [2], 'the timed-out pair 2-3 marks b—c');
		assert.deepEqual(o.counts, { pairs: 15, measured: 14, failed: 1, notMeasured: 0, skipped: 0 });
		assert.equal(o.bwMin, 1);
		assert.equal(o.bwMax, 12);
		assert.equal(o.header.mpi, 'Open MPI v4.1.4');
	});

	it('drill-down: one node (all its pairs, the worst first) and a node pair (the pairs between them)', () => {
		const d = threeHosts();
		const one = mapDrill(d, ['c']);
		assert.deepEqual(one.doc.ranks.map(r => r.rank), [2, 5]);
		assert.deepEqual(one.doc.pairs.map(p => [p.a, p.b]), [[2, 5]]);
		assert.equal(one.pairs, 9, 'every pair with an end on c');
		assert.deepEqual(one.failed.map(p => [p.a, p.b, p.status]), [[2, 3, 'timeout']]);
		assert.equal(one.worst[0].bandwidth_gbps, 1);
		const net = one.classes.find(c => c.label === 'host memory only over network');
		assert.deepEqual(net, { label: 'host memory only over network', pairs: 8, measured: 7, failed: 1, median: 1, min: 1, max: 1 });
		const two = mapDrill(d, ['b', 'a']);
		assert.deepEqual(two.doc.ranks.map(r => r.rank), [0, 1, 3, 4]);
		assert.equal(two.doc.pairs.length, 6);
		assert.equal(two.pairs, 4, 'the pairs between b and a');
		assert.deepEqual(two.classes.map(c => [c.pairs, c.median]), [[4, 5.5]]);
		assert.ok(typeof validateMapDocument(two.doc) !== 'string', 'a drill-down is a map document the graph can lay out');
		assert.equal(mapDrill(d, ['nowhere']).doc.ranks.length, 0);
	});

	it('pair look-up by sorted keys, either order; null for a pair not in the map', () => {
		const d = threeHosts();
		const ix = new MapPairIndex(d);
		for (const p of d.pairs) { assert.equal(ix.find(p.b, p.a), p); }
		const sampled = { ...d, pairs: d.pairs.filter(p => p.a !== 0) };
		assert.equal(new MapPairIndex(sampled).find(0, 1), null);
	});

	it('the 1 024-rank fixture: 128 nodes, the diagonal within nodes, one sampled pair per node pair', () => {
		const d = validateMapDocument(JSON.parse(fs.readFileSync(path.join(FIXTURES, 'map-1024.json'), 'utf8'))) as MapDocument;
		const t0 = Date.now();
		const o = buildOverview(d);
		const ms = Date.now() - t0;
		assert.equal(o.hosts.length, 128);
		const [intra, inter] = [o.layers.find(l => l.channel === 'shared_memory'), o.layers.find(l => l.channel === 'network')];
		assert.equal(intra?.cells.length, 128);
		assert.ok(intra && [...intra.pairs].every(n => n === 28), 'every pair within a node');
		assert.equal(inter?.cells.length, 128 * 127 / 2);
		assert.ok(inter && [...inter.pairs].every(n => n === 1), 'one representative pair per node pair');
		assert.ok(ms < 5000, `${ms} ms`);
		assert.equal(nodeIndex(d).rankHost[1023], 127);
	});
});

/** The records of a captured engine stdout, in order. */
function records(file: string): MapStreamRecord[] {
	const reader = new MapStreamReader();
	const out: MapStreamRecord[] = [];
	for (const line of fs.readFileSync(path.join(FIXTURES, 'stream', file), 'utf8').split('\n')) { out.push(...reader.push(line)); }
	return [...out, ...reader.finish()];
}

describe('live map (a run streamed into the panel)', () => {
	it('the real 6-rank run: the plan at once, each round fills its pairs, the end equals the engine\'s document', () => {
		const recs = records('ompi-6-rounds.stdout');
		const plan = recs.find(r => r.kind === 'plan');
		assert.ok(plan?.kind === 'plan');
		const live = new MapLiveModel(plan.plan);
		assert.equal(live.doc.pairs.length, 15);
		assert.ok(live.doc.pairs.every(p => p.status === 'not_measured'));
		assert.equal(buildOverview(live.doc).counts.measured, 0, 'the plan alone: nothing measured yet');
		const seen: number[] = [];
		for (const r of recs) {
			if (r.kind !== 'round') { continue; }
			assert.deepEqual(live.applyRound(r.round), [], 'no failure in this run');
			seen.push(live.progress.measured);
		}
		assert.deepEqual(seen.slice(0, 5), [3, 6, 9, 12, 15], 'three pairs a round');
		const final = recs.find(r => r.kind === 'map');
		assert.ok(final?.kind === 'map');
		const engine = final.doc as MapDocument;
		assert.deepEqual(live.doc.pairs.map(p => [p.a, p.b, p.status, p.bandwidth_gbps]), engine.pairs.map(p => [p.a, p.b, p.status, p.bandwidth_gbps]));
		assert.equal(live.progress.rounds, 5);
		assert.ok(typeof validateMapDocument(live.doc) !== 'string');
	});

	it('failures come with their round; a pair reported again replaces its earlier outcome', () => {
		const plan = records('ompi-6-rounds.stdout').find(r => r.kind === 'plan');
		assert.ok(plan?.kind === 'plan');
		const live = new MapLiveModel(plan.plan);
		const p0 = plan.plan.pairs[0];
		const round = (status: MapRoundRecord['pairs'][number]['status'], bw: number | null): MapRoundRecord => ({
			schema: 'gpumpi.map-round/1', round: 0, rounds: 5, final: false, elapsed_s: 1.5, synchronized: status === 'ok',
			pairs: [{ pair: 0, round: 0, a: p0.a, b: p0.b, status, bandwidth_gbps: bw, latency_us: null, error: status === 'ok' ? null : `rank ${p0.a}: no answer from rank ${p0.b} within 60 s` }],
		});
		const f = live.applyRound(round('timeout', null));
		assert.deepEqual(f.map(x => [x.a, x.b, x.status, x.round]), [[p0.a, p0.b, 'timeout', 0]]);
		assert.deepEqual([live.progress.failed, live.progress.measured, live.progress.synchronized], [1, 0, false]);
		live.applyRound(round('ok', 3.5));
		assert.deepEqual([live.progress.failed, live.progress.measured], [0, 1]);
		assert.equal(live.doc.pairs[0].bandwidth_gbps, 3.5);
		// A record naming another pair under this index is ignored (the plan is the truth).
		live.applyRound({ ...round('ok', 9), pairs: [{ ...round('ok', 9).pairs[0], a: 5, b: 4 }] });
		assert.equal(live.doc.pairs[0].bandwidth_gbps, 3.5);
	});

	it('Throttle: an expensive step at most every max(min, share × its duration)', () => {
		const t = new Throttle(1000, 10);
		assert.ok(t.due(0));
		t.ran(0, 50);
		assert.equal(t.due(1049), false);
		assert.ok(t.due(1050));
		t.ran(2000, 2500);
		assert.equal(t.due(7499), false, '500 ms of work: the next one 5 s later');
		assert.ok(t.due(7500));
	});
});
