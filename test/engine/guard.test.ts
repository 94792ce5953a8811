/**
 * gpumpi-guard (native/guard -> libgpumpi_guard.so, docs/guard.md) under real mpirun, Debian's Open MPI 4.1.4 and
 * MPICH 4.0.2, LD_PRELOADed into native/examples/guard_demo (a fixed pattern of calls on host buffers). This machine
 * has no GPU: every buffer is host memory, no driver query may happen, and there is no danger to find; the GPU half
 * (IPC imports flagged in report mode, bounced in fix mode) runs on the H200 (`guard_demo --ipc`, docs/guard.md).
 * Asserted: exact call counts and bytes per call and per peer from each rank's JSON; the program's output bitwise the
 * same with and without the guard; bad environment values rejected with a message while the program still runs; the
 * one call guard_demo makes that the guard does not model (MPI_Sendrecv_replace) passes through and is listed.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot } from '../../extension/core/native';
import { execute, type ExecuteResult } from '../../extension/core/proc';

const ROOT = repoRoot() ?? process.cwd();
const RUN_TIMEOUT_MS = 120_000;

interface Classes { [k: string]: number }
interface RankReport {
	schema: string; rank: number; size: number; host: string; pid: number; mode: string; stage: boolean; stageAsked: boolean; stageAgreed: boolean; stageRanks: number; finalized: boolean;
	mpi: { library: string; cudaAware: string; pml: string | null; ucxCudaIpc: boolean | null };
	cuda: { available: boolean; detail: string };
	wallS: number;
	calls: Array<{ name: string; count: number; bytes: number; timeInMpiNs: number }>;
	peers: Array<{ peer: number; sendCalls: number; recvCalls: number; sentBytes: number; recvBytes: number; largestMessage: number; bufferClasses: Classes; path: string }>;
	collectives: Array<{ name: string; count: number; bytes: number; bufferClasses: Classes }>;
	dangers: unknown[];
	unsupported: Array<{ call: string; count: number; note: string }>;
	overhead: { classifyQueries: number; cacheHits: number };
}

/** guard_demo's pattern (native/examples/guard_demo.c), per rank of 2: [count, bytes]. */
const EXPECTED_CALLS: Record<string, [number, number]> = {
	MPI_Send: [2, 416], MPI_Recv: [2, 416], MPI_Isend: [5, 848], MPI_Irecv: [4, 800], MPI_Send_init: [2, 0], MPI_Recv_init: [2, 0],
	MPI_Startall: [5, 1024], MPI_Request_free: [4, 0], MPI_Sendrecv: [1, 128], MPI_Mprobe: [1, 0], MPI_Mrecv: [1, 48], MPI_Wait: [1, 0],
	MPI_Waitall: [9, 0], MPI_Bcast: [1, 40], MPI_Allreduce: [1, 64], MPI_Gather: [1, 8],
};
const NO_CLASSES = { host: 0, 'pinned-host': 0, device: 0, managed: 0, pool: 0, vmm: 0, 'ipc-import': 0 };

