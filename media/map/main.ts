/**
 * Transport-map webview client (issue 36: anomaly first, at any size). It asks the host for the map with `ready` and
 * gets the node overview (extension/shared/mapOverview.ts) and, for small maps, the whole document. The page leads
 * with the outliers (headline, each finding with its evidence), then the node × node matrix (nodeMatrix.ts); a click
 * or Enter on a cell drills down to that node or node pair: its GPUs and ranks as a graph (rankGraph.ts), its
 * numbers per class, its worst and failed pairs. Small maps also have the rank graph and the rank matrix of the whole
 * map. While a map runs: the plan at once, progress each round, failures as they come, the overview and outliers
 * as the host sends them. Everything is reachable with Tab, arrows and Enter; colours come from the theme.
 * No inline scripts or styles: the CSP allows only this nonce'd bundle and map.css.
 */
import { posixQuoteArgv } from '../../extension/shared/shellQuote';
import { DEFAULT_MAP_STRINGS, MAP_PROTOCOL, type MapExportFormat, type MapLiveState, type MapRequests, type ToMapWebviewMessage } from '../../extension/shared/mapProtocol';
import { allFilter, mapToSvg, type MapFilter } from '../../extension/shared/mapLayout';
import type { MapDrill, MapOverview } from '../../extension/shared/mapOverview';
import { PATH_CLASSES, PATH_CLASS_LABELS, type MapDocument, type MapOutlierReport, type MapPair, type PathClass } from '../../extension/shared/mapSchema';
import { fill } from '../../extension/shared/webviewStrings';
import { startWebview } from '../shared/webviewPage';
import { colors, el, fmt, pairDetails, pairText, palette } from './dom';
import { NodeMatrix, type NodeCell } from './nodeMatrix';
import { findingHosts, markLabel, renderFailures, renderOutliers, type OutlierActions } from './outlierList';
import { RankGraph } from './rankGraph';
import { drawScale, RankMatrix } from './rankMatrix';

/** Whole maps up to this many ranks get the rank graph (beyond, 128 identical circles say nothing): drill-downs do. */
const GRAPH_MAX_RANKS = 64;

const app = document.getElementById('app') ?? document.body;
const { rpc, strings } = startWebview<ToMapWebviewMessage, MapRequests, typeof DEFAULT_MAP_STRINGS>(MAP_PROTOCOL, DEFAULT_MAP_STRINGS, msg => onMessage(msg));

type Mode = 'nodes' | 'graph' | 'matrix';
let overview: MapOverview | null = null;
let doc: MapDocument | null = null;
let mode: Mode = 'nodes';
let drill: MapDrill | null = null;
let live: { state: MapLiveState; failureCount: number } | null = null;
const filter: { classes: Set<PathClass>; hosts: Set<string> | null } = { classes: new Set(PATH_CLASSES), hosts: null };

// ---- static structure ----
const toolbar = el('header', { class: 'toolbar', role: 'toolbar', 'aria-label': strings.toolbar });
const nodesBtn = el('button', { type: 'button', 'aria-pressed': 'true' }, strings.nodes);
const graphBtn = el('button', { type: 'button', 'aria-pressed': 'false' }, strings.graph);
const matrixBtn = el('button', { type: 'button', 'aria-pressed': 'false' }, strings.matrix);
const layerSel = el('select', { 'aria-label': strings.classesShown });
const hostSel = el('select', { 'aria-label': strings.hostFilter });
const runBtn = el('button', { type: 'button' }, strings.runMap);
const cancelBtn = el('button', { type: 'button', class: 'cancel' }, strings.cancelRun);
cancelBtn.hidden = true;
const openBtn = el('button', { type: 'button' }, strings.openJson);
const exportBtns = (['svg', 'png', 'json'] as MapExportFormat[]).map(f => { const b = el('button', { type: 'button' }, fill(strings.exportAs, f.toUpperCase())); b.addEventListener('click', () => void exportAs(f)); return b; });
const busyEl = el('span', { class: 'busy', role: 'status', 'aria-live': 'polite' });
toolbar.append(nodesBtn, graphBtn, matrixBtn, layerSel, hostSel, runBtn, cancelBtn, openBtn, ...exportBtns, busyEl);
const banner = el('p', { class: 'banner', role: 'alert' });
const summary = el('p', { class: 'summary' });
const progressBox = el('section', { class: 'progress', 'aria-label': 'Progress of the running map' });
const outliersBox = el('section', { class: 'outliers-box', 'aria-label': strings.outliers });
const commandEl = el('pre', { class: 'cmd', title: strings.commandTitle });
const legend = el('div', { class: 'legend', role: 'group', 'aria-label': strings.classesShown });
const stage = el('div', { class: 'stage' });
const tooltip = el('div', { class: 'tooltip', role: 'tooltip' });
tooltip.hidden = true;
const details = el('aside', { class: 'details', 'aria-live': 'polite', tabindex: '-1' });
const nodeScale = { bar: el('div', { class: 'scale' }), min: el('span'), canvas: el('canvas', { 'aria-hidden': 'true' }), max: el('span') };
nodeScale.bar.append(nodeScale.min, nodeScale.canvas, nodeScale.max);
const marksEl = el('p', { class: 'marks muted' });
const drillBox = el('section', { class: 'drill', 'aria-label': 'Drill-down', tabindex: '-1' });
const drillStage = el('div', { class: 'stage drill-stage' });
const stageHeight = (): number => window.innerHeight * 0.7;

