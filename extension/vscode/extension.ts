/**
 * Composition root of the VS Code extension: one log channel, the inspection service, the commands and the
 * diagnostics panel. Nothing heavy runs on activation; tools run only when a command asks.
 */
import { activeRuns } from '../core/activeRuns';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Report } from '../shared/report';
import { lastCommandError, registerCommand } from './commands';
import { recentGuardPrograms, runGuardCommand } from './guardCommand';
import { GUARD_TASK_TYPE, GuardTaskProvider } from './guardTask';
import { DiagnosticsPanel } from './diagnosticsPanel';
import { HOSTS_VIEW_ID, HostsTreeProvider, SHOW_HOST_REPORT_COMMAND, hostKeyOf, pickHost } from './hostsView';
import { hostCommandsFor, offerUnreachable } from './hostCommands';
import { UNREACHABLE_ID } from '../core/unreachable';
import { InspectionService, LOCAL_HOST_KEY } from './inspectionService';
import { createOutputLogger } from './outputLogger';
import { registerTransportMap, TransportMapPanel, type TransportMapPanelState } from './transportMapPanel';
import { ReproPanel, type ReproPanelState } from './reproPanel';
import { registerReproCommands } from './reproCommands';
import { core, whenCoreLoaded } from './lazyCore';
import { createMarkerRecorder, sweepRunMarkers } from '../core/runMarkers';
import { COPY_FIX_COMMAND, FindingDiagnostics, SHOW_FINDING_COMMAND } from './findingDiagnostics';
import { SHOW_PANEL_COMMAND, VerdictStatusBar, type VerdictItemState } from './verdictStatusBar';
import { MultiStepInput, type ScriptedAnswer, type ShownInput } from './multiStepInput';
import { InspectionKeep, inspectionRefOf, readReportFile } from './inspectionKeep';

/** What `activate` returns (tests reach it through `vscode.extensions.getExtension(...).exports`). */
export interface GpumpiDoctorApi {
	/** The last report of this window, if any. */
	lastReport(): Report | undefined;
	/** Run an inspection of the local host (or of the `gpumpiDoctor.hosts` entry `host`), show it in the panel, return the report. */
	inspect(host?: string): Promise<Report>;
	/** The message of the last failed command (shown to the user as an error), for tests. */
	lastCommandError(): string | undefined;
	/** The rows of the hosts view (label, status, what a click runs), for tests. */
	hostsView(): { label: string; description: string; problem: boolean; click?: { command: string; arguments: unknown[] } }[];
	/** Whether the diagnostics panel is open and its webview has sent `ready`. */
	panelReady(): boolean;
	/** The reproducer panel's state (ready, which results reached the webview), or null when it is closed. */
	reproPanelState(): ReproPanelState | null;
	/** The transport-map panel's state (ready, which map reached the webview), or null when it is closed. */
	transportMapState(): TransportMapPanelState | null;
	/** How many diagnostics every host's last inspection put in the Problems panel. */
	problemCount(): number;
	/** How many diagnostics one host's last inspection put in Problems (default this machine). */
	problemCountFor(key?: string): number;
	/** The URI of a host's findings document (the Problems entries with no file line), as a string. */
	findingsDocument(key?: string): string | undefined;
	/** The guard panel's report (its own tab), or null when it is closed. */
	guardPanelReport(): Report | null;
	/** The reproducer panel's "Copy as bug report" Markdown, or null when it shows nothing. */
	reproBugReport(): string | null;
	/** The last inspection of one host (default this machine). */
	hostReport(key?: string): Report | undefined;
	/** What the verdict status bar item shows, or undefined while it is hidden. */
	statusBar(): VerdictItemState | undefined;
	/** Where activation spent its time: evaluating the bundle (`moduleLoadMs`) and the body of activate(). */
	activationTimings(): ActivationTimings;
	/** Only when the extension runs under its tests (ExtensionMode.Test): answer the next QuickPicks / InputBoxes of
	 *  the multi-step inputs from `answers`; returns the live list of what each showed. */
	scriptInputs?(answers: ScriptedAnswer[]): ShownInput[];
	/** What the sweep of run markers at activation did (core/runMarkers.ts), once it is done. */
	runMarkerSweep(): Promise<{ file: string; outcome: string; message: string }[]>;
}

