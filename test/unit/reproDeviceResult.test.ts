/**
 * The reproducers' verdicts on a REAL device result: test-fixtures/repro/h200-testbed/repro-2026-12-02.json was written
 * by scripts/gpu/repro.sh on the H200 testbed (Open MPI 5.0.7 + UCX 1.13.1 with CUDA, 1 GPU, 4 ranks for ipc,
 * 2 for fallback) on 2026-12-02. What is asserted here is what that run showed; the renderer must keep saying it.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { renderFallbackReport, renderIpcReport, reportsFromDeviceJson } from '../../extension/core/repro/reproRender';
import type { IpcVariantResult } from '../../extension/shared/reproSchema';

function fixture(name: string): string {
	const bundled = path.join(__dirname, '..', '..', '..', 'test-fixtures', 'repro', 'h200-testbed', name);
	return fs.existsSync(bundled) ? bundled : path.resolve('test-fixtures/repro/h200-testbed', name);
}

function load(name = 'repro-2026-12-02.json'): ReturnType<typeof reportsFromDeviceJson> {
	const bundled = path.join(__dirname, '..', '..', '..', 'test-fixtures', 'repro', 'h200-testbed', name);
	const file = fs.existsSync(bundled) ? bundled : path.resolve('test-fixtures/repro/h200-testbed', name);
	return reportsFromDeviceJson(JSON.parse(fs.readFileSync(file, 'utf8')) as unknown);
}

function run(rep: ReturnType<typeof load>, config: string, variant: string, trial = 1): IpcVariantResult | undefined {
	return rep.ipc?.variants.find(x => x.config === config && x.variant === variant)?.runs.find(r => r.trial === trial);
}

/** The three H200 runs as trials of one report: their entries of the same configuration and variant are trials. */
function threeRuns(): ReturnType<typeof load> {
	const files = ['repro-2026-12-02.json', 'repro-2026-12-02-run2.json', 'repro-2026-12-02-run3.json'];
	const dir = path.dirname(fixture('repro-2026-12-02.json'));
	const entries = files.flatMap(f => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as Array<{ kind: string; config: string }>)
		.filter(e => e.kind === 'ipc' && ['ob1', 'ucx', 'ucx UCX_TLS=^cuda_ipc'].includes(e.config));
	return reportsFromDeviceJson(entries);
}

