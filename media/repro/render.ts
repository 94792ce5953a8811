/**
 * Markup of the reproducer results panel, built as escaped strings from the reports (no DOM, so plain mocha tests
 * it and the screenshot page reuses it): IPC config × variant table with outcome badges, verdict and why lines,
 * expandable raw evidence; per fallback configuration a bandwidth chart, a memory chart, the verdict and the table.
 */
import { escapeHtml } from '../../extension/shared/htmlEscape';
import { posixQuoteArgv } from '../../extension/shared/shellQuote';
import type { ReproPanelData } from '../../extension/shared/reproProtocol';
import { fallbackResultKey, type FallbackResult, type FallbackTrialResult, type IpcVariantResult, type IpcVariantSummary, type ReproFallbackReport, type ReproIpcReport, type ReproMpiInfo, type ValueSpread } from '../../extension/shared/reproSchema';
import { spreadText } from '../../extension/shared/trialStats';
import { buildLineChart } from './chart';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** Human size of a power-of-two-ish byte count. */
export function sizeLabel(b: number): string {
	if (b >= 1 << 30 && b % (1 << 30) === 0) { return `${b / (1 << 30)} GiB`; }
	if (b >= 1 << 20 && b % (1 << 20) === 0) { return `${b / (1 << 20)} MiB`; }
	if (b >= 1024 && b % 1024 === 0) { return `${b / 1024} KiB`; }
	return `${b} B`;
}

function outcomeText(v: IpcVariantResult): string {
	return v.outcome === 'correct' ? 'correct'
		: v.outcome === 'wrong_data' ? 'wrong data'
			: v.outcome === 'mpi_error' ? 'MPI error'
				: v.outcome === 'crashed' ? `crashed${v.crashedRank !== null ? ` · rank ${v.crashedRank}` : ''}${v.signal !== null ? ` · signal ${v.signal}` : ''}`
					: v.outcome === 'timed_out' ? 'hung (timed out)' : v.outcome.replace(/_/g, ' ');
}

function outcomeClass(v: IpcVariantResult): string {
	return ['correct', 'wrong_data', 'mpi_error', 'crashed', 'timed_out', 'launch_error'].includes(v.outcome) ? v.outcome : 'other';
}

/** One mark per trial; a click asks the host to open that trial's log in an editor. */
function trialStrip(s: IpcVariantSummary): string {
	const marks = s.runs.map(r => `<button type="button" class="trial trial-${outcomeClass(r)}" data-config="${escapeHtml(r.config)}" data-variant="${escapeHtml(r.variant)}" data-trial="${r.trial}" title="${escapeHtml(`trial ${r.trial} of ${s.requested}: ${outcomeText(r)} — ${r.detail} (click: open its log)`)}" aria-label="${escapeHtml(`trial ${r.trial}: ${outcomeText(r)}`)}"></button>`);
	const missing = Math.max(0, s.requested - s.runs.length);
	for (let i = 0; i < missing; i++) { marks.push('<span class="trial trial-missing" title="not run (cancelled)"></span>'); }
	return `<span class="strip">${marks.join('')}</span>`;
}

function classBadge(s: IpcVariantSummary): string {
	return `<span class="badge class-${escapeHtml(s.class)}" title="${escapeHtml(s.sentence)}">${escapeHtml(s.class)} · ${s.counts.correct}/${s.trials}</span>`;
}

function mpiLine(mpi: ReproMpiInfo | null): string {
	if (!mpi) { return '<p class="meta">MPI: unknown (no run printed a result)</p>'; }
	const ca = mpi.cuda_aware.run_time === null ? 'unknown' : mpi.cuda_aware.run_time ? 'yes' : 'no';
	return `<p class="meta"><span class="k">MPI</span> ${escapeHtml(mpi.library_version.split('\n')[0].slice(0, 160))} · <span class="k">CUDA-aware at run time</span> ${escapeHtml(ca)}</p>`;
}

