#!/usr/bin/env node
// Screenshots of the reproducer results webview with the REAL H200 device result loaded
// (test-fixtures/repro/h200-testbed/repro-2026-12-02.json) → docs/screenshots/repro-ipc.png, repro-fallback.png.
// The page is a TEST PAGE THAT STANDS IN FOR THE VS CODE HOST: it defines acquireVsCodeApi(), answers the
// webview's `ready` request with the reports (rebuilt by the product's CLI: gpumpi-doctor repro … --json --from-json),
// and sets dark-theme values for the --vscode-* variables VS Code would inject. It renders the real dist/repro.js
// and dist/repro.css (run `node scripts/build.mjs` first) in headless Debian Chromium through playwright-core.
//   node scripts/screenshotRepro.mjs [--fixture FILE] [--out DIR]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 && args[i + 1] ? args[i + 1] : dflt; };
const fixture = path.resolve(opt('--fixture', path.join(ROOT, 'test-fixtures/repro/h200-testbed/repro-2026-12-02.json')));
const outDir = path.resolve(opt('--out', path.join(ROOT, 'docs/screenshots')));

for (const f of ['dist/repro.js', 'dist/repro.css', 'dist/cli.js']) {
	if (!fs.existsSync(path.join(ROOT, f))) { console.error(`${f} missing: run node scripts/build.mjs`); process.exit(1); }
}
const cli = (which) => JSON.parse(execFileSync(process.execPath, [path.join(ROOT, 'dist/cli.js'), 'repro', which, '--json', '--from-json', fixture], { encoding: 'utf8', maxBuffer: 256 << 20 }));
const data = { ipc: cli('ipc'), fallback: cli('fallback'), source: `${path.basename(fixture)} (saved device result)` };

// Dark+ theme values of the variables the stylesheet uses (what VS Code injects into a webview).
const THEME = {
	'--vscode-font-family': 'system-ui, "DejaVu Sans", sans-serif', '--vscode-font-size': '13px',
	'--vscode-editor-font-family': '"DejaVu Sans Mono", monospace', '--vscode-editor-font-size': '12px',
	'--vscode-foreground': '#cccccc', '--vscode-editor-background': '#1e1e1e', '--vscode-descriptionForeground': '#ccccccb3',
	'--vscode-panel-border': '#80808059', '--vscode-button-background': '#0e639c', '--vscode-button-foreground': '#ffffff',
	'--vscode-button-hoverBackground': '#1177bb', '--vscode-button-secondaryBackground': '#3a3d41', '--vscode-button-secondaryForeground': '#ffffff',
	'--vscode-textBlockQuote-background': '#7f7f7f1a', '--vscode-textCodeBlock-background': '#0a0a0a66', '--vscode-editorWidget-background': '#252526',
	'--vscode-editorWarning-foreground': '#cca700', '--vscode-errorForeground': '#f48771', '--vscode-textLink-foreground': '#3794ff',
	'--vscode-charts-red': '#f14c4c', '--vscode-charts-blue': '#3794ff', '--vscode-charts-green': '#89d185', '--vscode-charts-yellow': '#cca700',
	'--vscode-charts-orange': '#d18616', '--vscode-charts-purple': '#b180d7', '--vscode-charts-foreground': '#cccccc', '--vscode-charts-lines': '#cccccc80',
};

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'repro-shot-'));
fs.copyFileSync(path.join(ROOT, 'dist/repro.js'), path.join(work, 'repro.js'));
fs.copyFileSync(path.join(ROOT, 'dist/repro.css'), path.join(work, 'repro.css'));
fs.writeFileSync(path.join(work, 'theme.css'), `html { ${Object.entries(THEME).map(([k, v]) => `${k}: ${v};`).join(' ')} }\n`);
// The same body the product's webviewHtml() + toolbarAndContent() emit (toolbar, content, one script).
fs.writeFileSync(path.join(work, 'index.html'), `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">
<link rel="stylesheet" href="theme.css"><link rel="stylesheet" href="repro.css"><title>GPU-MPI Reproducer</title></head>
<body><header class="toolbar"><button type="button" id="copy-bug-report" disabled>Copy as bug report</button><span id="busy" class="busy" hidden></span></header>
<main id="content"><p class="placeholder">Loading…</p></main><script src="repro.js"></script></body></html>`);

const browser = await chromium.launch({
	executablePath: '/usr/bin/chromium',
	args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
	const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
	const errors = [];
	page.on('pageerror', e => errors.push(String(e)));
	await page.addInitScript((payload) => {
		// Stand-in for the VS Code host: answers `ready` with the results, acknowledges copies.
		window.acquireVsCodeApi = () => ({
			postMessage(env) {
				if (env.kind !== 'request') { return; }
				const body = env.body.type === 'ready' ? { type: 'reproReadyResponse', data: payload, busy: false }
					: env.body.type === 'copyBugReport' ? { type: 'copyBugReportResponse', chars: 1 } : undefined;
				setTimeout(() => window.postMessage({ kind: 'reply', inReplyTo: env.id, body }, '*'), 0);
			},
		});
	}, data);
	await page.goto(`file://${work}/index.html`);
	await page.waitForSelector('section.ipc table.matrix');
	if (errors.length) { throw new Error(`page errors: ${errors.join('; ')}`); }
	fs.mkdirSync(outDir, { recursive: true });
	const ipc = await page.$('section.ipc');
	// The IPC view: matrix, verdict and the expanded failing run (clip to a readable height).
	const box = await ipc.boundingBox();
	await page.setViewportSize({ width: 1280, height: Math.min(1400, Math.ceil(box.y + box.height) + 20) });
	await page.screenshot({ path: path.join(outDir, 'repro-ipc.png'), clip: { x: 0, y: 0, width: 1280, height: Math.min(1400, Math.ceil(box.y + box.height) + 16) } });
	// The fallback view of UCX_TLS=sm,cuda_copy,self (the 775 MiB host-memory growth).
	const idx = data.fallback.findIndex(f => f.config === 'ucx UCX_TLS=sm,cuda_copy,self');
	const sec = await page.$(`#fallback-${idx >= 0 ? idx : 0}`);
	const sb = await sec.evaluate(e => { const r = e.getBoundingClientRect(); return { y: r.top + window.scrollY, height: r.height }; });
	await page.screenshot({ path: path.join(outDir, 'repro-fallback.png'), fullPage: true, clip: { x: 0, y: Math.max(0, sb.y - 8), width: 1280, height: sb.height + 16 } });
	console.log(`wrote ${path.join(outDir, 'repro-ipc.png')} and repro-fallback.png`);
} finally {
	await browser.close();
	fs.rmSync(work, { recursive: true, force: true });
}
