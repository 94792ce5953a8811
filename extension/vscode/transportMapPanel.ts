/**
 * "GPU-MPI: Show Transport Map": a panel (WebviewPanelHost: strict CSP, `ready` handshake, every message validated by
 * MAP_PROTOCOL) that shows a transport map loaded from a run (gpumpi map under mpirun through core/map/mapRunner.ts,
 * with progress and cancel) or from a saved JSON file, anomaly first (issue 36): the outliers, then the node matrix.
 * The webview gets the node overview (shared/mapOverview.ts) and the whole document only when it is small; it asks
 * for drill-downs and single pairs. While a run streams its rounds the panel gets progress, failures as they come and,
 * as often as the host can afford it (shared/mapLive.ts Throttle), the overview and outliers of what was measured.
 * Exports: SVG and PNG posted by the webview, JSON written here from the host's document (any size, mapFileStream.ts).
 */
import { activeRuns } from '../core/activeRuns';
import * as vscode from 'vscode';
import { loadMapValue } from '../core/map/mapFile';
import { readMapFile, writeMapFile } from '../core/map/mapFileStream';
import type { MapStreamRecord } from '../core/map/mapStream';
import { findOutliersAsync } from '../core/map/outliers';
import { errorText, type Logger } from '../core/logger';
import { core } from './lazyCore';
import { escapeHtml } from '../shared/htmlEscape';
import { MAP_PROTOCOL, WEBVIEW_DOC_MAX_PAIRS, type MapExportFormat, type MapLiveState, type MapRenderedRequest, type MapRequests, type MapStrings, type ToMapWebviewMessage } from '../shared/mapProtocol';
import { MAX_MAP_RANKS, type MapDocument, type MapOutlierReport } from '../shared/mapSchema';
import { exportFileName } from '../shared/mapLayout';
import { MapLiveModel, Throttle, type MapLiveFailure } from '../shared/mapLive';
import { buildOverview, mapDrill, MapPairIndex, type MapOverview } from '../shared/mapOverview';
import { registerCommand, type CommandId } from './commands';
import { Disposable } from './dispose';
import { pickHost } from './hostsView';
import { askSavePath, writeResult } from './saveFile';
import { openLaunchTarget, hostOfArgument, type OpenTarget } from './launchHost';
import { readSettings } from './settings';
import { WebviewPanelHost } from './webviewPanelHost';

/** The panel's view type. */
export const TRANSPORT_MAP_VIEW_TYPE = 'gpumpiDoctor.transportMap';
/** The command that opens it. */
export const SHOW_TRANSPORT_MAP_COMMAND = 'gpumpiDoctor.showTransportMap' satisfies CommandId;

/**
 * A saved map without the runner's analysis (older than it) is analysed when opened, up to this many pairs
 * (1 024 ranks: ~0.1 s), between turns of the event loop (findOutliersAsync); bigger ones say why not (a 2 048-node
 * map would wait seconds for its analysis before it is shown: docs/benchmarks-map.md).
 */
export const ANALYSE_ON_OPEN_MAX_PAIRS = 300000;
/** While a map runs, its outliers are analysed (now and then) up to this many measured pairs. */
export const LIVE_OUTLIERS_MAX_PAIRS = 200000;
/** Failures a live panel keeps (the first ones; the count goes on). */
const LIVE_FAILURES_KEPT = 500;

/** What the webview of the open panel has been sent (tests reach it through the extension API). */
export interface TransportMapPanelState {
	/** The webview sent `ready` since it was (re)loaded. */
	ready: boolean;
	/** Source label of the map the webview received (in its ready reply or a showMap event), or null. */
	delivered: string | null;
	worldSize: number;
	pairs: number;
	/** Path class of every delivered pair, in document order (empty when the map is too big for the webview). */
	classes: string[];
	/** Nodes of the delivered overview, whether the whole document went along, the outliers' headline. */
	nodes: number;
	wholeDocument: boolean;
	headline: string | null;
	busy: boolean;
	/** Progress of a running map, and how many failures it streamed. */
	live: { round: number; rounds: number; measured: number; failures: number } | null;
	/** What the webview last said it drew. */
	rendered: Omit<MapRenderedRequest, 'type'> | null;
	/** The file the last export wrote, or null. */
	lastExport: string | null;
}

