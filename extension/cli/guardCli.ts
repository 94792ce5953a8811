/**
 * `gpumpi-doctor guard [options] -- COMMAND…`: runs the user's own MPI program under gpumpi-guard
 * (core/guard/guardRunner.ts), merges the per-rank reports (core/guard/guardMerge.ts) and prints the verdict, the
 * findings with evidence and fix, and the per-peer traffic (or the gpumpi-guard-result/1 document with --json; the
 * program's own output then goes to stderr so stdout stays the JSON). Every option is checked before anything is
 * launched; the program's exit code becomes ours, and the guard's own failures have codes of their own, as timeout(1)'s
 * do (GUARD_EXIT: 124 timed out, 125 the guard failed, usage errors included, 126 not runnable, 127 not found, 128+N a
 * signal, 130 Ctrl-C).
 */
import * as path from 'node:path';
import { writeFileWhole } from '../core/fileWrite';
import { bytesText, printable } from '../core/guard/guardMerge';
import { GUARD_EXIT, guardExitCode, type GuardResult } from '../core/guard/guardResult';
import { GUARD_LIB_NAME, GUARD_MODES, launcherKind, type GuardMode } from '../core/guard/guardRunner';
import { runGuardUseCase } from '../core/guard/guardUseCase';
import { posixQuoteArgv } from '../shared/shellQuote';
import { runSubcommand, shown, UsageError, type CliIo } from './io';
import { flag, helpText, integer, oneOf, option, parseArgv, text, withHelp } from './argv';
import { checkLaunchOptions, cliLaunchTarget, launchCliOptions, LAUNCH_OPTIONS, TARGET_OPTIONS, type LaunchCliOptions } from './launchArgs';
import { renderFindingText, terminalSafe } from './textReport';

/** The options of `guard` (before the `--` that starts the user's command), in help order. */
export const GUARD_OPTIONS = {
	mode: option(oneOf(GUARD_MODES), 'report (default): observe only; warn: also one stderr line per dangerous call site; fix: also bounce calls on CUDA-IPC-imported buffers through a buffer the rank owns'),
	stage: flag('GPUMPI_GUARD_STAGE=1 on every rank: large device messages to host-staged peers go through persistent staging buffers (bounded host memory; docs/guard.md, STAGE)'),
	json: flag('print the result document (gpumpi-guard-result/1, docs/guard-schema.md); the program\'s output goes to stderr'),
	out: option(text('FILE', { empty: 'a file name' }), 'also write the result document to FILE (whole or not at all)'),
	np: option(integer(1, 4096), 'launch a COMMAND that is not a launcher with N ranks (mpirun, or srun with --srun), 1..4096'),
	'report-dir': option(text('DIR', { check: v => v.startsWith('/') ? null : `needs an absolute directory, got ${shown(v)}` }), 'make the report directory inside DIR (a file system every node sees, for ranks on several hosts; default /tmp of the launching host)'),
	'guard-lib': option(text('PATH', { check: v => v.startsWith('/') ? null : `needs an absolute path, got ${shown(v)}` }), `the guard library (default: ${GUARD_LIB_NAME} beside the engine of the detected MPI)`),
	mpirun: withHelp(LAUNCH_OPTIONS.mpirun, 'the launcher to detect the MPI from when COMMAND does not start with one (default mpirun)'),
	flavor: LAUNCH_OPTIONS.flavor,
	preset: withHelp(LAUNCH_OPTIONS.preset, 'environment for every rank, repeatable, forwarded like the guard\'s own'),
	...TARGET_OPTIONS,
	timeout: withHelp(LAUNCH_OPTIONS.timeout, 'stop the program after S seconds, 1..86400 (default 86400)'),
};

