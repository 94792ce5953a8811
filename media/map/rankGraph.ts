/**
 * The rank-level graph of a (small) map document: hosts as boxes, GPUs inside, ranks as dots, one curve per pair
 * coloured by path class, width = bandwidth (extension/shared/mapLayout.ts lays it out). Used for whole maps that are
 * small enough to read and for drill-downs (one node or a node pair of any map). Ranks are focusable buttons laid over
 * the canvas; edges answer hover and click.
 */
import { layoutMap, placeEdgeLabels, type MapEdge, type MapFilter, type MapView } from '../../extension/shared/mapLayout';
import type { MapDocument, MapPair, PathClass } from '../../extension/shared/mapSchema';
import { colors, el, pairText, palette } from './dom';

/** What a graph reports back. */
export interface RankGraphEvents {
	onRank(rank: number): void;
	onPair(pair: MapPair): void;
	tooltip: HTMLElement;
}

/** One graph on its own canvas and overlay, inside `stage`. */
export class RankGraph {
	readonly canvas = el('canvas', { class: 'graph', 'aria-hidden': 'true' });
	readonly overlay = el('div', { class: 'overlay' });
	private _view: MapView | null = null;
	private _doc: MapDocument | null = null;
	private _scale = 1;
	private _hovered: MapEdge | null = null;
	private _pending = false;
	private _dim: ReadonlySet<string> | null = null;

	constructor(private readonly _stage: HTMLElement, private readonly _events: RankGraphEvents, private readonly _maxHeight: () => number) {
		_stage.append(this.canvas, this.overlay);
		this.canvas.addEventListener('mousemove', ev => this._move(ev));
		this.canvas.addEventListener('mouseleave', () => { _events.tooltip.hidden = true; });
		this.canvas.addEventListener('click', () => { if (this._hovered) { _events.onPair(this._hovered.pair); } });
	}

	get view(): MapView | null { return this._view; }

	set hidden(h: boolean) { this.canvas.hidden = this.overlay.hidden = h; }

	/** Lay out and draw `doc` (filtered); returns the laid-out view. */
	draw(doc: MapDocument, filter: MapFilter, dimHosts: ReadonlySet<string> | null = null): MapView {
		this._doc = doc;
		this._view = layoutMap(doc, filter);
		this._hovered = null;
		this._dim = dimHosts;
		this._paint();
		return this._view;
	}

