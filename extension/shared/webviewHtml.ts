/**
 * The HTML shell of every webview panel (diagnostics, reproducer, transport map), pure so a plain test can check it:
 * a strict Content-Security-Policy with a per-load nonce, one stylesheet, one nonce'd external script, no inline
 * script or style. Each panel gives its own body markup, already escaped by the caller (`escapeHtml`).
 */
import { escapeHtml } from './htmlEscape';

/** What a panel fills in. */
export interface WebviewShellInput {
	/** webview.cspSource */
	cspSource: string;
	/** At least 16 url-safe characters, fresh per load. */
	nonce: string;
	scriptUri: string;
	styleUri: string;
	lang: string;
	title: string;
	/** Extra CSP img-src sources (e.g. "data:" for exported PNGs). */
	imgSources?: string[];
	/** Attributes of <body> as name → value (values are escaped here). */
	bodyAttributes?: Record<string, string>;
	/** The body's markup before the script (escaped by the caller). */
	bodyHtml: string;
}

/** The Content-Security-Policy of a panel. */
export function webviewCsp(cspSource: string, nonce: string, imgSources: readonly string[] = []): string {
	return [
		`default-src 'none'`,
		`script-src 'nonce-${nonce}'`,
		`style-src ${cspSource}`,
		`font-src ${cspSource}`,
		`img-src ${[cspSource, ...imgSources].join(' ')}`,
	].join('; ');
}

/** The full document. Throws for a nonce that could break out of the CSP or an attribute name that is not a name. */
export function webviewHtml(i: WebviewShellInput): string {
	if (!/^[A-Za-z0-9_-]{16,}$/.test(i.nonce)) { throw new Error('nonce must be at least 16 url-safe characters'); }
	const attrs = Object.entries(i.bodyAttributes ?? {}).map(([k, v]) => {
		if (!/^[a-z][a-z0-9-]*$/.test(k)) { throw new Error(`bad attribute name ${JSON.stringify(k)}`); }
		return ` ${k}="${escapeHtml(v)}"`;
	}).join('');
	return `<!DOCTYPE html>
<html lang="${escapeHtml(i.lang)}">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(webviewCsp(i.cspSource, i.nonce, i.imgSources))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeHtml(i.styleUri)}">
<title>${escapeHtml(i.title)}</title>
</head>
<body${attrs}>
${i.bodyHtml}
<script nonce="${escapeHtml(i.nonce)}" src="${escapeHtml(i.scriptUri)}"></script>
</body>
</html>`;
}

/** The toolbar (with the busy indicator) and content area the diagnostics and reproducer panels share. */
export function toolbarAndContent(toolbarHtml: string, loading: string): string {
	return `<header class="toolbar">${toolbarHtml}<span id="busy" class="busy" hidden></span></header>
<main id="content"><p class="placeholder">${escapeHtml(loading)}</p></main>`;
}
