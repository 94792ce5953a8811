/**
 * The transport map as a Slurm batch job (docs/map-schema.md, "Batch"): the same run as `map --srun` (runMap, the
 * same engine argv and srun options), launched by launch/batchJob.ts's BatchLauncher instead of runLaunch — the
 * script runs srun inside the job's allocation, the job's output is followed, and the map document (partial when the
 * job ended early, with outliers) comes from runMap as for any run. A job file beside the script keeps what was run,
 * so `map --follow FILE` reads the same job again (after Ctrl-C, a timeout, or once it has ended).
 */
import { randomBytes } from 'node:crypto';
import type { Host } from '../host';
import { BatchLauncher, type BatchJob, type FollowOptions } from '../launch/batchJob';
import { withJobName, type LaunchConfig, type LaunchSpec } from '../launch/launchSpec';
import { runMap, type MapEngineOptions, type MapRunOptions, type MapRunResult } from './mapRunner';

/** Schema of the job file written beside the batch script. */
export const MAP_BATCH_JOB_SCHEMA = 'gpumpi.map-batch-job/1';

/** The job file: the job, its files, and the run's inputs (what runMap needs to read its output again). */
export interface MapBatchJobFile {
	schema: typeof MAP_BATCH_JOB_SCHEMA;
	job_id: string;
	/** ISO time of the submission. */
	submitted: string;
	/** Where sbatch ran ("this machine" or the ssh host's label). */
	host: string;
	script: string;
	stdout: string;
	stderr: string;
	sbatch: string[];
	/** The launch inside the job (the map document's runner.command). */
	command: string[];
	run: { engine: string; spec: LaunchSpec; config: LaunchConfig; map: MapEngineOptions };
}

/** What a batch map adds to a run's options. */
export interface MapBatchRequest {
	/** Directory of the script and the job's files (created; relative: to the host's working directory). */
	dir: string;
	/** The user's sbatch options, argv items (checked with sbatch.ts checkSbatchArgs). */
	sbatchArgs: string[];
	cancelOnInterrupt: boolean;
	/** Poll periods (tests); defaults in batchJob.ts. */
	poll?: Pick<FollowOptions, 'filePollMs' | 'statePollMs' | 'pendingNoticeMs'>;
}

/** A batch map's outcome: the run's, and the launcher that knows the job (null job: nothing was submitted). */
export interface MapBatchResult {
	run: MapRunResult;
	job: BatchJob | null;
	/** The job is still queued or running (following stopped at Ctrl-C or the timeout): it can be followed again. */
	left: boolean;
}

/** A file-name tag: the submission's time and 4 random bytes (20261206-233015-1a2b3c4d). */
export function batchTag(now = new Date()): string {
	const p = (n: number): string => String(n).padStart(2, '0');
	return `${now.getFullYear()}${p(now.getMonth() + 1)}${p(now.getDate())}-${p(now.getHours())}${p(now.getMinutes())}${p(now.getSeconds())}-${randomBytes(4).toString('hex')}`;
}

function outcome(run: MapRunResult, launcher: BatchLauncher): MapBatchResult {
	const end = launcher.follow?.end;
	return { run, job: launcher.job, left: launcher.job !== null && (end === 'interrupted' || end === 'timeout') };
}

/** Submit the map as a batch job and follow it. `opts.spec` must launch with srun (the step inside the job). */
export async function runMapBatch(opts: MapRunOptions & { host: Host }, batch: MapBatchRequest): Promise<MapBatchResult> {
	const spec = withJobName(opts.spec);
	const submitted = new Date();
	const launcher = new BatchLauncher(opts.host, {
		submit: {
			dir: batch.dir, prefix: 'gpumpi-map', tag: batchTag(submitted), sbatchArgs: batch.sbatchArgs, jobName: 'gpumpi-map',
			about: [
				'gpumpi-doctor\'s transport map as a Slurm batch job (docs/map-schema.md, "Batch"): srun runs the gpumpi engine',
				'inside this job\'s allocation. Its standard output holds the engine\'s streamed records and map document,',
				'its standard error srun\'s messages; `gpumpi-doctor map --follow <the .job.json file beside this one>`',
				'reads them into the map document.',
			],
			jobFile: (job, command) => JSON.stringify({
				schema: MAP_BATCH_JOB_SCHEMA, job_id: job.id, submitted: submitted.toISOString(), host: opts.host.ref.label,
				script: job.files.script, stdout: job.files.stdout, stderr: job.files.stderr, sbatch: job.sbatch, command,
				run: { engine: opts.engine, spec, config: opts.config, map: opts.map },
			} satisfies MapBatchJobFile, null, 1) + '\n',
		},
	}, { cancelOnInterrupt: batch.cancelOnInterrupt, onProgress: opts.onProgress, ...batch.poll });
	const run = await runMap({ ...opts, spec, launch: launcher.launch });
	return outcome(run, launcher);
}

/** Follow a job submitted before (its job file, read by `parseMapBatchJob`) and read its output into the map. */
export async function followMapBatch(job: MapBatchJobFile, opts: Omit<MapRunOptions, 'engine' | 'spec' | 'config' | 'map' | 'launch'> & { host: Host; cancelOnInterrupt: boolean; poll?: MapBatchRequest['poll'] }): Promise<MapBatchResult> {
	const launcher = new BatchLauncher(opts.host, {
		follow: { id: job.job_id, files: { dir: '', script: job.script, stdout: job.stdout, stderr: job.stderr, jobFile: '' }, sbatch: job.sbatch, command: job.command },
	}, { cancelOnInterrupt: opts.cancelOnInterrupt, onProgress: opts.onProgress, ...opts.poll });
	const run = await runMap({ ...opts, ...job.run, launch: launcher.launch });
	return outcome(run, launcher);
}

const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every(x => typeof x === 'string');

/** A job file's text → the job, or why it is not one (checked as far as reading the job again needs). */
export function parseMapBatchJob(text: string): MapBatchJobFile | string {
	let j: unknown;
	try { j = JSON.parse(text); } catch (e) { return `not JSON: ${(e as Error).message}`; }
	if (typeof j !== 'object' || j === null) { return 'not a JSON object'; }
	const f = j as Partial<Record<keyof MapBatchJobFile, unknown>>;
	if (f.schema !== MAP_BATCH_JOB_SCHEMA) { return `not a batch map job file (schema ${JSON.stringify(f.schema)}, expected ${MAP_BATCH_JOB_SCHEMA})`; }
	if (typeof f.job_id !== 'string' || !/^\d{1,12}$/.test(f.job_id)) { return 'job_id is not a Slurm job id'; }
	for (const k of ['stdout', 'stderr', 'script'] as const) {
		if (typeof f[k] !== 'string' || !(f[k] as string).startsWith('/')) { return `${k} is not an absolute path`; }
	}
	if (!isStrings(f.command) || f.command.length === 0 || !isStrings(f.sbatch)) { return 'command or sbatch is not a list of strings'; }
	const run = f.run as Partial<MapBatchJobFile['run']> | undefined;
	const spec = run?.spec as Partial<LaunchSpec> | undefined;
	if (typeof run?.engine !== 'string' || typeof spec !== 'object' || spec === null || !Number.isInteger(spec.np) || !spec.srun
		|| (spec.flavor !== 'openmpi' && spec.flavor !== 'mpich') || typeof run.config !== 'object' || typeof run.map !== 'object') {
		return 'run (engine, spec with srun, config, map) is missing or malformed';
	}
	return j as MapBatchJobFile;
}
