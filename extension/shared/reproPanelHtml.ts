/**
 * The reproducer panel's HTML shell (pure, so a plain test can check the CSP): a strict Content-Security-Policy
 * with a per-load nonce, the stylesheet, one nonce'd external script, and no inline script or style.
 */
import { escapeHtml } from './htmlEscape';

/** What the host fills in. */
export interface ReproPanelHtmlInput {
	/** webview.cspSource */
	cspSource: string;
	nonce: string;
	scriptUri: string;
	styleUri: string;
	lang: string;
	title: string;
	copyLabel: string;
	loading: string;
}

/** The Content-Security-Policy of the reproducer panel. */
export function reproPanelCsp(cspSource: string, nonce: string): string {
	return [
		`default-src 'none'`,
		`script-src 'nonce-${nonce}'`,
		`style-src ${cspSource}`,
		`font-src ${cspSource}`,
		`img-src ${cspSource}`,
	].join('; ');
}

/** The full document. */
export function reproPanelHtml(i: ReproPanelHtmlInput): string {
	if (!/^[A-Za-z0-9_-]{16,}$/.test(i.nonce)) { throw new Error('nonce must be at least 16 url-safe characters'); }
	return `<!DOCTYPE html>
<html lang="${escapeHtml(i.lang)}">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(reproPanelCsp(i.cspSource, i.nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeHtml(i.styleUri)}">
<title>${escapeHtml(i.title)}</title>
</head>
<body>
<header class="toolbar"><button type="button" id="copy-bug-report" disabled>${escapeHtml(i.copyLabel)}</button><span id="busy" class="busy" hidden></span></header>
<main id="content"><p class="placeholder">${escapeHtml(i.loading)}</p></main>
<script nonce="${escapeHtml(i.nonce)}" src="${escapeHtml(i.scriptUri)}"></script>
</body>
</html>`;
}
