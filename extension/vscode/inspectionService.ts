/**
 * Holds the extension's inspection state (last report, last report per host, busy) and runs inspections of the
 * local host or of a `gpumpiDoctor.hosts` entry (over ssh: openRemoteTarget deploys and builds the engine there)
 * with a cancellable progress notification. Cancelling aborts the collector, which kills the tools' process
 * groups (on an ssh host: the remote groups, through SshHost).
 */
import { activeRuns } from '../core/activeRuns';
import * as vscode from 'vscode';
import type { Report } from '../shared/report';
import type { HostSetting } from '../core/hosts/hostSettings';
import type { RemoteTarget } from '../core/hosts/remoteTarget';
import { core } from './lazyCore';
import { errorText, type Logger } from '../core/logger';
import { Disposable } from './dispose';
import { connectKind, failedConnection } from '../core/unreachable';
import { findHost, readSettings, sshConfigFile } from './settings';

/** The key of this machine among hosts (not a valid `gpumpiDoctor.hosts` name, so it never collides). */
export const LOCAL_HOST_KEY = '$local';

/** The last known reachability of a host: from "Test Connection" or from its last inspection. */
export type HostReach = { ok: true; at: number } | { ok: false; at: number; label: string; error: string };

/** What changed, for listeners such as the diagnostics panel. */
export type InspectionChange = { kind: 'report'; report: Report; key: string } | { kind: 'busy'; busy: boolean; message: string } | { kind: 'forget'; key: string };

/** The inspection state of this window. */
export class InspectionService extends Disposable {
	private _lastReport: Report | undefined;
	private readonly _byHost = new Map<string, Report>();
	private readonly _reach = new Map<string, HostReach>();
	private _running: { key: string; promise: Promise<Report> } | undefined;
	private _busyMessage = '';
	private readonly _onDidChange = this._register(new vscode.EventEmitter<InspectionChange>());
	/** Fires when a report arrives or busy state changes. */
	readonly onDidChange = this._onDidChange.event;

	constructor(private readonly _log: Logger) { super(); }

	/** The inspection shown now (the panel, status bar): the last one run, or the host row clicked last. */
	get lastReport(): Report | undefined { return this._lastReport; }
	get busy(): boolean { return this._running !== undefined; }
	/** The host key (LOCAL_HOST_KEY or a hosts name) being inspected now, if any. */
	get runningHost(): string | undefined { return this._running?.key; }
	/** The last report of one host (LOCAL_HOST_KEY or a `gpumpiDoctor.hosts` name). */
	reportFor(key: string): Report | undefined { return this._byHost.get(key); }
	get busyMessage(): string { return this._busyMessage; }
	/** Whether the host could be reached the last time it was tried (undefined: not tried in this window). */
	reachFor(key: string): HostReach | undefined { return this._reach.get(key); }

	/** Record a connection test's outcome (the hosts view marks an unreachable row). */
	noteReach(key: string, reach: HostReach): void {
		this._reach.set(key, reach);
		this._setBusy(this.busy, this._busyMessage);
	}

	/** Forget what is known about a host (renamed or removed). */
	forget(key: string): void {
		this._reach.delete(key);
		this._byHost.delete(key);
		this._onDidChange.fire({ kind: 'forget', key });
		this._setBusy(this.busy, this._busyMessage);
	}

	/**
	 * Show an inspection as this window's current one: a host's last inspection again (a Hosts row click), or one made
	 * elsewhere (an offline bundle, key `bundle:<dir>`). Only inspections come here: a guarded run's or a reproducer's
	 * result has its own panel and never becomes a host's truth.
	 */
	showReport(report: Report, key: string): void {
		this._lastReport = report;
		if (key.startsWith('bundle:')) { this._byHost.set(key, report); }
		this._onDidChange.fire({ kind: 'report', report, key });
	}

	/**
	 * Run an inspection of `hostKey` (default this machine; else a `gpumpiDoctor.hosts` name), or join the one
	 * already running for that host. Rejects in untrusted workspaces, for an unknown or invalid host, and while
	 * another host is being inspected.
	 */
	inspect(hostKey: string = LOCAL_HOST_KEY): Promise<Report> {
		if (!vscode.workspace.isTrusted) {
			return Promise.reject(new Error(vscode.l10n.t('GPU-MPI Doctor runs programs on this machine and is disabled in untrusted workspaces.')));
		}
		if (this._running) {
			if (this._running.key === hostKey) { return this._running.promise; }
			return Promise.reject(new Error(vscode.l10n.t('An inspection of {0} is running; wait for it or cancel it first.', this._running.key === LOCAL_HOST_KEY ? vscode.l10n.t('this machine') : this._running.key)));
		}
		let setting: HostSetting | undefined;
		if (hostKey !== LOCAL_HOST_KEY) {
			const found = findHost(hostKey);
			if (found instanceof Error) { return Promise.reject(found); }
			setting = found;
		}
		const promise = this._run(hostKey, setting).finally(() => {
			this._running = undefined;
			this._setBusy(false, '');
		});
		this._running = { key: hostKey, promise };
		return promise;
	}

