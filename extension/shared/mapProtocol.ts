/**
 * Typed messages between the extension host and the transport-map webview (extension/vscode/transportMapPanel.ts,
 * media/map/main.ts), carried by the RPC of webviewRpc.ts; MAP_PROTOCOL validates them on both sides.
 */
import { asEnvelope, type Envelope, type ProtocolValidator } from './webviewRpc';
import type { MapDocument } from './mapSchema';

// #region to webview
/** A (new) map to show. */
export interface ShowMapMessage { type: 'showMap'; map: MapDocument; source: string }
/** A run started / stopped. */
export interface MapBusyMessage { type: 'busy'; busy: boolean; message: string }
export type ToMapWebviewMessage = ShowMapMessage | MapBusyMessage;
// #endregion

// #region from webview
/** Sent once the script has loaded; the host answers with MapReadyResponse and never posts before. */
export interface MapReadyRequest { type: 'ready' }
/** Reply to MapReadyRequest. */
export interface MapReadyResponse { type: 'mapReadyResponse'; map: MapDocument | null; source: string; busy: boolean }
/** Export formats. */
export type MapExportFormat = 'svg' | 'png' | 'json';
/** Save `data` (SVG text, a PNG data: URL, or JSON text) through the host's save dialog. Replies true when saved. */
export interface MapExportRequest { type: 'export'; format: MapExportFormat; data: string }
/** Ask the host to run a new map (the command's flow, with progress and cancel). */
export interface MapRunRequest { type: 'runMap' }
/** Ask the host to open a saved map JSON file. */
export interface MapOpenRequest { type: 'openMap' }
export type FromMapWebviewMessage = MapReadyRequest | MapExportRequest | MapRunRequest | MapOpenRequest;

/** Each request of the map webview and the host's reply (export: whether the file was saved). */
export type MapRequests = {
	ready: { request: MapReadyRequest; reply: MapReadyResponse };
	export: { request: MapExportRequest; reply: boolean };
	runMap: { request: MapRunRequest; reply: void };
	openMap: { request: MapOpenRequest; reply: void };
};
// #endregion

/** The map webview's own strings (the host passes localised ones as data; `{0}` are placeholders). */
export interface MapStrings {
	toolbar: string;
	graph: string;
	matrix: string;
	hostFilter: string;
	runMap: string;
	openJson: string;
	/** {0} format (SVG, PNG, JSON). */
	exportAs: string;
	/** {0} format. */
	exported: string;
	classesShown: string;
	commandTitle: string;
	matrixLabel: string;
	/** {0} number of hosts. */
	allHosts: string;
	hoverHint: string;
	noMap: string;
	running: string;
}

/** English defaults of MapStrings. */
export const DEFAULT_MAP_STRINGS: MapStrings = {
	toolbar: 'Transport map',
	graph: 'Graph',
	matrix: 'Matrix',
	hostFilter: 'Host filter',
	runMap: 'Run map…',
	openJson: 'Open JSON…',
	exportAs: 'Export {0}',
	exported: 'Exported {0}',
	classesShown: 'Path classes shown',
	commandTitle: 'The command line this map was measured with (select to copy)',
	matrixLabel: 'Bandwidth matrix: arrow keys move, Enter shows the pair',
	allHosts: 'All hosts ({0})',
	hoverHint: 'Hover or focus a rank or pair for its numbers; Enter or click for details.',
	noMap: 'No map yet: run one or open a saved JSON file.',
	running: 'Running…',
};

/** Largest export payload accepted from the webview (a 1 024-rank PNG stays well below). */
export const MAX_EXPORT_CHARS = 64 * 1024 * 1024;

const TYPES = new Set<FromMapWebviewMessage['type']>(['ready', 'export', 'runMap', 'openMap']);
const FORMATS = new Set<string>(['svg', 'png', 'json']);

/** Validate something that claims to be a message from the map webview. Returns null for anything unexpected. */
export function asFromMapWebviewEnvelope(raw: unknown): Envelope<FromMapWebviewMessage> | null {
	return asEnvelope<FromMapWebviewMessage>(raw, body => {
		if (!TYPES.has(body.type as FromMapWebviewMessage['type'])) { return false; }
		if (body.type !== 'export') { return true; }
		if (typeof body.format !== 'string' || !FORMATS.has(body.format) || typeof body.data !== 'string' || body.data.length > MAX_EXPORT_CHARS) { return false; }
		return body.format !== 'png' || body.data.startsWith('data:image/png;base64,');
	});
}

/** Validate a message the map webview receives from the host (shape only; the host is trusted but typed). */
export function asToMapWebviewEnvelope(raw: unknown): Envelope<ToMapWebviewMessage> | null {
	return asEnvelope<ToMapWebviewMessage>(raw, body => {
		if (body.type === 'showMap') {
			const m = body.map as Record<string, unknown> | null;
			return typeof m === 'object' && m !== null && Array.isArray(m.pairs) && Array.isArray(m.ranks) && typeof body.source === 'string';
		}
		return body.type === 'busy' && typeof body.busy === 'boolean' && typeof body.message === 'string';
	});
}

/** The map webview's validators, used by the host and by media/map/main.ts. */
export const MAP_PROTOCOL: ProtocolValidator<ToMapWebviewMessage, MapRequests> = { fromWebview: asFromMapWebviewEnvelope, toWebview: asToMapWebviewEnvelope };
