/**
 * `gpumpi-doctor map --sbatch …` and `map --follow FILE` (docs/map-schema.md, "Batch"): the options (read, checked
 * before anything is launched), and what is printed once a batch map has run — the map (partial when the job ended
 * early), the job's end, and, for a job left in the queue (Ctrl-C, the timeout), how to follow it again or cancel it.
 * The run itself is core/map/mapBatch.ts. Kept apart from mapCli.ts, which only calls in here.
 */
import * as path from 'node:path';
import { resolveHost } from '../core/hosts/hostSettings';
import type { Host } from '../core/host';
import { LocalHost } from '../core/hosts/localHost';
import { SshHost } from '../core/hosts/sshHost';
import { checkSbatchArgs, jobTasks } from '../core/launch/sbatch';
import { followMapBatch, parseMapBatchJob, type MapBatchRequest, type MapBatchResult } from '../core/map/mapBatch';
import type { MapRunOptions } from '../core/map/mapRunner';
import type { MapDocument } from '../shared/mapSchema';
import { posixQuoteArgv } from '../shared/shellQuote';
import { flag, option, repeatable, text, type OptionValues } from './argv';
import { EXIT, shown, UsageError, type CliIo } from './io';
import { incompleteNote, partialSummary } from './mapStreamCli';

/** The batch options of `map`, in help order (put into mapCli.ts's table). */
export const BATCH_OPTIONS = {
	sbatch: flag('run the map as a Slurm batch job: write a script (srun inside the job\'s allocation), submit it with sbatch, follow the job (its id and state on stderr) and print the map as a run does; --timeout S is how long to follow it (default 600), the job is then left'),
	'sbatch-arg': repeatable(text('X'), 'sbatch option, repeatable, one argv item each; implies --sbatch. The job\'s size is needed: --sbatch-arg --nodes=2 --sbatch-arg --ntasks-per-node=4 (or --ntasks=N); also e.g. --partition=gpu --gpus-per-node=4 --time=10 --account=A. --np defaults to its tasks'),
	'sbatch-dir': option(text('DIR', { empty: 'a directory' }), 'where the script, the job\'s output and its .job.json go (default gpumpi-batch in the working directory: here, or the login directory of --host); compute nodes must see it'),
	'cancel-on-interrupt': flag('Ctrl-C cancels the job (scancel) and prints what it measured; default: the job is left'),
	follow: option(text('FILE', { empty: 'the .job.json file of a submitted job' }), 'follow a job submitted before (its .job.json) and print its map (--host, --json, --json-lines, --out, --timeout, --cancel-on-interrupt apply)'),
};

/** The batch options of a `map` command line. */
export interface BatchCliOptions {
	sbatch: boolean;
	sbatchArgs: string[];
	dir: string | null;
	cancelOnInterrupt: boolean;
	follow: string | null;
}

/** The batch options' parsed values (`--sbatch-arg` implies `--sbatch`). */
export function batchCliOptions(v: OptionValues<typeof BATCH_OPTIONS>): BatchCliOptions {
	return {
		sbatch: v.sbatch === true || v['sbatch-arg'] !== undefined, sbatchArgs: v['sbatch-arg'] ?? [], dir: v['sbatch-dir'] ?? null,
		cancelOnInterrupt: v['cancel-on-interrupt'] === true, follow: v.follow ?? null,
	};
}

/** What checkBatchOptions reads and sets of the map's options. */
interface BatchChecked {
	batch: BatchCliOptions;
	np: number;
	srun?: boolean;
	hostList?: string | null;
	fromJson: string | null;
	explain: unknown[] | null;
}

/** Options that still apply to `--follow` (the job file holds the run's own); long names without the dashes. */
const FOLLOW_OPTIONS = new Set(['follow', 'host', 'setup', 'ssh-config', 'json', 'json-lines', 'out', 'timeout', 'cancel-on-interrupt']);

/**
 * Check the batch options against the rest (`given`: the long names of the options given, without dashes) before
 * anything runs, and set what they imply: srun inside the job, --np from the job's task count when not given.
 * UsageError otherwise.
 */
export function checkBatchOptions(o: BatchChecked, given: ReadonlySet<string>): void {
	const b = o.batch;
	if (b.follow !== null) {
		const extra = [...given].filter(g => !FOLLOW_OPTIONS.has(g));
		if (extra.length > 0) { throw new UsageError(`--follow reads a job as it was submitted (its file holds the run's options): ${extra.map(g => `--${g}`).join(', ')} cannot apply`); }
		return;
	}
	if (!b.sbatch) {
		if (b.dir !== null || b.cancelOnInterrupt) { throw new UsageError('--sbatch-dir and --cancel-on-interrupt need --sbatch (or --follow)'); }
		return;
	}
	if (o.fromJson !== null || o.explain !== null) { throw new UsageError('--sbatch runs one map as a batch job; --from-json and --explain-latency do not launch one'); }
	if (o.hostList) { throw new UsageError('--hosts: inside a batch job srun runs on the job\'s nodes; choose them with --sbatch-arg --nodelist=a,b'); }
	let shape;
	try { shape = checkSbatchArgs(b.sbatchArgs); } catch (e) { throw new UsageError(`--sbatch-arg: ${(e as Error).message}`); }
	const tasks = jobTasks(shape);
	if (tasks === null) {
		throw new UsageError('--sbatch needs the job\'s size (the map runs one rank per task): --sbatch-arg --nodes=N with --sbatch-arg --ntasks-per-node=K, or --sbatch-arg --ntasks=N');
	}
	if (given.has('np')) {
		if (o.np > tasks) { throw new UsageError(`--np ${o.np} is more ranks than the job's ${tasks} task${tasks === 1 ? '' : 's'} (--sbatch-arg): srun could not start them`); }
	} else {
		if (tasks < 2 || tasks > 4096) { throw new UsageError(`the job has ${tasks} task${tasks === 1 ? '' : 's'}: a map needs 2..4096 ranks (--np, or the job's size)`); }
		o.np = tasks;
	}
	o.srun = true;
}