const actions: OutlierActions = {
	showNodes: hosts => { focusNodes(hosts); void drillInto(hosts); },
	showPair: (a, b) => void showPairOf(a, b),
	hostOfRank: r => (overview && r >= 0 && r < overview.rankHost.length && overview.rankHost[r] >= 0 ? overview.hosts[overview.rankHost[r]] : null),
};
const nodeMatrix = new NodeMatrix(n => fill(strings.nodeMatrixLabel, n), c => { busyEl.textContent = nodeMatrix.describe(c); }, c => void drillCell(c), tooltip);
const graph = new RankGraph(stage, { onRank: r => showRank(doc, r), onPair: p => showPair(p), tooltip }, stageHeight);
const rankMatrix = new RankMatrix(strings.matrixLabel, p => { showPair(p); details.focus(); }, t => { busyEl.textContent = t; }, tooltip);
const drillGraph = new RankGraph(drillStage, { onRank: r => showRank(drill?.doc ?? null, r), onPair: p => showPair(p), tooltip }, () => window.innerHeight * 0.5);
stage.append(nodeMatrix.canvas, rankMatrix.canvas);
app.replaceChildren(toolbar, banner, summary, progressBox, outliersBox, commandEl, legend, nodeScale.bar, rankMatrix.scaleBar, stage, marksEl, drillBox, details, tooltip);

nodesBtn.addEventListener('click', () => setMode('nodes'));
graphBtn.addEventListener('click', () => setMode('graph'));
matrixBtn.addEventListener('click', () => setMode('matrix'));
runBtn.addEventListener('click', () => void rpc.request({ type: 'runMap' }).catch(showError));
cancelBtn.addEventListener('click', () => void rpc.request({ type: 'cancelRun' }).then(ok => { busyEl.textContent = ok ? 'Stopping the run: what was measured is kept…' : ''; }).catch(showError));
openBtn.addEventListener('click', () => void rpc.request({ type: 'openMap' }).catch(showError));
hostSel.addEventListener('change', () => { filter.hosts = hostSel.value ? new Set([hostSel.value]) : null; render(); });
layerSel.addEventListener('change', () => { nodeMatrix.layer = layerSel.value === '' ? null : Number(layerSel.value); render(); });

function showError(e: unknown): void { busyEl.textContent = e instanceof Error ? e.message : String(e); }

async function onMessage(msg: ToMapWebviewMessage): Promise<void> {
	if (msg.type === 'showMap') { live = null; setData(msg.overview, msg.map, msg.source); return; }
	if (msg.type === 'busy') {
		busyEl.textContent = msg.busy ? msg.message : '';
		runBtn.disabled = msg.busy;
		cancelBtn.hidden = !msg.busy;
		if (!msg.busy) { progressBox.replaceChildren(); }
		return;
	}
	// A running map.
	const prev = live;
	const failures = [...(prev?.state.failures ?? []), ...msg.failures].slice(0, 500);
	live = { state: { progress: msg.progress, failures, overview: msg.overview ?? prev?.state.overview ?? null, outliers: msg.outliers ?? prev?.state.outliers ?? null, outliersNote: msg.outliersNote }, failureCount: msg.progress.failed };
	if (msg.overview) { setData(msg.overview, null, 'running', true); } else { renderLive(); }
}

