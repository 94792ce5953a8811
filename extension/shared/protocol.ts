/**
 * Typed messages between the extension host and the diagnostics webview (media/panel/main.ts), carried by the RPC of
 * webviewRpc.ts; PANEL_PROTOCOL validates them on both sides.
 */
import type { Report } from './report';
import { asEnvelope, type Envelope, type ProtocolValidator } from './webviewRpc';

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

/** Each request of the diagnostics webview and the host's reply. */
export type PanelRequests = {
	ready: { request: ReadyRequest; reply: ReadyResponse };
	copy: { request: CopyRequest; reply: void };
	rerun: { request: RerunRequest; reply: void };
};
// #endregion

const MESSAGE_TYPES_FROM_WEBVIEW = new Set<FromWebviewMessage['type']>(['ready', 'copy', 'rerun']);

/** Validate something that claims to be a message from the webview. Returns null for anything unexpected. */
export function asFromWebviewEnvelope(raw: unknown): Envelope<FromWebviewMessage> | null {
	return asEnvelope<FromWebviewMessage>(raw, body => {
		if (!MESSAGE_TYPES_FROM_WEBVIEW.has(body.type as FromWebviewMessage['type'])) { return false; }
		return !(body.type === 'copy' && (typeof body.text !== 'string' || body.text.length > 1_000_000));
	});
}

/** Validate a message the diagnostics webview receives from the host (shape only; the host is trusted but typed). */
export function asToWebviewEnvelope(raw: unknown): Envelope<ToWebviewMessage> | null {
	return asEnvelope<ToWebviewMessage>(raw, body => {
		if (body.type === 'showReport') { return typeof body.report === 'object' && body.report !== null; }
		return body.type === 'busy' && typeof body.busy === 'boolean' && typeof body.message === 'string';
	});
}

/** The diagnostics webview's validators, used by the host and by media/panel/main.ts. */
export const PANEL_PROTOCOL: ProtocolValidator<ToWebviewMessage, PanelRequests> = { fromWebview: asFromWebviewEnvelope, toWebview: asToWebviewEnvelope };
