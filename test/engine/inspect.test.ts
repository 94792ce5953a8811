/**
 * `gpumpi inspect` run for real under Debian's Open MPI 4.1.4 (mpirun.openmpi) and MPICH 4.0.2 (mpirun.mpich),
 * singleton and 4 ranks. The engines must be built first (node scripts/buildNative.mjs --engine-only --all-mpis);
 * a missing engine FAILS the suite (CI builds before testing). This machine has no GPU, so every rank must report
 * a clean "no CUDA driver" state.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { EngineInspect, EngineRank } from '../../extension/shared/engineSchema';
import { ENGINE_INSPECT_SCHEMA } from '../../extension/shared/engineSchema';
import { findEngine, type EngineFlavor } from '../../extension/core/native';
import { execute, type ExecuteResult } from '../../extension/core/proc';

const TIMEOUT_MS = 90_000;

function enginePath(flavor: EngineFlavor): string {
	const found = findEngine(flavor, {});
	assert.ok(found.path, `engine '${flavor}' not built; tried:\n  ${found.tried.join('\n  ')}\n` +
		'run: node scripts/buildNative.mjs --engine-only --all-mpis');
	return found.path;
}

function run(argv: string[], env?: Record<string, string | undefined>): Promise<ExecuteResult> {
	// execute() spawns a new process group and kills the whole group (mpirun and every rank) on timeout.
	return execute(argv, { timeoutMs: TIMEOUT_MS, env: env ?? { ...process.env, UCX_NET_DEVICES: 'lo' } }).result;
}

function openmpi(np: number, engine: string): string[] {
	return ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--mca', 'btl_tcp_if_include', 'lo',
		'-np', String(np), engine, 'inspect'];
}

function mpich(np: number, engine: string): string[] {
	return ['mpirun.mpich', '-np', String(np), engine, 'inspect'];
}

function keysOf(o: object): string[] {
	return Object.keys(o).sort();
}

/** Checks one rank record field by field against engineSchema.ts (exact key sets, value types). */
function assertRankShape(r: EngineRank): void {
	assert.deepEqual(keysOf(r), ['affinity', 'cuda', 'env', 'host', 'ipc_memory', 'local_rank', 'mpi', 'mps', 'namespaces', 'pid', 'rank']);
	// Read for real from sched_getaffinity and /sys/devices/system/node (test/engine/affinityFake.test.ts adds a GPU).
	assert.deepEqual(keysOf(r.affinity ?? {}), ['cpu_list', 'cpu_numa_nodes', 'error', 'gpu', 'numa_nodes', 'sysfs_root']);
	assert.match(r.affinity?.cpu_list ?? '', /^\d+(-\d+)?(,\d+(-\d+)?)*$/);
	assert.ok((r.affinity?.numa_nodes.length ?? 0) >= 1, 'this Linux machine exposes at least one NUMA node');
	assert.equal(r.affinity?.sysfs_root, '');
	if (r.cuda.selected_device < 0) { assert.equal(r.affinity?.gpu, null); }
	// No GPU here: the memory IPC probe says why it did not run (test/engine/ipcMemFake.test.ts runs it on the fake driver).
	assert.deepEqual(keysOf(r.ipc_memory ?? {}), ['allocations', 'bytes', 'device', 'probed', 'skipped']);
	if (r.cuda.selected_device < 0) {
		assert.equal(r.ipc_memory?.probed, false);
		assert.equal(r.ipc_memory?.skipped, 'no CUDA device selected in this rank');
		assert.deepEqual(r.ipc_memory?.allocations, []);
	}
	// Read for real from /proc/self/ns here (rankIsolationRules.test.ts has captures with a rank under unshare).
	assert.match(r.namespaces?.ipc ?? '', /^ipc:\[\d+\]$/);
	assert.match(r.namespaces?.pid ?? '', /^pid:\[\d+\]$/);
	assert.equal(r.namespaces?.error, '');
	assert.deepEqual(keysOf(r.mps ?? {}), ['control_pipe_exists', 'control_pipe_is_fifo', 'pipe_directory', 'pipe_directory_from']);
	assert.equal(typeof r.mps?.control_pipe_exists, 'boolean');
	assert.ok(Number.isInteger(r.rank) && r.rank >= 0);
	assert.ok(Number.isInteger(r.local_rank) && r.local_rank >= 0);
	assert.ok(typeof r.host === 'string' && r.host.length > 0);
	assert.ok(Number.isInteger(r.pid) && r.pid > 0);
	assert.deepEqual(keysOf(r.mpi), ['cuda_aware', 'implementation', 'library_version', 'standard_version']);
	assert.match(r.mpi.standard_version, /^\d+\.\d+$/);
	assert.deepEqual(keysOf(r.mpi.cuda_aware), ['compile_time', 'query', 'run_time']);
	for (const v of [r.mpi.cuda_aware.compile_time, r.mpi.cuda_aware.run_time]) {
		assert.ok(v === null || typeof v === 'boolean');
	}
	assert.equal(typeof r.mpi.cuda_aware.query, 'string');
	assert.deepEqual(keysOf(r.cuda), ['device_count', 'devices', 'driver_loaded', 'driver_version', 'error',
		'init_result', 'initialised_before_mpi_init', 'library', 'p2p', 'selected_device']);
	assert.ok(r.env && typeof r.env === 'object' && !Array.isArray(r.env));
	const prefixes = /^(OMPI_MCA_|PMIX_MCA_|OMPI_COMM_WORLD_|UCX_|CUDA_|MPICH_|MPIR_CVAR_|I_MPI_|MV2_|FI_|SLURM_)/;
	for (const [k, v] of Object.entries(r.env)) {
		assert.match(k, prefixes, `env ${k} is outside the schema's prefixes`);
		assert.equal(typeof v, 'string');
	}
}

