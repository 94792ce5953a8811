/**
 * "GPU-MPI: Run My Program With Guard…" (gpumpiDoctor.runGuard): the host (Hosts picker, reachability checked first),
 * then one multi-step input: program (the recent ones, a file picker on this machine, or typed: absolute, relative to
 * the workspace folder, or a command name on PATH such as python3; core/guard/guardProgram.ts), arguments
 * (split like a shell, nothing expanded), ranks, mode. The program runs under gpumpi-guard through the same use case as
 * `gpumpi-doctor guard --np N -- program args` (core/guard/guardUseCase.ts), in a cancellable progress notification
 * whose cancel ends the whole job; its output goes to the log channel. The findings go to the guard panel (its own
 * tab: never the host's inspection, status bar or Problems), the program's traffic to the map panel. An options object `{ program, args?, np?, mode?, stage?, host? }` skips the questions.
 * stage: GPUMPI_GUARD_STAGE=1 on every rank (`gpumpi-doctor guard --stage`).
 */
import { activeRuns } from '../core/activeRuns';
import * as vscode from 'vscode';
import type { Logger } from '../core/logger';
import type { GuardMode } from '../core/guard/guardRunner';
import type { GuardResult } from '../core/guard/guardResult';
import type { Report } from '../shared/report';
import { core } from './lazyCore';
import { LOCAL_HOST_KEY } from './inspectionService';
import { pickHost } from './hostsView';
import { checkReachable, hostOfArgument, openLaunchTarget } from './launchHost';
import { MultiStepInput, type Step } from './multiStepInput';
import { readSettings } from './settings';
import { programLabel, recentPrograms, resolveProgram, withRecent } from '../core/guard/guardProgram';

const STATE_KEY = 'gpumpiDoctor.guard.last';
const RECENT_KEY = 'gpumpiDoctor.guard.recent';
const MODES: readonly GuardMode[] = ['report', 'warn', 'fix'];
/** Output of the program kept for the panel's raw output (the log channel has all of it). */
const KEEP_OUTPUT = 256 * 1024;

/** What the command runs. */
export interface GuardChoices { program: string; args: string; np: number; mode: GuardMode; stage: boolean }

/** Check an options object (tests, other commands); the problem as text otherwise. */
export function validateGuardChoices(v: unknown, splitArgs: (line: string) => string[] | string): GuardChoices | string {
	if (typeof v !== 'object' || v === null) { return 'options must be an object'; }
	const o = v as Record<string, unknown>;
	if (typeof o.program !== 'string' || o.program.trim() === '' || o.program.includes('\u0000')) { return 'program must be a path'; }
	const args = o.args === undefined ? '' : o.args;
	if (typeof args !== 'string') { return 'args must be a string'; }
	const split = splitArgs(args);
	if (typeof split === 'string') { return `args: ${split}`; }
	const np = o.np === undefined ? 2 : o.np;
	if (typeof np !== 'number' || !Number.isInteger(np) || np < 1 || np > 4096) { return 'np must be an integer 1..4096'; }
	const mode = o.mode === undefined ? 'report' : o.mode;
	if (typeof mode !== 'string' || !(MODES as readonly string[]).includes(mode)) { return `mode must be one of ${MODES.join(', ')}`; }
	const stage = o.stage === undefined ? false : o.stage;
	if (typeof stage !== 'boolean') { return 'stage must be true or false'; }
	return { program: o.program, args, np, mode: mode as GuardMode, stage };
}

/** The first workspace folder on this machine (relative programs and the run's working directory), if any. */
function workspaceDir(): string | null {
	const f = vscode.workspace.workspaceFolders?.find(w => w.uri.scheme === 'file');
	return f ? f.uri.fsPath : null;
}

