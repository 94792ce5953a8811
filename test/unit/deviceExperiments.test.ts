/**
 * The device experiments of 2026-12-03 (H200 testbed: Open MPI 5.0.7 + UCX 1.13.1 with CUDA, one GPU), kept as the real
 * capture `bash scripts/testGpu.sh experiments` returned (test-fixtures/repro/h200-testbed/experiments-2026-12-03.*)
 * and checked here so docs/device-results.md ("CUDA first touched after MPI_Init", "UCX rendezvous settings") and the
 * rules that cite it cannot drift from what was measured.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ReproFallbackReport, ReproIpcReport } from '../../extension/shared/reproSchema';

type Run = { name: string; exit?: number; doc: ReproIpcReport | ReproFallbackReport | null; skipped?: string };
const file = path.resolve(process.cwd(), 'test-fixtures/repro/h200-testbed/experiments-2026-12-03.json');
const capture = JSON.parse(fs.readFileSync(file, 'utf8')) as { runs: Run[]; ucx_rndv_config: string; bench_stderr: string };
const ipc = (name: string): ReproIpcReport => capture.runs.find(r => r.name === name)!.doc as ReproIpcReport;
const fallback = (name: string): ReproFallbackReport => capture.runs.find(r => r.name === name)!.doc as ReproFallbackReport;
const at1G = (rep: ReproFallbackReport) => rep.stats.find(s => s.mode === 'mpi' && s.sizeBytes === 1 << 30)!;
const MiB = 1 << 20;

describe('H200 testbed, 2026-12-03: device experiments (real captures)', () => {
	it('every experiment ran (none skipped for time)', () => {
		assert.ok(capture.runs.length >= 10);
		for (const r of capture.runs) { assert.equal(r.skipped, undefined, r.name); }
	});

	it('pml ucx: with CUDA first touched after MPI_Init, receiving into an IPC import crashed in 11 of 11 trials (cma took it for host memory); before: 4 of 11', () => {
		const rep = ipc('cudainit-ipc-ucx');
		const v = (after: boolean, variant: string) => rep.variants.find(x => x.variant === variant && /after-mpi-init/.test(x.config) === after)!;
		assert.equal(v(true, 'direct').counts.crashed, 11);
		assert.equal(v(true, 'direct').class, 'fails');
		const modes = (v(true, 'direct') as unknown as { failureModes: Array<{ signatures: string[]; count: number }> }).failureModes;
		assert.ok(modes.every(m => m.signatures.includes('cma-bad-address')), JSON.stringify(modes));
		assert.equal(v(false, 'direct').class, 'unreliable');
		assert.ok(v(false, 'direct').counts.crashed > 0 && v(false, 'direct').counts.correct > 0);
		for (const after of [false, true]) { assert.equal(v(after, 'bounce').counts.correct, 11, `bounce, after=${after}`); }
	});

	it('ob1 (smcuda): the order makes no difference: direct and bounce correct in 6 of 6 either way', () => {
		const rep = ipc('cudainit-ipc-ob1');
		assert.equal(rep.variants.length, 4);
		for (const v of rep.variants) { assert.equal(v.counts.correct, 6, `${v.config} / ${v.variant}`); }
	});

	it('CUDA-aware transfers work with CUDA first touched after MPI_Init (ucx 36 GB/s host-staged, ob1 without IPC 2.2 GB/s), 3 of 3 trials', () => {
		for (const name of ['cudainit-fallback-ucx', 'cudainit-fallback-ob1']) {
			const rep = fallback(name);
			assert.equal(rep.memory, 'device', name);
			assert.equal(rep.mpi?.cuda_first_touched, 'after MPI_Init', name);
			for (const s of rep.stats) { assert.equal(s.ok, 3, `${name} ${s.sizeBytes}`); }
		}
		assert.ok(at1G(fallback('cudainit-fallback-ucx')).bestGbps!.median > 30);
		assert.ok(at1G(fallback('cudainit-fallback-ob1')).bestGbps!.median > 1.5);
	});

	it('UCX rendezvous settings: the schemes put/get_zcopy and FRAG_MEM_TYPE=cuda end the host growth but cut bandwidth ~45×; plain FRAG_SIZE/ALLOC_COUNT values are rejected', () => {
		const base = at1G(fallback('rndv-default'));
		assert.ok(base.rssGrowth!.median > 700 * MiB && base.bestGbps!.median > 30, JSON.stringify(base));
		for (const s of ['UCX_RNDV_SCHEME=put_zcopy', 'UCX_RNDV_SCHEME=get_zcopy', 'UCX_RNDV_FRAG_MEM_TYPE=cuda']) {
			const r = at1G(fallback(`rndv-${s}`));
			assert.ok(r.rssGrowth!.median < MiB, `${s}: ${r.rssGrowth!.median}`);
			assert.ok(r.bestGbps!.median < 1, `${s}: ${r.bestGbps!.median} GB/s`);
		}
		const thresh = at1G(fallback('rndv-UCX_RNDV_PIPELINE_SEND_THRESH=inf'));
		assert.ok(thresh.rssGrowth!.median > 700 * MiB, 'inf is UCX 1.13\'s default: no change');
		for (const s of ['UCX_RNDV_FRAG_SIZE=128K', 'UCX_RNDV_FRAG_SIZE=4M', 'UCX_RNDV_FRAG_ALLOC_COUNT=8']) {
			const rep = fallback(`rndv-${s}`);
			assert.equal(rep.stats.length, 0, s);
			assert.ok(rep.runs.every(r => r.outcome !== 'ok'), s);
		}
		assert.match(capture.ucx_rndv_config, /^UCX_RNDV_FRAG_SIZE=host:512K,cuda:4M$/m);
	});

	it('bench under pml ucx with the component path: PMIx\'s "process_repository_item … bad prefix" lines, and no cuMemHostRegister message', () => {
		assert.match(capture.bench_stderr, /process_repository_item filename \/opt\/testbed2\/lib\/openmpi\/mca_btl_smcuda has bad prefix/);
		assert.doesNotMatch(capture.bench_stderr, /cuMemHostRegister/);
		assert.match(capture.bench_stderr, /exit=0$/);
	});
});