interface Live {
	model: MapLiveModel;
	failures: MapLiveFailure[];
	failureCount: number;
	overview: MapOverview | null;
	outliers: MapOutlierReport | null;
	outliersNote: string | null;
	overviewThrottle: Throttle;
	outliersThrottle: Throttle;
	/** Failures not yet posted. */
	unsent: MapLiveFailure[];
	lastPost: number;
	/** An analysis of the measured pairs is running (findOutliersAsync; one at a time). */
	analysing: boolean;
}

/** The single transport-map panel of this window. */
export class TransportMapPanel extends Disposable {
	private static _current: TransportMapPanel | undefined;
	private _busy = false;
	private _map: MapDocument | null = null;
	private _overview: MapOverview | null = null;
	private _pairIndex: MapPairIndex | null = null;
	private _source = '';
	private _lastExport: string | null = null;
	private _delivered: { overview: MapOverview; map: MapDocument; source: string; whole: boolean } | null = null;
	private _live: Live | null = null;
	/** setMap calls so far (a later one wins over one still analysing). */
	private _setMapCount = 0;
	private _run: AbortController | null = null;
	private _rendered: Omit<MapRenderedRequest, 'type'> | null = null;
	private readonly _host: WebviewPanelHost<ToMapWebviewMessage, MapRequests>;

	/** Show the panel (creating it when needed). */
	static show(extensionUri: vscode.Uri, log: Logger): TransportMapPanel {
		if (TransportMapPanel._current) { TransportMapPanel._current._host.reveal(); return TransportMapPanel._current; }
		TransportMapPanel._current = new TransportMapPanel(extensionUri, log);
		return TransportMapPanel._current;
	}

	/** The open panel, if any (tests). */
	static get current(): TransportMapPanel | undefined { return TransportMapPanel._current; }

	private constructor(extensionUri: vscode.Uri, private readonly _log: Logger) {
		super();
		this._host = this._register(new WebviewPanelHost<ToMapWebviewMessage, MapRequests>(extensionUri, _log, {
			viewType: TRANSPORT_MAP_VIEW_TYPE,
			title: vscode.l10n.t('Transport Map'),
			bundle: 'map',
			what: 'transport-map webview',
			protocol: MAP_PROTOCOL,
			imgSources: ['data:'],
			strings: mapStrings(),
			bodyHtml: `<main id="app"><p>${escapeHtml(vscode.l10n.t('Loading…'))}</p></main>`,
			handlers: {
				ready: () => {
					const whole = this._whole();
					if (this._map && this._overview) { this._delivered = { overview: this._overview, map: this._map, source: this._source, whole: whole !== null }; }
					return { type: 'mapReadyResponse', overview: this._overview, map: whole, source: this._source, busy: this._busy, live: this._liveState() };
				},
				export: msg => this._export(msg.format, msg.data),
				runMap: async () => { await vscode.commands.executeCommand(SHOW_TRANSPORT_MAP_COMMAND, 'run'); },
				cancelRun: () => { if (!this._run || this._run.signal.aborted) { return false; } this._run.abort(); return true; },
				openMap: async () => { await vscode.commands.executeCommand(SHOW_TRANSPORT_MAP_COMMAND, 'open'); },
				drill: msg => { const d = this._live?.model.doc ?? this._map; return d ? mapDrill(d, msg.hosts) : null; },
				pair: msg => this._pair(msg.a, msg.b),
				rendered: msg => { const { type: _type, ...what } = msg; this._rendered = what; },
			},
		}));
		this._register(this._host.onDidDispose(() => this.dispose()));
	}

