/**
 * The node × node matrix of a map's overview (extension/shared/mapOverview.ts): one cell per node pair, coloured by
 * the median bandwidth of its pairs (one log or linear scale, heatT), failed cells in the error colour, outlier
 * nodes marked on both axes. Anomaly first at any size: with more nodes than pixels (2 048 nodes in ~900 px) each
 * pixel shows the WORST cell it covers, so one slow node's row and column stay visible instead of being averaged
 * away. Focusable grid: arrow keys move a cursor (Shift: 8, Page Up/Down: 64, Home: to the diagonal), Enter or click
 * drills down to the node pair (the diagonal: to the node).
 */
import { heatColor, heatT } from '../../extension/shared/mapLayout';
import type { MapOverview, MapOverviewLayer } from '../../extension/shared/mapOverview';
import { colors, el, num } from './dom';

/** A cell's numbers, for tooltips, the cursor's label and the status line. */
export interface NodeCell { i: number; j: number; layers: Array<{ label: string; median: number; pairs: number }>; failed: boolean }

/** Margin (CSS px) left and above the cells for the outlier marks. */
const AXIS = 12;

function findCell(cells: Int32Array, key: number): number {
	let lo = 0, hi = cells.length;
	while (lo < hi) { const m = (lo + hi) >> 1; if (cells[m] < key) { lo = m + 1; } else { hi = m; } }
	return lo < cells.length && cells[lo] === key ? lo : -1;
}

/** The matrix canvas and its keyboard cursor. */
export class NodeMatrix {
	readonly canvas = el('canvas', { class: 'nodes', tabindex: '0', role: 'grid' });
	private _o: MapOverview | null = null;
	private _layer: number | null = null;
	private _marks = new Map<number, string>();
	private _cursor = { i: 0, j: 0 };
	private _size = 0;
	private _cell = 1;
	/** Cells drawn last (node pairs with a value or a failure). */
	drawnCells = 0;

	constructor(private readonly _label: (n: number) => string, private readonly _onMove: (c: NodeCell) => void, private readonly _onEnter: (c: NodeCell) => void, private readonly _tooltip: HTMLElement) {
		this.canvas.addEventListener('keydown', ev => this._key(ev));
		this.canvas.addEventListener('mousemove', ev => {
			const c = this._at(ev);
			this._tooltip.hidden = !c;
			if (c) { this._tooltip.textContent = this.describe(c); this._tooltip.style.left = `${ev.clientX + 12}px`; this._tooltip.style.top = `${ev.clientY + 12}px`; }
		});
		this.canvas.addEventListener('mouseleave', () => { this._tooltip.hidden = true; });
		this.canvas.addEventListener('click', ev => {
			const c = this._at(ev);
			if (!c) { return; }
			this._cursor = { i: c.i, j: c.j };
			this.redraw();
			this._onEnter(c);
		});
	}

	/** Which layer to show (index into overview.layers), null: all of them on one scale. */
	set layer(l: number | null) { this._layer = l; }

	/** Nodes to mark on the axes (node index → why). */
	set marks(m: Map<number, string>) { this._marks = m; }

	get cursor(): { i: number; j: number } { return { ...this._cursor }; }

	/** Put the cursor on a cell (and draw). */
	moveTo(i: number, j: number): void { this._cursor = { i, j }; this.redraw(); this._onMove(this.cellAt(i, j)); }

	/** Draw `o` into a square of `size` CSS px. */
	draw(o: MapOverview, size: number): void {
		this._o = o;
		this._size = size;
		const n = o.hosts.length;
		this._cursor = { i: Math.min(this._cursor.i, Math.max(0, n - 1)), j: Math.min(this._cursor.j, Math.max(0, n - 1)) };
		this.redraw();
	}

