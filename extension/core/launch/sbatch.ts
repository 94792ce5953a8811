/**
 * Slurm batch jobs as data (pure; batchJob.ts submits and follows them on a Host): the user's sbatch options checked
 * before anything is submitted, the job's size read from them, the batch script around a launch's argv, and what
 * squeue / sacct / scontrol say of a job.
 *
 * The user's options go to sbatch as argv items, never into the script: the script holds only the launch's argv,
 * POSIX-quoted (the one thing a shell reads), and comment lines in which no control character survives, so no value
 * can end a comment or start a `#SBATCH` line.
 */
import { posixQuoteArgv } from '../../shared/shellQuote';

/** sbatch options whose value is the next argv item when not joined with `=` (sbatch 22.05's man page). */
const LONG_WITH_VALUE = new Set([
	'account', 'acctg-freq', 'array', 'batch', 'bb', 'bbf', 'begin', 'chdir', 'cluster-constraint', 'clusters', 'comment',
	'constraint', 'container', 'core-spec', 'cores-per-socket', 'cpu-freq', 'cpus-per-gpu', 'cpus-per-task', 'deadline',
	'delay-boot', 'dependency', 'distribution', 'error', 'exclude', 'export', 'export-file', 'extra-node-info', 'gid',
	'gpu-bind', 'gpu-freq', 'gpus', 'gpus-per-node', 'gpus-per-socket', 'gpus-per-task', 'gres', 'gres-flags', 'hint',
	'input', 'job-name', 'licenses', 'mail-type', 'mail-user', 'mcs-label', 'mem', 'mem-bind', 'mem-per-cpu', 'mem-per-gpu',
	'mincpus', 'network', 'nodefile', 'nodelist', 'nodes', 'ntasks', 'ntasks-per-core', 'ntasks-per-gpu', 'ntasks-per-node',
	'ntasks-per-socket', 'open-mode', 'output', 'partition', 'power', 'priority', 'profile', 'qos', 'reservation', 'signal',
	'sockets-per-node', 'switches', 'thread-spec', 'threads-per-core', 'time', 'time-min', 'tmp', 'uid', 'wckey', 'wrap',
]);
/** Short options with a value (`-N2` or `-N 2`) and their long names. */
const SHORT_WITH_VALUE: Record<string, string> = {
	A: 'account', a: 'array', b: 'begin', D: 'chdir', M: 'clusters', C: 'constraint', S: 'core-spec', c: 'cpus-per-task',
	d: 'dependency', m: 'distribution', e: 'error', x: 'exclude', B: 'extra-node-info', G: 'gpus', i: 'input', J: 'job-name',
	L: 'licenses', F: 'nodefile', w: 'nodelist', N: 'nodes', n: 'ntasks', o: 'output', p: 'partition', q: 'qos', t: 'time',
};
/**
 * Options the product sets or that would break following the job: where its output goes (read back here), the
 * submission's own output (--parsable), and options that make sbatch submit no single job or wait for its end.
 */
const REFUSED: Record<string, string> = {
	output: 'the job\'s standard output is the map\'s stream: gpumpi-doctor names the file (--sbatch-dir sets where)',
	error: 'the job\'s standard error is read back too: gpumpi-doctor names the file (--sbatch-dir sets where)',
	parsable: 'gpumpi-doctor passes it itself', wrap: 'the batch script is gpumpi-doctor\'s', array: 'one map is one job, not an array',
	wait: 'gpumpi-doctor follows the job itself (sbatch --wait would print nothing until its end)',
	'test-only': 'no job would be submitted', help: 'not a job option', usage: 'not a job option', version: 'not a job option',
};
const SHORT_FLAG_LONG: Record<string, string> = { W: 'wait', h: 'help', V: 'version' };

/** What the product reads of the user's sbatch options: the job's size (null: not given). */
export interface SbatchShape {
	nodes: number | null;
	ntasks: number | null;
	ntasksPerNode: number | null;
}

/** Slurm's time formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS; UNLIMITED / INFINITE. */
const SLURM_TIME = /^(\d+(:\d{1,2}){0,2}|\d+-\d{1,2}(:\d{1,2}){0,2}|unlimited|infinite)$/i;

