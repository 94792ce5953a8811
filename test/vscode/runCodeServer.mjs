#!/usr/bin/env node
// Runs the VS Code suite in REAL VS Code (code-server 4.100.3) driven by Debian's Chromium through playwright-core,
// fully offline. Two phases in one code-server:
//  1. in-host: a window opened with payload extensionDevelopmentPath + extensionTestsPath runs the mocha suite
//     (test/vscode/suite/index.ts, bundled to dist/test/vscode/suite/index.js) inside the real extension host;
//     VS Code reports its exit code through window.codeAutomationExit and the counts through a JSON file.
//  2. ui: a fresh window with only extensionDevelopmentPath; this script presses F1, types "GPU-MPI: Inspect Host",
//     presses Enter and checks the webview (iframe.webview → #active-frame) shows this host's real findings,
//     then saves a screenshot. Every check is one counted test.
//  3. reload: a fresh window starts a real 4-rank Open MPI run from the extension, then reloads the window and
//     hard-kills its extension host; the process table must show the run ended (reloadChecks.mjs).
// Usage: node test/vscode/runCodeServer.mjs [--result out.json] [--screenshot file.png] [--no-ui] [--no-in-host] [--no-reload]
//        env TEST_FILTER (mocha grep, in-host), GPUMPI_KEEP_SESSION=1 keeps .test-work/sessions/* for debugging,
//        GPUMPI_IN_HOST_TIMEOUT_S (default 360) the in-host phase's limit.
// Screenshots go to .test-work/screenshots/ (never the tracked docs/screenshots/; to refresh those:
// --screenshot docs/screenshots/inspect-panel.png, the other pictures land beside it).
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { format } from 'node:util';
import { chromium } from 'playwright-core';
import { ROOT, WORK, CODE_SERVER_VERSION, ensureCodeServer, startCodeServer, which } from '../../scripts/codeServer.mjs';
import { runUiChecks } from './uiChecks.mjs';
import { runReloadChecks, writeReloadKeybinding } from './reloadChecks.mjs';

const FIXTURE = path.join(ROOT, 'test-fixtures', 'workspace');
const DEFAULT_TESTS = path.join(ROOT, 'dist', 'test', 'vscode', 'suite', 'index.js');
// GPUMPI_IN_HOST_TIMEOUT_S: a shorter limit, to check what a cut-short in-host run reports (test/vscode/README.md).
const IN_HOST_TIMEOUT_MS = (Number(process.env.GPUMPI_IN_HOST_TIMEOUT_S) > 0 ? Number(process.env.GPUMPI_IN_HOST_TIMEOUT_S) : 6 * 60) * 1000;
const WHOLE_RUN_TIMEOUT_MS = 12 * 60_000 + Math.max(1, Number(process.env.GPUMPI_RELOAD_TRIALS ?? 1) || 1) * 3 * 60_000;

// Workbench chatter that says nothing about our tests (set GPUMPI_VERBOSE=1 to see everything).
const NOISE = process.env.GPUMPI_VERBOSE === '1' ? [] : [
	/^(Resolving|Resolved) connection token/, /^Creating a socket/, /^Updating additional builtin extensions cache/,
	/^\[Service Worker\]/, /^ChatSessionStore:/, /ENOTFOUND open-vsx\.org/, /open-vsx\.org/,
];

function parseArgs(argv) {
	const o = { result: null, screenshot: path.join(WORK, 'screenshots', 'inspect-panel.png'), ui: true, inHost: true, reload: true, tests: DEFAULT_TESTS, extension: ROOT };
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		const next = () => { const v = argv[++i]; if (v === undefined) { throw new Error(`${a} needs a value`); } return v; };
		if (a === '--result') { o.result = path.resolve(next()); }
		else if (a === '--screenshot') { o.screenshot = path.resolve(next()); }
		else if (a === '--tests') { o.tests = path.resolve(next()); }
		else if (a === '--extension') { o.extension = path.resolve(next()); }
		else if (a === '--no-ui') { o.ui = false; }
		else if (a === '--no-in-host') { o.inHost = false; }
		else if (a === '--no-reload') { o.reload = false; }
		else { throw new Error(`unknown argument ${a}`); }
	}
	return o;
}

function chromiumPath() {
	const p = process.env.CHROMIUM_PATH || which('chromium') || which('chromium-browser') || which('google-chrome');
	if (!p) { throw new Error('Chromium not found: apt-get install -y chromium (or set CHROMIUM_PATH)'); }
	return p;
}

export async function launchBrowser(profileDir) {
	fs.rmSync(profileDir, { recursive: true, force: true });
	return chromium.launchPersistentContext(profileDir, {
		executablePath: chromiumPath(),
		headless: true,
		viewport: { width: 1440, height: 900 },
		args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
			'--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
	});
}