async function pickChoices(last: GuardChoices | undefined, recent: readonly string[], local: boolean): Promise<GuardChoices | undefined> {
	const title = vscode.l10n.t('Run my program with the guard');
	const st: GuardChoices = last ? { ...last } : { program: '', args: '', np: 2, mode: 'report', stage: false };
	const BROWSE = '\u0000browse', TYPE = '\u0000type';
	const ws = local ? workspaceDir() : null;
	const ctx = { local, workspaceDir: ws };
	const program: Step<GuardChoices> = async (input, s) => {
		const known = [...new Set([...(s.program ? [s.program] : []), ...recent])];
		const items = [
			...known.map((p, i) => ({ label: programLabel(p, ws), description: i === 0 && p === s.program ? vscode.l10n.t('last used') : vscode.l10n.t('recent'), value: p })),
			...(local ? [{ label: vscode.l10n.t('Browse…'), description: vscode.l10n.t('pick the MPI program on this machine'), value: BROWSE }] : []),
			{ label: vscode.l10n.t('Type a path or a command…'), description: local ? vscode.l10n.t('absolute, relative to the workspace folder, or a name on PATH (python3)') : vscode.l10n.t('an absolute path on the picked host, or a name on its PATH'), value: TYPE },
		];
		const [picked] = await input.pick({ title: `${title}: ${vscode.l10n.t('program')}`, placeholder: vscode.l10n.t('The MPI program to run (unchanged: the guard is preloaded)'), items });
		if (picked.value === TYPE) { return programPath; }
		if (picked.value === BROWSE) {
			const uri = await vscode.window.showOpenDialog({ canSelectMany: false, canSelectFolders: false, openLabel: vscode.l10n.t('Run with guard'), title: vscode.l10n.t('The MPI program'), ...(ws ? { defaultUri: vscode.Uri.file(ws) } : {}) });
			if (!uri?.[0]) { return program; }
			s.program = uri[0].fsPath;
		} else {
			s.program = picked.value;
		}
		return args;
	};
	const programPath: Step<GuardChoices> = async (input, s) => {
		const typed = await input.box({
			title: `${title}: ${vscode.l10n.t('program')}`,
			prompt: ws ? vscode.l10n.t('A path (absolute, or relative to {0}) or a command name on PATH; run without a shell', ws) : vscode.l10n.t('An absolute path or a command name on PATH; run without a shell'),
			value: s.program ? programLabel(s.program, ws) : '',
			validate: v => { const r = resolveProgram(v, ctx); return 'error' in r ? r.error : null; },
		});
		const r = resolveProgram(typed, ctx);
		if ('error' in r) { return programPath; }
		s.program = r.program;
		return args;
	};
	const args: Step<GuardChoices> = async (input, s) => {
		s.args = await input.box({ title: `${title}: ${vscode.l10n.t('arguments')}`, prompt: vscode.l10n.t('Arguments, split like a shell (quotes and \\ work; nothing is expanded)'), value: s.args, validate: v => { const r = core().splitArgLine(v); return typeof r === 'string' ? r : null; } });
		return ranks;
	};
	const ranks: Step<GuardChoices> = async (input, s) => {
		const v = await input.box({ title: `${title}: ${vscode.l10n.t('ranks')}`, prompt: vscode.l10n.t('Number of MPI ranks (mpirun -np)'), value: String(s.np), validate: x => (/^\d{1,4}$/.test(x) && Number(x) >= 1 && Number(x) <= 4096 ? null : vscode.l10n.t('an integer 1..4096')) });
		s.np = Number(v);
		return mode;
	};
	const mode: Step<GuardChoices> = async (input, s) => {
		const items = [
			{ label: 'report', description: vscode.l10n.t('observe only: calls, bytes, buffer classes, dangerous calls with their call site') },
			{ label: 'warn', description: vscode.l10n.t('also print each dangerous call site once (in the output)') },
			{ label: 'fix', description: vscode.l10n.t('also bounce calls on CUDA-IPC-imported buffers through a buffer the rank owns') },
		];
		const [picked] = await input.pick({ title: `${title}: ${vscode.l10n.t('mode')}`, items, selected: items.filter(i => i.label === s.mode) });
		s.mode = picked.label as GuardMode;
		return stage;
	};
	const stage: Step<GuardChoices> = async (input, s) => {
		const items = [
			{ label: vscode.l10n.t('MPI as it is'), description: vscode.l10n.t('every message goes through MPI unchanged'), value: false },
			{ label: vscode.l10n.t('STAGE large device messages'), description: vscode.l10n.t('to host-staged peers through persistent staging buffers: bounded host memory (GPUMPI_GUARD_STAGE=1)'), value: true },
		];
		const [picked] = await input.pick({ title: `${title}: ${vscode.l10n.t('staging')}`, items, selected: items.filter(i => i.value === s.stage) });
		s.stage = picked.value;
		return undefined;
	};
	if (!await MultiStepInput.run(program, st, 5)) { return undefined; }
	return st;
}

/** The programs run with the guard lately in this workspace, newest first (the picker's and the task type's list). */
export function recentGuardPrograms(context: vscode.ExtensionContext): string[] {
	return recentPrograms(context.workspaceState.get<unknown>(RECENT_KEY));
}