function renderIpc(rep: ReproIpcReport): string {
	const variants = [...new Set(rep.variants.map(v => v.variant))];
	const configs = [...new Set(rep.variants.map(v => v.config))];
	const runs = rep.variants.flatMap(v => v.runs);
	const mem = runs.find(v => v.memory)?.memory;
	const out: string[] = ['<section class="ipc"><h2>IPC-imported pointer</h2>', mpiLine(rep.mpi)];
	out.push(`<p class="meta">${rep.trials} trial${rep.trials === 1 ? '' : 's'} per variant and configuration, each its own launch${rep.partial ? ' · <strong class="partial">partial: cancelled before every trial ran</strong>' : ''}</p>`);
	if (mem === 'host') {
		out.push(`<p class="notice">Host memory: no GPU verdict (${escapeHtml(runs.find(v => v.gpuUnavailableReason)?.gpuUnavailableReason ?? 'no GPU')}).</p>`);
	}
	const cls = rep.verdict.directWorks === true ? 'ok' : rep.verdict.directClass === 'unreliable' ? 'warn' : rep.verdict.directWorks === false ? 'bad' : 'unknown';
	out.push(`<p class="verdict verdict-${cls}">${escapeHtml(rep.verdict.answer)}</p>`);
	if (rep.verdict.why.length > 0) { out.push(`<pre class="why">${rep.verdict.why.map(escapeHtml).join('\n')}</pre>`); }
	const bf = rep.verdict.bounceFix;
	if (bf) {
		out.push(`<pre class="code fix">${escapeHtml(bf.code)}</pre><p><button type="button" class="copy-evidence copy-code" data-copy="${escapeHtml(bf.code)}">Copy code</button> ` +
			`<button type="button" class="open-example">Open example (${escapeHtml(bf.example)})</button></p>`);
	}
	out.push('<table class="matrix"><thead><tr><th>configuration</th>');
	for (const v of variants) { out.push(v === 'crash-test' ? '<th title="deliberate crash (test hook: rank 1 stores through address 0x10)">crash-test <span class="dim">(hook)</span></th>' : `<th>${escapeHtml(v)}</th>`); }
	out.push('</tr></thead><tbody>');
	for (const c of configs) {
		out.push(`<tr><th scope="row">${escapeHtml(c)}</th>`);
		for (const vn of variants) {
			const s = rep.variants.find(x => x.config === c && x.variant === vn);
			out.push(s ? `<td class="cell">${classBadge(s)}${trialStrip(s)}<div class="rate">${escapeHtml(s.sentence)}</div></td>` : '<td><span class="na">–</span></td>');
		}
		out.push('</tr>');
	}
	out.push('</tbody></table>');
	const failing = rep.variants.filter(s => s.failureModes.length > 0);
	if (failing.length > 0) {
		out.push('<h3>Failure modes</h3>');
		for (const s of failing) {
			for (const m of s.failureModes) {
				const open = s.variant !== 'crash-test' ? ' open' : '';
				out.push(`<details class="mode"${open}><summary><span class="run-name">${escapeHtml(s.variant)} · ${escapeHtml(s.config)}</span>: ${escapeHtml(m.label)} — <strong>${m.count} of ${s.trials}</strong> <span class="dim">(trials ${escapeHtml(m.trials.join(', '))}${m.ranks.length ? `; ranks ${escapeHtml(m.ranks.join(', '))}` : ''})</span></summary>`);
				for (const e of m.explanations) { out.push(`<p class="explanation">${escapeHtml(e)}</p>`); }
				out.push(`<p class="dim">Sample: trial ${m.sampleTrial} <button type="button" class="open-log" data-config="${escapeHtml(s.config)}" data-variant="${escapeHtml(s.variant)}" data-trial="${m.sampleTrial}">Open its log</button></p>`);
				if (m.sampleEvidence.length > 0) {
					out.push(`<pre class="evidence">${m.sampleEvidence.map(escapeHtml).join('\n')}</pre>`);
					out.push(`<button type="button" class="copy-evidence" data-copy="${escapeHtml(m.sampleEvidence.join('\n'))}">Copy evidence</button>`);
				}
				out.push('</details>');
			}
		}
	}
	const first = runs[0];
	if (first) { out.push(`<details class="run"><summary>Command of the first trial</summary><pre class="cmd">${escapeHtml(posixQuoteArgv(first.command))}</pre></details>`); }
	out.push('</section>');
	return out.join('');
}

