/**
 * `map --sbatch` / `map --follow` on the command line (extension/cli/mapBatchCli.ts): what the batch options set (srun
 * inside the job, --np from the job's task count), and the command printed to follow a job again, which must paste
 * into a shell as the same argv whatever the paths and the setup line hold. Refusals are in cli/usageErrors.test.ts.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { parseMapArgs } from '../../extension/cli/mapCli';
import { batchRequest, followCommand } from '../../extension/cli/mapBatchCli';

describe('map --sbatch options', () => {
	it('--np is the job\'s task count unless given; srun launches inside the job; the sbatch options are kept in order', () => {
		const o = parseMapArgs(['--sbatch-arg', '--nodes=2', '--sbatch-arg', '--ntasks-per-node=4', '--sbatch-arg', '-p', '--sbatch-arg', 'gpu', '--sbatch-arg', '--gpus-per-node=4']);
		assert.equal(o.np, 8);
		assert.equal(o.srun, true);
		assert.deepEqual(o.batch, { sbatch: true, sbatchArgs: ['--nodes=2', '--ntasks-per-node=4', '-p', 'gpu', '--gpus-per-node=4'], dir: null, cancelOnInterrupt: false, follow: null });
		assert.equal(parseMapArgs(['--sbatch', '--sbatch-arg', '-n6', '--np', '4']).np, 4);
		// getopt's --name=VALUE form: the value is everything after the first '=' (argv.ts).
		const d = parseMapArgs(['--sbatch-arg=--ntasks=2', '--sbatch-dir', 'runs', '--cancel-on-interrupt']);
		assert.deepEqual([d.np, d.batch.dir, d.batch.cancelOnInterrupt], [2, 'runs', true]);
	});

	it('the batch directory: relative to the CLI\'s working directory here, to the login directory on an ssh host', () => {
		const b = parseMapArgs(['--sbatch-arg', '-n2', '--sbatch-dir', 'runs/maps']).batch;
		assert.equal(batchRequest(b, '/home/u/work', false).dir, '/home/u/work/runs/maps');
		assert.equal(batchRequest(b, '/home/u/work', true).dir, 'runs/maps');
		assert.equal(batchRequest({ ...b, dir: null }, '/home/u/work', false).dir, '/home/u/work/gpumpi-batch');
	});

	it('--follow keeps the output and host options only', () => {
		const o = parseMapArgs(['--follow', 'b/j.job.json', '--host', 'login1', '--json', '--out', 'm.json', '--timeout', '60']);
		assert.equal(o.batch.follow, 'b/j.job.json');
		assert.equal(o.batch.sbatch, false);
		assert.deepEqual([o.host, o.json, o.out, o.timeoutS], ['login1', true, 'm.json', 60]);
	});

	it('the follow-again command is the argv a shell gives back, hostile values included', () => {
		const o = { host: 'alice@login1', setup: 'module load openmpi; echo "$HOME" `id`', sshConfig: 'my ssh/config', json: false, jsonLines: true, out: 'map\'s.json' };
		const text = followCommand('/home/a b/gpumpi-batch/gpumpi-map-x.job.json', o);
		const r = spawnSync('sh', ['-c', `printf '%s\\n' ${text.replace(/^gpumpi-doctor map /, '')}`], { encoding: 'utf8' });
		assert.equal(r.status, 0, r.stderr);
		assert.deepEqual(r.stdout.replace(/\n$/, '').split('\n'), ['--follow', '/home/a b/gpumpi-batch/gpumpi-map-x.job.json', '--host', 'alice@login1', '--ssh-config', 'my ssh/config', '--setup', 'module load openmpi; echo "$HOME" `id`', '--json-lines', '--out', 'map\'s.json']);
		assert.ok(text.startsWith('gpumpi-doctor map --follow '));
	});
});
