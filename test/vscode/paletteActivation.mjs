// Activation as a user sees it, for `npm run bench` (scripts/bench.mjs): in a fresh code-server window, F1 →
// "GPU-MPI: Show Log" → Enter, timed from Enter's keydown until the extension's commands are registered (the time its
// log line carries) and, in the page, until the Output view comes up (the command's effect). The first time, the command is what activates the extension (cold: the bundle is loaded, VS Code
// creates its context, activate() registers the commands, then the command runs); the same command again in the
// same window is the workbench's own part (palette, command round trip, Output view), so cold − warm is what
// activation adds for the user.
//
// The product activates at startup (onStartupFinished) and when its Hosts view is shown, so in a plain window it is
// usually active before anyone can press Enter. The window therefore runs a staged copy of the extension (symlinks to
// this tree, the same dist/ bundles) whose manifest differs in exactly two places: no activation events, and the Hosts
// view behind `"when": "false"`; that is the path of a user who picks a command before VS Code's startup has
// finished. Each measurement checks it was cold: the extension's commands must be registered after that Enter.
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../../scripts/codeServer.mjs';

/** The command timed, and the Output channel it shows. */
export const PRODUCT = { label: 'GPU-MPI: Show Log', channel: 'GPU-MPI Doctor' };
/** The control: a minimal extension with the same kind of command (stageFloorExtension). */
export const FLOOR = { label: 'Bench Floor: Show Log', channel: 'Bench Floor' };

/** Write the staged copy into `dir` (replacing it): package.json changed as described above, every other entry a symlink. */
export function stageColdExtension(dir) {
	fs.rmSync(dir, { recursive: true, force: true });
	fs.mkdirSync(dir, { recursive: true });
	const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
	pkg.activationEvents = [];
	pkg.contributes.views.explorer = pkg.contributes.views.explorer.map((v) => ({ ...v, when: 'false' }));
	fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
	for (const e of fs.readdirSync(ROOT)) {
		if (e === 'package.json' || e === '.git' || e === '.test-work') { continue; }
		fs.symlinkSync(path.join(ROOT, e), path.join(dir, e));
	}
	return dir;
}

/**
 * The control: an extension that does nothing but register one command showing its log channel (no bundle, no
 * dependencies), so its cold time is VS Code's own floor for "activate an extension from the palette and run its command".
 */
export function stageFloorExtension(dir) {
	fs.rmSync(dir, { recursive: true, force: true });
	fs.mkdirSync(dir, { recursive: true });
	fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({
		name: 'bench-floor', publisher: 'gpumpi', version: '0.0.1', engines: { vscode: '^1.100.0' }, main: './extension.js',
		activationEvents: [], contributes: { commands: [{ command: 'benchFloor.showLog', title: 'Show Log', category: 'Bench Floor' }] },
	}, null, 2));
	fs.writeFileSync(path.join(dir, 'extension.js'), `const vscode = require('vscode');
exports.activate = (context) => {
	const channel = vscode.window.createOutputChannel('${FLOOR.channel}', { log: true });
	context.subscriptions.push(channel, vscode.commands.registerCommand('benchFloor.showLog', () => channel.show(true)));
	channel.info(\`activated: commands at \${new Date().toISOString()}\`);
};
`);
	return dir;
}

/** Open the palette on `label`; reopened until the row is there (the palette lists the commands known when it opens). */
async function paletteOn(page, label, timeoutMs) {
	const input = page.locator('.quick-input-widget input.input');
	const row = page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first();
	const t0 = Date.now();
	for (;;) {
		if (await input.isVisible()) { await page.keyboard.press('Escape'); }
		await page.keyboard.press('F1');
		await input.waitFor({ state: 'visible', timeout: 5000 });
		await input.fill(`>${label}`);
		try {
			await row.waitFor({ state: 'visible', timeout: 2000 });
			const focused = (await page.locator('.quick-input-list .monaco-list-row.focused').first().textContent({ timeout: 2000 })) ?? '';
			if (focused.includes(label)) { return; }
		} catch { /* not listed yet */ }
		if (Date.now() - t0 > timeoutMs) { throw new Error(`"${label}" not offered by the command palette within ${timeoutMs / 1000} s`); }
	}
}

/**
 * Whether the Output view is shown (evaluated in the page), and on which channel. The command's effect is the Output
 * view coming up: in a just-opened window it sometimes comes up on another channel ("Tasks"; the one-command extension
 * too), VS Code not having registered the new channel yet when it is shown; that is counted as shown, and said.
 */
function outputShown() {
	const panel = document.querySelector('.part.panel');
	if (!panel || panel.getClientRects().length === 0) { return null; }
	const tab = panel.querySelector('.action-item.checked .action-label');
	if (!tab || !/^Output/.test(tab.getAttribute('aria-label') ?? '')) { return null; }
	const select = [...panel.querySelectorAll('select.monaco-select-box')].find((s) => s.getClientRects().length > 0);
	return select?.value ?? '';
}

/**
 * Press Enter on the highlighted palette row; the page itself notes Enter's keydown (performance.now and Date.now)
 * and polls every 2 ms until the Output view is shown. Returns the page's times and the channel it showed; `shown`
 * stays null when the view did not come up within `withinMs`.
 */
