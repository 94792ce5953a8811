/**
 * Pure layout of a transport map for drawing (media/map/main.ts draws it on a canvas, mapToSvg exports it): hosts as
 * boxes in a grid, GPUs as boxes inside their host, ranks as dots inside their GPU, one edge per measured pair
 * (colour = path class, width = bandwidth), and the rank × rank bandwidth matrix. No DOM, no node.
 */
import { escapeHtml } from './htmlEscape';
import { PATH_CLASSES, PATH_CLASS_LABELS, type MapDocument, type MapPair, type PathClass } from './mapSchema';

/** A rank's dot. */
export interface RankNode { rank: number; host: string; gpuKey: string; x: number; y: number }
/** A GPU box (key = UUID, or "none:<host>" for ranks without a GPU). */
export interface GpuBox { key: string; label: string; x: number; y: number; w: number; h: number; ranks: RankNode[] }
/** A host box. */
export interface HostBox { name: string; x: number; y: number; w: number; h: number; gpus: GpuBox[] }
/** One drawable pair. */
export interface MapEdge { index: number; pair: MapPair; x1: number; y1: number; x2: number; y2: number; width: number; cx: number; cy: number }
/** What to show. `hosts` null: every host. */
export interface MapFilter { classes: ReadonlySet<PathClass>; hosts: ReadonlySet<string> | null }
/** The laid-out map. */
export interface MapView {
	width: number;
	height: number;
	hosts: HostBox[];
	ranks: Map<number, RankNode>;
	edges: MapEdge[];
	/** Bandwidth range of the measured pairs (GB/s), for widths and the heat map. */
	bwMin: number;
	bwMax: number;
	rankRadius: number;
}

const CELL = 18;        // rank pitch inside a GPU box
const PAD = 6;
const LABEL = 16;       // host label band
const GPUS_PER_ROW = 4;

/** Every class shown, every host. */
export function allFilter(): MapFilter { return { classes: new Set(PATH_CLASSES), hosts: null }; }

/** Whether pair p passes the filter. */
export function pairVisible(doc: MapDocument, p: MapPair, f: MapFilter): boolean {
	if (!f.classes.has(p.class)) { return false; }
	if (!f.hosts) { return true; }
	const ha = doc.ranks[p.a]?.host, hb = doc.ranks[p.b]?.host;
	return (ha !== undefined && f.hosts.has(ha)) || (hb !== undefined && f.hosts.has(hb));
}

/** Narrowest bandwidth span (max/min) the edge widths stretch over: 1 % noise must not look like a 6× difference. */
export const MIN_WIDTH_SPAN = 10;

/**
 * Edge width (1..6 px) from bandwidth on a log scale ending at bwMax and spanning at least MIN_WIDTH_SPAN (a map whose
 * pairs all run at 348–352 GB/s draws them all about equally wide); 1 px when not measured.
 */
export function edgeWidth(bw: number | null, bwMin: number, bwMax: number): number {
	if (bw === null || !(bw > 0) || !(bwMax > bwMin)) { return bw !== null && bw > 0 ? 3 : 1; }
	const t = 1 - Math.log(bwMax / bw) / Math.log(Math.max(MIN_WIDTH_SPAN, bwMax / bwMin));
	return 1 + 5 * Math.min(1, Math.max(0, t));
}

