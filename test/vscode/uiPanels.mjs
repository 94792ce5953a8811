// UI checks of the reproducer and transport-map panels, driven like a user in the real workbench (after uiChecks.mjs's
// inspect checks, same window): the palette opens a SAVED device result through VS Code's own file dialog (the
// simple dialog code-server uses: a path typed into the quick input), the reproducer panel shows the IPC and fallback
// results of one host side by side and the fallback's ranked options with "Copy code" / "Open example"; the map
// panel's "Export SVG" / "Export PNG" buttons go through the save dialog and write files that show the whole map.
// The inspection panel's "Save…" (JSON through the save dialog) and, after a second inspection, the Hosts row's
// History and "Compare…" (VS Code's diff editor on the two inspections).
// A simulated 2 048-rank map (scripts/mapScaleGen.mjs, 256 nodes) opens anomaly first: a finding's "Show … in the
// matrix" drills down to its node.
// Screenshots (looked at, see the report): repro-side-by-side.png, repro-fallback-ranking.png, transport-map-export.png,
// transport-map-2048-vscode.png (first view) and transport-map-2048-vscode-drill.png
// (the exported SVG rendered by Chromium), compare-inspections.png and compare-repro.png next to the inspect screenshot.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateScaleMap, plantedFaults } from '../../scripts/mapScaleGen.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const REPRO_RESULT = path.join(ROOT, 'test-fixtures', 'repro', 'h200-testbed', 'repro-2026-12-02.json');
/** A real fallback run of this CPU machine (host memory, btl tcp,self) where libgpumpi's shm mode wins: its ranking carries the fix. */
const FALLBACK_WITH_FIX = path.join(ROOT, 'test-fixtures', 'repro', 'this-host', 'fallback-tcp-host-memory-2026-12-03.json');
const MAP_DOC = path.join(ROOT, 'test-fixtures', 'map', 'map-4-openmpi-vader.json');

const webview = (page) => page.locator('iframe.webview.ready').last().contentFrame().locator('#active-frame').contentFrame();

async function palette(page, label) {
	const input = page.locator('.quick-input-widget input.input');
	if (await input.isVisible()) { await page.keyboard.press('Escape'); }
	await page.keyboard.press('F1');
	await input.waitFor({ state: 'visible', timeout: 5000 });
	await input.fill(`>${label}`);
	await page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first().waitFor({ state: 'visible', timeout: 10_000 });
	await page.keyboard.press('Enter');
}

/** VS Code's simple file dialog (open or save): type the absolute path, accept. */
async function fileDialog(page, file) {
	const input = page.locator('.quick-input-widget input.input');
	await input.waitFor({ state: 'visible', timeout: 15_000 });
	await page.waitForTimeout(500); // the dialog fills in its start folder first
	await input.fill(file);
	await page.waitForTimeout(300);
	await page.keyboard.press('Enter');
	await page.waitForTimeout(700);
	if (await input.isVisible() && (await input.inputValue()) === file) { await page.keyboard.press('Enter'); }
}

/** A palette command whose second step is a pick (e.g. "View: Open View" → a view name). */
async function runPaletteCommandQuietly(page, label, pick) {
	await palette(page, label).catch(() => {});
	const row = page.locator('.quick-input-list .monaco-list-row', { hasText: pick }).first();
	if (await row.waitFor({ state: 'visible', timeout: 5000 }).then(() => true, () => false)) { await row.click(); }
	else { await page.keyboard.press('Escape'); }
}

async function until(fn, timeoutMs, what) {
	const t0 = Date.now();
	let last = '';
	for (;;) {
		try { const r = await fn(); if (r === true) { return; } last = String(r); } catch (e) { last = e instanceof Error ? e.message.split('\n')[0] : String(e); }
		if (Date.now() - t0 > timeoutMs) { throw new Error(`timed out waiting for ${what} (last: ${last.slice(0, 300)})`); }
		await new Promise((r) => setTimeout(r, 300));
	}
}