function maxOf(r: FallbackResult, f: (m: FallbackResult['memory'][number]) => number | null): number | null {
	const v = r.memory.map(f).filter((x): x is number => typeof x === 'number');
	return v.length ? Math.max(...v) : null;
}

function gbps(y: number): string { return y === 0 ? '0' : y >= 100 ? `${Math.round(y)}` : y >= 10 ? y.toFixed(0) : y.toFixed(1); }

/** The ranked options and, for a libgpumpi recommendation, its code with "Copy code" and "Open example". */
function renderRanking(rep: ReproFallbackReport): string {
	const rk = rep.ranking;
	if (!rk || rk.options.length === 0 || rk.atBytes === null) { return ''; }
	const mibS = mibSpread;
	const out: string[] = [`<h3>Options ranked at ${escapeHtml(sizeLabel(rk.atBytes))}</h3>`,
		'<table class="results ranking"><thead><tr><th>#</th><th>option</th><th>GB/s, median (min–max)</th><th>extra host MiB</th><th>extra device MiB</th></tr></thead><tbody>'];
	rk.options.forEach((o, i) => {
		out.push(`<tr${rk.best?.mode === o.mode ? ' class="best"' : ''}><td class="num">${i + 1}</td><td>${escapeHtml(o.label)}</td><td class="num">${escapeHtml(spreadText(o.bestGbps))}</td><td class="num">${mibS(o.extraHostBytes)}</td><td class="num">${mibS(o.extraDeviceBytes)}</td></tr>`);
	});
	out.push('</tbody></table>');
	if (rk.fix) {
		out.push(`<h3>The fix (${escapeHtml(rk.fix.mode)})</h3><pre class="code fix">${escapeHtml(rk.fix.code)}</pre>`,
			`<pre class="cmd">${escapeHtml(rk.fix.build.join('\n'))}</pre>`,
			`<p><button type="button" class="copy-evidence copy-code" data-copy="${escapeHtml(rk.fix.code)}">Copy code</button> ` +
			`<button type="button" class="open-example">Open example (${escapeHtml(rk.fix.example)})</button></p>`);
	}
	return out.join('');
}

function mibSpread(s: ValueSpread | null): string {
	return s ? escapeHtml(spreadText({ ...s, median: s.median / MiB, min: s.min / MiB, max: s.max / MiB }, 1)) : '–';
}

/**
 * The UCX settings tried beside the configuration (`--try-ucx`, the picker's "Also try UCX staging settings"): one
 * row each against MPI as configured — trials, bandwidth range, host growth and growth per GiB of message, the
 * comparison — the best measured one marked, and the verdict's line about them.
 */
