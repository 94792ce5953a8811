// Renders media/icon.svg to media/icon.png (256×256, the extension's icon: package.json "icon"; vsce needs a PNG)
// with the Chromium the UI suite uses (playwright-core). Run after editing the SVG: node scripts/genIcon.mjs
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const svg = path.join(ROOT, 'media', 'icon.svg');
const out = path.join(ROOT, 'media', 'icon.png');
const exe = process.env.CHROMIUM_PATH || ['chromium', 'chromium-browser', 'google-chrome'].map((c) => { try { return execFileSync('which', [c], { encoding: 'utf8' }).trim(); } catch { return ''; } }).find(Boolean);
if (!exe) { console.error('no Chromium found (apt-get install chromium, or set CHROMIUM_PATH)'); process.exit(1); }
const browser = await chromium.launch({ executablePath: exe, args: ['--no-sandbox'] });
try {
	const page = await browser.newPage({ viewport: { width: 256, height: 256 } });
	await page.setContent(`<html><body style="margin:0;background:transparent">${fs.readFileSync(svg, 'utf8')}</body></html>`);
	await page.locator('svg').screenshot({ path: out, omitBackground: true });
	console.error(`wrote ${path.relative(ROOT, out)} (${fs.statSync(out).size} bytes)`);
} finally { await browser.close(); }
