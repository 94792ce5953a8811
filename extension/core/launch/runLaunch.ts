/**
 * Runs a launch on a Host (the caller's: this machine or an ssh host, hosts/) with a timeout and cancellation that end the whole job (a
 * timed-out or cancelled srun job is also ended with `scancel --name J`), and reads what the launcher did: a start of
 * separate singletons instead of one job, and which MPI flavour an mpirun is.
 */
import type { ExecuteResult } from '../proc';
import type { Host, HostRunOptions } from '../host';
import { buildLaunchArgv } from './launchArgv';
import { withJobName, type LaunchSpec, type MpiFlavor } from './launchSpec';
import { extractJsonDocuments } from '../parsers/framedDocument';
import { backingChosen, createShmDir, detectShmBackingParam, ranksStayHere, removeShmDir, type ShmDir } from './shmBacking';

/** Options of `runLaunch`. */
export interface RunLaunchOptions {
	/** Where to launch (hosts/localHost.ts for this machine). */
	host: Host;
	timeoutMs: number;
	signal?: AbortSignal;
	/** Each output line as it comes (the guard shows the user's program output live). */
	onLine?: HostRunOptions['onLine'];
	/** Cap of the kept stdout / stderr (proc.ts default otherwise). */
	maxOutputBytes?: number;
	/** Called once with the command line exactly as it is launched (the private shm directory included). */
	onLaunch?: (argv: readonly string[]) => void;
	/** Directories of this run alone besides the shm directory (a guard report directory): HostRunOptions.privateDirs. */
	privateDirs?: readonly string[];
	/** Working directory of the launch on `host` (default: the host's own, as HostRunOptions.cwd). */
	cwd?: string;
}

/** What `runLaunch` ran and what came of it. */
export interface LaunchOutcome {
	/** The command line as run (show it; it can be pasted into a shell after quoting). */
	argv: string[];
	result: ExecuteResult;
	/** What the launch layer saw or did besides the run: a singleton start, the scancel line and squeue's answer. */
	notes: string[];
	/**
	 * Why the output ended when the launcher, not the program, decided it (a batch job no longer followed, or ended by
	 * Slurm: batchJob.ts): the cause a runner reports instead of reading one from the output. Absent for runLaunch.
	 */
	ended?: string;
}

/**
 * Launch `program` per `spec` on a host, with a timeout and cancellation that end the whole job: the launcher's
 * process group is killed (locally, or remotely by SshHost), and an srun job is also cancelled by name.
 * Throws only on invalid specs (buildLaunchArgv).
 */
