/**
 * Builds launcher command lines for the reproducers and the map, per MPI flavour and launcher, from data (never a
 * shell string), and runs them on a Host:
 * Open MPI `mpirun [--allow-run-as-root] [--oversubscribe] [--mca K V]... [-x NAME=value]... [extra] -np N prog...`,
 * MPICH Hydra `mpirun.mpich [-genv NAME value]... [extra] -np N prog...`,
 * Slurm `env NAME=value... [OMPI_MCA_k=v...] srun --job-name=J --kill-on-bad-exit=1 [--mpi=P] [allocation...] [extra] -n N prog...`
 * (srun exports its whole environment by default, so presets travel as environment, commas and all; a timed-out or
 * cancelled srun job is also ended with `scancel --name J`).
 */
import { randomBytes } from 'node:crypto';
import type { ExecuteResult } from '../proc';
import type { Host } from '../hosts/host';
import { LocalHost } from '../hosts/localHost';

/** Which launcher dialect. */
export type MpiFlavor = 'openmpi' | 'mpich';

/** Slurm's launcher instead of mpirun: `srun` inside an allocation, or with allocation options of its own. */
export interface SrunSpec {
	/** Path or name of srun. */
	srun: string;
	/**
	 * `--mpi=` plugin (pmi2, pmix, none, …); null: by flavour, pmix for Open MPI and pmi2 for MPICH. Measured on
	 * Debian's Slurm 22.05 (test/engine/slurmLab.test.ts): Open MPI 4.1.4 aborts in MPI_Init under pmi2 or none, and
	 * MPICH 4.0.2 without a PMI plugin starts N singletons of size 1 that exit 0 — a silent wrong result.
	 */
	mpi: string | null;
	/** Allocation options passed before the program (e.g. ["-p", "gpu", "-N", "2", "-t", "10"]); empty inside salloc. */
	allocation: string[];
	/** `--job-name`, so a cancelled run can be ended with scancel; runLaunch fills a fresh one when empty. */
	jobName: string;
}

/** Everything that goes into one launch except the program. */
export interface LaunchSpec {
	flavor: MpiFlavor;
	/** Path or name of mpirun (unused when `srun` is set). */
	mpirun: string;
	/** Launch with Slurm's srun instead of mpirun. */
	srun?: SrunSpec | null;
	np: number;
	/** Environment presets handed to every rank, e.g. ["UCX_TLS", "^cuda_ipc"]. */
	env: Array<[string, string]>;
	/** Open MPI MCA parameters, e.g. ["btl_smcuda_use_cuda_ipc", "0"]. Refused for MPICH. */
	mca: Array<[string, string]>;
	/** Extra launcher argv items, passed verbatim before -np (e.g. ["--host", "a:2,b:2"]). */
	extraArgs: string[];
	/** Open MPI: add --mca btl_tcp_if_include lo (keep TCP on loopback). */
	loopbackOnly: boolean;
	/** Open MPI: add --allow-run-as-root (default: when running as root). */
	allowRunAsRoot: boolean;
	/** Open MPI: add --oversubscribe (more ranks than cores). */
	oversubscribe: boolean;
}

