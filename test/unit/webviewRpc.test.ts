/**
 * The webview RPC of extension/shared/webviewRpc.ts: a WebviewClient and a host-side MessageHandler wired back to back
 * (the same classes the panels and webviews use; only the postMessage channel is a direct call here), every
 * protocol's validator on both directions, and the strings handed over as data.
 */
import * as assert from 'node:assert/strict';
import { MAP_PROTOCOL } from '../../extension/shared/mapProtocol';
import { PANEL_PROTOCOL, type PanelRequests, type ToWebviewMessage } from '../../extension/shared/protocol';
import { REPRO_PROTOCOL } from '../../extension/shared/reproProtocol';
import { MessageHandler, WebviewClient, type RequestOf } from '../../extension/shared/webviewRpc';
import { fill, readStrings } from '../../extension/shared/webviewStrings';

describe('webview RPC', () => {
	/** A host answering the diagnostics protocol, and a client; `toClient` is what the client received, unfiltered. */
	function pair(onRequest: (msg: RequestOf<PanelRequests>) => unknown): { client: WebviewClient<ToWebviewMessage, PanelRequests>; host: MessageHandler<ToWebviewMessage, RequestOf<PanelRequests>>; events: ToWebviewMessage[]; dropped: unknown[] } {
		const events: ToWebviewMessage[] = [];
		const dropped: unknown[] = [];
		let client: WebviewClient<ToWebviewMessage, PanelRequests> | undefined;
		const host = new MessageHandler<ToWebviewMessage, RequestOf<PanelRequests>>(env => { if (!client?.receive(env)) { dropped.push(env); } }, onRequest);
		client = new WebviewClient<ToWebviewMessage, PanelRequests>(raw => {
			const env = PANEL_PROTOCOL.fromWebview(raw);
			if (env) { void host.handleMessage(env); } else { dropped.push(raw); }
		}, PANEL_PROTOCOL, msg => events.push(msg));
		return { client, host, events, dropped };
	}

	it('a request resolves to its reply, an error reply rejects with the message', async () => {
		const { client } = pair(msg => {
			if (msg.type === 'copy') { throw new Error('clipboard unavailable'); }
			return msg.type === 'ready' ? { type: 'readyResponse', report: null, busy: true } : undefined;
		});
		const ready = await client.request({ type: 'ready' });
		assert.deepEqual(ready, { type: 'readyResponse', report: null, busy: true });
		await assert.rejects(client.request({ type: 'copy', text: 'x' }), /clipboard unavailable/);
	});

	it('the client hands valid events on and drops malformed ones', () => {
		const { client, host, events } = pair(() => undefined);
		host.sendEvent({ type: 'busy', busy: true, message: 'running' });
		assert.equal(client.receive({ kind: 'event', body: { type: 'busy', busy: 'yes', message: 'x' } }), false);
		assert.equal(client.receive({ kind: 'event', body: { type: 'showReport', report: null } }), false);
		assert.equal(client.receive('showReport'), false);
		assert.deepEqual(events, [{ type: 'busy', busy: true, message: 'running' }]);
	});

	it('every protocol checks both directions', () => {
		assert.ok(PANEL_PROTOCOL.toWebview({ kind: 'event', body: { type: 'showReport', report: {} } }));
		assert.equal(PANEL_PROTOCOL.fromWebview({ kind: 'request', id: 1, body: { type: 'copy', text: 1 } }), null);
		assert.ok(REPRO_PROTOCOL.toWebview({ kind: 'event', body: { type: 'reproBusy', busy: false, message: '' } }));
		assert.equal(REPRO_PROTOCOL.fromWebview({ kind: 'request', id: 1, body: { type: 'showRepro' } }), null);
		const overview = { hosts: [], rankHost: new Int32Array(0), failedCells: [], layers: [], header: {}, counts: {} };
		assert.ok(MAP_PROTOCOL.toWebview({ kind: 'event', body: { type: 'showMap', overview, map: { pairs: [], ranks: [] }, source: 'run' } }));
		assert.ok(MAP_PROTOCOL.toWebview({ kind: 'event', body: { type: 'showMap', overview, map: null, source: 'run' } }), 'a big map: the overview alone');
		assert.equal(MAP_PROTOCOL.toWebview({ kind: 'event', body: { type: 'showMap', overview, map: { pairs: 'x' }, source: 'run' } }), null);
		assert.equal(MAP_PROTOCOL.toWebview({ kind: 'event', body: { type: 'showMap', map: { pairs: [], ranks: [] }, source: 'run' } }), null, 'no overview');
		assert.equal(MAP_PROTOCOL.toWebview({ kind: 'event', body: { type: 'busy', busy: true } }), null);
		assert.equal(MAP_PROTOCOL.fromWebview({ kind: 'request', id: 1, body: { type: 'export', format: 'png', data: 'data:text/html,<script>' } }), null);
		// A reply is checked by its frame (the host answers requests the webview itself made).
		assert.ok(MAP_PROTOCOL.toWebview({ kind: 'reply', inReplyTo: 3, body: true }));
		assert.equal(MAP_PROTOCOL.toWebview({ kind: 'reply', inReplyTo: '3' }), null);
	});

	it('strings arrive as data over English defaults, and placeholders are filled', () => {
		const defaults = { a: 'A {0}', b: 'B' };
		assert.deepEqual(readStrings(defaults, JSON.stringify({ a: 'Ä {0}', c: 'unknown key', b: 5 })), { a: 'Ä {0}', b: 'B' });
		assert.deepEqual(readStrings(defaults, '{not json'), defaults);
		assert.deepEqual(readStrings(defaults, undefined), defaults);
		assert.equal(fill('Copied ({0} characters) {1}', 12), 'Copied (12 characters) {1}');
	});
});
