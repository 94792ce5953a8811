/**
 * Report → HTML, as a string, for both the diagnostics webview (media/panel/main.ts puts it in the page) and the
 * standalone HTML report the CLI writes. Pure: no vscode, no DOM, no node. Every value is escaped; the markup
 * carries class names and data attributes only (no inline style, no inline script), so a strict CSP holds.
 * DOM hooks for tests: #headline[data-verdict] (first in the report), #summary, #findings, .finding[data-rule-id], .severity-error|warning|info, #raw.
 */
import type { Evidence, Finding, HostSummary, RawOutput, Report, Severity, YesNoUnknown } from './report';
import { classToken, escapeHtml as e, safeHref } from './htmlEscape';
import { reportHeadline, type Headline } from './headline';

/** User-visible strings of the rendered report (the extension passes localised ones; `{0}` are placeholders). */
export interface RenderStrings {
	title: string;
	host: string;
	mpi: string;
	cudaAware: string;
	ucx: string;
	ucxCuda: string;
	cudaDriver: string;
	gpus: string;
	noGpus: string;
	findings: string;
	noFindings: string;
	severityError: string;
	severityWarning: string;
	severityInfo: string;
	evidence: string;
	fix: string;
	copy: string;
	source: string;
	rawOutputs: string;
	exitCode: string;
	notStarted: string;
	duration: string;
	notes: string;
	stdout: string;
	stderr: string;
	empty: string;
	yes: string;
	no: string;
	unknown: string;
	/** {0} time, {1} tool name, {2} version, {3} elapsed. */
	createdLine: string;
	/** Heading of the headline's evidence list. */
	headlineBasis: string;
	/** Title of an evidence link (the panel): where clicking it goes. */
	openEvidence: string;
}

/** English defaults. */
export const DEFAULT_STRINGS: RenderStrings = {
	title: 'GPU-MPI Doctor',
	host: 'Host',
	mpi: 'MPI',
	cudaAware: 'CUDA-aware',
	ucx: 'UCX',
	ucxCuda: 'CUDA transports',
	cudaDriver: 'CUDA driver',
	gpus: 'GPUs',
	noGpus: 'No GPU reported',
	findings: 'Findings',
	noFindings: 'No findings.',
	severityError: 'Errors',
	severityWarning: 'Warnings',
	severityInfo: 'Information',
	evidence: 'Evidence',
	fix: 'Fix',
	copy: 'Copy',
	source: 'Source',
	rawOutputs: 'Raw tool outputs',
	exitCode: 'exit code {0}',
	notStarted: 'did not run: {0}',
	duration: '{0} ms',
	notes: 'Notes',
	stdout: 'stdout',
	stderr: 'stderr',
	empty: '(empty)',
	yes: 'yes',
	no: 'no',
	unknown: 'unknown',
	createdLine: 'Created {0} by {1} {2} in {3} ms',
	headlineBasis: 'Based on',
	openEvidence: 'Open this line (the file, or the raw output below)',
};

/** Options for `renderReportHtml`. */
export interface RenderOptions {
	strings?: RenderStrings;
	/** Copy buttons (they need the webview script); off in the standalone report. Default true. */
	interactive?: boolean;
	/** How the creation time is shown (the panel: the viewer's local time); default the ISO text as stored. */
	formatTime?: (iso: string) => string;
}

const SEVERITIES: readonly Severity[] = ['error', 'warning', 'info'];

/** Replace {0}, {1}… in a template with escaped arguments (the template itself is escaped too). */
function fmt(template: string, ...args: unknown[]): string {
	return e(template).replace(/\{(\d+)\}/g, (m, i: string) => (Number(i) < args.length ? e(args[Number(i)]) : m));
}

function tri(value: YesNoUnknown | string, s: RenderStrings): string {
	const v: YesNoUnknown = value === 'yes' || value === 'no' ? value : 'unknown';
	return `<span class="tri tri-${v}">${e(s[v])}</span>`;
}

