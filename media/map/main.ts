/**
 * Transport-map webview client: asks the host for the map with `ready`, then draws it in two views: a graph (hosts
 * as boxes, GPUs inside, ranks as dots, one curve per measured pair coloured by path class, width = bandwidth) and a
 * rank × rank bandwidth heat map. Both are canvases (a 1 024-rank matrix has a million cells); ranks are also
 * focusable buttons laid over the graph, the matrix has a keyboard cursor, so everything is reachable with Tab,
 * arrows and Enter. Filters by class and host. Exports (SVG, PNG, JSON) go through the host's save dialog.
 * No inline scripts or styles: the CSP allows only this nonce'd bundle and map.css.
 */
import { posixQuoteArgv } from '../../extension/shared/shellQuote';
import { DEFAULT_MAP_STRINGS, MAP_PROTOCOL, type MapExportFormat, type MapRequests, type ToMapWebviewMessage } from '../../extension/shared/mapProtocol';
import {
	DEFAULT_PALETTE, bandwidthMatrix, heatColor, heatScale, heatT, heatTicks, layoutMap, mapToSvg, placeEdgeLabels,
	type ClassPalette, type MapEdge, type MapFilter, type MapView,
} from '../../extension/shared/mapLayout';
import { CHANNEL_LABELS, PATH_CLASSES, PATH_CLASS_LABELS, type MapDocument, type MapPair, type PathClass } from '../../extension/shared/mapSchema';
import { fill } from '../../extension/shared/webviewStrings';
import { startWebview } from '../shared/webviewPage';

const app = document.getElementById('app') ?? document.body;
const { rpc, strings } = startWebview<ToMapWebviewMessage, MapRequests, typeof DEFAULT_MAP_STRINGS>(MAP_PROTOCOL, DEFAULT_MAP_STRINGS, msg => onMessage(msg));

let doc: MapDocument | null = null;
let view: MapView | null = null;
let mode: 'graph' | 'matrix' = 'graph';
let scale = 1;
const filter: { classes: Set<PathClass>; hosts: Set<string> | null } = { classes: new Set(PATH_CLASSES), hosts: null };
let cursor = { a: 0, b: 1 };
let hovered: MapEdge | null = null;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
	const e = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs)) { e.setAttribute(k, v); }
	if (text !== undefined) { e.textContent = text; }
	return e;
}

// ---- static structure ----
const toolbar = el('header', { class: 'toolbar', role: 'toolbar', 'aria-label': strings.toolbar });
const graphBtn = el('button', { type: 'button', 'aria-pressed': 'true' }, strings.graph);
const matrixBtn = el('button', { type: 'button', 'aria-pressed': 'false' }, strings.matrix);
const hostSel = el('select', { 'aria-label': strings.hostFilter });
const runBtn = el('button', { type: 'button' }, strings.runMap);
const openBtn = el('button', { type: 'button' }, strings.openJson);
const exportBtns = (['svg', 'png', 'json'] as MapExportFormat[]).map(f => { const b = el('button', { type: 'button' }, fill(strings.exportAs, f.toUpperCase())); b.addEventListener('click', () => void exportAs(f)); return b; });
const busyEl = el('span', { class: 'busy', role: 'status', 'aria-live': 'polite' });
toolbar.append(graphBtn, matrixBtn, hostSel, runBtn, openBtn, ...exportBtns, busyEl);
const legend = el('div', { class: 'legend', role: 'group', 'aria-label': strings.classesShown });
const summary = el('p', { class: 'summary' });
const commandEl = el('pre', { class: 'cmd', title: strings.commandTitle });
const stage = el('div', { class: 'stage' });
const canvas = el('canvas', { class: 'graph', 'aria-hidden': 'true' });
const overlay = el('div', { class: 'overlay' });
const matrixCanvas = el('canvas', { class: 'matrix', tabindex: '0', role: 'grid', 'aria-label': strings.matrixLabel });
stage.append(canvas, overlay, matrixCanvas);
const scaleBar = el('div', { class: 'scale' });
const scaleMin = el('span');
const scaleCanvas = el('canvas', { 'aria-hidden': 'true' });
const scaleMax = el('span');
scaleBar.append(scaleMin, scaleCanvas, scaleMax);
const details = el('aside', { class: 'details', 'aria-live': 'polite', tabindex: '-1' });
const tooltip = el('div', { class: 'tooltip', role: 'tooltip' });
tooltip.hidden = true;
app.replaceChildren(toolbar, legend, summary, commandEl, scaleBar, stage, details, tooltip);