/** A named launcher configuration (e.g. "ucx, UCX_TLS=^cuda_ipc"). */
export interface LaunchConfig {
	label: string;
	env: Array<[string, string]>;
	mca: Array<[string, string]>;
	extraArgs: string[];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MCA_NAME = /^[A-Za-z0-9_]+$/;

/** "NAME=value" → [NAME, value]; null when NAME is not a valid environment name. */
export function parsePreset(text: string): [string, string] | null {
	const eq = text.indexOf('=');
	if (eq <= 0) { return null; }
	const name = text.slice(0, eq);
	return ENV_NAME.test(name) ? [name, text.slice(eq + 1)] : null;
}

/** Default spec for a flavour: root handling from the current uid, oversubscribe on for Open MPI. */
export function defaultSpec(flavor: MpiFlavor, mpirun: string, np: number): LaunchSpec {
	const root = typeof process.getuid === 'function' && process.getuid() === 0;
	return { flavor, mpirun, np, env: [], mca: [], extraArgs: [], loopbackOnly: false, allowRunAsRoot: root, oversubscribe: flavor === 'openmpi' };
}

/** Apply a named configuration on top of a spec. */
export function withConfig(spec: LaunchSpec, config: LaunchConfig): LaunchSpec {
	return { ...spec, env: [...spec.env, ...config.env], mca: [...spec.mca, ...config.mca], extraArgs: [...spec.extraArgs, ...config.extraArgs] };
}

/** An srun `--mpi=` plugin name (pmi2, pmix, pmix_v4, none, …): what settings, the CLI and the argv builder accept. */
export const SRUN_MPI_PLUGIN = /^[A-Za-z0-9_.-]{1,32}$/;
const JOB_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** The full argv. Throws Error with a clear message on invalid data (bad names, MCA with MPICH, np < 1). */
export function buildLaunchArgv(spec: LaunchSpec, program: readonly string[]): string[] {
	if (!Number.isInteger(spec.np) || spec.np < 1 || spec.np > 4096) { throw new Error(`bad rank count ${spec.np}`); }
	if (program.length === 0) { throw new Error('no program to launch'); }
	for (const [name] of spec.env) {
		if (!ENV_NAME.test(name)) { throw new Error(`bad environment variable name ${JSON.stringify(name)}`); }
	}
	for (const [name] of spec.mca) {
		if (!MCA_NAME.test(name)) { throw new Error(`bad MCA parameter name ${JSON.stringify(name)}`); }
	}
	if (spec.srun) { return buildSrunArgv(spec, spec.srun, program); }
	const argv = [spec.mpirun];
	if (spec.flavor === 'openmpi') {
		if (spec.allowRunAsRoot) { argv.push('--allow-run-as-root'); }
		if (spec.oversubscribe) { argv.push('--oversubscribe'); }
		if (spec.loopbackOnly) { argv.push('--mca', 'btl_tcp_if_include', 'lo'); }
		for (const [k, v] of spec.mca) { argv.push('--mca', k, v); }
		for (const [k, v] of spec.env) { argv.push('-x', `${k}=${v}`); }
	} else {
		if (spec.mca.length > 0) { throw new Error(`MCA parameters (${spec.mca.map(m => m[0]).join(', ')}) are Open MPI only; this launcher is MPICH`); }
		for (const [k, v] of spec.env) { argv.push('-genv', k, v); }
	}
	argv.push(...spec.extraArgs, '-np', String(spec.np), ...program);
	return argv;
}

function buildSrunArgv(spec: LaunchSpec, srun: SrunSpec, program: readonly string[]): string[] {
	if (srun.mpi !== null && !SRUN_MPI_PLUGIN.test(srun.mpi)) { throw new Error(`bad srun --mpi plugin ${JSON.stringify(srun.mpi)}`); }
	if (!JOB_NAME.test(srun.jobName)) { throw new Error(`bad Slurm job name ${JSON.stringify(srun.jobName)}`); }
	if (spec.flavor === 'mpich' && spec.mca.length > 0) {
		throw new Error(`MCA parameters (${spec.mca.map(m => m[0]).join(', ')}) are Open MPI only; this launch is MPICH under srun`);
	}
	// Open MPI reads MCA parameters from OMPI_MCA_<name> in every rank's environment.
	const env = [...spec.mca.map(([k, v]): [string, string] => [`OMPI_MCA_${k}`, v]), ...spec.env];
	if (spec.flavor === 'openmpi' && spec.loopbackOnly) { env.unshift(['OMPI_MCA_btl_tcp_if_include', 'lo']); }
	const argv = env.length > 0 ? ['env', ...env.map(([k, v]) => `${k}=${v}`)] : [];
	// --kill-on-bad-exit=1: a rank that dies ends the step, as mpirun does (without it MPICH's other ranks wait forever).
	argv.push(srun.srun, `--job-name=${srun.jobName}`, '--kill-on-bad-exit=1');
	argv.push(`--mpi=${srun.mpi ?? (spec.flavor === 'openmpi' ? 'pmix' : 'pmi2')}`);
	argv.push(...srun.allocation, ...spec.extraArgs, '-n', String(spec.np), ...program);
	return argv;
}

/** A fresh job name for one srun launch. */
export function newJobName(): string {
	return `gpumpi-${randomBytes(4).toString('hex')}`;
}

/** `spec` with a fresh srun job name when it has none (unchanged for mpirun). */
export function withJobName(spec: LaunchSpec): LaunchSpec {
	return spec.srun && !spec.srun.jobName ? { ...spec, srun: { ...spec.srun, jobName: newJobName() } } : spec;
}

/** Options of `runLaunch`. */
export interface RunLaunchOptions {
	/** Where to launch (default: this machine). */
	host?: Host;
	timeoutMs: number;
	signal?: AbortSignal;
}

/** What `runLaunch` ran and what came of it. */
export interface LaunchOutcome {
	/** The command line as run (show it; it can be pasted into a shell after quoting). */
	argv: string[];
	result: ExecuteResult;
	/** What the launch layer saw or did besides the run: a singleton start, the scancel line and squeue's answer. */
	notes: string[];
}

/**
 * Launch `program` per `spec` on a host, with a timeout and cancellation that end the whole job: the launcher's
 * process group is killed (locally, or remotely by SshHost), and an srun job is also cancelled by name.
 * Throws only on invalid specs (buildLaunchArgv).
 */
export async function runLaunch(spec: LaunchSpec, program: readonly string[], opts: RunLaunchOptions): Promise<LaunchOutcome> {
	const s = withJobName(spec);
	const argv = buildLaunchArgv(s, program);
	const host = opts.host ?? new LocalHost();
	const result = await host.run(argv, { timeoutMs: opts.timeoutMs, signal: opts.signal });
	const notes: string[] = [];
	// A stopped launch says what was ended and whether anything of it was still running afterwards.
	if (result.cleanup) { notes.push(result.cleanup); }
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
	const docs = stdout.match(/"schema":\s*"gpumpi\.[a-z-]+\/\d+"/g)?.length ?? 0;
	const ones = stdout.match(/"(world_size|np)":\s*1[,}\s]/g)?.length ?? 0;
	if (docs < 2 || ones < 2) { return null; }
	return `${ones} separate MPI jobs of world size 1 started instead of one job of ${np} ranks: the launcher's process-management interface does not match this MPI (under srun give --mpi=pmix for Open MPI, --mpi=pmi2 for MPICH)`;
}

