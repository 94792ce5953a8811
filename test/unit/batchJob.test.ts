/**
 * Following a batch job (extension/core/launch/batchJob.ts) and the map as a batch job (core/map/mapBatch.ts), against
 * a stand-in login node: a Host whose `sh -c` answers the file commands batchJob.ts runs (mkdir + pwd, the no-clobber
 * write, `tail -c +N | head -c M`) from an in-memory file system, and whose squeue / sacct / scontrol / scancel /
 * sbatch follow a script of job states. The job's output is REAL captured engine output (test-fixtures/map/stream/),
 * written into the "file" a few KB per poll, so lines are cut across reads as on a shared file system. The real
 * Slurm is test/engine/slurmBatch.test.ts.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Host, HostRunOptions } from '../../extension/core/host';
import type { ExecuteResult } from '../../extension/core/proc';
import { batchLaunchOutcome, followBatch, type FollowOutcome } from '../../extension/core/launch/batchJob';
import { defaultSpec } from '../../extension/core/launch/launchSpec';
import { BATCH_END_MARKER } from '../../extension/core/launch/sbatch';
import { MAP_BATCH_JOB_SCHEMA, parseMapBatchJob, runMapBatch } from '../../extension/core/map/mapBatch';
import { DEFAULT_MAP_OPTIONS } from '../../extension/core/map/mapRunner';

const STREAM = path.resolve(process.cwd(), 'test-fixtures', 'map', 'stream');
const ok = (stdout = ''): ExecuteResult => ({ exitCode: 0, signal: null, stdout, stderr: '', timedOut: false, durationMs: 1 });
const bad = (stderr: string, exitCode = 1): ExecuteResult => ({ exitCode, signal: null, stdout: '', stderr, timedOut: false, durationMs: 1 });

/** One step of the job: its squeue line, and what is appended to its files when the step is reached. */
interface Step { squeue: string | null; out?: string; err?: string }

/** A login node with a scripted job: each squeue call moves to the next step (the last one stays). */
class StandInSlurm {
	readonly files = new Map<string, string>();
	readonly runs: string[][] = [];
	step = -1;
	cancelled = false;
	sacct: ExecuteResult = bad('sacct: error: Slurm accounting storage is disabled');
	scontrol: ExecuteResult = bad('slurm_load_jobs error: Invalid job id specified');
	/** Appended to the files in pieces of this many bytes per state poll (a file that grows while it is read). */
	piece = 3000;
	private readonly _pending = new Map<string, string>();
	constructor(private readonly _steps: Step[], private readonly _out = '/home/u/gpumpi-batch/job.out', private readonly _err = '/home/u/gpumpi-batch/job.err') {}

	private _advance(): Step {
		if (this.step < this._steps.length - 1) {
			this.step++;
			const s = this._steps[this.step];
			if (s.out) { this._pending.set(this._out, (this._pending.get(this._out) ?? '') + s.out); }
			if (s.err) { this._pending.set(this._err, (this._pending.get(this._err) ?? '') + s.err); }
		}
		// The files grow a piece per state poll while the job runs; at its last step all of it is there.
		const last = this.step === this._steps.length - 1;
		for (const f of [this._out, this._err]) { this._grow(f, last ? Infinity : this.piece); }
		return this._steps[this.step];
	}

	/** Move what the job wrote into the file (as the file system shows it), at most `n` bytes. */
	private _grow(file: string, n: number): void {
		const p = this._pending.get(file) ?? '';
		if (p === '') { return; }
		this.files.set(file, (this.files.get(file) ?? '') + p.slice(0, n));
		this._pending.set(file, p.slice(n));
	}