graphBtn.addEventListener('click', () => setMode('graph'));
matrixBtn.addEventListener('click', () => setMode('matrix'));
runBtn.addEventListener('click', () => void rpc.request({ type: 'runMap' }).catch(showError));
openBtn.addEventListener('click', () => void rpc.request({ type: 'openMap' }).catch(showError));
hostSel.addEventListener('change', () => { filter.hosts = hostSel.value ? new Set([hostSel.value]) : null; render(); });

function css(name: string, fallback: string): string {
	const v = getComputedStyle(document.body).getPropertyValue(name).trim();
	return v || fallback;
}
function palette(): ClassPalette {
	return {
		same_gpu: css('--vscode-charts-green', DEFAULT_PALETTE.same_gpu), p2p: css('--vscode-charts-blue', DEFAULT_PALETTE.p2p),
		gpudirect_rdma: css('--vscode-charts-purple', DEFAULT_PALETTE.gpudirect_rdma), host_staging: css('--vscode-charts-orange', DEFAULT_PALETTE.host_staging),
		not_cuda_aware: css('--vscode-charts-red', DEFAULT_PALETTE.not_cuda_aware), host_memory: css('--vscode-descriptionForeground', DEFAULT_PALETTE.host_memory),
	};
}
function colors(): { fg: string; bg: string; box: string } {
	return { fg: css('--vscode-editor-foreground', '#cccccc'), bg: css('--vscode-editor-background', '#1e1e1e'), box: css('--vscode-panel-border', '#555555') };
}

function showError(e: unknown): void { busyEl.textContent = e instanceof Error ? e.message : String(e); }

async function onMessage(msg: ToMapWebviewMessage): Promise<void> {
	if (msg.type === 'showMap') { setDoc(msg.map, msg.source); } else { busyEl.textContent = msg.busy ? msg.message : ''; runBtn.disabled = msg.busy; }
}

function setMode(m: 'graph' | 'matrix'): void {
	mode = m;
	graphBtn.setAttribute('aria-pressed', String(m === 'graph'));
	matrixBtn.setAttribute('aria-pressed', String(m === 'matrix'));
	render();
}

function setDoc(d: MapDocument, source: string): void {
	doc = d;
	filter.hosts = null;
	const hosts = [...new Set(d.ranks.map(r => r.host))];
	hostSel.replaceChildren(el('option', { value: '' }, fill(strings.allHosts, hosts.length)), ...hosts.map(h => el('option', { value: h }, h)));
	legend.replaceChildren(...PATH_CLASSES.map(c => {
		const n = d.pairs.filter(p => p.class === c).length;
		const label = el('label', { class: 'legend-item' });
		const box = el('input', { type: 'checkbox' });
		box.checked = filter.classes.has(c);
		box.addEventListener('change', () => { if (box.checked) { filter.classes.add(c); } else { filter.classes.delete(c); } render(); });
		const swatch = el('span', { class: `swatch swatch-${c}` });
		label.append(box, swatch, document.createTextNode(` ${PATH_CLASS_LABELS[c]} (${n})`));
		return label;
	}));
	const ok = d.pairs.filter(p => p.status === 'ok').length;
	summary.textContent = `${d.world_size} ranks on ${hosts.length} host(s), ${d.pairs.length} of ${d.total_pairs} pairs${d.sampled ? ' (sampled)' : ''}, ${ok} measured; ` +
		`${d.memory} memory; ${d.mpi.library_version.split(',')[0]}` + (d.gpu_unavailable_reason ? `; no GPU: ${d.gpu_unavailable_reason}` : '') +
		(d.generated ? `; generated fixture (${d.generated.from})` : '') + (source ? `; from ${source}` : '') +
		(d.pairs.filter(p => !p.same_host).length > 500 ? '. Edges between hosts are drawn faint: pick a host or use the matrix for their numbers.' : '');
	commandEl.textContent = d.runner ? posixQuoteArgv(d.runner.command) : '';
	commandEl.hidden = !d.runner;
	details.textContent = strings.hoverHint;
	render();
}

