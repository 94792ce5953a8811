/**
 * A launch as a Slurm batch job, on a Host (this machine or the login node over ssh): the batch script written into
 * a directory the user can read later, `sbatch --parsable` with the user's options as argv items, then the job
 * followed — its output files read as they grow (each new line handed on as a launch's output line would be), its
 * state from squeue, its end from squeue, sacct or scontrol (whichever still knows it) or from the end line the
 * script writes. Ctrl-C (the signal) stops following and leaves the job alone unless asked to cancel it; a timeout
 * stops following too. `BatchLauncher.launch` has runLaunch's shape, so a runner (the map's) takes it instead.
 *
 * Why the files are read with `tail -c +N | head -c M` on the host: the job writes them on a compute node and they are
 * seen here through the cluster's shared file system; reading from an offset costs each poll only what is new.
 */
import { constants } from 'node:os';
import type { ExecuteResult } from '../proc';
import { formatSeconds } from '../proc';
import type { Host } from '../host';
import { posixQuoteArgv } from '../../shared/shellQuote';
import { buildLaunchArgv } from './launchArgv';
import type { LaunchSpec } from './launchSpec';
import type { LaunchOutcome, RunLaunchOptions } from './runLaunch';
import { batchScript, jobEnded, jobStateText, markedExitStatus, parsableJobId, parseSacctLine, parseScontrolLine, parseSqueueLine, pendingReasonText, stepdEnd, type JobState } from './sbatch';

/** The files of one batch job, absolute paths on the host. */
export interface BatchFiles {
	dir: string;
	script: string;
	stdout: string;
	stderr: string;
	/** What was submitted and how to read it again (written after the submission; the caller's format). */
	jobFile: string;
}

/** A submitted job. */
export interface BatchJob {
	id: string;
	files: BatchFiles;
	/** The sbatch command line as run. */
	sbatch: string[];
}

/** The Slurm client programs, next to srun when srun is given as a path. */
export function slurmTool(srun: string, name: 'sbatch' | 'squeue' | 'sacct' | 'scontrol' | 'scancel'): string {
	return srun.includes('/') ? srun.replace(/srun$/, name) : name;
}

const sh = (host: Host, script: string, args: string[], timeoutMs = 30_000): Promise<ExecuteResult> =>
	// The script is a constant; every value is a positional parameter ("$1"…), never shell text.
	host.run(['sh', '-c', script, 'sh', ...args], { timeoutMs });

function firstLines(r: ExecuteResult, n = 3): string {
	return (r.error ?? ([r.stderr.trim(), r.stdout.trim()].find(t => t !== '') || `exit status ${r.exitCode ?? r.signal ?? '?'}`)).split('\n').slice(0, n).join(' | ');
}

/**
 * Make `dir` on the host (relative: to the host's working directory, the login directory over ssh) and name the
 * files of a job in it: `<prefix>-<tag>.sbatch`, `.out`, `.err`, `.job.json`. The directory must be one the compute
 * nodes see (shared), which is why it is not $TMPDIR by default. Slurm reads `%` and `\` in --output as patterns:
 * such a directory is refused.
 */
export async function prepareBatchFiles(host: Host, dir: string, prefix: string, tag: string): Promise<BatchFiles | { error: string }> {
	const r = await sh(host, 'mkdir -p -- "$1" && cd -- "$1" && pwd -P', [dir]);
	const abs = r.stdout.trim().split('\n').pop() ?? '';
	if (r.exitCode !== 0 || !abs.startsWith('/')) { return { error: `cannot create the batch directory ${dir} on ${host.ref.label}: ${firstLines(r)}` }; }
	if (/[%\\\x00-\x1f\x7f]/.test(abs)) { return { error: `the batch directory ${JSON.stringify(abs)} holds %, \\ or a control character, which Slurm reads as a file name pattern: give another with --sbatch-dir` }; }
	const base = `${abs.replace(/\/$/, '')}/${prefix}-${tag}`;
	return { dir: abs, script: `${base}.sbatch`, stdout: `${base}.out`, stderr: `${base}.err`, jobFile: `${base}.job.json` };
}