/** Lay the map out. Ranks are indexed by their rank number; pairs whose ranks are missing are dropped. */
export function layoutMap(doc: MapDocument, filter: MapFilter = allFilter()): MapView {
	const hostOrder: string[] = [];
	const byHost = new Map<string, Map<string, { label: string; ranks: number[] }>>();
	for (const r of [...doc.ranks].sort((x, y) => x.rank - y.rank)) {
		if (!byHost.has(r.host)) { byHost.set(r.host, new Map()); hostOrder.push(r.host); }
		const gpus = byHost.get(r.host)!;
		const key = r.gpu ? r.gpu.uuid || `bus:${r.host}:${r.gpu.pci_bus_id}` : `none:${r.host}`;
		const label = r.gpu ? `GPU ${r.gpu.ordinal} ${r.gpu.pci_bus_id}` : 'no GPU';
		if (!gpus.has(key)) { gpus.set(key, { label, ranks: [] }); }
		gpus.get(key)!.ranks.push(r.rank);
	}
	// Sizes of every GPU box and host box, then a uniform host grid.
	const hostSizes = hostOrder.map(hostName => {
		const gpus = [...byHost.get(hostName)!.entries()].map(([key, g]) => {
			// Ranks of one GPU on a circle (chords between them stay apart), one or two in a row.
			const k = g.ranks.length;
			const radius = k <= 2 ? 0 : Math.max(CELL * 1.2, (k * CELL) / (2 * Math.PI));
			const inner = k <= 2 ? k * CELL : 2 * radius + CELL;
			return { key, label: g.label, ranks: g.ranks, radius, w: Math.max(inner + 2 * PAD, 56), h: (k <= 2 ? CELL : inner) + 2 * PAD + 10 };
		});
		const rows: Array<typeof gpus> = [];
		for (let i = 0; i < gpus.length; i += GPUS_PER_ROW) { rows.push(gpus.slice(i, i + GPUS_PER_ROW)); }
		const w = Math.max(80, ...rows.map(row => row.reduce((s, g) => s + g.w + PAD, PAD)));
		const h = LABEL + PAD + rows.reduce((s, row) => s + Math.max(...row.map(g => g.h)) + PAD, 0);
		return { name: hostName, gpuRows: rows, w, h };
	});
	const cellW = Math.max(0, ...hostSizes.map(s => s.w)) + 2 * PAD;
	const cellH = Math.max(0, ...hostSizes.map(s => s.h)) + 2 * PAD;
	// Never more columns than hosts: a tall single host asked for 2 and the map (and its export) was half empty.
	const cols = Math.max(1, Math.min(hostOrder.length, Math.ceil(Math.sqrt(hostOrder.length * 1.6 * cellH / Math.max(1, cellW)))));
	const hosts: HostBox[] = [];
	const ranks = new Map<number, RankNode>();
	hostSizes.forEach((s, i) => {
		const hx = (i % cols) * cellW + PAD, hy = Math.floor(i / cols) * cellH + PAD;
		const box: HostBox = { name: s.name, x: hx, y: hy, w: s.w, h: s.h, gpus: [] };
		let y = hy + LABEL + PAD;
		for (const row of s.gpuRows) {
			let x = hx + PAD;
			for (const g of row) {
				const gb: GpuBox = { key: g.key, label: g.label, x, y, w: g.w, h: g.h, ranks: [] };
				const cx = x + g.w / 2, cy = y + 10 + PAD + (g.h - 10 - 2 * PAD) / 2;
				g.ranks.forEach((rank, k) => {
					const n = g.ranks.length;
					const pos = g.radius === 0
						? { x: cx + (k - (n - 1) / 2) * CELL, y: cy }
						: { x: cx + g.radius * Math.cos(-Math.PI / 2 + (2 * Math.PI * k) / n), y: cy + g.radius * Math.sin(-Math.PI / 2 + (2 * Math.PI * k) / n) };
					const node: RankNode = { rank, host: s.name, gpuKey: g.key, x: pos.x, y: pos.y };
					gb.ranks.push(node);
					ranks.set(rank, node);
				});
				box.gpus.push(gb);
				x += g.w + PAD;
			}
			y += Math.max(...row.map(g => g.h)) + PAD;
		}
		hosts.push(box);
	});
	const measured = doc.pairs.map(p => p.bandwidth_gbps).filter((b): b is number => b !== null && b > 0);
	const bwMin = measured.length ? Math.min(...measured) : 0;
	const bwMax = measured.length ? Math.max(...measured) : 0;
	const centers = new Map<string, { x: number; y: number }>();
	for (const h of hosts) {
		centers.set(`host:${h.name}`, { x: h.x + h.w / 2, y: h.y + h.h / 2 });
		for (const g of h.gpus) { centers.set(g.key, { x: g.x + g.w / 2, y: g.y + 10 + (g.h - 10) / 2 }); }
	}
	const edges: MapEdge[] = [];
	doc.pairs.forEach((p, index) => {
		const a = ranks.get(p.a), b = ranks.get(p.b);
		if (!a || !b || !pairVisible(doc, p, filter)) { return; }
		const seg = { x1: a.x, y1: a.y, x2: b.x, y2: b.y };
		const k = edgeControl(seg, a.gpuKey === b.gpuKey ? centers.get(a.gpuKey) : a.host === b.host ? centers.get(`host:${a.host}`) : undefined);
		edges.push({ index, pair: p, ...seg, width: edgeWidth(p.bandwidth_gbps, bwMin, bwMax), cx: k.cx, cy: k.cy });
	});
	return {
		width: cols * cellW + PAD, height: Math.ceil(hostOrder.length / cols) * cellH + PAD, hosts, ranks, edges, bwMin, bwMax,
		rankRadius: ranks.size > 256 ? 3 : 5,
	};
}