	readonly host: Host = {
		ref: { id: 'ssh:login', label: 'login', kind: 'ssh' },
		run: async (argv: readonly string[], _o: HostRunOptions): Promise<ExecuteResult> => {
			this.runs.push([...argv]);
			const cmd = path.basename(argv[0]);
			if (cmd === 'sh') {
				const script = argv[2];
				const args = argv.slice(4);
				if (script.startsWith('mkdir')) { return ok(`${args[0].startsWith('/') ? args[0] : `/home/u/${args[0]}`}\n`); }
				if (script.startsWith('set -C')) {
					if (this.files.has(args[1])) { return bad(`sh: 1: cannot create ${args[1]}: File exists`, 2); }
					this.files.set(args[1], args[0]);
					return ok();
				}
				if (script.startsWith('tail -c')) {
					const buf = Buffer.from(this.files.get(args[1]) ?? '', 'utf8');
					return ok(buf.subarray(Number(args[0]) - 1, Number(args[0]) - 1 + Number(args[2])).toString('utf8'));
				}
				return bad(`unexpected script ${script}`);
			}
			if (cmd === 'squeue') {
				const s = this.cancelled ? { squeue: 'CANCELLED|None|b' } : this._advance();
				return s.squeue === null ? bad('slurm_load_jobs error: Invalid job id specified') : ok(`${s.squeue}\n`);
			}
			if (cmd === 'sacct') { return this.sacct; }
			if (cmd === 'scontrol') { return this.scontrol; }
			if (cmd === 'scancel') { this.cancelled = true; return ok(); }
			if (cmd === 'sbatch') { return ok('4242\n'); }
			return bad(`unexpected ${cmd}`);
		},
		readFile: async () => ({ ok: false, error: 'none', notFound: true }),
		env: async () => ({}), which: async () => null, listDir: async () => [], realpath: async (p: string) => p,
		identity: async () => ({ uid: 1000, user: 'u', hostname: 'login' }), cpuCount: async () => 2,
	};
}

const JOB = { id: '4242', files: { dir: '/home/u/gpumpi-batch', script: '/home/u/gpumpi-batch/job.sbatch', stdout: '/home/u/gpumpi-batch/job.out', stderr: '/home/u/gpumpi-batch/job.err', jobFile: '/home/u/gpumpi-batch/job.job.json' } };
const FAST = { filePollMs: 5, statePollMs: 5 };