	/** Whether the webview has sent `ready` since it was (re)loaded. */
	get isReady(): boolean { return this._host.isReady; }

	/** What the webview has been sent (tests). */
	get state(): TransportMapPanelState {
		const d = this._delivered;
		const p = this._live?.model.progress;
		return {
			ready: this._host.isReady, delivered: d?.source ?? null, worldSize: d?.map.world_size ?? 0, pairs: d?.map.pairs.length ?? 0,
			classes: d?.whole ? d.map.pairs.map(x => x.class) : [], nodes: d?.overview.hosts.length ?? 0, wholeDocument: d?.whole ?? false,
			headline: d?.overview.outliers?.headline ?? null, busy: this._busy,
			live: p && this._live ? { round: p.round, rounds: p.rounds, measured: p.measured, failures: this._live.failureCount } : null,
			rendered: this._rendered, lastExport: this._lastExport,
		};
	}

	/**
	 * Show `map` (from `source`: a file name or "run"), analysed first when it has no outliers yet (findOutliersAsync:
	 * the extension host keeps running meanwhile). A later setMap wins over one still analysing.
	 */
	async setMap(map: MapDocument, source: string): Promise<void> {
		const mine = ++this._setMapCount;
		if (!map.outliers && !map.traffic_source) {
			if (map.pairs.length <= ANALYSE_ON_OPEN_MAX_PAIRS) {
				const t0 = Date.now();
				map.outliers = await findOutliersAsync(map);
				this._log.info(`outliers of ${source}: ${map.pairs.length} pairs in ${Date.now() - t0} ms`);
				if (mine !== this._setMapCount) { return; }
			} else {
				this._log.info(`not analysing ${source} here: ${map.pairs.length} pairs (the runner analyses maps it measures)`);
			}
		}
		this._map = map;
		this._source = source;
		this._pairIndex = null;
		this._live = null;
		const t0 = Date.now();
		this._overview = buildOverview(map);
		this._log.info(`map overview of ${source}: ${this._overview.hosts.length} nodes, ${map.pairs.length} pairs in ${Date.now() - t0} ms`);
		const whole = this._whole();
		if (this._host.post({ type: 'showMap', overview: this._overview, map: whole, source })) { this._delivered = { overview: this._overview, map, source, whole: whole !== null }; }
	}

	/** Tell the webview a run started / ended. */
	setBusy(busy: boolean, message: string): void {
		this._busy = busy;
		this._host.post({ type: 'busy', busy, message });
	}

	/** The run in flight (the webview's Cancel aborts it), or null when it ended. */
	setRun(abort: AbortController | null): void { this._run = abort; }

	/** A streamed record of the running map: the plan starts the live view, each round fills it in. */
	liveRecord(rec: MapStreamRecord): void {
		if (rec.kind === 'plan') {
			this._live = {
				model: new MapLiveModel(rec.plan), failures: [], failureCount: 0, overview: null, outliers: null, outliersNote: null,
				overviewThrottle: new Throttle(1000, 10), outliersThrottle: new Throttle(2000, 20), unsent: [], lastPost: 0, analysing: false,
			};
			this._liveUpdate(true);
			return;
		}
		if (rec.kind !== 'round' || !this._live) { return; }
		const live = this._live;
		const failures = live.model.applyRound(rec.round);
		live.failureCount += failures.length;
		for (const f of failures) {
			if (live.failures.length < LIVE_FAILURES_KEPT) { live.failures.push(f); live.unsent.push(f); }
		}
		this._liveUpdate(rec.round.final);
	}

	/**
	 * A run ended without a map (it failed before its plan came, or the engine's document was invalid): drop the live
	 * view and show the map shown before, if any. (A run whose plan came ends with a map, partial when cut short.)
	 */
	endLive(): void {
		if (!this._live) { return; }
		this._live = null;
		if (this._map && this._overview) { this._host.post({ type: 'showMap', overview: this._overview, map: this._whole(), source: this._source }); }
	}

