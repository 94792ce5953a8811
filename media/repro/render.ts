/**
 * Markup of the reproducer results panel, built as escaped strings from the reports (no DOM, so plain mocha tests
 * it and the screenshot page reuses it): IPC config × variant table with outcome badges, verdict and why lines,
 * expandable raw evidence; per fallback configuration a bandwidth chart, a memory chart, the verdict and the table.
 */
import { escapeHtml } from '../../extension/shared/htmlEscape';
import { posixQuoteArgv } from '../../extension/shared/shellQuote';
import type { ReproPanelData } from '../../extension/shared/reproProtocol';
import type { FallbackResult, IpcVariantResult, ReproFallbackReport, ReproIpcReport, ReproMpiInfo } from '../../extension/shared/reproSchema';
import { buildLineChart } from './chart';

const MiB = 1024 * 1024;

/** Human size of a power-of-two-ish byte count. */
export function sizeLabel(b: number): string {
	if (b >= 1 << 30 && b % (1 << 30) === 0) { return `${b / (1 << 30)} GiB`; }
	if (b >= 1 << 20 && b % (1 << 20) === 0) { return `${b / (1 << 20)} MiB`; }
	if (b >= 1024 && b % 1024 === 0) { return `${b / 1024} KiB`; }
	return `${b} B`;
}

function badge(v: IpcVariantResult): string {
	const text = v.outcome === 'correct' ? 'correct'
		: v.outcome === 'wrong_data' ? 'wrong data'
			: v.outcome === 'mpi_error' ? 'MPI error'
				: v.outcome === 'crashed' ? `crashed${v.crashedRank !== null ? ` · rank ${v.crashedRank}` : ''}${v.signal !== null ? ` · signal ${v.signal}` : ''}`
					: v.outcome === 'timed_out' ? 'timed out' : v.outcome.replace(/_/g, ' ');
	const cls = ['correct', 'wrong_data', 'mpi_error', 'crashed', 'timed_out'].includes(v.outcome) ? v.outcome : 'other';
	return `<span class="badge badge-${cls}" title="${escapeHtml(v.detail)}">${escapeHtml(text)}</span>`;
}

function mpiLine(mpi: ReproMpiInfo | null): string {
	if (!mpi) { return '<p class="meta">MPI: unknown (no run printed a result)</p>'; }
	const ca = mpi.cuda_aware.run_time === null ? 'unknown' : mpi.cuda_aware.run_time ? 'yes' : 'no';
	return `<p class="meta"><span class="k">MPI</span> ${escapeHtml(mpi.library_version.split('\n')[0].slice(0, 160))} · <span class="k">CUDA-aware at run time</span> ${escapeHtml(ca)}</p>`;
}

function renderIpc(rep: ReproIpcReport): string {
	const variants = [...new Set(rep.variants.map(v => v.variant))];
	const configs = [...new Set(rep.variants.map(v => v.config))];
	const mem = rep.variants.find(v => v.memory)?.memory;
	const out: string[] = ['<section class="ipc"><h2>IPC-imported pointer</h2>', mpiLine(rep.mpi)];
	if (mem === 'host') {
		out.push(`<p class="notice">Host memory: no GPU verdict (${escapeHtml(rep.variants.find(v => v.gpuUnavailableReason)?.gpuUnavailableReason ?? 'no GPU')}).</p>`);
	}
	const cls = rep.verdict.directWorks === true ? 'ok' : rep.verdict.directWorks === false ? 'bad' : 'unknown';
	out.push(`<p class="verdict verdict-${cls}">${escapeHtml(rep.verdict.answer)}</p>`);
	if (rep.verdict.why.length > 0) { out.push(`<pre class="why">${rep.verdict.why.map(escapeHtml).join('\n')}</pre>`); }
	const other = rep.variants.filter(v => v.variant !== 'direct' && v.variant !== 'crash-test' && v.outcome !== 'correct');
	if (other.length > 0) {
		out.push(`<p class="notice">Also failed: ${other.map(v => `${escapeHtml(v.variant)} under ${escapeHtml(v.config)} — ${escapeHtml(v.detail)}`).join('; ')}</p>`);
	}
	out.push('<table class="matrix"><thead><tr><th>configuration</th>');
	for (const v of variants) { out.push(v === 'crash-test' ? '<th title="deliberate crash (test hook: rank 1 stores through address 0x10)">crash-test <span class="dim">(hook)</span></th>' : `<th>${escapeHtml(v)}</th>`); }
	out.push('</tr></thead><tbody>');
	for (const c of configs) {
		out.push(`<tr><th scope="row">${escapeHtml(c)}</th>`);
		for (const vn of variants) {
			const v = rep.variants.find(x => x.config === c && x.variant === vn);
			out.push(`<td>${v ? badge(v) : '<span class="na">–</span>'}</td>`);
		}
		out.push('</tr>');
	}
	out.push('</tbody></table>');
	out.push('<h3>Runs</h3>');
	for (const v of rep.variants) {
		const open = v.outcome !== 'correct' && v.variant !== 'crash-test' ? ' open' : '';
		out.push(`<details class="run"${open}><summary>${badge(v)} <span class="run-name">${escapeHtml(v.variant)} · ${escapeHtml(v.config)}</span> <span class="dim">${escapeHtml((v.durationMs / 1000).toFixed(1))} s</span></summary>`);
		out.push(`<p>${escapeHtml(v.detail)}</p>`);
		out.push(`<pre class="cmd">${escapeHtml(posixQuoteArgv(v.command))}</pre>`);
		if (v.evidence.length > 0) {
			out.push(`<pre class="evidence">${v.evidence.map(escapeHtml).join('\n')}</pre>`);
			out.push(`<button type="button" class="copy-evidence" data-copy="${escapeHtml(v.evidence.join('\n'))}">Copy evidence</button>`);
		}
		out.push('</details>');
	}
	out.push('</section>');
	return out.join('');
}