const USAGE = helpText(GUARD_OPTIONS, {
	usage: 'gpumpi-doctor guard [options] -- COMMAND [ARGS…]',
	intro: 'Runs your MPI program under gpumpi-guard (docs/guard.md) and reports what it does with GPU buffers: calls, bytes and buffer classes per peer, the dangerous calls with their call site, and the fix. COMMAND is your launch line (mpirun … ./app args, mpiexec …, srun …): the guard\'s variables are forwarded by the launcher (-x, -genv, --export=ALL,…). A COMMAND that is not a launcher runs alone (one rank), or with --np N / --srun like the other commands.',
	footer: `Exit code: the program's own when it exited (0 when it succeeded, whatever the findings), 128+N when signal N ended it; the guard keeps the codes of timeout(1) for itself: ${GUARD_EXIT.timedOut} --timeout stopped it, ${GUARD_EXIT.guardFailed} the guard failed (a usage error, no guard library, --out not written, the host lost; the reason on stderr, no result printed), ${GUARD_EXIT.cannotRun} COMMAND found but not runnable, ${GUARD_EXIT.notFound} COMMAND not found, ${GUARD_EXIT.interrupted} interrupted (Ctrl-C: the whole job is ended). A program that itself exits 124-127 is told apart by the result (--json: exitCode, signal, timedOut, error).`
});

/** Launcher options of the other commands that guard refuses: they belong in COMMAND. */
const NOT_GUARD: Record<string, string> = Object.fromEntries(['--engine', '--memory', '--from-json', '--mca'].map(o => [o, 'is not an option of guard (put launcher options in COMMAND)']));

/** What `guard` runs, from its command line. */
export interface GuardCliOptions extends LaunchCliOptions {
	mode: GuardMode; json: boolean; stage: boolean; out: string | null; np: number | null; reportDir: string | null; guardLib: string | null;
	command: string[];
}

/** `guard` argv → options, checked; UsageError otherwise (empty message: --help). Pure: nothing is run. */
export function parseGuardArgs(argv: readonly string[]): GuardCliOptions {
	const dash = argv.indexOf('--');
	const own = dash < 0 ? argv : argv.slice(0, dash);
	const { values: v } = parseArgv(GUARD_OPTIONS, own, {
		refused: NOT_GUARD,
		positionals: { max: 0, unexpected: w => `${shown(w)}: put the command after -- (gpumpi-doctor guard -- mpirun -np 2 ./app)` },
	});
	const o: GuardCliOptions = {
		...launchCliOptions(v, { memory: 'host', timeoutS: 86400 }),
		mode: v.mode ?? 'report', json: v.json === true, stage: v.stage === true, out: v.out ?? null, np: v.np ?? null,
		reportDir: v['report-dir'] ?? null, guardLib: v['guard-lib'] ?? null, command: [],
	};
	if (dash < 0 || dash === argv.length - 1) { throw new UsageError('no command to run: give it after -- (gpumpi-doctor guard -- mpirun -np 2 ./app args)'); }
	o.command = argv.slice(dash + 1);
	if (o.command[0] === '') { throw new UsageError('the command is empty'); }
	// eslint-disable-next-line no-control-regex
	if (o.command.some(a => a.includes('\u0000'))) { throw new UsageError('the command has a NUL character'); }
	const kind = launcherKind(o.command);
	if (kind && (o.np !== null || o.srun)) { throw new UsageError(`${shown(o.command[0])} is a launcher: give the ranks in it, not with --np / --srun`); }
	if (o.hostList != null && kind) { throw new UsageError('--hosts applies to a COMMAND that is not a launcher; give the hosts in the launcher line'); }
	if (kind === 'mpirun' && o.mpirun === 'mpirun') { o.mpirun = o.command[0]; }
	if (o.srun && o.np === null) { throw new UsageError('--srun needs --np N'); }
	checkLaunchOptions(o, o.np ?? 1);
	return o;
}

