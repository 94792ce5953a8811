// The UI test, driven from outside like a user: command palette → "GPU-MPI: Inspect Host" → the report webview
// (iframe.webview → inner #active-frame) must show THIS host's real findings. What to expect is read from the
// system independently of the product (ompi_info, /etc/openmpi/openmpi-mca-params.conf), so the test fails when
// the panel shows something else. Each step is one counted test; when a step fails, later steps that need it
// are counted as failed ("not reached"), never skipped silently.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { runPanelChecks } from './uiPanels.mjs';

const COMMAND_LABEL = 'GPU-MPI: Inspect Host';
const MCA_PARAMS = '/etc/openmpi/openmpi-mca-params.conf';
/** Rule ids (extension/core/rules) whose findings this host must show. */
const RULE_NOT_CUDA_AWARE = 'mpi-not-cuda-aware';
const RULE_PML_UCX_DISABLED = 'ompi-pml-ucx-disabled-by-param-file';

/** What this host really has, read without the product's code. */
export function systemFacts() {
	const facts = { openMpiVersion: null, cudaSupport: null, pmlLine: null, gpuVisible: false };
	try {
		const out = execFileSync('ompi_info', ['--parsable', '--all'], { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 << 20 });
		facts.openMpiVersion = /^ompi:version:full:(\S+)/m.exec(out)?.[1] ?? null;
		facts.cudaSupport = /_built_with_cuda_support:value:(\w+)/.exec(out)?.[1] ?? null;
	} catch { /* no Open MPI: the checks that need it fail with a clear message */ }
	try {
		facts.gpuVisible = /^GPU \d+:/m.test(execFileSync('nvidia-smi', ['-L'], { encoding: 'utf8', timeout: 30_000 }));
	} catch { /* no driver, no GPU */ }
	try {
		const lines = fs.readFileSync(MCA_PARAMS, 'utf8').split('\n').map((l) => l.trim()).filter((l) => /^pml\s*=/.test(l));
		facts.pmlLine = lines.at(-1) ?? null;
	} catch { /* no file */ }
	return facts;
}

function reportFrame(page) {
	// VS Code webviews: an outer iframe.webview (the host shim) whose #active-frame holds our HTML.
	return page.locator('iframe.webview.ready').last().contentFrame().locator('#active-frame').contentFrame();
}