function render(): void {
	if (!doc) { summary.textContent = strings.noMap; return; }
	const t0 = performance.now();
	view = layoutMap(doc, filter as MapFilter);
	canvas.hidden = overlay.hidden = mode !== 'graph';
	matrixCanvas.hidden = scaleBar.hidden = mode !== 'matrix';
	if (mode === 'graph') { drawGraph(view); } else { drawMatrix(); }
	document.body.dataset.renderMs = (performance.now() - t0).toFixed(1);
}

function fmt(v: number | null, d: number, unit: string): string { return v === null ? '—' : `${v.toFixed(d)} ${unit}`; }

/** What the graph is drawn with: the context, the device pixel ratio, the theme's colours. */
interface GraphPen { ctx: CanvasRenderingContext2D; dpr: number; c: { fg: string; bg: string; box: string }; pal: ClassPalette }

function drawGraph(v: MapView): void {
	sizeGraph(v);
	const ctx = canvas.getContext('2d');
	if (!ctx) { return; }
	const pen: GraphPen = { ctx, dpr: window.devicePixelRatio || 1, c: colors(), pal: palette() };
	ctx.setTransform(pen.dpr, 0, 0, pen.dpr, 0, 0);
	ctx.clearRect(0, 0, canvas.width, canvas.height);
	drawShapes(pen, v);
	drawGraphText(pen, v);
	overlay.replaceChildren(...rankButtons(v));
}

/** Fit the width (and the height when that still leaves the ranks clickable), never more than 4×; size canvas and overlay. */
function sizeGraph(v: MapView): void {
	const availW = Math.max(300, (stage.clientWidth || 900) - 4);
	const availH = Math.max(300, window.innerHeight * 0.75 - 4);
	scale = Math.min(4, availW / v.width);
	if (v.height * scale > availH && availH / v.height >= 0.6) { scale = availH / v.height; }
	const dpr = window.devicePixelRatio || 1;
	canvas.width = Math.ceil(v.width * scale * dpr); canvas.height = Math.ceil(v.height * scale * dpr);
	canvas.style.width = `${v.width * scale}px`; canvas.style.height = `${v.height * scale}px`;
	overlay.style.width = canvas.style.width; overlay.style.height = canvas.style.height;
}

/** Many edges: one path per (class, width rounded to 0.5 px), so thousands of curves cost a few stroke calls. */
function strokeEdges({ ctx, pal }: GraphPen, edges: MapEdge[], widthOf: (e: MapEdge) => number): void {
	const groups = new Map<string, MapEdge[]>();
	for (const e of edges) {
		const key = `${e.pair.class}|${widthOf(e)}`;
		const g = groups.get(key);
		if (g) { g.push(e); } else { groups.set(key, [e]); }
	}
	for (const [key, list] of groups) {
		const [cls, w] = key.split('|');
		ctx.strokeStyle = pal[cls as PathClass]; ctx.lineWidth = Number(w);
		ctx.beginPath();
		for (const e of list) { ctx.moveTo(e.x1, e.y1); ctx.quadraticCurveTo(e.cx, e.cy, e.x2, e.y2); }
		ctx.stroke();
	}
}

