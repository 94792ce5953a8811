/**
 * gpumpi-guard's GPU half on a machine without a GPU, through a FAKE driver: native/fakes/fakeCuda.c, loaded with
 * GPUMPI_LIBCUDA by guard_demo --ipc and by the guard. CUDA IPC cannot be produced for real here, so the fake makes
 * "device memory" POSIX shared memory: cuIpcOpenMemHandle really maps the owner's segment in the importer, and MPI's
 * receive really lands in the owner's memory, where the owner checks it word by word. What is real: both MPIs, the
 * guard's interposition of cuIpcOpenMemHandle_v2 (resolved through the global scope as in a program linked with
 * -lcuda), its classification through cuPointerGetAttributes, its danger records, warn lines and fix-mode bounce
 * buffers (cuMemAlloc / cuMemcpyDtoD of the fake: if the bounce were not copied back, the owner would see its poison).
 * What it cannot show: that the unguarded receive crashes or corrupts with real UCX cuda_ipc — that is the H200 run.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot } from '../../extension/core/native';
import { execute, type ExecuteResult } from '../../extension/core/proc';

const ROOT = repoRoot() ?? process.cwd();
const RUN_TIMEOUT_MS = 120_000;
const SIZE = 1 << 20;

interface Danger { kind: string; call: string; peer: number | null; count: number; bytes: number; firstSite: { address: string; symbol: string | null; object: string | null; offset: string }; detail: string; action: string }
interface RankReport {
	rank: number; mode: string; mpi: { pml: string | null; ucxCudaIpc: boolean | null; cudaAware: string };
	cuda: { available: boolean; detail: string };
	peers: Array<{ peer: number; bufferClasses: Record<string, number> }>;
	dangers: Danger[]; overhead: { classifyQueries: number; cacheHits: number };
}

// Open MPI's pml ucx needs to be told it may use any device here (only lo exists: docs/observations.md).
const FLAVORS = [
	{ flavor: 'openmpi', launch: ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--mca', 'pml', 'ucx', '--mca', 'pml_ucx_devices', 'any', '--mca', 'pml_ucx_tls', 'any', '-np', '4'], env: (k: string, v: string) => ['-x', `${k}=${v}`] },
	{ flavor: 'mpich', launch: ['mpirun.mpich', '-np', '4'], env: (k: string, v: string) => ['-env', k, v] },
] as const;

function describeRun(r: ExecuteResult): string {
	return `exit ${r.exitCode} signal ${r.signal} ${r.error ?? ''}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-4000)}`;
}

for (const { flavor, launch, env } of FLAVORS) {
	describe(`gpumpi-guard with IPC imports (fake driver) under ${launch[0]}`, function () {
		this.timeout(RUN_TIMEOUT_MS * 2);
		const dir = path.join(ROOT, 'native', 'build', `engine-${flavor}`);
		const guard = path.join(dir, 'libgpumpi_guard.so');
		const fake = path.join(dir, 'libgpumpi_fakecuda.so');
		const demo = path.join(dir, 'examples', 'guard_demo');
		let work = '';
		before(() => { for (const p of [guard, fake, demo]) { assert.ok(fs.existsSync(p), `${p} not built: run node scripts/ensure.mjs --all-mpis`); } });
		beforeEach(() => { work = fs.mkdtempSync(path.join(os.tmpdir(), `gpumpi-guard-ipc-${flavor}-`)); });
		afterEach(() => { fs.rmSync(work, { recursive: true, force: true }); });

		const run = async (mode: string | null, extra: string[] = []): Promise<{ r: ExecuteResult; reports: RankReport[] }> => {
			const vars: Record<string, string> = { GPUMPI_LIBCUDA: fake, UCX_NET_DEVICES: 'lo', ...(mode ? { LD_PRELOAD: guard, GPUMPI_GUARD: mode, GPUMPI_GUARD_DIR: work } : {}) };
			const argv: string[] = [...launch];
			argv.splice(argv.indexOf('-np'), 0, ...Object.entries(vars).flatMap(([k, v]) => env(k, v)));
			const childEnv: Record<string, string | undefined> = { ...process.env };
			for (const k of Object.keys(childEnv)) { if (k.startsWith('GPUMPI_') || k === 'UCX_TLS') { delete childEnv[k]; } }
			const r = await execute([...argv, demo, '--ipc', '--size', String(SIZE), ...extra], { cwd: work, timeoutMs: RUN_TIMEOUT_MS, env: childEnv }).result;
			const files = fs.readdirSync(work).filter(f => /^guard-.*\.json$/.test(f));
			const reports = files.map(f => JSON.parse(fs.readFileSync(path.join(work, f), 'utf8')) as RankReport).sort((a, b) => a.rank - b.rank);
			return { r, reports };
		};
		const assertVerified = (r: ExecuteResult): void => {
			assert.equal(r.exitCode, 0, describeRun(r));
			assert.match(r.stdout, /^IPC rank 0: 262144 words, 0 wrong$/m, describeRun(r));
			assert.match(r.stdout, /^IPC rank 2: 262144 words, 0 wrong$/m, describeRun(r));
			assert.match(r.stdout, /^RESULT PASS$/m);
		};
		/** The importers' (ranks 1 and 3) IPC danger: `call` with rank 2 / rank 0, with its call site in guard_demo. */
		const assertImportDanger = (reports: RankReport[], action: string, call = 'MPI_Irecv'): void => {
			assert.equal(reports.length, 4);
			for (const rep of reports) {
				assert.equal(rep.mpi.pml, 'ucx');
				assert.equal(rep.mpi.ucxCudaIpc, true, 'UCX_TLS unset: cuda_ipc allowed');
				assert.equal(rep.cuda.available, true, rep.cuda.detail);
				// one query per new range: the device buffer or import, and the host pages of the handle / result variables on
				// the stack (one or two pages, as the stack falls); the import itself is known from cuIpcOpenMemHandle
				assert.ok(rep.overhead.classifyQueries >= 1 && rep.overhead.classifyQueries <= 4, `driver queried once per new range: ${rep.overhead.classifyQueries}`);
				const ipc = rep.dangers.filter(d => d.kind === 'ipc-import-ucx-cuda-ipc');
				if (rep.rank % 2 === 0) { assert.deepEqual(ipc, [], `owner ${rep.rank} receives nothing into an import`); continue; }
				const from = rep.rank === 1 ? 2 : 0;
				assert.equal(ipc.length, 1, JSON.stringify(rep.dangers));
				const d = ipc[0];
				assert.equal(d.call, call);
				assert.equal(d.peer, from);
				assert.equal(d.count, 1);
				assert.equal(d.bytes, SIZE);
				assert.equal(d.action, action);
				assert.equal(d.firstSite.object, demo, 'the call site is in the program, not in the guard or MPI');
				assert.match(d.firstSite.address, /^0x[0-9a-f]+$/);
				assert.match(d.detail, new RegExp(`imported with cudaIpcOpenMemHandle at 0x[0-9a-f]+ \\(${SIZE} bytes\\)`));
				assert.equal(rep.peers.find(p => p.peer === from)?.bufferClasses['ipc-import'], 1);
			}
		};

		it('without the guard the scenario runs and verifies (the fake maps the owner\'s memory for real)', async () => {
			const { r, reports } = await run(null);
			assertVerified(r);
			assert.deepEqual(reports, []);
		});

		it('report: the importers\' MPI_Irecv into the import is a danger with its call site; nothing printed, data unchanged', async () => {
			const { r, reports } = await run('report');
			assertVerified(r);
			assert.doesNotMatch(r.stderr, /gpumpi-guard/);
			assertImportDanger(reports, 'none');
		});

		it('warn: one stderr line per importer naming the call, the kind and the site', async () => {
			const { r, reports } = await run('warn');
			assertVerified(r);
			for (const rank of [1, 3]) {
				const lines = r.stderr.split('\n').filter(l => l.startsWith(`gpumpi-guard: rank ${rank}: MPI_Irecv: ipc-import-ucx-cuda-ipc at guard_demo `));
				assert.equal(lines.length, 1, describeRun(r));
				assert.match(lines[0], /set GPUMPI_GUARD=fix or see docs\/guard\.md$/);
			}
			assertImportDanger(reports, 'warned');
		});

		it('fix: the receive goes through a bounce buffer and is copied into the import at MPI_Wait; the owners verify it', async () => {
			const { r, reports } = await run('fix');
			assertVerified(r);
			assertImportDanger(reports, 'bounced');
		});

		// every other bounce path: blocking, persistent (a bounce buffer per request), and sends from the import
		// (a send's bounce is filled from the import first: were it not, the receiver would get stale bytes)
		const paths: Array<{ args: string[]; call: string }> = [
			{ args: ['--via', 'recv'], call: 'MPI_Recv' },
			{ args: ['--via', 'persistent'], call: 'MPI_Start' },
			{ args: ['--send-from-import'], call: 'MPI_Isend' },
			{ args: ['--send-from-import', '--via', 'recv'], call: 'MPI_Send' },
			{ args: ['--send-from-import', '--via', 'persistent'], call: 'MPI_Start' },
			// the driver in a local scope only (as cudart and UCX's CUDA module load it): the IPC call still reaches the
			// guard's exported wrapper, which must find the real entry point in that library, not fail it
			{ args: ['--cuda-local'], call: 'MPI_Irecv' },
		];
		for (const p of paths) {
			it(`fix with ${p.args.join(' ')}: ${p.call} on the import is bounced and the data arrives intact`, async () => {
				const { r, reports } = await run('fix', p.args);
				assertVerified(r);
				assertImportDanger(reports, 'bounced', p.call);
			});
		}
	});
}