async function waitFor(fn, { timeoutMs, what, intervalMs = 250 }) {
	const t0 = Date.now();
	let last = '';
	for (;;) {
		try {
			const r = await fn();
			if (r === true) { return; }
			last = typeof r === 'string' ? r : last;
		} catch (e) { last = e instanceof Error ? e.message.split('\n')[0] : String(e); }
		if (Date.now() - t0 > timeoutMs) { throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? ` (last seen: ${last.slice(0, 400)})` : ''}`); }
		await new Promise((r) => setTimeout(r, intervalMs));
	}
}

/** Run a command through the palette by its label (used for layout only, not asserted). */
async function runPaletteCommand(page, label) {
	const input = page.locator('.quick-input-widget input.input');
	if (await input.isVisible()) { await page.keyboard.press('Escape'); }
	await page.keyboard.press('F1');
	await input.waitFor({ state: 'visible', timeout: 5000 });
	await input.fill(`>${label}`);
	await page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first().waitFor({ state: 'visible', timeout: 5000 });
	await page.keyboard.press('Enter');
	await page.waitForTimeout(300);
}

/**
 * What the workbench is doing, as text, for a failed check's message (CI keeps no screenshots): the focused element,
 * the quick input (shown or not, its title, value and rows), notification toasts, the active editor tab and the
 * webview frames. A flaky UI step is a product bug until such a trace shows otherwise.
 */
export async function windowState(page) {
	try {
		return await page.evaluate(() => {
			const text = (el) => (el?.getAttribute?.('aria-label') || el?.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 120);
			const shown = (el) => !!el && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
			const a = document.activeElement;
			const qi = document.querySelector('.quick-input-widget');
			const rows = [...document.querySelectorAll('.quick-input-list .monaco-list-row')].map((r) => `${shown(r) ? '' : '(hidden) '}${text(r)}`);
			const toasts = [...document.querySelectorAll('.notification-toast')].filter(shown).map(text);
			const tab = document.querySelector('.tab.active');
			return JSON.stringify({
				focus: a ? `${a.tagName.toLowerCase()}${a.className ? `.${String(a.className).split(/\s+/).slice(0, 3).join('.')}` : ''} "${text(a)}"` : null,
				quickInput: qi ? { shown: shown(qi), display: getComputedStyle(qi).display, title: text(qi.querySelector('.quick-input-title')), value: qi.querySelector('input.input')?.value ?? null, rows } : null,
				toasts,
				activeTab: text(tab),
				webviews: [...document.querySelectorAll('iframe.webview')].map((f) => `${f.classList.contains('ready') ? 'ready' : 'loading'}${shown(f) ? '' : ' hidden'}`),
			});
		});
	} catch (e) { return `(no window state: ${e instanceof Error ? e.message.split('\n')[0] : String(e)})`; }
}

/** Run the UI checks on a page already navigated to a code-server window with the extension under development. */
export async function runUiChecks(page, { screenshot, debugDir }) {
	const facts = systemFacts();
	fs.rmSync(path.join(debugDir, 'ui-failure.png'), { force: true });
	const tests = [];
	const metrics = {};
	let broken = null;
	const check = async (title, fn) => {
		if (broken) { tests.push({ suite: 'ui', title, ok: false, error: `not reached: "${broken}" failed` }); return; }
		try {
			await fn();
			tests.push({ suite: 'ui', title, ok: true });
			console.log(`  ✔ [ui] ${title}`);
		} catch (e) {
			const state = await windowState(page);
			tests.push({ suite: 'ui', title, ok: false, error: `${e instanceof Error ? e.message : String(e)}\nwindow at failure: ${state}` });
			console.log(`  ✘ [ui] ${title}`);
			console.log(`    window at failure: ${state}`);
			return false;
		}
		return true;
	};
	const must = async (title, fn) => {
		const wasBroken = broken !== null;
		if ((await check(title, fn)) || wasBroken) { return; }
		broken = title;
		fs.mkdirSync(debugDir, { recursive: true });
		const shot = path.join(debugDir, 'ui-failure.png');
		await page.screenshot({ path: shot }).then(() => console.log(`  (window at failure: ${shot})`), () => {});
	};
	const frame = () => reportFrame(page);

	await must('workbench opens the fixture folder', async () => {
		await page.locator('.monaco-workbench .part.statusbar').waitFor({ state: 'visible', timeout: 90_000 });
		await page.locator('.explorer-folders-view, .monaco-workbench .part.sidebar').first().waitFor({ state: 'visible', timeout: 30_000 });
	});

	await check('the empty Hosts view offers "Inspect this machine" and "Add SSH host" (viewsWelcome)', async () => {
		// Nothing is configured or inspected in this fresh window, so the tree has no rows and VS Code shows the
		// view's welcome content; its command links are buttons.
		const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'GPU-MPI Hosts' }) });
		// In a fresh profile the view may start collapsed in the Explorer: a user clicks its header, so does this.
		// Its content comes once the extension host has started.
		await waitFor(async () => {
			if (await pane.locator('.welcome-view-content').isVisible()) { return true; }
			const header = page.locator('.pane-header', { hasText: 'GPU-MPI Hosts' }).first();
			if ((await header.getAttribute('aria-expanded', { timeout: 1000 })) === 'false') { await header.click(); }
			return 'welcome content not visible';
		}, { timeoutMs: 60_000, what: 'the GPU-MPI Hosts view with its welcome content', intervalMs: 500 });
		const buttons = (await pane.locator('.welcome-view-content .monaco-button').allTextContents()).map((t) => t.trim());
		for (const want of ['Inspect this machine', 'Add SSH host']) {
			if (!buttons.includes(want)) { throw new Error(`welcome buttons are ${JSON.stringify(buttons)}, no "${want}"`); }
		}
		// The picture: the folder section collapsed so the Hosts view has the height; the folder reopened after.
		const folders = page.locator('.pane-header', { hasText: 'Workspace' }).first();
		await folders.click();
		await page.mouse.move(0, 0);
		await page.waitForTimeout(300);
		await page.screenshot({ path: path.join(path.dirname(screenshot), 'hosts-welcome.png'), clip: { x: 0, y: 0, width: 360, height: 420 } });
		await folders.click();
	});

	await must(`command palette offers "${COMMAND_LABEL}"`, async () => {
		// The palette lists the commands known when it opens; the extension host may still be starting, so
		// reopen it until our contribution is there.
		const input = page.locator('.quick-input-widget input.input');
		const row = page.locator('.quick-input-list .monaco-list-row', { hasText: COMMAND_LABEL }).first();
		await waitFor(async () => {
			if (await input.isVisible()) { await page.keyboard.press('Escape'); }
			await page.keyboard.press('F1');
			await input.waitFor({ state: 'visible', timeout: 5000 });
			await input.fill(`>${COMMAND_LABEL}`);
			await row.waitFor({ state: 'visible', timeout: 3000 });
			return true;
		}, { timeoutMs: 90_000, what: `"${COMMAND_LABEL}" in the command palette` });
	});

	let t0 = 0;
	await must('Enter runs it and opens the report webview', async () => {
		const focused = (await page.locator('.quick-input-list .monaco-list-row.focused').first().textContent({ timeout: 5000 })) ?? '';
		if (!focused.includes(COMMAND_LABEL)) { throw new Error(`the highlighted palette entry is "${focused}", not "${COMMAND_LABEL}"`); }
		t0 = performance.now();
		await page.keyboard.press('Enter');
		await page.locator('iframe.webview.ready').last().waitFor({ state: 'attached', timeout: 60_000 });
		await frame().locator('body').waitFor({ state: 'attached', timeout: 60_000 });
	});

	await must(`summary names this host's Open MPI (${facts.openMpiVersion ?? 'ompi_info not found'})`, async () => {
		if (!facts.openMpiVersion) { throw new Error('ompi_info --parsable --all gave no ompi:version:full (is openmpi-bin installed?)'); }
		const want = `Open MPI ${facts.openMpiVersion}`;
		await waitFor(async () => {
			const text = (await frame().locator('#summary').textContent({ timeout: 1000 })) ?? '';
			return text.includes(want) ? true : text.replace(/\s+/g, ' ');
		}, { timeoutMs: 180_000, what: `#summary to contain "${want}"` });
		metrics.uiCommandToSummaryMs = performance.now() - t0;
	});

	await check('the headline verdict is shown first, above the summary, with the evidence it rests on', async () => {
		const first = await frame().locator('.report > *').first().getAttribute('id');
		if (first !== 'headline') { throw new Error(`the report's first element is #${first}, not #headline`); }
		const h = frame().locator('#headline');
		const [hb, sb] = [await h.boundingBox(), await frame().locator('#summary').boundingBox()];
		if (!hb || !sb || hb.y >= sb.y) { throw new Error(`#headline (y=${hb?.y}) is not above #summary (y=${sb?.y})`); }
		const verdict = (await h.getAttribute('data-verdict')) ?? '';
		const text = ((await h.locator('.headline-text').textContent()) ?? '').trim();
		// This host's own answer: no GPU (CI) → "No GPU here"; a GPU with this non-CUDA Open MPI → "will NOT work".
		const want = facts.gpuVisible ? { verdict: 'fails', start: 'GPU buffers will NOT work with this MPI' } : { verdict: 'not-checked', start: 'No GPU here: ' };
		if (verdict !== want.verdict || !text.startsWith(want.start)) { throw new Error(`headline is ${verdict}: "${text}", expected ${want.verdict}: "${want.start}…"`); }
		if (!facts.gpuVisible && !text.includes('built without CUDA support') && !text.includes('not CUDA-aware')) { throw new Error(`headline does not say what this MPI is: "${text}"`); }
		const refs = await h.locator('.headline-evidence').evaluateAll((els) => els.map((el) => el.getAttribute('data-ref')));
		if (refs.length === 0) { throw new Error('headline carries no evidence'); }
	});

	await check(`finding ${RULE_NOT_CUDA_AWARE} is shown as a problem (ompi_info: built_with_cuda_support=${facts.cudaSupport})`, async () => {
		if (facts.cudaSupport !== 'false') { throw new Error(`this check needs a non-CUDA Open MPI; ompi_info says ${facts.cudaSupport}`); }
		const f = frame().locator(`.finding[data-rule-id="${RULE_NOT_CUDA_AWARE}"]`).first();
		await f.waitFor({ state: 'visible', timeout: 10_000 });
		// An error when a GPU is visible (device pointers would crash), a warning on a host without one (CI).
		const sev = (await f.getAttribute('data-severity')) ?? '';
		const want = facts.gpuVisible ? ['error'] : ['warning', 'error'];
		if (!want.includes(sev)) { throw new Error(`severity is "${sev}", expected ${want.join(' or ')} (GPU visible: ${facts.gpuVisible})`); }
		const cls = (await f.getAttribute('class')) ?? '';
		if (!cls.split(/\s+/).includes(`severity-${sev}`)) { throw new Error(`class "${cls}" lacks severity-${sev}`); }
		const text = (await f.textContent()) ?? '';
		if (!text.includes('built_with_cuda_support:value:false')) { throw new Error(`finding does not quote ompi_info's built_with_cuda_support: ${text.replace(/\s+/g, ' ').slice(0, 300)}`); }
	});

	await check(`finding ${RULE_PML_UCX_DISABLED} quotes "${facts.pmlLine}" from ${MCA_PARAMS}`, async () => {
		if (!facts.pmlLine) { throw new Error(`${MCA_PARAMS} has no pml line on this host`); }
		const f = frame().locator(`.finding[data-rule-id="${RULE_PML_UCX_DISABLED}"]`);
		await f.first().waitFor({ state: 'visible', timeout: 10_000 });
		const text = (await f.first().textContent()) ?? '';
		if (!text.includes(facts.pmlLine)) { throw new Error(`finding does not quote "${facts.pmlLine}": ${text.replace(/\s+/g, ' ').slice(0, 400)}`); }
		if (!text.includes(MCA_PARAMS)) { throw new Error(`finding does not name ${MCA_PARAMS}`); }
	});

	await check('raw outputs section holds the real ompi_info output', async () => {
		const raw = frame().locator('#raw');
		await raw.waitFor({ state: 'attached', timeout: 10_000 });
		const text = (await raw.textContent()) ?? '';
		if (!text.includes('ompi_info')) { throw new Error('#raw does not mention ompi_info'); }
		if (facts.openMpiVersion && !text.includes(facts.openMpiVersion)) { throw new Error(`#raw does not contain ${facts.openMpiVersion}`); }
	});

	await check('an evidence link to a raw output scrolls the panel to that line, highlighted and in view', async () => {
		// ompi_info is tool output (no file): its evidence links open the raw block and scroll to the quoted line.
		const link = frame().locator('.evidence-link', { hasText: /^ompi_info:\d+/ }).first();
		await link.waitFor({ state: 'visible', timeout: 10_000 });
		const want = Number(/^ompi_info:(\d+)/.exec((await link.textContent()) ?? '')?.[1]);
		await link.scrollIntoViewIfNeeded();
		await link.click();
		const target = frame().locator('details.raw-output[data-raw-id="ompi_info"] .raw-line-target');
		await target.waitFor({ state: 'attached', timeout: 5000 });
		await page.waitForTimeout(400);
		const got = await target.evaluate((el) => {
			const r = el.getBoundingClientRect();
			const pre = el.closest('pre');
			return { line: Number(el.dataset.line), top: r.top, bottom: r.bottom, height: window.innerHeight, open: el.closest('details')?.open ?? false,
				scrollY: window.scrollY, text: el.textContent, preTop: pre?.getBoundingClientRect().top ?? null };
		});
		if (got.line !== want) { throw new Error(`highlighted line ${got.line}, the link says ${want}`); }
		if (!got.open || got.top < 0 || got.bottom > got.height) { throw new Error(`the line is not in view: ${JSON.stringify(got)}`); }
		if (got.scrollY <= 0) { throw new Error(`the panel is at the top: ${JSON.stringify(got)}`); }
		await frame().locator('body').evaluate(() => window.scrollTo(0, 0));
	});

	await check('garbage messages from the webview are ignored, and the host still answers a valid request', async () => {
		// Posted through the function acquireVsCodeApi().postMessage calls (__vscode_post_message__ on the webview's
		// host frame; VS Code deletes window.parent inside the content frame), so they reach the extension's
		// onDidReceiveMessage exactly as a compromised webview's messages would. Replies are collected in the content frame.
		const body = frame().locator('body');
		await body.evaluate(() => {
			window.__gpumpiReplies = [];
			window.addEventListener('message', (e) => { if (e.data && e.data.kind === 'reply') { window.__gpumpiReplies.push(e.data); } });
		});
		await page.locator('iframe.webview.ready').last().contentFrame().locator('body').evaluate(() => {
			const post = (m) => window.__vscode_post_message__('onmessage', { message: m });
			const deep = {}; let cur = deep; for (let i = 0; i < 500; i++) { cur.next = {}; cur = cur.next; }
			const garbage = [null, 42, 'ready', [], { kind: 'request' }, { kind: 'request', id: 'x', body: { type: 'ready' } },
				{ kind: 'event', body: { type: 'rm -rf /' } }, { kind: 'request', id: 9001, body: { type: 'copy', text: 12 } },
				{ kind: 'request', id: 9002, body: { type: 'copy', text: 'x'.repeat(2_000_000) } }, { kind: 'reply', inReplyTo: 'nope' },
				{ kind: 'request', id: 9003, body: { type: '__proto__' } }, { kind: 'request', id: 9004, body: deep }];
			for (const g of garbage) { post(g); }
			post({ kind: 'request', id: 4242, body: { type: 'ready' } });
		});
		const result = await body.evaluate(async () => {
			const t0 = Date.now();
			while (!window.__gpumpiReplies.some((r) => r.inReplyTo === 4242) && Date.now() - t0 < 15_000) { await new Promise((r) => setTimeout(r, 100)); }
			await new Promise((r) => setTimeout(r, 500)); // let any (wrong) replies to the garbage arrive too
			return window.__gpumpiReplies.map((r) => ({ inReplyTo: r.inReplyTo, error: r.error ?? null, type: r.body && r.body.type, hasReport: !!(r.body && r.body.report) }));
		});
		const answer = result.find((r) => r.inReplyTo === 4242);
		if (!answer) { throw new Error(`no reply to the valid ready request after the garbage (replies: ${JSON.stringify(result)})`); }
		if (answer.error || answer.type !== 'readyResponse' || !answer.hasReport) { throw new Error(`unexpected reply: ${JSON.stringify(answer)}`); }
		const toGarbage = result.filter((r) => r.inReplyTo !== 4242);
		if (toGarbage.length > 0) { throw new Error(`the host answered garbage: ${JSON.stringify(toGarbage)}`); }
		const summary = (await frame().locator('#summary').textContent()) ?? '';
		if (!summary.includes('Open MPI')) { throw new Error('the panel lost its report after the garbage'); }
	});

	await check('after the inspection the Hosts view lists "This machine"; clicking the row keeps its report in the panel', async () => {
		const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'GPU-MPI Hosts' }) });
		const row = pane.locator('.monaco-list-row', { hasText: 'This machine' }).first();
		await row.waitFor({ state: 'visible', timeout: 20_000 });
		if (await pane.locator('.welcome-view-content').isVisible()) { throw new Error('the welcome content is still shown beside the rows'); }
		const described = ((await row.textContent()) ?? '').replace(/\s+/g, ' ');
		if (!/inspected .*: \d+ errors?, \d+ warnings?, \d+ info/.test(described)) { throw new Error(`the row says "${described}", not "inspected …: n errors, n warnings, n info"`); }
		await row.click();
		await waitFor(async () => ((await frame().locator('#summary').textContent({ timeout: 1000 })) ?? '').includes('Open MPI') || 'no summary',
			{ timeoutMs: 20_000, what: 'the panel to show this machine\'s report after the click' });
		await frame().locator('#headline').waitFor({ state: 'visible', timeout: 10_000 });
		// One count for one inspection: the row's numbers are the panel's (issue 32: panel, tree, Problems and status bar agreed on nothing).
		const row3 = /(\d+) errors?, (\d+) warnings?, (\d+) info/.exec(described)?.slice(1).map(Number);
		const panel3 = await Promise.all(['error', 'warning', 'info'].map(async (sev) => Number(/(\d+)\s*$/.exec((await frame().locator(`.counts .count-${sev}`).first().textContent({ timeout: 5000 })) ?? '')?.[1] ?? NaN)));
		if (JSON.stringify(row3) !== JSON.stringify(panel3)) { throw new Error(`the Hosts row counts ${JSON.stringify(row3)} (error, warning, info), the panel ${JSON.stringify(panel3)}`); }
		const bar = page.locator('.statusbar-item', { hasText: 'GPU-MPI' }).first();
		const barText = ((await bar.getAttribute('aria-label', { timeout: 5000 })) ?? '').replace(/\s+/g, ' ');
		if (!barText.includes(`${row3[0]} error`) || !barText.includes(`${row3[1]} warning`) || !barText.includes(`${row3[2]} info`)) { throw new Error(`the status bar says "${barText}", not the row's counts ${JSON.stringify(row3)}`); }
	});

	await check(`screenshot of the window saved to ${path.relative(process.cwd(), screenshot)}`, async () => {
		// Give the panel the whole width and drop notification toasts, so the picture shows the report.
		await runPaletteCommand(page, 'View: Close Primary Side Bar').catch(() => {});
		await runPaletteCommand(page, 'Notifications: Clear All Notifications').catch(() => {});
		await frame().locator('#summary').waitFor({ state: 'visible', timeout: 10_000 });
		// The headline verdict first, in view (the picture in docs/screenshots shows it).
		await frame().locator('#headline').scrollIntoViewIfNeeded({ timeout: 5000 });
		fs.mkdirSync(path.dirname(screenshot), { recursive: true });
		await page.mouse.move(0, 0);
		await page.waitForTimeout(500);
		await page.screenshot({ path: screenshot });
		const size = fs.statSync(screenshot).size;
		if (size < 20_000) { throw new Error(`screenshot is only ${size} bytes`); }
		// A second picture with the pml-ucx finding (its quoted param-file line) in view.
		const pml = frame().locator(`.finding[data-rule-id="${RULE_PML_UCX_DISABLED}"]`).first();
		await pml.scrollIntoViewIfNeeded({ timeout: 5000 });
		await page.waitForTimeout(300);
		await page.screenshot({ path: screenshot.replace(/\.png$/, '-pml-ucx.png') });
	});

	await check('VS Code offers an ordinary listening port but none of our mpirun\'s (contributed remote.portsAttributes)', async () => {
		// Run before the panel checks: their second inspection starts short-lived engine ranks right before, and in one
		// local CI run VS Code then listed port 1024 as auto-forwarded with the bench's command line (a process it may
		// not have been able to name when it first saw the port: not proven; docs/reliability.md).
		// Control: a plain node server on 127.0.0.1; VS Code's process-based auto forwarding (the default in this
		// remote window) must offer it, otherwise this check proves nothing. Then a real mpirun of the engine, whose
		// launcher and ranks listen (Open MPI's btl tcp from port 1024): none of their ports may be offered.
		const { spawn } = await import('node:child_process');
		await runPaletteCommand(page, 'Focus on Ports View').catch(() => {});
		const notices = async () => {
			await runPaletteCommand(page, 'Notifications: Show Notifications').catch(() => {});
			const texts = await page.locator('.notification-list-item-message').allTextContents();
			await page.keyboard.press('Escape');
			return texts.join('\n');
		};
		// The Ports view lists every port VS Code detected and forwarded (notified or not): its cells, as words.
		const portsView = async () => (await page.locator('.ports-view, [id="~remote.forwardedPortsContainer"]').allInnerTexts().catch(() => [])).join('\n').split(/\s+/);
		const control = spawn(process.execPath, ['-e', "const s=require('net').createServer().listen(0,'127.0.0.1',()=>console.log(s.address().port))"], { stdio: ['ignore', 'pipe', 'ignore'] });
		const engine = path.join(process.cwd(), 'native', 'build', 'engine-openmpi', 'gpumpi');
		let mpirun;
		try {
			const controlPort = await new Promise((resolve, reject) => {
				control.stdout.once('data', (b) => resolve(String(b).trim()));
				setTimeout(() => reject(new Error('the control server did not start')), 10_000);
			});
			mpirun = spawn('mpirun.openmpi', ['--allow-run-as-root', '--oversubscribe', '-np', '2', engine, 'bench', '--memory', 'host', '--sizes', '256M', '--iters', '60', '--modes', 'mpi'], { stdio: 'ignore' });
			const ours = new Set();
			await waitFor(async () => {
				for (const line of execFileSync('ss', ['-ltnpH'], { encoding: 'utf8' }).split('\n')) {
					if (/"(gpumpi|mpirun)",pid=/.test(line)) { ours.add(/:(\d+)\s/.exec(line)?.[1]); }
				}
				const listed = await portsView();
				return listed.includes(String(controlPort)) && ours.size >= 2 ? true : `Ports view: ${listed.join(' ').slice(0, 200)}; our ports: ${[...ours].join(',')}`;
			}, { timeoutMs: 45_000, what: `VS Code to detect the control port ${controlPort} while mpirun runs`, intervalMs: 2000 });
			await page.waitForTimeout(4000); // more scans (every 2 s or more) while mpirun still runs
			if (mpirun.exitCode !== null) { throw new Error(`mpirun ended (${mpirun.exitCode}) before the check`); }
			const listed = await portsView();
			const text = await notices();
			const offered = [...ours].filter((p) => listed.includes(p) || new RegExp(`port ${p}\\b`).test(text));
			if (offered.length > 0) { throw new Error(`VS Code offered our ports ${offered.join(', ')}: Ports view ${listed.join(' ').slice(0, 300)}; notices ${text.replace(/\s+/g, ' ').slice(0, 300)}`); }
			await page.screenshot({ path: path.join(debugDir, 'ports-view.png') }).catch(() => {});
			metrics.portsOursSeen = ours.size;
		} finally {
			control.kill();
			mpirun?.kill();
		}
	});

	await runPanelChecks(page, { check, shotDir: path.dirname(screenshot), debugDir });

	const failures = tests.filter((t) => !t.ok).length;
	console.log(`  ui: ${tests.length - failures} passed, ${failures} failed`);
	return { passes: tests.length - failures, failures, pending: 0, tests, metrics };
}
