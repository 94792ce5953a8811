/**
 * What bounds libgpumpi's shm path and the guard's STAGE transfer on the one H200 (issue 13), from the real captures
 * the device scripts returned (docs/device-results.md, "What bounds the shm path" and "The guard's STAGE transfer"):
 *  - test-fixtures/lib/h200-testbed/shm-ceiling-2026-12-03.{json,log}: `bash scripts/testGpu.sh shmCeiling` (2026-12-03
 *    23:08 UTC): `gpumpi bench --modes shm --sizes 1G` at 16M x 4, 8M x 8, 32M x 4, 3 launches each, + one with
 *    `--bind-to none`; each document's limits.pair = the same copies from both ranks (native/cli/benchLimits.cc); then
 *    bench's mpi mode once;
 *  - test-fixtures/guard-stage/h200-testbed/guard-stage-2026-12-03.json: `bash scripts/testGpu.sh guardStage`
 *    (2026-12-03 20:15 UTC): guard_stage --bench, 5 launches without the guard and 5 with GPUMPI_GUARD_STAGE=1.
 * The claims the docs make are computed here from the numbers, so they cannot drift from what was measured.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

const read = (...p: string[]): unknown => JSON.parse(fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures', ...p), 'utf8'));

interface Pair { aloneD2hGBps: number; aloneH2dGBps: number; bothD2hGBps: number; bothH2dGBps: number; bothRegisteredD2hGBps: number; bothRegisteredH2dGBps: number; bothHugeD2hGBps: number; bothHugeH2dGBps: number; bothWholeD2hGBps: number; bothWholeH2dGBps: number }
interface BenchRow { size: number; mode: string; medianGBps: number; verified: boolean; timesS: number[]; extraHostBytes: number }
interface BenchDoc { results: BenchRow[]; limits: { d2hGBps: number; h2dGBps: number; pair: Pair }; failures: number }
interface Ceiling {
	schema: string; facts: { numaNodes: number; shmemThp: string };
	points: Array<{ chunk: string; nbuf: number; launch: number; bind: string; rc: number; doc: BenchDoc }>;
	protoInfo: { benchMpi: { rc: number; doc: BenchDoc }; guardStageNone: { rc: number; ranks: Array<{ rank: number; gbps: number; seconds: number; iters: number; correct: boolean }> } };
}
const ceiling = read('lib', 'h200-testbed', 'shm-ceiling-2026-12-03.json') as Ceiling;
const shmOf = (d: BenchDoc): BenchRow => {
	const r = d.results.find(x => x.mode === 'shm');
	assert.ok(r, 'no shm row');
	return r;
};
const both = (p: Pair) => Math.min(p.bothD2hGBps, p.bothH2dGBps);
const alone = (p: Pair) => Math.min(p.aloneD2hGBps, p.aloneH2dGBps);

describe('H200: what bounds the shm path (real capture, shm-ceiling-2026-12-03)', () => {
	it('10 launches, every one exit 0 with verified data and the two-process limits', () => {
		assert.equal(ceiling.schema, 'gpumpi.gpu.shmCeiling/1');
		assert.deepEqual(ceiling.points.map(p => `${p.chunk}x${p.nbuf}/${p.bind}`), ['16Mx4/default', '16Mx4/default', '16Mx4/default', '8Mx8/default', '8Mx8/default', '8Mx8/default', '32Mx4/default', '32Mx4/default', '32Mx4/default', '16Mx4/none']);
		for (const p of ceiling.points) {
			assert.equal(p.rc, 0);
			assert.equal(p.doc.failures, 0);
			assert.ok(shmOf(p.doc).verified);
			assert.ok(p.doc.limits.pair.bothD2hGBps > 0 && p.doc.limits.pair.bothH2dGBps > 0);
		}
	});

	it('with both directions at once on the one GPU, each direction loses 7-10 %: 95 % of min(D2H, H2D) is out of reach of any scheme here', () => {
		for (const p of ceiling.points) {
			const P = p.doc.limits.pair;
			const r = both(P) / alone(P);
			assert.ok(r > 0.88 && r < 0.95, `${p.chunk}x${p.nbuf} #${p.launch}: both at once / alone = ${r.toFixed(3)}`);
			// not an artefact of chunking or of the slots' memory: whole copies and registered slots meet the same wall
			assert.ok(Math.min(P.bothWholeD2hGBps, P.bothWholeH2dGBps) / alone(P) < 0.95, `whole copies ${P.bothWholeD2hGBps}/${P.bothWholeH2dGBps}`);
			assert.ok(Math.min(P.bothRegisteredD2hGBps, P.bothRegisteredH2dGBps) / alone(P) < 0.95);
		}
	});

	it('the shm path reaches 97-99 % of that two-process ceiling, and never more than it', () => {
		for (const p of ceiling.points) {
			const r = shmOf(p.doc).medianGBps / both(p.doc.limits.pair);
			assert.ok(r >= 0.96 && r <= 1.0, `${p.chunk}x${p.nbuf} #${p.launch}: shm ${shmOf(p.doc).medianGBps} / ceiling ${both(p.doc.limits.pair)} = ${r.toFixed(3)}`);
			const m = shmOf(p.doc).medianGBps / Math.min(p.doc.limits.d2hGBps, p.doc.limits.h2dGBps);
			assert.ok(m > 0.86 && m < 0.9, `shm / min(D2H, H2D) = ${m.toFixed(3)}`);
		}
	});

	it('huge pages and binding cannot be the lever here: shmem THP is off (MADV_HUGEPAGE a no-op), one NUMA node, --bind-to none the same', () => {
		assert.match(ceiling.facts.shmemThp, /\[never\]/);
		assert.equal(ceiling.facts.numaNodes, 1);
		for (const p of ceiling.points) {
			const P = p.doc.limits.pair;
			assert.ok(Math.abs(P.bothHugeD2hGBps / P.bothRegisteredD2hGBps - 1) < 0.03, `huge ${P.bothHugeD2hGBps} vs registered ${P.bothRegisteredD2hGBps}`);
		}
		const def = ceiling.points.filter(p => p.chunk === '16M' && p.bind === 'default').map(p => shmOf(p.doc).medianGBps);
		const none = shmOf(ceiling.points.find(p => p.bind === 'none')!.doc).medianGBps;
		assert.ok(Math.abs(none / Math.max(...def) - 1) < 0.02, `bind none ${none} vs default ${def.join(', ')}`);
	});

	it("UCX's first 1 GiB device message costs ~0.5 s, later ones ~0.03 s: guard_stage's 5-message total (no guard) carries that first cost", () => {
		const mpi = ceiling.protoInfo.benchMpi.doc.results.find(x => x.mode === 'mpi');
		assert.ok(mpi && mpi.verified && mpi.timesS.length === 3);
		assert.ok(mpi.timesS[0] > 10 * Math.max(mpi.timesS[1], mpi.timesS[2]), `times ${mpi.timesS.join(', ')}`);
		const later = (1 << 30) / Math.max(mpi.timesS[1], mpi.timesS[2]) / 1e9;
		assert.ok(later > 30, `steady state ${later.toFixed(1)} GB/s`);
		assert.ok(mpi.extraHostBytes > 900 * (1 << 20), `UCX's staging: +${mpi.extraHostBytes} bytes`);
		const g = ceiling.protoInfo.guardStageNone.ranks.find(r => r.rank === 1);
		assert.ok(g && g.correct && g.iters === 5);
		// 5 messages: one first (~timesS[0]) + 4 steady (~timesS[1..2]) predicts the measured total within 25 %
		const predicted = mpi.timesS[0] + 4 * (mpi.timesS[1] + mpi.timesS[2]) / 2;
		assert.ok(Math.abs(g.seconds / predicted - 1) < 0.25, `guard_stage ${g.seconds} s vs predicted ${predicted.toFixed(3)} s`);
	});
});

interface StageRank { rank: number; gbps: number; correct: boolean; vmHwmKbBefore: number; vmHwmKbAfter: number }
interface StageReport { rank: number; stage: boolean; stageDetail: { stagingBytes: number; peers: Array<{ peer: number; sentMessages: number; sentBytes: number; recvMessages: number; recvBytes: number }>; refused: Record<string, number> } }
interface StageCapture { schema: string; size: number; iters: number; configs: Array<{ name: string; correct: number; trials: Array<{ rc: number; ranks: StageRank[]; reports: StageReport[] }> }> }
const stage = read('guard-stage', 'h200-testbed', 'guard-stage-2026-12-03.json') as StageCapture;
const cfg = (name: string) => {
	const c = stage.configs.find(x => x.name === name);
	assert.ok(c, `no configuration ${name}`);
	return c;
};

describe('H200: the guard STAGE transfer (real capture, guard-stage-2026-12-03)', () => {
	it('STAGE: 5 of 5 launches correct, >= 36 GB/s (UCX steady state on this path), host memory growth far below one message', () => {
		const s = cfg('stage');
		assert.equal(s.trials.length, 5);
		for (const t of s.trials) {
			assert.equal(t.rc, 0);
			for (const r of t.ranks) {
				assert.ok(r.correct);
				assert.ok(r.gbps >= 36, `rank ${r.rank}: ${r.gbps} GB/s`);
				assert.ok(r.vmHwmKbAfter - r.vmHwmKbBefore < 1024, `rank ${r.rank}: +${r.vmHwmKbAfter - r.vmHwmKbBefore} kB`);
			}
			const sender = t.reports.find(r => r.rank === 0);
			assert.ok(sender?.stage);
			assert.equal(sender.stageDetail.stagingBytes, 64 << 20);
			// 5 timed messages of 1 GiB + the 1 MiB warm-up, all staged; nothing refused
			assert.deepEqual(sender.stageDetail.peers.map(p => [p.peer, p.sentMessages, p.sentBytes]), [[1, 6, 5 * stage.size + (1 << 20)]]);
			assert.ok(Object.values(sender.stageDetail.refused).every(n => n === 0));
		}
	});

	it('without the guard: correct, but every rank grows by about a message (UCX staging) and the total carries the first-message cost', () => {
		const n = cfg('none');
		for (const t of n.trials) {
			for (const r of t.ranks) {
				assert.ok(r.correct);
				assert.ok(r.vmHwmKbAfter - r.vmHwmKbBefore > 900 * 1024, `rank ${r.rank}: +${r.vmHwmKbAfter - r.vmHwmKbBefore} kB`);
				assert.ok(r.gbps < 10, `${r.gbps} GB/s over 5 messages`);
			}
			assert.deepEqual(t.reports, []);
		}
	});
});