	override dispose(): void {
		if (TransportMapPanel._current === this) { TransportMapPanel._current = undefined; }
		super.dispose();
	}

	/** Rebuild the live overview / outliers when due, post progress (at most every 250 ms unless `force`). */
	private _liveUpdate(force: boolean): void {
		const live = this._live;
		if (!live) { return; }
		const now = Date.now();
		let overview: MapOverview | null = null;
		if (force || live.overviewThrottle.due(now)) {
			overview = buildOverview(live.model.doc);
			live.overviewThrottle.ran(now, Date.now());
			live.overview = overview;
		}
		const measured = live.model.progress.measured;
		if (measured > LIVE_OUTLIERS_MAX_PAIRS) {
			live.outliersNote = vscode.l10n.t('{0} pairs measured: the outliers come with the whole map at the end (the analysis of this many takes too long to repeat while it runs); failures show as they come.', measured);
		} else if (measured > 0 && !live.analysing && (force || live.outliersThrottle.due(Date.now()))) {
			// Between turns of the event loop (the extension host's thread); posted when done, unless the run has moved on.
			const t0 = Date.now();
			live.analysing = true;
			void findOutliersAsync(live.model.doc).then(report => {
				live.analysing = false;
				live.outliersThrottle.ran(t0, Date.now());
				if (this._live !== live) { return; }
				live.outliers = report;
				live.outliersNote = null;
				this._host.post({ type: 'live', progress: live.model.progress, failures: [], overview: null, outliers: report, outliersNote: null });
			}, (e: unknown) => { live.analysing = false; this._log.warn(`live outliers: ${e instanceof Error ? e.message : String(e)}`); });
		}
		if (!force && overview === null && now - live.lastPost < 250) { return; }
		live.lastPost = now;
		const failures = live.unsent;
		live.unsent = [];
		this._host.post({ type: 'live', progress: live.model.progress, failures, overview, outliers: null, outliersNote: live.outliersNote });
	}

	private _liveState(): MapLiveState | null {
		const live = this._live;
		if (!live) { return null; }
		live.unsent = [];
		return { progress: live.model.progress, failures: live.failures, overview: live.overview, outliers: live.outliers, outliersNote: live.outliersNote };
	}

	/** The whole document for the webview when it is small enough, else null (the overview stands for it). */
	private _whole(): MapDocument | null {
		return this._map && this._map.pairs.length <= WEBVIEW_DOC_MAX_PAIRS ? this._map : null;
	}

	private _pair(a: number, b: number): MapDocument['pairs'][number] | null {
		const doc = this._live?.model.doc ?? this._map;
		if (!doc) { return null; }
		if (doc === this._map) {
			this._pairIndex ??= new MapPairIndex(doc);
			return this._pairIndex.find(a, b);
		}
		return doc.pairs.find(p => (p.a === a && p.b === b) || (p.a === b && p.b === a)) ?? null;
	}

	private async _export(format: MapExportFormat, data: string): Promise<boolean> {
		const filters: Record<MapExportFormat, Record<string, string[]>> = { svg: { SVG: ['svg'] }, png: { PNG: ['png'] }, json: { JSON: ['json'] } };
		if (format === 'json' && !this._map) { return false; }
		const file = await askSavePath({ name: exportFileName(this._map ?? { ranks: [] }, format), filters: filters[format], saveLabel: vscode.l10n.t('Export'), title: vscode.l10n.t('Export transport map') });
		if (!file) { return false; }
		const uri = vscode.Uri.file(file);
		let bytes: number;
		if (format === 'json' && this._map) {
			// The host's own document, in slices (a 2 048-node map is ~1 GB): openable again with Open Map….
			try { bytes = await writeMapFile(file, this._map); } catch (e) { throw new Error(vscode.l10n.t('Cannot write {0}: {1}', file, errorText(e))); }
		} else {
			const body = format === 'png' ? Buffer.from(data.slice(data.indexOf(',') + 1), 'base64') : Buffer.from(data, 'utf8');
			writeResult(file, body);
			bytes = body.length;
		}
		this._log.info(`exported the transport map as ${format} to ${uri.fsPath} (${bytes} bytes)`);
		this._lastExport = uri.fsPath;
		const open = vscode.l10n.t('Open');
		const reveal = vscode.l10n.t('Reveal in File Explorer');
		void vscode.window.showInformationMessage(vscode.l10n.t('Transport map exported to {0}', uri.fsPath), open, reveal).then(choice => {
			if (choice === open) { void vscode.commands.executeCommand('vscode.open', uri); }
			if (choice === reveal) { void vscode.commands.executeCommand('revealFileInOS', uri); }
		});
		return true;
	}
}