describe('following a batch job (stand-in login node)', function () {
	// Tens of polls with 5-ms sleeps between them (and the map's parsing): 0.1-0.3 s a test alone, past mocha's 2 s at
	// load 40 on the shared 2-core machine.
	this.timeout(30_000);
	it('pending, running, completed: every line once and whole, in order, though the reads cut them; onStarted once', async () => {
		const text = fs.readFileSync(path.join(STREAM, 'ompi-6-rounds.stdout'), 'utf8');
		const slurm = new StandInSlurm([
			{ squeue: 'PENDING|Resources|' }, { squeue: 'PENDING|Resources|' }, { squeue: 'RUNNING|None|b,c', out: text },
			...Array.from({ length: 40 }, () => ({ squeue: 'RUNNING|None|b,c' })), { squeue: 'COMPLETED|None|b,c', err: `${BATCH_END_MARKER} 0\n` },
		]);
		const lines: string[] = [];
		const progress: string[] = [];
		let started = 0;
		const f = await followBatch({ host: slurm.host, job: JOB, srun: 'srun', timeoutMs: 30_000, ...FAST, onLine: (s, l) => { if (s === 'stdout') { lines.push(l); } }, onProgress: l => progress.push(l), onStarted: () => { started++; } });
		assert.equal(f.end, 'ended');
		assert.equal(f.stdout, text);
		assert.deepEqual(lines, text.replace(/\n$/, '').split('\n'));
		assert.equal(started, 1);
		assert.deepEqual(progress.filter(l => l.startsWith('job 4242: ')), ['job 4242: PENDING (Resources: waiting for the nodes it asked for to be free)', 'job 4242: RUNNING on b,c', 'job 4242: COMPLETED on b,c']);
		assert.equal(f.state?.state, 'COMPLETED');
	});

	it('pending past the notice time: says so with the reason; at the timeout the job is left, nothing cancelled', async () => {
		const slurm = new StandInSlurm([{ squeue: 'PENDING|ReqNodeNotAvail, UnavailableNodes:b|' }]);
		const progress: string[] = [];
		const f = await followBatch({ host: slurm.host, job: JOB, srun: 'srun', timeoutMs: 300, ...FAST, pendingNoticeMs: 100, onProgress: l => progress.push(l) });
		assert.equal(f.end, 'timeout');
		assert.ok(progress.some(l => /^job 4242 has been pending for \d+ ms: ReqNodeNotAvail, UnavailableNodes:b: a node it needs is down/.test(l)), progress.join('\n'));
		assert.ok(!slurm.runs.some(a => a[0] === 'scancel'));
		const o = batchLaunchOutcome(['srun', 'x'], JOB, f);
		assert.match(o.ended ?? '', /^stopped following job 4242 at the timeout \(\d+ ms\): it is still PENDING \(ReqNodeNotAvail, UnavailableNodes:b: .*\); the job is left as it is$/);
		assert.equal(o.result.timedOut, true);
	});

	it('Ctrl-C: following stops and the job is left; with cancelOnInterrupt it is cancelled and followed to its end', async () => {
		for (const cancel of [false, true]) {
			const slurm = new StandInSlurm([{ squeue: 'RUNNING|None|b' }]);
			const ac = new AbortController();
			setTimeout(() => ac.abort(), 60);
			const f = await followBatch({ host: slurm.host, job: JOB, srun: '/opt/slurm/bin/srun', timeoutMs: 30_000, ...FAST, signal: ac.signal, cancelOnInterrupt: cancel });
			assert.equal(f.end, cancel ? 'cancelled' : 'interrupted');
			assert.deepEqual(slurm.runs.filter(a => a[0].endsWith('scancel')), cancel ? [['/opt/slurm/bin/scancel', '4242']] : []);
			if (cancel) { assert.equal(f.state?.state, 'CANCELLED'); assert.ok(f.notes.includes('scancel 4242: done')); }
			const o = batchLaunchOutcome(['srun'], JOB, f);
			assert.match(o.ended ?? '', cancel ? /^interrupted: job 4242 cancelled \(--cancel-on-interrupt\); job 4242 ended CANCELLED on b \(squeue\)$/ : /^interrupted: stopped following job 4242 while it was RUNNING on b; the job is left as it is$/);
		}
	});

	it('a job Slurm has forgotten (no accounting): its end is read from the script\'s end line', async () => {
		const slurm = new StandInSlurm([{ squeue: 'RUNNING|None|b', out: 'x\n', err: `srun: error: b: task 1: Exited with exit code 3\n${BATCH_END_MARKER} 3\n` }, { squeue: null }]);
		const f = await followBatch({ host: slurm.host, job: JOB, srun: 'srun', timeoutMs: 30_000, ...FAST });
		assert.equal(f.end, 'ended');
		assert.ok(f.notes.includes('no accounting record of job 4242 (sacct: error: Slurm accounting storage is disabled)'), f.notes.join(' | '));
		const o = batchLaunchOutcome(['srun'], JOB, f);
		assert.equal(o.ended, undefined, 'FAILED is the program\'s own end: the runner reads the cause from the output');
		assert.equal(o.result.exitCode, 3);
		assert.equal(o.result.error, `job 4242 ended FAILED on b, exit code 3:0 (the end line of ${JOB.files.stderr})`);
	});
});