/** Quote argv for display the way a POSIX shell would need it. */
export function displayArgv(argv: readonly string[]): string {
	return argv.map(a => (a.length > 0 && /^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

function renderSummary(report: Report, s: RenderStrings, formatTime: (iso: string) => string): string {
	const sum: HostSummary = report.summary;
	const gpus: HostSummary['gpus'] = Array.isArray(sum.gpus) ? sum.gpus : [];
	const gpuList = gpus.length === 0
		? `<p class="gpus-none">${e(s.noGpus)}</p>`
		: `<ul class="gpu-list">${gpus.map(g =>
			`<li class="gpu" data-gpu-index="${e(g.index)}"><span class="gpu-index">${e(g.index)}</span> <span class="gpu-name">${e(g.name)}</span> <span class="gpu-bus">${e(g.pciBusId)}</span> <span class="gpu-mem">${e(g.memoryMiB)} MiB</span></li>`).join('')}</ul>`;
	return `<section id="summary" class="summary">
<h1 class="summary-title">${e(s.title)} — <span class="summary-host">${e(sum.hostname || report.host.label)}</span></h1>
<dl class="summary-grid">
<div class="summary-item" data-key="host"><dt>${e(s.host)}</dt><dd>${e(sum.hostname || report.host.label)} <span class="host-kind">${e(report.host.kind)}</span></dd></div>
<div class="summary-item" data-key="mpi"><dt>${e(s.mpi)}</dt><dd><span class="summary-label">${e(sum.mpi?.label)}</span> <span class="summary-sub">${e(s.cudaAware)}: ${tri(sum.mpi?.cudaAware, s)}</span><div class="summary-detail">${e(sum.mpi?.detail)}</div></dd></div>
<div class="summary-item" data-key="ucx"><dt>${e(s.ucx)}</dt><dd><span class="summary-label">${e(sum.ucx?.label)}</span> <span class="summary-sub">${e(s.ucxCuda)}: ${tri(sum.ucx?.cuda, s)}</span><div class="summary-detail">${e(sum.ucx?.detail)}</div></dd></div>
<div class="summary-item" data-key="cuda"><dt>${e(s.cudaDriver)}</dt><dd><span class="summary-label">${e(sum.cuda?.label)}</span> <span class="summary-detail">${e(sum.cuda?.driverVersion)}</span></dd></div>
<div class="summary-item" data-key="gpus"><dt>${e(s.gpus)} (${e(gpus.length)})</dt><dd>${gpuList}</dd></div>
</dl>
<p class="summary-meta">${fmt(s.createdLine, typeof report.createdAt === 'string' ? formatTime(report.createdAt) : report.createdAt, report.tool?.name, report.tool?.version, report.elapsedMs)}</p>
</section>`;
}

const VERDICTS = ['works', 'fails', 'at-risk', 'not-checked'];

/** The one-line verdict, first in the report, with what it rests on (report.headline, or derived for an old report). */
function renderHeadline(report: Report, s: RenderStrings): string {
	const h: Headline = report.headline && typeof report.headline.text === 'string' ? report.headline : reportHeadline(report);
	const verdict = VERDICTS.includes(h.verdict) ? h.verdict : 'not-checked';
	const basis = (Array.isArray(h.evidence) ? h.evidence : []).map(x =>
		`<li class="headline-evidence" data-ref="${e(x?.ref)}"><code class="headline-ref">${e(x?.ref)}</code> ${e(x?.text)}</li>`).join('');
	return `<section id="headline" class="headline verdict-${verdict}" data-verdict="${verdict}">
<p class="headline-text">${e(h.text)}</p>${basis ? `<details class="headline-basis"><summary>${e(s.headlineBasis)}</summary><ul class="headline-evidence-list">${basis}</ul></details>` : ''}
</section>`;
}

function renderEvidence(ev: readonly Evidence[], s: RenderStrings, interactive: boolean): string {
	if (!Array.isArray(ev) || ev.length === 0) { return ''; }
	const items = ev.map((x, i) => {
		const where = x.lineNo !== undefined ? `${x.source}:${x.lineNo}` : x.source;
		// Interactive (the panel): the place is a link-styled button; media/panel/main.ts opens the file or scrolls the raw
		// output to it. Not <a href="#">: VS Code's webview host answers a click on such a link with scrollTo(0, 0) after
		// our handler had scrolled to the line (VS Code 1.100.3 out/vs/workbench/contrib/webview/browser/pre/index.html:
		// "if (node.getAttribute('href') === '#') { event.view.scrollTo(0, 0);"), so the panel jumped to its top.
		const place = interactive
			? `<button type="button" class="evidence-source evidence-link" data-evidence-index="${i}" title="${e(s.openEvidence)}">${e(where)}</button>`
			: `<span class="evidence-source">${e(where)}</span>`;
		return `<li class="evidence-line" data-source="${e(x.source)}">${place}<code class="evidence-text">${e(x.line)}</code></li>`;
	}).join('');
	return `<div class="evidence"><h5 class="evidence-heading">${e(s.evidence)}</h5><ul class="evidence-list">${items}</ul></div>`;
}

/** A source as a link when it is an http(s) URL; a page of the project's docs/ (not in the .vsix) as its path. */
function sourceLink(url: string): string {
	const href = safeHref(url);
	return href ? `<a class="source-link" href="${e(href)}">${e(url)}</a>` : `<code class="source-doc">${e(url)}</code>`;
}

function renderFinding(f: Finding, index: number, s: RenderStrings, interactive: boolean): string {
	const sev = SEVERITIES.includes(f.severity) ? f.severity : 'info';
	let fix = '';
	if (f.fix) {
		const cmd = typeof f.fix.command === 'string' && f.fix.command.length > 0
			? `<div class="fix-command"><code class="fix-code">${e(f.fix.command)}</code>${interactive
				? `<button type="button" class="copy-button" data-copy="${e(f.fix.command)}" title="${e(s.copy)}">${e(s.copy)}</button>` : ''}</div>`
			: '';
		fix = `<div class="fix"><h5 class="fix-heading">${e(s.fix)}</h5><p class="fix-text">${e(f.fix.text)}</p>${cmd}</div>`;
	}
	let source = '';
	const refs = Array.isArray(f.sources) ? f.sources.filter((r) => typeof r?.url === 'string' && r.url.length > 0) : [];
	if (refs.length > 0) {
		source = `<div class="finding-sources"><h5 class="sources-heading">${e(s.source)}</h5><ul class="source-list">${refs.map((r) => `<li class="source-item">${sourceLink(r.url)}${typeof r.shows === 'string' && r.shows.length > 0 ? ` <span class="source-shows">— ${e(r.shows)}</span>` : ''}</li>`).join('')}</ul></div>`;
	} else if (typeof f.source === 'string' && f.source.length > 0) {
		const href = safeHref(f.source);
		source = `<p class="finding-source">${e(s.source)}: ${href ? `<a href="${e(href)}">${e(f.source)}</a>` : e(f.source)}</p>`;
	}
	return `<article class="finding severity-${sev}" data-rule-id="${e(f.id)}" data-finding-index="${index}" data-severity="${sev}">
<h4 class="finding-title"><span class="severity-badge severity-${sev}">${e(sev)}</span> ${e(f.title)}</h4>
<p class="finding-message">${e(f.message)}</p>
${renderEvidence(f.evidence, s, interactive)}${fix}${source}
</article>`;
}

function renderFindings(findings: readonly Finding[], s: RenderStrings, interactive: boolean): string {
	const list: readonly Finding[] = Array.isArray(findings) ? findings : [];
	const heading: Record<Severity, string> = { error: s.severityError, warning: s.severityWarning, info: s.severityInfo };
	const groups = SEVERITIES.map(sev => {
		const inGroup = list.filter(f => (SEVERITIES.includes(f.severity) ? f.severity : 'info') === sev);
		if (inGroup.length === 0) { return ''; }
		return `<section class="severity-group group-${sev}" data-severity="${sev}"><h3 class="severity-heading">${e(heading[sev])} (${inGroup.length})</h3>${inGroup.map(f => renderFinding(f, list.indexOf(f), s, interactive)).join('\n')}</section>`;
	}).join('\n');
	const counts = SEVERITIES.map(sev => `<span class="count count-${sev}" data-severity="${sev}">${e(heading[sev])}: ${list.filter(f => f.severity === sev).length}</span>`).join(' ');
	return `<section id="findings" class="findings"><h2>${e(s.findings)} <span class="counts">${counts}</span></h2>${list.length === 0 ? `<p class="no-findings">${e(s.noFindings)}</p>` : groups}</section>`;
}

function renderStream(name: string, text: string, s: RenderStrings): string {
	const body = typeof text === 'string' && text.length > 0 ? `<pre class="raw-text raw-${name}">${e(text)}</pre>` : `<p class="raw-empty">${e(s.empty)}</p>`;
	return `<div class="raw-stream" data-stream="${name}"><h5>${e(name === 'stdout' ? s.stdout : s.stderr)}</h5>${body}</div>`;
}

function renderRaw(raw: readonly RawOutput[], s: RenderStrings): string {
	const list: readonly RawOutput[] = Array.isArray(raw) ? raw : [];
	const items = list.map(r => {
		const ok = r.exitCode === 0 && !r.error;
		const status = r.exitCode === null ? fmt(s.notStarted, r.error ?? '') : fmt(s.exitCode, r.exitCode) + (r.error ? ` — ${e(r.error)}` : '');
		const notes = Array.isArray(r.notes) && r.notes.length > 0
			? `<div class="raw-notes"><h5>${e(s.notes)}</h5><ul>${r.notes.map((n: string) => `<li>${e(n)}</li>`).join('')}</ul></div>` : '';
		return `<details class="raw-output ${ok ? 'raw-ok' : 'raw-failed'} raw-id-${classToken(r.id.split(':')[0])}" data-raw-id="${e(r.id)}">
<summary><span class="raw-id">${e(r.id)}</span> <span class="raw-status">${status}</span> <span class="raw-duration">${fmt(s.duration, r.durationMs)}</span></summary>
<pre class="raw-command"><code>${e(displayArgv(Array.isArray(r.command) ? r.command : []))}</code></pre>
${notes}${renderStream('stdout', r.stdout, s)}${renderStream('stderr', r.stderr, s)}
</details>`;
	}).join('\n');
	return `<section id="raw" class="raw"><h2>${e(s.rawOutputs)} (${list.length})</h2>${items}</section>`;
}

/** The report body: headline verdict, summary, findings grouped by severity, raw outputs. */
export function renderReportHtml(report: Report, options: RenderOptions = {}): string {
	const s = options.strings ?? DEFAULT_STRINGS;
	const interactive = options.interactive ?? true;
	return `<div class="report" data-schema="${e(report.schema)}">
${renderHeadline(report, s)}
${renderSummary(report, s, options.formatTime ?? (iso => iso))}
${renderFindings(report.findings, s, interactive)}
${renderRaw(report.raw, s)}
</div>`;
}

/**
 * Values for the --vscode-* tokens panel.css uses, so the standalone report reads well in a browser
 * (light by default, dark when the browser prefers it).
 */
export const STANDALONE_TOKENS = `:root {
  --vscode-font-family: system-ui, -apple-system, "Segoe UI", Ubuntu, sans-serif;
  --vscode-font-size: 14px;
  --vscode-editor-font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace;
  --vscode-editor-font-size: 13px;
  --vscode-foreground: #1f2328;
  --vscode-descriptionForeground: #59636e;
  --vscode-editor-background: #ffffff;
  --vscode-sideBar-background: #f6f8fa;
  --vscode-panel-border: #d1d9e0;
  --vscode-textCodeBlock-background: #f0f2f4;
  --vscode-textLink-foreground: #0969da;
  --vscode-errorForeground: #cf222e;
  --vscode-editorWarning-foreground: #9a6700;
  --vscode-editorInfo-foreground: #0969da;
  --vscode-testing-iconPassed: #1a7f37;
  --vscode-button-background: #0969da;
  --vscode-button-foreground: #ffffff;
  --vscode-button-hoverBackground: #0550ae;
  --vscode-button-secondaryBackground: #e7ecf0;
  --vscode-button-secondaryForeground: #1f2328;
  --vscode-badge-background: #59636e;
  --vscode-badge-foreground: #ffffff;
  --vscode-focusBorder: #0969da;
}
@media (prefers-color-scheme: dark) {
  :root {
    --vscode-foreground: #d1d7e0;
    --vscode-descriptionForeground: #9198a1;
    --vscode-editor-background: #0d1117;
    --vscode-sideBar-background: #151b23;
    --vscode-panel-border: #3d444d;
    --vscode-textCodeBlock-background: #1f2428;
    --vscode-textLink-foreground: #4493f8;
    --vscode-errorForeground: #f85149;
    --vscode-editorWarning-foreground: #d29922;
    --vscode-editorInfo-foreground: #4493f8;
    --vscode-testing-iconPassed: #3fb950;
    --vscode-button-secondaryBackground: #2a313c;
    --vscode-button-secondaryForeground: #d1d7e0;
  }
}`;

/**
 * A complete standalone HTML document (no scripts at all; CSP `default-src 'none'; style-src 'unsafe-inline'`):
 * the same body as the panel, `css` (media/panel/panel.css) inlined, and fallback token values.
 */
export function renderStandaloneReport(report: Report, css: string, strings: RenderStrings = DEFAULT_STRINGS): string {
	// A stylesheet must not be able to close the <style> element early: no "<" at all (CSS escape \3c instead).
	const safeCss = `${STANDALONE_TOKENS}\n${css}`.replace(/</g, '\\3c ');
	return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(strings.title)} — ${e(report.summary?.hostname || report.host?.label)}</title>
<style>
${safeCss}
</style>
</head>
<body class="standalone">
${renderReportHtml(report, { strings, interactive: false })}
</body>
</html>
`;
}