/** URL of a code-server window on the fixture folder with our extension under development (and optionally tests). */
export function windowUrl(server, { extension, tests }) {
	const remote = (p) => `vscode-remote://${server.authority}${p}`;
	const payload = [['extensionDevelopmentPath', remote(extension)]];
	if (tests) { payload.push(['extensionTestsPath', remote(tests)]); }
	return `${server.url}/?folder=${encodeURIComponent(FIXTURE)}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
}

/** Print what the workbench forwards through codeAutomationLog (the extension host's console included). */
async function exposeAutomation(page, tag, onExit) {
	await page.exposeFunction('codeAutomationLog', (type, args) => {
		const text = Array.isArray(args) ? format(...args) : String(args);
		if (NOISE.some((re) => re.test(text))) { return; }
		for (const line of text.split('\n')) { if (line.trim()) { console.log(`  [${tag}${type === 'error' ? ' error' : ''}] ${line}`); } }
	});
	await page.exposeFunction('codeAutomationExit', (code) => { onExit(Number(code)); });
}

export async function runInHost(context, server, opts) {
	const resultFile = path.join(WORK, 'results', `in-host-${process.pid}.json`);
	fs.mkdirSync(path.dirname(resultFile), { recursive: true });
	fs.rmSync(resultFile, { force: true });
	if (!fs.existsSync(opts.tests)) {
		return { passes: 0, failures: 1, pending: 0, tests: [{ suite: 'in-host', title: 'load suite', ok: false, error: `not built: ${opts.tests} (run node scripts/build.mjs)` }], metrics: {} };
	}
	const page = await context.newPage();
	let onExit;
	const exited = new Promise((resolve) => { onExit = resolve; });
	await exposeAutomation(page, 'host', (code) => onExit(code));
	page.on('crash', () => onExit(-2));
	const t0 = performance.now();
	await page.goto(windowUrl(server, { extension: opts.extension, tests: opts.tests }));
	const timeout = new Promise((resolve) => setTimeout(() => resolve(-1), IN_HOST_TIMEOUT_MS).unref());
	const code = await Promise.race([exited, timeout]);
	const wallMs = performance.now() - t0;
	// Read before closing the window: a run cut short goes on until then, and its tests fail as the window goes.
	let r = null;
	let unread = 'no result file';
	try { r = JSON.parse(fs.readFileSync(resultFile, 'utf8')); } catch (e) { if (e.code !== 'ENOENT') { unread = `its result file ${resultFile} unreadable: ${e.message}`; } }
	await page.close().catch(() => {});
	const why = code === -1 ? `timed out after ${IN_HOST_TIMEOUT_MS / 1000} s` : code === -2 ? 'the page crashed' : `exit code ${code}`;
	if (!r) {
		return { passes: 0, failures: 1, pending: 0, tests: [{ suite: 'in-host', title: 'in-host mocha run', ok: false, error: `${why} and ${unread}` }], metrics: {} };
	}
	const tests = [
		...r.passed.map((title) => ({ suite: 'in-host', title, ok: true })),
		...r.failed.map((f) => ({ suite: 'in-host', title: f.title, ok: false, error: f.error })),
	];
	let failures = r.failed.length;
	if (r.complete === false) {
		// The run did not end (the limit above, a crashed page): the tests that ended count, the one it was in fails.
		failures += 1;
		const inTest = r.running ? `while running "${r.running}"` : 'between tests';
		tests.push({ suite: 'in-host', title: r.running ?? 'in-host mocha run', ok: false, error: `in-host mocha run did not end: ${why}, ${inTest}; ${r.passed.length} test(s) passed and ${r.failed.length} failed before it` });
		console.log(`  in-host: cut short (${why}) ${inTest}: ${r.passed.length} passed, ${r.failed.length} failed before it`);
		return { passes: r.passed.length, failures, pending: r.pending, tests, metrics: { inHostWallMs: wallMs }, vscodeVersion: r.vscodeVersion };
	}
	failures = r.failures;
	if (code !== 0 && failures === 0) {
		failures = 1;
		tests.push({ suite: 'in-host', title: 'extension test runner exit code', ok: false, error: `exit code ${code} although no test failed` });
	}
	console.log(`  in-host: ${r.passes} passed, ${failures} failed, ${r.pending} pending (VS Code ${r.vscodeVersion}, ${(wallMs / 1000).toFixed(1)} s)`);
	return { passes: r.passes, failures, pending: r.pending, tests, metrics: { ...r.metrics, inHostWallMs: wallMs }, vscodeVersion: r.vscodeVersion };
}

const RELOAD_ENGINE = path.join(ROOT, 'native', 'build', 'engine-openmpi', 'gpumpi');

async function runReload(context, server, opts) {
	const page = await context.newPage();
	await exposeAutomation(page, 'reload', () => {});
	await page.goto(windowUrl(server, { extension: opts.extension }));
	try {
		const trials = Math.max(1, Number(process.env.GPUMPI_RELOAD_TRIALS ?? 1) || 1);
		return await runReloadChecks(page, { server, userDataDir: server.userDataDir, engine: RELOAD_ENGINE, trials, resultFile: path.join(WORK, 'results', 'reload-trials.json') });
	} finally {
		await page.close().catch(() => {});
	}
}

async function runUi(context, server, opts) {
	fs.mkdirSync(path.dirname(opts.screenshot), { recursive: true });
	const page = await context.newPage();
	await exposeAutomation(page, 'ui', () => {});
	await page.goto(windowUrl(server, { extension: opts.extension }));
	try {
		return await runUiChecks(page, { screenshot: opts.screenshot, debugDir: path.join(WORK, 'results') });
	} finally {
		await page.close().catch(() => {});
	}
}

/** What has ended so far, for the whole-run guard in main(): the phases done and the one running. */
const progress = { total: null, phase: 'starting code-server' };

export async function runVsCodeSuite(opts) {
	const total = { passes: 0, failures: 0, pending: 0, tests: [], metrics: {}, codeServerVersion: CODE_SERVER_VERSION, vscodeVersion: null };
	progress.total = total;
	const add = (r) => {
		total.passes += r.passes; total.failures += r.failures; total.pending += r.pending ?? 0;
		total.tests.push(...r.tests); Object.assign(total.metrics, r.metrics);
		total.vscodeVersion ??= r.vscodeVersion ?? null;
	};
	const resultDir = path.join(WORK, 'results');
	const server = await startCodeServer({ name: 'vscode-suite', env: {
		GPUMPI_VSCODE_RESULT: path.join(resultDir, `in-host-${process.pid}.json`),
		...(process.env.TEST_FILTER ? { TEST_FILTER: process.env.TEST_FILTER } : {}),
	} });
	// The reload phase starts its run with a user keybinding (an options object for the guard command).
	writeReloadKeybinding(server.userDataDir, RELOAD_ENGINE);
	let context = null;
	try {
		const profile = path.join(WORK, 'chromium-profile', String(process.pid));
		context = await launchBrowser(profile);
		if (opts.inHost) { progress.phase = 'in-host'; add(await runInHost(context, server, opts)); }
		if (opts.ui) { progress.phase = 'ui'; add(await runUi(context, server, opts)); }
		if (opts.reload) { progress.phase = 'reload'; add(await runReload(context, server, opts)); }
		progress.phase = 'stopping code-server';
	} finally {
		await context?.close().catch(() => {});
		fs.rmSync(path.join(WORK, 'chromium-profile', String(process.pid)), { recursive: true, force: true });
		await server.stop();
	}
	return total;
}

async function main() {
	const opts = parseArgs(process.argv.slice(2));
	let total;
	try {
		await ensureCodeServer(); // one-time install, outside the time limit below
	} catch (e) {
		total = { passes: 0, failures: 1, pending: 0, tests: [{ suite: 'harness', title: 'install code-server', ok: false, error: e instanceof Error ? e.message : String(e) }], metrics: {} };
	}
	const guard = setTimeout(() => {
		// The phases that ended keep their results; the one running counts as one failure named by its phase.
		const why = `gave up after ${WHOLE_RUN_TIMEOUT_MS / 60000} min in the ${progress.phase} phase`;
		console.error(`vscode suite: ${why}`);
		const t = progress.total ?? { passes: 0, failures: 0, pending: 0, tests: [], metrics: {} };
		const cut = { ...t, failures: t.failures + 1, tests: [...t.tests, { suite: 'harness', title: `${progress.phase} phase`, ok: false, error: why }], complete: false };
		if (opts.result) {
			try { fs.mkdirSync(path.dirname(opts.result), { recursive: true }); fs.writeFileSync(opts.result, JSON.stringify(cut, null, 2)); } catch { /* exit anyway */ }
		}
		process.exit(3);
	}, WHOLE_RUN_TIMEOUT_MS);
	guard.unref();
	try {
		total ??= await runVsCodeSuite(opts);
	} catch (e) {
		total = { passes: 0, failures: 1, pending: 0, tests: [{ suite: 'harness', title: 'start code-server / Chromium', ok: false, error: e instanceof Error ? e.stack ?? e.message : String(e) }], metrics: {} };
	}
	for (const t of total.tests.filter((x) => !x.ok)) { console.log(`  FAIL [${t.suite}] ${t.title}\n    ${String(t.error).split('\n').slice(0, 12).join('\n    ')}`); }
	if (opts.result) {
		fs.mkdirSync(path.dirname(opts.result), { recursive: true });
		fs.writeFileSync(opts.result, JSON.stringify(total, null, 2));
	}
	console.log(`vscode: ${total.passes} passed, ${total.failures} failed`);
	process.exit(total.failures > 0 ? 1 : 0);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
	main();
}