/** No GPU and no libcuda.so.1 here: the CUDA section must say so cleanly. */
function assertNoCuda(r: EngineRank, cudaError: RegExp): void {
	assert.equal(r.cuda.driver_loaded, false);
	assert.match(r.cuda.error, cudaError);
	assert.equal(r.cuda.library, r.cuda.error, 'library holds the dlopen error when not loaded');
	assert.equal(r.cuda.init_result, -1);
	assert.equal(r.cuda.device_count, 0);
	assert.deepEqual(r.cuda.devices, []);
	assert.deepEqual(r.cuda.p2p, []);
	assert.equal(r.cuda.selected_device, -1);
	assert.equal(r.cuda.initialised_before_mpi_init, false);
}

function parseDoc(res: ExecuteResult, np: number, cudaError = /libcuda\.so\.1: cannot open shared object file/): EngineInspect {
	assert.equal(res.exitCode, 0, `exit ${res.exitCode} ${res.error ?? ''}\nstderr:\n${res.stderr}`);
	const lines = res.stdout.split('\n').filter(l => l.trim() !== '');
	assert.equal(lines.length, 1, `rank 0 alone prints exactly one JSON line; got:\n${res.stdout.slice(0, 2000)}`);
	const doc = JSON.parse(lines[0]) as EngineInspect;
	assert.deepEqual(keysOf(doc), ['engine_version', 'ranks', 'schema', 'world_size']);
	assert.equal(doc.schema, ENGINE_INSPECT_SCHEMA);
	assert.match(doc.engine_version, /^\d+\.\d+\.\d+/);
	assert.equal(doc.world_size, np);
	assert.deepEqual(doc.ranks.map(r => r.rank), [...Array(np).keys()], 'ranks 0..np-1, sorted');
	assert.equal(new Set(doc.ranks.map(r => r.pid)).size, np, 'one process per rank');
	doc.ranks.forEach(assertRankShape);
	doc.ranks.forEach(r => assertNoCuda(r, cudaError));
	if (np > 1) {
		assert.deepEqual(doc.ranks.map(r => r.local_rank).sort(), [...Array(np).keys()], 'one host: local ranks 0..np-1');
		assert.equal(new Set(doc.ranks.map(r => r.namespaces?.ipc)).size, 1, 'plain mpirun: one IPC namespace for all ranks');
	}
	return doc;
}

