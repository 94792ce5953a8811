#!/usr/bin/env node
// The .vsix as a user installs it: `code-server --install-extension out/gpumpi-doctor-linux-x64-<v>.vsix` into a FRESH
// code-server (new --user-data-dir and --extensions-dir, no extensionDevelopmentPath: nothing of the repo is loaded),
// then a window on test-fixtures/workspace where the UI checks (uiChecks.mjs) press F1, run "GPU-MPI: Inspect Host"
// and check the panel shows this host's report; one more check: the engine the report ran is the installed copy's.
// Builds the .vsix first (scripts/package.mjs --vsix-only) unless --vsix FILE is given. Every check is one counted test.
// Usage: node test/vscode/runVsix.mjs [--vsix FILE] [--result out.json]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, WORK, startCodeServer } from '../../scripts/codeServer.mjs';
import { launchBrowser } from './runCodeServer.mjs';
import { runUiChecks } from './uiChecks.mjs';

const FIXTURE = path.join(ROOT, 'test-fixtures', 'workspace');
const PKG = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const EXTENSION_ID = `${PKG.publisher}.${PKG.name}`;

function fail(title, e) {
	return { passes: 0, failures: 1, pending: 0, tests: [{ suite: 'vsix', title, ok: false, error: e instanceof Error ? e.message : String(e) }], metrics: {} };
}

/** Build (or take) the .vsix, install it into a fresh code-server, run the UI checks against it. */
export async function runVsixSuite({ vsix = null } = {}) {
	let file = vsix;
	if (!file) {
		const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'package.mjs'), '--vsix-only'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 15 * 60_000 });
		file = r.stdout?.trim().split('\n').find((l) => l.endsWith('.vsix')) ?? null;
		if (r.status !== 0 || !file) { return fail('npm run package builds the .vsix', `scripts/package.mjs exited ${r.status}`); }
	}
	console.log(`  vsix: ${path.relative(ROOT, file)} (${(fs.statSync(file).size / 2 ** 20).toFixed(2)} MiB)`);
	let server;
	try {
		server = await startCodeServer({ name: 'vsix', vsix: file });
	} catch (e) {
		return fail('code-server --install-extension installs the .vsix into a fresh code-server', e);
	}
	const tests = [];
	let context = null;
	const profile = path.join(WORK, 'chromium-profile', `vsix-${process.pid}`);
	try {
		const installed = fs.readdirSync(server.extensionsDir).filter((d) => d.toLowerCase().startsWith(`${EXTENSION_ID}-${PKG.version}`.toLowerCase()));
		const dir = installed[0] ? path.join(server.extensionsDir, installed[0]) : '';
		const okInstall = installed.length === 1 && fs.existsSync(path.join(dir, 'dist', 'extension.js')) && fs.existsSync(path.join(dir, 'native', 'build', 'engine', 'gpumpi'));
		tests.push({ suite: 'vsix', title: `--install-extension put ${EXTENSION_ID} ${PKG.version} into the fresh extensions dir`, ok: okInstall,
			...(okInstall ? {} : { error: `extensions dir holds ${JSON.stringify(fs.readdirSync(server.extensionsDir))}` }) });
		if (!okInstall) { return { passes: 0, failures: 1, pending: 0, tests, metrics: {} }; }
		context = await launchBrowser(profile);
		const page = await context.newPage();
		await page.goto(`${server.url}/?folder=${encodeURIComponent(FIXTURE)}`);
		const ui = await runUiChecks(page, { screenshot: path.join(WORK, 'results', 'vsix-inspect-panel.png'), debugDir: path.join(WORK, 'results', 'vsix') });
		for (const t of ui.tests) { tests.push({ ...t, suite: 'vsix', title: `installed .vsix: ${t.title}` }); }
		const title = 'the report\'s engine run is the installed copy\'s (not the repository\'s)';
		try {
			// The diagnostics panel's webview among the open ones (the UI checks also open the reproducer and map panels).
			// The panel was just brought to the front again (uiPanels.mjs ends with "Show Panel"): a webview shown again
			// reloads (retainContextWhenHidden is off), so look for its #raw for up to 30 s, not once.
			const frames = page.locator('iframe.webview.ready');
			let raw = '';
			for (const t0 = Date.now(); !raw && Date.now() - t0 < 30_000; await page.waitForTimeout(raw ? 0 : 500)) {
				for (let i = 0; i < await frames.count() && !raw; i++) {
					const inner = frames.nth(i).contentFrame().locator('#active-frame').contentFrame().locator('#raw');
					if (await inner.count().catch(() => 0) > 0) { raw = await inner.textContent({ timeout: 10_000 }).catch(() => '') ?? ''; }
				}
			}
			if (!raw) { throw new Error('no open webview has the report\'s raw outputs (#raw)'); }
			const engineDir = fs.realpathSync(path.join(dir, 'native', 'build'));
			if (!raw.includes(engineDir) && !raw.includes(path.join(dir, 'native', 'build'))) { throw new Error(`#raw does not name ${engineDir}: ${raw.replace(/\s+/g, ' ').slice(0, 300)}`); }
			if (raw.includes(path.join(ROOT, 'native', 'build'))) { throw new Error(`#raw names the repository's engine ${path.join(ROOT, 'native', 'build')}`); }
			tests.push({ suite: 'vsix', title, ok: true });
			console.log(`  ✔ [vsix] ${title}`);
		} catch (e) {
			tests.push({ suite: 'vsix', title, ok: false, error: e instanceof Error ? e.message : String(e) });
			console.log(`  ✘ [vsix] ${title}`);
		}
		await page.close().catch(() => {});
	} catch (e) {
		tests.push({ suite: 'vsix', title: 'run the UI checks against the installed .vsix', ok: false, error: e instanceof Error ? e.stack ?? e.message : String(e) });
	} finally {
		await context?.close().catch(() => {});
		fs.rmSync(profile, { recursive: true, force: true });
		await server.stop();
	}
	const failures = tests.filter((t) => !t.ok).length;
	return { passes: tests.length - failures, failures, pending: 0, tests, metrics: {} };
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
	const args = process.argv.slice(2);
	const value = (flag) => { const i = args.indexOf(flag); return i >= 0 ? path.resolve(args[i + 1] ?? '') : null; };
	const total = await runVsixSuite({ vsix: value('--vsix') });
	for (const t of total.tests.filter((x) => !x.ok)) { console.log(`  FAIL [${t.suite}] ${t.title}\n    ${String(t.error).split('\n').slice(0, 12).join('\n    ')}`); }
	const result = value('--result');
	if (result) { fs.mkdirSync(path.dirname(result), { recursive: true }); fs.writeFileSync(result, JSON.stringify(total, null, 2)); }
	console.log(`vsix: ${total.passes} passed, ${total.failures} failed`);
	process.exit(total.failures > 0 ? 1 : 0);
}
