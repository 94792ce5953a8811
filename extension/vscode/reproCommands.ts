/**
 * The reproducer commands: "Run IPC-Pointer Reproducer", "Run Fallback Reproducer" (QuickPicks/InputBoxes, or a
 * validated options object as command argument; a cancellable progress notification whose cancel aborts the
 * runner, which kills the whole mpirun process group) and "Open Reproducer Result…" (a saved device result or a
 * saved --json report; takes a Uri argument from tests and the explorer context menu). Last choices live in
 * workspaceState.
 */
import { activeRuns } from '../core/activeRuns';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { errorText, type Logger } from '../core/logger';
import { registerCommand, type CommandId } from './commands';
import {
	checkCustomPreset, checkSize, checkSizes, checkUcxSetting, configsFromChoices, DEFAULT_CHOICES, MAX_TRY_UCX, REPRO_PRESETS,
	UCX_STAGING_TRY_INFO, ucxSettingsOf, validateChoices, type ReproChoices,
} from '../core/repro/reproChoices';
import { checkMpirun } from '../core/launch/launchSpec';
import { core } from './lazyCore';
import type { Report } from '../shared/report';
import type { ReproPanelData } from '../shared/reproProtocol';
import { IPC_VARIANTS, FALLBACK_MODES } from '../shared/reproSchema';
import { parseSize } from '../shared/sizeText';
import { LOCAL_HOST_KEY } from './inspectionService';
import { pickHost } from './hostsView';
import { checkReachable, hostOfArgument, openLaunchTarget, type OpenTarget } from './launchHost';
import { MultiStepInput, type Step } from './multiStepInput';
import { ReproPanel } from './reproPanel';
import { readReproTrials, readReproTryUcx, readSettings } from './settings';
import { DiffTexts } from './diffTexts';
import { askSavePath, writeResult } from './saveFile';

const STATE_KEY = 'gpumpiDoctor.repro.lastChoices';

/** The last ipc and fallback results of each host in this window, shown together. */
const lastByHost = new Map<string, { ipc: ReproPanelData['ipc']; fallback: ReproPanelData['fallback']; ipcSource: string; fallbackSource: string }>();

/** Register the three commands. */
export function registerReproCommands(context: vscode.ExtensionContext, log: Logger, inspectReport: (hostKey: string) => Report | undefined, showLog: () => void): vscode.Disposable {
	const panel = (): ReproPanel => ReproPanel.show(context.extensionUri, log.child('panel'), inspectReport);
	const wrap = (id: CommandId, fn: (arg: unknown) => Promise<unknown>): vscode.Disposable => registerCommand(id, (arg?: unknown) => fn(arg), log, showLog);
	const texts = new DiffTexts(REPRO_COMPARE_SCHEME, REPRO_COMPARE_MAX);
	return vscode.Disposable.from(
		wrap('gpumpiDoctor.reproIpc', arg => runRepro(context, log, panel, 'ipc', arg)),
		wrap('gpumpiDoctor.reproFallback', arg => runRepro(context, log, panel, 'fallback', arg)),
		wrap('gpumpiDoctor.openReproResult', arg => openResult(log, panel, arg)),
		wrap('gpumpiDoctor.saveReproResult', arg => saveResult(log, arg)),
		registerCommand('gpumpiDoctor.compareReproResults', (...args: unknown[]) => compareResults(log, texts, args), log, showLog),
		texts,
		{ dispose: () => ReproPanel.current?.dispose() },
	);
}

/** "Save…" of the reproducer panel: the shown results as one JSON file (an absolute path argument skips the dialog). */
async function saveResult(log: Logger, arg: unknown): Promise<string | undefined> {
	const p = ReproPanel.current;
	if (!p) { throw new Error(vscode.l10n.t('No reproducer results to save yet.')); }
	const text = p.resultsJson();
	const file = typeof arg === 'string' && arg.startsWith('/') ? arg : await askSavePath({
		name: `gpumpi-repro-${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}.json`,
		title: vscode.l10n.t('Save the reproducer results'), filters: { JSON: ['json'] },
	});
	if (!file) { return undefined; }
	writeResult(file, text);
	log.info(`saved the reproducer results to ${file}`);
	return file;
}

