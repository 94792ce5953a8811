/**
 * The H200 run of 2026-12-03 (third session; Open MPI 5.0.7 + UCX 1.13.1 with CUDA, one GPU, two ranks on it), kept
 * as the real captures scripts/gpu returned:
 *  - test-fixtures/repro/h200-testbed/fallback-lib-2026-12-03.json: `REPRO_ONLY=fallback REPRO_FB_TRIALS=3 bash
 *    scripts/testGpu.sh repro` (six modes — MPI, manual staging, host, libgpumpi auto/staged/shm — 1 MiB..1 GiB, three
 *    trials each, five configurations + one protocol-table run);
 *  - test-fixtures/repro/h200-testbed/guard-sh-2026-12-03.{json,log}: `TRIALS=12 bash scripts/testGpu.sh guard` (the
 *    seed's IPC pattern as an application, guard_demo --ipc, 64 MiB, pml ucx, 12 launches each of no guard / report /
 *    fix).
 * Rendered through the product's own reader (reportsFromDeviceJson), so docs/device-results.md ("2026-12-03 (third
 * session)") and issue 19's verdict cannot drift from what was measured.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { renderFallbackReport, reportsFromDeviceJson } from '../../extension/core/repro/reproRender';
import type { ReproFallbackReport } from '../../extension/shared/reproSchema';

const fixture = (...p: string[]) => path.resolve(process.cwd(), 'test-fixtures', ...p);
const { fallback } = reportsFromDeviceJson(JSON.parse(fs.readFileSync(fixture('repro', 'h200-testbed', 'fallback-lib-2026-12-03.json'), 'utf8')));
const cfg = (name: string): ReproFallbackReport => {
	const r = fallback.find(f => f.config === name);
	assert.ok(r, `no configuration ${name} in ${fallback.map(f => f.config).join(', ')}`);
	return r;
};
const text = (r: ReproFallbackReport) => renderFallbackReport(r);
const MiB = 1 << 20;

describe('H200 testbed, 2026-12-03: libgpumpi ranked beside MPI, and the guard on the seed IPC pattern (real captures)', () => {
	it('every configuration has three trials of six modes, all data verified (the 42-chunk documents survive the script)', () => {
		for (const name of ['ob1', 'ob1 btl_smcuda_use_cuda_ipc=0', 'ob1 btl=tcp,self', 'ucx UCX_TLS=sm,cuda_copy,self', 'ucx UCX_TLS=tcp,cuda_copy,self']) {
			const r = cfg(name);
			assert.equal(r.runs.length, 3, name);
			assert.ok(r.runs.every(x => x.outcome === 'ok'), `${name}: ${r.runs.map(x => x.detail).join(' | ')}`);
			const modes = new Set(r.results.map(x => x.mode));
			assert.deepEqual([...modes].sort(), ['host', 'lib-auto', 'lib-shm', 'lib-staged', 'mpi', 'staged'], name);
			assert.ok(r.results.every(x => x.status === 'ok' && x.verified.wrong === 0), name);
		}
	});

	it('UCX sm,cuda_copy,self (issue 19): libgpumpi is recommended at 1 GiB over MPI 36 GB/s + 775 MiB, with the out-of-memory size', () => {
		const r = cfg('ucx UCX_TLS=sm,cuda_copy,self');
		const rk = r.ranking;
		assert.ok(rk && rk.best, JSON.stringify(rk?.text));
		assert.match(rk.best.mode, /^lib-/);
		assert.equal(rk.atBytes, 1 << 30);
		const mpi = rk.options.find(o => o.mode === 'mpi')!;
		const best = rk.options.find(o => o.mode === rk.best!.mode)!;
		assert.ok(mpi.bestGbps.median > 30 && mpi.bestGbps.median < 40, `MPI ${mpi.bestGbps.median}`);
		assert.ok(best.bestGbps.min > mpi.bestGbps.max, `${best.mode} ${best.bestGbps.min} vs MPI ${mpi.bestGbps.max}`);
		assert.ok((mpi.extraHostBytes?.median ?? 0) > 700 * MiB, `MPI +${mpi.extraHostBytes?.median} B`);
		assert.ok((best.extraHostBytes?.max ?? Infinity) < MiB, `${best.mode} +${best.extraHostBytes?.max} B`);
		assert.ok(rk.mpiOomBytes !== null && rk.mpiOomBytes > 100 * 2 ** 30, `${rk.mpiOomBytes}`);
		assert.ok(rk.fix && /gpumpi_/.test(rk.fix.code), 'the recommendation hands over the libgpumpi code');
		const t = text(r);
		assert.match(t, /Recommended: libgpumpi \((shm|auto)\): 49\.\d+ .* vs MPI 36\.\d+ .*\+775\.\d MiB/);
		assert.match(t, /a message of about 16\d\.\d+ GiB would run it out of memory/);
		assert.match(t, /Crossover: below 64 MiB keep MPI/);
	});

	it('ob1 with CUDA IPC (one GPU): MPI is kept (2 TB/s device-to-device), nothing recommended over it', () => {
		const r = cfg('ob1');
		assert.equal(r.ranking?.best ?? null, null);
		assert.match(text(r), /Keep MPI: it is the fastest measured option here/);
	});

	it('without GPUDirect-like paths (ob1 no IPC, ob1 tcp, ucx tcp): libgpumpi beats MPI at every size, 11x-21x at 1 GiB', () => {
		for (const name of ['ob1 btl_smcuda_use_cuda_ipc=0', 'ob1 btl=tcp,self', 'ucx UCX_TLS=tcp,cuda_copy,self']) {
			const t = text(cfg(name));
			assert.match(t, /beats MPI at every measured size \(1 MiB–1 GiB\)/, name);
		}
	});

	it('guard on the seed IPC pattern: no guard and report crashed in 12 of 12; fix correct in 12 of 12, both importers bounced', () => {
		const g = JSON.parse(fs.readFileSync(fixture('repro', 'h200-testbed', 'guard-sh-2026-12-03.json'), 'utf8')) as
			{ trialsPerConfig: number; configs: Array<{ name: string; correct: number; trials: Array<{ rc: number; result: string; dangers: string[] }> }> };
		assert.equal(g.trialsPerConfig, 12);
		const c = (n: string) => g.configs.find(x => x.name === n)!;
		assert.equal(c('none').correct, 0);
		assert.ok(c('none').trials.every(t => t.rc === 134), 'aborted (SIGABRT) in every trial');
		assert.equal(c('report').correct, 0, 'report mode changes nothing');
		assert.equal(c('fix').correct, 12);
		for (const t of c('fix').trials) {
			assert.deepEqual([...t.dangers].sort(), ['1:ipc-import-ucx-cuda-ipc:MPI_Irecv:bounced', '3:ipc-import-ucx-cuda-ipc:MPI_Irecv:bounced']);
		}
	});
	// Second device call of the session (16:55 UTC): `TRIALS=3 bash scripts/testGpu.sh guardCli` (the product's own
	// `gpumpi-doctor guard --json` around the same mpirun) and `TRIALS=4 bash scripts/testGpu.sh guard` with the interim report.
	it('gpumpi-doctor guard on the H200: report names the danger on ranks 1 and 3 although the program aborts; fix exits 0, 3 of 3', () => {
		const cli = JSON.parse(fs.readFileSync(fixture('repro', 'h200-testbed', 'guard-cli-2026-12-03.json'), 'utf8')) as
			{ runs: Array<{ name: string; exit: number; doc: { verdict: string; findings: Array<{ id: string; severity: string }> } }> };
		const runs = (m: string) => cli.runs.filter(r => r.name.startsWith(`${m}-`));
		assert.equal(runs('report').length, 3);
		for (const r of runs('report')) {
			assert.equal(r.exit, 134, 'the program aborted: our exit code is its own');
			assert.ok(r.doc.findings.some(f => f.id === 'guard-ipc-import-ucx-cuda-ipc' && f.severity === 'error'), r.name);
			assert.ok(r.doc.findings.some(f => f.id === 'guard-missing-reports'), 'the owners that aborted are named, not dropped');
		}
		assert.equal(runs('fix').length, 3);
		for (const r of runs('fix')) {
			assert.equal(r.exit, 0);
			assert.match(r.doc.verdict, /all fixed by the guard \(2 bounced\)/);
		}
		const sh = JSON.parse(fs.readFileSync(fixture('repro', 'h200-testbed', 'guard-sh-interim-2026-12-03.json'), 'utf8')) as
			{ configs: Array<{ name: string; correct: number; trials: Array<{ dangers: string[] }> }> };
		const report = sh.configs.find(c => c.name === 'report')!;
		assert.equal(report.correct, 0);
		for (const t of report.trials) {
			assert.deepEqual([...t.dangers].sort(), ['1:ipc-import-ucx-cuda-ipc:MPI_Irecv:none', '3:ipc-import-ucx-cuda-ipc:MPI_Irecv:none'], 'the interim report survived the abort');
		}
		assert.equal(sh.configs.find(c => c.name === 'fix')!.correct, sh.configs.find(c => c.name === 'fix')!.trials.length);
	});
});
