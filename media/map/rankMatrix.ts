/**
 * The rank × rank bandwidth heat map of a whole map document (maps small enough for the webview to hold: up to
 * WEBVIEW_DOC_MAX_PAIRS pairs, e.g. the 1 024-rank fixture's million cells in one ImageData). Focusable, with an
 * arrow-key cursor (Shift: 8 cells) and Enter for the pair. In a sampled map the one measured pair of two hosts
 * stands for all their pairs (pale cells).
 */
import { bandwidthMatrix, heatColor, heatScale, heatT, heatTicks, type MapFilter, type MapView } from '../../extension/shared/mapLayout';
import type { MapDocument, MapPair } from '../../extension/shared/mapSchema';
import { colors, el, pairText } from './dom';

/** The matrix canvas and its colour scale. */
export class RankMatrix {
	readonly canvas: HTMLCanvasElement;
	readonly scaleBar = el('div', { class: 'scale' });
	private readonly _scaleMin = el('span');
	private readonly _scaleCanvas = el('canvas', { 'aria-hidden': 'true' });
	private readonly _scaleMax = el('span');
	private _doc: MapDocument | null = null;
	private _cursor = { a: 0, b: 1 };
	private _size = 400;
	private _filter: MapFilter | null = null;
	private _view: MapView | null = null;

	constructor(label: string, private readonly _onPair: (p: MapPair) => void, private readonly _status: (text: string) => void, private readonly _tooltip: HTMLElement) {
		this.canvas = el('canvas', { class: 'matrix', tabindex: '0', role: 'grid', 'aria-label': label });
		this.scaleBar.append(this._scaleMin, this._scaleCanvas, this._scaleMax);
		this.canvas.addEventListener('keydown', ev => this._key(ev));
		this.canvas.addEventListener('mousemove', ev => {
			const { a, b } = this._cellAt(ev);
			const p = this._pairAt(a, b);
			this._tooltip.hidden = !p;
			if (p) { this._tooltip.textContent = pairText(p); this._tooltip.style.left = `${ev.clientX + 12}px`; this._tooltip.style.top = `${ev.clientY + 12}px`; }
		});
		this.canvas.addEventListener('mouseleave', () => { this._tooltip.hidden = true; });
		this.canvas.addEventListener('click', ev => {
			this._cursor = this._cellAt(ev);
			this.redraw();
			const p = this._pairAt(this._cursor.a, this._cursor.b);
			if (p) { this._onPair(p); }
		});
	}

	set hidden(h: boolean) { this.canvas.hidden = this.scaleBar.hidden = h; }

	/** Draw `doc` with `view`'s bandwidth range into a square of `size` CSS px. */
	draw(doc: MapDocument, view: MapView, filter: MapFilter, size: number): void {
		this._doc = doc; this._view = view; this._filter = filter; this._size = size;
		this.redraw();
	}

	redraw(): void {
		const doc = this._doc, view = this._view;
		if (!doc || !view || !this._filter) { return; }
		const { n, values, representative } = bandwidthMatrix(doc, this._filter);
		const cell = Math.max(1, Math.floor(this._size / n));
		const W = n * cell;
		this.canvas.width = W; this.canvas.height = W;
		const shown = Math.min(this._size, Math.max(W, 240));
		this.canvas.style.width = `${shown}px`; this.canvas.style.height = `${shown}px`;
		const ctx = this.canvas.getContext('2d');
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
		ctx.strokeRect(this._cursor.b * cell, this._cursor.a * cell, cell, cell);
		drawScale(this._scaleCanvas, this._scaleMin, this._scaleMax, view.bwMin, view.bwMax, doc.sampled ? '; pale blocks: the one measured pair of two hosts stands for all their pairs' : '');
		this.canvas.setAttribute('aria-label', `Bandwidth matrix ${n}×${n}, ${view.bwMin.toFixed(2)}–${view.bwMax.toFixed(2)} GB/s (${heatScale(view.bwMin, view.bwMax)} colour scale); cursor at ${this._cursor.a},${this._cursor.b}: arrow keys move, Enter shows the pair`);
	}

	private _cellAt(ev: MouseEvent): { a: number; b: number } {
		const rect = this.canvas.getBoundingClientRect();
		const n = this._doc?.world_size ?? 1;
		return { a: Math.min(n - 1, Math.floor(((ev.clientY - rect.top) / rect.height) * n)), b: Math.min(n - 1, Math.floor(((ev.clientX - rect.left) / rect.width) * n)) };
	}

	private _pairAt(a: number, b: number): MapPair | undefined {
		const doc = this._doc;
		if (!doc) { return undefined; }
		const [x, y] = a < b ? [a, b] : [b, a];
		const direct = doc.pairs.find(p => p.a === x && p.b === y);
		if (direct || !doc.sampled) { return direct; }
		// Sampled map: the measured pair of the two hosts stands for this one.
		const host = new Map(doc.ranks.map(r => [r.rank, r.host]));
		const hx = host.get(x), hy = host.get(y);
		return doc.pairs.find(p => !p.same_host && ((host.get(p.a) === hx && host.get(p.b) === hy) || (host.get(p.a) === hy && host.get(p.b) === hx)));
	}

	private _key(ev: KeyboardEvent): void {
		const doc = this._doc;
		if (!doc) { return; }
		const n = doc.world_size;
		const step = ev.shiftKey ? 8 : 1;
		const moves: Record<string, [number, number]> = { ArrowUp: [-step, 0], ArrowDown: [step, 0], ArrowLeft: [0, -step], ArrowRight: [0, step] };
		if (moves[ev.key]) {
			this._cursor = { a: Math.min(n - 1, Math.max(0, this._cursor.a + moves[ev.key][0])), b: Math.min(n - 1, Math.max(0, this._cursor.b + moves[ev.key][1])) };
			ev.preventDefault(); this.redraw();
			const p = this._pairAt(this._cursor.a, this._cursor.b);
			this._status(p ? pairText(p) : `${this._cursor.a} ↔ ${this._cursor.b}: not measured`);
		} else if (ev.key === 'Enter') {
			const p = this._pairAt(this._cursor.a, this._cursor.b);
			if (p) { this._onPair(p); }
		}
	}
}

/** The colour scale: a gradient with tick marks at the legend's values (linear under a decade, log from one). */
export function drawScale(canvas: HTMLCanvasElement, minEl: HTMLElement, maxEl: HTMLElement, min: number, max: number, note = ''): void {
	const w = 240, h = 12;
	canvas.width = w; canvas.height = h;
	const ctx = canvas.getContext('2d');
	if (!ctx) { return; }
	for (let x = 0; x < w; x++) { const [r, g, b] = heatColor(x / (w - 1)); ctx.fillStyle = `rgb(${r},${g},${b})`; ctx.fillRect(x, 0, 1, h); }
	const ticks = heatTicks(min, max);
	ctx.fillStyle = colors().bg;
	for (const t of ticks.slice(1, -1)) { ctx.fillRect(Math.round(t.t * (w - 1)), 0, 1, h); }
	canvas.title = ticks.map(t => `${t.label} GB/s`).join(' · ');
	minEl.textContent = `${ticks[0]?.label ?? min.toFixed(2)} GB/s`;
	maxEl.textContent = `${ticks[ticks.length - 1]?.label ?? max.toFixed(2)} GB/s (${heatScale(min, max)} scale${ticks.length > 2 ? `; marks at ${ticks.slice(1, -1).map(t => t.label).join(', ')}` : ''})${note}`;
}