/** Ask for a reproducer result file (a repro.json device result, a saved --json report or a panel's Save…). */
async function pickResultFile(title: string): Promise<vscode.Uri | undefined> {
	const picked = await vscode.window.showOpenDialog({
		canSelectMany: false, openLabel: vscode.l10n.t('Open Result'),
		filters: { [vscode.l10n.t('Reproducer results')]: ['json'] }, title,
	});
	return picked?.[0];
}

/** A reproducer result file read and checked; an Error naming the file otherwise. */
async function loadResultFile(uri: vscode.Uri): Promise<{ data: ReproPanelData; outputs: ReturnType<ReturnType<typeof core>['loadReproText']>['outputs'] }> {
	const bytes = await vscode.workspace.fs.readFile(uri);
	if (bytes.byteLength > 256 * 1024 * 1024) { throw new Error(vscode.l10n.t('{0} is larger than 256 MiB', uri.fsPath)); }
	let loaded;
	try {
		loaded = core().loadReproText(new TextDecoder('utf-8').decode(bytes));
	} catch (e) {
		throw new Error(vscode.l10n.t('cannot read {0}: {1}', uri.fsPath, errorText(e)));
	}
	return {
		data: { ipc: loaded.ipc, fallback: loaded.fallback, source: `${path.basename(uri.fsPath)} (${loaded.kind === 'device-result' ? 'saved device result' : 'saved report'})` },
		outputs: loaded.outputs,
	};
}

function uriOfArg(arg: unknown): vscode.Uri | undefined {
	if (arg instanceof vscode.Uri) { return arg; }
	if (typeof arg === 'string' && arg.length > 0) { return vscode.Uri.file(arg); }
	return undefined;
}

async function openResult(log: Logger, panel: () => ReproPanel, arg: unknown): Promise<ReproPanelData | undefined> {
	const uri = uriOfArg(arg) ?? await pickResultFile(vscode.l10n.t('Open a repro.json device result or a saved gpumpi-doctor repro --json report'));
	if (!uri) { return undefined; }
	const { data, outputs } = await loadResultFile(uri);
	log.info(`opened ${uri.fsPath}: ${data.ipc?.variants.length ?? 0} ipc run(s), ${data.fallback.length} fallback configuration(s)`);
	panel().setResults(data, outputs);
	return data;
}

/** The scheme of the compared reproducer texts. */
const REPRO_COMPARE_SCHEME = 'gpumpi-doctor-repro-compare';
/** Compared texts kept (two per comparison); the oldest go first. */
const REPRO_COMPARE_MAX = 20;
let compareCount = 0;

/**
 * "Compare Reproducer Results…": the results the panel shows now (or a saved file) against a saved file, in the diff
 * editor, each as the CLI's summary (core reproComparableText). `args` [a, b] (paths or Uris) skip the dialogs.
 * Resolves to the two compared URIs.
 */