/**
 * Control point of an edge's curve: bent to one side so that edges of one row do not overlap; with `center` (the
 * GPU or host box both ranks share) bent away from it, so chords of ranks on a circle stay outside the middle.
 */
export function edgeControl(e: Pick<MapEdge, 'x1' | 'y1' | 'x2' | 'y2'>, center?: { x: number; y: number }): { cx: number; cy: number } {
	const mx = (e.x1 + e.x2) / 2, my = (e.y1 + e.y2) / 2;
	const dx = e.x2 - e.x1, dy = e.y2 - e.y1;
	const len = Math.hypot(dx, dy) || 1;
	const bend = Math.min(40, len * 0.25);
	let nx = -dy / len, ny = dx / len;
	if (center && (mx - center.x) * nx + (my - center.y) * ny < 0) { nx = -nx; ny = -ny; }
	return { cx: mx + nx * bend, cy: my + ny * bend };
}

/** Where to put each edge's bandwidth label: on its curve, moved along it when the middle is taken. */
export interface LabelSpot { x: number; y: number }

const LABEL_TS = [0.5, 0.35, 0.65, 0.22, 0.78, 0.42, 0.58];
/** Shifts off the curve, in label heights, tried when no spot on it is free. */
const LABEL_SHIFTS = [-1, 1, -2, 2];

/**
 * Label positions (layout units) for edges drawn as quadratic curves (x1,y1)–(cx,cy)–(x2,y2): each label is a
 * `widths[i]` × `height` box centred on its curve, at the middle when free, else at the first point along the curve
 * (t = 0.35, 0.65, …) whose box overlaps no label placed before, then at those points shifted one or two label
 * heights up or down; when none is free, the candidate that overlaps the least. Edges between two
 * hosts start and end near each other, so their middles crowd together.
 */
export function placeEdgeLabels(edges: ReadonlyArray<Pick<MapEdge, 'x1' | 'y1' | 'x2' | 'y2' | 'cx' | 'cy'>>, widths: readonly number[], height: number): LabelSpot[] {
	const placed: Array<{ x: number; y: number; w: number }> = [];
	/** Area this box shares with the boxes placed so far (0: free). */
	const overlap = (x: number, y: number, w: number): number => placed.reduce((sum, p) =>
		sum + Math.max(0, (p.w + w) / 2 - Math.abs(p.x - x)) * Math.max(0, height - Math.abs(p.y - y)), 0);
	return edges.map((e, i) => {
		const w = widths[i] ?? 0;
		const at = (t: number): LabelSpot => ({
			x: (1 - t) * (1 - t) * e.x1 + 2 * (1 - t) * t * e.cx + t * t * e.x2,
			y: (1 - t) * (1 - t) * e.y1 + 2 * (1 - t) * t * e.cy + t * t * e.y2,
		});
		// On the curve first (middle, then along it); then shifted a label height off it; else the least-covered spot.
		const onCurve = LABEL_TS.map(at);
		const candidates = [...onCurve, ...LABEL_SHIFTS.flatMap(k => onCurve.map(p => ({ x: p.x, y: p.y + k * height })))];
		let spot = candidates.find(p => overlap(p.x, p.y, w) === 0);
		if (!spot) {
			spot = candidates.reduce((best, p) => (overlap(p.x, p.y, w) < overlap(best.x, best.y, w) ? p : best), candidates[0]);
		}
		placed.push({ ...spot, w });
		return spot;
	});
}

