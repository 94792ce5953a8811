#!/usr/bin/env node
// Screenshot of the transport-map webview (dist/map.js, dist/map.css) with a SAVED map loaded: a map document
// (gpumpi.map/1) or a scripts/gpu/map.sh device result (gpumpi.map-gpu/1, pick the run with --run NAME). The map is
// loaded by the product's own CLI (`gpumpi-doctor map --from-json F --json`, which joins each device run with its
// evidence lines), so the picture shows exactly what the VS Code panel would get.
// The page is a TEST PAGE THAT STANDS IN FOR THE VS CODE HOST: it defines acquireVsCodeApi(), answers the webview's
// `ready` request with the map, and sets dark-theme values for the --vscode-* variables VS Code would inject; it uses
// the same CSP as the real panel (scripts from files only). Headless Debian Chromium through playwright-core.
//   node scripts/build.mjs && node scripts/screenshotMap.mjs --file F [--run NAME] --out PNG [--view graph|matrix] [--details rank|pair] [--width W --height H]
//   --details: the pane under the map shows rank 0 (its GPU, CPUs, NICs, pairs) or rank 0's first pair with its evidence.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : dflt; };
const file = opt('--file', null);
const out = opt('--out', null);
const runName = opt('--run', null);
const view = opt('--view', 'graph');
const detailsOf = opt('--details', 'pair');
const width = Number(opt('--width', '1200'));
const height = Number(opt('--height', '820'));
if (!file || !out || !['graph', 'matrix'].includes(view) || !['rank', 'pair'].includes(detailsOf) || !(width > 100) || !(height > 100)) {
	console.error('usage: node scripts/screenshotMap.mjs --file F [--run NAME] --out PNG [--view graph|matrix] [--details rank|pair] [--width W --height H]');
	process.exit(2);
}
for (const f of ['dist/map.js', 'dist/map.css', 'dist/cli.js']) {
	if (!fs.existsSync(path.join(root, f))) { console.error(`${f} missing: run node scripts/build.mjs`); process.exit(1); }
}

/** The map documents the CLI prints for `file`: one, or one per device run ("== name" before each). */
function loadMaps(f) {
	const text = execFileSync(process.execPath, [path.join(root, 'dist/cli.js'), 'map', '--from-json', path.resolve(f), '--json'], { encoding: 'utf8', maxBuffer: 256 << 20 });
	const parts = text.split(/^== (.+)\n/m);
	if (parts.length === 1) { return [{ name: path.basename(f), doc: JSON.parse(text) }]; }
	const maps = [];
	for (let i = 1; i + 1 < parts.length; i += 2) { maps.push({ name: parts[i], doc: JSON.parse(parts[i + 1]) }); }
	return maps;
}
const maps = loadMaps(file);
const picked = runName ? maps.find(m => m.name === runName) : maps[0];
if (!picked) { console.error(`no run ${JSON.stringify(runName)} in ${file} (runs: ${maps.map(m => m.name).join(', ')})`); process.exit(1); }
const source = `${path.basename(file)}${maps.length > 1 ? ` — run ${picked.name}` : ''} (saved map)`;

const THEME = {
	'--vscode-foreground': '#cccccc', '--vscode-editor-foreground': '#d4d4d4', '--vscode-editor-background': '#1e1e1e',
	'--vscode-descriptionForeground': '#9d9d9d', '--vscode-panel-border': '#4a4a4a', '--vscode-focusBorder': '#007fd4',
	'--vscode-charts-green': '#89d185', '--vscode-charts-blue': '#3794ff', '--vscode-charts-purple': '#b180d7',
	'--vscode-charts-orange': '#d18616', '--vscode-charts-red': '#f14c4c', '--vscode-charts-yellow': '#cca700', '--vscode-button-background': '#0e639c',
	'--vscode-button-foreground': '#ffffff', '--vscode-dropdown-background': '#3c3c3c', '--vscode-dropdown-foreground': '#f0f0f0',
	'--vscode-textLink-foreground': '#3794ff', '--vscode-font-family': 'system-ui, "DejaVu Sans", sans-serif', '--vscode-font-size': '13px',
};
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'map-shot-'));
for (const f of ['map.js', 'map.css']) { fs.copyFileSync(path.join(root, 'dist', f), path.join(dir, f)); }
fs.writeFileSync(path.join(dir, 'host-stub.js'), `// Test page standing in for the VS Code extension host (scripts/screenshotMap.mjs).
window.__MAP__ = ${JSON.stringify(picked.doc)};
window.acquireVsCodeApi = () => ({
	getState() { return null; }, setState() {},
	postMessage(env) {
		if (env.kind !== 'request') { return; }
		const body = env.body.type === 'ready' ? { type: 'mapReadyResponse', map: window.__MAP__, source: ${JSON.stringify(source)}, busy: false } : undefined;
		window.postMessage({ kind: 'reply', inReplyTo: env.id, body }, '*');
	},
});
`);
fs.writeFileSync(path.join(dir, 'theme.css'), `body { ${Object.entries(THEME).map(([k, v]) => `${k}: ${v};`).join(' ')} }\n`);
fs.writeFileSync(path.join(dir, 'index.html'), `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src file:; style-src file:; img-src file: data:">
<link rel="stylesheet" href="theme.css"><link rel="stylesheet" href="map.css"><title>Transport map (test page standing in for the VS Code host)</title></head>
<body><main id="app"></main><script src="host-stub.js"></script><script src="map.js"></script></body></html>`);

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true,
	args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
try {
	const page = await browser.newPage({ viewport: { width, height }, deviceScaleFactor: 1 });
	const errors = [];
	page.on('pageerror', e => errors.push(String(e)));
	page.on('console', m => { if (m.type() === 'error') { errors.push(m.text()); } });
	await page.goto(`file://${dir}/index.html`);
	await page.waitForFunction(() => document.body.dataset.renderMs !== undefined, null, { timeout: 30000 });
	if (view === 'matrix') { await page.getByRole('button', { name: 'Matrix' }).click(); }
	// Select rank 0 (keyboard, as a user would), then its first pair: the details pane shows that pair's evidence.
	await page.locator('.overlay .rank').first().focus();
	await page.keyboard.press('Enter');
	if (detailsOf === 'pair') { await page.locator('.details button.pair').first().click(); }
	await page.evaluate(() => new Promise(r => requestAnimationFrame(() => r(null))));
	if (errors.length) { throw new Error(`page errors: ${errors.join('; ')}`); }
	fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
	await page.screenshot({ path: path.resolve(out), fullPage: true });
	console.log(`${out}: ${picked.name}, ${picked.doc.world_size} ranks, ${picked.doc.pairs.length} pairs`);
} finally {
	await browser.close();
	fs.rmSync(dir, { recursive: true, force: true });
}
