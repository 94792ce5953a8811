/**
 * The `gpumpi-guard` task type (package.json taskDefinitions; vscode/guardTask.ts runs it): a definition in tasks.json
 * becomes the CLI's `gpumpi-doctor guard …` argv, so a task runs exactly what a terminal user runs.
 */
import { launcherKind } from './guardRunner';

/** A `gpumpi-guard` task (tasks.json): the program and its arguments as given, run through the CLI. */
export interface GuardTaskSpec {
	program: string;
	args?: unknown;
	np?: unknown;
	mode?: unknown;
	stage?: unknown;
	mpirun?: unknown;
}

/**
 * The CLI arguments of a `gpumpi-guard` task (after the CLI script): `guard [--np N] [--mode M] [--stage]
 * [--mpirun P] -- program args…`; or the problem with the definition, as text. A program that is itself a launcher
 * (mpirun, srun, …) runs as given, without --np. Nothing goes through a shell: every value is one argv word.
 */
export function guardTaskArgv(def: GuardTaskSpec): string[] | string {
	if (typeof def.program !== 'string' || def.program.trim() === '' || def.program.includes('\u0000')) { return '"program" must be a path or a command name'; }
	const args = def.args === undefined ? [] : def.args;
	if (!Array.isArray(args) || !args.every(a => typeof a === 'string' && !a.includes('\u0000'))) { return '"args" must be an array of strings'; }
	const mode = def.mode === undefined ? 'report' : def.mode;
	if (mode !== 'report' && mode !== 'warn' && mode !== 'fix') { return '"mode" must be report, warn or fix'; }
	if (def.stage !== undefined && typeof def.stage !== 'boolean') { return '"stage" must be true or false'; }
	if (def.mpirun !== undefined && (typeof def.mpirun !== 'string' || def.mpirun === '' || def.mpirun.includes('\u0000'))) { return '"mpirun" must be a path or a command name'; }
	const launcher = launcherKind([def.program]) !== null;
	const np = def.np === undefined ? (launcher ? null : 2) : def.np;
	if (np !== null && (typeof np !== 'number' || !Number.isInteger(np) || np < 1 || np > 4096)) { return '"np" must be an integer 1..4096'; }
	if (launcher && def.np !== undefined) { return '"np" is for a program that is not a launcher: give -np in "args" of the launcher instead'; }
	return ['guard', ...(np !== null ? ['--np', String(np)] : []), '--mode', mode, ...(def.stage ? ['--stage'] : []),
		...(typeof def.mpirun === 'string' ? ['--mpirun', def.mpirun] : []), '--', def.program, ...args as string[]];
}