const FLAVORS = [
	{ flavor: 'openmpi', launch: ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--mca', 'btl_tcp_if_include', 'lo', '-np', '2'], env: (k: string, v: string) => ['-x', `${k}=${v}`] },
	{ flavor: 'mpich', launch: ['mpirun.mpich', '-np', '2'], env: (k: string, v: string) => ['-env', k, v] },
] as const;

function describeRun(r: ExecuteResult): string {
	return `exit ${r.exitCode} signal ${r.signal} ${r.error ?? ''}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-4000)}`;
}

function readReports(dir: string): RankReport[] {
	const files = fs.readdirSync(dir).filter(f => /^guard-.*\.json$/.test(f));
	assert.deepEqual(fs.readdirSync(dir).filter(f => f.endsWith('.tmp')), [], 'no temp file left behind');
	return files.map(f => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as RankReport).sort((a, b) => a.rank - b.rank);
}

for (const { flavor, launch, env } of FLAVORS) {
	const launch0 = launch;
	describe(`gpumpi-guard under ${launch[0]}`, function () {
		this.timeout(RUN_TIMEOUT_MS * 3);
		const dir = path.join(ROOT, 'native', 'build', `engine-${flavor}`);
		const guard = path.join(dir, 'libgpumpi_guard.so');
		const demo = path.join(dir, 'examples', 'guard_demo');
		let work = '';
		before(() => {
			for (const p of [guard, demo]) { assert.ok(fs.existsSync(p), `${p} not built: run node scripts/ensure.mjs --all-mpis`); }
		});
		beforeEach(() => { work = fs.mkdtempSync(path.join(os.tmpdir(), `gpumpi-guard-${flavor}-`)); });
		afterEach(() => { fs.rmSync(work, { recursive: true, force: true }); });

		/** guard_demo under mpirun; with `vars`, the guard is preloaded and the variables passed to every rank. */
		const run = (vars: Record<string, string> | null, args: string[] = [], ranks = 2): Promise<ExecuteResult> => {
			const argv: string[] = [...launch];
			const np = argv.indexOf('-np');
			argv[np + 1] = String(ranks);
			const extra: string[] = [];
			if (vars) {
				for (const [k, v] of Object.entries({ LD_PRELOAD: guard, GPUMPI_GUARD_DIR: work, ...vars })) { extra.push(...env(k, v)); }
			}
			argv.splice(np, 0, ...extra);
			const childEnv: Record<string, string | undefined> = { ...process.env, UCX_NET_DEVICES: 'lo' };
			for (const k of Object.keys(childEnv)) { if (k.startsWith('GPUMPI_GUARD')) { delete childEnv[k]; } }
			return execute([...argv, demo, ...args], { cwd: work, timeoutMs: RUN_TIMEOUT_MS, env: childEnv }).result;
		};

		it('the thread level a program got stays the one it got (mpi4py asks MPI_THREAD_MULTIPLE): the same line with and without the guard, 3 runs each', async function () {
			// Debian's python3-mpi4py is built against Open MPI; under MPICH's launcher it would not start.
			if (flavor !== 'openmpi' || spawnSync('/usr/bin/python3', ['-c', 'import mpi4py']).status !== 0) { this.skip(); }
			const prog = ['/usr/bin/python3', path.join(ROOT, 'test', 'foreign', 'mpi4py_thread.py')];
			const once = async (guarded: boolean): Promise<string> => {
				const argv: string[] = [...launch0];
				const np = argv.indexOf('-np');
				if (guarded) { argv.splice(np, 0, ...env('LD_PRELOAD', guard), ...env('GPUMPI_GUARD_DIR', work), ...env('GPUMPI_GUARD', 'report')); }
				const childEnv: Record<string, string | undefined> = { ...process.env, UCX_NET_DEVICES: 'lo' };
				for (const k of Object.keys(childEnv)) { if (k.startsWith('GPUMPI_GUARD') || k.startsWith('MPI4PY_')) { delete childEnv[k]; } }
				const r = await execute([...argv, ...prog], { cwd: work, timeoutMs: RUN_TIMEOUT_MS, env: childEnv }).result;
				assert.equal(r.exitCode, 0, describeRun(r));
				return r.stdout.split('\n').filter((l) => l.startsWith('rank ')).map((l) => l.replace(/ pml .*/, '')).sort().join('\n');
			};
			for (let trial = 0; trial < 3; trial++) {
				const plain = await once(false);
				assert.equal(plain, 'rank 0 thread multiple\nrank 1 thread multiple', 'mpi4py\'s default level, granted');
				assert.equal(await once(true), plain, `trial ${trial + 1}: the guard left the level as it was`);
			}
		});

		it('report mode: output bitwise the same as without the guard; exact counts and bytes per call, peer and collective', async () => {
			const plain = await run(null);
			assert.equal(plain.exitCode, 0, describeRun(plain));
			assert.match(plain.stdout, /^CHECKSUM [0-9a-f]{16} [0-9a-f]{16}\nRESULT PASS\n$/, describeRun(plain));
			const guarded = await run({});
			assert.equal(guarded.exitCode, 0, describeRun(guarded));
			assert.equal(guarded.stdout, plain.stdout, 'the program printed the same bytes under the guard');
			assert.doesNotMatch(guarded.stderr, /gpumpi-guard/, 'report mode says nothing on stderr');
			const reports = readReports(work);
			assert.equal(reports.length, 2, `one report per rank: ${fs.readdirSync(work).join(', ')}`);
			for (const r of reports) {
				const peer = 1 - r.rank;
				assert.equal(r.schema, 'gpumpi-guard-rank/1');
				assert.equal(r.size, 2);
				assert.equal(r.mode, 'report');
				assert.equal(r.stage, false);
				assert.equal(r.finalized, true);
				assert.equal(r.mpi.cudaAware, 'no', 'Debian builds are not CUDA-aware (MPIX_Query_cuda_support() = 0)');
				assert.match(r.mpi.library, flavor === 'openmpi' ? /^Open MPI v4\.1\.4/ : /^MPICH Version: 4\.0\.2, MPICH Device: ch4:ucx$/);
				assert.equal(r.mpi.pml, flavor === 'openmpi' ? 'ob1' : 'ucx', 'Open MPI picks ob1 here (no UCX device but lo); MPICH is built ch4:ucx');
				assert.equal(r.cuda.available, false);
				assert.ok(r.wallS > 0 && r.wallS < 120, `wallS ${r.wallS}`);
				const calls = Object.fromEntries(r.calls.map(c => [c.name, [c.count, c.bytes]]));
				assert.deepEqual(calls, EXPECTED_CALLS, `rank ${r.rank} calls`);
				for (const c of r.calls) { assert.ok(c.timeInMpiNs > 0 && c.timeInMpiNs < 60e9, `${c.name} timeInMpiNs ${c.timeInMpiNs}`); }
				assert.deepEqual(r.peers, [{
					peer, sendCalls: 13, recvCalls: 13, sentBytes: 1840, recvBytes: 1840, largestMessage: 400,
					bufferClasses: { ...NO_CLASSES, host: 24 }, path: 'host-only',  // the zero-byte messages have no buffer class
				}], `rank ${r.rank} peers (MPI_ANY_SOURCE and matched-probe receives counted for their real source; the reversed communicator's ranks translated)`);
				assert.deepEqual(r.collectives, [
					{ name: 'MPI_Bcast', count: 1, bytes: 40, bufferClasses: { ...NO_CLASSES, host: 1 } },
					{ name: 'MPI_Allreduce', count: 1, bytes: 64, bufferClasses: { ...NO_CLASSES, host: 2 } },
					{ name: 'MPI_Gather', count: 1, bytes: 8, bufferClasses: { ...NO_CLASSES, host: r.rank === 0 ? 2 : 1 } },
				]);
				assert.deepEqual(r.dangers, []);
				assert.deepEqual(r.unsupported, [{ call: 'MPI_Sendrecv_replace', count: 1, note: 'passed through, not observed' }]);
				assert.equal(r.overhead.classifyQueries, 0, 'no driver in this process: no query');
				assert.ok(r.overhead.cacheHits >= 10, `steady state served from the cache: ${r.overhead.cacheHits} hits`);
			}
		});

		it('a Fortran program (use mpi, built with mpif90): output identical; MPICH\'s bindings are observed, Open MPI\'s bypass the guard and every rank says so', async function () {
			const fc = flavor === 'openmpi' ? 'mpif90.openmpi' : 'mpif90.mpich';
			const exe = path.join(work, 'f_send');
			const built = await execute([fc, '-o', exe, path.join(ROOT, 'test', 'foreign', 'f_send.f90')], { cwd: work, timeoutMs: RUN_TIMEOUT_MS }).result;
			assert.equal(built.exitCode, 0, describeRun(built));
			const launch = (vars: Record<string, string> | null): Promise<ExecuteResult> => {
				const argv: string[] = [...launch0];
				const np = argv.indexOf('-np');
				const extra: string[] = [];
				if (vars) { for (const [k, v] of Object.entries({ LD_PRELOAD: guard, GPUMPI_GUARD_DIR: work, ...vars })) { extra.push(...env(k, v)); } }
				argv.splice(np, 0, ...extra);
				const childEnv: Record<string, string | undefined> = { ...process.env, UCX_NET_DEVICES: 'lo' };
				for (const k of Object.keys(childEnv)) { if (k.startsWith('GPUMPI_GUARD')) { delete childEnv[k]; } }
				return execute([...argv, exe], { cwd: work, timeoutMs: RUN_TIMEOUT_MS, env: childEnv }).result;
			};
			const plain = await launch(null);
			assert.equal(plain.exitCode, 0, describeRun(plain));
			assert.match(plain.stdout, /SUM +1049600\.0/);
			const guarded = await launch({});
			assert.equal(guarded.exitCode, 0, describeRun(guarded));
			assert.equal(guarded.stdout, plain.stdout);
			assert.doesNotMatch(guarded.stderr, /gpumpi-guard/, 'report mode says nothing on stderr, also when bypassed');
			const reports = readReports(work);
			assert.equal(reports.length, 2, describeRun(guarded));
			for (const r of reports) {
				if (flavor === 'mpich') {
					assert.equal(r.mode, 'report');
					const calls = Object.fromEntries(r.calls.map(c => [c.name, c.count]));
					assert.deepEqual(calls, r.rank === 0 ? { MPI_Send: 1, MPI_Allreduce: 1 } : { MPI_Recv: 1, MPI_Allreduce: 1 });
				} else {
					assert.equal(r.mode, 'off');
					assert.match((r as unknown as { off: string }).off, /libmpi_mpifh\.so\.\d+ is loaded: Open MPI's Fortran bindings call PMPI_\* directly/);
					assert.deepEqual(r.calls, []);
				}
			}
		});

		// One rank: the two-rank form failed once in 3 suite runs under MPICH (a report or the RESULT line missing; not
		// reproduced in 20 standalone runs). Likely cause, not confirmed: exiting without MPI_Finalize is erroneous and
		// the launcher may kill the other rank before its exit handlers run; with one rank there is no other rank.
		it('a program that exits without MPI_Finalize still gets its report ("finalized": false), from exit', async () => {
			const r = await run({}, ['--no-finalize'], 1);
			assert.match(r.stdout, /RESULT PASS/, describeRun(r));
			const reports = readReports(work);
			assert.equal(reports.length, 1, describeRun(r));
			assert.equal(reports[0].finalized, false);
			assert.ok(reports[0].wallS > 0);
			assert.deepEqual(reports[0].calls.map(c => c.name), ['MPI_Bcast', 'MPI_Allreduce', 'MPI_Gather']);
		});

		it('GPUMPI_GUARD with an unknown value: a message naming it and the allowed ones, the guard off, the program unchanged', async () => {
			const r = await run({ GPUMPI_GUARD: 'repor' });
			assert.equal(r.exitCode, 0, describeRun(r));
			assert.match(r.stdout, /RESULT PASS/);
			assert.match(r.stderr, /gpumpi-guard: rank [01]: GPUMPI_GUARD='repor' is not one of report, warn, fix, off: the guard is off/);
			assert.deepEqual(readReports(work), [], 'no report when the guard is off');
		});

		it('GPUMPI_GUARD=off writes nothing and says nothing', async () => {
			const r = await run({ GPUMPI_GUARD: 'off' });
			assert.equal(r.exitCode, 0, describeRun(r));
			assert.doesNotMatch(r.stderr, /gpumpi-guard/);
			assert.deepEqual(readReports(work), []);
		});

		for (const bad of ['-5', '12k', '99999999999999999999999', '0']) {
			it(`GPUMPI_GUARD_STAGE_MIN=${bad} is rejected with a message; the default is used and the report written`, async () => {
				const r = await run({ GPUMPI_GUARD_STAGE_MIN: bad });
				assert.equal(r.exitCode, 0, describeRun(r));
				assert.match(r.stdout, /RESULT PASS/);
				assert.ok(r.stderr.includes(`GPUMPI_GUARD_STAGE_MIN='${bad}' is not a positive number of bytes: ignored (1048576)`), describeRun(r));
				assert.equal(readReports(work).length, 2);
			});
		}

		it('GPUMPI_GUARD_STAGE=1 on every rank: agreed, active, said once (rank 0, warn); host buffers are never staged; =2 is rejected', async () => {
			const r = await run({ GPUMPI_GUARD_STAGE: '1', GPUMPI_GUARD: 'warn' });
			assert.equal(r.exitCode, 0, describeRun(r));
			assert.match(r.stdout, /RESULT PASS/);
			assert.equal((r.stderr.match(/GPUMPI_GUARD_STAGE=1: active \(chunk 16777216, 4 buffers\)/g) ?? []).length, 1, describeRun(r));
			const reports = readReports(work);
			assert.equal(reports.length, 2);
			for (const rep of reports) {
				assert.equal(rep.stage, true);
				assert.equal(rep.mode, 'warn');
				assert.deepEqual([rep.stageAsked, rep.stageAgreed, rep.stageRanks], [true, true, 2]);
			}
			fs.rmSync(work, { recursive: true, force: true });
			fs.mkdirSync(work);
			const r2 = await run({ GPUMPI_GUARD_STAGE: '2' });
			assert.match(r2.stderr, /GPUMPI_GUARD_STAGE='2' is not 0 or 1: ignored \(0\)/);
			assert.equal(r2.exitCode, 0, describeRun(r2));
		});

		it('GPUMPI_GUARD_STAGE=1 on one rank of 2 (MPMD, `env` sets it for rank 0 only): STAGE is off everywhere, one message', async () => {
			// Every app context sets its own environment with `env`: a variable given to mpirun before the first
			// context does not reach the second one (both launchers), and a rank without the guard hangs the others' MPI_Init.
			const argv: string[] = [...launch];
			argv[argv.indexOf('-np') + 1] = '1';
			const vars = [`LD_PRELOAD=${guard}`, `GPUMPI_GUARD_DIR=${work}`];
			const childEnv: Record<string, string | undefined> = { ...process.env, UCX_NET_DEVICES: 'lo' };
			for (const k of Object.keys(childEnv)) { if (k.startsWith('GPUMPI_GUARD')) { delete childEnv[k]; } }
			const r = await execute([...argv, 'env', ...vars, 'GPUMPI_GUARD_STAGE=1', demo, ':', '-np', '1', 'env', ...vars, demo], { cwd: work, timeoutMs: RUN_TIMEOUT_MS, env: childEnv }).result;
			assert.equal(r.exitCode, 0, describeRun(r));
			assert.match(r.stdout, /RESULT PASS/);
			assert.equal((r.stderr.match(/GPUMPI_GUARD_STAGE=1 is set on 1 of 2 ranks: STAGE needs every rank, so it is off everywhere/g) ?? []).length, 1, describeRun(r));
			const reports = readReports(work);
			assert.equal(reports.length, 2, describeRun(r));
			assert.deepEqual(reports.map(rep => [rep.stage, rep.stageAsked, rep.stageAgreed, rep.stageRanks]), [[false, true, false, 1], [false, false, false, 1]]);
		});

		it('a report directory that does not exist: one stderr line per rank, the program still exits 0', async () => {
			const r = await run({ GPUMPI_GUARD_DIR: path.join(work, 'missing', 'dir') });
			assert.equal(r.exitCode, 0, describeRun(r));
			assert.match(r.stdout, /RESULT PASS/);
			assert.equal((r.stderr.match(/gpumpi-guard: rank [01]: report not written: cannot create .*No such file or directory/g) ?? []).length, 2, describeRun(r));
		});

		it('--bench: the per-call overhead on host buffers is measured against PMPI in the same run', async () => {
			const r = await run({}, ['--bench', '--iters', '1000']);
			assert.equal(r.exitCode, 0, describeRun(r));
			const line = r.stdout.split('\n').find(l => l.startsWith('{"bench"'));
			assert.ok(line, describeRun(r));
			const b = JSON.parse(line) as { pingpong: { addedNsPerCall: number; plainNsPerRoundTrip: number }; procNullSend: { addedNsPerCall: number } };
			assert.ok(b.pingpong.plainNsPerRoundTrip > 0);
			// the target (< 100 ns) is checked by the recorded benchmark (docs/guard.md); on this shared 2-core machine
			// only a gross regression is a failure here
			assert.ok(b.procNullSend.addedNsPerCall < 1000, `MPI_Send to MPI_PROC_NULL costs ${b.procNullSend.addedNsPerCall} ns more under the guard`);
			const reports = readReports(work);
			const sends = reports[0].calls.find(c => c.name === 'MPI_Send');
			assert.ok(sends && sends.count > 1000, 'the guarded half of the benchmark went through the guard');
		});
	});
}