/** The result as text: the verdict first, then the findings with evidence and fix, then the per-peer table. */
export function renderGuardText(r: GuardResult): string {
	const out: string[] = [`VERDICT  ${terminalSafe(r.verdict)}`, ''];
	out.push(`  command   ${terminalSafe(posixQuoteArgv(r.argv))}`);
	out.push(`  where     ${terminalSafe(r.where)}, ${r.flavor}, ${r.durationMs} ms`);
	const lib = r.reports[0]?.mpi.library;
	if (lib) { out.push(`  MPI       ${terminalSafe(printable(lib.split(',')[0]))}, pml ${terminalSafe(r.reports[0].mpi.pml ?? 'unknown')}, CUDA-aware ${r.reports[0].mpi.cudaAware}`); }
	for (const n of r.notes) { out.push(`  note      ${terminalSafe(n)}`); }
	out.push('', `FINDINGS (${(['error', 'warning', 'info'] as const).map(s => `${r.findings.filter(f => f.severity === s).length} ${s}`).join(', ')})`);
	for (const f of r.findings) { out.push(renderFindingText(f), ''); }
	out.push('TRAFFIC (point-to-point, as the sender saw it)');
	if (r.traffic.length === 0) { out.push('  none'); }
	else {
		out.push(`  ${'from→to'.padEnd(10)} ${'messages'.padStart(9)} ${'bytes'.padStart(10)} ${'largest'.padStart(10)}  path          buffers`);
		for (const t of r.traffic.slice(0, 200)) {
			const cls = Object.entries(t.bufferClasses).filter(([, n]) => n > 0).map(([c, n]) => `${c} ${n}`).join(', ');
			out.push(`  ${`${t.a}→${t.b}`.padEnd(10)} ${String(t.calls).padStart(9)} ${bytesText(t.bytes).padStart(10)} ${bytesText(t.largestMessage).padStart(10)}  ${terminalSafe(t.path).padEnd(13)} ${terminalSafe(cls)}`);
		}
		if (r.traffic.length > 200) { out.push(`  … ${r.traffic.length - 200} more pairs (--json has them all)`); }
	}
	if (r.calls.length > 0) {
		out.push('', 'CALLS (all ranks)');
		for (const c of r.calls) { out.push(`  ${terminalSafe(c.name).padEnd(22)} ${String(c.count).padStart(9)}  ${bytesText(c.bytes).padStart(10)}${c.timeInMpiNs !== null ? `  ${(c.timeInMpiNs / 1e6).toFixed(3)} ms in MPI` : ''}`); }
	}
	return out.join('\n') + '\n';
}

/** `gpumpi-doctor guard …`. */
export async function guardMain(args: string[], io: CliIo): Promise<number> {
	return runSubcommand('guard', USAGE, io, async () => {
		const o = parseGuardArgs(args);
		const progress = (l: string): void => io.stderr(`gpumpi-doctor guard: ${l}\n`);
		const target = await cliLaunchTarget({ ...o, engine: o.guardLib }, o.np ?? 1, io.cwd, progress);
		for (const n of target.notes) { progress(n); }
		if (!target.ok) { progress(target.error); return GUARD_EXIT.guardFailed; }
		let result: GuardResult;
		try {
			const run = await runGuardUseCase({
				target, command: o.command, np: o.np, mode: o.mode, stage: o.stage, env: o.env, guardLib: o.guardLib, reportParent: o.reportDir,
				timeoutMs: o.timeoutS * 1000, signal: io.signal, onProgress: progress, guardOptions: args.slice(0, Math.max(0, args.indexOf('--'))),
				onOutput: (_s, line) => { if (o.json || _s === 'stderr') { io.stderr(`${line}\n`); } else { io.stdout(`${line}\n`); } },
			});
			if (!run.ok && run.refused) { throw new UsageError(run.error); }
			if (!run.ok) { progress(run.error); return GUARD_EXIT.guardFailed; }
			result = run.result;
			if (result.exitCode === null && result.error && !io.signal.aborted) { progress(`${posixQuoteArgv(result.argv)}: ${result.error}`); }
		} finally {
			await target.close();
		}
		// Interrupted: the ranks were killed before they could report; nothing half is printed or written.
		if (io.signal.aborted) { progress('interrupted; the program was stopped'); return GUARD_EXIT.interrupted; }
		const doc = JSON.stringify(result, null, 1) + '\n';
		if (o.out) {
			try { writeFileWhole(path.resolve(io.cwd, o.out), doc); } catch (e) {
				progress(`cannot write ${o.out}: ${e instanceof Error ? e.message : String(e)} (the program's exit code was ${guardExitCode(result)})`);
				return GUARD_EXIT.guardFailed;
			}
		}
		if (!o.json) { io.stdout('\n'); }
		io.stdout(o.json ? doc : renderGuardText(result));
		return guardExitCode(result);
	}, { usage: GUARD_EXIT.guardFailed, failed: GUARD_EXIT.guardFailed });
}