/**
 * Check the user's sbatch options (argv items, in order) and read the job's size from them. Throws Error with the
 * message to show: a control character, an item that is neither an option nor an option's value, an option the
 * product sets or that breaks following (--output, --wrap, --array, --wait…), a bad --nodes / --ntasks /
 * --ntasks-per-node / --time / --gpus-per-node value, an empty --partition / --account.
 */
export function checkSbatchArgs(args: readonly string[]): SbatchShape {
	const shape: SbatchShape = { nodes: null, ntasks: null, ntasksPerNode: null };
	for (let i = 0; i < args.length; i++) {
		const a = args[i];
		if (/[\x00-\x1f\x7f]/.test(a)) { throw new Error(`sbatch option ${JSON.stringify(a)} contains a control character`); }
		let name: string;
		let value: string | null = null;
		if (a.startsWith('--')) {
			const eq = a.indexOf('=');
			name = eq < 0 ? a.slice(2) : a.slice(2, eq);
			if (eq >= 0) { value = a.slice(eq + 1); } else if (LONG_WITH_VALUE.has(name)) {
				if (i + 1 >= args.length) { throw new Error(`sbatch option --${name} needs a value (--${name}=VALUE, or the value as the next --sbatch-arg)`); }
				value = args[++i];
			}
		} else if (/^-[A-Za-z]/.test(a)) {
			const letter = a[1];
			name = SHORT_WITH_VALUE[letter] ?? SHORT_FLAG_LONG[letter] ?? `-${letter}`;
			if (SHORT_WITH_VALUE[letter]) {
				if (a.length > 2) { value = a.slice(2); } else {
					if (i + 1 >= args.length) { throw new Error(`sbatch option ${a} needs a value (${a}VALUE, or the value as the next --sbatch-arg)`); }
					value = args[++i];
				}
			}
		} else {
			throw new Error(`${JSON.stringify(a)} is not an sbatch option: give an option's value in the same item (--partition=gpu) or right after the option`);
		}
		if (REFUSED[name]) { throw new Error(`sbatch option --${name} is not accepted here: ${REFUSED[name]}`); }
		if (value !== null) { readShape(name, value, shape); }
	}
	return shape;
}

function positive(name: string, v: string): number {
	if (!/^\d{1,7}$/.test(v) || Number(v) < 1) { throw new Error(`sbatch option --${name} needs a positive integer, got ${JSON.stringify(v)}`); }
	return Number(v);
}

function readShape(name: string, v: string, shape: SbatchShape): void {
	switch (name) {
		case 'nodes': {
			// N or MIN-MAX (the job gets at least MIN nodes).
			const m = /^(\d{1,7})(-\d{1,7})?$/.exec(v);
			if (!m || Number(m[1]) < 1) { throw new Error(`sbatch option --nodes needs N or MIN-MAX, got ${JSON.stringify(v)}`); }
			shape.nodes = Number(m[1]);
			break;
		}
		case 'ntasks': shape.ntasks = positive(name, v); break;
		case 'ntasks-per-node': shape.ntasksPerNode = positive(name, v); break;
		case 'time': case 'time-min':
			if (!SLURM_TIME.test(v)) { throw new Error(`sbatch option --${name} needs minutes, MM:SS, HH:MM:SS or D-HH[:MM[:SS]], got ${JSON.stringify(v)}`); }
			break;
		case 'gpus-per-node':
			if (!/^([^:,\s]+:)?\d{1,4}$/.test(v)) { throw new Error(`sbatch option --gpus-per-node needs [TYPE:]N, got ${JSON.stringify(v)}`); }
			break;
		case 'partition': case 'account':
			if (v.trim() === '') { throw new Error(`sbatch option --${name} needs a name`); }
			break;
		default: break;
	}
}

/**
 * The number of tasks the job will have, from its shape: --ntasks, else --ntasks-per-node × --nodes (one node when
 * not given); null when neither --ntasks nor --ntasks-per-node is given (Slurm would then give one task per node).
 */
export function jobTasks(shape: SbatchShape): number | null {
	if (shape.ntasks !== null) { return shape.ntasks; }
	return shape.ntasksPerNode !== null ? shape.ntasksPerNode * (shape.nodes ?? 1) : null;
}

