/**
 * `gpumpi map` for real: 4 ranks on this host under Debian's Open MPI 4.1.4 (ob1 with the vader and self btls) and
 * MPICH 4.0.2, host memory, through the TypeScript runner (extension/core/map/mapRunner.ts). This machine has no
 * GPU, so every pair is "host memory only" over shared memory, and the Open MPI evidence must name the vader btl.
 * Engines: node scripts/buildNative.mjs --engine-only --all-mpis (a missing engine fails the suite).
 */
import * as assert from 'node:assert/strict';
import { DEFAULT_MAP_OPTIONS, runMap } from '../../extension/core/map/mapRunner';
import { findEngine, type EngineFlavor } from '../../extension/core/native';
import { execute } from '../../extension/core/proc';
import { defaultSpec, type LaunchConfig } from '../../extension/core/launch/launchSpec';
import { extractJsonDocument } from '../../extension/core/parsers/framedDocument';
import { MAP_SCHEMA, validateMapDocument, type MapDocument } from '../../extension/shared/mapSchema';

const TIMEOUT_MS = 90_000;
const HOST_ONLY = { ...DEFAULT_MAP_OPTIONS, large: '1M', iters: 3, memory: 'host' as const };

function enginePath(flavor: EngineFlavor): string {
	const found = findEngine(flavor, {});
	assert.ok(found.path, `engine '${flavor}' not built; tried:\n  ${found.tried.join('\n  ')}\nrun: node scripts/buildNative.mjs --engine-only --all-mpis`);
	return found.path;
}

function assertFourRankHostMap(doc: MapDocument, flavor: string): void {
	assert.equal(doc.schema, MAP_SCHEMA);
	assert.equal(doc.world_size, 4);
	assert.equal(doc.memory, 'host');
	assert.equal(doc.mpi.implementation, flavor);
	assert.equal(doc.ranks.length, 4);
	assert.deepEqual(doc.ranks.map(r => r.rank), [0, 1, 2, 3]);
	const host = doc.ranks[0].host;
	for (const r of doc.ranks) {
		assert.equal(r.host, host);
		assert.ok(r.cpus.length > 0, 'sched_getaffinity gave no CPU');
		assert.ok(r.nics.some(n => n.name === 'lo' && n.virtual), 'the loopback interface is listed as virtual');
		assert.equal(r.gpu, null);
	}
	assert.equal(doc.total_pairs, 6);
	assert.deepEqual(doc.pairs.map(p => `${p.a}-${p.b}`), ['0-1', '0-2', '0-3', '1-2', '1-3', '2-3']);
	for (const p of doc.pairs) {
		assert.equal(p.status, 'ok', `${p.a}-${p.b}: ${p.status}`);
		assert.equal(p.class, 'host_memory');
		assert.equal(p.channel, 'shared_memory');
		assert.ok(p.same_host);
		assert.ok(p.bandwidth_gbps !== null && p.bandwidth_gbps > 0, `bandwidth ${p.bandwidth_gbps}`);
		assert.ok(p.latency_us !== null && p.latency_us > 0 && p.latency_us < 1e6, `latency ${p.latency_us}`);
		assert.ok(p.evidence.some(e => e.startsWith('same host')), p.evidence.join(' | '));
		assert.match(p.reason, /shared memory/);
	}
}