	private _paint(): void {
		const v = this._view;
		const dimHosts = this._dim;
		if (!v) { return; }
		const canvas = this.canvas;
		const availW = Math.max(300, (this._stage.clientWidth || 900) - 4);
		const availH = Math.max(200, this._maxHeight() - 4);
		// Fit the width (and the height when that still leaves the ranks clickable), never more than 4×.
		let scale = Math.min(4, availW / v.width);
		if (v.height * scale > availH && availH / v.height >= 0.6) { scale = availH / v.height; }
		this._scale = scale;
		const dpr = window.devicePixelRatio || 1;
		canvas.width = Math.ceil(v.width * scale * dpr); canvas.height = Math.ceil(v.height * scale * dpr);
		canvas.style.width = `${v.width * scale}px`; canvas.style.height = `${v.height * scale}px`;
		this.overlay.style.width = canvas.style.width; this.overlay.style.height = canvas.style.height;
		const ctx = canvas.getContext('2d');
		if (!ctx) { return; }
		const world = (): void => ctx.setTransform(scale * dpr, 0, 0, scale * dpr, 0, 0);
		const screen = (): void => ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
		const c = colors(), pal = palette();
		screen();
		ctx.clearRect(0, 0, canvas.width, canvas.height);
		// Big maps: thinner edges so the chords inside a host stay apart.
		const widthScale = v.ranks.size > 256 ? 0.3 : 1;
		// Many edges: one path per (class, width rounded to 0.5 px), so thousands of curves cost a few stroke calls.
		const batch = (edges: MapEdge[], fixedWidth: number | null): void => {
			const groups = new Map<string, MapEdge[]>();
			for (const e of edges) {
				const w = fixedWidth ?? Math.max(0.5, Math.round(e.width * widthScale * 2) / 2);
				const key = `${e.pair.class}|${w}`;
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
		};
		// 1. Edges between hosts: faint when there are many.
		const inter = v.edges.filter(e => !e.pair.same_host), intra = v.edges.filter(e => e.pair.same_host);
		world();
		ctx.globalAlpha = inter.length > 500 ? 0.08 : inter.length > 50 ? 0.3 : 0.8;
		batch(inter, inter.length > 500 ? 1 : null);
		// 2. Host and GPU boxes (filled, so the faint edges stay behind them).
		for (const h of v.hosts) {
			const dim = dimHosts !== null && !dimHosts.has(h.name);
			ctx.globalAlpha = dim ? 0.35 : 0.92;
			ctx.fillStyle = c.bg; ctx.fillRect(h.x, h.y, h.w, h.h);
			ctx.globalAlpha = dim ? 0.35 : 1;
			ctx.strokeStyle = c.box; ctx.lineWidth = 1 / scale * 1.5; ctx.setLineDash([]);
			ctx.strokeRect(h.x, h.y, h.w, h.h);
			ctx.setLineDash([3, 2]);
			for (const g of h.gpus) { ctx.strokeRect(g.x, g.y, g.w, g.h); }
			ctx.setLineDash([]);
		}
		// 3. Edges within hosts; failed pairs dashed in the error colour; 4. the highlighted edge; 5. ranks.
		ctx.globalAlpha = 0.85;
		batch(intra, null);
		const failed = v.edges.filter(e => e.pair.status !== 'ok' && e.pair.status !== 'skipped' && e.pair.status !== 'not_measured');
		if (failed.length > 0) {
			ctx.globalAlpha = 1; ctx.strokeStyle = c.error; ctx.lineWidth = 1.5 / scale; ctx.setLineDash([4 / scale, 3 / scale]);
			ctx.beginPath();
			for (const e of failed) { ctx.moveTo(e.x1, e.y1); ctx.quadraticCurveTo(e.cx, e.cy, e.x2, e.y2); }
			ctx.stroke(); ctx.setLineDash([]);
		}
		if (this._hovered) {
			const e = this._hovered;
			ctx.globalAlpha = 1; ctx.strokeStyle = c.fg; ctx.lineWidth = e.width + 2;
			ctx.beginPath(); ctx.moveTo(e.x1, e.y1); ctx.quadraticCurveTo(e.cx, e.cy, e.x2, e.y2); ctx.stroke();
		}
		ctx.globalAlpha = 1; ctx.fillStyle = c.fg;
		ctx.beginPath();
		for (const r of v.ranks.values()) { ctx.moveTo(r.x + v.rankRadius, r.y); ctx.arc(r.x, r.y, v.rankRadius, 0, 2 * Math.PI); }
		ctx.fill();
		// 6. Text in screen pixels (legible at any scale).
		screen();
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
			// Rank numbers inside their dots; a drill-down of a big map has 5-digit ranks: the font shrinks to fit the dot.
			ctx.fillStyle = c.bg; ctx.textAlign = 'center'; ctx.textBaseline = 'middle';
			const inside = 2 * v.rankRadius * scale - 1;
			for (const r of v.ranks.values()) {
				const label = String(r.rank);
				ctx.font = `bold ${Math.max(6, Math.min(12, 6 * scale, inside / (0.62 * label.length)))}px sans-serif`;
				ctx.fillText(label, r.x * scale, r.y * scale + 0.5);
			}
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
		// Focusable rank buttons over the canvas.
		const buttons: HTMLButtonElement[] = [];
		for (const r of v.ranks.values()) {
			const b = el('button', { type: 'button', class: 'rank', 'aria-label': `rank ${r.rank} on ${r.host}` });
			const size = Math.max(8, 14 * scale);
			b.style.left = `${r.x * scale - size / 2}px`; b.style.top = `${r.y * scale - size / 2}px`;
			b.style.width = b.style.height = `${size}px`;
			b.addEventListener('click', () => this._events.onRank(r.rank));
			b.addEventListener('focus', () => this._events.onRank(r.rank));
			buttons.push(b);
		}
		this.overlay.replaceChildren(...buttons);
	}

	private _nearest(x: number, y: number): MapEdge | null {
		if (!this._view) { return null; }
		let best: MapEdge | null = null, bestD = 36;
		for (const e of this._view.edges) {
			for (let i = 0; i <= 8; i++) {
				const t = i / 8, u = 1 - t;
				const px = u * u * e.x1 + 2 * u * t * e.cx + t * t * e.x2, py = u * u * e.y1 + 2 * u * t * e.cy + t * t * e.y2;
				const d = (px - x) ** 2 + (py - y) ** 2;
				if (d < bestD) { bestD = d; best = e; }
			}
		}
		return best;
	}

	private _move(ev: MouseEvent): void {
		if (this._pending) { return; }
		this._pending = true;
		requestAnimationFrame(() => {
			this._pending = false;
			const rect = this.canvas.getBoundingClientRect();
			const e = this._nearest((ev.clientX - rect.left) / this._scale, (ev.clientY - rect.top) / this._scale);
			if (e !== this._hovered) { this._hovered = e; this._paint(); }
			const tip = this._events.tooltip;
			tip.hidden = !e;
			if (e) { tip.textContent = pairText(e.pair); tip.style.left = `${ev.clientX + 12}px`; tip.style.top = `${ev.clientY + 12}px`; }
		});
	}

	/** The document drawn last. */
	get doc(): MapDocument | null { return this._doc; }
}