describe('repro verdicts on the real H200 testbed result', () => {
	it('ipc, one saved run: every variant correct on device memory, but one trial is never a verdict', () => {
		const rep = load();
		assert.ok(rep.ipc);
		for (const config of ['ob1', 'ucx']) {
			for (const variant of ['direct', 'bounce', 'host', 'send-from-import']) {
				const v = run(rep, config, variant);
				assert.ok(v, `${config} ${variant} present`);
				assert.equal(v.outcome, 'correct', `${config} ${variant}: ${v.detail}`);
				assert.equal(v.memory, 'device');
			}
		}
		assert.equal(rep.ipc.verdict.directWorks, null);
		assert.equal(rep.ipc.verdict.directClass, 'inconclusive');
		assert.doesNotMatch(rep.ipc.verdict.answer, /^Yes/);
		assert.equal(rep.ipc.verdict.gpuVerdict, true);
	});

	it('ipc: with UCX_TLS=^cuda_ipc, sending FROM an imported pointer crashed rank 3 with SIGSEGV in ucp_dt_pack (its own signature)', () => {
		const rep = load();
		const v = run(rep, 'ucx UCX_TLS=^cuda_ipc', 'send-from-import');
		assert.ok(v);
		assert.equal(v.outcome, 'crashed');
		assert.equal(v.signal, 11);
		assert.equal(v.crashedRank, 3, 'PRRTE names rank 3 over two lines; the UCX handler line names pid 2123');
		assert.ok(v.evidence.some(l => /Caught signal 11/.test(l)), v.evidence.join('\n'));
		assert.deepEqual(v.signatures.map(h => h.id), ['ucp-dt-pack-segv']);
		assert.match(v.signatures[0].line, /libucp\.so\.0\(ucp_dt_pack\+0x4c\)/);
		assert.match(renderIpcReport(rep.ipc!, { verbose: true }), /rank 3/);
	});

	it('ipc, second run: over tcp,cuda_copy,self the send from an import hangs after send() EIO (its signature); cuda_ipc\'s refused re-export also shows in correct trials', () => {
		const rep = load('repro-2026-12-02-run2.json');
		const hung = run(rep, 'ucx UCX_TLS=tcp,cuda_copy,self', 'send-from-import');
		assert.equal(hung?.outcome, 'timed_out');
		assert.deepEqual(hung?.signatures.map(h => h.id), ['tcp-send-eio-hang']);
		assert.match(hung?.signatures[0].line ?? '', /send\(60\) failed: Input\/output error/);
		assert.equal(run(rep, 'ucx UCX_TLS=tcp,cuda_copy,self', 'direct')?.outcome, 'correct', 'receiving into the import works over tcp');
		const reexport = run(rep, 'ucx', 'direct');
		assert.equal(reexport?.outcome, 'correct');
		assert.deepEqual(reexport?.signatures.map(h => h.id), ['cuda-ipc-reexport']);
		assert.match(reexport?.signatures[0].line ?? '', /cuIpcGetMemHandle\(&key->ph, \(CUdeviceptr\)addr\)\(\) failed: invalid argument/);
	});

	it('ipc, third run: direct under pml ucx aborted in cma (uct_cma_ep_tx), and the cuda_ipc explanation is NOT attached (no such line in that trial)', () => {
		const rep = load('repro-2026-12-02-run3.json');
		const direct = run(rep, 'ucx', 'direct');
		assert.equal(direct?.outcome, 'crashed');
		assert.equal(direct?.crashedRank, 2);
		assert.equal(direct?.signal, 6);
		assert.deepEqual(direct?.signatures.map(h => h.id), ['cma-bad-address']);
		assert.match(direct?.signatures[0].line ?? '', /libuct_cma\.so\.0\(uct_cma_ep_tx\+0x1c8\)/);
		const why = rep.ipc!.verdict.why.join('\n');
		assert.match(why, /cma transport/);
		assert.doesNotMatch(why, /cuda_ipc transport tries to export/);
	});

	it('ipc, the three runs as three trials: intermittent crashes are "unreliable" with rates; ^cuda_ipc is not recommended; bounce is, with its count', () => {
		const rep = threeRuns();
		const ipc = rep.ipc!;
		const s = (config: string, variant: string) => ipc.variants.find(v => v.config === config && v.variant === variant)!;
		assert.equal(ipc.trials, 3);
		assert.deepEqual([s('ucx', 'direct').class, s('ucx', 'direct').counts.correct, s('ucx', 'direct').counts.crashed], ['unreliable', 2, 1]);
		assert.deepEqual([s('ucx', 'send-from-import').class, s('ucx', 'send-from-import').failures], ['unreliable', 1]);
		assert.deepEqual([s('ucx UCX_TLS=^cuda_ipc', 'send-from-import').class, s('ucx UCX_TLS=^cuda_ipc', 'send-from-import').failures], ['unreliable', 1]);
		assert.equal(s('ucx UCX_TLS=^cuda_ipc', 'send-from-import').failureModes[0].label, 'crashed (SIGSEGV): SIGSEGV in ucp_dt_pack');
		assert.equal(s('ob1', 'direct').class, 'works');
		assert.match(s('ob1', 'direct').sentence, /^0 of 3 failed: a failure rate above 63 % is ruled out at 95 %/);
		assert.equal(ipc.verdict.directClass, 'unreliable');
		assert.match(ipc.verdict.answer, /^Unreliable: receiving into an IPC-imported GPU pointer fails intermittently \(ucx: 1 of 3 failed\)/);
		assert.ok(ipc.verdict.worksInstead.includes('bounce (ucx): 3 of 3 correct'), ipc.verdict.worksInstead.join('; '));
		assert.ok(!ipc.verdict.worksInstead.some(w => /send-from-import \(ucx UCX_TLS=\^cuda_ipc\)/.test(w)));
		assert.ok(ipc.verdict.why.some(w => /Not recommended \(intermittent\): .*send-from-import \(ucx UCX_TLS=\^cuda_ipc\): 1 of 3 failed/.test(w)), ipc.verdict.why.join('\n'));
		assert.match(ipc.verdict.conditions.placement, /all ranks on one node \(vm\)/);
	});

	it('fallback: UCX staging through host memory grows resident memory with the message size; ob1 smcuda without IPC is beaten by manual staging', () => {
		const { fallback } = load();
		const ucxSm = fallback.find(r => r.config.includes('sm,cuda_copy,self') && !r.config.includes('PROTO'));
		assert.ok(ucxSm, fallback.map(r => r.config).join(', '));
		const growth = (size: number): number => Math.max(...ucxSm.results
			.filter(r => r.mode === 'mpi' && r.size_bytes === size)
			.flatMap(r => r.memory.map(m => m.rss_peak_growth_bytes ?? 0)));
		const GiB = 1024 ** 3;
		assert.ok(growth(GiB) > 0.5 * GiB, `MPI grew RSS by ${growth(GiB)} bytes for a 1 GiB message`);
		assert.ok(growth(GiB) > 3 * growth(GiB / 4), 'the growth scales with the message size');
		assert.equal(ucxSm.verdict.path, 'staged');

		const noIpc = fallback.find(r => r.config.includes('btl_smcuda_use_cuda_ipc=0'));
		assert.ok(noIpc);
		assert.equal(noIpc.verdict.path, 'staged');
		assert.ok((noIpc.verdict.stagedOverMpi ?? 0) > 1.2, `manual staging / MPI = ${noIpc.verdict.stagedOverMpi}`);
		const ob1 = fallback.find(r => r.config === 'ob1');
		assert.equal(ob1?.verdict.path, 'direct');
		assert.match(renderFallbackReport(noIpc), /faster than MPI/);
	});
});

