/**
 * The reproducer results panel: shows IPC and fallback reports (WebviewPanelHost: strict CSP, `ready` handshake,
 * every message validated by REPRO_PROTOCOL). "Copy as bug report" builds the Markdown here (bugReport.ts).
 */
import * as vscode from 'vscode';
import type { Report } from '../shared/report';
import { escapeHtml } from '../shared/htmlEscape';
import { toolbarAndContent } from '../shared/webviewHtml';
import { REPRO_PROTOCOL, type ReproPanelData, type ReproRequests, type ReproStrings, type ToReproWebviewMessage } from '../shared/reproProtocol';
import { core } from './lazyCore';
import type { Logger } from '../core/logger';
import { Disposable } from './dispose';
import { WebviewPanelHost } from './webviewPanelHost';

/** The panel's view type. */
export const REPRO_VIEW_TYPE = 'gpumpiDoctor.repro';

/** What tests can observe: whether the webview said ready and which results reached it. */
export interface ReproPanelState {
	ready: boolean;
	/** The source line of the last results posted to a ready webview, or null. */
	delivered: string | null;
	ipcVariants: number;
	/** Trials of every ipc variant together. */
	ipcTrials: number;
	fallbackConfigs: number;
	busy: boolean;
	/** "config\0variant\0trial" of the last trial log opened from the webview, or null. */
	lastOpenedLog: string | null;
	/** Per delivered fallback configuration, each tried UCX setting's row: "config: NAME=VALUE ok/launched". */
	ucxSettings: string[];
}

/** The single reproducer panel of this window. */
export class ReproPanel extends Disposable {
	private static _current: ReproPanel | undefined;
	private _data: ReproPanelData | null = null;
	/** The host the shown results ran on (null: opened from a file); the bug report takes that host's inspection only. */
	private _hostKey: string | null = null;
	private _outputs: Record<string, string> = {};
	private _delivered: ReproPanelData | null = null;
	private _busy = false;
	private readonly _host: WebviewPanelHost<ToReproWebviewMessage, ReproRequests>;
	private _lastOpenedLog: string | null = null;

	/** Show the panel (creating it when needed). */
	static show(extensionUri: vscode.Uri, log: Logger, inspectReport: (hostKey: string) => Report | undefined): ReproPanel {
		if (ReproPanel._current) {
			ReproPanel._current._host.reveal();
			return ReproPanel._current;
		}
		ReproPanel._current = new ReproPanel(extensionUri, log, inspectReport);
		return ReproPanel._current;
	}

	/** The open panel, if any. */
	static get current(): ReproPanel | undefined { return ReproPanel._current; }

	private constructor(extensionUri: vscode.Uri, private readonly _log: Logger, private readonly _inspectReport: (hostKey: string) => Report | undefined) {
		super();
		this._host = this._register(new WebviewPanelHost<ToReproWebviewMessage, ReproRequests>(extensionUri, _log, {
			viewType: REPRO_VIEW_TYPE,
			title: vscode.l10n.t('GPU-MPI Reproducer'),
			bundle: 'repro',
			what: 'reproducer webview',
			protocol: REPRO_PROTOCOL,
			strings: reproStrings(),
			bodyHtml: toolbarAndContent(`<button type="button" id="copy-bug-report" disabled>${escapeHtml(vscode.l10n.t('Copy as bug report'))}</button>`
				+ ` <button type="button" id="save-results" disabled>${escapeHtml(vscode.l10n.t('Save…'))}</button>`, vscode.l10n.t('Loading…')),
			handlers: {
				ready: () => {
					if (this._data) { this._delivered = this._data; }
					return { type: 'reproReadyResponse', data: this._data, busy: this._busy };
				},
				copyBugReport: async () => {
					const md = this.bugReport();
					await vscode.env.clipboard.writeText(md);
					this._log.info(`copied a ${md.length}-character bug report to the clipboard`);
					return { type: 'copyBugReportResponse', chars: md.length };
				},
				copy: async msg => { await vscode.env.clipboard.writeText(msg.text); },
				saveResults: async () => { await vscode.commands.executeCommand('gpumpiDoctor.saveReproResult'); },
				openExample: async () => {
					// Shipped in the .vsix (.vscodeignore: !native/examples/**); opened read-only as the user's copy source.
					const uri = vscode.Uri.joinPath(extensionUri, 'native', 'examples', 'staged_exchange.c');
					const doc = await vscode.workspace.openTextDocument(uri);
					await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
				},
				openTrialLog: async msg => {
					const text = this.trialLog(msg.config, msg.variant, msg.trial);
					if (text === null) { throw new Error(vscode.l10n.t('No trial {0} of {1} under {2} in the shown results.', msg.trial, msg.variant, msg.config)); }
					const doc = await vscode.workspace.openTextDocument({ content: text, language: 'log' });
					await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
					this._lastOpenedLog = `${msg.config}\u0000${msg.variant}\u0000${msg.trial}`;
				},
			},
		}));
		this._register(this._host.onDidDispose(() => this.dispose()));
	}

