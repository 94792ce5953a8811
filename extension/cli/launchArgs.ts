/**
 * Options shared by the subcommands that launch (`repro`, `map`, `guard`) and by those that reach an ssh host
 * (`inspect`, `collect`), declared once (argv.ts tables): the launcher and its settings (`--mpirun --engine --flavor
 * --memory --preset --mca --timeout --from-json`), where to launch (`--host --setup --ssh-config`) and how (`--hosts
 * --srun --srun-mpi --srun-arg`); the checks that need several of them; and the launch target they resolve to.
 */
import * as path from 'node:path';
import { resolveHost } from '../core/hosts/hostSettings';
import { hostListArgs, resolveLaunchTarget, type LaunchTarget } from '../core/hosts/launchTarget';
import { buildLaunchArgv } from '../core/launch/launchArgv';
import { defaultSpec, parsePreset, SRUN_MPI_PLUGIN, type MpiFlavor } from '../core/launch/launchSpec';
import { checkMpirun } from '../core/launch/launchSpec';
import { oneOf, option, pair, repeatable, flag, integer, text, type Kind, type OptionValues } from './argv';
import { shown, UsageError } from './io';

/** A program to run (a name on PATH or a path); `needs` names it in the error ("a program name or path"). */
export function program(needs: string, metavar = 'PATH'): Kind<string> {
	return text(metavar, { check: v => { const p = v === '' ? 'it is empty' : checkMpirun(v); return p === null ? null : `needs ${needs}: ${p}`; } });
}

/** NAME=VALUE with NAME an environment variable name. */
export function assignment(metavar = 'NAME=VALUE'): Kind<[string, string]> {
	return {
		metavar, arity: 1,
		parse([v], opt) {
			const p = parsePreset(v);
			if (!p) { throw new UsageError(`${opt} needs NAME=VALUE with NAME an environment variable name, got ${shown(v)}`); }
			return p;
		},
	};
}

/** The launcher and its settings (repro, map; guard takes some of them). */
export const LAUNCH_OPTIONS = {
	mpirun: option(program('a program name or path'), 'launcher (default: mpirun on PATH)'),
	flavor: option(oneOf(['openmpi', 'mpich'] as const), 'the MPI of the launcher: skips detecting it (by the launcher\'s name, else mpirun --version)'),
	engine: option(program('the path of the gpumpi engine'), 'gpumpi engine (default: native/build/engine*/gpumpi)'),
	memory: option(oneOf(['device', 'host'] as const), 'buffers (default device; without a GPU the engine uses host memory and says why)'),
	preset: repeatable(assignment(), 'environment for every rank (Open MPI -x, MPICH -genv), repeatable (e.g. UCX_TLS=^cuda_ipc)'),
	mca: repeatable(pair('K V', 'a name and a value (e.g. --mca pml ob1)'), 'Open MPI MCA parameter, repeatable (e.g. btl tcp,self)'),
	timeout: option(integer(1, 86400, 'S'), 'run timeout in seconds, 1..86400'),
	'from-json': option(text('FILE', { empty: 'a file name' }), 'print a saved result instead of running'),
};

/** Where to launch (an ssh host) and how (explicit hosts, Slurm's srun). */
export const TARGET_OPTIONS = {
	host: option(text('H'), 'launch on the ssh host H (alias from ~/.ssh/config or user@host; key login, known host key) instead of this machine; the engine is deployed and built there unless --engine'),
	setup: option(text('LINE'), 'shell line run on H first (e.g. "module load openmpi/5.0.10 cuda/12.9")'),
	'ssh-config': option(text('FILE', { empty: 'a file name' }), 'ssh client configuration file (default ~/.ssh/config)'),
	hosts: option(text('LIST'), 'explicit hosts for the launcher: Open MPI --host a:2,b:2, MPICH -hosts a:2,b:2, srun --nodelist'),
	srun: flag('launch with Slurm\'s srun (inside an allocation, or with --srun-arg allocation options); presets and MCA parameters (as OMPI_MCA_*) travel in the environment; a timed-out or cancelled job is ended with scancel --name'),
	'srun-mpi': option(text('P', { check: v => SRUN_MPI_PLUGIN.test(v) ? null : `needs a plugin name like pmi2 or pmix, got ${shown(v)}` }), 'srun --mpi=P (pmi2, pmix, …; default the site\'s MpiDefault); implies --srun'),
	'srun-arg': repeatable(text('X'), 'srun option, repeatable, one argv item each (e.g. --srun-arg -p --srun-arg gpu --srun-arg -N2); implies --srun'),
};

/** The parsed values of any table that takes some of the shared options. */
export type SharedValues = OptionValues<typeof LAUNCH_OPTIONS & typeof TARGET_OPTIONS>;