/** Heat-map colour of t in [0,1] (viridis-like: dark blue → green → yellow), as [r,g,b]. */
export function heatColor(t: number): [number, number, number] {
	const stops: Array<[number, number, number]> = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
	const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (stops.length - 1);
	const i = Math.min(stops.length - 2, Math.floor(x));
	const f = x - i;
	return [0, 1, 2].map(k => Math.round(stops[i][k] + (stops[i + 1][k] - stops[i][k]) * f)) as [number, number, number];
}

/** The heat-map scale: linear when the values span less than a decade (a log scale would hide nothing there), else log. */
export function heatScale(bwMin: number, bwMax: number): 'linear' | 'log' {
	return bwMin > 0 && bwMax / bwMin >= 10 ? 'log' : 'linear';
}

/** Position of bandwidth bw on the heat-map scale (heatScale: linear under a decade, log from one). */
export function heatT(bw: number, bwMin: number, bwMax: number): number {
	if (!(bwMax > bwMin) || !(bw > 0)) { return 1; }
	if (heatScale(bwMin, bwMax) === 'linear') { return (bw - bwMin) / (bwMax - bwMin); }
	return Math.log(bw / bwMin) / Math.log(bwMax / bwMin);
}

/** Ticks of the colour-scale legend: min, max and up to three between, at their place t on the scale, labels distinct. */
export function heatTicks(bwMin: number, bwMax: number): Array<{ t: number; label: string }> {
	if (!(bwMax > bwMin) || !(bwMin >= 0)) { return Number.isFinite(bwMax) && bwMax > 0 ? [{ t: 1, label: bwMax.toFixed(2) }] : []; }
	const log = heatScale(bwMin, bwMax) === 'log';
	const values = [0, 0.25, 0.5, 0.75, 1].map(t => (log ? bwMin * (bwMax / bwMin) ** t : bwMin + (bwMax - bwMin) * t));
	for (let d = 1; d <= 6; d++) {
		const labels = values.map(v => v.toFixed(v >= 100 ? Math.max(0, d - 2) : d));
		if (new Set(labels).size === labels.length) { return values.map((v, i) => ({ t: heatT(v, bwMin, bwMax), label: labels[i] })); }
	}
	return [{ t: 0, label: bwMin.toPrecision(6) }, { t: 1, label: bwMax.toPrecision(6) }];
}

/**
 * n × n bandwidth matrix (symmetric, NaN where not measured), rank order. In a sampled map the one measured pair of
 * two hosts stands for every pair of those hosts: its value fills their block (`representative` marks those cells).
 */
export function bandwidthMatrix(doc: MapDocument, filter: MapFilter = allFilter()): { n: number; values: Float64Array; representative: Uint8Array } {
	const n = doc.world_size;
	const values = new Float64Array(n * n).fill(Number.NaN);
	const representative = new Uint8Array(n * n);
	const hostRanks = new Map<string, number[]>();
	for (const r of doc.ranks) { hostRanks.set(r.host, [...(hostRanks.get(r.host) ?? []), r.rank]); }
	for (const p of doc.pairs) {
		if (p.bandwidth_gbps === null || !pairVisible(doc, p, filter)) { continue; }
		if (doc.sampled && !p.same_host) {
			const ra = hostRanks.get(doc.ranks[p.a]?.host ?? '') ?? [], rb = hostRanks.get(doc.ranks[p.b]?.host ?? '') ?? [];
			for (const x of ra) {
				for (const y of rb) {
					if (x >= n || y >= n) { continue; }
					values[x * n + y] = values[y * n + x] = p.bandwidth_gbps;
					representative[x * n + y] = representative[y * n + x] = 1;
				}
			}
		}
		values[p.a * n + p.b] = values[p.b * n + p.a] = p.bandwidth_gbps;
		representative[p.a * n + p.b] = representative[p.b * n + p.a] = 0;
	}
	return { n, values, representative };
}

/** Colours of the classes (CSS colours; the webview passes theme colours). */
export type ClassPalette = Readonly<Record<PathClass, string>>;
/** Fallback palette (VS Code's chart colours of the dark theme). */
export const DEFAULT_PALETTE: ClassPalette = {
	same_gpu: '#89d185', p2p: '#3794ff', gpudirect_rdma: '#b180d7', host_staging: '#d18616', not_cuda_aware: '#f14c4c', host_memory: '#8b949e',
};

