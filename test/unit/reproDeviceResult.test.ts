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

function load(name = 'repro-2026-12-02.json'): ReturnType<typeof reportsFromDeviceJson> {
	const bundled = path.join(__dirname, '..', '..', '..', 'test-fixtures', 'repro', 'h200-testbed', name);
	const file = fs.existsSync(bundled) ? bundled : path.resolve('test-fixtures/repro/h200-testbed', name);
	return reportsFromDeviceJson(JSON.parse(fs.readFileSync(file, 'utf8')) as unknown);
}

describe('repro verdicts on the real H200 testbed result', () => {
	it('ipc: receiving into an imported pointer works with ob1 and pml ucx on one node (device memory)', () => {
		const { ipc } = load();
		assert.ok(ipc);
		for (const config of ['ob1', 'ucx']) {
			for (const variant of ['direct', 'bounce', 'host', 'send-from-import']) {
				const v: IpcVariantResult | undefined = ipc.variants.find(x => x.config === config && x.variant === variant);
				assert.ok(v, `${config} ${variant} present`);
				assert.equal(v.outcome, 'correct', `${config} ${variant}: ${v.detail}`);
				assert.equal(v.memory, 'device');
			}
		}
		assert.equal(ipc.verdict.directWorks, true);
		assert.equal(ipc.verdict.gpuVerdict, true);
	});

	it('ipc: with the usual workaround UCX_TLS=^cuda_ipc, sending FROM an imported pointer crashes rank 3 (SIGSEGV in UCX)', () => {
		const { ipc } = load();
		const v = ipc!.variants.find(x => x.variant === 'send-from-import' && x.config.includes('^cuda_ipc'));
		assert.ok(v);
		assert.equal(v.outcome, 'crashed');
		assert.equal(v.signal, 11);
		assert.equal(v.crashedRank, 3, 'PRRTE names rank 3 over two lines; the UCX handler line names pid 2123');
		assert.ok(v.evidence.some(l => /Caught signal 11/.test(l)), v.evidence.join('\n'));
		const text = renderIpcReport(ipc!);
		assert.match(text, /rank 3/);
	});

	it('ipc, second run (repro-2026-12-02-run2.json): the ^cuda_ipc crash is intermittent; over tcp,cuda_copy,self the send from an import hangs', () => {
		const { ipc } = load('repro-2026-12-02-run2.json');
		assert.ok(ipc);
		const at = (config: string, variant: string): IpcVariantResult | undefined => ipc.variants.find(x => x.config === config && x.variant === variant);
		assert.equal(at('ucx UCX_TLS=^cuda_ipc', 'send-from-import')?.outcome, 'correct');
		assert.equal(at('ucx UCX_TLS=^cuda_ipc UCX_MEMTYPE_CACHE=n', 'send-from-import')?.outcome, 'correct');
		const hung = at('ucx UCX_TLS=tcp,cuda_copy,self', 'send-from-import');
		assert.equal(hung?.outcome, 'timed_out');
		assert.equal(at('ucx UCX_TLS=tcp,cuda_copy,self', 'direct')?.outcome, 'correct', 'receiving into the import works over tcp');
		assert.equal(at('ucx UCX_TLS=tcp,cuda_copy,cuda_ipc,self', 'send-from-import')?.outcome, 'correct');
	});

	it('ipc, third run (repro-2026-12-02-run3.json): with cuda_ipc on, direct and send-from-import crashed; bounce works; the verdict says so', () => {
		const { ipc } = load('repro-2026-12-02-run3.json');
		assert.ok(ipc);
		const at = (config: string, variant: string): IpcVariantResult | undefined => ipc.variants.find(x => x.config === config && x.variant === variant);
		const direct = at('ucx', 'direct');
		assert.equal(direct?.outcome, 'crashed');
		assert.equal(direct?.crashedRank, 2);
		assert.equal(direct?.signal, 6);
		assert.equal(at('ucx', 'send-from-import')?.crashedRank, 3);
		assert.equal(at('ucx', 'bounce')?.outcome, 'correct');
		assert.equal(at('ob1', 'direct')?.outcome, 'correct');
		assert.equal(at('ucx UCX_TLS=^cuda_ipc', 'send-from-import')?.outcome, 'correct');
		assert.match(ipc.verdict.answer, /^It depends on the transport: .* but not with ucx \(crashed\)\.$/);
		assert.ok(ipc.verdict.why.some(l => /cuda_ipc transport tries to export the buffer again/.test(l)));
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