/** In map coordinates: edges between hosts, host and GPU boxes, edges within hosts, the highlighted edge, the ranks. */
function drawShapes(pen: GraphPen, v: MapView): void {
	const { ctx, dpr, c } = pen;
	// Big maps: thinner edges so the chords inside a host stay apart.
	const widthScale = v.ranks.size > 256 ? 0.3 : 1;
	const ownWidth = (e: MapEdge): number => Math.max(0.5, Math.round(e.width * widthScale * 2) / 2);
	// 1. Edges between hosts: faint when there are many (the matrix view shows their numbers).
	const inter = v.edges.filter(e => !e.pair.same_host), intra = v.edges.filter(e => e.pair.same_host);
	ctx.setTransform(scale * dpr, 0, 0, scale * dpr, 0, 0);
	ctx.globalAlpha = inter.length > 500 ? 0.08 : inter.length > 50 ? 0.3 : 0.8;
	strokeEdges(pen, inter, inter.length > 500 ? () => 1 : ownWidth);
	// 2. Host and GPU boxes (filled, so the faint edges stay behind them).
	for (const h of v.hosts) {
		const dim = filter.hosts !== null && !filter.hosts.has(h.name);
		ctx.globalAlpha = dim ? 0.35 : 0.92;
		ctx.fillStyle = c.bg; ctx.fillRect(h.x, h.y, h.w, h.h);
		ctx.globalAlpha = dim ? 0.35 : 1;
		ctx.strokeStyle = c.box; ctx.lineWidth = 1 / scale * 1.5; ctx.setLineDash([]);
		ctx.strokeRect(h.x, h.y, h.w, h.h);
		ctx.setLineDash([3, 2]);
		for (const g of h.gpus) { ctx.strokeRect(g.x, g.y, g.w, g.h); }
		ctx.setLineDash([]);
	}
	// 3. Edges within hosts, 4. the highlighted edge, 5. ranks.
	ctx.globalAlpha = 0.85;
	strokeEdges(pen, intra, ownWidth);
	if (hovered) {
		ctx.globalAlpha = 1; ctx.strokeStyle = c.fg; ctx.lineWidth = hovered.width + 2;
		ctx.beginPath(); ctx.moveTo(hovered.x1, hovered.y1); ctx.quadraticCurveTo(hovered.cx, hovered.cy, hovered.x2, hovered.y2); ctx.stroke();
	}
	ctx.globalAlpha = 1; ctx.fillStyle = c.fg;
	ctx.beginPath();
	for (const r of v.ranks.values()) { ctx.moveTo(r.x + v.rankRadius, r.y); ctx.arc(r.x, r.y, v.rankRadius, 0, 2 * Math.PI); }
	ctx.fill();
}

/** In screen pixels (legible at any scale): host and GPU names, rank numbers, and the edges' GB/s on small maps. */
function drawGraphText({ ctx, dpr, c, pal }: GraphPen, v: MapView): void {
	ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
	ctx.fillStyle = c.fg; ctx.textBaseline = 'alphabetic';
	const big = scale >= 1.2;
	for (const h of v.hosts) {
		ctx.font = `${big ? 13 : 10}px sans-serif`;
		ctx.fillText(h.name, (h.x + 4) * scale, (h.y + 12) * scale, h.w * scale - 6);
		if (scale >= 0.9) {
			ctx.font = `${big ? 11 : 8}px sans-serif`;
			for (const g of h.gpus) { ctx.fillText(g.label, (g.x + 3) * scale, (g.y + 9) * scale + 2, g.w * scale - 4); }
		}
	}
	if (v.ranks.size <= 128 && scale >= 1) {
		ctx.fillStyle = c.bg; ctx.font = `bold ${Math.min(12, 6 * scale)}px sans-serif`; ctx.textAlign = 'center'; ctx.textBaseline = 'middle';
		for (const r of v.ranks.values()) { ctx.fillText(String(r.rank), r.x * scale, r.y * scale + 0.5); }
	}
	if (v.edges.length <= 40) {
		ctx.font = '11px sans-serif'; ctx.textAlign = 'center'; ctx.textBaseline = 'middle';
		const labels = v.edges.map(e => e.pair.bandwidth_gbps === null ? e.pair.status : `${e.pair.bandwidth_gbps.toFixed(1)} GB/s`);
		const widths = labels.map(l => ctx.measureText(l).width + 6);
		const spots = placeEdgeLabels(v.edges, widths.map(w => w / scale), 16 / scale);
		v.edges.forEach((e, i) => {
			const mx = spots[i].x * scale, my = spots[i].y * scale, w = widths[i];
			ctx.fillStyle = c.bg; ctx.globalAlpha = 0.85; ctx.fillRect(mx - w / 2, my - 8, w, 16);
			ctx.globalAlpha = 1; ctx.fillStyle = pal[e.pair.class]; ctx.fillText(labels[i], mx, my);
		});
	}
	ctx.textAlign = 'start'; ctx.textBaseline = 'alphabetic';
}