describe('gpumpi inspect (real MPI runs)', function () {
	this.timeout(TIMEOUT_MS + 10_000);

	describe('Open MPI 4.1.4', () => {
		for (const np of [1, 4]) {
			it(`-np ${np}`, async () => {
				const doc = parseDoc(await run(openmpi(np, enginePath('openmpi'))), np);
				for (const r of doc.ranks) {
					assert.equal(r.mpi.implementation, 'openmpi');
					assert.match(r.mpi.library_version, /^Open MPI v4\.1\.4, package: Debian OpenMPI/);
					assert.doesNotMatch(r.mpi.library_version, /[\0\s]$/, 'trailing NUL/whitespace stripped');
					assert.equal(r.mpi.standard_version, '3.1');
					assert.deepEqual(r.mpi.cuda_aware, { compile_time: false, run_time: false, query: 'MPIX_Query_cuda_support' });
					assert.equal(r.env.OMPI_COMM_WORLD_RANK, String(r.rank));
					assert.equal(r.env.OMPI_COMM_WORLD_SIZE, String(np));
					assert.equal(r.env.OMPI_COMM_WORLD_LOCAL_RANK, String(r.local_rank));
					assert.equal(r.env.OMPI_MCA_btl_tcp_if_include, 'lo', 'the launcher-handed MCA setting is visible');
				}
			});
		}

		it('singleton (no mpirun) still initialises MPI and reports', async () => {
			const doc = parseDoc(await run([enginePath('openmpi'), 'inspect']), 1);
			assert.equal(doc.ranks[0].mpi.implementation, 'openmpi');
			assert.equal(doc.ranks[0].env.OMPI_MCA_ess, 'singleton');
		});
	});

	describe('MPICH 4.0.2', () => {
		for (const np of [1, 4]) {
			it(`-np ${np}`, async () => {
				const doc = parseDoc(await run(mpich(np, enginePath('mpich'))), np);
				for (const r of doc.ranks) {
					assert.equal(r.mpi.implementation, 'mpich');
					assert.match(r.mpi.library_version, /^MPICH Version:\t4\.0\.2\nMPICH Release date:/);
					assert.match(r.mpi.library_version, /\nMPICH Device:\tch4:ucx\n/);
					assert.ok(r.mpi.library_version.length > 1000, 'the whole multi-line string, not the first line');
					assert.equal(r.mpi.standard_version, '4.0');
					assert.deepEqual(r.mpi.cuda_aware, { compile_time: null, run_time: false, query: 'MPIX_GPU_query_support' });
					assert.equal(r.env.OMPI_COMM_WORLD_RANK, undefined);
				}
			});
		}

		it('singleton (no mpiexec)', async () => {
			parseDoc(await run([enginePath('mpich'), 'inspect']), 1);
		});
	});

	describe('command line', () => {
		it('gpumpi --help lists inspect and exits 0', async () => {
			const res = await run([enginePath('default'), '--help']);
			assert.equal(res.exitCode, 0);
			assert.match(res.stdout, /^\s+inspect\s+/m);
		});

		it('gpumpi inspect --help exits 0 without starting MPI', async () => {
			const res = await run([enginePath('default'), 'inspect', '--help']);
			assert.equal(res.exitCode, 0);
			assert.match(res.stdout, /^Usage: .*gpumpi inspect/m);
			assert.doesNotMatch(res.stdout, /"schema"/);
		});

		it('unknown command and unknown option exit 2 with a message on stderr', async () => {
			const cmd = await run([enginePath('default'), 'no-such-command']);
			assert.equal(cmd.exitCode, 2);
			assert.match(cmd.stderr, /unknown command 'no-such-command'/);
			const opt = await run([enginePath('default'), 'inspect', '--bogus']);
			assert.equal(opt.exitCode, 2);
			assert.match(opt.stderr, /unknown option '--bogus'/);
			assert.equal(opt.stdout, '');
		});

		it('GPUMPI_LIBCUDA pointing at a non-library is a reported state, not a crash', async () => {
			// A fake, garbage "driver" (a broken libcuda cannot be produced for real here) must give driver_loaded false.
			const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-inspect-'));
			const fake = path.join(dir, 'libcuda.so.1');
			fs.writeFileSync(fake, 'not an ELF file\n');
			try {
				const res = await run([enginePath('openmpi'), 'inspect'], { ...process.env, GPUMPI_LIBCUDA: fake });
				parseDoc(res, 1, /libcuda\.so\.1: (invalid ELF header|file too short)/);
			} finally {
				fs.rmSync(dir, { recursive: true, force: true });
			}
		});
	});
});