/** Write a new file on the host (never over an existing one); null when written, else why not. */
export async function writeNewHostFile(host: Host, file: string, text: string): Promise<string | null> {
	const r = await sh(host, 'set -C && printf "%s" "$1" > "$2"', [text, file]);
	return r.exitCode === 0 ? null : `cannot write ${file} on ${host.ref.label}: ${firstLines(r)}`;
}

/** Options of one follow. */
export interface FollowOptions {
	host: Host;
	job: Pick<BatchJob, 'id' | 'files'>;
	/** Path or name of srun (the other Slurm programs are taken from beside it). */
	srun: string;
	/** Stop following after this long (the job is left as it is). */
	timeoutMs: number;
	/** Stops following (Ctrl-C): the job is left running unless `cancelOnInterrupt`. */
	signal?: AbortSignal;
	/** On the signal, cancel the job (scancel ID) and follow it to its end. */
	cancelOnInterrupt?: boolean;
	/** Each new line of the job's standard output ('stdout') and standard error ('stderr'). */
	onLine?: (stream: 'stdout' | 'stderr', line: string) => void;
	onProgress?: (line: string) => void;
	/** Once, when the job is first seen running (squeue says so, or its files have something). */
	onStarted?: () => void;
	/** Poll periods and the pending notice (defaults: 1 s files, 2 s state, 60 s). */
	filePollMs?: number;
	statePollMs?: number;
	pendingNoticeMs?: number;
}

/** How following a job ended. */
export interface FollowOutcome {
	/** The job ended; following stopped at the timeout; interrupted (job left alone); interrupted and cancelled. */
	end: 'ended' | 'timeout' | 'interrupted' | 'cancelled';
	/** The job's last known state (its final one when it ended); null when Slurm never said. */
	state: JobState | null;
	/** The whole standard output and error read. */
	stdout: string;
	stderr: string;
	/** What was done or seen besides reading: the scancel line, squeue / sacct failures. */
	notes: string[];
	durationMs: number;
}

const READ_CHUNK = 4 << 20;
/** After the job's end, how long its files may take to show the script's end line (a shared file system's cache). */
const END_GRACE_MS = 20_000;
/** After a cancel, how long to follow the job to its end. */
const CANCEL_WAIT_MS = 30_000;

/** One file of the job, read from an offset; only whole lines are handed on until the last read. */
class GrowingFile {
	text = '';
	private _offset = 0;
	private _partial = '';
	constructor(private readonly _host: Host, private readonly _path: string, private readonly _onLine: (line: string) => void) {}

	/** Read what is new (missing file: nothing yet). `last`: hand on a last line without its newline too. */
	async poll(last = false): Promise<void> {
		for (;;) {
			const r = await sh(this._host, 'tail -c +"$1" -- "$2" 2>/dev/null | head -c "$3"', [String(this._offset + 1), this._path, String(READ_CHUNK)]);
			if (r.exitCode !== 0 || r.stdout === '') { break; }
			const nl = r.stdout.lastIndexOf('\n');
			const whole = nl >= 0 ? r.stdout.slice(0, nl + 1) : r.stdout.length >= READ_CHUNK ? r.stdout : '';
			this._offset += Buffer.byteLength(whole, 'utf8');
			this._take(whole);
			if (r.stdout.length < READ_CHUNK) { this._partial = r.stdout.slice(whole.length); break; }
		}
		if (last && this._partial !== '') { this._take(`${this._partial}\n`); this._partial = ''; }
	}