/** Plain arrays where the transport did not keep typed arrays. */
function normalise(o: MapOverview): MapOverview {
	const i32 = (v: unknown): Int32Array => (v instanceof Int32Array ? v : Int32Array.from(v as ArrayLike<number>));
	return {
		...o, rankHost: i32(o.rankHost), ranksPerHost: i32(o.ranksPerHost), gpusPerHost: i32(o.gpusPerHost), failedCells: i32(o.failedCells),
		layers: o.layers.map(l => ({ ...l, cells: i32(l.cells), pairs: i32(l.pairs), median: l.median instanceof Float32Array ? l.median : Float32Array.from(l.median as ArrayLike<number>) })),
	};
}

function setMode(m: Mode): void {
	mode = m;
	nodesBtn.setAttribute('aria-pressed', String(m === 'nodes'));
	graphBtn.setAttribute('aria-pressed', String(m === 'graph'));
	matrixBtn.setAttribute('aria-pressed', String(m === 'matrix'));
	render();
}

function setData(o: MapOverview, d: MapDocument | null, src: string, keepView = false): void {
	overview = normalise(o);
	doc = d;
	// A guard map has traffic, not bandwidth: its node matrix would be empty, so it keeps the graph at any size.
	graphBtn.hidden = !(d && (d.world_size <= GRAPH_MAX_RANKS || d.traffic_source));
	matrixBtn.hidden = !d;
	if (!keepView) {
		filter.hosts = null;
		drill = null;
		drillBox.replaceChildren();
		mode = !graphBtn.hidden ? 'graph' : 'nodes';
		details.textContent = strings.hoverHint;
	} else if ((mode === 'graph' && graphBtn.hidden) || (mode === 'matrix' && matrixBtn.hidden)) { mode = 'nodes'; }
	setMode(mode);
	const ov = overview;
	// A live update keeps the class chosen (the same layers, more pairs measured).
	const chosen = keepView && layerSel.value !== '' && Number(layerSel.value) < ov.layers.length ? layerSel.value : '';
	layerSel.replaceChildren(el('option', { value: '' }, strings.allClasses), ...ov.layers.map((l, i) => el('option', { value: String(i) }, `${l.label} (${l.measured} pairs)`)));
	layerSel.value = chosen;
	nodeMatrix.layer = chosen === '' ? null : Number(chosen);
	if (d) {
		const hosts = [...new Set(d.ranks.map(r => r.host))];
		hostSel.replaceChildren(el('option', { value: '' }, fill(strings.allHosts, hosts.length)), ...hosts.map(h => el('option', { value: h }, h)));
		legend.replaceChildren(...PATH_CLASSES.map(c => {
			const n = d.pairs.filter(p => p.class === c).length;
			const label = el('label', { class: 'legend-item' });
			const box = el('input', { type: 'checkbox' });
			box.checked = filter.classes.has(c);
			box.addEventListener('change', () => { if (box.checked) { filter.classes.add(c); } else { filter.classes.delete(c); } render(); });
			label.append(box, el('span', { class: `swatch swatch-${c}` }), document.createTextNode(` ${PATH_CLASS_LABELS[c]} (${n})`));
			return label;
		}));
	}
	const h = ov.header;
	const partial = h.partial ? `Partial map — ${h.partial.reason}: ${ov.counts.measured} of ${ov.counts.pairs} pairs measured (${h.partial.rounds_received} rounds received)${h.partial.failed_ranks.length > 0 ? `; failed rank${h.partial.failed_ranks.length === 1 ? '' : 's'} ${h.partial.failed_ranks.join(', ')}` : ''}.` : '';
	const incomplete = h.incomplete ? `The engine's end was not clean (${h.incomplete.ends_with}): silent rank(s) ${h.incomplete.silent_ranks.join(', ') || 'none'}, ${h.incomplete.barrier_timeouts} barrier timeout(s).` : '';
	banner.textContent = src === 'running' ? '' : [partial, incomplete].filter(Boolean).join(' ');
	banner.hidden = banner.textContent === '';
	summary.textContent = `${h.worldSize} ranks on ${ov.hosts.length} node(s), ${ov.counts.pairs} of ${h.totalPairs} pairs${h.sampled ? ' (sampled: within every node, one pair per pair of nodes)' : ''}, ${ov.counts.measured} measured` +
		`${ov.counts.failed > 0 ? `, ${ov.counts.failed} failed` : ''}${h.schedule ? `; ${h.schedule}` : ''}; ${h.memory} memory; ${h.mpi}` + (h.gpuUnavailable ? `; no GPU: ${h.gpuUnavailable}` : '') +
		(h.generated ? `; generated (${h.generated})` : '') + (src && src !== 'running' ? `; from ${src}` : '');
	commandEl.textContent = h.command ? posixQuoteArgv(h.command) : '';
	commandEl.hidden = !h.command;
	renderOutlierBox();
	renderLive();
	render();
}

