/**
 * Small DOM helpers of the transport-map webview: element creation, theme colours read from the `--vscode-*`
 * variables (with the dark theme's values as fallbacks), number formatting and the one line that describes a pair.
 */
import type { ClassPalette } from '../../extension/shared/mapLayout';
import { DEFAULT_PALETTE } from '../../extension/shared/mapLayout';
import { CHANNEL_LABELS, PATH_CLASS_LABELS, type MapPair } from '../../extension/shared/mapSchema';

/** Create an element with attributes and text. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
	const e = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs)) { e.setAttribute(k, v); }
	if (text !== undefined) { e.textContent = text; }
	return e;
}

/** A theme variable's value, or the fallback. */
export function css(name: string, fallback: string): string {
	const v = getComputedStyle(document.body).getPropertyValue(name).trim();
	return v || fallback;
}

/** Colours of the path classes (VS Code's chart colours). */
export function palette(): ClassPalette {
	return {
		same_gpu: css('--vscode-charts-green', DEFAULT_PALETTE.same_gpu), p2p: css('--vscode-charts-blue', DEFAULT_PALETTE.p2p),
		gpudirect_rdma: css('--vscode-charts-purple', DEFAULT_PALETTE.gpudirect_rdma), host_staging: css('--vscode-charts-orange', DEFAULT_PALETTE.host_staging),
		not_cuda_aware: css('--vscode-charts-red', DEFAULT_PALETTE.not_cuda_aware), host_memory: css('--vscode-descriptionForeground', DEFAULT_PALETTE.host_memory),
	};
}

/** Foreground, background, box and error colours. */
export function colors(): { fg: string; bg: string; box: string; error: string } {
	return {
		fg: css('--vscode-editor-foreground', '#cccccc'), bg: css('--vscode-editor-background', '#1e1e1e'), box: css('--vscode-panel-border', '#555555'),
		error: css('--vscode-charts-red', '#f14c4c'),
	};
}

/** "12.3 GB/s", "—" for null. */
export function fmt(v: number | null | undefined, d: number, unit: string): string { return v === null || v === undefined ? '—' : `${v.toFixed(d)} ${unit}`; }

/** Three significant digits: 0.0213, 1.93, 23.4, 145. */
export function num(v: number): string { return v >= 100 ? v.toFixed(0) : Number(v.toPrecision(3)).toString(); }

/** One line of a pair: ranks, class, channel, numbers, status. */
export function pairText(p: MapPair): string {
	return `${p.a} ↔ ${p.b}: ${PATH_CLASS_LABELS[p.class]}${p.channel ? ` over ${CHANNEL_LABELS[p.channel]}` : ''}, ${fmt(p.bandwidth_gbps, 2, 'GB/s')}, ${fmt(p.latency_us, 2, 'µs')}${p.status === 'ok' ? '' : ` [${p.status}]`}`;
}

/** The evidence of a pair as elements: heading, reason, the evidence lines, the error and what changed the class. */
export function pairDetails(p: MapPair): HTMLElement[] {
	const ul = el('ul', {});
	for (const e of p.evidence) { ul.append(el('li', {}, e)); }
	return [
		el('h2', {}, pairText(p)), el('p', {}, p.reason),
		...(p.error ? [el('p', { class: 'error' }, p.error)] : []),
		el('h3', {}, 'Evidence'), ul,
		...(p.engine_class ? [el('p', {}, `The engine classified it as ${PATH_CLASS_LABELS[p.engine_class]}; the run's transport evidence changed that.`)] : []),
	];
}