/** What the launcher options set. */
export interface LaunchCliOptions {
	mpirun: string;
	engine: string | null;
	flavor: MpiFlavor | null;
	memory: 'device' | 'host';
	env: Array<[string, string]>;
	mca: Array<[string, string]>;
	timeoutS: number;
	fromJson: string | null;
	/** ssh host to launch on (alias or user@host); null: this machine. */
	host?: string | null;
	setup?: string | null;
	sshConfig?: string | null;
	/** Explicit launcher host list ("a:2,b:2"). */
	hostList?: string | null;
	srun?: boolean;
	srunMpi?: string | null;
	srunArgs?: string[];
}

/** The shared options' values with the subcommand's defaults for those it does not take or that were not given. */
export function launchCliOptions(v: SharedValues, defaults: { memory: 'device' | 'host'; timeoutS: number }): LaunchCliOptions {
	return {
		mpirun: v.mpirun ?? 'mpirun', engine: v.engine ?? null, flavor: v.flavor ?? null, memory: v.memory ?? defaults.memory,
		env: v.preset ?? [], mca: v.mca ?? [], timeoutS: v.timeout ?? defaults.timeoutS, fromJson: v['from-json'] ?? null,
		host: v.host ?? null, setup: v.setup ?? null, sshConfig: v['ssh-config'] ?? null, hostList: v.hosts ?? null,
		srun: v.srun === true || v['srun-mpi'] !== undefined || v['srun-arg'] !== undefined, srunMpi: v['srun-mpi'] ?? null, srunArgs: v['srun-arg'] ?? [],
	};
}

/** --setup and --ssh-config need --host, and --host must be a destination ssh accepts as one (not an option). */
export function checkSshTarget(host: string | null | undefined, setup: string | null | undefined, sshConfig: string | null | undefined): void {
	if (host == null && (setup != null || sshConfig != null)) { throw new UsageError('--setup and --ssh-config need --host'); }
	if (host != null) {
		const h = resolveHost([], host, setup ?? undefined);
		if ('error' in h) { throw new UsageError(`--host: ${h.error}`); }
	}
}

/**
 * Everything about where and how to launch that needs several options and can be checked without launching, ssh or
 * deploy: UsageError for options that need another (--setup without --host), a hostile --host, a malformed --hosts
 * list, MCA or environment names the launcher refuses, MCA parameters with --flavor mpich, an option-like --mpirun.
 */
export function checkLaunchOptions(o: LaunchCliOptions, np: number): void {
	checkSshTarget(o.host, o.setup, o.sshConfig);
	// --mpirun is checked when parsed; guard may take it from the user's command.
	const mpirunProblem = o.mpirun === '' ? 'it is empty' : checkMpirun(o.mpirun);
	if (mpirunProblem) { throw new UsageError(`--mpirun needs a program name or path: ${mpirunProblem}`); }
	if (o.hostList != null) {
		try { hostListArgs(o.hostList, o.flavor ?? 'openmpi', o.srun === true); } catch (e) { throw new UsageError(`--hosts: ${(e as Error).message}`); }
	}
	// The launcher's own checks (names of MCA parameters and environment variables, MCA with MPICH), on a dry spec.
	try {
		buildLaunchArgv({
			...defaultSpec(o.flavor ?? 'openmpi', o.mpirun, np), env: o.env, mca: o.mca,
			srun: o.srun ? { srun: 'srun', mpi: o.srunMpi ?? null, allocation: o.srunArgs ?? [], jobName: 'gpumpi-check' } : null,
		}, ['gpumpi']);
	} catch (e) {
		throw new UsageError((e as Error).message);
	}
}

/** Resolve where and how to launch from the shared options (UsageError for contradictory options). */
export async function cliLaunchTarget(o: LaunchCliOptions, np: number, cwd: string, progress: (line: string) => void, signal?: AbortSignal): Promise<LaunchTarget> {
	checkLaunchOptions(o, np);
	let host = null;
	if (o.host) {
		const h = resolveHost([], o.host, o.setup ?? undefined);
		if ('error' in h) { throw new UsageError(`--host: ${h.error}`); }
		host = h;
	}
	return resolveLaunchTarget({
		host, mpirun: o.mpirun === 'mpirun' ? '' : o.mpirun, flavor: o.flavor, engine: o.engine,
		srun: o.srun ? { srun: 'srun', mpi: o.srunMpi ?? null, allocation: o.srunArgs ?? [] } : null,
		hostList: o.hostList ?? null, np,
		remote: { configFile: o.sshConfig ? path.resolve(cwd, o.sshConfig) : undefined, onProgress: progress, signal },
	});
}
