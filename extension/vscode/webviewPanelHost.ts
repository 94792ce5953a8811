/**
 * What every panel of the extension does the same way, written once: a WebviewPanel with the strict CSP shell
 * (shared/webviewHtml.ts) loading one bundle from dist/, the `ready` handshake (the webview asks for its state; the
 * host never posts before, and a hidden webview loses its content and asks again when shown), every incoming message
 * checked by the protocol's validator (anything else is logged and ignored), requests answered by one typed handler
 * per request type (a throw becomes an error reply), and localised strings handed over as data (`<body data-strings>`).
 * The panels (diagnosticsPanel.ts, reproPanel.ts, transportMapPanel.ts) keep only what they show.
 */
import * as crypto from 'node:crypto';
import * as vscode from 'vscode';
import type { Logger } from '../core/logger';
import { webviewHtml } from '../shared/webviewHtml';
import { MessageHandler, type ProtocolValidator, type RequestHandlers, type RequestMap, type RequestOf } from '../shared/webviewRpc';
import { Disposable } from './dispose';

/** The requests every protocol has: `ready`, answered with the webview's state. */
export type ReadyRequests = RequestMap & { ready: { request: { type: 'ready' }; reply: unknown } };

/** What makes one panel. */
export interface WebviewPanelSpec<ToWebview, M extends ReadyRequests> {
	viewType: string;
	/** Tab title (localised). */
	title: string;
	/** The bundle under dist/: `<bundle>.js` and `<bundle>.css`. */
	bundle: string;
	/** What log lines call the webview, e.g. "reproducer webview". */
	what: string;
	protocol: ProtocolValidator<ToWebview, M>;
	/** One handler per request type; `ready`'s reply carries everything the webview shows. */
	handlers: RequestHandlers<M>;
	/** The body before the script runs (toolbarAndContent or a <main>); already escaped. */
	bodyHtml: string;
	/** Localised strings for the webview, handed over as `<body data-strings>` JSON (never as script). */
	strings?: object;
	/** Extra img-src sources (e.g. 'data:' for PNG export). */
	imgSources?: string[];
	/** Folders besides dist/ the webview may load from. */
	extraResourceRoots?: string[];
	preserveFocus?: boolean;
}

/** One webview panel speaking protocol `M` (requests from the webview) and `ToWebview` (events to it). */
export class WebviewPanelHost<ToWebview, M extends ReadyRequests> extends Disposable {
	private _ready = false;
	private readonly _panel: vscode.WebviewPanel;
	private readonly _rpc: MessageHandler<ToWebview, RequestOf<M>>;
	private readonly _onDidDispose = new vscode.EventEmitter<void>();
	/** Fires once, when the panel is closed or disposed. */
	readonly onDidDispose = this._onDidDispose.event;

	constructor(extensionUri: vscode.Uri, private readonly _log: Logger, private readonly _spec: WebviewPanelSpec<ToWebview, M>) {
		super();
		this._panel = vscode.window.createWebviewPanel(_spec.viewType, _spec.title,
			{ viewColumn: vscode.ViewColumn.Active, preserveFocus: _spec.preserveFocus ?? false }, {
				enableScripts: true,
				enableCommandUris: false,
				retainContextWhenHidden: false,
				localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist'), ...(_spec.extraResourceRoots ?? []).map(d => vscode.Uri.joinPath(extensionUri, d))],
			});
		this._rpc = new MessageHandler<ToWebview, RequestOf<M>>(env => { void this._panel.webview.postMessage(env); }, msg => this._onRequest(msg));
		this._register(this._panel.onDidDispose(() => this.dispose()));
		this._register(this._panel.onDidChangeViewState(e => {
			// A hidden webview loses its content; it sends `ready` again when shown.
			if (!e.webviewPanel.visible) { this._ready = false; }
		}));
		this._register(this._panel.webview.onDidReceiveMessage((raw: unknown) => {
			const env = _spec.protocol.fromWebview(raw);
			if (!env) { this._log.warn(`ignored malformed message from the ${_spec.what}: ${preview(raw)}`); return; }
			void this._rpc.handleMessage(env);
		}));
		this._panel.webview.html = this._html(extensionUri);
	}

	/** Whether the webview has sent `ready` since it was (re)loaded. */
	get isReady(): boolean { return this._ready; }

	/** Post an event when the webview is ready; returns whether it was posted (before `ready`, the ready reply carries the state). */
	post(msg: ToWebview): boolean {
		if (!this._ready) { return false; }
		this._rpc.sendEvent(msg);
		return true;
	}

	/** Bring the panel to the front without taking focus. */
	reveal(): void { this._panel.reveal(undefined, true); }

	override dispose(): void {
		if (this.isDisposed) { return; }
		super.dispose();
		this._panel.dispose();
		this._onDidDispose.fire();
		this._onDidDispose.dispose();
	}

	private _onRequest(msg: RequestOf<M>): unknown {
		const type = msg.type as keyof M;
		if (type === 'ready') { this._ready = true; }
		const handler = this._spec.handlers[type] as (request: RequestOf<M>) => unknown;
		return handler(msg);
	}

	private _html(extensionUri: vscode.Uri): string {
		const webview = this._panel.webview;
		const dist = (file: string): string => webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', file)).toString();
		return webviewHtml({
			cspSource: webview.cspSource,
			nonce: crypto.randomBytes(18).toString('base64url'),
			scriptUri: dist(`${this._spec.bundle}.js`),
			styleUri: dist(`${this._spec.bundle}.css`),
			lang: vscode.env.language,
			title: this._spec.title,
			...(this._spec.imgSources ? { imgSources: this._spec.imgSources } : {}),
			...(this._spec.strings ? { bodyAttributes: { 'data-strings': JSON.stringify(this._spec.strings) } } : {}),
			bodyHtml: this._spec.bodyHtml,
		});
	}
}

function preview(raw: unknown): string {
	try { return JSON.stringify(raw)?.slice(0, 200) ?? typeof raw; } catch { return typeof raw; }
}