/** A batch-script comment: one line whatever the text holds (control characters written as \xNN). */
function comment(text: string): string {
	return `# ${text.replace(/[\x00-\x1f\x7f]/g, c => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}`;
}

/** What the script's last lines write to standard error once the launch has ended (read back by batchJob.ts). */
export const BATCH_END_MARKER = '@@GPUMPI-BATCH@@ launch exit status';

/** What a batch script says about itself (comment lines). */
export interface BatchScriptText {
	/** The launch inside the job: `env … srun … -n N program…` (launchArgv.ts). */
	command: readonly string[];
	/** Lines of explanation at the top (what the job is, how to read its output). */
	about: readonly string[];
}

/**
 * The batch script: a POSIX sh script that runs the launch and then writes its exit status after
 * {@link BATCH_END_MARKER} to standard error (so the end is known from the output even where the job has left the
 * queue and no accounting is kept). sbatch reads `#SBATCH` lines only up to the first command: there are none.
 */
export function batchScript(s: BatchScriptText): string {
	return [
		'#!/bin/sh',
		...s.about.map(comment),
		posixQuoteArgv(s.command),
		'status=$?',
		`printf '%s %s\\n' '${BATCH_END_MARKER}' "$status" >&2`,
		'exit "$status"',
		'',
	].join('\n');
}

/** The launch's exit status from the end marker in the job's standard error, or null when the script did not get there. */
export function markedExitStatus(stderr: string): number | null {
	const at = stderr.lastIndexOf(`${BATCH_END_MARKER} `);
	if (at < 0) { return null; }
	const m = /^(\d{1,3})\b/.exec(stderr.slice(at + BATCH_END_MARKER.length + 1));
	return m ? Number(m[1]) : null;
}

/**
 * What slurmstepd wrote into the job's standard error when it ended the job ("slurmstepd: error: *** JOB 42 ON node2
 * CANCELLED AT 2026-12-06T23:40:01 DUE TO TIME LIMIT ***"): the line and the state it means (CANCELLED, TIMEOUT for
 * a time limit, NODE_FAIL, PREEMPTED), or null. What is left to read once Slurm has purged the job and keeps no
 * accounting.
 */
export function stepdEnd(stderr: string): { line: string; state: string } | null {
	const lines = stderr.split('\n').filter(l => /\*\*\* JOB \S+ ON \S+ CANCELLED AT .*\*\*\*/.test(l));
	const line = lines[lines.length - 1]?.trim();
	if (!line) { return null; }
	const state = /DUE TO TIME LIMIT/.test(line) ? 'TIMEOUT' : /DUE TO NODE FAIL/.test(line) ? 'NODE_FAIL' : /DUE TO PREEMPTION/.test(line) ? 'PREEMPTED' : 'CANCELLED';
	return { line, state };
}

/** The job id of `sbatch --parsable` ("123" or "123;cluster"), or null. */
export function parsableJobId(stdout: string): string | null {
	const lines = stdout.split('\n').map(l => l.trim()).filter(l => l !== '');
	const m = /^(\d{1,12})(;\S+)?$/.exec(lines[lines.length - 1] ?? '');
	return m ? m[1] : null;
}

/** A job's state as Slurm reports it. */
export interface JobState {
	/** PENDING, RUNNING, COMPLETING, COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, … */
	state: string;
	/** squeue's reason (pending or why it ended), "" when none. */
	reason: string;
	/** Nodes of a started job, "" before. */
	nodes: string;
	/** "exit:signal" ("0:0", "1:0", "0:15") when known. */
	exitCode: string | null;
	/** Which tool said so. */
	source: 'squeue' | 'sacct' | 'scontrol';
}

/** States in which the job has ended for good (squeue's long names; sacct's "CANCELLED by 1000" is read as CANCELLED). */
const ENDED = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY', 'PREEMPTED', 'BOOT_FAIL', 'DEADLINE', 'REVOKED', 'SPECIAL_EXIT']);

/** Whether `state` is an end state. */
export function jobEnded(state: string): boolean {
	return ENDED.has(state);
}

