/**
 * gpumpi-guard's STAGE transfer (GPUMPI_GUARD_STAGE=1, docs/guard.md "STAGE") on a machine without a GPU: the FAKE
 * driver (native/fakes/fakeCuda.c, through GPUMPI_LIBCUDA) makes "device memory" shared memory, so the guard classifies
 * guard_stage's buffers as device memory and its own libgpumpi moves them through the shared-segment protocol (MPI
 * is not CUDA-aware here: the path is host-staged). What is real: both MPIs, the header protocol on the program's
 * envelope, the receive queue with MPI_Improbe, the generalized requests, the probes and the cancel; every byte and
 * status field is checked by guard_stage itself (100 checks). What it cannot show: bandwidth and host memory growth
 * with a real GPU (scripts/gpu/guardStage.sh on the H200).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot } from '../../extension/core/native';
import { execute, type ExecuteResult } from '../../extension/core/proc';

const ROOT = repoRoot() ?? process.cwd();
const RUN_TIMEOUT_MS = 120_000;
const SIZE = 2 << 20;
/** guard_stage's device messages of SIZE: a, b (Iprobe + Recv), c (ANY_TAG), 3 for Waitany, 3 for Testsome. */
const STAGED = 9;

interface StageDetail { stagingBytes: number; stagedPeers: number[]; peers: Array<{ peer: number; sentMessages: number; sentBytes: number; recvMessages: number; recvBytes: number }>; refused: Record<string, number> }
interface RankReport { rank: number; stage: boolean; stageAgreed: boolean; stageDetail?: StageDetail; dangers: Array<{ kind: string; call: string; peer: number | null; count: number; action: string }> }

const FLAVORS = [
	{ flavor: 'openmpi', launch: ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '-np', '2'], env: (k: string, v: string) => ['-x', `${k}=${v}`] },
	{ flavor: 'mpich', launch: ['mpirun.mpich', '-np', '2'], env: (k: string, v: string) => ['-env', k, v] },
] as const;

function describeRun(r: ExecuteResult): string {
	return `exit ${r.exitCode} signal ${r.signal} ${r.error ?? ''}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-4000)}`;
}

