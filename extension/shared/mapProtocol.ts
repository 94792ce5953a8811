/**
 * Typed messages between the extension host and the transport-map webview (extension/vscode/transportMapPanel.ts,
 * media/map/main.ts), carried by the MessageHandler of protocol.ts.
 */
import { asEnvelope, type Envelope } from './protocol';
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
// #endregion

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