/** The command body. Resolves to the result shown, or undefined when cancelled. */
export async function runGuardCommand(context: vscode.ExtensionContext, log: Logger, argument: unknown,
	show: { report: (r: Report, rerun: () => void) => void; map: (r: GuardResult) => void }): Promise<GuardResult | undefined> {
	if (!vscode.workspace.isTrusted) { throw new Error(vscode.l10n.t('GPU-MPI Doctor runs programs on this machine and is disabled in untrusted workspaces.')); }
	const { hostKey: argHost, rest } = hostOfArgument(argument);
	const asks = rest === undefined || rest === null || rest instanceof vscode.Uri;
	const title = vscode.l10n.t('Run my program with the guard');
	const hostKey = argHost ?? (asks ? await pickHost(title) : LOCAL_HOST_KEY);
	if (!hostKey) { return undefined; }
	let choices: GuardChoices | undefined;
	if (asks) {
		await checkReachable(hostKey, log);
		const stored = context.workspaceState.get<unknown>(STATE_KEY);
		const last = stored === undefined ? undefined : validateGuardChoices(stored, l => core().splitArgLine(l));
		choices = await pickChoices(typeof last === 'string' ? undefined : last, recentGuardPrograms(context), hostKey === LOCAL_HOST_KEY);
	} else {
		const c = validateGuardChoices(rest, l => core().splitArgLine(l));
		if (typeof c === 'string') { throw new Error(vscode.l10n.t('invalid guard options: {0}', c)); }
		choices = c;
	}
	if (!choices) { return undefined; }
	const local = hostKey === LOCAL_HOST_KEY;
	const ws = local ? workspaceDir() : null;
	const resolved = resolveProgram(choices.program, { local, workspaceDir: ws });
	if ('error' in resolved) { throw new Error(vscode.l10n.t('program {0}: {1}', choices.program, resolved.error)); }
	const c: GuardChoices = { ...choices, program: resolved.program };
	await context.workspaceState.update(STATE_KEY, c);
	await context.workspaceState.update(RECENT_KEY, withRecent(context.workspaceState.get<unknown>(RECENT_KEY), c.program));
	const argv = core().splitArgLine(c.args);
	if (typeof argv === 'string') { throw new Error(argv); }
	const { settings } = readSettings();
	const where = hostKey === LOCAL_HOST_KEY ? vscode.l10n.t('this host') : hostKey;
	return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('GPU-MPI Doctor: {0} under the guard on {1}', c.program.split('/').pop() ?? c.program, where), cancellable: true }, async (progress, token) => {
		const abort = activeRuns.begin('guard');
		const sub = token.onCancellationRequested(() => { log.info('guard run cancelled by the user; ending the job and its ranks'); abort.abort(); });
		const onProgress = (line: string): void => { progress.report({ message: line }); log.info(`  ${line}`); };
		const target = await openLaunchTarget(hostKey, c.np, '', log, onProgress, abort.signal).catch((e: unknown) => { sub.dispose(); activeRuns.end(abort); throw e; });
		let stdout = '';
		let stderr = '';
		try {
			const command = [c.program, ...argv];
			progress.report({ message: vscode.l10n.t('running {0} ranks ({1} mode)…', String(c.np), c.mode) });
			const run = await core().runGuardUseCase({
				target, command, np: c.np, mode: c.mode, stage: c.stage, env: [], guardLib: null, reportParent: null,
				timeoutMs: Math.max(600, settings.timeoutSeconds) * 1000, signal: abort.signal, ...(ws ? { cwd: ws } : {}), onProgress,
				guardOptions: ['--np', String(c.np), ...(c.stage ? ['--stage'] : []), ...(hostKey === LOCAL_HOST_KEY ? [] : ['--host', hostKey])],
				onOutput: (s, line) => {
					log.info(`  [${s}] ${line}`);
					if (s === 'stdout' && stdout.length < KEEP_OUTPUT) { stdout += `${line}\n`; } else if (s === 'stderr' && stderr.length < KEEP_OUTPUT) { stderr += `${line}\n`; }
				},
			});
			if (abort.signal.aborted) { return undefined; }
			if (!run.ok) { throw new Error(run.error); }
			const result = run.result;
			log.info(result.verdict);
			// Its own tab: a result about this program never replaces the host's inspection (README, "In VS Code": one truth per host).
			const again = { program: c.program, args: c.args, np: c.np, mode: c.mode, stage: c.stage, ...(hostKey === LOCAL_HOST_KEY ? {} : { host: hostKey }) };
			show.report(core().guardInspectionReport(result, { id: hostKey, label: target.label, kind: hostKey === LOCAL_HOST_KEY ? 'local' : 'ssh' }, { stdout, stderr }),
				() => { void vscode.commands.executeCommand('gpumpiDoctor.runGuard', again); });
			if (result.map) { show.map(result); }
			return result;
		} finally {
			sub.dispose();
			activeRuns.end(abort);
			await target.close();
		}
	});
}