/** Focusable rank buttons laid over the canvas (Tab, Enter: the rank's pairs in the details). */
function rankButtons(v: MapView): HTMLButtonElement[] {
	const buttons: HTMLButtonElement[] = [];
	for (const r of v.ranks.values()) {
		const b = el('button', { type: 'button', class: 'rank', 'aria-label': `rank ${r.rank} on ${r.host}` });
		const size = Math.max(8, 14 * scale);
		b.style.left = `${r.x * scale - size / 2}px`; b.style.top = `${r.y * scale - size / 2}px`;
		b.style.width = b.style.height = `${size}px`;
		b.addEventListener('click', () => showRank(r.rank));
		b.addEventListener('focus', () => showRank(r.rank));
		buttons.push(b);
	}
	return buttons;
}

function pairsOf(rank: number): MapPair[] { return doc ? doc.pairs.filter(p => (p.a === rank || p.b === rank) && filter.classes.has(p.class)) : []; }

function pairText(p: MapPair): string {
	return `${p.a} ↔ ${p.b}: ${PATH_CLASS_LABELS[p.class]}${p.channel ? ` over ${CHANNEL_LABELS[p.channel]}` : ''}, ${fmt(p.bandwidth_gbps, 2, 'GB/s')}, ${fmt(p.latency_us, 2, 'µs')}${p.status === 'ok' ? '' : ` [${p.status}]`}`;
}

function showPair(p: MapPair): void {
	details.replaceChildren(el('h2', {}, pairText(p)), el('p', {}, p.reason),
		el('h3', {}, 'Evidence'), el('ul', {}), ...(p.engine_class ? [el('p', {}, `The engine classified it as ${PATH_CLASS_LABELS[p.engine_class]}; the run's transport evidence changed that.`)] : []));
	const ul = details.querySelector('ul')!;
	for (const e of p.evidence) { ul.append(el('li', {}, e)); }
}

function showRank(rank: number): void {
	if (!doc) { return; }
	const r = doc.ranks.find(x => x.rank === rank);
	if (!r) { return; }
	const gpu = r.gpu ? `${r.gpu.name} ${r.gpu.uuid} (PCI ${r.gpu.pci_bus_id}, NUMA ${r.gpu.numa_node})` : 'no GPU';
	const nics = r.nics.filter(n => !n.virtual).map(n => `${n.name}${n.kind === 'ib' ? ' (RDMA)' : ''} NUMA ${n.numa_node}`).join(', ') || 'none but virtual';
	const list = el('ul', { class: 'pairs' });
	for (const p of pairsOf(rank).slice(0, 200)) {
		const b = el('button', { type: 'button', class: `pair swatch-border-${p.class}` }, pairText(p));
		b.addEventListener('click', () => showPair(p));
		const li = el('li'); li.append(b); list.append(li);
	}
	details.replaceChildren(el('h2', {}, `Rank ${rank} on ${r.host} (pid ${r.pid})`),
		el('p', {}, `GPU: ${gpu}`), el('p', {}, `CPUs: ${r.cpu_list}; NICs: ${nics}; nvidia_peermem: ${r.peermem.loaded ? r.peermem.module : 'not loaded'}`),
		el('h3', {}, 'Pairs (Enter for evidence)'), list);
}

function nearestEdge(x: number, y: number): MapEdge | null {
	if (!view) { return null; }
	let best: MapEdge | null = null, bestD = 36;
	for (const e of view.edges) {
		const k = e;
		for (let i = 0; i <= 8; i++) {
			const t = i / 8, u = 1 - t;
			const px = u * u * e.x1 + 2 * u * t * k.cx + t * t * e.x2, py = u * u * e.y1 + 2 * u * t * k.cy + t * t * e.y2;
			const d = (px - x) ** 2 + (py - y) ** 2;
			if (d < bestD) { bestD = d; best = e; }
		}
	}
	return best;
}

