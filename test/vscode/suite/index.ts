/**
 * In-host test runner: VS Code (desktop through @vscode/test-electron, or code-server through
 * test/vscode/runCodeServer.mjs) loads this module inside the real extension host and calls `run()`.
 *
 * - The test modules are an EXPLICIT list (no globbing): a missing bundle is an error, never a silent skip.
 * - `TEST_FILTER` (env) is passed to mocha's grep.
 * - `GPUMPI_VSCODE_RESULT` (env): path of a JSON file that receives the counts, the failures and the
 *   metrics the tests recorded, because the outer runner only sees text through codeAutomationLog. It is rewritten
 *   at every test's start and end with `complete: false` and the test running, so a run the outer runner gives up
 *   on (its time limit, a crashed page) keeps the tests that ended and names the one it was in.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import Mocha from 'mocha';
import { takeMetrics } from './metrics';

/** Test modules, in order, as bundled next to this file (dist/test/vscode/suite/*.test.js). */
const TEST_MODULES = ['extension.test.js', 'inspectApi.test.js', 'problems.test.js', 'bundle.test.js', 'repro.test.js', 'hosts.test.js', 'map.test.js', 'remoteHosts.test.js', 'guard.test.js', 'keep.test.js'];

/** What the outer runner reads back. */
export interface InHostResult {
	passes: number;
	failures: number;
	pending: number;
	failed: { title: string; error: string }[];
	passed: string[];
	metrics: Record<string, number>;
	vscodeVersion: string;
	/** False until mocha's run has ended. */
	complete: boolean;
	/** The full title of the test that has started and not yet ended (none between tests). */
	running?: string;
}

function writeResult(result: InHostResult): void {
	const out = process.env.GPUMPI_VSCODE_RESULT;
	if (!out) { return; }
	fs.mkdirSync(path.dirname(out), { recursive: true });
	// Whole or not at all: the outer runner may read it at any moment (a run it gave up on goes on writing).
	const tmp = `${out}.${process.pid}.tmp`;
	fs.writeFileSync(tmp, JSON.stringify(result, null, 2));
	fs.renameSync(tmp, out);
}

/** Entry point called by VS Code's extension test loader. Rejects when any test failed. */
export async function run(): Promise<void> {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const vscodeVersion = (require('vscode') as typeof import('vscode')).version;
	const mocha = new Mocha({ ui: 'bdd', color: false, timeout: 60_000, reporter: 'spec' });
	const filter = process.env.TEST_FILTER;
	if (filter) { mocha.grep(filter); }
	const missing: string[] = [];
	for (const name of TEST_MODULES) {
		const file = path.join(__dirname, name);
		if (fs.existsSync(file)) { mocha.addFile(file); } else { missing.push(file); }
	}
	const result: InHostResult = { passes: 0, failures: 0, pending: 0, failed: [], passed: [], metrics: {}, vscodeVersion, complete: false };
	if (missing.length > 0) {
		result.complete = true;
		result.failures = missing.length;
		result.failed = missing.map((file) => ({ title: `load ${path.basename(file)}`, error: `test module not built: ${file}` }));
		writeResult(result);
		throw new Error(`test modules missing: ${missing.join(', ')}`);
	}
	await new Promise<void>((resolve, reject) => {
		try {
			const runner = mocha.run(() => resolve());
			writeResult(result);
			runner.on('test', (test) => { result.running = test.fullTitle(); writeResult(result); });
			runner.on('pass', (test) => { result.passed.push(test.fullTitle()); });
			runner.on('fail', (test, err: unknown) => {
				const e = err instanceof Error ? (err.stack ?? err.message) : String(err);
				result.failed.push({ title: test.fullTitle(), error: e });
			});
			// 'test end' comes after 'pass' / 'fail' of a test; a failed hook has no 'test end', so 'fail' writes too.
			runner.on('test end', () => { result.running = undefined; result.passes = result.passed.length; result.failures = result.failed.length; writeResult(result); });
			runner.on('fail', () => { result.failures = result.failed.length; writeResult(result); });
			runner.on('end', () => {
				result.passes = runner.stats?.passes ?? result.passed.length;
				result.failures = runner.stats?.failures ?? result.failed.length;
				result.pending = runner.stats?.pending ?? 0;
			});
		} catch (e) {
			reject(e);
		}
	});
	result.metrics = takeMetrics();
	result.running = undefined;
	result.complete = true;
	writeResult(result);
	if (result.failures > 0) {
		throw new Error(`${result.failures} test(s) failed`);
	}
}
