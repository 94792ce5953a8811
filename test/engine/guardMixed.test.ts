/**
 * A mixed guard launch (docs/guard.md "Mixed launches"): one rank preloaded with libgpumpi_guard.so, the other not
 * (Open MPI MPMD `-x LD_PRELOAD=… ./a : ./a`, MPICH `-env`). Before the fix the guard rank waited for ever in its
 * PMPI_Comm_dup at MPI_Init. Real mpirun, real guard_demo: the run must end as the program does (exit 0, its checksum),
 * the guard rank says why on stderr and writes an "off" report; with every rank preloaded and no
 * GPUMPI_GUARD_EVERY_RANK, the init files agree and both ranks report normally (the files are removed after).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot } from '../../extension/core/native';
import { execute, type ExecuteResult } from '../../extension/core/proc';
import { parseGuardReport } from '../../extension/core/parsers/guardReport';

const ROOT = repoRoot() ?? process.cwd();
const RUN_TIMEOUT_MS = 60_000;

const FLAVORS = [
	{ flavor: 'openmpi', launch: ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe'], global: (k: string, v: string) => ['-x', `${k}=${v}`], local: (k: string, v: string) => ['-x', `${k}=${v}`] },
	{ flavor: 'mpich', launch: ['mpirun.mpich'], global: (k: string, v: string) => ['-genv', k, v], local: (k: string, v: string) => ['-env', k, v] },
] as const;

function describeRun(r: ExecuteResult): string {
	return `exit ${r.exitCode} signal ${r.signal} ${r.error ?? ''}\n--- stdout\n${r.stdout.slice(-3000)}\n--- stderr\n${r.stderr.slice(-3000)}`;
}

for (const { flavor, launch, global, local } of FLAVORS) {
	describe(`gpumpi-guard mixed launch under ${launch[0]}`, function () {
		this.timeout(RUN_TIMEOUT_MS * 2);
		const dir = path.join(ROOT, 'native', 'build', `engine-${flavor}`);
		const guard = path.join(dir, 'libgpumpi_guard.so');
		const prog = path.join(dir, 'examples', 'guard_demo');
		let work = '';
		before(() => { for (const p of [guard, prog]) { assert.ok(fs.existsSync(p), `${p} not built: run node scripts/ensure.mjs --all-mpis`); } });
		beforeEach(() => { work = fs.mkdtempSync(path.join(os.tmpdir(), `gpumpi-guard-mixed-${flavor}-`)); });
		afterEach(() => { fs.rmSync(work, { recursive: true, force: true }); });
		const childEnv = (): Record<string, string | undefined> => {
			const e: Record<string, string | undefined> = { ...process.env };
			for (const k of Object.keys(e)) { if (k.startsWith('GPUMPI_') || k === 'LD_PRELOAD') { delete e[k]; } }
			return e;
		};
		const reports = () => fs.readdirSync(work).filter(f => /^guard-.*\.json$/.test(f)).map(f => {
			const p = parseGuardReport(fs.readFileSync(path.join(work, f), 'utf8'));
			assert.ok(p.ok, p.ok ? '' : p.error);
			return p.report;
		}).sort((a, b) => a.rank - b.rank);

		it('one rank preloaded, one not: ends (no hang), exit 0 and the checksum, the cause on stderr, an off report', async () => {
			const argv = [...launch, ...global('GPUMPI_GUARD_DIR', work), ...global('GPUMPI_GUARD_INIT_WAIT', '2'),
				'-np', '1', ...local('LD_PRELOAD', guard), prog, ':', '-np', '1', prog];
			const t0 = Date.now();
			const r = await execute(argv, { cwd: work, timeoutMs: RUN_TIMEOUT_MS, env: childEnv() }).result;
			assert.equal(r.exitCode, 0, describeRun(r));
			assert.ok(Date.now() - t0 < RUN_TIMEOUT_MS / 2, `took ${Date.now() - t0} ms`);
			assert.match(r.stdout, /^RESULT PASS$/m, describeRun(r));
			assert.match(r.stderr, /gpumpi-guard: rank 0: only 1 of 2 ranks showed the guard .* within 2 s .*GPUMPI_GUARD_EVERY_RANK=1/, describeRun(r));
			const reps = reports();
			assert.equal(reps.length, 1, 'only the preloaded rank writes a report');
			assert.equal(reps[0].mode, 'off');
			assert.match(reps[0].off ?? '', /only 1 of 2 ranks/);
			assert.deepEqual([reps[0].calls.length, reps[0].finalized], [0, true]);
			assert.deepEqual(fs.readdirSync(work).filter(f => f.startsWith('.gpumpi-guard-init')), [], 'init file removed');
		});

		it('every rank preloaded, no GPUMPI_GUARD_EVERY_RANK: the init files agree, both ranks observe, the files are removed', async () => {
			const argv = [...launch, ...global('GPUMPI_GUARD_DIR', work), ...global('LD_PRELOAD', guard), '-np', '2', prog];
			const r = await execute(argv, { cwd: work, timeoutMs: RUN_TIMEOUT_MS, env: childEnv() }).result;
			assert.equal(r.exitCode, 0, describeRun(r));
			assert.doesNotMatch(r.stderr, /showed the guard/);
			const reps = reports();
			assert.deepEqual(reps.map(x => [x.rank, x.mode, x.off]), [[0, 'report', null], [1, 'report', null]]);
			assert.ok(reps.every(x => x.calls.length > 0));
			assert.deepEqual(fs.readdirSync(work).filter(f => f.startsWith('.gpumpi-guard-init')), []);
		});
	});
}