/** Run `gpumpi map` on `hostKey` (asked when undefined and hosts are configured) with progress and cancel. */
async function runFromVsCode(log: Logger, hostArg: string | undefined, npArg: number | undefined): Promise<MapDocument | undefined> {
	const hostKey = hostArg ?? await pickHost(vscode.l10n.t('Transport map'));
	if (!hostKey) { return undefined; }
	const npText = npArg !== undefined ? String(npArg) : await vscode.window.showInputBox({
		title: vscode.l10n.t('Transport map'), prompt: vscode.l10n.t('Number of ranks (up to 16 every pair, one at a time; beyond, pairs are sampled and measured in rounds)'), value: '4',
		validateInput: v => /^\d+$/.test(v) && Number(v) >= 2 && Number(v) <= MAX_MAP_RANKS ? undefined : vscode.l10n.t('2 to {0}', MAX_MAP_RANKS),
	});
	if (!npText) { return undefined; }
	const { settings } = readSettings();
	const panel = TransportMapPanel.current;
	return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('GPU-MPI transport map'), cancellable: true }, async (progress, token) => {
		const abort = activeRuns.begin('map');
		const sub = token.onCancellationRequested(() => abort.abort());
		panel?.setRun(abort);
		const onProgress = (line: string): void => { log.info(line); progress.report({ message: line.slice(0, 120) }); };
		panel?.setBusy(true, vscode.l10n.t('Running gpumpi map on {0} ranks…', npText));
		let target: OpenTarget | undefined;
		try {
			target = await openLaunchTarget(hostKey, Number(npText), '', log, onProgress, abort.signal);
			if (abort.signal.aborted) { return undefined; }
			const r = await core().runMapUseCase({
				target, config: { label: 'map', env: [], mca: [], extraArgs: [] }, loopback: false,
				map: { ...core().DEFAULT_MAP_OPTIONS }, timeoutMs: Math.max(60, settings.timeoutSeconds) * 1000 * 10, signal: abort.signal, onProgress,
				// Every streamed record into the panel as it comes (the plan at once, then each round).
				onRecord: rec => { TransportMapPanel.current?.liveRecord(rec); },
			});
			if (!r.ok) {
				if (abort.signal.aborted) { return undefined; }
				log.error(`map run failed: ${r.error}${r.refused ? '' : `\n${r.outputTail}`}`);
				throw new Error(r.error);
			}
			if (r.partial) { void vscode.window.showWarningMessage(vscode.l10n.t('The transport map was cut short ({0}): what was measured is shown, marked partial.', r.partial)); }
			return r.doc;
		} finally {
			sub.dispose();
			activeRuns.end(abort);
			await target?.close();
			panel?.setRun(null);
			panel?.setBusy(false, '');
		}
	});
}

/**
 * Read a saved map: a map document (gpumpi.map/1) or a scripts/gpu/map.sh device result (gpumpi.map-gpu/1, each run
 * joined with its evidence lines); of a device result, run `runName`, else the only run, else the one the user picks.
 * Without `file` the user picks the file.
 */
