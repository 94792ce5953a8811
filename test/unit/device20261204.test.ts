/**
 * The H200 captures of 2026-12-04 (two device calls, two machines of the same kind; docs/device-results.md,
 * "2026-12-04: per-message STAGE times, a second machine, and UCX's memory-type-qualified fragment settings"):
 *  - guard-stage/h200-testbed/guard-stage-2026-12-04.json: `TRIALS=5 SWEEP=0 bash scripts/testGpu.sh guardStage`
 *    (06:15 UTC), guard_stage --bench now with per-message `timesS`;
 *  - lib/h200-testbed/shm-ceiling-2026-12-04.json: `CEIL_POINTS=16M:4 CEIL_LAUNCHES=2 … shmCeiling` (06:23 UTC);
 *  - repro/h200-testbed/guard-sh-2026-12-04.json, guard-cli-2026-12-04.json: the seed's IPC pattern under the guard;
 *  - repro/h200-testbed/experiments-rndv2-2026-12-04.json: `EXP=rndv2 … experiments` (06:27 UTC), repro fallback
 *    per UCX rendezvous setting in the memory-type-qualified forms UCX 1.13 accepts.
 * The claims the docs make from them are computed here, so they cannot drift from what was measured.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { mergeGuardReports } from '../../extension/core/guard/guardMerge';
import type { ReproFallbackReport } from '../../extension/shared/reproSchema';

const read = (...p: string[]): unknown => JSON.parse(fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures', ...p), 'utf8'));
const GiB = 1 << 30;
const MiB = 1 << 20;
const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };

interface StageRank { rank: number; gbps: number; correct: boolean; vmHwmKbBefore: number; vmHwmKbAfter: number; timesS: number[] }
interface StageCapture { configs: Array<{ name: string; trials: Array<{ rc: number; ranks: StageRank[]; reports: Array<{ rank: number; stage: boolean }> }> }> }
const stage = read('guard-stage', 'h200-testbed', 'guard-stage-2026-12-04.json') as StageCapture;
const receivers = (name: string): StageRank[] => {
	const c = stage.configs.find(x => x.name === name);
	assert.ok(c, `no configuration ${name}`);
	assert.equal(c.trials.length, 5);
	return c.trials.map(t => { assert.equal(t.rc, 0); const r = t.ranks.find(x => x.rank === 1); assert.ok(r); return r; });
};

describe('H200 2026-12-04: STAGE per message (real capture, guard-stage-2026-12-04)', () => {
	it('every launch correct; 5 timed 1 GiB messages per launch on the receiver', () => {
		for (const name of ['none', 'stage']) {
			for (const r of receivers(name)) { assert.ok(r.correct, name); assert.equal(r.timesS.length, 5, name); }
		}
	});

	it("without the guard, UCX's first 1 GiB message takes 0.86-1.17 s and the later ones ~0.03 s: the 5-message total is that first cost", () => {
		for (const r of receivers('none')) {
			const [first, ...rest] = r.timesS;
			assert.ok(first > 20 * Math.max(...rest), `times ${r.timesS.join(', ')}`);
			assert.ok(GiB / Math.max(...rest) / 1e9 > 30, `steady ${r.timesS.join(', ')}`);
			assert.ok(r.vmHwmKbAfter - r.vmHwmKbBefore > 900 * 1024, `+${r.vmHwmKbAfter - r.vmHwmKbBefore} kB`);
		}
	});

	it('STAGE has no first-message cost (staging taken at MPI_Init) and each message beats UCX steady state by 1.2-1.3x, with < 1 MiB growth', () => {
		const s = receivers('stage'), n = receivers('none');
		for (const r of s) {
			assert.ok(Math.max(...r.timesS) < 1.2 * Math.min(...r.timesS), `times ${r.timesS.join(', ')}`);
			assert.ok(r.vmHwmKbAfter - r.vmHwmKbBefore < 1024);
		}
		const stageMsg = median(s.flatMap(r => r.timesS));
		const ucxSteady = median(n.flatMap(r => r.timesS.slice(1)));
		const ratio = ucxSteady / stageMsg;
		assert.ok(ratio > 1.15 && ratio < 1.4, `STAGE ${(GiB / stageMsg / 1e9).toFixed(1)} GB/s vs UCX steady ${(GiB / ucxSteady / 1e9).toFixed(1)} GB/s: ${ratio.toFixed(2)}x`);
		// and the ranges do not overlap: the slowest STAGE message is faster than the fastest steady UCX one
		assert.ok(Math.max(...s.flatMap(r => r.timesS)) < Math.min(...n.flatMap(r => r.timesS.slice(1))));
	});
});

interface Pair { aloneD2hGBps: number; aloneH2dGBps: number; bothD2hGBps: number; bothH2dGBps: number }
interface Ceiling { points: Array<{ rc: number; doc: { results: Array<{ mode: string; medianGBps: number; verified: boolean }>; limits: { pair: Pair } } }> }
const ceiling = read('lib', 'h200-testbed', 'shm-ceiling-2026-12-04.json') as Ceiling;

describe('H200 2026-12-04: the shm ceiling on a second machine (real capture, shm-ceiling-2026-12-04)', () => {
	it('3 launches at 16M x 4 (one with --bind-to none): shm at 98-99 % of the both-directions ceiling, which is 91 % of min(alone), as on 2026-12-03', () => {
		assert.equal(ceiling.points.length, 3);
		for (const p of ceiling.points) {
			assert.equal(p.rc, 0);
			const shm = p.doc.results.find(r => r.mode === 'shm');
			assert.ok(shm?.verified);
			const P = p.doc.limits.pair;
			const both = Math.min(P.bothD2hGBps, P.bothH2dGBps), alone = Math.min(P.aloneD2hGBps, P.aloneH2dGBps);
			assert.ok(both / alone < 0.95, `both ${both} / alone ${alone}`);
			const r = shm.medianGBps / both;
			assert.ok(r > 0.96 && r <= 1.0, `shm ${shm.medianGBps} / both ${both} = ${r.toFixed(3)}`);
		}
	});
});

interface GuardSh { configs?: unknown; modes?: unknown }
describe('H200 2026-12-04: the seed IPC pattern under the guard (real captures)', () => {
	it('guard.sh: no guard and report mode abort in 4 of 4; report names MPI_Irecv on ranks 1 and 3; fix correct in 4 of 4 (bounced)', () => {
		const log = fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures/repro/h200-testbed/guard-sh-2026-12-04.log'), 'utf8');
		const lines = (mode: string) => log.split('\n').filter(l => l.startsWith(`  ${mode} trial `));
		assert.equal(lines('none').length, 4);
		assert.ok(lines('none').every(l => /rc=134/.test(l)));
		assert.ok(lines('report').every(l => /rc=134/.test(l) && /1:ipc-import-ucx-cuda-ipc:MPI_Irecv/.test(l) && /3:ipc-import-ucx-cuda-ipc:MPI_Irecv/.test(l)));
		assert.equal(lines('fix').length, 4);
		assert.ok(lines('fix').every(l => /rc=0 result=PASS/.test(l) && /MPI_Irecv:bounced.*MPI_Irecv:bounced/.test(l)));
		assert.ok(read('repro', 'h200-testbed', 'guard-sh-2026-12-04.json') as GuardSh);
	});

	it('gpumpi-doctor guard: report mode exits 134 with guard-ipc-import-ucx-cuda-ipc as an error; fix exits 0 with it as info', () => {
		const cli = read('repro', 'h200-testbed', 'guard-cli-2026-12-04.json') as { runs: Array<{ name: string; exit: number; doc: { findings: Array<{ id: string; severity: string }> } }> };
		const runs = (p: string) => cli.runs.filter(r => r.name.startsWith(p));
		assert.equal(runs('report-').length, 4);
		assert.equal(runs('fix-').length, 4);
		for (const r of runs('report-')) {
			assert.equal(r.exit, 134);
			assert.equal(r.doc.findings.find(f => f.id === 'guard-ipc-import-ucx-cuda-ipc')?.severity, 'error');
		}
		for (const r of runs('fix-')) {
			assert.equal(r.exit, 0);
			assert.equal(r.doc.findings.find(f => f.id === 'guard-ipc-import-ucx-cuda-ipc')?.severity, 'info');
			assert.ok(!r.doc.findings.some(f => f.severity === 'error'), r.name);
		}
	});
});

type Run = { name: string; exit: number; doc: ReproFallbackReport };
const rndv = read('repro', 'h200-testbed', 'experiments-rndv2-2026-12-04.json') as { runs: Run[]; ucx_rndv_config: string };
const at = (name: string, size: number) => {
	const r = rndv.runs.find(x => x.name === name);
	assert.ok(r, `no run ${name}`);
	const s = r.doc.stats.find(x => x.mode === 'mpi' && x.sizeBytes === size);
	assert.ok(s && s.ok === 3 && s.bestGbps && s.rssGrowth, `${name} ${size}: ${JSON.stringify(s)}`);
	return { bw: s.bestGbps, rss: s.rssGrowth };
};

describe('H200 2026-12-04: UCX 1.13 rendezvous settings in their accepted forms (real capture, experiments-rndv2)', () => {
	it('the UCX defaults are host:512K,cuda:4M fragments, 128 per chunk', () => {
		assert.match(rndv.ucx_rndv_config, /^UCX_RNDV_FRAG_SIZE=host:512K,cuda:4M$/m);
		assert.match(rndv.ucx_rndv_config, /^UCX_RNDV_FRAG_ALLOC_COUNT=host:128,cuda:128$/m);
	});

	it('no setting bounds the staging memory: every one grows 0.75-0.8 GiB per GiB of message, 3 of 3 trials', () => {
		for (const r of rndv.runs) {
			const g = at(r.name, GiB).rss;
			assert.ok(g.min > 700 * MiB && g.max < 850 * MiB, `${r.name}: +${(g.median / MiB).toFixed(1)} MiB`);
		}
	});

	it('FRAG_SIZE=host:4M,cuda:4M is faster than the defaults (ranges apart) at the same memory; host:128K, PIPELINE_SHM_ENABLE=n and PROTO_ENABLE=y are slower', () => {
		const base = at('rndv-default', GiB).bw;
		const big = at('rndv-UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M', GiB).bw;
		assert.ok(big.min > base.max, `host:4M ${big.min}-${big.max} vs default ${base.min}-${base.max}`);
		assert.ok(big.median / base.median > 1.2);
		for (const s of ['UCX_RNDV_FRAG_SIZE=host:128K,cuda:4M', 'UCX_RNDV_PIPELINE_SHM_ENABLE=n', 'UCX_PROTO_ENABLE=y']) {
			const b = at(`rndv-${s}`, GiB).bw;
			assert.ok(b.max < base.min, `${s}: ${b.max} vs ${base.min}`);
		}
		// ALLOC_COUNT=host:8 changes neither bandwidth (ranges overlap) nor memory
		const few = at('rndv-UCX_RNDV_FRAG_ALLOC_COUNT=host:8,cuda:8', GiB).bw;
		assert.ok(few.min < base.max && few.max > base.min);
	});
});

describe('H200 2026-12-04: repro fallback --try-ucx staging in one run (real capture, experiments-tryucx)', () => {
	const cap = read('repro', 'h200-testbed', 'experiments-tryucx-2026-12-04.json') as { runs: Run[] };
	const rep = cap.runs.find(r => r.name === 'tryucx-staging')!.doc;
	it('every launch ok: mpi, lib-shm and the 4 settings, 3 of 3 trials each', () => {
		assert.deepEqual(rep.modes.map(m => [m.mode, m.counts.ok, m.trials]), [['mpi', 3, 3], ['lib-shm', 3, 3],
			['mpi+UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M', 3, 3], ['mpi+UCX_RNDV_FRAG_ALLOC_COUNT=host:8,cuda:8', 3, 3], ['mpi+UCX_RNDV_SCHEME=get_zcopy', 3, 3], ['mpi+UCX_RNDV_FRAG_MEM_TYPE=cuda', 3, 3]]);
	});
	it('libgpumpi (shm) is recommended; host:4M is the best UCX setting but its staging grows; get_zcopy / FRAG_MEM_TYPE=cuda bound it at < 1 GB/s', () => {
		const rk = rep.ranking!;
		assert.equal(rk.best?.mode, 'lib-shm');
		const by = Object.fromEntries(rk.ucxSettings!.map(u => [u.setting, u]));
		assert.deepEqual([by['UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M'].bandwidth, by['UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M'].boundsMemory], ['faster', false]);
		for (const s of ['UCX_RNDV_SCHEME=get_zcopy', 'UCX_RNDV_FRAG_MEM_TYPE=cuda']) {
			assert.deepEqual([by[s].bandwidth, by[s].boundsMemory], ['slower', true], s);
			assert.ok(by[s].bestGbps!.max < 1, s);
		}
		const text = rep.verdict.text.join('\n');
		assert.match(text, /Best UCX setting measured: UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M is faster than MPI as configured, but the host staging still grows/);
		assert.match(text, /Recommended: libgpumpi \(shm\)/);
	});
});

/**
 * guard-cli-stage-2026-12-04.json: `TRIALS=3 STAGE_TRIALS=3 bash scripts/testGpu.sh guardCli` (19:13 UTC, after the
 * guard counted the calls STAGE takes apart, action "staged"). The stage runs' rank reports are merged again here by
 * the product's merge, so the verdict the docs quote is the one this code gives for what the H200 recorded.
 */