describe('gpumpi map (engine, real MPI, host memory)', function () {
	this.timeout(TIMEOUT_MS + 30_000);

	it('Open MPI ob1 vader: 4 ranks, 6 pairs, host memory over shared memory, btl evidence per pair', async () => {
		const engine = enginePath('openmpi');
		const spec = { ...defaultSpec('openmpi', 'mpirun.openmpi', 4), loopbackOnly: true };
		const config: LaunchConfig = { label: 'ob1 vader', env: [['UCX_NET_DEVICES', 'lo']], mca: [['pml', 'ob1'], ['btl', 'self,vader']], extraArgs: [] };
		const r = await runMap({ engine, spec, config, map: HOST_ONLY, timeoutMs: TIMEOUT_MS });
		assert.ok(r.ok, r.ok ? '' : `${r.error}\n${r.outputTail}`);
		assertFourRankHostMap(r.doc, 'openmpi');
		for (const p of r.doc.pairs) {
			assert.equal(p.transport?.btlAB, 'vader', `${p.a}->${p.b}`);
			assert.equal(p.transport?.btlBA, 'vader', `${p.b}->${p.a}`);
			assert.ok(p.evidence.some(e => e.includes('Open MPI btl: vader')));
		}
		assert.ok(r.doc.runner && r.doc.runner.evidenceLines.some(l => /Using vader btl/.test(l)));
		assert.equal(r.doc.mpi.cuda_aware.run_time, false, 'Debian Open MPI 4.1.4 is not CUDA-aware');
	});

	it('Open MPI with --mca btl tcp,self: the evidence names tcp and the channel is the network', async () => {
		const engine = enginePath('openmpi');
		const spec = { ...defaultSpec('openmpi', 'mpirun.openmpi', 4), loopbackOnly: true };
		const config: LaunchConfig = { label: 'tcp', env: [], mca: [['pml', 'ob1'], ['btl', 'tcp,self']], extraArgs: [] };
		const r = await runMap({ engine, spec, config, map: HOST_ONLY, timeoutMs: TIMEOUT_MS });
		assert.ok(r.ok, r.ok ? '' : `${r.error}\n${r.outputTail}`);
		assert.equal(r.doc.pairs.length, 6);
		for (const p of r.doc.pairs) {
			assert.equal(p.transport?.btlAB, 'tcp');
			assert.equal(p.channel, 'network');
			assert.ok(p.bandwidth_gbps !== null && p.bandwidth_gbps > 0);
		}
	});

	it('MPICH: 4 ranks, 6 pairs, host memory over shared memory', async () => {
		const engine = enginePath('mpich');
		const spec = defaultSpec('mpich', 'mpirun.mpich', 4);
		const r = await runMap({ engine, spec, config: { label: 'mpich', env: [], mca: [], extraArgs: [] }, map: HOST_ONLY, timeoutMs: TIMEOUT_MS });
		assert.ok(r.ok, r.ok ? '' : `${r.error}\n${r.outputTail}`);
		assertFourRankHostMap(r.doc, 'mpich');
	});

	it('--memory device without a GPU falls back to host memory and says why', async () => {
		const engine = enginePath('mpich');
		const r = await execute(['mpirun.mpich', '-np', '2', engine, 'map', '--large', '64K', '--iters', '1', '--json'], { timeoutMs: TIMEOUT_MS }).result;
		const ex = extractJsonDocument(r.stdout);
		assert.ok('json' in ex, r.stderr);
		const doc = validateMapDocument(ex.json);
		assert.ok(typeof doc !== 'string', String(doc));
		assert.equal(doc.memory, 'host');
		assert.equal(doc.options.memory, 'device');
		assert.match(doc.gpu_unavailable_reason ?? '', /libcuda|GPU|cuInit/);
		assert.equal(doc.pairs.length, 1);
	});

	it('--plan: all pairs up to --max-ranks, else every intra-host pair plus one pair per host pair (the engine\'s own selection)', async () => {
		const engine = enginePath('openmpi');
		type Plan = { sampled: boolean; schedule: string; pairs: Array<[number, number]>; rounds: number[][] };
		const plan = async (...args: string[]): Promise<Plan> => {
			const r = await execute([engine, 'map', ...args], { timeoutMs: 10_000 }).result;
			assert.equal(r.exitCode, 0, r.stderr);
			return JSON.parse(r.stdout) as Plan;
		};
		const all = await plan('--plan', 'a,a,b,b,c');
		assert.equal(all.sampled, false);
		assert.equal(all.schedule, 'sequential', 'auto: all pairs one at a time');
		assert.equal(all.pairs.length, 10);
		// One pair per host pair: the lowest ranks of each one at a time, or the hosts' ranks in turn in rounds (auto when sampled).
		const sequential = await plan('--pairs', 'sampled', '--schedule', 'sequential', '--plan', 'a,a,b,b,c');
		assert.deepEqual(sequential, { sampled: true, schedule: 'sequential', pairs: [[0, 1], [0, 2], [0, 4], [2, 3], [2, 4]], rounds: [[0], [1], [2], [3], [4]] });
		const sampled = await plan('--pairs', 'sampled', '--plan', 'a,a,b,b,c');
		assert.deepEqual(sampled, { sampled: true, schedule: 'rounds', pairs: [[0, 1], [2, 3], [2, 4], [1, 3], [0, 4]], rounds: [[0, 1], [2], [3], [4]] });
		assert.deepEqual(await plan('--max-ranks', '4', '--plan', 'a,a,b,b,c'), sampled, 'more ranks than --max-ranks: sampled');
		const hosts = Array.from({ length: 64 }, (_, i) => `h${Math.floor(i / 8)}`).join(',');
		const big = await plan('--plan', hosts);
		assert.equal(big.pairs.length, 8 * 28 + 28, '8 hosts x 8 ranks: 224 intra-host + 28 host pairs');
	});

	it('usage errors stop before MPI_Init with exit status 2', async () => {
		const engine = enginePath('openmpi');
		for (const bad of [['--pairs', 'some'], ['--large', '0'], ['--large', '2G'], ['--iters', 'x'], ['--memory'], ['--bogus']]) {
			const r = await execute([engine, 'map', ...bad], { timeoutMs: 10_000 }).result;
			assert.equal(r.exitCode, 2, `${bad.join(' ')}: ${r.stderr}`);
			assert.match(r.stderr, /gpumpi map: /);
		}
	});
});