	/** Test hook / status. */
	get state(): ReproPanelState {
		return {
			ready: this._host.isReady, delivered: this._delivered?.source ?? null, busy: this._busy,
			ipcVariants: this._delivered?.ipc?.variants.length ?? 0, fallbackConfigs: this._delivered?.fallback.length ?? 0,
			ipcTrials: this._delivered?.ipc?.variants.reduce((n, v) => n + v.runs.length, 0) ?? 0, lastOpenedLog: this._lastOpenedLog,
			ucxSettings: (this._delivered?.fallback ?? []).flatMap(f => (f.ranking?.ucxSettings ?? []).map(u => `${f.config}: ${u.setting} ${u.ok}/${u.launched}`)),
		};
	}

	/** Show new results (raw outputs, when known, feed the bug report's backtrace). */
	setResults(data: ReproPanelData, outputs: Record<string, string> = {}, hostKey: string | null = null): void {
		this._hostKey = hostKey;
		this._data = data;
		this._outputs = outputs;
		if (this._host.post({ type: 'showRepro', data })) { this._delivered = data; }
	}

	/** A run started / progressed / stopped. */
	setBusy(busy: boolean, message: string): void {
		this._busy = busy;
		this._host.post({ type: 'reproBusy', busy, message });
	}

	/** The text opened for one trial: what was run, its outcome, and its raw output; null when there is no such trial. */
	trialLog(config: string, variant: string, trial: number): string | null {
		const run = this._data?.ipc?.variants.find(v => v.config === config && v.variant === variant)?.runs.find(r => r.trial === trial);
		if (!run) { return null; }
		const sigs = run.signatures.map(h => `  ${h.id}: ${h.line}`);
		return [`# ${variant} under ${config}: trial ${trial} — ${run.outcome}`, `# ${run.detail}`, `# command: ${run.command.join(' ')}`,
			`# exit status ${run.exitCode ?? 'none'}, ${(run.durationMs / 1000).toFixed(1)} s`, ...(sigs.length ? ['# failure signatures:', ...sigs.map(l => `#${l}`)] : []), '', run.log || '(no output)'].join('\n') + '\n';
	}

	/** The shown results as one file "Open Reproducer Result…" reads back (core/repro/reproFile.ts REPRO_RESULTS_SCHEMA). */
	/** The results shown now (null before any). */
	data(): ReproPanelData | null { return this._data; }

	resultsJson(): string {
		if (!this._data) { throw new Error(vscode.l10n.t('No reproducer results to save yet.')); }
		return `${JSON.stringify(core().reproResultsDocument(this._data), null, 2)}\n`;
	}

	/** The Markdown bug report of the shown results. */
	bugReport(): string {
		if (!this._data) { throw new Error(vscode.l10n.t('No reproducer results to report yet.')); }
		// One host per report: the inspection of the host the results ran on, never another host's (a saved result: none).
		const inspect = this._hostKey === null ? null : this._inspectReport(this._hostKey) ?? null;
		return core().bugReportMarkdown({ ipc: this._data.ipc, fallback: this._data.fallback, inspect, outputs: this._outputs, source: this._data.source });
	}

	override dispose(): void {
		if (ReproPanel._current === this) { ReproPanel._current = undefined; }
		super.dispose();
	}
}

/** Localised strings of the reproducer webview, handed over as data (`<body data-strings>`). */
function reproStrings(): ReproStrings {
	const t = (message: string, ...args: string[]): string => vscode.l10n.t(message, ...args);
	return {
		noResults: t('No results yet. Run "GPU-MPI: Run IPC-Pointer Reproducer", "GPU-MPI: Run Fallback Reproducer" or "GPU-MPI: Open Reproducer Result…".'),
		running: t('Running: the results appear here when the run ends (its progress is in the notification and the GPU-MPI Doctor log).'),
		copiedChars: t('Copied ({0} characters)', '{0}'),
		copyFailedBecause: t('Copy failed: {0}', '{0}'),
		copied: t('Copied'),
		copyFailed: t('Copy failed'),
	};
}