describe('H200 2026-12-04 (evening): guard --stage marks the staged danger fixed (real capture, guard-cli-stage)', () => {
	interface CliRun { name: string; exit: number; ranks: StageRank[]; doc: { verdict: string; reports: unknown[] } }
	const cli = read('repro', 'h200-testbed', 'guard-cli-stage-2026-12-04.json') as { runs: CliRun[] };
	const runs = (p: string): CliRun[] => cli.runs.filter(r => r.name.startsWith(p));
	const merge = (r: CliRun) => mergeGuardReports({
		files: r.doc.reports.map((rep, i) => ({ name: `rank${i}.json`, text: JSON.stringify(rep) })),
		expectedRanks: 2, exitCode: r.exit, signal: null, userCommand: ['mpirun', '-np', '2', 'guard_stage', '--bench'], where: 'the H200', mode: 'report',
	});

	it('3 of 3 launches each way exit 0 with every message correct', () => {
		assert.equal(runs('stage-none-').length, 3);
		assert.equal(runs('stage-stage-').length, 3);
		for (const r of [...runs('stage-none-'), ...runs('stage-stage-')]) {
			assert.equal(r.exit, 0, r.name);
			assert.ok(r.ranks.length === 2 && r.ranks.every(x => x.correct), r.name);
		}
	});

	it('without --stage the 12 large device calls are a warning, not fixed; with it all 12 are staged and the verdict says fixed', () => {
		for (const r of runs('stage-none-')) {
			const m = merge(r);
			const f = m.findings.find(x => x.id === 'guard-huge-device-to-host-staged-peer');
			assert.equal(f?.severity, 'warning', r.name);
			assert.match(m.verdict, /12 dangerous calls of 1 kind; not fixed: Large device messages/);
		}
		for (const r of runs('stage-stage-')) {
			const m = merge(r);
			const f = m.findings.find(x => x.id === 'guard-huge-device-to-host-staged-peer');
			assert.equal(f?.severity, 'info', r.name);
			assert.match(f?.title ?? '', /fixed by the guard \(staged\)$/);
			assert.match(f?.message ?? '', /STAGE sent every one of them through its bounded staging/);
			assert.match(m.verdict, /12 dangerous calls, all fixed by the guard \(large device messages staged\)/);
			assert.equal(m.totals.stagedMessages, 6);
			assert.equal(m.verdict, r.doc.verdict, 'the CLI on the H200 printed the same verdict');
		}
	});

	it('1 GiB messages 2-5: 22.0-23.1 ms with --stage vs 28.2-30.1 ms without; host memory +48-100 KiB vs +962-1033 MiB per rank', () => {
		const span = (p: string, f: (x: StageRank) => number[]): [number, number] => {
			const xs = runs(p).flatMap(r => r.ranks.flatMap(f));
			return [Math.min(...xs), Math.max(...xs)];
		};
		const ms = (x: StageRank) => x.timesS.slice(1).map(t => Math.round(t * 10_000) / 10);
		const hwm = (x: StageRank) => [x.vmHwmKbAfter - x.vmHwmKbBefore];
		assert.deepEqual(span('stage-stage-', ms), [22.0, 23.1]);
		assert.deepEqual(span('stage-none-', ms), [28.2, 30.1]);
		assert.deepEqual(span('stage-stage-', hwm), [48, 100]);
		const [lo, hi] = span('stage-none-', hwm);
		assert.deepEqual([Math.round(lo / 1024), Math.round(hi / 1024)], [962, 1033]);
	});
});
