/**
 * Composition root of the VS Code extension: activate() creates the log channel and the inspection service and then
 * registers one feature at a time (inspectCommands.ts, the hosts view, the guard, the transport map, the
 * reproducers), every command before the one slow start-up step, the sweep of run markers a killed window left.
 * Nothing heavy runs on activation; tools run only when a command asks (the core is loaded then: lazyCore.ts).
 */
import { activeRuns } from '../core/activeRuns';
import type { Logger } from '../core/logger';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Report } from '../shared/report';
import { lastCommandError, registerCommand } from './commands';
import { recentGuardPrograms, runGuardCommand } from './guardCommand';
import { GUARD_TASK_TYPE, GuardTaskProvider } from './guardTask';
import { DiagnosticsPanel } from './diagnosticsPanel';
import { HOSTS_VIEW_ID, HostsTreeProvider, SHOW_HOST_REPORT_COMMAND, hostKeyOf } from './hostsView';
import { hostCommandsFor } from './hostCommands';
import { registerInspection, registerKeep, type InspectionFeature } from './inspectCommands';
import type { InspectionKeep } from './inspectionKeep';
import { InspectionService, LOCAL_HOST_KEY } from './inspectionService';
import { createOutputLogger } from './outputLogger';
import { registerTransportMap, TransportMapPanel, type TransportMapPanelState } from './transportMapPanel';
import { ReproPanel, type ReproPanelState } from './reproPanel';
import { registerReproCommands } from './reproCommands';
import { whenCoreLoaded } from './lazyCore';
import { createMarkerRecorder, sweepRunMarkers, type SweepAction } from '../core/runMarkers';
import { type VerdictItemState } from './verdictStatusBar';
import { MultiStepInput, type ScriptedAnswer, type ShownInput } from './multiStepInput';

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
	/** Where activation spent its time: evaluating the bundle, VS Code's part, activate() (ActivationTimings). */
	activationTimings(): ActivationTimings;
	/** Only when the extension runs under its tests (ExtensionMode.Test): answer the next QuickPicks / InputBoxes of
	 *  the multi-step inputs from `answers`; returns the live list of what each showed. */
	scriptInputs?(answers: ScriptedAnswer[]): ShownInput[];
	/** What the sweep of run markers at activation did (core/runMarkers.ts), once it is done. */
	runMarkerSweep(): Promise<{ file: string; outcome: string; message: string }[]>;
}

/**
 * Where activation spent its time, in milliseconds (NaN where the bundle's marks are missing: an unbundled run).
 * The bundle's banner and footer mark when evaluating dist/extension.js began and ended (scripts/build.mjs).
 */
export interface ActivationTimings {
	/** Evaluating dist/extension.js: banner → footer. */
	bundleEvalMs: number;
	/** VS Code's part between the bundle's end and its call of activate() (creating the extension context). */
	contextMs: number;
	/** banner → activate() called: bundleEvalMs + contextMs. */
	moduleLoadMs: number;
	/** activate() called → every command registered. */
	commandsMs: number;
	/** When every command was registered, wall clock (ms since 1970; for comparing with another process's clock). */
	commandsAtEpochMs: number;
	/** The body of activate(). */
	activateMs: number;
}

export function activate(context: vscode.ExtensionContext): GpumpiDoctorApi {
	const activateStart = performance.now();
	const { channel, logger } = createOutputLogger();
	context.subscriptions.push(channel);
	const showLog = (): void => channel.show(true);
	const service = new InspectionService(logger.child('service'));
	context.subscriptions.push(service);
	const inspection = registerInspection(context, service, logger, showLog);
	const keep = registerKeep(context, service, inspection.showPanel, logger, showLog);
	const hostsTree = registerHosts(context, service, keep, inspection, logger, showLog);
	registerGuard(context, service, logger, showLog);
	context.subscriptions.push(
		registerCommand('gpumpiDoctor.showLog', showLog, logger.child('commands'), showLog),
		registerTransportMap(context.extensionUri, logger.child('map'), showLog),
		registerReproCommands(context, logger.child('repro'), key => service.reportFor(key), showLog),
	);
	const commandsAt = performance.now();
	// Last, not awaited: the sweep of what a killed window left reads its markers and may signal and wait for processes.
	const sweep = startRunMarkers(context, logger);
	const timings = activationTimings(activateStart, commandsAt);
	logger.info(`activated (${context.extension.packageJSON?.version ?? '?'}): bundle ${timings.bundleEvalMs.toFixed(1)} ms, VS Code's context ${timings.contextMs.toFixed(1)} ms, activate() ${timings.activateMs.toFixed(1)} ms (commands after ${timings.commandsMs.toFixed(1)} ms, at ${new Date(timings.commandsAtEpochMs).toISOString()}); extension host pid ${process.pid}`);
	return extensionApi(context, service, inspection, hostsTree, timings, sweep);
}