async function openFromFile(file?: vscode.Uri, runName?: string): Promise<{ map: MapDocument; source: string } | undefined> {
	if (!file) {
		const picked = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { JSON: ['json'] }, title: vscode.l10n.t('Open a transport map') });
		if (!picked?.[0]) { return undefined; }
		file = picked[0];
	}
	const name = file.path.slice(file.path.lastIndexOf('/') + 1);
	const loaded = await readSaved(file, name);
	if (loaded.kind === 'invalid' && loaded.error.startsWith('not JSON')) { throw new Error(vscode.l10n.t('{0} is not JSON: {1}', file.fsPath, loaded.reason)); }
	if (loaded.kind === 'device-result') {
		const ok = loaded.runs.filter((r): r is { name: string; doc: MapDocument } => typeof r.doc !== 'string');
		if (ok.length === 0) { throw new Error(vscode.l10n.t('{0} has no run with a map', file.fsPath)); }
		let run = runName !== undefined ? ok.find(r => r.name === runName) : ok.length === 1 ? ok[0] : undefined;
		if (runName !== undefined && !run) { throw new Error(vscode.l10n.t('{0} has no run {1} (runs: {2})', file.fsPath, runName, ok.map(r => r.name).join(', '))); }
		if (!run) {
			const pick = await vscode.window.showQuickPick(ok.map(r => r.name), { title: vscode.l10n.t('Which run of {0}?', name), ignoreFocusOut: true });
			run = ok.find(r => r.name === pick);
			if (!run) { return undefined; }
		}
		return { map: run.doc, source: vscode.l10n.t('{0} — run {1} (saved device result)', name, run.name) };
	}
	if (loaded.kind === 'invalid') { throw new Error(vscode.l10n.t('{0} is not a transport map: {1}', file.fsPath, loaded.reason)); }
	return { map: loaded.doc, source: file.fsPath };
}

/**
 * Read a saved map: a local file of any size through mapFileStream.ts (a 2 048-node map is ~1 GB, past the longest
 * string; a progress notification while it reads), other schemes through the workspace file system.
 */
async function readSaved(file: vscode.Uri, name: string): Promise<ReturnType<typeof loadMapValue>> {
	if (file.scheme !== 'file') {
		const bytes = await vscode.workspace.fs.readFile(file);
		let raw: unknown;
		try { raw = JSON.parse(Buffer.from(bytes).toString('utf8')); } catch (e) { return { kind: 'invalid', error: `not JSON: ${errorText(e)}`, reason: errorText(e) }; }
		return loadMapValue(raw);
	}
	return vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: vscode.l10n.t('Reading {0}', name) }, async progress => {
		let shown = 0;
		return readMapFile(file.fsPath, (done, total) => {
			const pct = Math.floor((100 * done) / total);
			if (pct >= shown + 5) { progress.report({ message: `${pct} %`, increment: pct - shown }); shown = pct; }
		});
	});
}

/** A saved map named by a command argument: a vscode.Uri or an absolute path (tests, the explorer context menu). */
function fileArgument(how: unknown): vscode.Uri | undefined {
	if (how instanceof vscode.Uri) { return how; }
	if (typeof how === 'string' && how !== 'run' && how !== 'open' && /^(\/|[A-Za-z]:[\\/])/.test(how)) { return vscode.Uri.file(how); }
	return undefined;
}

/**
 * Register "GPU-MPI: Show Transport Map" (through the wrapped registerCommand: logged with a correlation id, an error
 * shown with a way to the log). The optional first argument 'run' | 'open' skips the quick pick; a Uri or an
 * absolute path opens that saved map (the optional second argument names the run of a device result); a Hosts view
 * row or `{host, np?}` runs the map on that host. Resolves to the map shown, or undefined.
 */