// test-fixtures/repro/h100-testbed/repro-ipc-2026-12-06.json: scripts/gpu/repro.sh's IPC part on the H100 device
// (same testbed MPI), one trial per variant and configuration (test-fixtures/repro/h100-testbed/README.md).
describe('repro ipc --from-json: the H100 run of 2026-12-06', () => {
	const file = path.join(path.dirname(fixture('repro-2026-12-02.json')), '..', 'h100-testbed', 'repro-ipc-2026-12-06.json');
	const rep = reportsFromDeviceJson(JSON.parse(fs.readFileSync(file, 'utf8')) as unknown);

	it('reads 21 correct, 2 crashed and 1 hung of the 24 pattern runs, plus the crash test; one trial each is no verdict', () => {
		const ipc = rep.ipc!;
		const pattern = ipc.variants.filter(v => v.variant !== 'crash-test');
		const outcomes = pattern.flatMap(v => v.runs.map(r => r.outcome));
		assert.deepEqual([outcomes.length, outcomes.filter(o => o === 'correct').length, outcomes.filter(o => o === 'crashed').length, outcomes.filter(o => o === 'timed_out').length], [24, 21, 2, 1]);
		const bad = pattern.filter(v => v.runs.some(r => r.outcome !== 'correct')).map(v => `${v.config} / ${v.variant}: ${v.runs[0].outcome}`);
		assert.deepEqual(bad, ['ucx UCX_TLS=^cuda_ipc / send-from-import: crashed', 'ucx UCX_TLS=tcp,cuda_copy,self / send-from-import: timed_out', 'ucx UCX_TLS=tcp,cuda_copy,cuda_ipc,self / direct: crashed']);
		assert.ok(ipc.variants.every(v => v.class === 'inconclusive'));
	});

	it('the table stays aligned with configuration labels longer than the old 28-column field', () => {
		const rows = renderIpcReport(rep.ipc!).split('\n').filter(l => / (inconclusive|works|fails|flaky) /.test(l) && !l.startsWith('Verdict'));
		assert.ok(rows.length >= 25, String(rows.length));
		const at = new Set(rows.map(l => l.search(/ (direct|bounce|host|send-from-import|crash-test) +(inconclusive|works|fails|flaky)/)));
		assert.equal(at.size, 1, rows.join('\n'));
	});
});