	private async _run(hostKey: string, setting: HostSetting | undefined): Promise<Report> {
		const { settings, problems } = readSettings();
		for (const p of problems) {
			this._log.warn(`setting ignored: ${p}`);
			void vscode.window.showWarningMessage(vscode.l10n.t('GPU-MPI Doctor setting ignored: {0}', p));
		}
		if (setting) {
			this._log.info(`inspect ssh host ${setting.name} (${setting.sshHost}): ranks=${settings.ranks} timeout=${settings.timeoutSeconds}s engine=${setting.enginePath || '(deploy)'} mpirun=${setting.mpirun || '(PATH)'}`);
		} else {
			this._log.info(`inspect local host: ranks=${settings.ranks} timeout=${settings.timeoutSeconds}s engine=${settings.enginePath || '(built)'} mpirun=${settings.mpirunPath || '(PATH)'}`);
		}
		this._setBusy(true, vscode.l10n.t('Starting inspection…'));
		return vscode.window.withProgress({
			location: vscode.ProgressLocation.Notification,
			title: setting ? vscode.l10n.t('GPU-MPI Doctor: inspecting {0}', setting.name) : vscode.l10n.t('GPU-MPI Doctor: inspecting host'),
			cancellable: true,
		}, async (progress, token) => {
			const abort = activeRuns.begin('inspection');
			const sub = token.onCancellationRequested(() => {
				this._log.info('inspection cancelled by the user; killing running tools');
				abort.abort();
			});
			const onProgress = (message: string): void => {
				progress.report({ message });
				this._setBusy(true, message);
			};
			let remote: RemoteTarget | undefined;
			try {
				if (setting) {
					onProgress(vscode.l10n.t('Connecting to {0} and preparing the engine there…', setting.name));
					remote = await core().openRemoteTarget(setting, { onProgress, signal: abort.signal, configFile: sshConfigFile() });
					if (remote.deploy && !remote.deploy.ok) {
						this._log.warn(`engine deploy on ${setting.name} failed: ${remote.deploy.error} ${remote.deploy.lines.slice(0, 10).join(' | ')}`);
					}
				}
				// Cancelled while connecting/deploying (a build in progress was killed on the host): stop here.
				if (abort.signal.aborted) { throw new Error(vscode.l10n.t('Inspection cancelled.')); }
				const report = await core().inspectHost(remote?.host ?? new (core().LocalHost)(), {
					...settings,
					...(remote ? { enginePath: remote.enginePath, mpirunPath: remote.mpirunPath, locateEngine: remote.locateEngine, probe: remote.probe, srun: remote.srun } : {}),
					signal: abort.signal,
					logger: this._log.child('inspect'),
					onProgress,
				});
				if (abort.signal.aborted) {
					void vscode.window.showInformationMessage(vscode.l10n.t('Inspection cancelled; the report shows what was collected before.'));
				}
				this._byHost.set(hostKey, report);
				const unreached = failedConnection(report.raw);
				if (setting) {
					this._reach.set(hostKey, unreached
						? { ok: false, at: Date.now(), label: connectKind(unreached).label, error: unreached.error ?? '' }
						: { ok: true, at: Date.now() });
				}
				if (unreached) {
					this._log.warn(`cannot reach ${setting?.name ?? hostKey} (${connectKind(unreached).label}): ${unreached.error ?? ''}; nothing was checked there`);
					this._log.warn(`ssh said: ${unreached.stderr.trim() || '(nothing)'} [${unreached.command.join(' ')}]`);
				}
				this._lastReport = report;
				this._onDidChange.fire({ kind: 'report', report, key: hostKey });
				this._log.info(`report ready: ${report.findings.length} finding(s) in ${report.elapsedMs} ms`);
				return report;
			} catch (e) {
				this._log.error(`inspection failed: ${errorText(e)}`);
				throw e;
			} finally {
				sub.dispose();
				activeRuns.end(abort);
				await remote?.close();
			}
		});
	}

	private _setBusy(busy: boolean, message: string): void {
		this._busyMessage = message;
		this._onDidChange.fire({ kind: 'busy', busy, message });
	}
}