	private _take(chunk: string): void {
		if (chunk === '') { return; }
		this.text += chunk;
		for (const line of chunk.replace(/\n$/, '').split('\n')) { try { this._onLine(line); } catch { /* a listener never stops following */ } }
	}
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> => new Promise(res => {
	const t = setTimeout(done, ms);
	function done(): void { clearTimeout(t); signal?.removeEventListener('abort', done); res(); }
	signal?.addEventListener('abort', done, { once: true });
});

/**
 * The job's state now: squeue (`-t all`: ended jobs too, until Slurm purges them), and for an ended or purged job its
 * final state from sacct (with the exit code), else scontrol, else squeue's. `gone`: no tool knows the job.
 */
async function jobState(host: Host, srun: string, id: string, final: boolean, notes: Set<string>): Promise<{ state: JobState | null; gone: boolean }> {
	const q = await host.run([slurmTool(srun, 'squeue'), '-h', '-j', id, '-t', 'all', '-o', '%T|%r|%N'], { timeoutMs: 30_000 });
	const unknown = /Invalid job id/i.test(q.stderr);
	if (q.exitCode !== 0 && !unknown) { notes.add(`squeue failed: ${firstLines(q, 2)}`); }
	const sq = q.exitCode === 0 ? parseSqueueLine(q.stdout) : null;
	if (!final && !(sq && jobEnded(sq.state)) && !(unknown || (q.exitCode === 0 && sq === null))) { return { state: sq, gone: false }; }
	const a = await host.run([slurmTool(srun, 'sacct'), '-n', '-P', '-X', '-j', id, '-o', 'State,ExitCode,NodeList'], { timeoutMs: 30_000 });
	const acct = a.exitCode === 0 ? parseSacctLine(a.stdout) : null;
	if (a.exitCode !== 0) { notes.add(`no accounting record of job ${id} (${firstLines(a, 1)})`); }
	if (acct && jobEnded(acct.state)) { return { state: acct, gone: false }; }
	const c = await host.run([slurmTool(srun, 'scontrol'), 'show', 'job', '-o', id], { timeoutMs: 30_000 });
	const ctl = c.exitCode === 0 ? parseScontrolLine(c.stdout) : null;
	if (ctl && jobEnded(ctl.state)) { return { state: ctl, gone: false }; }
	const known = ctl ?? sq ?? acct;
	return { state: known, gone: known === null };
}

/** The state lines of a followed job: each new state once, a pending job's reason again after 1, 4, 9, … notice periods. */
class StateLines {
	private _shown = '';
	private _pendingSince: number | null = null;
	private _noticed = 0;
	constructor(private readonly _id: string, private readonly _noticeMs: number, private readonly _say: (line: string) => void) {}

	/** Say `state` when it is not the one said last. */
	change(state: JobState): void {
		const text = jobStateText(state);
		if (text !== this._shown) { this._say(`job ${this._id}: ${text}`); this._shown = text; }
	}

