#!/usr/bin/env node
// The standard path for developers with desktop VS Code: the same in-host mocha suite
// (dist/test/vscode/suite/index.js) through @vscode/test-electron. VSCODE_BINARY=/path/to/code uses that binary
// (no download); without it @vscode/test-electron downloads VS Code stable (needs network, so not in CI: CI and
// this repo's `npm test` use test/vscode/runCodeServer.mjs, which also drives the UI checks).
// Usage: VSCODE_BINARY=/usr/share/code/code node test/vscode/runElectron.mjs   (env TEST_FILTER as in the suite)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runTests } from '@vscode/test-electron';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const tests = path.join(ROOT, 'dist', 'test', 'vscode', 'suite', 'index.js');
const fixture = path.join(ROOT, 'test-fixtures', 'workspace');
const work = path.join(ROOT, '.test-work', 'electron');
const resultFile = path.join(work, 'in-host.json');

async function main() {
	if (!fs.existsSync(tests)) {
		console.error(`${path.relative(ROOT, tests)} is missing: run node scripts/build.mjs first`);
		process.exit(2);
	}
	const binary = process.env.VSCODE_BINARY;
	if (binary && !fs.existsSync(binary)) {
		console.error(`VSCODE_BINARY=${binary} does not exist`);
		process.exit(2);
	}
	fs.rmSync(work, { recursive: true, force: true });
	fs.mkdirSync(path.join(work, 'user-data', 'User'), { recursive: true });
	fs.writeFileSync(path.join(work, 'user-data', 'User', 'settings.json'), JSON.stringify({ 'security.workspace.trust.enabled': false, 'workbench.startupEditor': 'none' }));
	let code = 0;
	try {
		code = await runTests({
			...(binary ? { vscodeExecutablePath: binary } : {}),
			extensionDevelopmentPath: ROOT,
			extensionTestsPath: tests,
			extensionTestsEnv: { GPUMPI_VSCODE_RESULT: resultFile, ...(process.env.TEST_FILTER ? { TEST_FILTER: process.env.TEST_FILTER } : {}) },
			launchArgs: [fixture, '--disable-extensions', '--disable-workspace-trust', '--skip-welcome', '--skip-release-notes',
				'--user-data-dir', path.join(work, 'user-data'), '--extensions-dir', path.join(work, 'extensions')],
		});
	} catch (e) {
		console.error(`VS Code tests failed to run: ${e instanceof Error ? e.message : String(e)}`);
		code = 1;
	}
	if (fs.existsSync(resultFile)) {
		const r = JSON.parse(fs.readFileSync(resultFile, 'utf8'));
		console.log(`vscode (electron, VS Code ${r.vscodeVersion}): ${r.passes} passed, ${r.failures} failed`);
	}
	process.exit(code);
}

main();
