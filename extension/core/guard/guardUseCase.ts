/**
 * The guard use case, whole: the user's program run under gpumpi-guard on a resolved launch target (this machine, an
 * ssh host, srun), its rank reports merged into findings and traffic, and the result document. `gpumpi-doctor guard`
 * (cli/guardCli.ts) and "Run My Program With Guard…" (vscode/guardCommand.ts) both call it; they only gather the
 * options and show the result. Steps: the guard library (beside the target's engine unless given; on an ssh host
 * whose engine this product deployed, built there first when missing), the launch check (what the launcher would
 * refuse, before anything runs), guardRunner.ts, guardMerge.ts, guardResult.ts.
 */
import * as path from 'node:path';
import { version as toolVersion } from '../../../package.json';
import type { OpenLaunchTarget } from '../hosts/launchTarget';
import { buildLaunchArgv } from '../launch/launchArgv';
import { withJobName } from '../launch/launchSpec';
import type { StreamName } from '../proc';
import { mergeGuardReports } from './guardMerge';
import { guardResult, type GuardResult } from './guardResult';
import { GUARD_LIB_NAME, launcherKind, runGuarded, type GuardMode } from './guardRunner';

/** One guarded run. */
export interface GuardUseCaseRequest {
	/** Where: a resolved target (hosts/launchTarget.ts). Its engine locates the guard library; its spec launches a program. */
	target: Pick<OpenLaunchTarget, 'host' | 'label' | 'engine' | 'engineDeployed' | 'flavor' | 'spec'>;
	/** The user's command: a launcher line (`mpirun … ./app args`, `srun …`) as it is, or a program and its arguments. */
	command: string[];
	/**
	 * Ranks for a command that is not a launcher: launched with the target's launcher (mpirun, or srun when the target
	 * launches with srun, then 1 when null); null and no srun: the program runs alone, as one process.
	 */
	np: number | null;
	mode: GuardMode;
	/** GPUMPI_GUARD_STAGE=1 on every rank (unless `env` sets it). */
	stage: boolean;
	/** Environment for every rank, forwarded like the guard's own variables (--preset). */
	env: Array<[string, string]>;
	/** The guard library on the target's host; null: libgpumpi_guard.so beside its engine. */
	guardLib: string | null;
	/** Parent of the report directory on the host (a file system every node sees); null: its /tmp. */
	reportParent: string | null;
	timeoutMs: number;
	signal?: AbortSignal;
	/** Working directory of the command on the host. */
	cwd?: string;
	/** The program's output, line by line, as it comes. */
	onOutput?: (stream: StreamName, line: string) => void;
	/** What the use case does besides the run (building the guard library), one line each. */
	onProgress?: (line: string) => void;
	/** The `gpumpi-doctor guard` options that reproduce this run, kept in the fix-mode command of the findings. */
	guardOptions: string[];
}

/**
 * The result document, or why there is none. `refused`: the launcher would refuse this launch (its options, known
 * only once the flavour is), so nothing was launched: the CLI's usage error.
 */
export type GuardUseCaseOutcome =
	| { ok: true; result: GuardResult }
	| { ok: false; refused: boolean; error: string };

/** Run the user's program under the guard on the target and assemble the result. Throws only for what cannot be launched at all (guardRunner.ts). */
export async function runGuardUseCase(req: GuardUseCaseRequest): Promise<GuardUseCaseOutcome> {
	const { target } = req;
	const progress = (line: string): void => { try { req.onProgress?.(line); } catch { /* a progress callback never stops the run */ } };
	const guardLib = req.guardLib ?? path.posix.join(path.posix.dirname(target.engine), GUARD_LIB_NAME);
	const libDir = path.posix.dirname(guardLib);
	let listing = await target.host.listDir(libDir);
	if (!listing?.includes(path.posix.basename(guardLib)) && target.engineDeployed && req.guardLib === null) {
		// The engine deployed on an ssh host is built for gpumpi_cli only: build the guard in the same build folder.
		progress(`building ${GUARD_LIB_NAME} on ${target.label} (cmake --build ${libDir} --target gpumpi_guard)`);
		const b = await target.host.run(['cmake', '--build', libDir, '--target', 'gpumpi_guard', '-j', '2'], { timeoutMs: 600_000, signal: req.signal });
		if (b.exitCode !== 0) { progress(`building the guard failed: ${b.error ?? (b.stderr.trim().split('\n').slice(-5).join(' | ') || `exit ${b.exitCode}`)}`); }
		listing = await target.host.listDir(libDir);
	}
	if (!listing?.includes(path.posix.basename(guardLib))) {
		return { ok: false, refused: false, error: `no guard library at ${guardLib} on ${target.label} (build it: node scripts/ensure.mjs --all-mpis, or give --guard-lib)` };
	}
	const spec = !launcherKind(req.command) && (req.np !== null || target.spec.srun) ? { ...target.spec, np: req.np ?? 1 } : null;
	// Known only now (the flavour): what the launcher refuses, still before anything is launched.
	if (spec) {
		try { buildLaunchArgv(withJobName(spec), req.command); } catch (e) { return { ok: false, refused: true, error: (e as Error).message }; }
	}
	const stage = req.stage && !req.env.some(([k]) => k === 'GPUMPI_GUARD_STAGE');
	const outcome = await runGuarded({
		command: req.command, mode: req.mode, host: target.host, flavor: target.flavor, guardLib, spec,
		env: stage ? [...req.env, ['GPUMPI_GUARD_STAGE', '1']] : req.env,
		reportParent: req.reportParent, timeoutMs: req.timeoutMs, signal: req.signal, onOutput: req.onOutput,
		...(req.cwd !== undefined ? { cwd: req.cwd } : {}),
	});
	const merge = mergeGuardReports({
		files: outcome.files, expectedRanks: outcome.expectedRanks, exitCode: outcome.result.exitCode, signal: outcome.result.signal,
		userCommand: req.command, where: target.label, mode: req.mode, guardOptions: req.guardOptions, launchFailure: outcome.launchFailure,
	});
	return { ok: true, result: guardResult({ version: toolVersion, where: target.label, mode: req.mode, flavor: target.flavor, guardLib, command: req.command, outcome, merge }) };
}