	/** Say `state` when it changed, and that a job is still pending, with the reason, when it has waited long. */
	show(state: JobState): void {
		this.change(state);
		if (state.state !== 'PENDING') { return; }
		this._pendingSince ??= Date.now();
		const waited = Date.now() - this._pendingSince;
		if (waited >= this._noticeMs * (this._noticed + 1) * (this._noticed + 1)) {
			this._noticed++;
			this._say(`job ${this._id} has been pending for ${formatSeconds(Math.round(waited / 1000) * 1000)}: ${pendingReasonText(state.reason || 'no reason given')}`);
		}
	}
}

/**
 * Ctrl-C while following: without `cancelOnInterrupt`, the state the job is left in (the last poll may be up to
 * statePollMs old); with it, scancel, then how long to follow the job to its end.
 */
async function interrupted(o: FollowOptions, notes: Set<string>, say: (line: string) => void): Promise<{ left: JobState | null } | { cancelDeadline: number }> {
	const id = o.job.id;
	if (!o.cancelOnInterrupt) { return { left: (await jobState(o.host, o.srun, id, false, notes)).state }; }
	const c = await o.host.run([slurmTool(o.srun, 'scancel'), id], { timeoutMs: 30_000 });
	notes.add(`scancel ${id}: ${c.exitCode === 0 ? 'done' : firstLines(c, 2)}`);
	say(`interrupted: cancelling job ${id} (--cancel-on-interrupt): scancel ${id}: ${c.exitCode === 0 ? 'done' : firstLines(c, 2)}`);
	return { cancelDeadline: Date.now() + CANCEL_WAIT_MS };
}

/**
 * After the job's end: its final state (sacct's exit code when accounting is kept), then its files until the script's
 * end line shows (a job that ran its script to the end writes one; a cancelled or killed one does not).
 */
async function finalState(o: FollowOptions, files: { out: GrowingFile; err: GrowingFile }, notes: Set<string>, lines: StateLines, last: JobState | null): Promise<JobState | null> {
	const f = await jobState(o.host, o.srun, o.job.id, true, notes);
	const state = f.state ?? last;
	if (f.state) { lines.change(f.state); }
	const graceEnd = Date.now() + (state && ['COMPLETED', 'FAILED'].includes(state.state) ? END_GRACE_MS : 0);
	for (;;) {
		await files.out.poll();
		await files.err.poll();
		if (markedExitStatus(files.err.text) !== null || Date.now() >= graceEnd) { return state; }
		await sleep(500);
	}
}

/** Follow a submitted job until it ends, the timeout, or the signal. Never rejects. */
export async function followBatch(o: FollowOptions): Promise<FollowOutcome> {
	const t0 = Date.now();
	const id = o.job.id;
	const say = (l: string): void => { try { o.onProgress?.(l); } catch { /* progress never stops following */ } };
	let started = false;
	// The job runs once squeue says so or its files have a line, whichever comes first (a short job may be over by the next poll).
	const begin = (): void => { if (!started) { started = true; try { o.onStarted?.(); } catch { /* as progress */ } } };
	const out = new GrowingFile(o.host, o.job.files.stdout, l => { begin(); o.onLine?.('stdout', l); });
	const err = new GrowingFile(o.host, o.job.files.stderr, l => { begin(); o.onLine?.('stderr', l); });
	const notes = new Set<string>();
	const filePoll = o.filePollMs ?? 1000;
	const statePoll = o.statePollMs ?? 2000;
	const lines = new StateLines(id, o.pendingNoticeMs ?? 60_000, say);
	let state: JobState | null = null;
	let nextState = 0;
	let end: FollowOutcome['end'] | null = null;
	let cancelDeadline = 0;
	for (;;) {
		if (o.signal?.aborted && cancelDeadline === 0) {
			const i = await interrupted(o, notes, say);
			if ('left' in i) { state = i.left ?? state; end = 'interrupted'; break; }
			cancelDeadline = i.cancelDeadline;
			nextState = 0;
		}
		if (cancelDeadline === 0 && Date.now() - t0 > o.timeoutMs) { end = 'timeout'; break; }
		if (cancelDeadline !== 0 && Date.now() > cancelDeadline) { end = 'cancelled'; break; }
		await out.poll();
		await err.poll();
		if (Date.now() >= nextState) {
			nextState = Date.now() + statePoll;
			const s = await jobState(o.host, o.srun, id, false, notes);
			if (s.state) {
				state = s.state;
				lines.show(state);
				if (state.state !== 'PENDING') { begin(); }
			}
			if (s.gone || (s.state && jobEnded(s.state.state))) { end = cancelDeadline !== 0 ? 'cancelled' : 'ended'; break; }
		}
		await sleep(Math.min(filePoll, statePoll), cancelDeadline === 0 ? o.signal : undefined);
	}
	if (end === 'ended' || end === 'cancelled') { state = await finalState(o, { out, err }, notes, lines, state); }
	await out.poll(true);
	await err.poll(true);
	return { end: end ?? 'ended', state, stdout: out.text, stderr: err.text, notes: [...notes], durationMs: Date.now() - t0 };
}

/** Signal name of a number (15 → SIGTERM), or null. */
function signalName(n: number): string | null {
	const e = Object.entries(constants.signals).find(([, v]) => v === n);
	return e ? e[0] : null;
}

/** States a job is ended in by something other than its own program (then that is the cause to report). */
const ENDED_FROM_OUTSIDE = /^(CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE|REVOKED|UNKNOWN)$/;

/** What a launch that was a batch job gives its runner: runLaunch's outcome, with `ended` when Slurm or the follow ended it. */
export function batchLaunchOutcome(argv: string[], job: Pick<BatchJob, 'id' | 'files'>, f: FollowOutcome): LaunchOutcome {
	const id = job.id;
	const marked = markedExitStatus(f.stderr);
	const stepd = stepdEnd(f.stderr);
	// The job's end from Slurm; where Slurm no longer knows the job (purged, no accounting), from its files: slurmstepd's
	// line when it ended the job (the script may still write its end line then: "143" after a scancel in Slurm 22.05),
	// else the script's end line.
	const fromFiles = stepd ? { state: stepd.state, exitCode: null, said: `slurmstepd's line in ${job.files.stderr}` }
		: marked !== null ? { state: marked === 0 ? 'COMPLETED' : 'FAILED', exitCode: `${marked}:0`, said: `the end line of ${job.files.stderr}` } : { state: 'UNKNOWN', exitCode: null, said: null };
	const slurmSaid = f.state !== null && jobEnded(f.state.state);
	const state: JobState | null = slurmSaid ? f.state
		: f.end === 'ended' || f.end === 'cancelled' ? { state: fromFiles.state, reason: '', nodes: f.state?.nodes ?? '', exitCode: fromFiles.exitCode, source: 'squeue' }
			: f.state;
	const now = state ? jobStateText(state) : 'in a state squeue had not reported';
	const [code, sig] = (state?.exitCode ?? '').split(':').map(Number);
	const said = slurmSaid ? f.state!.source : fromFiles.said;
	const stateText = `job ${id} ${!state ? `is ${now}` : state.state === 'UNKNOWN' ? 'ended in a state Slurm no longer reports (squeue and sacct do not know it) without the script\'s end line' : `${jobEnded(state.state) ? 'ended ' : 'is '}${now}`}${said ? ` (${said})` : ''}`;
	let ended: string | undefined;
	if (f.end === 'timeout') { ended = `stopped following job ${id} at the timeout (${formatSeconds(f.durationMs)}): it is still ${now}; the job is left as it is`; }
	else if (f.end === 'interrupted') { ended = `interrupted: stopped following job ${id} while it was ${now}; the job is left as it is`; }
	else if (f.end === 'cancelled') { ended = `interrupted: job ${id} cancelled (--cancel-on-interrupt); ${stateText}`; }
	else if (state && ENDED_FROM_OUTSIDE.test(state.state)) { ended = `${stateText}${stepd ? `: ${stepd.line}` : ''}`; }
	const abnormal = f.end !== 'ended' || state?.state !== 'COMPLETED';
	const last = f.stderr.split('\n').filter(l => l.trim() !== '' && !l.startsWith('@@GPUMPI')).slice(-8);
	const notes = [...f.notes, ...(abnormal && f.end !== 'timeout' && f.end !== 'interrupted' ? [stateText, ...(last.length > 0 ? [`the last lines of ${job.files.stderr}:`, ...last.map(l => `  ${l}`)] : [])] : [])];
	const result: ExecuteResult = {
		exitCode: f.end === 'ended' || f.end === 'cancelled' ? (Number.isFinite(code) ? code : marked) : null,
		signal: Number.isFinite(sig) && sig > 0 ? signalName(sig) : null,
		stdout: f.stdout, stderr: f.stderr, timedOut: f.end === 'timeout', durationMs: f.durationMs,
		...(abnormal ? { error: f.end === 'ended' ? stateText : ended } : {}),
	};
	return { argv, result, notes, ...(ended ? { ended } : {}) };
}

/** How a BatchLauncher gets its job: submit a new one, or follow one submitted before. */
export type BatchSource =
	| { submit: { dir: string; prefix: string; tag: string; sbatchArgs: string[]; jobName: string; about: string[]; jobFile: (job: BatchJob, command: string[]) => string } }
	| { follow: BatchJob & { command: string[] } };

/**
 * A launch as a batch job, with runLaunch's shape (`launch`): writes the script around the launch's srun argv
 * (launchArgv.ts, the one builder), submits it, follows it. What happened is kept on the object for the caller
 * (the job, the follow outcome, or why nothing was submitted).
 */
export class BatchLauncher {
	job: BatchJob | null = null;
	follow: FollowOutcome | null = null;
	/** Why no job was submitted (nothing to follow then). */
	failure: string | null = null;

