/**
 * The reproducer results panel: a WebviewPanel with a strict CSP (extension/shared/webviewHtml.ts) showing IPC and
 * fallback reports. The webview asks for its state with `ready`; the host never posts before that. Incoming messages
 * are validated with asFromReproWebviewEnvelope. "Copy as bug report" builds the Markdown here (bugReport.ts).
 */
import * as crypto from 'node:crypto';
import * as vscode from 'vscode';
import type { Report } from '../shared/report';
import { MessageHandler } from '../shared/protocol';
import { escapeHtml } from '../shared/htmlEscape';
import { toolbarAndContent, webviewHtml } from '../shared/webviewHtml';
import {
	asFromReproWebviewEnvelope, type CopyBugReportResponse, type FromReproWebviewMessage, type ReproPanelData,
	type ReproReadyResponse, type ToReproWebviewMessage,
} from '../shared/reproProtocol';
import { core } from './lazyCore';
import type { Logger } from '../core/logger';
import { Disposable } from './dispose';

/** The panel's view type. */
export const REPRO_VIEW_TYPE = 'gpumpiDoctor.repro';

/** What tests can observe: whether the webview said ready and which results reached it. */
export interface ReproPanelState {
	ready: boolean;
	/** The source line of the last results posted to a ready webview, or null. */
	delivered: string | null;
	ipcVariants: number;
	fallbackConfigs: number;
	busy: boolean;
}

/** The single reproducer panel of this window. */
export class ReproPanel extends Disposable {
	private static _current: ReproPanel | undefined;
	private _ready = false;
	private _data: ReproPanelData | null = null;
	private _outputs: Record<string, string> = {};
	private _delivered: ReproPanelData | null = null;
	private _busy = false;
	private readonly _rpc: MessageHandler<ToReproWebviewMessage, FromReproWebviewMessage>;

	/** Show the panel (creating it when needed). */
	static show(extensionUri: vscode.Uri, log: Logger, inspectReport: () => Report | undefined): ReproPanel {
		if (ReproPanel._current) {
			ReproPanel._current._panel.reveal(undefined, true);
			return ReproPanel._current;
		}
		const panel = vscode.window.createWebviewPanel(REPRO_VIEW_TYPE, vscode.l10n.t('GPU-MPI Reproducer'),
			{ viewColumn: vscode.ViewColumn.Active, preserveFocus: false }, {
				enableScripts: true,
				enableCommandUris: false,
				retainContextWhenHidden: false,
				localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist')],
			});
		ReproPanel._current = new ReproPanel(panel, extensionUri, log, inspectReport);
		return ReproPanel._current;
	}

	/** The open panel, if any. */
	static get current(): ReproPanel | undefined { return ReproPanel._current; }

	private constructor(
		private readonly _panel: vscode.WebviewPanel,
		private readonly _extensionUri: vscode.Uri,
		private readonly _log: Logger,
		private readonly _inspectReport: () => Report | undefined,
	) {
		super();
		this._rpc = new MessageHandler<ToReproWebviewMessage, FromReproWebviewMessage>(
			env => { void this._panel.webview.postMessage(env); },
			msg => this._onMessage(msg),
		);
		this._register(this._panel.onDidDispose(() => this.dispose()));
		this._register(this._panel.onDidChangeViewState(e => { if (!e.webviewPanel.visible) { this._ready = false; } }));
		this._register(this._panel.webview.onDidReceiveMessage((raw: unknown) => {
			const env = asFromReproWebviewEnvelope(raw);
			if (!env) {
				let preview: string;
				try { preview = JSON.stringify(raw)?.slice(0, 200) ?? typeof raw; } catch { preview = typeof raw; }
				this._log.warn(`ignored malformed message from the reproducer webview: ${preview}`);
				return;
			}
			void this._rpc.handleMessage(env);
		}));
		const webview = this._panel.webview;
		this._panel.webview.html = webviewHtml({
			cspSource: webview.cspSource,
			nonce: crypto.randomBytes(18).toString('base64url'),
			scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(this._extensionUri, 'dist', 'repro.js')).toString(),
			styleUri: webview.asWebviewUri(vscode.Uri.joinPath(this._extensionUri, 'dist', 'repro.css')).toString(),
			lang: vscode.env.language,
			title: vscode.l10n.t('GPU-MPI Reproducer'),
			bodyHtml: toolbarAndContent(`<button type="button" id="copy-bug-report" disabled>${escapeHtml(vscode.l10n.t('Copy as bug report'))}</button>`, vscode.l10n.t('Loading…')),
		});
	}

	/** Test hook / status. */
	get state(): ReproPanelState {
		return {
			ready: this._ready, delivered: this._delivered?.source ?? null, busy: this._busy,
			ipcVariants: this._delivered?.ipc?.variants.length ?? 0, fallbackConfigs: this._delivered?.fallback.length ?? 0,
		};
	}

	/** Show new results (raw outputs, when known, feed the bug report's backtrace). */
	setResults(data: ReproPanelData, outputs: Record<string, string> = {}): void {
		this._data = data;
		this._outputs = outputs;
		if (this._ready) {
			this._rpc.sendEvent({ type: 'showRepro', data });
			this._delivered = data;
		}
	}

	/** A run started / progressed / stopped. */
	setBusy(busy: boolean, message: string): void {
		this._busy = busy;
		if (this._ready) { this._rpc.sendEvent({ type: 'reproBusy', busy, message }); }
	}

	/** The Markdown bug report of the shown results. */
	bugReport(): string {
		if (!this._data) { throw new Error(vscode.l10n.t('No reproducer results to report yet.')); }
		return core().bugReportMarkdown({ ipc: this._data.ipc, fallback: this._data.fallback, inspect: this._inspectReport() ?? null, outputs: this._outputs, source: this._data.source });
	}

	override dispose(): void {
		if (ReproPanel._current === this) { ReproPanel._current = undefined; }
		super.dispose();
		this._panel.dispose();
	}

	private async _onMessage(msg: FromReproWebviewMessage): Promise<unknown> {
		switch (msg.type) {
			case 'ready': {
				this._ready = true;
				if (this._data) { this._delivered = this._data; }
				const reply: ReproReadyResponse = { type: 'reproReadyResponse', data: this._data, busy: this._busy };
				return reply;
			}
			case 'copyBugReport': {
				const md = this.bugReport();
				await vscode.env.clipboard.writeText(md);
				this._log.info(`copied a ${md.length}-character bug report to the clipboard`);
				const reply: CopyBugReportResponse = { type: 'copyBugReportResponse', chars: md.length };
				return reply;
			}
			case 'copy':
				await vscode.env.clipboard.writeText(msg.text);
				return undefined;
		}
	}
}
