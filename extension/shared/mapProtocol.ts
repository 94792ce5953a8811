/**
 * Typed messages between the extension host and the transport-map webview (extension/vscode/transportMapPanel.ts,
 * media/map/main.ts), carried by the RPC of webviewRpc.ts; MAP_PROTOCOL validates them on both sides.
 */
import { asEnvelope, type Envelope, type ProtocolValidator } from './webviewRpc';
import type { MapDrill, MapOverview } from './mapOverview';
import type { MapLiveFailure, MapLiveProgress } from './mapLive';
import type { MapDocument, MapOutlierReport, MapPair } from './mapSchema';

/**
 * Largest map whose whole document goes to the webview (pairs): the rank-level views need it. Bigger maps (a
 * 2 048-node map has two million pairs, ~1 GB of JSON) send only the node overview; drill-downs and pairs are asked for.
 */
export const WEBVIEW_DOC_MAX_PAIRS = 20000;

// #region to webview
/** A (new) map to show: its node overview, and the whole document when it is small (WEBVIEW_DOC_MAX_PAIRS). */
export interface ShowMapMessage { type: 'showMap'; overview: MapOverview; map: MapDocument | null; source: string }
/** A run started / stopped. */
export interface MapBusyMessage { type: 'busy'; busy: boolean; message: string }
/**
 * A running map: progress and the failures of each round as it comes; now and then (as the host can afford) the
 * overview of what was measured so far and the outlier analysis of it (`outliersNote`: why there is none yet).
 */
export interface MapLiveMessage {
	type: 'live';
	progress: MapLiveProgress;
	failures: MapLiveFailure[];
	overview: MapOverview | null;
	outliers: MapOutlierReport | null;
	outliersNote: string | null;
}
export type ToMapWebviewMessage = ShowMapMessage | MapBusyMessage | MapLiveMessage;
// #endregion

// #region from webview
/** Sent once the script has loaded; the host answers with MapReadyResponse and never posts before. */
export interface MapReadyRequest { type: 'ready' }
/** What a running map has shown so far (a webview reloaded mid-run gets it back). */
export interface MapLiveState { progress: MapLiveProgress; failures: MapLiveFailure[]; overview: MapOverview | null; outliers: MapOutlierReport | null; outliersNote: string | null }
/** Reply to MapReadyRequest. */
export interface MapReadyResponse { type: 'mapReadyResponse'; overview: MapOverview | null; map: MapDocument | null; source: string; busy: boolean; live: MapLiveState | null }
/** Export formats. */
export type MapExportFormat = 'svg' | 'png' | 'json';
/**
 * Save through the host's save dialog: `data` is SVG text or a PNG data: URL; for JSON it is empty and the host
 * writes its own document (a 2 048-node map is too big for a message). Replies true when saved.
 */
export interface MapExportRequest { type: 'export'; format: MapExportFormat; data: string }
/** Ask the host to run a new map (the command's flow, with progress and cancel). */
export interface MapRunRequest { type: 'runMap' }
/** Stop the running map; what was measured is kept and shown as a partial map. */
export interface MapCancelRequest { type: 'cancelRun' }
/** Ask the host to open a saved map JSON file. */
export interface MapOpenRequest { type: 'openMap' }
/** Drill down into one node or a node pair (host names). */
export interface MapDrillRequest { type: 'drill'; hosts: string[] }
/** One pair of ranks (for an outlier's evidence in a map whose pairs the webview does not hold). */
export interface MapPairRequest { type: 'pair'; a: number; b: number }
/** What the webview drew (tests and the benchmark read it through the host): the view, nodes, cells, ms. */
export interface MapRenderedRequest { type: 'rendered'; view: string; nodes: number; cells: number; outliers: number; ms: number }
export type FromMapWebviewMessage = MapReadyRequest | MapExportRequest | MapRunRequest | MapCancelRequest | MapOpenRequest | MapDrillRequest | MapPairRequest | MapRenderedRequest;

/** Each request of the map webview and the host's reply (export: whether the file was saved). */
export type MapRequests = {
	ready: { request: MapReadyRequest; reply: MapReadyResponse };
	export: { request: MapExportRequest; reply: boolean };
	runMap: { request: MapRunRequest; reply: void };
	cancelRun: { request: MapCancelRequest; reply: boolean };
	openMap: { request: MapOpenRequest; reply: void };
	drill: { request: MapDrillRequest; reply: MapDrill | null };
	pair: { request: MapPairRequest; reply: MapPair | null };
	rendered: { request: MapRenderedRequest; reply: void };
};
// #endregion

/** The map webview's own strings (the host passes localised ones as data; `{0}` are placeholders). */
export interface MapStrings {
	toolbar: string;
	graph: string;
	matrix: string;
	nodes: string;
	hostFilter: string;
	runMap: string;
	openJson: string;
	cancelRun: string;
	/** {0} format (SVG, PNG, JSON). */
	exportAs: string;
	/** {0} format. */
	exported: string;
	classesShown: string;
	commandTitle: string;
	matrixLabel: string;
	/** {0} nodes. */
	nodeMatrixLabel: string;
	/** {0} number of hosts. */
	allHosts: string;
	allClasses: string;
	hoverHint: string;
	noMap: string;
	running: string;
	outliers: string;
	suspects: string;
	heldBack: string;
	failedSoFar: string;
}