/** The laid-out map with every coordinate multiplied by k (edge widths, dot radius and text sizes kept). */
export function scaleView(view: MapView, k: number): MapView {
	const box = <T extends { x: number; y: number; w: number; h: number }>(b: T): T => ({ ...b, x: b.x * k, y: b.y * k, w: b.w * k, h: b.h * k });
	const ranks = new Map<number, RankNode>([...view.ranks].map(([id, r]) => [id, { ...r, x: r.x * k, y: r.y * k }]));
	return {
		...view, width: view.width * k, height: view.height * k, ranks,
		hosts: view.hosts.map(h => ({ ...box(h), gpus: h.gpus.map(g => ({ ...box(g), ranks: g.ranks.map(r => ranks.get(r.rank) ?? r) })) })),
		edges: view.edges.map(e => ({ ...e, x1: e.x1 * k, y1: e.y1 * k, x2: e.x2 * k, y2: e.y2 * k, cx: e.cx * k, cy: e.cy * k })),
	};
}

/** Width the export spreads a small map to (labels and legends keep their size, so a 4-rank map needs the room). */
const EXPORT_MIN_WIDTH = 640;

/**
 * Stand-alone SVG of the whole laid-out map (for export; PNG is this drawn at 2×): host and GPU boxes, ranks with
 * their numbers, edges with non-overlapping bandwidth labels, the class legend and the width scale. A small map is
 * spread to EXPORT_MIN_WIDTH (at most 4×). Text is escaped.
 */
