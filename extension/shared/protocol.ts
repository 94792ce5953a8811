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
/** Scroll to one finding of the shown report and mark it (the Problems panel's "Show in GPU-MPI panel"). */
export interface RevealFindingMessage { type: 'revealFinding'; findingIndex: number }
export type ToWebviewMessage = ShowReportMessage | BusyMessage | RevealFindingMessage;
// #endregion

// #region from webview
/** Sent once the webview's script has loaded; the host answers with the current state and never posts before. */
export interface ReadyRequest { type: 'ready' }
/** Reply to ReadyRequest. */
export interface ReadyResponse { type: 'readyResponse'; report: Report | null; busy: boolean; revealFindingIndex?: number }
/** Ask the host to put text on the clipboard (fix commands, evidence). */
export interface CopyRequest { type: 'copy'; text: string }
/** Ask the host to run the inspection again. */
export interface RerunRequest { type: 'rerun' }
/** Open a finding's evidence line in an editor: finding `findingIndex` of the shown report, its evidence `evidenceIndex` (the host resolves the file itself). */
export interface OpenEvidenceRequest { type: 'openEvidence'; findingIndex: number; evidenceIndex: number }
/** Save the shown report (JSON or HTML, through the save dialog). */
export interface SaveRequest { type: 'save' }
/** Compare the shown report with another inspection (picked in a QuickPick). */
export interface CompareRequest { type: 'compare' }
export type FromWebviewMessage = ReadyRequest | CopyRequest | RerunRequest | OpenEvidenceRequest | SaveRequest | CompareRequest;

/** Each request of the diagnostics webview and the host's reply. */
export type PanelRequests = {
	ready: { request: ReadyRequest; reply: ReadyResponse };
	copy: { request: CopyRequest; reply: void };
	rerun: { request: RerunRequest; reply: void };
	openEvidence: { request: OpenEvidenceRequest; reply: void };
	save: { request: SaveRequest; reply: void };
	compare: { request: CompareRequest; reply: void };
};
// #endregion

const MESSAGE_TYPES_FROM_WEBVIEW = new Set<FromWebviewMessage['type']>(['ready', 'copy', 'rerun', 'openEvidence', 'save', 'compare']);

function isIndex(n: unknown): n is number {
	return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n < 1_000_000;
}

/** Validate something that claims to be a message from the webview. Returns null for anything unexpected. */
export function asFromWebviewEnvelope(raw: unknown): Envelope<FromWebviewMessage> | null {
	return asEnvelope<FromWebviewMessage>(raw, body => {
		if (!MESSAGE_TYPES_FROM_WEBVIEW.has(body.type as FromWebviewMessage['type'])) { return false; }
		if (body.type === 'openEvidence') { return isIndex(body.findingIndex) && isIndex(body.evidenceIndex); }
		return !(body.type === 'copy' && (typeof body.text !== 'string' || body.text.length > 1_000_000));
	});
}

/** Validate a message the diagnostics webview receives from the host (shape only; the host is trusted but typed). */
export function asToWebviewEnvelope(raw: unknown): Envelope<ToWebviewMessage> | null {
	return asEnvelope<ToWebviewMessage>(raw, body => {
		if (body.type === 'showReport') { return typeof body.report === 'object' && body.report !== null; }
		if (body.type === 'revealFinding') { return isIndex(body.findingIndex); }
		return body.type === 'busy' && typeof body.busy === 'boolean' && typeof body.message === 'string';
	});
}

/** The diagnostics webview's validators, used by the host and by media/panel/main.ts. */
export const PANEL_PROTOCOL: ProtocolValidator<ToWebviewMessage, PanelRequests> = { fromWebview: asFromWebviewEnvelope, toWebview: asToWebviewEnvelope };
