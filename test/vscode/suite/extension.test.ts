/**
 * Runs inside the real extension host (code-server or desktop VS Code): the extension is found,
 * activates, returns its API and registers its commands as its manifest declares them.
 */
import * as assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import * as vscode from 'vscode';
import { recordMetric } from './metrics';

const EXTENSION_ID = 'gpumpi.gpumpi-doctor';

interface ManifestCommand { command: string; title: string; category?: string }

/**
 * Wait until the extension host's event loop is quiet (the window's built-in extensions finish starting right
 * when the tests begin), so the activation time measures our extension, not the host's start-up backlog.
 */
async function settle(maxMs = 15_000): Promise<void> {
	const t0 = Date.now();
	let quiet = 0;
	while (quiet < 20 && Date.now() - t0 < maxMs) {
		const s = performance.now();
		await new Promise((r) => setTimeout(r, 10));
		quiet = performance.now() - s < 15 ? quiet + 1 : 0;
	}
}

describe('extension', () => {
	it('is installed from the development path', () => {
		const ext = vscode.extensions.getExtension(EXTENSION_ID);
		assert.ok(ext, `${EXTENSION_ID} not found among ${vscode.extensions.all.length} extensions`);
		assert.equal(ext.packageJSON.name, 'gpumpi-doctor');
	});

	it('activates and returns its API (activation time recorded)', async function () {
		this.timeout(60_000);
		const ext = vscode.extensions.getExtension(EXTENSION_ID);
		assert.ok(ext);
		await settle();
		// Activation is at startup (onStartupFinished, for the run-marker sweep), so it is usually done by now, and an
		// activate() of an active extension measures nothing: its time is recorded only when this call activates it.
		const wasActive = ext.isActive;
		const t0 = performance.now();
		const api: unknown = await ext.activate();
		const ms = performance.now() - t0;
		assert.equal(ext.isActive, true);
		assert.ok(typeof api === 'object' && api !== null, 'activate() must return an API object');
		const a = api as Record<string, unknown>;
		if (!wasActive) { recordMetric('activationMs', ms); }
		// Our share, as the extension measured it whoever activated it: evaluating the bundle (banner → footer), VS
		// Code's part before it calls activate() (the extension context), and activate() with its commands.
		const t = (a.activationTimings as () => Record<string, number>)();
		for (const k of ['bundleEvalMs', 'contextMs', 'moduleLoadMs', 'commandsMs', 'activateMs', 'commandsAtEpochMs']) {
			assert.ok(Number.isFinite(t[k]) && t[k] >= 0, `activationTimings().${k} is ${t[k]} (the bundle's banner and footer marks?)`);
		}
		assert.ok(t.commandsMs <= t.activateMs, 'the commands are registered within activate()');
		assert.ok(Math.abs(t.commandsAtEpochMs - Date.now()) < 10 * 60_000, `commandsAtEpochMs ${t.commandsAtEpochMs} is not a time of this run`);
		recordMetric('activationBundleEvalMs', t.bundleEvalMs);
		recordMetric('activationContextMs', t.contextMs);
		recordMetric('activationModuleLoadMs', t.moduleLoadMs);
		recordMetric('activationCommandsMs', t.commandsMs);
		recordMetric('activationActivateMs', t.activateMs);
		assert.equal(typeof a.inspect, 'function', 'API has inspect()');
		assert.equal(typeof a.lastReport, 'function', 'API has lastReport()');
	});

	it('activates at startup (onStartupFinished) and sweeps the run markers of dead hosts (none here)', async () => {
		const ext = vscode.extensions.getExtension(EXTENSION_ID);
		assert.ok(ext);
		assert.deepEqual(ext.packageJSON.activationEvents, ['onStartupFinished']);
		const api = await ext.activate() as { runMarkerSweep(): Promise<{ outcome: string }[]> };
		const actions = await api.runMarkerSweep();
		assert.ok(Array.isArray(actions));
		assert.deepEqual(actions.filter(x => x.outcome === 'invalid'), [], 'no damaged marker in a fresh profile');
	});

	it('registers every command its manifest contributes', async () => {
		const ext = vscode.extensions.getExtension(EXTENSION_ID);
		assert.ok(ext);
		await ext.activate();
		const declared = (ext.packageJSON.contributes?.commands ?? []) as ManifestCommand[];
		assert.ok(declared.some((c) => c.command === 'gpumpiDoctor.inspectHost'), 'manifest declares gpumpiDoctor.inspectHost');
		const registered = new Set(await vscode.commands.getCommands(true));
		const notRegistered = declared.filter((c) => !registered.has(c.command)).map((c) => c.command);
		assert.deepEqual(notRegistered, [], 'declared but not registered');
	});

	it('titles the inspect command "GPU-MPI: Inspect Host" in the palette', () => {
		const ext = vscode.extensions.getExtension(EXTENSION_ID);
		assert.ok(ext);
		const declared = (ext.packageJSON.contributes?.commands ?? []) as ManifestCommand[];
		const inspect = declared.find((c) => c.command === 'gpumpiDoctor.inspectHost');
		assert.ok(inspect);
		assert.equal(`${inspect.category ?? ''}: ${inspect.title}`, 'GPU-MPI: Inspect Host');
	});

	it('the Hosts view is empty before anything is configured or inspected, so its welcome content shows', async () => {
		// VS Code shows contributes.viewsWelcome only while the tree has no rows; this runs before any test inspects.
		const ext = vscode.extensions.getExtension<{ hostsView(): unknown[]; lastReport(): unknown }>(EXTENSION_ID);
		assert.ok(ext);
		const api = await ext.activate();
		assert.deepEqual(vscode.workspace.getConfiguration('gpumpiDoctor').get('hosts'), [], 'no hosts configured in the fixture');
		assert.equal(api.lastReport(), undefined, 'nothing inspected yet in this window');
		await vscode.commands.executeCommand('gpumpiDoctor.hostsView.focus');
		assert.deepEqual(api.hostsView(), []);
		const welcome = (ext.packageJSON.contributes?.viewsWelcome ?? []) as { view: string; contents: string }[];
		const contents = welcome.find((w) => w.view === 'gpumpiDoctor.hostsView')?.contents ?? '';
		const registered = new Set(await vscode.commands.getCommands(true));
		for (const c of ['gpumpiDoctor.inspectHost', 'gpumpiDoctor.addHost']) {
			assert.ok(contents.includes(`(command:${c})`), `welcome links ${c}`);
			assert.ok(registered.has(c), `${c} is registered`);
		}
	});

	it('contributes remote.portsAttributes defaults that ignore our MPI processes\' ports, beside VS Code\'s own', () => {
		// VS Code accepts configurationDefaults for this (window-scoped) setting and merges the object with its default.
		const inspected = vscode.workspace.getConfiguration('remote').inspect<Record<string, { onAutoForward?: string }>>('portsAttributes');
		const def = inspected?.defaultValue ?? {};
		const ours = Object.entries(def).filter(([k]) => /gpumpi|hydra_pmi_proxy/.test(k));
		assert.equal(ours.length, 2, JSON.stringify(def));
		for (const [, v] of ours) { assert.equal(v.onAutoForward, 'ignore'); }
		assert.ok('443' in def, `VS Code's own default (443: https) kept: ${JSON.stringify(def)}`);
	});

	it('"GPU-MPI: Show Log" runs without error', async () => {
		await vscode.commands.executeCommand('gpumpiDoctor.showLog');
	});

	it('runs in a trusted workspace (the extension refuses untrusted ones)', () => {
		assert.equal(vscode.workspace.isTrusted, true);
		assert.ok(vscode.workspace.workspaceFolders && vscode.workspace.workspaceFolders.length === 1, 'fixture workspace is open');
	});
});
