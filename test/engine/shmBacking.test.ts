/**
 * Open MPI's shared-memory segments go into a directory of the launch and are removed with it
 * (extension/core/launch/shmBacking.ts), against real mpirun of Open MPI 4.1.4 and the real engine:
 * - the transport is the same with and without it: the same "Using <btl> btl for send to <rank>" lines of
 *   btl_base_verbose (the directory only moves the files; a directory missing on a node would not be the same);
 * - a rank SIGKILLed while the segments exist (Open MPI then skips its own removal: before this, every such run left
 *   its vader_segment.* files in /dev/shm until reboot): afterwards the directory is gone, the launch's notes say how
 *   many segments were removed, and nothing new named vader_segment.* is in /dev/shm.
 * Our processes are found by an --iters value unique to this process (faultHelpers.pidsWith).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { findEngine } from '../../extension/core/native';
import { defaultSpec } from '../../extension/core/launch/launchSpec';
import { LocalHost } from '../../extension/core/hosts/localHost';
import { runLaunch } from '../../extension/core/launch/runLaunch';
import { pidsWith, sleep, waitForRanks } from './faultHelpers';

const MPIRUN = 'mpirun.openmpi';
const shmEntries = (): string[] => fs.readdirSync('/dev/shm');
const argvOf = (pid: number): string[] => { try { return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'); } catch { return []; } };

/** The BTL picked per destination rank, one entry per verbose line, sorted (each rank prints its own). */
function btlChoices(text: string): string[] {
	return [...text.matchAll(/Using (\w+) btl for send to \[\[\d+,\d+\],(\d+)\]/g)].map(m => `${m[1]}->${m[2]}`).sort();
}

describe('Open MPI shared-memory segments: a private directory per launch, removed after it (real mpirun)', function () {
	this.timeout(120_000);
	let engine = '';
	before(() => {
		engine = findEngine('openmpi', {}).path ?? '';
		assert.ok(engine, 'the Open MPI engine is not built (node scripts/ensure.mjs --all-mpis)');
	});

	it('the same BTL for every pair with and without the private directory (btl_base_verbose), and the directory is gone afterwards', async () => {
		const spec = { ...defaultSpec('openmpi', MPIRUN, 4), mca: [['btl_base_verbose', '30']] as Array<[string, string]> };
		const program = [engine, 'map', '--memory', 'host', '--large', '64K', '--small', '8', '--iters', '3'];
		const before = new Set(shmEntries());
		const ours = await runLaunch(spec, program, { host: new LocalHost(), timeoutMs: 60_000 });
		// "Without": the user chose Open MPI's own default, /dev/shm, so the product adds nothing.
		const theirs = await runLaunch({ ...spec, mca: [...spec.mca, ['btl_vader_backing_directory', '/dev/shm']] }, program, { host: new LocalHost(), timeoutMs: 60_000 });
		assert.equal(ours.result.exitCode, 0, ours.result.stderr.slice(-2000));
		assert.equal(theirs.result.exitCode, 0, theirs.result.stderr.slice(-2000));
		const i = ours.argv.indexOf('btl_vader_backing_directory');
		assert.ok(i > 0 && /^\/dev\/shm\/gpumpi-shm-\w{8}$/.test(ours.argv[i + 1]), `no private directory on the command line: ${ours.argv.join(' ')}`);
		assert.equal(theirs.argv.filter(a => a === 'btl_vader_backing_directory').length, 1, 'a user-chosen directory was overridden');
		const a = btlChoices(ours.result.stdout + ours.result.stderr);
		const b = btlChoices(theirs.result.stdout + theirs.result.stderr);
		console.log(`  [shm] with the private directory: ${a.join(' ')}; without: ${b.join(' ')}`);
		assert.ok(a.some(c => c.startsWith('vader->')), `vader was not used at all: ${a.join(' ')}`);
		assert.deepEqual(a, b, 'the private directory changed which BTL MPI picked');
		assert.equal(fs.existsSync(ours.argv[i + 1]), false, 'the private directory is still there');
		assert.deepEqual(ours.notes.filter(n => /shared-memory/.test(n)), [], 'a normal run should leave no segment to remove');
		assert.deepEqual(shmEntries().filter(n => !before.has(n) && /^gpumpi-shm-/.test(n)), []);
	});

	// The faults that leave segments behind: Open MPI's mpirun removes a killed rank's segment itself (a SIGKILL of one
	// rank here left nothing, 1 of 1), so the segments stay where mpirun dies with its ranks (SIGKILL of the whole
	// session: an OOM kill, the product's SIGKILL after the grace, the remote session stop after an ssh loss) — and a
	// cancel, which stops the session with SIGTERM then SIGKILL.
	for (const fault of ['SIGKILL of mpirun and every rank at once', 'cancel of the run (the product stops the session)'] as const) {
		it(`${fault} while the segments exist: the directory and the segments removed, nothing new in /dev/shm`, async () => {
			const iters = String(700 + (process.pid % 100)); // 8M × 700..799: several seconds; --iters is capped at 1000
			const before = new Set(shmEntries());
			const abort = new AbortController();
			const running = runLaunch(defaultSpec('openmpi', MPIRUN, 4), [engine, 'map', '--memory', 'host', '--large', '8M', '--small', '8', '--iters', iters],
				{ host: new LocalHost(), timeoutMs: 60_000, signal: abort.signal });
			const ranks = await waitForRanks(iters, 4, 40_000);
			assert.equal(ranks.length, 4, `the 4 ranks never appeared: ${JSON.stringify(ranks)}`);
			const pids = pidsWith(iters);
			const launcher = pids.map(argvOf).find(a => a.includes('btl_vader_backing_directory')) ?? [];
			const dir = launcher[launcher.indexOf('btl_vader_backing_directory') + 1] ?? '';
			assert.match(dir, /^\/dev\/shm\/gpumpi-shm-\w{8}$/, `no private directory on mpirun's command line: ${launcher.join(' ')}`);
			let segs: string[] = [];
			for (let k = 0; k < 200 && segs.length < 4; k++) { await sleep(100); try { segs = fs.readdirSync(dir); } catch { segs = []; } }
			assert.equal(segs.length, 4, `the ranks' segments never appeared in ${dir}: ${JSON.stringify(segs)}`);
			if (fault.startsWith('SIGKILL')) { for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } } } else { abort.abort(); }
			const r = await running;
			console.log(`  [shm] ${fault} with ${segs.length} segments in ${dir}; exit ${r.result.exitCode ?? r.result.signal}; notes: ${r.notes.join(' | ').slice(0, 400)}`);
			assert.notEqual(r.result.exitCode, 0);
			assert.equal(fs.existsSync(dir), false, `${dir} is still there`);
			if (fault.startsWith('SIGKILL')) {
				assert.ok(r.notes.some(n => /removed 4 Open MPI shared-memory segment\(s\) the ranks left in \/dev\/shm\/gpumpi-shm-/.test(n)), r.notes.join('\n'));
			}
			// This job's segments (its id is in their names), not those of other runs on a shared machine (a CI run beside).
			const job = segs[0].split('.').slice(-2)[0];
			assert.deepEqual(shmEntries().filter(n => !before.has(n) && (n.startsWith('gpumpi-shm-') || (n.startsWith('vader_segment.') && n.split('.').slice(-2)[0] === job))), []);
		});
	}
});