/** The analysis on screen (rebuilt only when it changes: a live update must not fold the finding being read). */
let shown: { r: MapOutlierReport | null; note: string | null; interim: boolean } | null = null;

function renderOutlierBox(): void {
	const interim = live !== null;
	const r: MapOutlierReport | null = interim ? live?.state.outliers ?? null : overview?.outliers ?? null;
	const note = interim ? live?.state.outliersNote ?? (r ? null : 'Outliers: after the first rounds.') : overview && !r && !overview.header.trafficSource ? 'Not analysed: a map this big is analysed by the runner that measures it (gpumpi-doctor map, or a run from VS Code).' : null;
	if (shown && shown.r === r && shown.note === note && shown.interim === interim) { return; }
	shown = { r, note, interim };
	outliersBox.replaceChildren(...renderOutliers(r, actions, { interim, note, suspectsTitle: strings.suspects, heldBackTitle: strings.heldBack }));
	// Mark the outlier nodes on the matrix axes.
	const marks = new Map<number, string>();
	const index = new Map((overview?.hosts ?? []).map((hst, i) => [hst, i]));
	for (const f of r?.outliers ?? []) {
		for (const hst of findingHosts(f, actions.hostOfRank)) {
			const i = index.get(hst);
			if (i !== undefined && !marks.has(i)) { marks.set(i, markLabel(f)); }
		}
	}
	nodeMatrix.marks = marks;
	marksEl.textContent = marks.size > 0 ? `Marked on the axes: ${[...marks.entries()].slice(0, 12).map(([i, why]) => `${overview?.hosts[i]} (${why})`).join(', ')}` : '';
}

function renderLive(): void {
	if (!live) { return; }
	const p = live.state.progress;
	const bar = el('progress', { max: String(Math.max(1, p.rounds)), value: String(p.round), 'aria-label': 'Rounds measured' });
	const text = el('p', { class: 'progress-text' }, `${p.final ? 'End of the run' : `Round ${p.round} of ${p.rounds}`}: ${p.measured} of ${p.pairs} pairs measured${p.failed > 0 ? `, ${p.failed} failed` : ''}, ${p.elapsedS.toFixed(1)} s${p.synchronized ? '' : ' (rounds no longer synchronised)'}`);
	progressBox.replaceChildren(bar, text, ...renderFailures(live.state.failures, live.failureCount, strings.failedSoFar, actions));
	renderOutlierBox();
}

function render(): void {
	if (!overview) { summary.textContent = strings.noMap; return; }
	const t0 = performance.now();
	const size = Math.max(200, Math.floor(Math.min((stage.clientWidth || 900) - 4, stageHeight())));
	nodeMatrix.canvas.hidden = nodeScale.bar.hidden = marksEl.hidden = mode !== 'nodes';
	graph.hidden = mode !== 'graph';
	rankMatrix.hidden = mode !== 'matrix';
	layerSel.hidden = mode !== 'nodes';
	hostSel.hidden = legend.hidden = mode === 'nodes';
	let cells = 0;
	if (mode === 'nodes') {
		nodeMatrix.draw(overview, size);
		cells = nodeMatrix.drawnCells;
		const layer = layerSel.value === '' ? null : overview.layers[Number(layerSel.value)];
		const lo = layer ? layer.min : overview.bwMin, hi = layer ? layer.max : overview.bwMax;
		drawScale(nodeScale.canvas, nodeScale.min, nodeScale.max, lo, hi, '; each cell: the median of its node pair, failed cells in red; shrunk below a pixel, the lowest cell wins');
	} else if (doc && mode === 'graph') {
		const v = graph.draw(doc, filter as MapFilter, filter.hosts);
		cells = v.edges.length;
	} else if (doc) {
		const v = graph.view ?? graph.draw(doc, filter as MapFilter);
		rankMatrix.draw(doc, v, filter as MapFilter, size);
		cells = doc.world_size ** 2;
	}
	const ms = performance.now() - t0;
	document.body.dataset.renderMs = ms.toFixed(1);
	document.body.dataset.view = mode;
	void rpc.request({ type: 'rendered', view: mode, nodes: overview.hosts.length, cells, outliers: overview.outliers?.outliers.length ?? 0, ms }).catch(() => undefined);
}

