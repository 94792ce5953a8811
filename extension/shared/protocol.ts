/**
 * Typed messages between the extension host and the diagnostics webview, plus a tiny RPC layer
 * (events, requests matched to replies by id, and error replies so rejections reach the caller).
 */
import type { Report } from './report';

// #region to webview
/** The host has a (new) report to show. */
export interface ShowReportMessage { type: 'showReport'; report: Report }
/** Collection started/stopped; `message` says what is running. */
export interface BusyMessage { type: 'busy'; busy: boolean; message: string }
export type ToWebviewMessage = ShowReportMessage | BusyMessage;
// #endregion

// #region from webview
/** Sent once the webview's script has loaded; the host answers with the current state and never posts before. */
export interface ReadyRequest { type: 'ready' }
/** Reply to ReadyRequest. */
export interface ReadyResponse { type: 'readyResponse'; report: Report | null; busy: boolean }
/** Ask the host to put text on the clipboard (fix commands, evidence). */
export interface CopyRequest { type: 'copy'; text: string }
/** Ask the host to run the inspection again. */
export interface RerunRequest { type: 'rerun' }
export type FromWebviewMessage = ReadyRequest | CopyRequest | RerunRequest;
// #endregion

/** Envelope on the wire. */
export type Envelope<T> =
	| { kind: 'event'; body: T }
	| { kind: 'request'; id: number; body: T }
	| { kind: 'reply'; inReplyTo: number; body?: unknown; error?: string };

const MESSAGE_TYPES_FROM_WEBVIEW = new Set<FromWebviewMessage['type']>(['ready', 'copy', 'rerun']);

/**
 * Validate the envelope frame of something received over postMessage and let `validBody` judge the body (which has
 * a string `type`). Returns null for anything unexpected. Every webview's validator is built on this.
 */
export function asEnvelope<T>(raw: unknown, validBody: (body: Record<string, unknown>) => boolean): Envelope<T> | null {
	if (typeof raw !== 'object' || raw === null) { return null; }
	const env = raw as Record<string, unknown>;
	if (env.kind === 'reply') {
		return typeof env.inReplyTo === 'number' ? (env as unknown as Envelope<T>) : null;
	}
	if (env.kind !== 'event' && env.kind !== 'request') { return null; }
	if (env.kind === 'request' && typeof env.id !== 'number') { return null; }
	const body = env.body as Record<string, unknown> | undefined;
	if (typeof body !== 'object' || body === null || typeof body.type !== 'string') { return null; }
	return validBody(body) ? (env as unknown as Envelope<T>) : null;
}

/** Validate something that claims to be a message from the webview. Returns null for anything unexpected. */
export function asFromWebviewEnvelope(raw: unknown): Envelope<FromWebviewMessage> | null {
	return asEnvelope<FromWebviewMessage>(raw, body => {
		if (!MESSAGE_TYPES_FROM_WEBVIEW.has(body.type as FromWebviewMessage['type'])) { return false; }
		return !(body.type === 'copy' && (typeof body.text !== 'string' || body.text.length > 1_000_000));
	});
}

/**
 * Generic RPC over a postMessage-like channel. `TOut` is what this side sends, `TIn` what it receives.
 * The handler's return value becomes the reply; a thrown error becomes an error reply.
 */
export class MessageHandler<TOut, TIn> {
	private _nextId = 1;
	private readonly _pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

	constructor(
		private readonly _post: (env: Envelope<TOut>) => void,
		public handler: (msg: TIn) => Promise<unknown> | unknown,
	) {}

	/** Fire-and-forget. */
	sendEvent(body: TOut): void {
		this._post({ kind: 'event', body });
	}

	/** Send a request and wait for its reply (rejects on an error reply). */
	sendRequest<R>(body: TOut): Promise<R> {
		const id = this._nextId++;
		return new Promise<R>((resolve, reject) => {
			this._pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
			this._post({ kind: 'request', id, body });
		});
	}

	/** Feed every incoming envelope here. */
	async handleMessage(env: Envelope<TIn>): Promise<void> {
		if (env.kind === 'reply') {
			const p = this._pending.get(env.inReplyTo);
			if (!p) { return; }
			this._pending.delete(env.inReplyTo);
			if (env.error !== undefined) { p.reject(new Error(env.error)); } else { p.resolve(env.body); }
			return;
		}
		if (env.kind === 'event') {
			try { await this.handler(env.body); } catch { /* events have no reply path */ }
			return;
		}
		try {
			const body = await this.handler(env.body);
			(this._post as (e: Envelope<unknown>) => void)({ kind: 'reply', inReplyTo: env.id, body });
		} catch (e) {
			(this._post as (e: Envelope<unknown>) => void)({ kind: 'reply', inReplyTo: env.id, error: e instanceof Error ? e.message : String(e) });
		}
	}
}