	/** Draw again with the current overview, layer and cursor. */
	redraw(): void {
		const o = this._o;
		if (!o) { return; }
		const n = Math.max(1, o.hosts.length);
		const dpr = window.devicePixelRatio || 1;
		// Whole pixels per node where they fit, else one pixel for several nodes (the worst cell of them).
		const inner = Math.max(40, this._size - AXIS);
		const cell = n <= inner ? Math.floor(inner / n) : inner / n;
		this._cell = cell;
		const side = Math.ceil(n * cell);
		const W = Math.ceil((side + AXIS) * dpr);
		this.canvas.width = W; this.canvas.height = W;
		this.canvas.style.width = this.canvas.style.height = `${side + AXIS}px`;
		const ctx = this.canvas.getContext('2d');
		if (!ctx) { return; }
		const c = colors();
		const px = Math.ceil(side * dpr);
		const off = Math.round(AXIS * dpr);
		// Worst (lowest) bandwidth per device pixel; NaN: no cell there.
		const worst = new Float32Array(px * px).fill(Number.NaN);
		const scale = (px / n);
		const layers: MapOverviewLayer[] = this._layer === null ? o.layers : o.layers.slice(this._layer, this._layer + 1);
		let lo = Infinity, hi = 0;
		for (const l of layers) { lo = Math.min(lo, l.min); hi = Math.max(hi, l.max); }
		// Device pixel of each node, and a band of at least 3 pixels for the marked (outlier) nodes, so their rows and
		// columns stay visible at 2 048 nodes; the minimum keeps the worst value where bands overlap.
		const first = new Int32Array(n), last = new Int32Array(n);
		const band = Math.max(1, Math.round(3 * dpr));
		for (let i = 0; i < n; i++) {
			const y0 = Math.floor(i * scale), y1 = Math.max(y0 + 1, Math.floor((i + 1) * scale));
			const grow = this._marks.has(i) && y1 - y0 < band ? (band - (y1 - y0)) / 2 : 0;
			first[i] = Math.max(0, Math.floor(y0 - grow)); last[i] = Math.min(px, Math.ceil(y1 + grow));
		}
		let drawn = 0;
		const put = (i: number, j: number, v: number): void => {
			const y0 = first[i], y1 = last[i], x0 = first[j], x1 = last[j];
			if (y1 - y0 === 1 && x1 - x0 === 1) {
				const k = y0 * px + x0;
				if (!(worst[k] <= v)) { worst[k] = v; }
				return;
			}
			for (let y = y0; y < y1; y++) {
				for (let x = x0, k = y * px + x0; x < x1; x++, k++) { if (!(worst[k] <= v)) { worst[k] = v; } }
			}
		};
		for (const l of layers) {
			const cells = l.cells, med = l.median;
			for (let k = 0; k < cells.length; k++) {
				const cellKey = cells[k], i = Math.floor(cellKey / n), j = cellKey - i * n, v = med[k];
				put(i, j, v);
				if (i !== j) { put(j, i, v); }
				drawn++;
			}
		}
		const img = ctx.createImageData(px, px);
		const data = img.data;
		const lut = Array.from({ length: 256 }, (_, t) => heatColor(t / 255));
		for (let k = 0; k < worst.length; k++) {
			const v = worst[k];
			if (Number.isNaN(v)) { continue; } // no cell under this pixel
			const [r, g, b] = lut[Math.round(Math.min(1, Math.max(0, heatT(v, lo, hi))) * 255)];
			const o4 = k * 4;
			data[o4] = r; data[o4 + 1] = g; data[o4 + 2] = b; data[o4 + 3] = 255;
		}
		ctx.clearRect(0, 0, W, W);
		ctx.putImageData(img, off, off);
		// Failed cells on top, at least a device pixel each.
		ctx.fillStyle = c.error;
		for (const key of o.failedCells) {
			const i = Math.floor(key / n), j = key - i * n;
			ctx.fillRect(off + first[j], off + first[i], Math.max(band, last[j] - first[j]), Math.max(band, last[i] - first[i]));
			ctx.fillRect(off + first[i], off + first[j], Math.max(band, last[i] - first[i]), Math.max(band, last[j] - first[j]));
		}
		this.drawnCells = drawn + o.failedCells.length;
		// Outlier nodes: marks on both axes (a triangle pointing at the row and at the column).
		const t = Math.max(3, AXIS * dpr * 0.45);
		for (const node of this._marks.keys()) {
			const mid = off + (node + 0.5) * scale;
			ctx.beginPath(); ctx.moveTo(off - 1, mid); ctx.lineTo(off - 1 - t * 1.6, mid - t); ctx.lineTo(off - 1 - t * 1.6, mid + t); ctx.fill();
			ctx.beginPath(); ctx.moveTo(mid, off - 1); ctx.lineTo(mid - t, off - 1 - t * 1.6); ctx.lineTo(mid + t, off - 1 - t * 1.6); ctx.fill();
		}
		// The cursor: a ring around its cell (visible even when the cell is below a pixel).
		const cs = Math.max(3 * dpr, scale);
		ctx.strokeStyle = c.fg; ctx.lineWidth = Math.max(1, dpr);
		ctx.strokeRect(off + this._cursor.j * scale - (cs - scale) / 2 - 1, off + this._cursor.i * scale - (cs - scale) / 2 - 1, cs + 2, cs + 2);
		this.canvas.setAttribute('aria-label', `${this._label(n)}. Cursor: ${this.describe(this.cellAt(this._cursor.i, this._cursor.j))}`);
	}