function renderUcxSettings(rep: ReproFallbackReport): string {
	const rk = rep.ranking;
	const list = rk?.ucxSettings ?? [];
	if (!rk || list.length === 0) { return ''; }
	const at = rk.atBytes;
	const perGiB = (s: ValueSpread | null): string => s && at ? `${(s.median / MiB / (at / GiB)).toFixed(0)}` : '–';
	const mpi = rk.options.find(o => o.mode === 'mpi') ?? null;
	const line = rk.text.find(t => t.startsWith('Best UCX setting measured:') || t.startsWith('No tried UCX setting'));
	// Reports saved before ucxBest existed name it only in the verdict line.
	const bestName = rk.ucxBest !== undefined ? rk.ucxBest : /^Best UCX setting measured: (\S+) /.exec(line ?? '')?.[1] ?? null;
	const out: string[] = [`<h3>UCX settings tried${at ? ` at ${escapeHtml(sizeLabel(at))}` : ''}</h3>`,
		'<table class="results ucx-settings"><thead><tr><th>setting</th><th>trials ok</th><th>GB/s, median (min–max)</th><th>vs MPI as configured</th><th>extra host MiB</th><th>host MiB per GiB</th><th>host memory</th></tr></thead><tbody>'];
	if (mpi) {
		out.push(`<tr class="reference"><td>MPI as configured</td><td class="num">${mpi.bestGbps.n}</td><td class="num">${escapeHtml(spreadText(mpi.bestGbps))}</td><td>–</td><td class="num">${mibSpread(mpi.extraHostBytes)}</td><td class="num">${perGiB(mpi.extraHostBytes)}</td><td></td></tr>`);
	}
	for (const u of list) {
		const vs = u.bandwidth === 'faster' ? 'faster' : u.bandwidth === 'slower' ? 'slower' : u.bandwidth === 'same' ? 'ranges overlap' : 'not compared';
		const mem = u.boundsMemory === true ? 'bounded' : u.boundsMemory === false ? 'grows with the message' : 'not measured';
		const best = bestName === u.setting;
		out.push(`<tr class="ucx-setting${best ? ' best' : ''}${u.bestGbps === null ? ' failed' : ''}" data-setting="${escapeHtml(u.setting)}"><td><code>${escapeHtml(u.setting)}</code>${best ? ' <span class="badge best-badge">best measured</span>' : ''}</td>` +
			`<td class="num">${u.ok}/${u.launched}</td><td class="num">${u.bestGbps ? escapeHtml(spreadText(u.bestGbps)) : '–'}</td><td class="vs-${escapeHtml(u.bandwidth ?? 'none')}">${escapeHtml(vs)}</td>` +
			`<td class="num">${mibSpread(u.extraHostBytes)}</td><td class="num">${perGiB(u.extraHostBytes)}</td><td class="mem-${u.boundsMemory === true ? 'bounded' : u.boundsMemory === false ? 'grows' : 'none'}">${escapeHtml(mem)}</td></tr>`);
		if (u.failure) { out.push(`<tr class="ucx-failure"><td colspan="7" class="dim">${escapeHtml(u.setting)}: ${escapeHtml(u.failure.slice(0, 400))}</td></tr>`); }
	}
	out.push('</tbody></table>');
	if (line) { out.push(`<p class="ucx-verdict verdict verdict-${list.find(u => u.setting === bestName)?.boundsMemory === true ? 'ok' : 'warn'}">${escapeHtml(line)}</p>`); }
	return out.join('');
}