/** `squeue -h -j ID -t all -o %T|%r|%N` → the state; null for no line (the job is no longer known). */
export function parseSqueueLine(stdout: string): JobState | null {
	const line = stdout.split('\n').map(l => l.trim()).find(l => l !== '');
	if (!line) { return null; }
	const [state, reason = '', nodes = ''] = line.split('|');
	return { state: state.trim(), reason: reason === 'None' ? '' : reason.trim(), nodes: nodes.trim(), exitCode: null, source: 'squeue' };
}

/** `sacct -n -P -X -j ID -o State,ExitCode,NodeList` → the state; null when sacct has no line. */
export function parseSacctLine(stdout: string): JobState | null {
	const line = stdout.split('\n').map(l => l.trim()).find(l => l !== '');
	if (!line) { return null; }
	const [state, exitCode = '', nodes = ''] = line.split('|');
	return { state: state.replace(/ by \d+$/, '').trim(), reason: '', nodes: nodes === 'None assigned' ? '' : nodes.trim(), exitCode: /^\d+:\d+$/.test(exitCode) ? exitCode : null, source: 'sacct' };
}

/** `scontrol show job -o ID` (one line of KEY=VALUE) → the state; null when the job is not known. */
export function parseScontrolLine(stdout: string): JobState | null {
	const field = (k: string): string => {
		// Values run to the next " Key=" (Reason's value may hold spaces: "Reason=ReqNodeNotAvail, UnavailableNodes:b").
		const m = new RegExp(`(?:^|\\s)${k}=(.*?)(?=\\s+[A-Za-z][A-Za-z:/]*=|$)`).exec(stdout.trim());
		return m ? m[1] : '';
	};
	const state = field('JobState');
	if (!state) { return null; }
	const exitCode = field('ExitCode');
	const nodes = field('NodeList');
	return { state, reason: field('Reason') === 'None' ? '' : field('Reason'), nodes: nodes === '(null)' ? '' : nodes, exitCode: /^\d+:\d+$/.test(exitCode) ? exitCode : null, source: 'scontrol' };
}

/**
 * What a pending reason means, in words, for the reasons users meet most (squeue(1) "JOB REASON CODES"); the code
 * itself stays first. Unknown codes are shown as they are.
 */
export function pendingReasonText(reason: string): string {
	const code = reason.split(/[,\s]/)[0];
	const words: Record<string, string> = {
		Resources: 'waiting for the nodes it asked for to be free',
		Priority: 'jobs of higher priority are ahead of it',
		ReqNodeNotAvail: 'a node it needs is down, drained or reserved: it will not start until that changes',
		PartitionTimeLimit: 'its --time is longer than the partition allows: it will not start (give a shorter --time)',
		PartitionNodeLimit: 'it asks for more nodes than the partition allows: it will not start',
		PartitionDown: 'the partition is down',
		PartitionInactive: 'the partition is inactive',
		BeginTime: 'its --begin time has not come',
		Dependency: 'it waits for another job (--dependency)',
		DependencyNeverSatisfied: 'its --dependency can never be met: it will not start',
		JobHeldUser: 'held by you (scontrol release ID starts it)',
		JobHeldAdmin: 'held by an administrator',
		BadConstraints: 'no node can satisfy its constraints: it will not start',
		QOSMaxJobsPerUserLimit: 'you have as many running jobs as the QOS allows',
		AssocGrpGRES: 'the account\'s GPU (GRES) limit is reached',
		AssocMaxJobsLimit: 'the account\'s job limit is reached',
		Reservation: 'waiting for its reservation',
		Nodes_required_for_job_are_DOWN: 'nodes it needs are down, drained or reserved for other jobs',
	};
	const w = words[code];
	return w ? `${reason}: ${w}` : reason;
}

/** A job's state in one phrase: "PENDING (Resources: …)", "RUNNING on b,c", "FAILED, exit code 1:0". */
export function jobStateText(s: JobState): string {
	if (s.state === 'PENDING') { return `PENDING${s.reason ? ` (${pendingReasonText(s.reason)})` : ''}`; }
	const on = s.nodes ? ` on ${s.nodes}` : '';
	const code = s.exitCode ? `, exit code ${s.exitCode}` : '';
	const why = s.reason && jobEnded(s.state) ? `, reason ${s.reason}` : '';
	return `${s.state}${on}${code}${why}`;
}
