/**
 * The diagnostics panel: a WebviewPanel with a strict CSP that shows the last report. The webview asks for its
 * state with `ready`; the host never posts before that (a hidden-then-shown webview asks again). Every incoming
 * message is validated with `asFromWebviewEnvelope`; anything else is logged and ignored.
 */
import * as crypto from 'node:crypto';
import * as vscode from 'vscode';
import { escapeHtml } from '../shared/htmlEscape';
import { toolbarAndContent, webviewHtml } from '../shared/webviewHtml';
import {
	asFromWebviewEnvelope, MessageHandler, type FromWebviewMessage, type ReadyResponse, type ToWebviewMessage,
} from '../shared/protocol';
import type { RenderStrings } from '../shared/render';
import type { Logger } from '../core/logger';
import { Disposable } from './dispose';
import type { InspectionChange, InspectionService } from './inspectionService';

/** The panel's view type (also what a future serializer registers). */
export const DIAGNOSTICS_VIEW_TYPE = 'gpumpiDoctor.diagnostics';

/** The single diagnostics panel of this window. */
export class DiagnosticsPanel extends Disposable {
	private static _current: DiagnosticsPanel | undefined;
	private _ready = false;
	private readonly _rpc: MessageHandler<ToWebviewMessage, FromWebviewMessage>;

	/** Show the panel (creating it when needed). */
	static show(extensionUri: vscode.Uri, service: InspectionService, log: Logger): DiagnosticsPanel {
		if (DiagnosticsPanel._current) {
			DiagnosticsPanel._current._panel.reveal(undefined, true);
			return DiagnosticsPanel._current;
		}
		const panel = vscode.window.createWebviewPanel(DIAGNOSTICS_VIEW_TYPE, vscode.l10n.t('GPU-MPI Doctor'),
			{ viewColumn: vscode.ViewColumn.Active, preserveFocus: false }, {
				enableScripts: true,
				enableCommandUris: false,
				localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist'), vscode.Uri.joinPath(extensionUri, 'media')],
			});
		DiagnosticsPanel._current = new DiagnosticsPanel(panel, extensionUri, service, log);
		return DiagnosticsPanel._current;
	}

	/** The open panel, if any (tests). */
	static get current(): DiagnosticsPanel | undefined { return DiagnosticsPanel._current; }

	private constructor(
		private readonly _panel: vscode.WebviewPanel,
		private readonly _extensionUri: vscode.Uri,
		private readonly _service: InspectionService,
		private readonly _log: Logger,
	) {
		super();
		this._rpc = new MessageHandler<ToWebviewMessage, FromWebviewMessage>(
			env => { void this._panel.webview.postMessage(env); },
			msg => this._onMessage(msg),
		);
		this._register(this._panel.onDidDispose(() => this.dispose()));
		this._register(this._panel.onDidChangeViewState(e => {
			// A hidden webview loses its content; it will send `ready` again when shown.
			if (!e.webviewPanel.visible) { this._ready = false; }
		}));
		this._register(this._panel.webview.onDidReceiveMessage((raw: unknown) => {
			const env = asFromWebviewEnvelope(raw);
			if (!env) {
				this._log.warn(`ignored malformed message from the webview: ${safePreview(raw)}`);
				return;
			}
			void this._rpc.handleMessage(env);
		}));
		this._register(this._service.onDidChange(change => this._onServiceChange(change)));
		this._panel.webview.html = this._html();
	}

	/** Whether the webview has sent `ready` since it was (re)loaded. */
	get isReady(): boolean { return this._ready; }

	override dispose(): void {
		if (DiagnosticsPanel._current === this) { DiagnosticsPanel._current = undefined; }
		super.dispose();
		this._panel.dispose();
	}

	private async _onMessage(msg: FromWebviewMessage): Promise<unknown> {
		switch (msg.type) {
			case 'ready': {
				this._ready = true;
				const reply: ReadyResponse = { type: 'readyResponse', report: this._service.lastReport ?? null, busy: this._service.busy };
				return reply;
			}
			case 'copy':
				await vscode.env.clipboard.writeText(msg.text);
				this._log.debug(`copied ${msg.text.length} characters to the clipboard`);
				return undefined;
			case 'rerun':
				void vscode.commands.executeCommand('gpumpiDoctor.inspectHost');
				return undefined;
		}
	}

	private _onServiceChange(change: InspectionChange): void {
		if (!this._ready) { return; } // never post before `ready`; the ReadyResponse carries the state
		if (change.kind === 'report') {
			this._rpc.sendEvent({ type: 'showReport', report: change.report });
		} else {
			this._rpc.sendEvent({ type: 'busy', busy: change.busy, message: change.message });
		}
	}

	private _html(): string {
		const webview = this._panel.webview;
		return webviewHtml({
			cspSource: webview.cspSource,
			nonce: crypto.randomBytes(18).toString('base64url'),
			scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(this._extensionUri, 'dist', 'panel.js')).toString(),
			styleUri: webview.asWebviewUri(vscode.Uri.joinPath(this._extensionUri, 'dist', 'panel.css')).toString(),
			lang: vscode.env.language,
			title: vscode.l10n.t('GPU-MPI Doctor'),
			bodyAttributes: { 'data-strings': JSON.stringify(panelStrings()) },
			bodyHtml: toolbarAndContent(`<button type="button" id="rerun">${escapeHtml(vscode.l10n.t('Re-run'))}</button>`, vscode.l10n.t('Loading…')),
		});
	}
}

function safePreview(raw: unknown): string {
	try { return JSON.stringify(raw)?.slice(0, 200) ?? String(raw); } catch { return typeof raw; }
}

/** Localised strings handed to the webview as data (`<body data-strings>`), never as script. */
function panelStrings(): RenderStrings & { rerun: string; copied: string; waiting: string; copyFailed: string } {
	// Placeholders are passed through as themselves so the renderer fills them in later.
	const t = (message: string, ...args: string[]): string => vscode.l10n.t(message, ...args);
	return {
		title: t('GPU-MPI Doctor'),
		host: t('Host'),
		mpi: t('MPI'),
		cudaAware: t('CUDA-aware'),
		ucx: t('UCX'),
		ucxCuda: t('CUDA transports'),
		cudaDriver: t('CUDA driver'),
		gpus: t('GPUs'),
		noGpus: t('No GPU reported'),
		findings: t('Findings'),
		noFindings: t('No findings.'),
		severityError: t('Errors'),
		severityWarning: t('Warnings'),
		severityInfo: t('Information'),
		evidence: t('Evidence'),
		fix: t('Fix'),
		copy: t('Copy'),
		source: t('Source'),
		rawOutputs: t('Raw tool outputs'),
		exitCode: t('exit code {0}', '{0}'),
		notStarted: t('did not run: {0}', '{0}'),
		duration: t('{0} ms', '{0}'),
		notes: t('Notes'),
		stdout: t('stdout'),
		stderr: t('stderr'),
		empty: t('(empty)'),
		yes: t('yes'),
		no: t('no'),
		unknown: t('unknown'),
		createdLine: t('Created {0} by {1} {2} in {3} ms', '{0}', '{1}', '{2}', '{3}'),
		rerun: t('Re-run'),
		copied: t('Copied'),
		waiting: t('No report yet. Run "GPU-MPI: Inspect Host".'),
		copyFailed: t('Copy failed'),
	};
}
