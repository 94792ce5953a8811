/**
 * Cancelling a reproducer (what the VS Code progress notification's Cancel does: token → AbortController → the
 * runner's signal) kills the whole mpirun process group: real mpirun of Open MPI and MPICH, real engine, rank 1 made
 * to hang with `--inject hang` (a deliberate fake hang, the only way to have a run still going when we cancel).
 * The run's argv carries a size unique to this test, so only OUR processes are looked for in /proc afterwards.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { findEngine, type EngineFlavor } from '../../extension/core/native';
import { runIpcVariants } from '../../extension/core/repro/ipcRunner';
import { defaultSpec, type MpiFlavor } from '../../extension/core/launch/launchSpec';

/** Pids whose command line contains `token` (other helpers' gpumpi runs do not match). */
function pidsWith(token: string): number[] {
	const out: number[] = [];
	for (const d of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(d) || Number(d) === process.pid) { continue; }
		try {
			const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
			if (cmd.includes(token) && cmd.some(a => /gpumpi/.test(a))) { out.push(Number(d)); }
		} catch { /* gone */ }
	}
	return out;
}

const sleep = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms));

for (const [flavor, mpirun] of [['openmpi', 'mpirun.openmpi'], ['mpich', 'mpirun.mpich']] as Array<[MpiFlavor, string]>) {
	describe(`repro cancel under ${mpirun}`, function () {
		this.timeout(90_000);
		it('abort while rank 1 hangs: the run ends at once as timed_out/cancelled and no gpumpi process of it remains', async () => {
			const engine = findEngine(flavor as EngineFlavor, {}).path;
			assert.ok(engine, `engine '${flavor}' not built (node scripts/buildNative.mjs --engine-only --all-mpis)`);
			const sizeBytes = 4 * (300_000 + Math.floor(Math.random() * 100_000));
			const token = String(sizeBytes);
			const spec = { ...defaultSpec(flavor, mpirun, 4), loopbackOnly: flavor === 'openmpi' };
			const abort = new AbortController();
			const started = Date.now();
			const running = runIpcVariants({
				engine, spec, configs: [{ label: 'default', env: [['UCX_NET_DEVICES', 'lo']], mca: [], extraArgs: [] }],
				variants: ['direct', 'bounce'], sizeBytes, memory: 'host', timeoutMs: 120_000, engineArgs: ['--inject', 'hang'], signal: abort.signal, trials: 2,
			});
			// Wait until the ranks exist (or at most 20 s), then cancel.
			let seen: number[] = [];
			for (let i = 0; i < 100 && seen.length < 3; i++) { await sleep(200); seen = pidsWith(token); }
			assert.ok(seen.length >= 3, `the ranks never started (saw ${seen.length} processes)`);
			await sleep(1500);
			abort.abort();
			const rep = await running;
			const elapsed = Date.now() - started;
			assert.ok(elapsed < 60_000, `cancel took effect only after ${elapsed} ms`);
			// The trial cut by the cancel is not a finished trial (dropped, never a success), the second variant never
			// started, and the report says it is partial.
			assert.equal(rep.variants.length, 0);
			assert.equal(rep.partial, true);
			assert.match(rep.verdict.answer, /partial result/);
			let left = pidsWith(token);
			for (let i = 0; i < 25 && left.length > 0; i++) { await sleep(200); left = pidsWith(token); }
			assert.deepEqual(left, [], `stray processes after cancel: ${left.join(', ')}`);
		});
	});
}
