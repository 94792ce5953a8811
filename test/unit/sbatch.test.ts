/**
 * Slurm batch jobs as data (extension/core/launch/sbatch.ts): the user's sbatch options checked and the job's size
 * read from them, the batch script (its comments can hold no control character, its one command line is
 * posixQuoteArgv's), the end line, sbatch --parsable's id, and what squeue / sacct / scontrol print, on lines captured
 * from Debian's Slurm 22.05 in the lab (test/hosts/slurmLab.ts).
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BATCH_END_MARKER, batchScript, checkSbatchArgs, jobEnded, jobStateText, jobTasks, markedExitStatus, parsableJobId, parseSacctLine, parseScontrolLine, parseSqueueLine, pendingReasonText, stepdEnd } from '../../extension/core/launch/sbatch';
import { posixQuoteArgv } from '../../extension/shared/shellQuote';

describe('sbatch options and the job\'s size', () => {
	it('reads --nodes, --ntasks, --ntasks-per-node in every form sbatch takes', () => {
		assert.deepEqual(checkSbatchArgs(['--nodes=2', '--ntasks-per-node=4']), { nodes: 2, ntasks: null, ntasksPerNode: 4 });
		assert.deepEqual(checkSbatchArgs(['--nodes', '2-4', '--ntasks-per-node', '3']), { nodes: 2, ntasks: null, ntasksPerNode: 3 });
		assert.deepEqual(checkSbatchArgs(['-N2', '-n', '8']), { nodes: 2, ntasks: 8, ntasksPerNode: null });
		assert.deepEqual(checkSbatchArgs(['-N', '3', '--ntasks=5', '-p', 'gpu', '--gpus-per-node=a100:4', '-t', '1-02:00', '--account=proj', '--exclusive']),
			{ nodes: 3, ntasks: 5, ntasksPerNode: null });
		assert.deepEqual(checkSbatchArgs([]), { nodes: null, ntasks: null, ntasksPerNode: null });
	});

	it('the task count: --ntasks, else --ntasks-per-node × --nodes (one node when not given), else unknown', () => {
		assert.equal(jobTasks({ nodes: 2, ntasks: 6, ntasksPerNode: 4 }), 6);
		assert.equal(jobTasks({ nodes: 2, ntasks: null, ntasksPerNode: 4 }), 8);
		assert.equal(jobTasks({ nodes: null, ntasks: null, ntasksPerNode: 4 }), 4);
		assert.equal(jobTasks({ nodes: 2, ntasks: null, ntasksPerNode: null }), null);
	});

	it('refuses what would break the job or its following, and obvious mistakes, with the reason', () => {
		const refused: Array<[string[], RegExp]> = [
			[['--output=x.out'], /--output is not accepted here: the job's standard output is the map's stream/],
			[['-o', 'x.out'], /--output is not accepted/],
			[['-e', 'x.err'], /--error is not accepted/],
			[['--wrap=hostname'], /--wrap/],
			[['--array=1-3'], /one map is one job/],
			[['-W'], /--wait/],
			[['--parsable'], /--parsable/],
			[['--nodes=two'], /--nodes needs N or MIN-MAX, got "two"/],
			[['--nodes=0'], /--nodes needs N or MIN-MAX/],
			[['--ntasks-per-node=0'], /--ntasks-per-node needs a positive integer/],
			[['-n'], /-n needs a value/],
			[['--ntasks'], /--ntasks needs a value/],
			[['--time=10min'], /--time needs minutes, MM:SS/],
			[['--gpus-per-node=all'], /--gpus-per-node needs \[TYPE:\]N/],
			[['--partition='], /--partition needs a name/],
			[['-p', 'gpu', 'extra'], /"extra" is not an sbatch option/],
			[['--comment=a\nb'], /control character/],
			[['-N=2'], /--nodes needs N or MIN-MAX, got "=2"/],
		];
		for (const [args, re] of refused) { assert.throws(() => checkSbatchArgs(args), re, args.join(' ')); }
	});

	it('an option it does not know is passed on (sbatch judges it); its value then belongs in the same item', () => {
		assert.doesNotThrow(() => checkSbatchArgs(['--some-new-flag', '--some-new-option=3', '--ntasks=2']));
		assert.throws(() => checkSbatchArgs(['--some-new-option', '3']), /"3" is not an sbatch option/);
	});
});

describe('the batch script', () => {
	const hostile = ['env', 'GPUMPI_PROBE=a b;\'$(touch /tmp/x)\'`id`\n#SBATCH --wrap=evil', 'srun', '--job-name=gpumpi-0a1b2c3d', '-n', '4', '/opt/g pumpi/gpumpi', 'map'];

	it('is sh, its one command the launch argv quoted by posixQuoteArgv, then the end line with the exit status', () => {
		const text = batchScript({ command: hostile, about: ['what it is'] });
		assert.ok(text.startsWith('#!/bin/sh\n# what it is\n'));
		assert.ok(text.includes(`\n${posixQuoteArgv(hostile)}\nstatus=$?\nprintf '%s %s\\n' '${BATCH_END_MARKER}' "$status" >&2\nexit "$status"\n`));
	});

	it('run by a real sh: the launcher gets exactly the argv and environment, hostile values unchanged; the end line has its exit status', () => {
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-batch-script-'));
		try {
			// A stand-in srun: its argv and GPUMPI_PROBE, NUL-separated, then exit 7.
			const srun = path.join(dir, 'fake srun');
			fs.writeFileSync(srun, '#!/bin/sh\nprintf \'%s\\0\' "$@" "PROBE=$GPUMPI_PROBE"\nexit 7\n', { mode: 0o755 });
			const probe = 'a b;\'$(touch x)\'`id`\n#SBATCH --wrap=evil\n"$HOME" \\ %j';
			const argv = ['env', `GPUMPI_PROBE=${probe}`, srun, '--job-name=gpumpi-0a1b2c3d', '--mpi=pmix', '-n', '4', '/opt/g pumpi/gpumpi', 'map', '--large', '$((1<<30))'];
			const script = path.join(dir, 'job.sbatch');
			fs.writeFileSync(script, batchScript({ command: argv, about: ['x'] }));
			const r = spawnSync('/bin/sh', [script], { cwd: dir, encoding: 'utf8' });
			assert.equal(r.status, 7, r.stderr);
			assert.deepEqual(r.stdout.split('\0').slice(0, -1), [...argv.slice(3), `PROBE=${probe}`]);
			assert.equal(r.stderr, `${BATCH_END_MARKER} 7\n`);
			assert.equal(markedExitStatus(r.stderr), 7);
			assert.deepEqual(fs.readdirSync(dir).sort(), ['fake srun', 'job.sbatch'], 'nothing in a value ran');
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});

	it('comment lines hold no control character, so no text can end a comment or start an #SBATCH line', () => {
		const text = batchScript({ command: ['srun', 'x'], about: ['a\n#SBATCH --wrap=evil\rb\x1bc'] });
		const lines = text.split('\n');
		assert.equal(lines[1], '# a\\x0a#SBATCH --wrap=evil\\x0db\\x1bc');
		assert.equal(lines.filter(l => l.startsWith('#SBATCH')).length, 0);
	});

	it('the end line gives the launch\'s exit status; sbatch --parsable gives the id (with or without the cluster)', () => {
		assert.equal(markedExitStatus(`srun: error: x\n${BATCH_END_MARKER} 137\n`), 137);
		assert.equal(markedExitStatus(`${BATCH_END_MARKER} 0\n`), 0);
		assert.equal(markedExitStatus('slurmstepd: error: *** JOB 12 ON host-b CANCELLED AT 2026-12-06T23:40:01 ***\n'), null);
		assert.equal(parsableJobId('12\n'), '12');
		assert.equal(parsableJobId('sbatch: warning: x\n4242;cluster1\n'), '4242');
		assert.equal(parsableJobId('Submitted batch job 12\n'), null);
	});
});

describe('what Slurm says of a job', () => {
	it('squeue -t all -o %T|%r|%N', () => {
		assert.deepEqual(parseSqueueLine('PENDING|ReqNodeNotAvail, UnavailableNodes:host-b|\n'),
			{ state: 'PENDING', reason: 'ReqNodeNotAvail, UnavailableNodes:host-b', nodes: '', exitCode: null, source: 'squeue' });
		assert.deepEqual(parseSqueueLine('RUNNING|None|host-[b-c]\n'), { state: 'RUNNING', reason: '', nodes: 'host-[b-c]', exitCode: null, source: 'squeue' });
		assert.equal(parseSqueueLine(''), null);
	});

	it('sacct -P State,ExitCode,NodeList ("CANCELLED by 0" is CANCELLED)', () => {
		assert.deepEqual(parseSacctLine('CANCELLED by 0|0:15|host-[b-c]\n'), { state: 'CANCELLED', reason: '', nodes: 'host-[b-c]', exitCode: '0:15', source: 'sacct' });
		assert.deepEqual(parseSacctLine('FAILED|1:0|host-b\n'), { state: 'FAILED', reason: '', nodes: 'host-b', exitCode: '1:0', source: 'sacct' });
		assert.equal(parseSacctLine('\n'), null);
	});

	it('scontrol show job -o: a reason with spaces, the exit code', () => {
		const line = 'JobId=7 JobName=gpumpi-map UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=1 Nice=0 Account=(null) QOS=(null) JobState=PENDING Reason=ReqNodeNotAvail,_UnavailableNodes:host-b Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 NodeList=(null) NumNodes=1';
		assert.deepEqual(parseScontrolLine(line), { state: 'PENDING', reason: 'ReqNodeNotAvail,_UnavailableNodes:host-b', nodes: '', exitCode: '0:0', source: 'scontrol' });
		assert.deepEqual(parseScontrolLine('JobId=8 JobState=FAILED Reason=NonZeroExitCode Dependency=(null) ExitCode=2:0 NodeList=host-b'),
			{ state: 'FAILED', reason: 'NonZeroExitCode', nodes: 'host-b', exitCode: '2:0', source: 'scontrol' });
		assert.equal(parseScontrolLine('slurm_load_jobs error: Invalid job id specified'), null);
	});

	it('slurmstepd\'s line when it ended the job: cancelled, time limit, node failure; a step\'s line is not the job\'s', () => {
		const at = 'AT 2026-12-06T23:40:01';
		assert.deepEqual(stepdEnd(`srun: Job step aborted\nslurmstepd: error: *** JOB 42 ON host-b CANCELLED ${at} ***\n`), { line: `slurmstepd: error: *** JOB 42 ON host-b CANCELLED ${at} ***`, state: 'CANCELLED' });
		assert.equal(stepdEnd(`slurmstepd: error: *** JOB 42 ON host-b CANCELLED ${at} DUE TO TIME LIMIT ***`)?.state, 'TIMEOUT');
		assert.equal(stepdEnd(`slurmstepd: error: *** JOB 42 ON host-b CANCELLED ${at} DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***`)?.state, 'NODE_FAIL');
		assert.equal(stepdEnd(`slurmstepd: error: *** STEP 42.0 ON host-b CANCELLED ${at} ***`), null);
	});

	it('end states, and states in words (pending reasons explained, unknown codes as they are)', () => {
		for (const s of ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY']) { assert.ok(jobEnded(s), s); }
		for (const s of ['PENDING', 'RUNNING', 'COMPLETING', 'CONFIGURING', 'SUSPENDED']) { assert.ok(!jobEnded(s), s); }
		assert.equal(pendingReasonText('ReqNodeNotAvail, UnavailableNodes:host-b'), 'ReqNodeNotAvail, UnavailableNodes:host-b: a node it needs is down, drained or reserved: it will not start until that changes');
		assert.equal(pendingReasonText('SomethingNew'), 'SomethingNew');
		assert.equal(jobStateText({ state: 'PENDING', reason: 'Priority', nodes: '', exitCode: null, source: 'squeue' }), 'PENDING (Priority: jobs of higher priority are ahead of it)');
		assert.equal(jobStateText({ state: 'RUNNING', reason: '', nodes: 'host-[b-c]', exitCode: null, source: 'squeue' }), 'RUNNING on host-[b-c]');
		assert.equal(jobStateText({ state: 'FAILED', reason: 'NonZeroExitCode', nodes: 'host-b', exitCode: '1:0', source: 'sacct' }), 'FAILED on host-b, exit code 1:0, reason NonZeroExitCode');
	});
});