let pending = false;
canvas.addEventListener('mousemove', ev => {
	if (pending) { return; }
	pending = true;
	requestAnimationFrame(() => {
		pending = false;
		const rect = canvas.getBoundingClientRect();
		const e = nearestEdge((ev.clientX - rect.left) / scale, (ev.clientY - rect.top) / scale);
		if (e !== hovered) { hovered = e; if (view) { drawGraph(view); } }
		tooltip.hidden = !e;
		if (e) { tooltip.textContent = pairText(e.pair); tooltip.style.left = `${ev.clientX + 12}px`; tooltip.style.top = `${ev.clientY + 12}px`; }
	});
});
canvas.addEventListener('mouseleave', () => { tooltip.hidden = true; });
canvas.addEventListener('click', () => { if (hovered) { showPair(hovered.pair); } });

// ---- matrix ----
/** Displayed size of the matrix (CSS px): fits the stage's width and the window's height. */
function matrixDisplay(): number { return Math.max(200, Math.floor(Math.min((stage.clientWidth || 900) - 4, window.innerHeight * 0.75 - 4))); }
/** Drawn pixels per cell (the canvas is then scaled to matrixDisplay()). */
function matrixCell(): number { return doc ? Math.max(1, Math.floor(matrixDisplay() / doc.world_size)) : 1; }
/** Matrix cell under a pointer position. */
function cellAt(ev: MouseEvent): { a: number; b: number } {
	const rect = matrixCanvas.getBoundingClientRect();
	const n = doc?.world_size ?? 1;
	return { a: Math.min(n - 1, Math.floor(((ev.clientY - rect.top) / rect.height) * n)), b: Math.min(n - 1, Math.floor(((ev.clientX - rect.left) / rect.width) * n)) };
}

let matrixData: { n: number; values: Float64Array; representative: Uint8Array } | null = null;

function drawMatrix(): void {
	if (!doc || !view) { return; }
	matrixData = bandwidthMatrix(doc, filter as MapFilter);
	const { n, values, representative } = matrixData;
	const cell = matrixCell();
	const W = n * cell;
	matrixCanvas.width = W; matrixCanvas.height = W;
	const shown = Math.min(matrixDisplay(), Math.max(W, 240));
	matrixCanvas.style.width = `${shown}px`; matrixCanvas.style.height = `${shown}px`;
	const ctx = matrixCanvas.getContext('2d');
	if (!ctx) { return; }
	const img = ctx.createImageData(W, W);
	const data = img.data;
	const lut = Array.from({ length: 256 }, (_, i) => heatColor(i / 255));
	for (let a = 0; a < n; a++) {
		for (let b = 0; b < n; b++) {
			const v = values[a * n + b];
			if (Number.isNaN(v)) { continue; }
			const [r, g, bl] = lut[Math.round(Math.min(1, Math.max(0, heatT(v, view.bwMin, view.bwMax))) * 255)];
			const alpha = representative[a * n + b] ? 150 : 255;
			for (let dy = 0; dy < cell; dy++) {
				let o = ((a * cell + dy) * W + b * cell) * 4;
				for (let dx = 0; dx < cell; dx++, o += 4) { data[o] = r; data[o + 1] = g; data[o + 2] = bl; data[o + 3] = alpha; }
			}
		}
	}
	ctx.putImageData(img, 0, 0);
	ctx.strokeStyle = colors().fg; ctx.lineWidth = Math.max(1, cell / 4);
	ctx.strokeRect(cursor.b * cell, cursor.a * cell, cell, cell);
	drawScale(view.bwMin, view.bwMax);
	matrixCanvas.setAttribute('aria-label', `Bandwidth matrix ${n}×${n}, ${view.bwMin.toFixed(2)}–${view.bwMax.toFixed(2)} GB/s (${heatScale(view.bwMin, view.bwMax)} colour scale); cursor at ${cursor.a},${cursor.b}: arrow keys move, Enter shows the pair`);
}

