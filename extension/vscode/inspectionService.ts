/**
 * Holds the extension's inspection state (last report, busy) and runs inspections of the local host with a
 * cancellable progress notification. Cancelling aborts the collector, which kills the tools' process groups.
 */
import * as vscode from 'vscode';
import type { Report } from '../shared/report';
import { LocalHost } from '../core/hosts/localHost';
import { inspectHost } from '../core/inspect';
import { errorText, type Logger } from '../core/logger';
import { Disposable } from './dispose';
import { readSettings } from './settings';

/** What changed, for listeners such as the diagnostics panel. */
export type InspectionChange = { kind: 'report'; report: Report } | { kind: 'busy'; busy: boolean; message: string };

/** The inspection state of this window. */
export class InspectionService extends Disposable {
	private _lastReport: Report | undefined;
	private _running: Promise<Report> | undefined;
	private _busyMessage = '';
	private readonly _onDidChange = this._register(new vscode.EventEmitter<InspectionChange>());
	/** Fires when a report arrives or busy state changes. */
	readonly onDidChange = this._onDidChange.event;

	constructor(private readonly _log: Logger) { super(); }

	get lastReport(): Report | undefined { return this._lastReport; }
	get busy(): boolean { return this._running !== undefined; }
	get busyMessage(): string { return this._busyMessage; }

	/** Show a report made elsewhere (an offline bundle) as this window's current report. */
	showReport(report: Report): void {
		this._lastReport = report;
		this._onDidChange.fire({ kind: 'report', report });
	}

	/** Run an inspection (or join the one already running). Rejects in untrusted workspaces. */
	inspect(): Promise<Report> {
		if (!vscode.workspace.isTrusted) {
			return Promise.reject(new Error(vscode.l10n.t('GPU-MPI Doctor runs programs on this machine and is disabled in untrusted workspaces.')));
		}
		if (!this._running) {
			this._running = this._run().finally(() => {
				this._running = undefined;
				this._setBusy(false, '');
			});
		}
		return this._running;
	}

	private async _run(): Promise<Report> {
		const { settings, problems } = readSettings();
		for (const p of problems) {
			this._log.warn(`setting ignored: ${p}`);
			void vscode.window.showWarningMessage(vscode.l10n.t('GPU-MPI Doctor setting ignored: {0}', p));
		}
		this._log.info(`inspect local host: ranks=${settings.ranks} timeout=${settings.timeoutSeconds}s engine=${settings.enginePath || '(built)'} mpirun=${settings.mpirunPath || '(PATH)'}`);
		this._setBusy(true, vscode.l10n.t('Starting inspection…'));
		return vscode.window.withProgress({
			location: vscode.ProgressLocation.Notification,
			title: vscode.l10n.t('GPU-MPI Doctor: inspecting host'),
			cancellable: true,
		}, async (progress, token) => {
			const abort = new AbortController();
			const sub = token.onCancellationRequested(() => {
				this._log.info('inspection cancelled by the user; killing running tools');
				abort.abort();
			});
			try {
				const report = await inspectHost(new LocalHost(), {
					...settings,
					signal: abort.signal,
					logger: this._log.child('inspect'),
					onProgress: message => {
						progress.report({ message });
						this._setBusy(true, message);
					},
				});
				if (abort.signal.aborted) {
					void vscode.window.showInformationMessage(vscode.l10n.t('Inspection cancelled; the report shows what was collected before.'));
				}
				this._lastReport = report;
				this._onDidChange.fire({ kind: 'report', report });
				this._log.info(`report ready: ${report.findings.length} finding(s) in ${report.elapsedMs} ms`);
				return report;
			} catch (e) {
				this._log.error(`inspection failed: ${errorText(e)}`);
				throw e;
			} finally {
				sub.dispose();
			}
		});
	}

	private _setBusy(busy: boolean, message: string): void {
		this._busyMessage = message;
		this._onDidChange.fire({ kind: 'busy', busy, message });
	}
}