export async function runLaunch(spec: LaunchSpec, program: readonly string[], opts: RunLaunchOptions): Promise<LaunchOutcome> {
	let s = withJobName(spec);
	buildLaunchArgv(s, program); // an invalid spec throws before anything is created on the host
	const { host } = opts;
	const notes: string[] = [];
	// Open MPI's shared-memory segments go into a directory of this launch, removed below whatever the outcome
	// (shmBacking.ts: crashed or killed ranks leave theirs in /dev/shm otherwise).
	let shm: ShmDir | null = null;
	if (s.flavor === 'openmpi' && !s.srun && ranksStayHere(s.extraArgs) && !backingChosen(s.mca, s.env) && !opts.signal?.aborted) {
		const param = await detectShmBackingParam(host, s.mpirun);
		shm = param ? await createShmDir(host, param) : null;
		if (shm) { s = { ...s, mca: [...s.mca, shm.mca] }; }
	}
	const argv = buildLaunchArgv(s, program);
	try { opts.onLaunch?.(argv); } catch { /* a progress callback never stops the launch */ }
	let result: ExecuteResult;
	let shmNote: string | null = null;
	try {
		result = await host.run(argv, { ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}), timeoutMs: opts.timeoutMs, signal: opts.signal, onLine: opts.onLine, maxOutputBytes: opts.maxOutputBytes, privateDirs: [...(opts.privateDirs ?? []), ...(shm ? [shm.dir] : [])] });
	} finally {
		if (shm) { shmNote = await removeShmDir(host, shm); }
	}
	// A stopped launch says what was ended and whether anything of it was still running afterwards.
	if (result.cleanup) { notes.push(result.cleanup); }
	if (shmNote) { notes.push(shmNote); }
	const singletons = singletonStart(result.stdout, s.np);
	if (singletons) { notes.push(singletons); }
	if (s.srun && (result.timedOut || opts.signal?.aborted || result.signal !== null || (result.exitCode !== 0 && result.exitCode !== null))) {
		const scancel = s.srun.srun.includes('/') ? s.srun.srun.replace(/srun$/, 'scancel') : 'scancel';
		const cmd = [scancel, `--name=${s.srun.jobName}`];
		const r = await host.run(cmd, { timeoutMs: 20_000 });
		notes.push(`${cmd.join(' ')}: ${r.exitCode === 0 ? 'done' : r.error ?? (r.stderr.trim() || `exit ${r.exitCode ?? r.signal ?? '?'}`)}`);
		// The job leaves squeue once every step is gone (Slurm reports CANCELLED, then COMPLETING, then nothing).
		const squeue = [scancel.replace(/scancel$/, 'squeue'), '-h', `--name=${s.srun.jobName}`, '-o', '%i %T'];
		const started = Date.now();
		let left = '';
		for (let i = 0; i < 20; i++) {
			const q = await host.run(squeue, { timeoutMs: 10_000 });
			left = q.exitCode === 0 ? q.stdout.trim() : `(squeue: ${q.error ?? q.stderr.trim()})`;
			if (left === '') { break; }
			await new Promise(res => setTimeout(res, 500));
		}
		notes.push(left === '' ? `job ${s.srun.jobName} gone from squeue after ${Date.now() - started} ms` : `job ${s.srun.jobName} still listed after ${Date.now() - started} ms: ${left.split('\n')[0]}`);
	}
	return { argv, result, notes };
}

/**
 * When `np` > 1 ranks were asked for but the output holds several engine documents that each say world_size 1, the
 * launcher started separate one-process MPI jobs (srun without the MPI's PMI plugin does this to MPICH, exit 0).
 * Returns the message to show, or null.
 */
export function singletonStart(stdout: string, np: number): string | null {
	if (np < 2) { return null; }
	// Framed documents (every chunk is written 3 times: count documents, not text matches); plain ones of older engines
	// and of `gpumpi inspect` without --framed by their text.
	const framed = extractJsonDocuments(stdout);
	const sizeOf = (d: unknown): unknown => (typeof d === 'object' && d !== null ? (d as Record<string, unknown>).world_size ?? (d as Record<string, unknown>).np : undefined);
	const docs = framed.length > 0 ? framed.length : stdout.match(/"schema":\s*"gpumpi\.[a-z-]+\/\d+"/g)?.length ?? 0;
	const ones = framed.length > 0 ? framed.filter(d => sizeOf(d) === 1).length : stdout.match(/"(world_size|np)":\s*1[,}\s]/g)?.length ?? 0;
	if (docs < 2 || ones < 2) { return null; }
	return `${ones} separate MPI jobs of world size 1 started instead of one job of ${np} ranks: the launcher's process-management interface does not match this MPI (under srun give --mpi=pmix for Open MPI, --mpi=pmi2 for MPICH)`;
}

/** Flavour from the launcher's name, or from `mpirun --version` ("Open MPI" / "open-mpi" / "HYDRA"), run on `host`. */
export async function detectFlavor(mpirun: string, timeoutMs: number, host: Host): Promise<MpiFlavor | null> {
	const base = mpirun.split('/').pop() ?? mpirun;
	if (/mpich|hydra/i.test(base)) { return 'mpich'; }
	if (/openmpi|prterun|orterun/i.test(base)) { return 'openmpi'; }
	const r = await host.run([mpirun, '--version'], { timeoutMs });
	const text = r.stdout + r.stderr;
	if (/Open MPI|open-mpi|OpenRTE|PRRTE/i.test(text)) { return 'openmpi'; }
	if (/HYDRA|MPICH/i.test(text)) { return 'mpich'; }
	return null;
}
