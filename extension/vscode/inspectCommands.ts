/**
 * The inspection features of the window, each registered by one function that extension.ts's activate() composes:
 * the diagnostics panel with Problems and the status bar following every report, the inspect / show / analyse
 * commands (registerInspection), and the kept inspections with save / open / compare (registerKeep).
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Logger } from '../core/logger';
import { UNREACHABLE_ID } from '../core/unreachable';
import type { Report } from '../shared/report';
import { registerCommand } from './commands';
import { DiagnosticsPanel } from './diagnosticsPanel';
import { COPY_FIX_COMMAND, FindingDiagnostics, SHOW_FINDING_COMMAND } from './findingDiagnostics';
import { offerUnreachable } from './hostCommands';
import { hostKeyOf, pickHost } from './hostsView';
import { InspectionKeep, inspectionRefOf, readReportFile } from './inspectionKeep';
import { LOCAL_HOST_KEY, type InspectionService } from './inspectionService';
import { core } from './lazyCore';
import { SHOW_PANEL_COMMAND, VerdictStatusBar } from './verdictStatusBar';

/** What the other features and the extension's API use of the inspection feature. */
export interface InspectionFeature {
	/** Inspect a host (default this machine) and show it in the panel. */
	inspect(host?: string): Promise<Report>;
	showPanel(): DiagnosticsPanel;
	problems: FindingDiagnostics;
	statusBar: VerdictStatusBar;
}

/** The panel, Problems, the status bar and the commands that inspect or show an inspection. */
export function registerInspection(context: vscode.ExtensionContext, service: InspectionService, logger: Logger, showLog: () => void): InspectionFeature {
	const log = logger.child('commands');
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
	// The Problems panel and the status bar follow every report of this window.
	const problems = new FindingDiagnostics(logger.child('problems'));
	const statusBar = new VerdictStatusBar();
	context.subscriptions.push(problems, statusBar, service.onDidChange(change => {
		if (change.kind === 'forget') { problems.forget(change.key); return; }
		if (change.kind !== 'report') { return; }
		problems.update(change.key, change.report);
		statusBar.update(change.report, change.key);
	}));
	context.subscriptions.push(
		// The command: a host name / tree node argument, else a QuickPick when hosts are configured.
		registerCommand('gpumpiDoctor.inspectHost', async (arg?: unknown) => {
			const key = hostKeyOf(arg) ?? await pickHost();
			return key === undefined ? undefined : inspect(key);
		}, log, showLog),
		registerCommand(SHOW_PANEL_COMMAND, () => { showPanel(); }, log, showLog),
		registerCommand(SHOW_FINDING_COMMAND, (id?: unknown, index?: unknown, key?: unknown) => showFinding(service, showPanel, id, index, key), log, showLog),
		registerCommand(COPY_FIX_COMMAND, async (text?: unknown) => {
			if (typeof text !== 'string') { return; }
			await vscode.env.clipboard.writeText(text);
			void vscode.window.showInformationMessage(vscode.l10n.t('Copied: {0}', text));
		}, log, showLog),
		registerCommand('gpumpiDoctor.analyzeBundle', (target) => analyzeBundle(service, showPanel, target instanceof vscode.Uri || typeof target === 'string' ? target : undefined), log, showLog),
		{ dispose: () => { DiagnosticsPanel.current?.dispose(); DiagnosticsPanel.guard?.dispose(); } },
	);
	return { inspect, showPanel, problems, statusBar };
}

/** A Problems entry's "Show in GPU-MPI panel": that host's inspection in the panel, scrolled to the finding. */
function showFinding(service: InspectionService, showPanel: () => DiagnosticsPanel, id?: unknown, index?: unknown, key?: unknown): void {
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
}

/** Analyse an offline bundle (docs/bundle.md) with this build's rules and show it in the panel. */
async function analyzeBundle(service: InspectionService, showPanel: () => DiagnosticsPanel, target?: vscode.Uri | string): Promise<Report | undefined> {
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
}

/** Inspections kept (history per host, kept under global storage; inspectionKeep.ts) and the save / open / compare commands. */
export function registerKeep(context: vscode.ExtensionContext, service: InspectionService, showPanel: () => DiagnosticsPanel, logger: Logger, showLog: () => void): InspectionKeep {
	const log = logger.child('commands');
	const keep = new InspectionKeep(service, path.join(context.globalStorageUri.fsPath, 'inspections'), logger.child('keep'), context.extensionUri);
	/** The inspection an argument names (a host row, a history row, {host, index}, a file), else the one the panel shows. */
	const reportOfArg = async (arg: unknown): Promise<Report> => {
		if (typeof arg === 'object' && arg !== null && 'report' in arg && typeof (arg as { report: unknown }).report === 'object') { return (arg as { report: Report }).report; }
		const ref = inspectionRefOf(arg);
		if (ref) { return keep.resolve(ref); }
		if (!service.lastReport) { throw new Error(vscode.l10n.t('No inspection yet. Run "GPU-MPI: Inspect Host".')); }
		return service.lastReport;
	};
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
	context.subscriptions.push(
		keep,
		registerCommand('gpumpiDoctor.saveInspection', async (arg?: unknown, file?: unknown) =>
			keep.save(await reportOfArg(arg), typeof file === 'string' && file.startsWith('/') ? file : undefined), log, showLog),
		registerCommand('gpumpiDoctor.openInspection', openInspection, log, showLog),
		registerCommand('gpumpiDoctor.compareInspections', compareInspections, log, showLog),
	);
	return keep;
}