	constructor(private readonly _host: Host, private readonly _source: BatchSource, private readonly _opts: Pick<FollowOptions, 'cancelOnInterrupt' | 'onProgress' | 'filePollMs' | 'statePollMs' | 'pendingNoticeMs'> = {}) {}

	readonly launch = async (spec: LaunchSpec, program: readonly string[], opts: RunLaunchOptions): Promise<LaunchOutcome> => {
		if (!spec.srun) { throw new Error('a batch job launches with srun inside its allocation: the spec has no srun'); }
		const srun = spec.srun.srun;
		const argv = buildLaunchArgv(spec, program);
		const say = (l: string): void => { try { this._opts.onProgress?.(l); } catch { /* never stops the launch */ } };
		const t0 = Date.now();
		const nothing = (error: string): LaunchOutcome => {
			this.failure = error;
			return { argv, result: { exitCode: null, signal: null, stdout: '', stderr: '', timedOut: false, error, durationMs: Date.now() - t0 }, notes: [], ended: error };
		};
		let job: BatchJob;
		let command = argv;
		if ('submit' in this._source) {
			const s = this._source.submit;
			const files = await prepareBatchFiles(this._host, s.dir, s.prefix, s.tag);
			if ('error' in files) { return nothing(files.error); }
			const sbatch = [slurmTool(srun, 'sbatch'), '--parsable', `--job-name=${s.jobName}`, `--output=${files.stdout}`, `--error=${files.stderr}`, ...s.sbatchArgs, files.script];
			const text = batchScript({ command: argv, about: [...s.about, 'Submitted as:', `  ${posixQuoteArgv(sbatch)}`] });
			const wrote = await writeNewHostFile(this._host, files.script, text);
			if (wrote) { return nothing(wrote); }
			say(`batch script: ${files.script}`);
			// Not cancellable half-way: once sbatch runs, its job id must be known to say what was submitted.
			const r = await this._host.run(sbatch, { timeoutMs: 60_000 });
			const id = r.exitCode === 0 ? parsableJobId(r.stdout) : null;
			if (!id) { return nothing(`sbatch did not submit the job: ${firstLines(r, 4)}`); }
			job = { id, files, sbatch };
			this.job = job;
			say(`submitted batch job ${id} (${posixQuoteArgv(sbatch)}); its output: ${files.stdout}, ${files.stderr}`);
			const jf = await writeNewHostFile(this._host, files.jobFile, s.jobFile(job, argv));
			if (jf) { say(`${jf} (the job runs; following it again later needs this file)`); }
		} else {
			const { command: cmd, ...followed } = this._source.follow;
			job = followed;
			this.job = job;
			command = cmd;
			say(`following batch job ${job.id}: ${job.files.stdout}, ${job.files.stderr}`);
		}
		const f = await followBatch({
			...this._opts, host: this._host, job, srun, timeoutMs: opts.timeoutMs, signal: opts.signal,
			onLine: opts.onLine, onStarted: () => { try { opts.onLaunch?.(command); } catch { /* as progress */ } },
		});
		this.follow = f;
		return batchLaunchOutcome(command, job, f);
	};
}