	/** The numbers of cell (i, j). */
	cellAt(i: number, j: number): NodeCell {
		const o = this._o;
		if (!o) { return { i, j, layers: [], failed: false }; }
		const n = o.hosts.length;
		const key = Math.min(i, j) * n + Math.max(i, j);
		const layers: NodeCell['layers'] = [];
		o.layers.forEach((l, li) => {
			if (this._layer !== null && this._layer !== li) { return; }
			const k = findCell(l.cells, key);
			if (k >= 0) { layers.push({ label: l.label, median: l.median[k], pairs: l.pairs[k] }); }
		});
		return { i, j, layers, failed: findCell(o.failedCells, key) >= 0 };
	}

	/** "node0001 — node0002: GPUDirect RDMA over network 47.0 GB/s (median of 1 pair)". */
	describe(c: NodeCell): string {
		const o = this._o;
		if (!o) { return ''; }
		const name = (k: number): string => `${o.hosts[k] ?? '?'}${this._marks.has(k) ? ` (${this._marks.get(k)})` : ''}`;
		const who = c.i === c.j ? `${name(c.i)}, within the node` : `${name(c.i)} — ${name(c.j)}`;
		const what = c.layers.length === 0 ? 'not measured' : c.layers.map(l => `${l.label} ${num(l.median)} GB/s (median of ${l.pairs} pair${l.pairs === 1 ? '' : 's'})`).join('; ');
		return `${who}: ${what}${c.failed ? '; a pair FAILED' : ''}`;
	}

	private _at(ev: MouseEvent): NodeCell | null {
		const o = this._o;
		if (!o) { return null; }
		const rect = this.canvas.getBoundingClientRect();
		const x = ev.clientX - rect.left - AXIS, y = ev.clientY - rect.top - AXIS;
		const n = o.hosts.length;
		const i = Math.floor(y / this._cell), j = Math.floor(x / this._cell);
		if (x < 0 || y < 0 || i >= n || j >= n) { return null; }
		return this.cellAt(i, j);
	}

	private _key(ev: KeyboardEvent): void {
		const o = this._o;
		if (!o) { return; }
		const n = o.hosts.length;
		const step = ev.shiftKey ? 8 : 1;
		const moves: Record<string, [number, number]> = {
			ArrowUp: [-step, 0], ArrowDown: [step, 0], ArrowLeft: [0, -step], ArrowRight: [0, step], PageUp: [-64, 0], PageDown: [64, 0],
		};
		if (moves[ev.key]) {
			const [di, dj] = moves[ev.key];
			ev.preventDefault();
			this.moveTo(Math.min(n - 1, Math.max(0, this._cursor.i + di)), Math.min(n - 1, Math.max(0, this._cursor.j + dj)));
		} else if (ev.key === 'Home') {
			ev.preventDefault();
			this.moveTo(this._cursor.i, this._cursor.i);
		} else if (ev.key === 'Enter' || ev.key === ' ') {
			ev.preventDefault();
			this._onEnter(this.cellAt(this._cursor.i, this._cursor.j));
		}
	}
}