export function mapToSvg(doc: MapDocument, laidOut: MapView, palette: ClassPalette, colors: { fg: string; bg: string; box: string }): string {
	const view = scaleView(laidOut, Math.min(4, Math.max(1, EXPORT_MIN_WIDTH / (laidOut.width || EXPORT_MIN_WIDTH))));
	const f = (n: number): string => (Math.round(n * 10) / 10).toString();
	const out: string[] = [];
	// Legend rows below the map: the classes (wrapped to the map's width), then the width scale.
	const items = PATH_CLASSES.map(c => ({ c, w: 24 + PATH_CLASS_LABELS[c].length * 6.2 }));
	const rows: Array<typeof items> = [[]];
	let used = 6;
	for (const it of items) {
		if (used + it.w > view.width && rows[rows.length - 1].length > 0) { rows.push([]); used = 6; }
		rows[rows.length - 1].push(it);
		used += it.w;
	}
	const legendH = rows.length * 18 + 6 + (view.bwMax > 0 ? 18 : 0);
	out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${f(view.width)}" height="${f(view.height + legendH)}" viewBox="0 0 ${f(view.width)} ${f(view.height + legendH)}" font-family="sans-serif" font-size="11">`);
	out.push(`<rect width="100%" height="100%" fill="${escapeHtml(colors.bg)}"/>`);
	out.push(`<title>${escapeHtml(`Transport map: ${doc.world_size} ranks, ${doc.pairs.length} pairs`)}</title>`);
	for (const h of view.hosts) {
		out.push(`<g><rect x="${f(h.x)}" y="${f(h.y)}" width="${f(h.w)}" height="${f(h.h)}" rx="4" fill="none" stroke="${escapeHtml(colors.box)}"/>`);
		out.push(`<text x="${f(h.x + 6)}" y="${f(h.y + 12)}" fill="${escapeHtml(colors.fg)}">${escapeHtml(h.name)}</text>`);
		for (const g of h.gpus) {
			out.push(`<rect x="${f(g.x)}" y="${f(g.y)}" width="${f(g.w)}" height="${f(g.h)}" rx="3" fill="none" stroke="${escapeHtml(colors.box)}" stroke-dasharray="3 2"/>`);
			out.push(`<text x="${f(g.x + 3)}" y="${f(g.y + 9)}" font-size="8" fill="${escapeHtml(colors.fg)}">${escapeHtml(g.label)}</text>`);
		}
		out.push('</g>');
	}
	for (const e of view.edges) {
		out.push(`<path d="M${f(e.x1)} ${f(e.y1)}Q${f(e.cx)} ${f(e.cy)} ${f(e.x2)} ${f(e.y2)}" fill="none" stroke="${escapeHtml(palette[e.pair.class])}" stroke-width="${f(e.width)}" stroke-opacity="0.7"><title>${escapeHtml(`${e.pair.a}–${e.pair.b}: ${PATH_CLASS_LABELS[e.pair.class]}, ${e.pair.bandwidth_gbps?.toFixed(2) ?? '—'} GB/s, ${e.pair.latency_us?.toFixed(2) ?? '—'} µs`)}</title></path>`);
	}
	for (const r of view.ranks.values()) {
		out.push(`<circle cx="${f(r.x)}" cy="${f(r.y)}" r="${view.rankRadius}" fill="${escapeHtml(colors.fg)}"><title>rank ${r.rank}</title></circle>`);
		if (view.ranks.size <= 128) { out.push(`<text x="${f(r.x)}" y="${f(r.y + 0.5)}" text-anchor="middle" dominant-baseline="middle" font-size="${f(Math.min(10, view.rankRadius * 1.3))}" font-weight="bold" fill="${escapeHtml(colors.bg)}">${r.rank}</text>`); }
	}
	// Bandwidth labels on the edges (all of them in an export, not only what fits the viewport), placed so that none overlap.
	if (view.edges.length <= 400) {
		const labels = view.edges.map(e => (e.pair.bandwidth_gbps === null ? e.pair.status : `${e.pair.bandwidth_gbps.toFixed(1)} GB/s`));
		const widths = labels.map(l => l.length * LABEL_CHAR_W + 6);
		const spots = placeEdgeLabels(view.edges, widths, LABEL_H);
		view.edges.forEach((e, i) => {
			out.push(`<g class="edge-label"><rect x="${f(spots[i].x - widths[i] / 2)}" y="${f(spots[i].y - LABEL_H / 2)}" width="${f(widths[i])}" height="${LABEL_H}" fill="${escapeHtml(colors.bg)}" fill-opacity="0.85"/>` +
				`<text x="${f(spots[i].x)}" y="${f(spots[i].y)}" text-anchor="middle" dominant-baseline="middle" font-size="10" fill="${escapeHtml(palette[e.pair.class])}">${escapeHtml(labels[i])}</text></g>`);
		});
	}
	rows.forEach((row, ri) => {
		let x = 6;
		const y = view.height + 8 + ri * 18;
		for (const { c, w } of row) {
			out.push(`<rect x="${f(x)}" y="${f(y)}" width="10" height="10" fill="${escapeHtml(palette[c])}"/><text x="${f(x + 14)}" y="${f(y + 9)}" fill="${escapeHtml(colors.fg)}">${escapeHtml(PATH_CLASS_LABELS[c])}</text>`);
			x += w;
		}
	});
	if (view.bwMax > 0) {
		out.push(`<text x="6" y="${f(view.height + 8 + rows.length * 18 + 9)}" fill="${escapeHtml(colors.fg)}">${escapeHtml(`Edge width: bandwidth, ${view.bwMin.toFixed(2)}–${view.bwMax.toFixed(2)} GB/s (log scale)`)}</text>`);
	}
	out.push('</svg>');
	return out.join('\n');
}

/** Text metrics the SVG export assumes for its 10 px labels (no DOM here to measure them). */
const LABEL_CHAR_W = 5.8;
const LABEL_H = 14;

/**
 * The export's default file name: the map's host(s) and the local date, e.g. `transport-map-node1-2026-12-03.svg`
 * (`node1+3` when it spans four hosts). Only [A-Za-z0-9._-] survive from host names.
 */
export function exportFileName(doc: Pick<MapDocument, 'ranks'>, ext: string, now: Date = new Date()): string {
	const hosts = [...new Set((Array.isArray(doc.ranks) ? doc.ranks : []).map(r => String(r?.host ?? '')).filter(h => h.length > 0))];
	const first = (hosts[0] ?? 'map').replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[.]+/, '').slice(0, 60) || 'map';
	const who = hosts.length > 1 ? `${first}+${hosts.length - 1}` : first;
	const pad = (n: number): string => String(n).padStart(2, '0');
	const date = `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
	return `transport-map-${who}-${date}.${ext}`;
}