/** Put the matrix cursor on the cell of one or two nodes. */
function focusNodes(hosts: string[]): void {
	if (!overview) { return; }
	const i = overview.hosts.indexOf(hosts[0]), j = overview.hosts.indexOf(hosts[1] ?? hosts[0]);
	if (i < 0 || j < 0) { return; }
	if (mode !== 'nodes') { setMode('nodes'); }
	nodeMatrix.moveTo(i, j);
}

async function drillCell(c: NodeCell): Promise<void> {
	if (!overview) { return; }
	await drillInto(c.i === c.j ? [overview.hosts[c.i]] : [overview.hosts[c.i], overview.hosts[c.j]]);
}

/** Ask the host for one node or a node pair and show its GPUs, ranks, numbers and worst pairs. */
async function drillInto(hosts: string[]): Promise<void> {
	let d: MapDrill | null;
	try { d = await rpc.request({ type: 'drill', hosts }); } catch (e) { showError(e); return; }
	if (!d) { return; }
	drill = d;
	const title = hosts.length > 1 ? `${hosts[0]} — ${hosts[1]}: the pairs between them` : `${hosts[0]}: all its pairs`;
	const table = el('table', { class: 'classes' });
	const head = el('tr');
	for (const t of ['path class', 'pairs', 'measured', 'failed', 'median', 'min', 'max']) { head.append(el('th', { scope: 'col' }, t)); }
	table.append(head);
	for (const c of d.classes) {
		const tr = el('tr');
		for (const t of [c.label, String(c.pairs), String(c.measured), String(c.failed), fmt(c.median, 2, 'GB/s'), fmt(c.min, 2, 'GB/s'), fmt(c.max, 2, 'GB/s')]) { tr.append(el('td', {}, t)); }
		table.append(tr);
	}
	const list = (pairs: MapPair[], label: string): HTMLElement[] => {
		if (pairs.length === 0) { return []; }
		const ul = el('ul', { class: 'pairs', 'aria-label': label });
		for (const p of pairs) {
			const b = el('button', { type: 'button', class: `pair swatch-border-${p.class}` }, pairText(p));
			b.addEventListener('click', () => showPair(p));
			const li = el('li'); li.append(b); ul.append(li);
		}
		return [el('h3', {}, label), ul];
	};
	drillBox.replaceChildren(el('h2', {}, title), table, ...list(d.failed, 'Failed pairs'), ...list(d.worst, `Lowest bandwidth (of ${d.pairs} pairs)`),
		el('h3', {}, `GPUs and ranks of ${hosts.join(' and ')} (${d.doc.ranks.length} ranks, ${d.doc.pairs.length} pairs among them)`), drillStage);
	drillGraph.draw(d.doc, allFilter());
	drillBox.focus();
}

async function showPairOf(a: number, b: number): Promise<void> {
	const local = doc?.pairs.find(p => (p.a === a && p.b === b) || (p.a === b && p.b === a));
	if (local) { showPair(local); return; }
	try {
		const p = await rpc.request({ type: 'pair', a, b });
		if (p) { showPair(p); } else { details.textContent = `${a} ↔ ${b}: not in this map`; }
	} catch (e) { showError(e); }
}

function showPair(p: MapPair): void {
	details.replaceChildren(...pairDetails(p));
	details.focus();
}