async function compareResults(log: Logger, texts: DiffTexts, args: unknown[]): Promise<[vscode.Uri, vscode.Uri] | undefined> {
	let left: ReproPanelData | undefined;
	let right: ReproPanelData | undefined;
	const [a, b] = [uriOfArg(args[0]), uriOfArg(args[1])];
	if (a && b) {
		left = (await loadResultFile(a)).data;
		right = (await loadResultFile(b)).data;
	} else {
		const shown = ReproPanel.current?.data() ?? null;
		const SHOWN = vscode.l10n.t('The results shown now'), FILE = vscode.l10n.t('A saved result file…');
		const first = shown ? await vscode.window.showQuickPick([
			{ label: SHOWN, description: shown.source ?? '' }, { label: FILE },
		], { title: vscode.l10n.t('Compare reproducer results: the first'), ignoreFocusOut: true }) : { label: FILE };
		if (!first) { return undefined; }
		if (first.label === SHOWN && shown) { left = shown; } else {
			const u = await pickResultFile(vscode.l10n.t('The first reproducer result'));
			if (!u) { return undefined; }
			left = (await loadResultFile(u)).data;
		}
		const u2 = await pickResultFile(vscode.l10n.t('The reproducer result to compare it with'));
		if (!u2) { return undefined; }
		right = (await loadResultFile(u2)).data;
	}
	const n = ++compareCount;
	const uriOf = (d: ReproPanelData, side: string): vscode.Uri => texts.put(`/${(d.source ?? 'results').replace(/[\\/]/g, '_')}.txt`, `side=${side}&n=${n}`, core().reproComparableText(d));
	log.info(`comparing reproducer results: ${left.source ?? '?'} ↔ ${right.source ?? '?'}`);
	return texts.show(uriOf(left, 'left'), uriOf(right, 'right'), vscode.l10n.t('GPU-MPI reproducer: {0} ↔ {1}', left.source ?? '?', right.source ?? '?'));
}

/** workspaceState: the launcher last used per host key ({"<this machine>": "mpirun.mpich", "lab-a": ""}). */
const MPIRUN_STATE_KEY = 'gpumpiDoctor.repro.lastMpirunByHost';

/**
 * The last choices, for `hostKey`: the launcher is the one last used on THAT host; never seen: "" (this machine: the
 * gpumpiDoctor.mpirunPath setting or PATH; a configured host: its own `mpirun` entry), so a launcher picked for one
 * machine never overrides another host's configuration.
 */
function lastChoices(context: vscode.ExtensionContext, log: Logger, hostKey: string): ReproChoices {
	const stored = context.workspaceState.get<unknown>(STATE_KEY);
	let c: ReproChoices = DEFAULT_CHOICES;
	if (stored !== undefined) {
		const v = validateChoices(stored);
		if (typeof v === 'string') { log.warn(`ignored stored reproducer choices: ${v}`); } else { c = v; }
	}
	const byHost = context.workspaceState.get<unknown>(MPIRUN_STATE_KEY);
	const mine = typeof byHost === 'object' && byHost !== null ? (byHost as Record<string, unknown>)[hostKey] : undefined;
	if (typeof mine === 'string' && checkMpirun(mine) === null) { return { ...c, mpirun: mine }; }
	// Choices stored before launchers were kept per host were made on this machine.
	return hostKey === LOCAL_HOST_KEY && byHost === undefined ? c : { ...c, mpirun: '' };
}

async function rememberChoices(context: vscode.ExtensionContext, hostKey: string, choices: ReproChoices): Promise<void> {
	await context.workspaceState.update(STATE_KEY, choices);
	const byHost = context.workspaceState.get<unknown>(MPIRUN_STATE_KEY);
	const map: Record<string, string> = {};
	if (typeof byHost === 'object' && byHost !== null) {
		for (const [k, v] of Object.entries(byHost as Record<string, unknown>)) { if (typeof v === 'string') { map[k] = v; } }
	}
	map[hostKey] = choices.mpirun;
	await context.workspaceState.update(MPIRUN_STATE_KEY, map);
}

/** The flow's state: the choices as they are being made (seeded with the last ones). */
interface ChoiceState {
	last: ReproChoices; mpirun: string; memory: string; size: string; sizes: string; variants: string[]; presets: string[]; custom: string | null; loopback: boolean; baseline: boolean;
	/** Fallback: the UCX settings to try (NAME=VALUE), and the one typed in the custom box. */
	tryUcx: string[]; ucxCustom: string | null;
}