/**
 * What a batch map needs of the command line. The directory, when relative, is taken from where sbatch runs: the
 * CLI's working directory here, the login directory on an ssh host.
 */
export function batchRequest(b: BatchCliOptions, cwd: string, remote: boolean): MapBatchRequest {
	const dir = b.dir ?? 'gpumpi-batch';
	return { dir: remote ? dir : path.resolve(cwd, dir), sbatchArgs: b.sbatchArgs, cancelOnInterrupt: b.cancelOnInterrupt };
}

/** The options `--follow` keeps from the command line that printed it. */
interface FollowAgain {
	host?: string | null; setup?: string | null; sshConfig?: string | null; json: boolean; jsonLines: boolean; out: string | null;
}

/** The command that follows a job again, shell-quoted. */
export function followCommand(jobFile: string, o: FollowAgain): string {
	return posixQuoteArgv(['gpumpi-doctor', 'map', '--follow', jobFile,
		...(o.host ? ['--host', o.host] : []), ...(o.sshConfig ? ['--ssh-config', o.sshConfig] : []), ...(o.setup ? ['--setup', o.setup] : []),
		...(o.json ? ['--json'] : []), ...(o.jsonLines ? ['--json-lines'] : []), ...(o.out ? ['--out', o.out] : [])]);
}

/**
 * Print a batch map's outcome and return the exit status: the map as a run prints it (0), a partial map of a job that
 * ended early or was no longer followed (3, 130 on Ctrl-C), no map (3, 130). A job left in the queue gets the command
 * that follows it again and the one that cancels it.
 */
export function reportBatch(res: MapBatchResult, o: FollowAgain & { batch: BatchCliOptions }, io: CliIo, emit: (doc: MapDocument) => number): number {
	const r = res.run;
	const say = (l: string): void => io.stderr(`gpumpi-doctor map: ${l}\n`);
	const left = (): void => {
		if (!res.left || !res.job) { return; }
		const file = o.batch.follow ?? res.job.files.jobFile;
		say(`job ${res.job.id} is left as it is. Follow it again: ${followCommand(file, o)}`);
		say(`cancel it: scancel ${res.job.id}${o.host ? ` (on ${o.host})` : ''}`);
	};
	if (r.ok && r.partial) {
		for (const n of r.notes ?? []) { say(n); }
		say(`${r.partial}; ${partialSummary(r.doc)}`);
		const code = emit(r.doc);
		left();
		return io.signal.aborted ? EXIT.interrupted : code === EXIT.ok ? EXIT.failed : code;
	}
	if (!r.ok) {
		say(`${r.error}${res.job ? '' : `\n  the launch it was to run: ${posixQuoteArgv(r.command)}`}`);
		if (r.outputTail.trim() !== '' && !res.left) { io.stderr(`${r.outputTail}\n`); }
		left();
		return io.signal.aborted ? EXIT.interrupted : EXIT.failed;
	}
	const code = emit(r.doc);
	if (r.doc.incomplete) { io.stderr(incompleteNote(r.doc.incomplete)); return code === EXIT.ok ? EXIT.failed : code; }
	return code;
}

/** `--follow FILE`: read the job file on the host (this machine or --host), follow the job, print its map. */
export async function followMain(o: FollowAgain & { batch: BatchCliOptions; timeoutS: number }, io: CliIo, emit: (doc: MapDocument) => number,
	run: Pick<MapRunOptions, 'onRecord'>): Promise<number> {
	const file = o.batch.follow ?? '';
	let host: Host = new LocalHost();
	let close = async (): Promise<void> => undefined;
	if (o.host) {
		const setting = resolveHost([], o.host, o.setup ?? undefined);
		if ('error' in setting) { throw new UsageError(`--host: ${setting.error}`); }
		const ssh = new SshHost({ name: setting.name, destination: setting.sshHost, setup: setting.setup, configFile: o.sshConfig ? path.resolve(io.cwd, o.sshConfig) : undefined });
		close = () => ssh.close();
		const conn = await ssh.connect();
		if (!conn.ok) { await close(); io.stderr(`gpumpi-doctor map: cannot reach ${o.host}: ${conn.error}\n`); return EXIT.failed; }
		host = ssh;
	}
	try {
		const where = o.host ? file : path.resolve(io.cwd, file);
		const read = await host.readFile(where, 4 << 20);
		if (!read.ok) { io.stderr(`gpumpi-doctor map: cannot read ${shown(file)}${o.host ? ` on ${o.host}` : ''}: ${read.error}\n`); return EXIT.failed; }
		const job = parseMapBatchJob(read.text);
		if (typeof job === 'string') { io.stderr(`gpumpi-doctor map: ${file}: ${job}\n`); return EXIT.failed; }
		const res = await followMapBatch(job, {
			host, timeoutMs: o.timeoutS * 1000, signal: io.signal, cancelOnInterrupt: o.batch.cancelOnInterrupt,
			onProgress: l => io.stderr(`${l}\n`), onRecord: run.onRecord,
		});
		return reportBatch(res, o, io, emit);
	} finally {
		await close();
	}
}
