/**
 * "GPU-MPI: Show Transport Map": a panel (WebviewPanelHost: strict CSP, `ready` handshake, every message validated by
 * MAP_PROTOCOL) that shows a transport map loaded from a run (gpumpi map under mpirun through core/map/mapRunner.ts,
 * with progress and cancel) or from a saved JSON file. Exports (SVG, PNG, JSON) are posted by the webview and
 * written here after a save dialog.
 */
import { activeRuns } from '../core/activeRuns';
import * as vscode from 'vscode';
import { loadMapValue } from '../core/map/mapFile';
import { errorText, type Logger } from '../core/logger';
import { core } from './lazyCore';
import { escapeHtml } from '../shared/htmlEscape';
import { MAP_PROTOCOL, type MapExportFormat, type MapRequests, type MapStrings, type ToMapWebviewMessage } from '../shared/mapProtocol';
import type { MapDocument } from '../shared/mapSchema';
import { exportFileName } from '../shared/mapLayout';
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

/** What the webview of the open panel has been sent (tests reach it through the extension API). */
export interface TransportMapPanelState {
	/** The webview sent `ready` since it was (re)loaded. */
	ready: boolean;
	/** Source label of the map the webview received (in its ready reply or a showMap event), or null. */
	delivered: string | null;
	worldSize: number;
	pairs: number;
	/** Path class of every delivered pair, in document order. */
	classes: string[];
	busy: boolean;
	/** The file the last export wrote, or null. */
	lastExport: string | null;
}