for (const { flavor, launch, env } of FLAVORS) {
	describe(`gpumpi-guard STAGE (fake driver) under ${launch[0]}`, function () {
		this.timeout(RUN_TIMEOUT_MS * 2);
		const dir = path.join(ROOT, 'native', 'build', `engine-${flavor}`);
		const guard = path.join(dir, 'libgpumpi_guard.so');
		const fake = path.join(dir, 'libgpumpi_fakecuda.so');
		const prog = path.join(dir, 'examples', 'guard_stage');
		let work = '';
		before(() => { for (const p of [guard, fake, prog]) { assert.ok(fs.existsSync(p), `${p} not built: run node scripts/ensure.mjs --all-mpis`); } });
		beforeEach(() => { work = fs.mkdtempSync(path.join(os.tmpdir(), `gpumpi-guard-stage-${flavor}-`)); });
		afterEach(() => { fs.rmSync(work, { recursive: true, force: true }); });

		const run = async (vars: Record<string, string>, guarded: boolean): Promise<{ r: ExecuteResult; reports: RankReport[] }> => {
			const all: Record<string, string> = { GPUMPI_LIBCUDA: fake, ...(guarded ? { LD_PRELOAD: guard, GPUMPI_GUARD_DIR: work } : {}), ...vars };
			const argv: string[] = [...launch];
			argv.splice(argv.indexOf('-np'), 0, ...Object.entries(all).flatMap(([k, v]) => env(k, v)));
			const childEnv: Record<string, string | undefined> = { ...process.env };
			for (const k of Object.keys(childEnv)) { if (k.startsWith('GPUMPI_') || k === 'UCX_TLS') { delete childEnv[k]; } }
			const r = await execute([...argv, prog, '--size', String(SIZE)], { cwd: work, timeoutMs: RUN_TIMEOUT_MS, env: childEnv }).result;
			const files = fs.readdirSync(work).filter(f => /^guard-.*\.json$/.test(f));
			const reports = files.map(f => JSON.parse(fs.readFileSync(path.join(work, f), 'utf8')) as RankReport).sort((a, b) => a.rank - b.rank);
			return { r, reports };
		};
		const assertPass = (r: ExecuteResult): void => {
			assert.equal(r.exitCode, 0, describeRun(r));
			assert.match(r.stdout, /^STAGE checks 100 failed 0$/m, describeRun(r));
			assert.match(r.stdout, /^RESULT PASS$/m);
		};

		it('STAGE=1: every byte and status right, the staged messages counted exactly per peer, the staging held once', async () => {
			const { r, reports } = await run({ GPUMPI_GUARD_STAGE: '1' }, true);
			assertPass(r);
			assert.equal(reports.length, 2);
			for (const rep of reports) {
				assert.equal(rep.stage, true, JSON.stringify(rep));
				const d = rep.stageDetail;
				assert.ok(d, 'stageDetail present');
				assert.deepEqual(d.stagedPeers, [1 - rep.rank]);
				assert.ok(d.stagingBytes >= 4 * (16 << 20), `the shared segment: ${d.stagingBytes}`);
				assert.deepEqual(Object.values(d.refused).filter(n => n !== 0), []);
				const p = d.peers.find(x => x.peer === 1 - rep.rank);
				assert.ok(p, JSON.stringify(d));
				const sent = rep.rank === 0 ? STAGED : 0;
				const recv = rep.rank === 1 ? STAGED : 0;
				assert.deepEqual([p.sentMessages, p.sentBytes, p.recvMessages, p.recvBytes], [sent, sent * SIZE, recv, recv * SIZE]);
				// MPI is not CUDA-aware here: every device buffer is the device-buffer-mpi-not-cuda-aware danger, and the
				// calls STAGE took are counted apart, as action "staged" (what the merge reports as fixed).
				const staged = rep.dangers.filter(x => x.action === 'staged');
				assert.ok(staged.every(x => x.kind === 'device-buffer-mpi-not-cuda-aware'), JSON.stringify(rep.dangers));
				assert.equal(staged.reduce((n, x) => n + x.count, 0), STAGED, JSON.stringify(rep.dangers));
				if (rep.rank === 0) { assert.deepEqual(rep.dangers.filter(x => x.action !== 'staged'), [], 'every device send went through STAGE'); }
			}
		});

		it('the program prints the same bytes without the guard, under report mode and under STAGE=1', async () => {
			const plain = await run({}, false);
			assertPass(plain.r);
			const report = await run({ GPUMPI_GUARD: 'report' }, true);
			const stage = await run({ GPUMPI_GUARD_STAGE: '1' }, true);
			assert.equal(report.r.stdout, plain.r.stdout);
			assert.equal(stage.r.stdout, plain.r.stdout);
			assert.equal(report.reports[0].stage, false);
			// without STAGE the same device calls are dangers MPI got as they were
			for (const rep of report.reports) {
				assert.ok(rep.dangers.length > 0 && rep.dangers.every(x => x.action === 'none'), JSON.stringify(rep.dangers));
			}
		});

		it('a staged message below the threshold is not staged (GPUMPI_GUARD_STAGE_MIN above the size): counts 0, still correct', async () => {
			const { r, reports } = await run({ GPUMPI_GUARD_STAGE: '1', GPUMPI_GUARD_STAGE_MIN: String(SIZE + 1) }, true);
			assertPass(r);
			for (const rep of reports) { assert.equal(rep.stage, true); assert.deepEqual(rep.stageDetail?.peers, []); }
		});

		it('bad knob values are rejected with a message naming them; the defaults apply and the run is correct', async () => {
			const { r, reports } = await run({ GPUMPI_GUARD_STAGE: '1', GPUMPI_GUARD_STAGE_CHUNK: '12k', GPUMPI_GUARD_STAGE_BUFFERS: '1' }, true);
			assertPass(r);
			assert.match(r.stderr, /GPUMPI_GUARD_STAGE_CHUNK='12k' is not a number in 4096\.\.1073741824: ignored \(16777216\)/);
			assert.match(r.stderr, /GPUMPI_GUARD_STAGE_BUFFERS='1' is not a number in 2\.\.64: ignored \(4\)/);
			assert.equal(reports[0].stageDetail?.peers[0]?.sentMessages, STAGED);
		});

		it('the knobs size the staging: chunk 1 MiB x 2 buffers = 2 MiB held per peer, still correct', async () => {
			const { r, reports } = await run({ GPUMPI_GUARD_STAGE: '1', GPUMPI_GUARD_STAGE_CHUNK: String(1 << 20), GPUMPI_GUARD_STAGE_BUFFERS: '2' }, true);
			assertPass(r);
			for (const rep of reports) assert.equal(rep.stageDetail?.stagingBytes, 2 << 20);
		});
	});
}
