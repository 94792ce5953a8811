/**
 * Builds launcher command lines for the reproducers, the map, inspect and collect, per MPI flavour and launcher, from
 * data (never a shell string):
 * Open MPI `mpirun [--allow-run-as-root] [--oversubscribe] [--mca K V]... [-x NAME=value]... [extra] -np N prog...`,
 * MPICH Hydra `mpirun.mpich [-genv NAME value]... [extra] -np N prog...`,
 * Slurm `env NAME=value... [OMPI_MCA_k=v...] srun --job-name=J --kill-on-bad-exit=1 [--mpi=P] [allocation...] [extra] -n N prog...`
 * (srun exports its whole environment by default, so presets travel as environment, commas and all).
 */
import { ENV_NAME, MCA_NAME, SRUN_MPI_PLUGIN, type LaunchSpec, type SrunSpec } from './launchSpec';

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