function renderFallback(rep: ReproFallbackReport, index: number): string {
	const key = (r: FallbackResult): string => fallbackResultKey(r as FallbackTrialResult);
	const modes = [...new Set(rep.results.map(key))];
	const out: string[] = [`<section class="fallback" id="fallback-${index}"><h2>GPU-buffer fallback · ${escapeHtml(rep.config)}</h2>`, mpiLine(rep.mpi)];
	if (rep.memory === 'host') { out.push(`<p class="notice">Host memory: no GPU verdict (${escapeHtml(rep.gpuUnavailableReason ?? 'no GPU')}).</p>`); }
	const cls = rep.verdict.path === 'direct' ? 'ok' : rep.verdict.path === 'cannot' ? 'bad' : rep.verdict.path === 'staged' ? 'warn' : 'unknown';
	out.push(`<div class="verdict verdict-${cls}">${rep.verdict.text.map(t => `<p>${escapeHtml(t)}</p>`).join('')}</div>`);
	out.push(`<p class="meta">${rep.trials} trial${rep.trials === 1 ? '' : 's'} per mode${rep.partial ? ' · <strong class="partial">partial: cancelled before every trial ran</strong>' : ''} · ${rep.modes.map(m => `${escapeHtml(m.mode)} ${m.counts.ok} of ${m.trials} ok`).join(' · ')}</p>`);
	out.push('<table class="results spread"><thead><tr><th>mode</th><th>size</th><th>trials ok</th><th>best GB/s, median (min–max)</th><th>RSS+ MiB, median (min–max)</th></tr></thead><tbody>');
	for (const st of rep.stats) {
		const r = st.rssGrowth;
		out.push(`<tr><td>${escapeHtml(st.mode)}</td><td class="num">${escapeHtml(sizeLabel(st.sizeBytes))}</td><td class="num">${st.ok}/${st.trials}</td><td class="num">${st.bestGbps ? escapeHtml(spreadText(st.bestGbps)) : '–'}</td><td class="num">${r ? escapeHtml(spreadText({ ...r, median: r.median / MiB, min: r.min / MiB, max: r.max / MiB }, 1)) : '–'}</td></tr>`);
	}
	out.push('</tbody></table>');
	out.push(renderRanking(rep));
	out.push(renderUcxSettings(rep));
	for (const r of rep.runs.filter(x => x.outcome !== 'ok')) {
		out.push(`<p class="notice">Run ${escapeHtml(r.modes.join(','))} (trial ${r.trial}): ${escapeHtml(r.outcome)}${r.detail ? ` — ${escapeHtml(r.detail)}` : ''}</p>`);
	}
	// Charts: the median over the trials per size.
	const okPoints = (mode: string, f: (r: FallbackResult) => number | null): Array<{ x: number; y: number }> => {
		const sizes = [...new Set(rep.results.filter(r => key(r) === mode && r.status === 'ok').map(r => r.size_bytes))].sort((a, b) => a - b);
		return sizes.map(x => {
			const v = rep.results.filter(r => key(r) === mode && r.status === 'ok' && r.size_bytes === x).map(f).filter((y): y is number => typeof y === 'number' && Number.isFinite(y)).sort((a, b) => a - b);
			const y = v.length === 0 ? NaN : v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
			return { x, y };
		}).filter(p => Number.isFinite(p.y));
	};
	out.push('<div class="charts">');
	out.push(buildLineChart({
		title: 'Bandwidth (best of the repetitions; median over the trials)', xLabel: 'message size', yLabel: 'GB/s',
		series: modes.map(m => ({ name: m, points: okPoints(m, r => r.best_gbps) })),
		formatX: sizeLabel, formatY: gbps, emptyText: 'no successful measurement',
	}));
	out.push(buildLineChart({
		title: 'Peak resident host memory growth (largest rank; median over the trials)', xLabel: 'message size', yLabel: 'MiB',
		series: modes.map(m => ({ name: m, points: okPoints(m, r => { const v = maxOf(r, x => x.rss_peak_growth_bytes); return v === null ? null : v / MiB; }) })),
		formatX: sizeLabel, formatY: y => (y === 0 ? '0' : y >= 10 ? y.toFixed(0) : y.toFixed(1)), emptyText: 'no memory samples',
	}));
	out.push('</div>');
	out.push('<details class="table"><summary>Measurements of every trial</summary><table class="results"><thead><tr><th>trial</th><th>mode</th><th>size</th><th>best GB/s</th><th>median GB/s</th><th>data</th><th>RSS+ MiB</th><th>pinned+ MiB</th><th>device+ MiB</th></tr></thead><tbody>');
	for (const r of rep.results) {
		const data = r.status !== 'ok' ? r.status : r.verified.wrong === 0 ? 'verified' : `${r.verified.wrong} wrong`;
		const mib = (v: number | null): string => v === null ? '–' : (v / MiB).toFixed(1);
		const pin = maxOf(r, m => m.pinned_peak_growth_bytes);
		out.push(`<tr class="status-${escapeHtml(r.status)}"><td class="num">${r.trial}</td><td>${escapeHtml(key(r))}</td><td class="num">${escapeHtml(sizeLabel(r.size_bytes))}</td><td class="num">${r.best_gbps === null ? '–' : r.best_gbps.toFixed(2)}</td><td class="num">${r.median_gbps === null ? '–' : r.median_gbps.toFixed(2)}</td><td>${escapeHtml(data)}${r.error ? ` <span class="dim">${escapeHtml(r.error)}</span>` : ''}</td><td class="num">${mib(maxOf(r, m => m.rss_peak_growth_bytes))}</td><td class="num">${mib(pin)}</td><td class="num">${mib(maxOf(r, m => m.device_used_peak_growth_bytes))}</td></tr>`);
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
	// Both reproducers' results of a host: side by side (two columns where the panel is wide enough, stacked otherwise).
	const both = data.ipc !== null && data.fallback.length > 0;
	if (both) { out.push('<div class="side-by-side"><div class="column column-ipc">'); }
	if (data.ipc) { out.push(renderIpc(data.ipc)); }
	if (both) { out.push('</div><div class="column column-fallback">'); }
	data.fallback.forEach((f, i) => out.push(renderFallback(f, i)));
	if (both) { out.push('</div></div>'); }
	if (!data.ipc && data.fallback.length === 0) { out.push('<p class="placeholder">No reproducer results in this file.</p>'); }
	return out.join('');
}
