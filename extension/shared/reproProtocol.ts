/**
 * Typed messages between the extension host and the reproducer results webview (media/repro/main.ts), carried by
 * the RPC of webviewRpc.ts; this panel has its own unions so the panels cannot mix messages. REPRO_PROTOCOL validates
 * them on both sides.
 */
import { asEnvelope, type Envelope, type ProtocolValidator } from './webviewRpc';
import type { ReproFallbackReport, ReproIpcReport } from './reproSchema';

/** What the panel shows: one IPC report and/or fallback reports, and where they came from. */
export interface ReproPanelData {
	ipc: ReproIpcReport | null;
	fallback: ReproFallbackReport[];
	/** e.g. "repro-2026-12-02.json (saved device result)" or "run at 10:31 on this host". */
	source: string;
}

// #region to webview
/** New results to show. */
export interface ShowReproMessage { type: 'showRepro'; data: ReproPanelData }
/** A reproducer run started/stopped. */
export interface ReproBusyMessage { type: 'reproBusy'; busy: boolean; message: string }
export type ToReproWebviewMessage = ShowReproMessage | ReproBusyMessage;
// #endregion

// #region from webview
/** Sent once the script has loaded; the host answers with ReproReadyResponse and never posts before. */
export interface ReproReadyRequest { type: 'ready' }
/** Reply to ReproReadyRequest. */
export interface ReproReadyResponse { type: 'reproReadyResponse'; data: ReproPanelData | null; busy: boolean }
/** Ask the host to build the Markdown bug report of the shown results and put it on the clipboard. */
export interface CopyBugReportRequest { type: 'copyBugReport' }
/** Reply to CopyBugReportRequest: characters copied. */
export interface CopyBugReportResponse { type: 'copyBugReportResponse'; chars: number }
/** Ask the host to put a piece of text (an evidence block) on the clipboard. */
export interface ReproCopyRequest { type: 'copy'; text: string }
/** Ask the host to open one trial's raw output in an editor (the strip's marks, "Open its log"). */
export interface OpenTrialLogRequest { type: 'openTrialLog'; config: string; variant: string; trial: number }
/** Ask the host to open the shipped libgpumpi example (native/examples/staged_exchange.c) in an editor. */
export interface OpenExampleRequest { type: 'openExample' }
/** Save the shown results (one JSON file "Open Reproducer Result…" reads back), through the save dialog. */
export interface SaveResultsRequest { type: 'saveResults' }
export type FromReproWebviewMessage = ReproReadyRequest | CopyBugReportRequest | ReproCopyRequest | OpenTrialLogRequest | OpenExampleRequest | SaveResultsRequest;

/** Each request of the reproducer webview and the host's reply. */
export type ReproRequests = {
	ready: { request: ReproReadyRequest; reply: ReproReadyResponse };
	copyBugReport: { request: CopyBugReportRequest; reply: CopyBugReportResponse };
	copy: { request: ReproCopyRequest; reply: void };
	openTrialLog: { request: OpenTrialLogRequest; reply: void };
	openExample: { request: OpenExampleRequest; reply: void };
	saveResults: { request: SaveResultsRequest; reply: void };
};
// #endregion

/** The reproducer webview's own strings (the host passes localised ones as data; `{0}` are placeholders). */
export interface ReproStrings {
	noResults: string;
	/** The placeholder while a run is in flight and nothing is shown yet. */
	running: string;
	/** {0} characters copied. */
	copiedChars: string;
	/** {0} why. */
	copyFailedBecause: string;
	copied: string;
	copyFailed: string;
}

/** English defaults of ReproStrings. */
export const DEFAULT_REPRO_STRINGS: ReproStrings = {
	noResults: 'No results yet. Run "GPU-MPI: Run IPC-Pointer Reproducer", "GPU-MPI: Run Fallback Reproducer" or "GPU-MPI: Open Reproducer Result…".',
	running: 'Running: the results appear here when the run ends (its progress is in the notification and the GPU-MPI Doctor log).',
	copiedChars: 'Copied ({0} characters)',
	copyFailedBecause: 'Copy failed: {0}',
	copied: 'Copied',
	copyFailed: 'Copy failed',
};

const FROM_TYPES = new Set<FromReproWebviewMessage['type']>(['ready', 'copyBugReport', 'copy', 'openTrialLog', 'openExample', 'saveResults']);

/** Validate something that claims to be a message from the reproducer webview; null for anything unexpected. */
export function asFromReproWebviewEnvelope(raw: unknown): Envelope<FromReproWebviewMessage> | null {
	return asEnvelope<FromReproWebviewMessage>(raw, body => {
		if (!FROM_TYPES.has(body.type as FromReproWebviewMessage['type'])) { return false; }
		if (body.type === 'copy') { return typeof body.text === 'string' && body.text.length <= 1_000_000; }
		if (body.type === 'openTrialLog') {
			return typeof body.config === 'string' && body.config.length <= 4096 && typeof body.variant === 'string' && body.variant.length <= 64 &&
				Number.isInteger(body.trial) && (body.trial as number) >= 1 && (body.trial as number) <= 100_000 && Object.keys(body).length === 4;
		}
		return Object.keys(body).length === 1;
	});
}

/** Validate an envelope received by the webview from the host (shape only; the host is trusted but typed). */
export function asToReproWebviewEnvelope(raw: unknown): Envelope<ToReproWebviewMessage> | null {
	return asEnvelope<ToReproWebviewMessage>(raw, body => {
		if (body.type === 'showRepro') {
			const d = body.data as Record<string, unknown> | null;
			return typeof d === 'object' && d !== null && Array.isArray(d.fallback) && typeof d.source === 'string' && (d.ipc === null || typeof d.ipc === 'object');
		}
		return body.type === 'reproBusy' && typeof body.busy === 'boolean' && typeof body.message === 'string';
	});
}

/** The reproducer webview's validators, used by the host and by media/repro/main.ts. */
export const REPRO_PROTOCOL: ProtocolValidator<ToReproWebviewMessage, ReproRequests> = { fromWebview: asFromReproWebviewEnvelope, toWebview: asToReproWebviewEnvelope };
