/**
 * Options shared by the subcommands that launch the engine (`repro`, `map`): one reader for
 * `--mpirun --engine --flavor --memory --preset --mca --timeout --from-json`, where to launch
 * (`--host --setup --ssh-config`), how (`--srun --srun-mpi --srun-arg`, `--hosts`), and the argv helpers they use.
 */
import * as path from 'node:path';
import { resolveHost } from '../core/hosts/hostSettings';
import { hostListArgs, resolveLaunchTarget, type LaunchTarget } from '../core/hosts/launchTarget';
import { buildLaunchArgv } from '../core/launch/launchArgv';
import { defaultSpec, parsePreset, SRUN_MPI_PLUGIN, type MpiFlavor } from '../core/launch/launchSpec';
import { checkMpirun } from '../core/repro/reproChoices';
import { shown, UsageError } from './io';

/** The value after the option at argv[i]; UsageError when there is none. */
export function optionValue(argv: readonly string[], i: number, name: string): string {
	const v = argv[i + 1];
	if (v === undefined) { throw new UsageError(`${name} needs a value`); }
	return v;
}

/** A decimal integer in lo..hi; UsageError otherwise. */
export function optionInt(text: string, name: string, lo: number, hi: number): number {
	const n = Number(text);
	if (!/^\d{1,16}$/.test(text) || n < lo || n > hi) { throw new UsageError(`${name} needs an integer ${lo}..${hi}, got ${shown(text)}`); }
	return n;
}

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

/** Usage lines for the options `readLaunchOption` reads about where and how to launch. */
export const TARGET_USAGE = `  --host H               launch on the ssh host H (alias from ~/.ssh/config or user@host; key login, known host
                         key) instead of this machine; the engine is deployed and built there unless --engine
  --setup LINE           shell line run on H first (e.g. "module load openmpi/5.0.10 cuda/12.9")
  --ssh-config FILE      ssh client configuration file (default ~/.ssh/config)
  --hosts LIST           explicit hosts for the launcher: Open MPI --host a:2,b:2, MPICH -hosts a:2,b:2, srun --nodelist
  --srun                 launch with Slurm's srun (inside an allocation, or with --srun-arg allocation options);
                         presets and MCA parameters (as OMPI_MCA_*) travel in the environment; a timed-out or
                         cancelled job is ended with scancel --name
  --srun-mpi P           srun --mpi=P (pmi2, pmix, …; default the site's MpiDefault)
  --srun-arg X           srun option, repeatable, one argv item each (e.g. --srun-arg -p --srun-arg gpu --srun-arg -N2)
`;

/**
 * When argv[i] is one of the shared launcher options, store it in `o` and return the index of its last value;
 * otherwise return -1 (the caller handles its own options).
 */
export function readLaunchOption(argv: readonly string[], i: number, o: LaunchCliOptions): number {
	const a = argv[i];
	switch (a) {
		case '--mpirun': o.mpirun = optionValue(argv, i, a); return i + 1;
		case '--engine': o.engine = optionValue(argv, i, a); return i + 1;
		case '--from-json': o.fromJson = optionValue(argv, i, a); return i + 1;
		case '--flavor': {
			const f = optionValue(argv, i, a);
			if (f !== 'openmpi' && f !== 'mpich') { throw new UsageError(`--flavor needs openmpi or mpich, got ${shown(f)}`); }
			o.flavor = f;
			return i + 1;
		}
		case '--memory': {
			const m = optionValue(argv, i, a);
			if (m !== 'device' && m !== 'host') { throw new UsageError(`--memory needs device or host, got ${shown(m)}`); }
			o.memory = m;
			return i + 1;
		}
		case '--timeout': o.timeoutS = optionInt(optionValue(argv, i, a), a, 1, 86400); return i + 1;
		case '--preset': {
			const p = parsePreset(optionValue(argv, i, a));
			if (!p) { throw new UsageError(`--preset needs NAME=VALUE with NAME an environment variable name, got ${shown(argv[i + 1])}`); }
			o.env.push(p);
			return i + 1;
		}
		case '--host': o.host = optionValue(argv, i, a); return i + 1;
		case '--setup': o.setup = optionValue(argv, i, a); return i + 1;
		case '--ssh-config': o.sshConfig = optionValue(argv, i, a); return i + 1;
		case '--hosts': o.hostList = optionValue(argv, i, a); return i + 1;
		case '--srun': o.srun = true; return i;
		case '--srun-mpi': o.srunMpi = optionValue(argv, i, a); o.srun = true; return i + 1;
		case '--srun-arg': (o.srunArgs ??= []).push(optionValue(argv, i, a)); o.srun = true; return i + 1;
		case '--mca': {
			const k = optionValue(argv, i, a);
			if (argv[i + 2] === undefined) { throw new UsageError('--mca needs a name and a value (e.g. --mca pml ob1)'); }
			const v = argv[i + 2];
			o.mca.push([k, v]);
			return i + 2;
		}
		default: return -1;
	}
}

/**
 * Everything about where and how to launch that can be checked without launching, ssh or deploy: UsageError for
 * options that need another (--setup without --host), a hostile --host, a malformed --hosts list, a bad srun plugin,
 * MCA or environment names, MCA parameters with --flavor mpich, an empty or option-like --mpirun / --engine.
 */
export function checkLaunchOptions(o: LaunchCliOptions, np: number): void {
	if (!o.host && (o.setup != null || o.sshConfig != null)) { throw new UsageError('--setup and --ssh-config need --host'); }
	if (o.host != null) {
		const h = resolveHost([], o.host, o.setup ?? undefined);
		if ('error' in h) { throw new UsageError(`--host: ${h.error}`); }
	}
	if (o.sshConfig === '') { throw new UsageError('--ssh-config needs a file name'); }
	const mpirunProblem = checkMpirun(o.mpirun);
	if (o.mpirun === '' || mpirunProblem) { throw new UsageError(`--mpirun needs a program name or path: ${mpirunProblem ?? 'it is empty'}`); }
	if (o.engine !== null) {
		const p = checkMpirun(o.engine);
		if (o.engine === '' || p) { throw new UsageError(`--engine needs the path of the gpumpi engine: ${p ?? 'it is empty'}`); }
	}
	if (o.hostList != null) {
		try { hostListArgs(o.hostList, o.flavor ?? 'openmpi', o.srun === true); } catch (e) { throw new UsageError(`--hosts: ${(e as Error).message}`); }
	}
	if (o.srunMpi != null && !SRUN_MPI_PLUGIN.test(o.srunMpi)) { throw new UsageError(`--srun-mpi needs a plugin name like pmi2 or pmix, got ${shown(o.srunMpi)}`); }
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