/** The single transport-map panel of this window. */
export class TransportMapPanel extends Disposable {
	private static _current: TransportMapPanel | undefined;
	private _busy = false;
	private _map: MapDocument | null = null;
	private _source = '';
	private _lastExport: string | null = null;
	private _delivered: { map: MapDocument; source: string } | null = null;
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
					if (this._map) { this._delivered = { map: this._map, source: this._source }; }
					return { type: 'mapReadyResponse', map: this._map, source: this._source, busy: this._busy };
				},
				export: msg => this._export(msg.format, msg.data),
				runMap: async () => { await vscode.commands.executeCommand(SHOW_TRANSPORT_MAP_COMMAND, 'run'); },
				openMap: async () => { await vscode.commands.executeCommand(SHOW_TRANSPORT_MAP_COMMAND, 'open'); },
			},
		}));
		this._register(this._host.onDidDispose(() => this.dispose()));
	}

	/** Whether the webview has sent `ready` since it was (re)loaded. */
	get isReady(): boolean { return this._host.isReady; }

	/** What the webview has been sent (tests). */
	get state(): TransportMapPanelState {
		const d = this._delivered;
		return { ready: this._host.isReady, delivered: d?.source ?? null, worldSize: d?.map.world_size ?? 0, pairs: d?.map.pairs.length ?? 0, classes: d?.map.pairs.map(p => p.class) ?? [], busy: this._busy, lastExport: this._lastExport };
	}

	/** Show `map` (from `source`: a file name or "run"). */
	setMap(map: MapDocument, source: string): void {
		this._map = map;
		this._source = source;
		if (this._host.post({ type: 'showMap', map, source })) { this._delivered = { map, source }; }
	}

	/** Tell the webview a run started / ended. */
	setBusy(busy: boolean, message: string): void {
		this._busy = busy;
		this._host.post({ type: 'busy', busy, message });
	}

	override dispose(): void {
		if (TransportMapPanel._current === this) { TransportMapPanel._current = undefined; }
		super.dispose();
	}

	private async _export(format: MapExportFormat, data: string): Promise<boolean> {
		const filters: Record<MapExportFormat, Record<string, string[]>> = { svg: { SVG: ['svg'] }, png: { PNG: ['png'] }, json: { JSON: ['json'] } };
		const file = await askSavePath({ name: exportFileName(this._map ?? { ranks: [] }, format), filters: filters[format], saveLabel: vscode.l10n.t('Export'), title: vscode.l10n.t('Export transport map') });
		if (!file) { return false; }
		const uri = vscode.Uri.file(file);
		const bytes = format === 'png' ? Buffer.from(data.slice(data.indexOf(',') + 1), 'base64') : Buffer.from(data, 'utf8');
		writeResult(file, bytes);
		this._log.info(`exported the transport map as ${format} to ${uri.fsPath} (${bytes.length} bytes)`);
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
		title: vscode.l10n.t('Transport map'), prompt: vscode.l10n.t('Number of ranks (each pair is measured one at a time)'), value: '4',
		validateInput: v => /^\d+$/.test(v) && Number(v) >= 2 && Number(v) <= 4096 ? undefined : vscode.l10n.t('2 to 4096'),
	});
	if (!npText) { return undefined; }
	const { settings } = readSettings();
	const panel = TransportMapPanel.current;
	return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('GPU-MPI transport map'), cancellable: true }, async (progress, token) => {
		const abort = activeRuns.begin('map');
		const sub = token.onCancellationRequested(() => abort.abort());
		const onProgress = (line: string): void => { log.info(line); progress.report({ message: line.slice(0, 120) }); };
		panel?.setBusy(true, vscode.l10n.t('Running gpumpi map on {0} ranks…', npText));
		let target: OpenTarget | undefined;
		try {
			target = await openLaunchTarget(hostKey, Number(npText), '', log, onProgress, abort.signal);
			if (abort.signal.aborted) { return undefined; }
			const r = await core().runMapUseCase({
				target, config: { label: 'map', env: [], mca: [], extraArgs: [] }, loopback: false,
				map: { ...core().DEFAULT_MAP_OPTIONS }, timeoutMs: Math.max(60, settings.timeoutSeconds) * 1000 * 10, signal: abort.signal, onProgress,
			});
			if (!r.ok) {
				if (abort.signal.aborted) { return undefined; }
				log.error(`map run failed: ${r.error}${r.refused ? '' : `\n${r.outputTail}`}`);
				throw new Error(r.error);
			}
			return r.doc;
		} finally {
			sub.dispose();
			activeRuns.end(abort);
			await target?.close();
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
	const bytes = await vscode.workspace.fs.readFile(file);
	let raw: unknown;
	try { raw = JSON.parse(Buffer.from(bytes).toString('utf8')); } catch (e) { throw new Error(vscode.l10n.t('{0} is not JSON: {1}', file.fsPath, errorText(e))); }
	const name = file.path.slice(file.path.lastIndexOf('/') + 1);
	const loaded = loadMapValue(raw);
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
			TransportMapPanel.show(extensionUri, log).setMap(r.map, r.source);
			return r.map;
		}
		const { hostKey, rest } = hostOfArgument(how);
		const npArg = typeof rest === 'object' && rest !== null ? (rest as { np?: unknown }).np : undefined;
		if (npArg !== undefined && !(Number.isInteger(npArg) && (npArg as number) >= 2 && (npArg as number) <= 4096)) {
			throw new Error(vscode.l10n.t('np must be an integer 2..4096'));
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
			if (r) { panel.setMap(r.map, r.source); }
			return r?.map;
		}
		const doc = await runFromVsCode(log, hostKey, npArg as number | undefined);
		if (doc) { TransportMapPanel.show(extensionUri, log).setMap(doc, vscode.l10n.t('run')); }
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
		matrix: t('Matrix'),
		hostFilter: t('Host filter'),
		runMap: t('Run map…'),
		openJson: t('Open JSON…'),
		exportAs: t('Export {0}', '{0}'),
		exported: t('Exported {0}', '{0}'),
		classesShown: t('Path classes shown'),
		commandTitle: t('The command line this map was measured with (select to copy)'),
		matrixLabel: t('Bandwidth matrix: arrow keys move, Enter shows the pair'),
		allHosts: t('All hosts ({0})', '{0}'),
		hoverHint: t('Hover or focus a rank or pair for its numbers; Enter or click for details.'),
		noMap: t('No map yet: run one or open a saved JSON file.'),
		running: t('Running…'),
	};
}