/** Flavour from the launcher's name, or from `mpirun --version` ("Open MPI" / "open-mpi" / "HYDRA"), run on `host`. */
export async function detectFlavor(mpirun: string, timeoutMs = 15000, host?: Host): Promise<MpiFlavor | null> {
	const base = mpirun.split('/').pop() ?? mpirun;
	if (/mpich|hydra/i.test(base)) { return 'mpich'; }
	if (/openmpi|prterun|orterun/i.test(base)) { return 'openmpi'; }
	const r = await (host ?? new LocalHost()).run([mpirun, '--version'], { timeoutMs });
	const text = r.stdout + r.stderr;
	if (/Open MPI|open-mpi|OpenRTE|PRRTE/i.test(text)) { return 'openmpi'; }
	if (/HYDRA|MPICH/i.test(text)) { return 'mpich'; }
	return null;
}

/** Environment for UCX evidence: lanes always, protocol tables when asked (UCX 1.13 needs UCX_PROTO_ENABLE=y too). */
export function evidenceEnv(protoInfo: boolean): Array<[string, string]> {
	const env: Array<[string, string]> = [['UCX_LOG_LEVEL', 'info']];
	if (protoInfo) { env.push(['UCX_PROTO_INFO', 'y'], ['UCX_PROTO_ENABLE', 'y']); }
	return env;
}

/** Open MPI: print which btl carries each peer ("mca: bml: Using smcuda btl for send to … on node …"). */
export const OB1_EVIDENCE_MCA: Array<[string, string]> = [['btl_base_verbose', '100']];

/** The evidence switches for one run: UCX info lines always; Open MPI btl selection lines too. */
export function withEvidence(config: LaunchConfig, flavor: MpiFlavor, protoInfo: boolean): LaunchConfig {
	return {
		...config,
		env: [...evidenceEnv(protoInfo), ...config.env],
		mca: flavor === 'openmpi' ? [...OB1_EVIDENCE_MCA, ...config.mca] : config.mca,
	};
}

/** Open MPI: choose pml ucx with every transport/device allowed (Debian disables pml ucx by default). */
export const PML_UCX_MCA: Array<[string, string]> = [['pml', 'ucx'], ['pml_ucx_tls', 'any'], ['pml_ucx_devices', 'any']];