/** English defaults of MapStrings. */
export const DEFAULT_MAP_STRINGS: MapStrings = {
	toolbar: 'Transport map',
	graph: 'Graph',
	matrix: 'Rank matrix',
	nodes: 'Nodes',
	hostFilter: 'Host filter',
	runMap: 'Run map…',
	openJson: 'Open Map…',
	cancelRun: 'Cancel run',
	exportAs: 'Export {0}',
	exported: 'Exported {0}',
	classesShown: 'Path classes shown',
	commandTitle: 'The command line this map was measured with (select to copy)',
	matrixLabel: 'Bandwidth matrix: arrow keys move, Enter shows the pair',
	nodeMatrixLabel: 'Node matrix of {0} nodes: arrow keys move (Shift: 8, Page Up/Down: 64), Enter drills down to the node pair, Home goes to the diagonal',
	allHosts: 'All hosts ({0})',
	allClasses: 'All path classes',
	hoverHint: 'Hover or focus a rank or pair for its numbers; Enter or click for details.',
	noMap: 'No map yet: run one or open a saved map.',
	running: 'Running…',
	outliers: 'Outliers',
	suspects: 'Suspects (one pair each: measure again before blaming them)',
	heldBack: 'Held back (ranks outnumbered the CPUs: these timings are the CPU scheduler\'s; map again with at most one rank per CPU)',
	failedSoFar: 'Failed so far',
};

/** Largest export payload accepted from the webview (a 1 024-rank PNG stays well below). */
export const MAX_EXPORT_CHARS = 64 * 1024 * 1024;

const TYPES = new Set<FromMapWebviewMessage['type']>(['ready', 'export', 'runMap', 'cancelRun', 'openMap', 'drill', 'pair', 'rendered']);
const FORMATS = new Set<string>(['svg', 'png', 'json']);
const rankNumber = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < 1 << 24;

/** Validate something that claims to be a message from the map webview. Returns null for anything unexpected. */
export function asFromMapWebviewEnvelope(raw: unknown): Envelope<FromMapWebviewMessage> | null {
	return asEnvelope<FromMapWebviewMessage>(raw, body => {
		if (!TYPES.has(body.type as FromMapWebviewMessage['type'])) { return false; }
		switch (body.type) {
			case 'export':
				if (typeof body.format !== 'string' || !FORMATS.has(body.format) || typeof body.data !== 'string' || body.data.length > MAX_EXPORT_CHARS) { return false; }
				if (body.format === 'json') { return body.data === ''; }
				return body.format !== 'png' || body.data.startsWith('data:image/png;base64,');
			case 'drill':
				return Array.isArray(body.hosts) && body.hosts.length >= 1 && body.hosts.length <= 2 && body.hosts.every(h => typeof h === 'string' && h.length > 0 && h.length <= 256);
			case 'pair':
				return rankNumber(body.a) && rankNumber(body.b);
			case 'rendered':
				return typeof body.view === 'string' && body.view.length <= 40 && ['nodes', 'cells', 'outliers', 'ms'].every(k => typeof body[k] === 'number' && Number.isFinite(body[k]));
			default:
				return true;
		}
	});
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** A typed array or a plain array (whatever the transport made of it; the webview normalises). */
const arrayLike = (v: unknown): boolean => Array.isArray(v) || ArrayBuffer.isView(v);

/** The overview's shape as the webview relies on it. */
function validOverview(o: unknown): boolean {
	return isObj(o) && Array.isArray(o.hosts) && arrayLike(o.rankHost) && arrayLike(o.failedCells) && Array.isArray(o.layers) && isObj(o.header) && isObj(o.counts)
		&& o.layers.every(l => isObj(l) && arrayLike(l.cells) && arrayLike(l.median) && arrayLike(l.pairs) && typeof l.label === 'string');
}

/** Validate a message the map webview receives from the host (shape only; the host is trusted but typed). */
export function asToMapWebviewEnvelope(raw: unknown): Envelope<ToMapWebviewMessage> | null {
	return asEnvelope<ToMapWebviewMessage>(raw, body => {
		if (body.type === 'showMap') {
			const m = body.map;
			return validOverview(body.overview) && (m === null || (isObj(m) && Array.isArray(m.pairs) && Array.isArray(m.ranks))) && typeof body.source === 'string';
		}
		if (body.type === 'live') {
			return isObj(body.progress) && typeof body.progress.rounds === 'number' && Array.isArray(body.failures)
				&& (body.overview === null || validOverview(body.overview)) && (body.outliers === null || isObj(body.outliers));
		}
		return body.type === 'busy' && typeof body.busy === 'boolean' && typeof body.message === 'string';
	});
}

/** The map webview's validators, used by the host and by media/map/main.ts. */
export const MAP_PROTOCOL: ProtocolValidator<ToMapWebviewMessage, MapRequests> = { fromWebview: asFromMapWebviewEnvelope, toWebview: asToMapWebviewEnvelope };