describe('batchLaunchOutcome: the job\'s end as a launch outcome', () => {
	const follow = (state: string, exitCode: string, stderr: string): FollowOutcome => ({
		end: 'ended', state: { state, reason: '', nodes: 'b', exitCode, source: 'sacct' }, stdout: '', stderr, notes: [], durationMs: 1000,
	});
	it('ended from outside (CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY): that is the cause, with slurmstepd\'s line and the last lines', () => {
		const stepd = 'slurmstepd: error: *** JOB 4242 ON b CANCELLED AT 2026-12-06T23:59:01 ***';
		const o = batchLaunchOutcome(['srun'], JOB, follow('CANCELLED', '0:15', `srun: Job step aborted\n${stepd}\n`));
		assert.equal(o.ended, `job 4242 ended CANCELLED on b, exit code 0:15 (sacct): ${stepd}`);
		assert.equal(o.result.signal, 'SIGTERM');
		assert.deepEqual(o.notes, ['job 4242 ended CANCELLED on b, exit code 0:15 (sacct)', `the last lines of ${JOB.files.stderr}:`, '  srun: Job step aborted', `  ${stepd}`]);
		for (const s of ['TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY']) { assert.match(batchLaunchOutcome(['srun'], JOB, follow(s, '0:9', '')).ended ?? '', new RegExp(`^job 4242 ended ${s}`)); }
	});
	it('a job Slurm no longer knows, without the end line: its end from slurmstepd\'s line (else unknown)', () => {
		const stepd = 'slurmstepd: error: *** JOB 4242 ON b CANCELLED AT 2026-12-06T23:59:01 DUE TO TIME LIMIT ***';
		const gone: FollowOutcome = { end: 'ended', state: { state: 'RUNNING', reason: '', nodes: 'b', exitCode: null, source: 'squeue' }, stdout: '', stderr: `${stepd}\n`, notes: [], durationMs: 1 };
		assert.equal(batchLaunchOutcome(['srun'], JOB, gone).ended, `job 4242 ended TIMEOUT on b (slurmstepd's line in ${JOB.files.stderr}): ${stepd}`);
		assert.match(batchLaunchOutcome(['srun'], JOB, { ...gone, stderr: '' }).ended ?? '', /^job 4242 ended in a state Slurm no longer reports \(squeue and sacct do not know it\) without the script's end line$/);
		// Slurm 22.05 after scancel (captured in the lab): the script still ran its last lines; slurmstepd's line says what ended it.
		const cancelled = 'slurmstepd-b: error: *** STEP 4242.0 ON b CANCELLED AT 2026-12-07T00:14:47 ***\nslurmstepd-b: error: *** JOB 4242 ON b CANCELLED AT 2026-12-07T00:14:47 ***\nsrun: error: b: task 0: Terminated\n' + `${BATCH_END_MARKER} 143\n`;
		assert.match(batchLaunchOutcome(['srun'], JOB, { ...gone, stderr: cancelled }).ended ?? '', /^job 4242 ended CANCELLED on b \(slurmstepd's line in \S+\): slurmstepd-b: error: \*\*\* JOB 4242 ON b CANCELLED AT 2026-12-07T00:14:47 \*\*\*$/);
	});

	it('COMPLETED: no error, no note', () => {
		const o = batchLaunchOutcome(['srun'], JOB, follow('COMPLETED', '0:0', `${BATCH_END_MARKER} 0\n`));
		assert.equal(o.ended, undefined);
		assert.equal(o.result.error, undefined);
		assert.deepEqual(o.notes, []);
		assert.equal(o.result.exitCode, 0);
	});
});

describe('the map as a batch job (stand-in login node, real engine output)', function () {
	// Tens of polls with 5-ms sleeps between them (and the map's parsing): 0.1-0.3 s a test alone, past mocha's 2 s at
	// load 40 on the shared 2-core machine.
	this.timeout(30_000);
	const spec = { ...defaultSpec('openmpi', 'mpirun.openmpi', 6), srun: { srun: 'srun', mpi: null, allocation: [], jobName: '' } };
	const config = { label: 'map', env: [], mca: [], extraArgs: [] };

	it('the script runs the srun argv runMap builds; the document comes from the job\'s output; the job file reads back', async () => {
		const text = fs.readFileSync(path.join(STREAM, 'ompi-6-rounds.stdout'), 'utf8');
		const slurm = new StandInSlurm([{ squeue: 'RUNNING|None|b', out: text }, ...Array.from({ length: 60 }, () => ({ squeue: 'RUNNING|None|b' })), { squeue: 'COMPLETED|None|b', err: `${BATCH_END_MARKER} 0\n` }],
			'/home/u/gpumpi-batch/OUT', '/home/u/gpumpi-batch/ERR');
		// The stand-in's file names are fixed: map the job's real names onto them.
		const run = slurm.host.run;
		slurm.host.run = (argv, o) => run(argv.map(a => a.replace(/\/gpumpi-map-[\w-]+\.out$/, '/OUT').replace(/\/gpumpi-map-[\w-]+\.err$/, '/ERR')), o);
		const progress: string[] = [];
		const res = await runMapBatch({ engine: '/opt/gpumpi', host: slurm.host, spec, config, map: DEFAULT_MAP_OPTIONS, timeoutMs: 30_000, onProgress: l => progress.push(l) },
			{ dir: 'gpumpi-batch', sbatchArgs: ['--nodes=1', '--ntasks=6'], cancelOnInterrupt: false, poll: FAST });
		assert.ok(res.run.ok && !res.run.partial, JSON.stringify(res.run).slice(0, 400));
		assert.equal(res.run.doc.pairs.length, 15);
		assert.equal(res.job?.id, '4242');
		assert.equal(res.left, false);
		const sbatch = slurm.runs.find(a => a[0] === 'sbatch')!;
		assert.deepEqual(sbatch.slice(0, 3), ['sbatch', '--parsable', '--job-name=gpumpi-map']);
		assert.deepEqual(sbatch.slice(5), ['--nodes=1', '--ntasks=6', res.job!.files.script]);
		const script = slurm.files.get(res.job!.files.script)!;
		const command = res.run.doc.runner!.command;
		assert.ok(command.includes('srun') && command.includes('--mpi=pmix') && command.includes('--stream') && command[command.length - 1] === '--final-without-pairs');
		assert.ok(script.includes(`\n${command.join(' ')}\nstatus=$?\n`), script);
		assert.ok(progress.some(l => l === `running 6 ranks: ${command.join(' ')}`), 'the launch shown once the job runs');
		const job = parseMapBatchJob(slurm.files.get(res.job!.files.jobFile)!);
		assert.ok(typeof job !== 'string', String(job));
		assert.equal(job.schema, MAP_BATCH_JOB_SCHEMA);
		assert.deepEqual(job.command, command);
		assert.equal(job.run.spec.srun?.jobName, command.find(a => a.startsWith('--job-name='))!.slice('--job-name='.length));
	});

	it('a job that FAILED with a rank killed: the partial map of the rounds streamed before, the dead task named', async () => {
		const out = fs.readFileSync(path.join(STREAM, 'ompi-6-killed.stdout'), 'utf8');
		const slurm = new StandInSlurm([{ squeue: 'RUNNING|None|b', out, err: 'srun: error: b: task 3: Killed\nsrun: error: b: tasks 0-2,4-5: Terminated\n' }, { squeue: 'RUNNING|None|b' },
			{ squeue: 'FAILED|NonZeroExitCode|b', err: `${BATCH_END_MARKER} 137\n` }], '/home/u/gpumpi-batch/OUT', '/home/u/gpumpi-batch/ERR');
		const run = slurm.host.run;
		slurm.host.run = (argv, o) => run(argv.map(a => a.replace(/\/gpumpi-map-[\w-]+\.out$/, '/OUT').replace(/\/gpumpi-map-[\w-]+\.err$/, '/ERR')), o);
		const res = await runMapBatch({ engine: '/opt/gpumpi', host: slurm.host, spec, config, map: DEFAULT_MAP_OPTIONS, timeoutMs: 30_000 },
			{ dir: 'gpumpi-batch', sbatchArgs: ['--ntasks=6'], cancelOnInterrupt: false, poll: FAST });
		assert.ok(res.run.ok && res.run.partial, JSON.stringify(res.run).slice(0, 400));
		assert.equal(res.run.partial, 'rank 3 (srun task 3 on b): Killed');
		assert.deepEqual(res.run.doc.partial?.failed_ranks, [3]);
		assert.equal(res.run.doc.partial?.rounds_received, 3);
		assert.ok((res.run.notes ?? []).includes('job 4242 ended FAILED on b, reason NonZeroExitCode (squeue)'), (res.run.notes ?? []).join(' | '));
	});

	it('sbatch refuses the job: its message, nothing followed', async () => {
		const slurm = new StandInSlurm([{ squeue: 'RUNNING|None|b' }]);
		const run = slurm.host.run;
		slurm.host.run = async (argv, o) => (argv[0] === 'sbatch' ? bad('sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification') : run(argv, o));
		const res = await runMapBatch({ engine: '/opt/gpumpi', host: slurm.host, spec, config, map: DEFAULT_MAP_OPTIONS, timeoutMs: 30_000 },
			{ dir: 'gpumpi-batch', sbatchArgs: ['--ntasks=6', '--gpus-per-node=1'], cancelOnInterrupt: false, poll: FAST });
		assert.ok(!res.run.ok);
		assert.equal(res.run.error, 'sbatch did not submit the job: sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification');
		assert.equal(res.job, null);
		assert.ok(!slurm.runs.some(a => a[0] === 'squeue'));
	});
});