async function enterAndTime(page, withinMs) {
	await page.evaluate(() => {
		// outputShown, inline: the workbench's CSP allows no eval of a function sent as text.
		const shown = () => {
			const panel = document.querySelector('.part.panel');
			if (!panel || panel.getClientRects().length === 0) { return null; }
			const tab = panel.querySelector('.action-item.checked .action-label');
			if (!tab || !/^Output/.test(tab.getAttribute('aria-label') ?? '')) { return null; }
			const select = [...panel.querySelectorAll('select.monaco-select-box')].find((s) => s.getClientRects().length > 0);
			return select?.value ?? '';
		};
		const clock = { enter: null, enterWall: null, shown: null, channel: null };
		window.__gpumpiBenchClock = clock;
		const onKey = (e) => {
			if (e.key !== 'Enter') { return; }
			window.removeEventListener('keydown', onKey, true);
			clock.enter = performance.now();
			clock.enterWall = Date.now();
			const poll = () => {
				const channel = shown();
				if (channel !== null) { clock.shown = performance.now(); clock.channel = channel; } else { setTimeout(poll, 2); }
			};
			poll();
		};
		window.addEventListener('keydown', onKey, true);
	});
	await page.keyboard.press('Enter');
	await page.waitForFunction(() => window.__gpumpiBenchClock?.shown !== null, null, { timeout: withinMs, polling: 50 }).catch(() => {});
	return page.evaluate(() => window.__gpumpiBenchClock);
}

/**
 * The extension's "activated" log line as the Output view shows it: when its commands were registered, by its own clock
 * (the ISO time the line carries: VS Code stamps a log line when it writes it, which at activation can be seconds
 * later), and, for the product, its own timings of this activation (extension.ts activationTimings).
 */
async function activatedLine(page, channel) {
	if ((await page.evaluate(outputShown)) !== channel) {
		await page.locator('.part.panel select.monaco-select-box').first().selectOption({ label: channel });
	}
	const lines = page.locator('.part.panel .view-lines');
	let text = '';
	const t0 = Date.now();
	while (!/activated.*\d\dZ\)?/.test(text)) {
		if (Date.now() - t0 > 30_000) { throw new Error(`no "activated" line in the Output view: ${JSON.stringify(text.slice(0, 300))}`); }
		text = ((await lines.first().textContent({ timeout: 5000 }).catch(() => '')) ?? '').replace(/\u00a0/g, ' ');
		await page.waitForTimeout(100);
	}
	const at = /activated.*?(?:commands after [\d.]+ ms, at|commands at) (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)/.exec(text);
	if (!at) { throw new Error(`the "activated" line has no time of its commands: ${JSON.stringify(text.slice(0, 400))}`); }
	const line = { commandsAt: Date.parse(at[1]) };
	const t = /bundle ([\d.]+) ms, VS Code's context ([\d.]+) ms, activate\(\) ([\d.]+) ms\s*\(commands after ([\d.]+) ms/.exec(text);
	return t ? { ...line, timings: { bundleEvalMs: Number(t[1]), contextMs: Number(t[2]), activateMs: Number(t[3]), commandsMs: Number(t[4]) } } : line;
}

/** Hide the panel (Ctrl+J, the workbench's toggle) so that the next Show Log has to show it again. */
async function hidePanel(page) {
	for (let i = 0; i < 3; i++) {
		if ((await page.evaluate(outputShown)) === null) { return; }
		await page.keyboard.press('Control+J');
		await page.waitForTimeout(500);
	}
	throw new Error('the panel did not hide (Ctrl+J)');
}

/**
 * One fresh window (`page` already on its URL) of an extension that is not active yet: `which` (PRODUCT or FLOOR) run
 * cold, then warm. Returns
 *   registeredMs    Enter → the extension's commands registered (the time the "activated" line carries, the
 *                   extension's own clock)
 *   coldMs, warmMs  Enter → the Output view up; coldMs null when it did not come up (seen in just-opened windows, the
 *                   one-command extension too: VS Code shown a channel it has not registered yet), with coldChannel
 *                   when it came up on another channel
 *   timings, beforeBundleMs   the product's own split, and Enter → its bundle starting to evaluate
 */
export async function measurePaletteActivation(page, which, { timeoutMs = 120_000, settleMs = 0, coldWithinMs = 20_000 } = {}) {
	await page.locator('.monaco-workbench .part.statusbar').waitFor({ state: 'visible', timeout: timeoutMs });
	// The windows share one profile and folder, so a window may open with the panel the last one left open.
	await hidePanel(page);
	await paletteOn(page, which.label, timeoutMs);
	if (settleMs > 0) { await page.keyboard.press('Escape'); await page.waitForTimeout(settleMs); await hidePanel(page); await paletteOn(page, which.label, timeoutMs); }
	const cold = await enterAndTime(page, coldWithinMs);
	await hidePanel(page);
	await paletteOn(page, which.label, timeoutMs);
	const warm = await enterAndTime(page, timeoutMs);
	if (warm.shown === null) { throw new Error(`${which.label}, run again: the Output view did not come up`); }
	const line = await activatedLine(page, which.channel);
	await hidePanel(page);
	// Cold only if the first Enter is what activated it.
	if (line.commandsAt < cold.enterWall) {
		throw new Error(`${which.label}: the commands were registered ${cold.enterWall - line.commandsAt} ms before Enter: not a cold activation`);
	}
	if (line.commandsAt >= warm.enterWall) { throw new Error(`${which.label}: the first Enter did not activate the extension, the second did`); }
	const t = line.timings;
	return {
		registeredMs: line.commandsAt - cold.enterWall,
		coldMs: cold.shown === null ? null : cold.shown - cold.enter,
		warmMs: warm.shown - warm.enter,
		// The channel the view came up on when it was another one ('': up, its channel list not drawn yet).
		...(cold.shown !== null && cold.channel && cold.channel !== which.channel ? { coldChannel: cold.channel } : {}),
		...(t ? { timings: t, beforeBundleMs: line.commandsAt - t.commandsMs - t.contextMs - t.bundleEvalMs - cold.enterWall } : {}),
	};
}