function maxOf(r: FallbackResult, f: (m: FallbackResult['memory'][number]) => number | null): number | null {
	const v = r.memory.map(f).filter((x): x is number => typeof x === 'number');
	return v.length ? Math.max(...v) : null;
}

function gbps(y: number): string { return y === 0 ? '0' : y >= 100 ? `${Math.round(y)}` : y >= 10 ? y.toFixed(0) : y.toFixed(1); }

function renderFallback(rep: ReproFallbackReport, index: number): string {
	const modes = [...new Set(rep.results.map(r => r.mode))];
	const out: string[] = [`<section class="fallback" id="fallback-${index}"><h2>GPU-buffer fallback · ${escapeHtml(rep.config)}</h2>`, mpiLine(rep.mpi)];
	if (rep.memory === 'host') { out.push(`<p class="notice">Host memory: no GPU verdict (${escapeHtml(rep.gpuUnavailableReason ?? 'no GPU')}).</p>`); }
	const cls = rep.verdict.path === 'direct' ? 'ok' : rep.verdict.path === 'cannot' ? 'bad' : rep.verdict.path === 'staged' ? 'warn' : 'unknown';
	out.push(`<div class="verdict verdict-${cls}">${rep.verdict.text.map(t => `<p>${escapeHtml(t)}</p>`).join('')}</div>`);
	for (const r of rep.runs.filter(x => x.outcome !== 'ok')) {
		out.push(`<p class="notice">Run ${escapeHtml(r.modes.join(','))}: ${escapeHtml(r.outcome)}${r.detail ? ` — ${escapeHtml(r.detail)}` : ''}</p>`);
	}
	const okPoints = (mode: string, f: (r: FallbackResult) => number | null): Array<{ x: number; y: number }> =>
		rep.results.filter(r => r.mode === mode && r.status === 'ok').map(r => ({ x: r.size_bytes, y: f(r) ?? NaN })).filter(p => Number.isFinite(p.y));
	out.push('<div class="charts">');
	out.push(buildLineChart({
		title: 'Bandwidth (best of the repetitions)', xLabel: 'message size', yLabel: 'GB/s',
		series: modes.map(m => ({ name: m, points: okPoints(m, r => r.best_gbps) })),
		formatX: sizeLabel, formatY: gbps, emptyText: 'no successful measurement',
	}));
	out.push(buildLineChart({
		title: 'Peak resident host memory growth (largest rank)', xLabel: 'message size', yLabel: 'MiB',
		series: modes.map(m => ({ name: m, points: okPoints(m, r => { const v = maxOf(r, x => x.rss_peak_growth_bytes); return v === null ? null : v / MiB; }) })),
		formatX: sizeLabel, formatY: y => (y === 0 ? '0' : y >= 10 ? y.toFixed(0) : y.toFixed(1)), emptyText: 'no memory samples',
	}));
	out.push('</div>');
	out.push('<details class="table"><summary>Measurements</summary><table class="results"><thead><tr><th>mode</th><th>size</th><th>best GB/s</th><th>median GB/s</th><th>data</th><th>RSS+ MiB</th><th>pinned+ MiB</th><th>device+ MiB</th></tr></thead><tbody>');
	for (const r of rep.results) {
		const data = r.status !== 'ok' ? r.status : r.verified.wrong === 0 ? 'verified' : `${r.verified.wrong} wrong`;
		const mib = (v: number | null): string => v === null ? '–' : (v / MiB).toFixed(1);
		const pin = maxOf(r, m => m.pinned_peak_growth_bytes);
		out.push(`<tr class="status-${escapeHtml(r.status)}"><td>${escapeHtml(r.mode)}</td><td class="num">${escapeHtml(sizeLabel(r.size_bytes))}</td><td class="num">${r.best_gbps === null ? '–' : r.best_gbps.toFixed(2)}</td><td class="num">${r.median_gbps === null ? '–' : r.median_gbps.toFixed(2)}</td><td>${escapeHtml(data)}${r.error ? ` <span class="dim">${escapeHtml(r.error)}</span>` : ''}</td><td class="num">${mib(maxOf(r, m => m.rss_peak_growth_bytes))}</td><td class="num">${mib(pin)}</td><td class="num">${mib(maxOf(r, m => m.device_used_peak_growth_bytes))}</td></tr>`);
	}
	out.push('</tbody></table></details>');
	if (rep.transports.lines.length > 0) {
		out.push(`<details class="run"><summary>Transport evidence (mpi mode)</summary><pre class="evidence">${[...new Set(rep.transports.lines)].slice(0, 40).map(escapeHtml).join('\n')}</pre></details>`);
	}
	out.push('</section>');
	return out.join('');
}

/** The panel body for some results. */
export function renderReproHtml(data: ReproPanelData): string {
	const out: string[] = [`<p class="source">${escapeHtml(data.source)}</p>`];
	if (data.fallback.length > 1) {
		out.push(`<nav class="toc">${data.fallback.map((f, i) => `<a href="#fallback-${i}">${escapeHtml(f.config)}</a>`).join(' ')}</nav>`);
	}
	if (data.ipc) { out.push(renderIpc(data.ipc)); }
	data.fallback.forEach((f, i) => out.push(renderFallback(f, i)));
	if (!data.ipc && data.fallback.length === 0) { out.push('<p class="placeholder">No reproducer results in this file.</p>'); }
	return out.join('');
}