function showRank(d: MapDocument | null, rank: number): void {
	const r = d?.ranks.find(x => x.rank === rank);
	if (!d || !r) { return; }
	const gpu = r.gpu ? `${r.gpu.name} ${r.gpu.uuid} (PCI ${r.gpu.pci_bus_id}, NUMA ${r.gpu.numa_node})` : 'no GPU';
	const nics = r.nics.filter(n => !n.virtual).map(n => `${n.name}${n.kind === 'ib' ? ' (RDMA)' : ''} NUMA ${n.numa_node}`).join(', ') || 'none but virtual';
	const list = el('ul', { class: 'pairs' });
	for (const p of d.pairs.filter(x => (x.a === rank || x.b === rank) && filter.classes.has(x.class)).slice(0, 200)) {
		const b = el('button', { type: 'button', class: `pair swatch-border-${p.class}` }, pairText(p));
		b.addEventListener('click', () => showPair(p));
		const li = el('li'); li.append(b); list.append(li);
	}
	details.replaceChildren(el('h2', {}, `Rank ${rank} on ${r.host} (pid ${r.pid})`),
		el('p', {}, `GPU: ${gpu}`), el('p', {}, `CPUs: ${r.cpu_list}; NICs: ${nics}; nvidia_peermem: ${r.peermem.loaded ? r.peermem.module : 'not loaded'}`),
		el('h3', {}, 'Pairs (Enter for evidence)'), list);
}

// ---- export ----
/** Rasterise an SVG document at `scale` (the img-src CSP allows data:). */
function svgToPng(svg: string, scale: number): Promise<string> {
	return new Promise((resolve, reject) => {
		const img = new Image();
		img.onload = () => {
			const c = document.createElement('canvas');
			c.width = Math.ceil(img.naturalWidth * scale); c.height = Math.ceil(img.naturalHeight * scale);
			const ctx = c.getContext('2d');
			if (!ctx) { reject(new Error('no 2D canvas')); return; }
			ctx.scale(scale, scale);
			ctx.drawImage(img, 0, 0);
			resolve(c.toDataURL('image/png'));
		};
		img.onerror = () => reject(new Error('the SVG of the map could not be drawn'));
		const bytes = new TextEncoder().encode(svg);
		let bin = '';
		for (let i = 0; i < bytes.length; i += 0x8000) { bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000)); }
		img.src = `data:image/svg+xml;base64,${btoa(bin)}`;
	});
}

/** The rank graph an SVG export shows: the whole map's (graph view) or the drill-down's. */
function svgOfGraph(): string | null {
	if (mode === 'graph' && doc && graph.view) { return mapToSvg(doc, graph.view, palette(), colors()); }
	if (drill && drillGraph.view) { return mapToSvg(drill.doc, drillGraph.view, palette(), colors()); }
	return null;
}

async function exportAs(format: MapExportFormat): Promise<void> {
	if (!overview) { return; }
	let data = '';
	if (format === 'svg') {
		const svg = svgOfGraph();
		if (!svg) { busyEl.textContent = 'SVG export: open the graph of a small map, or drill down into a node first.'; return; }
		data = svg;
	} else if (format === 'png') {
		if (mode === 'nodes') { data = nodeMatrix.canvas.toDataURL('image/png'); } else if (mode === 'matrix') { data = rankMatrix.canvas.toDataURL('image/png'); } else {
			// The whole map with its labels and legend (the SVG export drawn at 2×), not the part the viewport shows.
			const svg = svgOfGraph();
			if (!svg) { return; }
			try { data = await svgToPng(svg, 2); } catch (e) { showError(e); return; }
		}
	}
	try {
		const saved = await rpc.request({ type: 'export', format, data });
		busyEl.textContent = saved ? fill(strings.exported, format.toUpperCase()) : '';
	} catch (e) { showError(e); }
}

window.addEventListener('resize', () => render());
void rpc.request({ type: 'ready' }).then(r => {
	if (r.live) { live = { state: r.live, failureCount: r.live.progress.failed }; }
	if (r.overview) { setData(r.overview, r.map, r.source); } else if (r.live?.overview) { setData(r.live.overview, null, 'running', true); } else { render(); }
	busyEl.textContent = r.busy ? strings.running : '';
	runBtn.disabled = r.busy;
	cancelBtn.hidden = !r.busy;
}).catch(showError);
