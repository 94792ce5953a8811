/**
 * Composition root of the VS Code extension: one log channel, the inspection service, the commands and the
 * diagnostics panel. Nothing heavy runs on activation; tools run only when a command asks.
 */
import * as vscode from 'vscode';
import type { Report } from '../shared/report';
import { registerCommand } from './commands';
import { DiagnosticsPanel } from './diagnosticsPanel';
import { InspectionService } from './inspectionService';
import { createOutputLogger } from './outputLogger';
import { registerTransportMap } from './transportMapPanel';
import { ReproPanel, type ReproPanelState } from './reproPanel';
import { registerReproCommands } from './reproCommands';
import { reportFromBundle } from '../core/bundle';

/** What `activate` returns (tests reach it through `vscode.extensions.getExtension(...).exports`). */
export interface GpumpiDoctorApi {
	/** The last report of this window, if any. */
	lastReport(): Report | undefined;
	/** Run an inspection of the local host, show it in the panel, and return the report. */
	inspect(): Promise<Report>;
	/** Whether the diagnostics panel is open and its webview has sent `ready`. */
	panelReady(): boolean;
	/** The reproducer panel's state (ready, which results reached the webview), or null when it is closed. */
	reproPanelState(): ReproPanelState | null;
}

export function activate(context: vscode.ExtensionContext): GpumpiDoctorApi {
	const { channel, logger } = createOutputLogger();
	context.subscriptions.push(channel);
	const log = logger.child('commands');
	const service = new InspectionService(logger.child('service'));
	context.subscriptions.push(service);

	const showPanel = (): DiagnosticsPanel => DiagnosticsPanel.show(context.extensionUri, service, logger.child('panel'));
	const inspect = async (): Promise<Report> => {
		if (!vscode.workspace.isTrusted) {
			throw new Error(vscode.l10n.t('GPU-MPI Doctor runs programs on this machine and is disabled in untrusted workspaces.'));
		}
		showPanel();
		return service.inspect();
	};
	const showLog = (): void => channel.show(true);
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
		const report = await reportFromBundle(dir);
		showPanel();
		service.showReport(report);
		return report;
	};

	context.subscriptions.push(
		registerCommand('gpumpiDoctor.inspectHost', inspect, log, showLog),
		registerCommand('gpumpiDoctor.showLog', showLog, log, showLog),
		registerCommand('gpumpiDoctor.analyzeBundle', (target) => analyzeBundle(target instanceof vscode.Uri || typeof target === 'string' ? target : undefined), log, showLog),
		{ dispose: () => DiagnosticsPanel.current?.dispose() },
		registerTransportMap(context.extensionUri, logger.child('map')),
		registerReproCommands(context, logger.child('repro'), () => service.lastReport, showLog),
	);
	logger.info(`activated (${context.extension.packageJSON?.version ?? '?'})`);

	return {
		lastReport: () => service.lastReport,
		inspect,
		panelReady: () => DiagnosticsPanel.current?.isReady ?? false,
		reproPanelState: () => ReproPanel.current?.state ?? null,
	};
}

export function deactivate(): void { /* disposables go with context.subscriptions */ }