/** Runs the panel checks through `check(title, fn)` of uiChecks.mjs; pictures go to `shotDir`, scratch files to `debugDir`. */
export async function runPanelChecks(page, { check, shotDir, debugDir }) {
	await check('Open Reproducer Result… (palette, file dialog): one host\'s IPC and fallback results side by side', async () => {
		await palette(page, 'GPU-MPI: Open Reproducer Result');
		await fileDialog(page, REPRO_RESULT);
		const f = () => webview(page);
		await until(async () => (await f().locator('.side-by-side .column-ipc').count()) > 0 && (await f().locator('.side-by-side .column-fallback').count()) > 0 || 'no side-by-side columns', 30_000, 'the reproducer panel with both columns');
		const [ipc, fb] = [await f().locator('.column-ipc').boundingBox(), await f().locator('.column-fallback').boundingBox()];
		if (!ipc || !fb || !(fb.x > ipc.x + ipc.width / 2)) { throw new Error(`the columns are not side by side: ipc ${JSON.stringify(ipc)}, fallback ${JSON.stringify(fb)}`); }
		await page.mouse.move(0, 0);
		await page.waitForTimeout(500);
		await page.screenshot({ path: path.join(shotDir, 'repro-side-by-side.png') });
	});

	await check('the fallback result ranks the options and offers "Copy code" and "Open example"', async () => {
		// The H200 result above predates libgpumpi's modes (MPI and manual staging only, no fix); this machine's run has one.
		await palette(page, 'GPU-MPI: Open Reproducer Result');
		await fileDialog(page, FALLBACK_WITH_FIX);
		const f = webview(page);
		await until(async () => (await f.locator('button.open-example').count()) > 0 || 'no Open example button', 30_000, 'the ranking with its fix');
		const rows = await f.locator('table.ranking tbody tr').count();
		if (rows < 2) { throw new Error(`the ranking table has ${rows} rows`); }
		const buttons = (await f.locator('button.copy-code, button.open-example').allTextContents()).map((t) => t.trim());
		if (!buttons.includes('Copy code') || !buttons.some((b) => b.startsWith('Open example'))) { throw new Error(`buttons: ${JSON.stringify(buttons)}`); }
		// The picture: the "Options ranked" heading at the top, the table and the fix's code under it.
		await f.locator('table.ranking').first().evaluate((t) => (t.previousElementSibling ?? t).scrollIntoView({ block: 'start' }));
		await page.waitForTimeout(400);
		await page.screenshot({ path: path.join(shotDir, 'repro-fallback-ranking.png') });
	});

	for (const format of ['svg', 'png']) {
		await check(`the transport map's "Export ${format.toUpperCase()}" writes the whole map through the save dialog`, async () => {
			const out = path.join(debugDir, `map-export.${format}`);
			fs.rmSync(out, { force: true });
			if (format === 'svg') {
				await palette(page, 'GPU-MPI: Show Transport Map');
				const open = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Open a saved map JSON' }).first();
				await open.waitFor({ state: 'visible', timeout: 10_000 });
				await open.click();
				await fileDialog(page, MAP_DOC);
				// The map is drawn on canvases; the rank buttons over them (one per rank) say it is there.
				await until(async () => (await webview(page).locator('button.rank').count()) >= 4 || 'no rank buttons yet', 30_000, 'the map webview to draw the map');
			}
			await webview(page).locator('button', { hasText: `Export ${format.toUpperCase()}` }).first().click();
			await fileDialog(page, out);
			await until(() => fs.existsSync(out) && fs.statSync(out).size > 1000 || `${out} not written`, 20_000, `the ${format} export`);
			if (format === 'svg') {
				const svg = fs.readFileSync(out, 'utf8');
				const w = Number(/<svg[^>]*\swidth="([\d.]+)/.exec(svg)?.[1] ?? 0);
				const h = Number(/<svg[^>]*\sheight="([\d.]+)/.exec(svg)?.[1] ?? 0);
				if (w < 400 || h < 300) { throw new Error(`the SVG is ${w}×${h}, too small for the whole map`); }
				for (const label of ['<title>rank 0</title>', '<title>rank 3</title>', 'GB/s']) { if (!svg.includes(label)) { throw new Error(`the SVG has no ${label}`); } }
				// The picture of the exported file itself, as any viewer shows it.
				const view = await page.context().newPage();
				try {
					await view.setViewportSize({ width: Math.ceil(w), height: Math.ceil(h) });
					await view.goto(`file://${out}`);
					await view.screenshot({ path: path.join(shotDir, 'transport-map-export.png') });
				} finally { await view.close(); }
			} else {
				const b = fs.readFileSync(out);
				if (b.subarray(1, 4).toString() !== 'PNG') { throw new Error('the PNG export is not a PNG'); }
				const w = b.readUInt32BE(16); const h = b.readUInt32BE(20);
				if (w < 800 || h < 600) { throw new Error(`the PNG is ${w}×${h}`); }
			}
		});
	}
	await check('a 2 048-rank map (256 nodes, Open a saved map): outliers first, the node matrix, a finding drills down to its node', async () => {
		const file = path.join(debugDir, 'map-2048.json');
		fs.writeFileSync(file, JSON.stringify(generateScaleMap(256)));
		const slow = plantedFaults(256).expected.outliers.find((o) => o.level === 'node').subject;
		await palette(page, 'GPU-MPI: Show Transport Map');
		const open = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Open a saved map JSON' }).first();
		await open.waitFor({ state: 'visible', timeout: 10_000 });
		await open.click();
		await fileDialog(page, file);
		const f = () => webview(page);
		await until(async () => ((await f().locator('canvas.nodes').isVisible()) && /its pairs failed/.test(await f().locator('.headline').first().textContent() ?? '')) || 'no node matrix and headline yet', 60_000, 'the outliers and the node matrix');
		await page.mouse.move(0, 0);
		await page.waitForTimeout(500);
		await page.screenshot({ path: path.join(shotDir, 'transport-map-2048-vscode.png') });
		await f().locator('.outliers .finding', { hasText: `node ${slow}:` }).first().click();
		await f().getByRole('button', { name: `Show ${slow} in the matrix` }).click();
		await until(async () => (await f().locator('.drill h2').first().textContent() ?? '').startsWith(slow) || 'no drill-down yet', 30_000, `the drill-down of ${slow}`);
		await page.mouse.move(0, 0);
		await page.waitForTimeout(500);
		await page.screenshot({ path: path.join(shotDir, 'transport-map-2048-vscode-drill.png') });
	});

	await check('the panel\'s "Save…" writes the inspection through the save dialog (JSON that reads back)', async () => {
		const out = path.join(debugDir, 'inspection-saved.json');
		fs.rmSync(out, { force: true });
		await palette(page, 'GPU-MPI: Show Panel');
		await webview(page).locator('button#save').click({ timeout: 15_000 });
		await fileDialog(page, out);
		await until(() => fs.existsSync(out) && fs.statSync(out).size > 1000 || `${out} not written`, 20_000, 'the saved inspection');
		const doc = JSON.parse(fs.readFileSync(out, 'utf8'));
		if (doc.schema !== 'gpumpi-doctor.report/1' || !Array.isArray(doc.findings)) { throw new Error(`saved ${doc.schema}`); }
	});

	await check('a second inspection: the Hosts row has a History; "Compare…" shows the two side by side in the diff editor', async () => {
		await palette(page, 'GPU-MPI: Inspect Host');
		await page.waitForTimeout(500);
		const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'GPU-MPI Hosts' }) });
		await runPaletteCommandQuietly(page, 'View: Open View', 'GPU-MPI Hosts');
		const hostRow = pane.locator('.monaco-list-row', { hasText: 'This machine' }).first();
		await hostRow.waitFor({ state: 'visible', timeout: 20_000 });
		if ((await hostRow.getAttribute('aria-expanded')) === 'false') { await hostRow.locator('.monaco-tl-twistie').click(); }
		// The pane is short: move to its last row (the History) so the list renders it. The History row is added when
		// the second inspection ends (about 1.2 s in, with fi_info installed), which can be after the first End press:
		// the list then grows below the view and does not scroll to it. So press End again until it is there (30 s).
		const history = pane.locator('.monaco-list-row', { hasText: /History \(\d+\)/ }).first();
		const t0 = Date.now();
		let presses = 0;
		await until(async () => {
			await pane.locator('.monaco-list-row', { hasText: 'MPI' }).first().click();
			await page.keyboard.press('End');
			presses++;
			return await history.isVisible() || 'no "History (n)" row in the Hosts view';
		}, 30_000, 'the History row after the second inspection').catch(async (e) => {
			await page.screenshot({ path: path.join(debugDir, 'history-failure.png') }).catch(() => {});
			throw e;
		});
		console.log(`    (History row in view after ${presses} End press(es), ${Date.now() - t0} ms)`);
		await webview(page).locator('button#compare').click({ timeout: 15_000 });
		// The pick lists the kept inspections (the shown one left out): take the first one.
		const row = page.locator('.quick-input-list .monaco-list-row', { hasText: /errors?, \d+ warnings?/ }).first();
		await row.waitFor({ state: 'visible', timeout: 10_000 });
		await row.click();
		const diff = page.locator('.monaco-diff-editor').first();
		await diff.waitFor({ state: 'visible', timeout: 15_000 });
		const tab = ((await page.locator('.tab.active').first().textContent()) ?? '').replace(/\s+/g, ' ');
		if (!tab.includes('↔')) { throw new Error(`the active tab is "${tab}", not the comparison`); }
		await palette(page, 'Notifications: Clear All Notifications').catch(() => {});
		await page.mouse.move(0, 0);
		await page.waitForTimeout(600);
		await page.screenshot({ path: path.join(shotDir, 'compare-inspections.png') });
		await palette(page, 'View: Close Editor').catch(() => {});
	});

	await check('"Compare Reproducer Results…" (palette, two file dialogs): two real H200 runs side by side in the diff editor', async () => {
		const dir = path.join(ROOT, 'test-fixtures', 'repro', 'h200-testbed');
		await palette(page, 'GPU-MPI: Compare Reproducer Results');
		// With results in the reproducer panel the first step asks which: take a saved file.
		const fileRow = page.locator('.quick-input-list .monaco-list-row', { hasText: 'A saved result file' }).first();
		if (await fileRow.waitFor({ state: 'visible', timeout: 3000 }).then(() => true, () => false)) { await fileRow.click(); }
		await fileDialog(page, path.join(dir, 'repro-2026-12-02.json'));
		await fileDialog(page, path.join(dir, 'repro-2026-12-02-run2.json'));
		const diff = page.locator('.monaco-diff-editor').first();
		await diff.waitFor({ state: 'visible', timeout: 15_000 });
		const tab = ((await page.locator('.tab.active').first().textContent()) ?? '').replace(/\s+/g, ' ');
		if (!tab.includes('↔') || !tab.includes('run2')) { throw new Error(`the active tab is "${tab}", not the comparison`); }
		await palette(page, 'Notifications: Clear All Notifications').catch(() => {});
		await page.mouse.move(0, 0);
		await page.waitForTimeout(600);
		await page.screenshot({ path: path.join(shotDir, 'compare-repro.png') });
		await palette(page, 'View: Close Editor').catch(() => {});
	});

	// The diagnostics panel in front again for what runs after (runVsix.mjs reads its raw outputs).
	await palette(page, 'GPU-MPI: Show Panel').catch(() => {});
	await page.waitForTimeout(500);
}
