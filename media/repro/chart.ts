/**
 * A small SVG line-chart builder for the reproducer panel: log2 x axis (message sizes), linear y axis from 0,
 * one polyline per series, legend, axis labels, a <title> tooltip per point. Pure string building (no DOM), so
 * plain mocha tests it; every text is escaped. Colours are NOT in the markup: series get classes (`series-0`…)
 * that repro.css maps to var(--vscode-charts-*), because the webview CSP forbids inline styles.
 */

/** One point of a series. */
export interface ChartPoint { x: number; y: number }
/** One line. */
export interface ChartSeries { name: string; points: ChartPoint[] }
/** What to draw. */
export interface LineChartSpec {
	title: string;
	xLabel: string;
	yLabel: string;
	series: ChartSeries[];
	/** Axis tick/tooltip text for an x value (e.g. "64 MiB"). */
	formatX: (x: number) => string;
	/** Axis tick/tooltip text for a y value (e.g. "35.9 GB/s"). */
	formatY: (y: number) => string;
	/** Shown instead of the plot when no series has a point. */
	emptyText: string;
	width?: number;
	height?: number;
}

/** Escape text for SVG/HTML text and attribute values. */
export function escapeSvg(s: string): string {
	return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

function fmt(n: number): string { return Number.isFinite(n) ? String(Math.round(n * 10) / 10) : '0'; }

/** A "nice" upper bound ≥ v (1, 2, 2.5, 5 × 10^k) and its tick step. */
export function niceMax(v: number): { max: number; step: number } {
	if (!(v > 0) || !Number.isFinite(v)) { return { max: 1, step: 0.25 }; }
	const exp = Math.floor(Math.log10(v));
	const base = 10 ** exp;
	for (const m of [1, 2, 2.5, 5, 10]) {
		if (m * base >= v) { return { max: m * base, step: (m * base) / (m === 2.5 || m === 5 ? 5 : 4) }; }
	}
	return { max: 10 * base, step: 2.5 * base };
}

/** Decimals that print every multiple of `step` exactly and distinctly (0.25 → 2, 2.5 → 1, 0.05 → 2, 5 → 0). */
export function tickDecimals(step: number): number {
	if (!(step > 0) || !Number.isFinite(step)) { return 0; }
	for (let d = 0; d <= 6; d++) {
		const scaled = step * 10 ** d;
		if (Math.abs(scaled - Math.round(scaled)) < 1e-9 * Math.max(1, scaled)) { return d; }
	}
	return 6;
}

/** The y tick labels 0, step, … yMax: the same number of decimals for all, so no two read the same. */
export function yTickLabels(yMax: number, step: number): string[] {
	const d = tickDecimals(step);
	const out: string[] = [];
	for (let i = 0; i * step <= yMax + step / 2; i++) { out.push(i === 0 ? '0' : (i * step).toFixed(d)); }
	return out;
}

/** The SVG markup of a line chart. Points with non-finite or non-positive x are dropped (log axis). */
export function buildLineChart(spec: LineChartSpec): string {
	const width = spec.width ?? 560;
	const height = spec.height ?? 300;
	const margin = { left: 64, right: 16, top: 28, bottom: 70 };
	const series = spec.series.map(s => ({ name: s.name, points: s.points.filter(p => Number.isFinite(p.x) && p.x > 0 && Number.isFinite(p.y)) }));
	const all = series.flatMap(s => s.points);
	const head = `<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escapeSvg(spec.title)}">` +
		`<title>${escapeSvg(spec.title)}</title>` +
		`<text class="chart-title" x="${margin.left}" y="16">${escapeSvg(spec.title)}</text>`;
	if (all.length === 0) {
		return `${head}<text class="chart-empty" x="${width / 2}" y="${height / 2}" text-anchor="middle">${escapeSvg(spec.emptyText)}</text></svg>`;
	}
	const plotW = width - margin.left - margin.right;
	const plotH = height - margin.top - margin.bottom;
	const lx = all.map(p => Math.log2(p.x));
	let x0 = Math.floor(Math.min(...lx)), x1 = Math.ceil(Math.max(...lx));
	if (x1 === x0) { x0 -= 1; x1 += 1; }
	const yMaxData = Math.max(0, ...all.map(p => p.y));
	const { max: yMax, step } = niceMax(yMaxData);
	const sx = (x: number): number => margin.left + ((Math.log2(x) - x0) / (x1 - x0)) * plotW;
	const sy = (y: number): number => margin.top + plotH - (Math.max(0, y) / yMax) * plotH;
	const parts: string[] = [head];
	// Grid and y ticks.
	// Labels from the step (not formatY, which rounds for tooltips: 0.025-steps would all read "0.0"); the unit is the axis label.
	yTickLabels(yMax, step).forEach((label, i) => {
		const y = fmt(sy(i * step));
		parts.push(`<line class="chart-grid" x1="${margin.left}" x2="${margin.left + plotW}" y1="${y}" y2="${y}"/>`);
		parts.push(`<text class="chart-tick" x="${margin.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${escapeSvg(label)}</text>`);
	});
	// x ticks at powers of two, thinned to at most ~8 labels.
	const every = Math.max(1, Math.ceil((x1 - x0) / 8));
	for (let e = x0; e <= x1; e++) {
		const x = fmt(sx(2 ** e));
		parts.push(`<line class="chart-axis" x1="${x}" x2="${x}" y1="${margin.top + plotH}" y2="${margin.top + plotH + 4}"/>`);
		if ((e - x0) % every === 0) {
			parts.push(`<text class="chart-tick" x="${x}" y="${margin.top + plotH + 16}" text-anchor="middle">${escapeSvg(spec.formatX(2 ** e))}</text>`);
		}
	}
	parts.push(`<line class="chart-axis" x1="${margin.left}" x2="${margin.left + plotW}" y1="${margin.top + plotH}" y2="${margin.top + plotH}"/>`);
	parts.push(`<line class="chart-axis" x1="${margin.left}" x2="${margin.left}" y1="${margin.top}" y2="${margin.top + plotH}"/>`);
	parts.push(`<text class="chart-label" x="${margin.left + plotW / 2}" y="${margin.top + plotH + 34}" text-anchor="middle">${escapeSvg(spec.xLabel)}</text>`);
	parts.push(`<text class="chart-label" transform="translate(14 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeSvg(spec.yLabel)}</text>`);
	// Series.
	series.forEach((s, i) => {
		const pts = [...s.points].sort((a, b) => a.x - b.x);
		if (pts.length === 0) { return; }
		const cls = `series-${i % 6}`;
		parts.push(`<g class="chart-series ${cls}" data-series="${escapeSvg(s.name)}">`);
		if (pts.length > 1) { parts.push(`<polyline points="${pts.map(p => `${fmt(sx(p.x))},${fmt(sy(p.y))}`).join(' ')}"/>`); }
		for (const p of pts) {
			parts.push(`<circle cx="${fmt(sx(p.x))}" cy="${fmt(sy(p.y))}" r="3.5"><title>${escapeSvg(`${s.name}: ${spec.formatX(p.x)} → ${spec.formatY(p.y)}`)}</title></circle>`);
		}
		parts.push('</g>');
	});
	// Legend below the x label.
	let lxPos = margin.left;
	const ly = margin.top + plotH + 54;
	series.forEach((s, i) => {
		parts.push(`<g class="chart-legend series-${i % 6}"><line x1="${lxPos}" x2="${lxPos + 18}" y1="${ly}" y2="${ly}"/><circle cx="${lxPos + 9}" cy="${ly}" r="3.5"/>` +
			`<text class="chart-tick" x="${lxPos + 24}" y="${ly}" dominant-baseline="middle">${escapeSvg(s.name)}</text></g>`);
		lxPos += 36 + Math.min(160, s.name.length * 7);
	});
	parts.push('</svg>');
	return parts.join('');
}