/** The bundle's marks (its banner and footer) and the moments of activate(). */
function activationTimings(activateStart: number, commandsAt: number): ActivationTimings {
	const marks = globalThis as { __gpumpiDoctorLoadStart?: unknown; __gpumpiDoctorLoadEnd?: unknown };
	const start = typeof marks.__gpumpiDoctorLoadStart === 'number' ? marks.__gpumpiDoctorLoadStart : NaN;
	const end = typeof marks.__gpumpiDoctorLoadEnd === 'number' ? marks.__gpumpiDoctorLoadEnd : NaN;
	return {
		bundleEvalMs: end - start,
		contextMs: activateStart - end,
		moduleLoadMs: activateStart - start,
		commandsMs: commandsAt - activateStart,
		commandsAtEpochMs: performance.timeOrigin + commandsAt,
		activateMs: performance.now() - activateStart,
	};
}

/** The "GPU-MPI Hosts" view: the tree, a click on a host row, and the host commands (add, edit, remove, test, refresh). */
function registerHosts(context: vscode.ExtensionContext, service: InspectionService, keep: InspectionKeep, inspection: InspectionFeature, logger: Logger, showLog: () => void): HostsTreeProvider {
	const log = logger.child('commands');
	const hostsTree = new HostsTreeProvider(service, keep);
	const hostCommands = hostCommandsFor(service, showLog);
	/** A click on a host row: that host's last inspection becomes the panel's and the status bar's (Problems holds every host's). */
	const showHostReport = (arg?: unknown): Report | undefined => {
		const key = hostKeyOf(arg);
		const report = key === undefined ? undefined : service.reportFor(key);
		if (!report || key === undefined) { throw new Error(vscode.l10n.t('{0} has not been inspected in this window yet. Run "GPU-MPI: Inspect Host".', key ?? '?')); }
		inspection.showPanel();
		service.showReport(report, key);
		return report;
	};
	context.subscriptions.push(
		hostsTree, vscode.window.registerTreeDataProvider(HOSTS_VIEW_ID, hostsTree),
		registerCommand('gpumpiDoctor.addHost', hostCommands.add, log, showLog),
		registerCommand('gpumpiDoctor.editHost', hostCommands.edit, log, showLog),
		registerCommand('gpumpiDoctor.removeHost', hostCommands.remove, log, showLog),
		registerCommand('gpumpiDoctor.testConnection', hostCommands.testConnection, log, showLog),
		registerCommand(SHOW_HOST_REPORT_COMMAND, showHostReport, log, showLog),
		registerCommand('gpumpiDoctor.refreshHosts', () => hostsTree.refresh(), log, showLog),
	);
	return hostsTree;
}

/** "Run My Program With Guard…": the findings in the guard's own panel tab, the traffic in the map; and the task type. */
function registerGuard(context: vscode.ExtensionContext, service: InspectionService, logger: Logger, showLog: () => void): void {
	context.subscriptions.push(
		vscode.tasks.registerTaskProvider(GUARD_TASK_TYPE, new GuardTaskProvider(context.extensionPath, () => recentGuardPrograms(context))),
		registerCommand('gpumpiDoctor.runGuard', (arg?: unknown) => runGuardCommand(context, logger.child('guard'), arg, {
			report: (r, rerun) => { DiagnosticsPanel.showGuard(context.extensionUri, service, logger.child('guard-panel'), r, rerun); },
			map: r => { if (r.map) { void TransportMapPanel.show(context.extensionUri, logger.child('map')).setMap(r.map, vscode.l10n.t('gpumpi-guard: the program\'s traffic')); } },
		}), logger.child('commands'), showLog),
	);
}

/**
 * Every process session the core starts is written down under run-markers/ while it runs; what a hard-killed host
 * (no deactivate) left there is ended now (core/runMarkers.ts). Activation is at startup for this (onStartupFinished).
 */
function startRunMarkers(context: vscode.ExtensionContext, logger: Logger): Promise<SweepAction[]> {
	const markerDir = path.join(context.globalStorageUri.fsPath, 'run-markers');
	const markerLog = logger.child('markers');
	whenCoreLoaded(c => c.setSessionRecorder(createMarkerRecorder(markerDir, markerLog)));
	return sweepRunMarkers(markerDir, markerLog);
}

/** What activate() returns: the window's state for the tests (and nothing a user depends on). */
function extensionApi(context: vscode.ExtensionContext, service: InspectionService, inspection: InspectionFeature, hostsTree: HostsTreeProvider,
	timings: ActivationTimings, sweep: Promise<SweepAction[]>): GpumpiDoctorApi {
	const { problems, statusBar } = inspection;
	return {
		lastReport: () => service.lastReport,
		inspect: inspection.inspect,
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