/**
 * The reproducer's options as one multi-step input (multiStepInput.ts): launcher, [its path], memory, size(s),
 * [variants], configurations, [a custom preset], fallback: the UCX settings to also try, [a custom one]; a step
 * counter in each title, Back to the step before, Escape cancels. `tryUcxDefault`: the gpumpiDoctor.repro.tryUcx
 * setting, pre-selected until a pick was stored.
 */
async function pickChoices(which: 'ipc' | 'fallback', last: ReproChoices, tryUcxDefault: readonly string[] = []): Promise<ReproChoices | undefined> {
	const title = which === 'ipc' ? vscode.l10n.t('IPC-pointer reproducer') : vscode.l10n.t('Fallback reproducer');
	const OTHER = '\u0000other', BASE = '\u0000baseline', LOOP = '\u0000loopback', CUSTOM = '\u0000custom';
	const state: ChoiceState = { last, mpirun: last.mpirun, memory: last.memory, size: last.size, sizes: last.sizes, variants: [...last.variants], presets: [...last.presets], custom: null, loopback: last.loopback, baseline: last.baseline,
		tryUcx: [...(last.tryUcx ?? tryUcxDefault)], ucxCustom: null };

	const launcher: Step<ChoiceState> = async (input, st) => {
		const launchers = [
			{ label: vscode.l10n.t('mpirun on PATH'), value: '' },
			{ label: 'mpirun.openmpi', value: 'mpirun.openmpi' },
			{ label: 'mpirun.mpich', value: 'mpirun.mpich' },
			{ label: vscode.l10n.t('Other launcher…'), value: OTHER },
		];
		if (st.last.mpirun && !launchers.some(l => l.value === st.last.mpirun)) { launchers.unshift({ label: st.last.mpirun, value: st.last.mpirun }); }
		const items = launchers.map(l => ({ ...l, description: l.value === st.last.mpirun ? vscode.l10n.t('last used') : undefined }));
		const [picked] = await input.pick({ title: `${title}: ${vscode.l10n.t('launcher')}`, placeholder: vscode.l10n.t('Which mpirun launches the ranks ({0})', which === 'ipc' ? '4 ranks' : '2 ranks'), items, selected: items.filter(i => i.value === st.mpirun) });
		if (picked.value === OTHER) { return launcherPath; }
		st.mpirun = picked.value;
		return memory;
	};
	const launcherPath: Step<ChoiceState> = async (input, st) => {
		st.mpirun = await input.box({ title: `${title}: ${vscode.l10n.t('launcher')}`, prompt: vscode.l10n.t('Path of the launcher (run without a shell)'), value: st.mpirun, validate: v => checkMpirun(v) });
		return memory;
	};
	const memory: Step<ChoiceState> = async (input, st) => {
		const items = [
			{ label: 'device', description: vscode.l10n.t('GPU buffers (falls back to host memory without a GPU, and says why)') },
			{ label: 'host', description: vscode.l10n.t('host buffers: same flow, no GPU verdict') },
		];
		const [picked] = await input.pick({ title: `${title}: ${vscode.l10n.t('memory')}`, items, selected: items.filter(i => i.label === st.memory) });
		st.memory = picked.label;
		return which === 'ipc' ? size : sizes;
	};
	const size: Step<ChoiceState> = async (input, st) => {
		st.size = await input.box({ title: `${title}: ${vscode.l10n.t('message size')}`, prompt: vscode.l10n.t('Message size'), value: st.size, validate: x => checkSize(x) });
		return variants;
	};
	const variants: Step<ChoiceState> = async (input, st) => {
		const items = [...IPC_VARIANTS].map(v => ({ label: v }));
		const picked = await input.pick({ title: `${title}: ${vscode.l10n.t('variants')}`, items, selected: items.filter(i => st.variants.includes(i.label)), canPickMany: true });
		st.variants = picked.map(v => v.label);
		return presets;
	};
	const sizes: Step<ChoiceState> = async (input, st) => {
		st.sizes = await input.box({ title: `${title}: ${vscode.l10n.t('message sizes')}`, prompt: vscode.l10n.t('Message sizes (×4 steps)'), value: st.sizes, validate: x => checkSizes(x) });
		return presets;
	};
	const presets: Step<ChoiceState> = async (input, st) => {
		const customs = st.presets.filter(p => !REPRO_PRESETS.some(x => x.id === p));
		const items: Array<vscode.QuickPickItem & { id: string }> = [
			{ id: BASE, label: vscode.l10n.t('Baseline (no preset)') },
			// A modifier of every configuration, not one of its own (it was read as a second configuration that never ran).
			{ id: LOOP, label: vscode.l10n.t('Every configuration: keep TCP on loopback (single node)'), description: vscode.l10n.t('a modifier, not a configuration of its own'), detail: 'UCX_NET_DEVICES=lo' },
			...REPRO_PRESETS.map(p => ({ id: p.id, label: p.label, detail: p.detail })),
			...customs.map(c => ({ id: c, label: c, detail: vscode.l10n.t('custom') })),
			{ id: CUSTOM, label: vscode.l10n.t('Custom NAME=VALUE…') },
		];
		const selected = items.filter(i => (i.id === BASE && st.baseline) || (i.id === LOOP && st.loopback) || st.presets.includes(i.id));
		const chosen = await input.pick({ title: `${title}: ${vscode.l10n.t('configurations (each runs separately) and the loopback modifier')}`, items, selected, canPickMany: true });
		st.presets = chosen.filter(c => !c.id.startsWith('\u0000')).map(c => c.id);
		st.loopback = chosen.some(x => x.id === LOOP);
		st.baseline = chosen.some(x => x.id === BASE);
		st.custom = null;
		const next = which === 'fallback' ? ucxTries : undefined;
		return chosen.some(c => c.id === CUSTOM) ? custom : next;
	};
	const custom: Step<ChoiceState> = async (input, st) => {
		st.custom = await input.box({ title: `${title}: ${vscode.l10n.t('custom preset')}`, prompt: vscode.l10n.t('Environment preset NAME=VALUE for every rank'), placeholder: 'UCX_RNDV_THRESH=inf', value: '', validate: x => checkCustomPreset(x) });
		return which === 'fallback' ? ucxTries : undefined;
	};
	// Fallback: UCX staging settings, each run again as the mpi mode in every trial and ranked beside MPI as configured.
	const ucxTries: Step<ChoiceState> = async (input, st) => {
		const known = UCX_STAGING_TRY_INFO.map(t => t.setting);
		const customs = st.tryUcx.filter(t => !known.includes(t));
		const items: Array<vscode.QuickPickItem & { id: string }> = [
			...UCX_STAGING_TRY_INFO.map(t => ({ id: t.setting, label: t.setting, description: t.changes, detail: t.measured })),
			...customs.map(c => ({ id: c, label: c, description: vscode.l10n.t('custom') })),
			{ id: CUSTOM, label: vscode.l10n.t('Custom NAME=VALUE…'), description: vscode.l10n.t('another UCX_* setting to try') },
		];
		const chosen = await input.pick({
			title: `${title}: ${vscode.l10n.t('also try UCX staging settings (each: one more launch per trial; none: skip)')}`,
			placeholder: vscode.l10n.t('Each picked setting runs the mpi mode again with it added, ranked beside MPI as configured (bandwidth, host memory per GiB); it matters where MPI uses UCX (Open MPI pml ucx, MPICH ch4:ucx)'),
			items, selected: items.filter(i => st.tryUcx.includes(i.id)), canPickMany: true, allowNone: true,
		});
		st.tryUcx = chosen.filter(c => c.id !== CUSTOM).map(c => c.id);
		st.ucxCustom = null;
		return chosen.some(c => c.id === CUSTOM) ? ucxCustom : undefined;
	};
	const ucxCustom: Step<ChoiceState> = async (input, st) => {
		st.ucxCustom = await input.box({
			title: `${title}: ${vscode.l10n.t('custom UCX setting to try')}`, prompt: vscode.l10n.t('UCX_NAME=VALUE, tried beside the configuration in every trial (passed to the launcher as one argument, never through a shell)'),
			placeholder: 'UCX_RNDV_THRESH=inf', value: '',
			validate: x => checkUcxSetting(x) ?? (st.tryUcx.length + (st.tryUcx.includes(x) ? 0 : 1) > MAX_TRY_UCX ? vscode.l10n.t('at most {0} UCX settings per run (each adds a launch per trial)', MAX_TRY_UCX) : null),
		});
		return undefined;
	};

	if (!await MultiStepInput.run(launcher, state, 5)) { return undefined; }
	const tryUcx = which === 'fallback' ? (state.ucxCustom && !state.tryUcx.includes(state.ucxCustom) ? [...state.tryUcx, state.ucxCustom] : state.tryUcx) : last.tryUcx;
	const c = validateChoices({ mpirun: state.mpirun, memory: state.memory, size: state.size, sizes: state.sizes, variants: state.variants, presets: state.custom ? [...state.presets, state.custom] : state.presets, loopback: state.loopback, baseline: state.baseline, tryUcx });
	if (typeof c === 'string') { throw new Error(c); }
	return c;
}