export function registerTransportMap(extensionUri: vscode.Uri, log: Logger, showLog: () => void): vscode.Disposable {
	const command = registerCommand(SHOW_TRANSPORT_MAP_COMMAND, async (how?: unknown, runName?: unknown): Promise<MapDocument | undefined> => {
		if (!vscode.workspace.isTrusted) { throw new Error(vscode.l10n.t('GPU-MPI Doctor runs programs on this machine and is disabled in untrusted workspaces.')); }
		const file = fileArgument(how);
		if (file) {
			const r = await openFromFile(file, typeof runName === 'string' ? runName : undefined);
			if (!r) { return undefined; }
			await TransportMapPanel.show(extensionUri, log).setMap(r.map, r.source);
			return r.map;
		}
		const { hostKey, rest } = hostOfArgument(how);
		const npArg = typeof rest === 'object' && rest !== null ? (rest as { np?: unknown }).np : undefined;
		if (npArg !== undefined && !(Number.isInteger(npArg) && (npArg as number) >= 2 && (npArg as number) <= MAX_MAP_RANKS)) {
			throw new Error(vscode.l10n.t('np must be an integer 2..{0}', MAX_MAP_RANKS));
		}
		let choice = how === 'run' || how === 'open' ? how : hostKey !== undefined ? 'run' : undefined;
		if (!choice) {
			const run = vscode.l10n.t('Run a map now (gpumpi map under mpirun)');
			const open = vscode.l10n.t('Open a saved map JSON…');
			// ignoreFocusOut: run from the palette while a webview had focus, VS Code gives the focus back to that webview
			// after the palette closes (asynchronously, through the iframe) and a plain quick pick closed at once (seen
			// in the UI suite: the pick's rows present but hidden, the webview iframe focused).
			const picked = await vscode.window.showQuickPick([run, open], { title: vscode.l10n.t('GPU-MPI: Show Transport Map'), ignoreFocusOut: true });
			if (!picked) { return undefined; }
			choice = picked === run ? 'run' : 'open';
		}
		const panel = TransportMapPanel.show(extensionUri, log);
		if (choice === 'open') {
			const r = await openFromFile();
			if (r) { await panel.setMap(r.map, r.source); }
			return r?.map;
		}
		let doc: MapDocument | undefined;
		try { doc = await runFromVsCode(log, hostKey, npArg as number | undefined); } finally { if (!doc) { TransportMapPanel.current?.endLive(); } }
		if (doc) { await TransportMapPanel.show(extensionUri, log).setMap(doc, vscode.l10n.t('run')); }
		return doc;
	}, log, showLog);
	return vscode.Disposable.from(command, { dispose: () => TransportMapPanel.current?.dispose() });
}

/** Localised strings of the map webview, handed over as data (`<body data-strings>`); `{0}` are placeholders. */
function mapStrings(): MapStrings {
	const t = (message: string, ...args: string[]): string => vscode.l10n.t(message, ...args);
	return {
		toolbar: t('Transport map'),
		graph: t('Graph'),
		matrix: t('Rank matrix'),
		nodes: t('Nodes'),
		hostFilter: t('Host filter'),
		runMap: t('Run map…'),
		openJson: t('Open Map…'),
		cancelRun: t('Cancel run'),
		exportAs: t('Export {0}', '{0}'),
		exported: t('Exported {0}', '{0}'),
		classesShown: t('Path classes shown'),
		commandTitle: t('The command line this map was measured with (select to copy)'),
		matrixLabel: t('Bandwidth matrix: arrow keys move, Enter shows the pair'),
		nodeMatrixLabel: t('Node matrix of {0} nodes: arrow keys move (Shift: 8, Page Up/Down: 64), Enter drills down to the node pair, Home goes to the diagonal', '{0}'),
		allHosts: t('All hosts ({0})', '{0}'),
		allClasses: t('All path classes'),
		hoverHint: t('Hover or focus a rank or pair for its numbers; Enter or click for details.'),
		noMap: t('No map yet: run one or open a saved map.'),
		running: t('Running…'),
		outliers: t('Outliers'),
		suspects: t('Suspects (one pair each: measure again before blaming them)'),
		heldBack: t('Held back (ranks outnumbered the CPUs: these timings are the CPU scheduler\'s; map again with at most one rank per CPU)'),
		failedSoFar: t('Failed so far'),
	};
}