function drawScale(min: number, max: number): void {
	const w = 240, h = 12;
	scaleCanvas.width = w; scaleCanvas.height = h;
	const ctx = scaleCanvas.getContext('2d');
	if (!ctx) { return; }
	for (let x = 0; x < w; x++) { const [r, g, b] = heatColor(x / (w - 1)); ctx.fillStyle = `rgb(${r},${g},${b})`; ctx.fillRect(x, 0, 1, h); }
	// Tick marks at the legend's values (heatTicks: distinct labels; linear under a decade, log from one).
	const ticks = heatTicks(min, max);
	ctx.fillStyle = colors().bg;
	for (const t of ticks.slice(1, -1)) { ctx.fillRect(Math.round(t.t * (w - 1)), 0, 1, h); }
	scaleCanvas.title = ticks.map(t => `${t.label} GB/s`).join(' · ');
	scaleMin.textContent = `${ticks[0]?.label ?? min.toFixed(2)} GB/s`;
	scaleMax.textContent = `${ticks[ticks.length - 1]?.label ?? max.toFixed(2)} GB/s (${heatScale(min, max)} scale${ticks.length > 2 ? `; marks at ${ticks.slice(1, -1).map(t => t.label).join(', ')}` : ''})` + (doc?.sampled ? '; pale blocks: the one measured pair of two hosts stands for all their pairs' : '');
}

function pairAt(a: number, b: number): MapPair | undefined {
	const [x, y] = a < b ? [a, b] : [b, a];
	const direct = doc?.pairs.find(p => p.a === x && p.b === y);
	if (direct || !doc?.sampled) { return direct; }
	// Sampled map: the measured pair of the two hosts stands for this one.
	const hx = doc.ranks[x]?.host, hy = doc.ranks[y]?.host;
	return doc.pairs.find(p => !p.same_host && ((doc!.ranks[p.a]?.host === hx && doc!.ranks[p.b]?.host === hy) || (doc!.ranks[p.a]?.host === hy && doc!.ranks[p.b]?.host === hx)));
}

matrixCanvas.addEventListener('keydown', ev => {
	if (!doc) { return; }
	const n = doc.world_size;
	const step = ev.shiftKey ? 8 : 1;
	const moves: Record<string, [number, number]> = { ArrowUp: [-step, 0], ArrowDown: [step, 0], ArrowLeft: [0, -step], ArrowRight: [0, step] };
	if (moves[ev.key]) {
		cursor = { a: Math.min(n - 1, Math.max(0, cursor.a + moves[ev.key][0])), b: Math.min(n - 1, Math.max(0, cursor.b + moves[ev.key][1])) };
		ev.preventDefault(); drawMatrix();
		const p = pairAt(cursor.a, cursor.b);
		busyEl.textContent = p ? pairText(p) : `${cursor.a} ↔ ${cursor.b}: not measured`;
	} else if (ev.key === 'Enter') {
		const p = pairAt(cursor.a, cursor.b);
		if (p) { showPair(p); details.focus(); }
	}
});
matrixCanvas.addEventListener('mousemove', ev => {
	if (!doc) { return; }
	const { a, b } = cellAt(ev);
	const p = pairAt(a, b);
	tooltip.hidden = !p;
	if (p) { tooltip.textContent = pairText(p); tooltip.style.left = `${ev.clientX + 12}px`; tooltip.style.top = `${ev.clientY + 12}px`; }
});
matrixCanvas.addEventListener('mouseleave', () => { tooltip.hidden = true; });
matrixCanvas.addEventListener('click', ev => {
	if (!doc) { return; }
	cursor = cellAt(ev);
	drawMatrix();
	const p = pairAt(cursor.a, cursor.b);
	if (p) { showPair(p); }
});

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

async function exportAs(format: MapExportFormat): Promise<void> {
	if (!doc || !view) { return; }
	let data: string;
	if (format === 'json') { data = JSON.stringify(doc, null, 1); } else if (format === 'svg') { data = mapToSvg(doc, view, palette(), colors()); } else if (mode === 'matrix') {
		data = matrixCanvas.toDataURL('image/png');
	} else {
		// The whole map with its labels and legend (the SVG export drawn at 2×), not the part the viewport shows.
		try { data = await svgToPng(mapToSvg(doc, view, palette(), colors()), 2); } catch (e) { showError(e); return; }
	}
	try {
		const saved = await rpc.request({ type: 'export', format, data });
		busyEl.textContent = saved ? fill(strings.exported, format.toUpperCase()) : '';
	} catch (e) { showError(e); }
}

window.addEventListener('resize', () => render());
void rpc.request({ type: 'ready' }).then(r => {
	if (r.map) { setDoc(r.map, r.source); } else { render(); }
	busyEl.textContent = r.busy ? strings.running : '';
}).catch(showError);
