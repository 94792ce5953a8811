/**
 * What one launch is, as data: the MPI flavour, mpirun or Slurm's srun, ranks, environment presets, MCA parameters
 * and extra launcher options (a LaunchSpec), and named configurations applied on top (a LaunchConfig).
 * launchArgv.ts turns a spec into a command line, runLaunch.ts runs it on a Host.
 */
import { randomBytes } from 'node:crypto';

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

/** A valid environment variable name (what `-x`, `-genv` and `env` accept). */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A valid Open MPI MCA parameter name. */
export const MCA_NAME = /^[A-Za-z0-9_]+$/;

/** "NAME=value" → [NAME, value]; null when NAME is not a valid environment name. */
export function parsePreset(text: string): [string, string] | null {
	const eq = text.indexOf('=');
	if (eq <= 0) { return null; }
	const name = text.slice(0, eq);
	return ENV_NAME.test(name) ? [name, text.slice(eq + 1)] : null;
}

/**
 * Validation message for a launcher (or engine) path or name as the user gives it (`--mpirun`, `--engine`, the VS Code
 * reproducer's launcher box), or null when fine: one argv word, never an option, no control characters.
 */
export function checkMpirun(s: string): string | null {
	if (s.length > 4096) { return 'too long'; }
	if (/[\u0000-\u001f]/.test(s)) { return 'control characters are not allowed'; }
	if (s.startsWith('-')) { return 'must be a program, not an option'; }
	return null;
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

/** A fresh job name for one srun launch. */
export function newJobName(): string {
	return `gpumpi-${randomBytes(4).toString('hex')}`;
}

/** `spec` with a fresh srun job name when it has none (unchanged for mpirun). */
export function withJobName(spec: LaunchSpec): LaunchSpec {
	return spec.srun && !spec.srun.jobName ? { ...spec, srun: { ...spec.srun, jobName: newJobName() } } : spec;
}
