/**
 * `gpumpi bench` (cli/benchCmd.cc) for real: 2 ranks on this host under Debian's Open MPI 4.1.4 (TCP over loopback)
 * and MPICH 4.0.2, host memory (this machine has no GPU). Every mode must move verified data, the document must
 * carry the gpumpi.bench/1 fields docs/library.md lists, and the sizes take the one syntax of every command
 * (cli/args.hh: digits with an optional K, M or G), refused before MPI_Init otherwise.
 * Engines: node scripts/buildNative.mjs --engine-only --all-mpis (a missing engine fails the suite).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findEngine, type EngineFlavor } from '../../extension/core/native';
import { execute } from '../../extension/core/proc';

const TIMEOUT_MS = 120_000;

function enginePath(flavor: EngineFlavor): string {
	const found = findEngine(flavor, {});
	assert.ok(found.path, `engine '${flavor}' not built; tried:\n  ${found.tried.join('\n  ')}\nrun: node scripts/buildNative.mjs --engine-only --all-mpis`);
	return found.path;
}

const LAUNCH: Record<'openmpi' | 'mpich', string[]> = {
	openmpi: ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--mca', 'btl_tcp_if_include', 'lo', '-np', '2'],
	mpich: ['mpirun.mpich', '-np', '2'],
};

interface BenchRow { size: number; mode?: string; skipped?: string; protocol?: string; verified?: boolean; timesS?: number[]; bestGBps?: number }
interface BenchDoc {
	schema: string; mpi: string; memory: string; memoryNote?: string;
	path: { class: string; protocol: string; reason: string; mpiCudaAware: number };
	config: { chunkBytes: number; numBuffers: number; directPieceBytes: number; iters: number; stagingBytes: number; initRssKb: number };
	results: BenchRow[]; limits: { d2hGBps: number; h2dGBps: number; duplexGBps: number; hostMpiGBps: Array<{ size: number; bestGBps: number }>; pair?: Record<string, number> }; failures: number;
}

describe('gpumpi bench', function () {
	this.timeout(TIMEOUT_MS + 10_000);

	for (const flavor of ['openmpi', 'mpich'] as const) {
		it(`${flavor}: every mode moves verified host data; the document has the gpumpi.bench/1 fields`, async () => {
			const r = await execute([...LAUNCH[flavor], enginePath(flavor), 'bench', '--json', '--memory', 'host', '--sizes', '64K,1M',
				'--modes', 'mpi,direct,staged,shm,auto', '--chunk', '256K', '--nbuf', '3', '--iters', '2'],
			{ timeoutMs: TIMEOUT_MS, env: { ...process.env, UCX_NET_DEVICES: 'lo' } }).result;
			assert.equal(r.exitCode, 0, `${r.stdout}\n${r.stderr}`);
			const line = r.stdout.split('\n').find(l => l.startsWith('{"schema":"gpumpi.bench/1"'));
			assert.ok(line, `no bench document on stdout:\n${r.stdout}`);
			const doc = JSON.parse(line) as BenchDoc;
			assert.equal(doc.memory, 'host');
			assert.equal(doc.path.class, 'host-only');
			assert.deepEqual(doc.config, { ...doc.config, chunkBytes: 256 << 10, numBuffers: 3, directPieceBytes: 256 << 20, iters: 2 });
			assert.ok(doc.config.stagingBytes >= 3 * (256 << 10), `staging ${doc.config.stagingBytes}`);
			assert.deepEqual(doc.results.map(x => `${x.size} ${x.mode}`), ['65536 host-mpi', '65536 mpi', '65536 direct', '65536 staged', '65536 shm', '65536 auto',
				'1048576 host-mpi', '1048576 mpi', '1048576 direct', '1048576 staged', '1048576 shm', '1048576 auto']);
			for (const x of doc.results) {
				assert.equal(x.verified, true, JSON.stringify(x));
				assert.equal(x.timesS?.length, 2, JSON.stringify(x));
			}
			assert.deepEqual(doc.results.filter(x => x.mode === 'staged' || x.mode === 'shm').map(x => x.protocol), ['staged', 'shm', 'staged', 'shm']);
			assert.deepEqual(doc.limits.hostMpiGBps.map(x => x.size), [65536, 1048576]);
			assert.equal(doc.limits.d2hGBps, -1, 'no GPU: no copy limits');
			assert.equal(doc.limits.duplexGBps, -1, 'no GPU: no duplex limit');
			assert.equal(doc.limits.pair, undefined, 'no GPU: no two-process limits');
			assert.equal(doc.failures, 0);
		});
	}

	// The two-process copy limits (cli/benchLimits.cc) need CUDA: here through the FAKE driver (native/fakes/fakeCuda.c,
	// its "device memory" is host memory, its copies memcpy), so what runs for real is the collective measurement itself
	// (both ranks, barriers, the gather, every ring kind allocated, pinned and freed), not a GPU's copy engines: the
	// numbers are memcpy rates and only their presence and shape are asserted. The H200 numbers: docs/device-results.md.
	it('openmpi, fake CUDA driver: the two-process limits are measured by both ranks and reported per direction', async () => {
		const engine = enginePath('openmpi');
		const fake = path.join(path.dirname(engine), 'libgpumpi_fakecuda.so');
		assert.ok(fs.existsSync(fake), `no fake driver beside the engine: ${fake}`);
		const r = await execute([...LAUNCH.openmpi, '-x', `GPUMPI_LIBCUDA=${fake}`, engine, 'bench', '--json', '--sizes', '4M', '--modes', 'shm', '--chunk', '512K', '--nbuf', '3', '--iters', '2'],
			{ timeoutMs: TIMEOUT_MS, env: { ...process.env, UCX_NET_DEVICES: 'lo' } }).result;
		assert.equal(r.exitCode, 0, `${r.stdout}\n${r.stderr}`);
		const doc = JSON.parse(r.stdout.trim()) as BenchDoc;  // --json: stdout is the document alone
		assert.equal(doc.memory, 'device');
		const p = doc.limits.pair;
		assert.ok(p, `no limits.pair: ${JSON.stringify(doc.limits)}`);
		assert.equal(p.chunkBytes, 512 << 10);
		assert.equal(p.numBuffers, 3);
		for (const k of ['aloneD2hGBps', 'aloneH2dGBps', 'bothD2hGBps', 'bothH2dGBps', 'bothRegisteredD2hGBps', 'bothRegisteredH2dGBps', 'bothHugeD2hGBps', 'bothHugeH2dGBps', 'bothWholeD2hGBps', 'bothWholeH2dGBps'])
			assert.ok(Number.isFinite(p[k]) && p[k] > 0, `${k} = ${p[k]}: every measurement ran on both ranks`);
		assert.equal(doc.failures, 0);
	});

	it('sizes take the one syntax of every command; anything else is a usage error before MPI_Init', async () => {
		const engine = enginePath('openmpi');
		for (const bad of [['--sizes', '1.5G'], ['--sizes', '64m'], ['--sizes', '1M,'], ['--chunk', '16MiB'], ['--piece', '1GB'], ['--modes', 'fast'], ['--memory', 'gpu'], ['--bogus']]) {
			const r = await execute([engine, 'bench', ...bad], { timeoutMs: 10_000 }).result;
			assert.equal(r.exitCode, 2, `${bad.join(' ')}: ${r.stderr}`);
			assert.match(r.stderr, /^gpumpi bench: .*\n\nUsage: gpumpi bench /, bad.join(' '));
		}
		for (const cmd of [['map', '--large', '1.5G'], ['map', '--small', '8k'], ['repro', 'ipc', '--size', '64MiB'], ['repro', 'fallback', '--chunk', '16m']]) {
			const r = await execute([engine, ...cmd], { timeoutMs: 10_000 }).result;
			assert.equal(r.exitCode, 2, `${cmd.join(' ')}: ${r.stderr}`);
		}
	});
});