/** Milliseconds; `moduleLoadMs` is NaN when the bundle's load-start mark is missing (an unbundled run). */
export interface ActivationTimings { moduleLoadMs: number; activateMs: number }

export function activate(context: vscode.ExtensionContext): GpumpiDoctorApi {
	const activateStart = performance.now();
	const loadStart = (globalThis as { __gpumpiDoctorLoadStart?: unknown }).__gpumpiDoctorLoadStart;
	const { channel, logger } = createOutputLogger();
	context.subscriptions.push(channel);
	const log = logger.child('commands');
	const service = new InspectionService(logger.child('service'));
	context.subscriptions.push(service);

	// Every process session the core starts is written down under run-markers/ while it runs; what a hard-killed host
	// (no deactivate) left there is ended now (core/runMarkers.ts). Activation is at startup for this (onStartupFinished).
	const markerDir = path.join(context.globalStorageUri.fsPath, 'run-markers');
	const markerLog = logger.child('markers');
	whenCoreLoaded(c => c.setSessionRecorder(createMarkerRecorder(markerDir, markerLog)));
	const sweep = sweepRunMarkers(markerDir, markerLog);

	const showLog = (): void => channel.show(true);
	const hostCommands = hostCommandsFor(service, showLog);
	const showPanel = (): DiagnosticsPanel => DiagnosticsPanel.show(context.extensionUri, service, logger.child('panel'));
	const inspect = async (host?: string): Promise<Report> => {
		if (!vscode.workspace.isTrusted) {
			throw new Error(vscode.l10n.t('GPU-MPI Doctor runs programs on this machine and is disabled in untrusted workspaces.'));
		}
		showPanel();
		const key = host ?? LOCAL_HOST_KEY;
		const report = await service.inspect(key);
		offerUnreachable(key, report.findings.find(f => f.id === UNREACHABLE_ID), showLog);
		return report;
	};
	/** The command: a host name / tree node argument, else a QuickPick when hosts are configured. */
	const inspectCommand = async (arg?: unknown): Promise<Report | undefined> => {
		const key = hostKeyOf(arg) ?? await pickHost();
		return key === undefined ? undefined : inspect(key);
	};
	// The Problems panel and the status bar follow every report of this window.
	const problems = new FindingDiagnostics(logger.child('problems'));
	const statusBar = new VerdictStatusBar();
	context.subscriptions.push(problems, statusBar, service.onDidChange(change => {
		if (change.kind === 'forget') { problems.forget(change.key); return; }
		if (change.kind !== 'report') { return; }
		problems.update(change.key, change.report);
		statusBar.update(change.report, change.key);
	}));
	/** A Problems entry's "Show in GPU-MPI panel": that host's inspection in the panel, scrolled to the finding. */
	const showFinding = (id?: unknown, index?: unknown, key?: unknown): void => {
		if (typeof key === 'string') {
			const own = service.reportFor(key);
			if (own && own !== service.lastReport) { service.showReport(own, key); }
		}
		const report = service.lastReport;
		if (!report) { throw new Error(vscode.l10n.t('No report yet. Run "GPU-MPI: Inspect Host".')); }
		// The index is checked against the id: a stale diagnostic from an older report reveals the finding by id.
		let at = typeof index === 'number' && report.findings[index]?.id === id ? index : report.findings.findIndex(f => f.id === id);
		if (at < 0) { at = 0; }
		showPanel().revealFinding(at);
	};
	/** A click on a host row: that host's last inspection becomes the panel's and the status bar's (Problems holds every host's). */
	const showHostReport = (arg?: unknown): Report | undefined => {
		const key = hostKeyOf(arg);
		const report = key === undefined ? undefined : service.reportFor(key);
		if (!report || key === undefined) { throw new Error(vscode.l10n.t('{0} has not been inspected in this window yet. Run "GPU-MPI: Inspect Host".', key ?? '?')); }
		showPanel();
		service.showReport(report, key);
		return report;
	};
	// Inspections kept (history per host, save / open / compare): inspectionKeep.ts.
	const keep = new InspectionKeep(service, path.join(context.globalStorageUri.fsPath, 'inspections'), logger.child('keep'), context.extensionUri);
	context.subscriptions.push(keep);
	context.subscriptions.push(vscode.tasks.registerTaskProvider(GUARD_TASK_TYPE, new GuardTaskProvider(context.extensionPath, () => recentGuardPrograms(context))));
	/** The inspection an argument names (a host row, a history row, {host, index}, a file), else the one the panel shows. */
	const reportOfArg = async (arg: unknown): Promise<Report> => {
		if (typeof arg === 'object' && arg !== null && 'report' in arg && typeof (arg as { report: unknown }).report === 'object') { return (arg as { report: Report }).report; }
		const ref = inspectionRefOf(arg);
		if (ref) { return keep.resolve(ref); }
		if (!service.lastReport) { throw new Error(vscode.l10n.t('No inspection yet. Run "GPU-MPI: Inspect Host".')); }
		return service.lastReport;
	};
	const saveInspection = async (arg?: unknown, file?: unknown): Promise<string | undefined> =>
		keep.save(await reportOfArg(arg), typeof file === 'string' && file.startsWith('/') ? file : undefined);
	const openInspection = async (arg?: unknown): Promise<Report | undefined> => {
		let file = inspectionRefOf(arg);
		if (!file || !('file' in file)) {
			const picked = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { JSON: ['json'] }, title: vscode.l10n.t('Open a saved inspection') });
			if (!picked?.[0]) { return undefined; }
			file = { file: picked[0].fsPath };
		}
		const report = await readReportFile(file.file);
		showPanel();
		service.showReport(report, `file:${file.file}`);
		return report;
	};
	/** Two inspections in the diff editor: the arguments, else the one shown (or a host row's) and one picked. */
	const compareInspections = async (a?: unknown, b?: unknown): Promise<string[] | undefined> => {
		const first = a === undefined ? service.lastReport ?? (await keep.pick(vscode.l10n.t('Compare: the first inspection')))?.report : await reportOfArg(a);
		if (!first) { return undefined; }
		const second = b !== undefined ? await reportOfArg(b) : (await keep.pick(vscode.l10n.t('Compare {0} ({1}) with…', first.host.label, new Date(first.createdAt).toLocaleString()), first))?.report;
		if (!second) { return undefined; }
		return (await keep.compare(first, second)).map(u => u.toString());
	};
	const hostsTree = new HostsTreeProvider(service, keep);
	context.subscriptions.push(hostsTree, vscode.window.registerTreeDataProvider(HOSTS_VIEW_ID, hostsTree));
	/** Analyse an offline bundle (docs/bundle.md) with this build's rules and show it in the panel. */
	const analyzeBundle = async (target?: vscode.Uri | string): Promise<Report | undefined> => {
		let dir = typeof target === 'string' ? target : target?.fsPath;
		if (!dir) {
			const picked = await vscode.window.showOpenDialog({
				canSelectFolders: true, canSelectFiles: false, canSelectMany: false,
				openLabel: vscode.l10n.t('Analyze bundle'),
			});
			dir = picked?.[0]?.fsPath;
			if (!dir) { return undefined; }
		}
		const report = await core().reportFromBundle(dir);
		showPanel();
		service.showReport(report, `bundle:${dir}`);
		return report;
	};

	context.subscriptions.push(
		registerCommand('gpumpiDoctor.inspectHost', inspectCommand, log, showLog),
		registerCommand('gpumpiDoctor.addHost', hostCommands.add, log, showLog),
		registerCommand('gpumpiDoctor.editHost', hostCommands.edit, log, showLog),
		registerCommand('gpumpiDoctor.removeHost', hostCommands.remove, log, showLog),
		registerCommand('gpumpiDoctor.testConnection', hostCommands.testConnection, log, showLog),
		registerCommand(SHOW_HOST_REPORT_COMMAND, showHostReport, log, showLog),
		registerCommand('gpumpiDoctor.refreshHosts', () => hostsTree.refresh(), log, showLog),
		registerCommand('gpumpiDoctor.showLog', showLog, log, showLog),
		registerCommand(SHOW_PANEL_COMMAND, () => { showPanel(); }, log, showLog),
		registerCommand(SHOW_FINDING_COMMAND, showFinding, log, showLog),
		registerCommand(COPY_FIX_COMMAND, async (text?: unknown) => {
			if (typeof text !== 'string') { return; }
			await vscode.env.clipboard.writeText(text);
			void vscode.window.showInformationMessage(vscode.l10n.t('Copied: {0}', text));
		}, log, showLog),
		registerCommand('gpumpiDoctor.runGuard', (arg?: unknown) => runGuardCommand(context, logger.child('guard'), arg, {
			report: (r, rerun) => { DiagnosticsPanel.showGuard(context.extensionUri, service, logger.child('guard-panel'), r, rerun); },
			map: r => { if (r.map) { TransportMapPanel.show(context.extensionUri, logger.child('map')).setMap(r.map, vscode.l10n.t('gpumpi-guard: the program\'s traffic')); } },
		}), log, showLog),
		registerCommand('gpumpiDoctor.saveInspection', saveInspection, log, showLog),
		registerCommand('gpumpiDoctor.openInspection', openInspection, log, showLog),
		registerCommand('gpumpiDoctor.compareInspections', compareInspections, log, showLog),
		registerCommand('gpumpiDoctor.analyzeBundle', (target) => analyzeBundle(target instanceof vscode.Uri || typeof target === 'string' ? target : undefined), log, showLog),
		{ dispose: () => { DiagnosticsPanel.current?.dispose(); DiagnosticsPanel.guard?.dispose(); } },
		registerTransportMap(context.extensionUri, logger.child('map'), showLog),
		registerReproCommands(context, logger.child('repro'), key => service.reportFor(key), showLog),
	);
	const timings: ActivationTimings = {
		moduleLoadMs: typeof loadStart === 'number' ? activateStart - loadStart : NaN,
		activateMs: performance.now() - activateStart,
	};
	logger.info(`activated (${context.extension.packageJSON?.version ?? '?'}): module load ${timings.moduleLoadMs.toFixed(1)} ms, activate() ${timings.activateMs.toFixed(1)} ms; extension host pid ${process.pid}`);

	return {
		lastReport: () => service.lastReport,
		inspect,
		panelReady: () => DiagnosticsPanel.current?.isReady ?? false,
		guardPanelReport: () => DiagnosticsPanel.guard?.report ?? null,
		reproBugReport: () => { try { return ReproPanel.current?.bugReport() ?? null; } catch { return null; } },
		hostReport: (key?: string) => service.reportFor(key ?? LOCAL_HOST_KEY),
		lastCommandError: () => lastCommandError()?.message,
		hostsView: () => hostsTree.getChildren().map(n => {
			const item = hostsTree.getTreeItem(n);
			const label = typeof item.label === 'string' ? item.label : item.label?.label ?? '';
			const click = item.command ? { command: item.command.command, arguments: item.command.arguments ?? [] } : undefined;
			return { label, description: typeof item.description === 'string' ? item.description : '', problem: n.kind === 'problem', ...(click ? { click } : {}) };
		}),
		reproPanelState: () => ReproPanel.current?.state ?? null,
		transportMapState: () => TransportMapPanel.current?.state ?? null,
		problemCount: () => problems.count,
		problemCountFor: (key?: string) => problems.countFor(key ?? LOCAL_HOST_KEY),
		findingsDocument: (key?: string) => problems.documentFor(key ?? LOCAL_HOST_KEY)?.toString(),
		statusBar: () => statusBar.state,
		activationTimings: () => ({ ...timings }),
		...(context.extensionMode === vscode.ExtensionMode.Test ? { scriptInputs: (answers: ScriptedAnswer[]) => MultiStepInput.script(answers) } : {}),
		runMarkerSweep: () => sweep,
	};
}

/**
 * Ends the runs in flight with the extension host (a window reload or close): their job trees run in process groups
 * of their own and would outlive it (docs/reliability.md, window reload). Disposables go with context.subscriptions.
 */
export async function deactivate(): Promise<void> {
	await activeRuns.abortAll(4000);
}
