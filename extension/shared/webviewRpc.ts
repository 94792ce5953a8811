/**
 * The typed RPC every webview protocol is carried by (habit 2 and 3 of STYLE.md): events each way, requests from the
 * webview matched to replies by id, error replies so a rejection reaches the caller, and one request→reply map per
 * protocol so each request's reply type is known on both sides. Every message received on either side passes the
 * protocol's validator first (ProtocolValidator). No vscode, no DOM: the host (extension/vscode/webviewPanelHost.ts)
 * and the webviews (each media/<webview>/main.ts, through WebviewClient) both use it.
 */

/** Envelope on the wire. */
export type Envelope<T> =
	| { kind: 'event'; body: T }
	| { kind: 'request'; id: number; body: T }
	| { kind: 'reply'; inReplyTo: number; body?: unknown; error?: string };

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

/** A webview's requests by type: for each request `type`, the request and what the host replies. */
export type RequestMap = Record<string, { request: { type: string }; reply: unknown }>;

/** The union of a protocol's requests. */
export type RequestOf<M extends RequestMap> = M[keyof M]['request'];

/** The host's handlers, one per request type, each returning that request's reply (a throw is an error reply). */
export type RequestHandlers<M extends RequestMap> = { [K in keyof M]: (request: M[K]['request']) => M[K]['reply'] | Promise<M[K]['reply']> };

/** One protocol's validators, the same on both sides: the host checks what the webview sends, the webview the host's. */
export interface ProtocolValidator<ToWebview, M extends RequestMap> {
	/** A message received by the host; null for anything unexpected. */
	fromWebview(raw: unknown): Envelope<RequestOf<M>> | null;
	/** A message received by the webview (events by their shape; replies by their frame); null for anything unexpected. */
	toWebview(raw: unknown): Envelope<ToWebview> | null;
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

/**
 * The webview side of a protocol: typed requests (`request({ type: 'ready' })` resolves to the ready reply's type),
 * the host's events handed to `onEvent`, and every incoming message validated (`receive` drops what fails).
 */
export class WebviewClient<ToWebview, M extends RequestMap> {
	private readonly _rpc: MessageHandler<RequestOf<M>, ToWebview>;

	constructor(post: (message: unknown) => void, private readonly _protocol: ProtocolValidator<ToWebview, M>, onEvent: (msg: ToWebview) => void) {
		this._rpc = new MessageHandler<RequestOf<M>, ToWebview>(post, msg => { onEvent(msg); });
	}

	/** Ask the host; resolves to the reply of that request type, rejects on an error reply. */
	request<T extends keyof M & string>(body: M[T]['request'] & { type: T }): Promise<M[T]['reply']> {
		return this._rpc.sendRequest<M[T]['reply']>(body);
	}

	/** Feed every `message` event's data here; returns false (and does nothing) when it fails validation. */
	receive(raw: unknown): boolean {
		const env = this._protocol.toWebview(raw);
		if (!env) { return false; }
		void this._rpc.handleMessage(env);
		return true;
	}
}