async function runRepro(context: vscode.ExtensionContext, log: Logger, panel: () => ReproPanel, which: 'ipc' | 'fallback', argument: unknown): Promise<ReproPanelData | undefined> {
	if (!vscode.workspace.isTrusted) { throw new Error(vscode.l10n.t('GPU-MPI Doctor runs programs on this machine and is disabled in untrusted workspaces.')); }
	// gpumpiDoctor.repro.tryUcx: what the picker pre-selects, and what runs when the choices never named UCX settings.
	const tryUcxSetting = readReproTryUcx();
	for (const p of tryUcxSetting.problems) { log.warn(p); void vscode.window.showWarningMessage(p); }
	const { hostKey: argHost, rest: arg } = hostOfArgument(argument);
	const title = which === 'ipc' ? vscode.l10n.t('IPC-pointer reproducer') : vscode.l10n.t('Fallback reproducer');
	const asks = arg === undefined || arg === null || arg instanceof vscode.Uri;
	const hostKey = argHost ?? (asks ? await pickHost(title) : LOCAL_HOST_KEY);
	if (!hostKey) { return undefined; }
	const last = lastChoices(context, log, hostKey);
	// Options asked by hand: is the host reachable? Checked before the questions (with options given, openLaunchTarget says so).
	if (asks) { await checkReachable(hostKey, log); }
	let choices: ReproChoices | undefined;
	if (arg !== undefined && arg !== null && !(arg instanceof vscode.Uri)) {
		const c = validateChoices(arg, last);
		if (typeof c === 'string') { throw new Error(vscode.l10n.t('invalid reproducer options: {0}', c)); }
		choices = c;
	} else {
		choices = await pickChoices(which, last, tryUcxSetting.tryUcx);
	}
	if (!choices) { return undefined; }
	await rememberChoices(context, hostKey, choices);
	const { settings } = readSettings();
	const timeoutMs = Math.max(60, settings.timeoutSeconds) * 1000;
	const setting = readReproTrials();
	if (setting.problem) { log.warn(setting.problem); void vscode.window.showWarningMessage(setting.problem); }
	const trials = choices.trials ?? setting.trials;
	const ucxSettings = which === 'fallback' ? ucxSettingsOf(choices, tryUcxSetting.tryUcx) : [];
	if (ucxSettings.length > 0) { log.info(`UCX settings tried beside every configuration: ${ucxSettings.map(([k, v]) => `${k}=${v}`).join(' ')} (one more mpi-mode launch each per trial)`); }
	const started = new Date();
	const where = hostKey === LOCAL_HOST_KEY ? vscode.l10n.t('this host') : hostKey;
	return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('GPU-MPI Doctor: {0} reproducer on {1}', which, where), cancellable: true }, async (progress, token) => {
		const abort = activeRuns.begin('reproducer');
		const sub = token.onCancellationRequested(() => { log.info('reproducer cancelled by the user; ending the job and its ranks'); abort.abort(); });
		// The results panel opens once the target is resolved: an unknown, invalid or unreachable host is an error
		// message, not an empty panel.
		let p: ReproPanel | undefined;
		const onProgress = (line: string): void => { progress.report({ message: line }); p?.setBusy(true, line); log.info(`  ${line}`); };
		log.info(`${trials} trial(s) per variant / mode, each its own launch`);
		let target: OpenTarget | undefined;
		try {
			target = await openLaunchTarget(hostKey, which === 'ipc' ? 4 : 2, choices!.mpirun, log, onProgress, abort.signal);
			if (abort.signal.aborted) { return undefined; }
			p = panel();
			p.setBusy(true, vscode.l10n.t('Starting…'));
			const { engine, flavor } = target;
			const configs = configsFromChoices(choices!, flavor);
			if (configs.length === 0) { throw new Error(vscode.l10n.t('none of the chosen presets applies to {0}', flavor)); }
			const launcher = target.spec.srun ? target.spec.srun.srun : target.spec.mpirun;
			log.info(`repro ${which} on ${target.label}: ${launcher} (${flavor}), engine ${engine}, memory ${choices!.memory}, configs ${configs.map(c => c.label).join(' | ')}`);
			const common = { target, configs, loopback: choices!.loopback, memory: choices!.memory, timeoutMs, trials, onProgress, signal: abort.signal };
			const run = await core().runReproUseCase(which === 'ipc'
				? { ...common, which, variants: choices!.variants, sizeBytes: parseSize(choices!.size) ?? 64 << 20, engineArgs: [] }
				: { ...common, which, modes: [...FALLBACK_MODES], sizes: choices!.sizes, iters: 3, protoInfo: false, ucxSettings });
			if (!run.ok) { throw new Error(run.error); }
			const data: ReproPanelData = { ipc: run.ipc, fallback: run.fallback, source: '' };
			const on = hostKey === LOCAL_HOST_KEY ? 'this host' : target.label;
			data.source = `${which} run on ${on} at ${started.toLocaleTimeString()} with ${launcher} (${flavor})${abort.signal.aborted ? ' — cancelled, partial results' : ''}`;
			// The other reproducer's last result on this host stays beside this one (one panel with both).
			const kept = lastByHost.get(hostKey) ?? { ipc: null, fallback: [], ipcSource: '', fallbackSource: '' };
			if (which === 'ipc') { kept.ipc = data.ipc; kept.ipcSource = data.source; } else { kept.fallback = data.fallback; kept.fallbackSource = data.source; }
			lastByHost.set(hostKey, kept);
			const other = which === 'ipc' ? (kept.fallback.length > 0 ? kept.fallbackSource : '') : (kept.ipc ? kept.ipcSource : '');
			const shown: ReproPanelData = { ipc: kept.ipc, fallback: kept.fallback, source: other ? `${data.source}; beside it: ${other}` : data.source };
			p.setResults(shown, {}, hostKey);
			const again = vscode.l10n.t('Run Again');
			const command: CommandId = which === 'ipc' ? 'gpumpiDoctor.reproIpc' : 'gpumpiDoctor.reproFallback';
			const rerunArg = { ...choices!, host: hostKey };
			void vscode.window.showInformationMessage(abort.signal.aborted
				? vscode.l10n.t('Reproducer cancelled; the panel shows the runs that finished.')
				: vscode.l10n.t('The {0} reproducer on {1} finished.', which, where), again).then(choice => {
				if (choice === again) { void vscode.commands.executeCommand(command, rerunArg); }
			});
			return data;
		} finally {
			sub.dispose();
			activeRuns.end(abort);
			await target?.close();
			p?.setBusy(false, '');
		}
	});
}
