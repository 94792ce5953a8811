/**
 * The import zones of eslint.config.mjs bite: the real ESLint with the repository's config lints small sources at
 * paths of each zone (lintText: nothing is written), and each forbidden import is reported while the allowed ones are
 * not. The tree itself is linted by the typecheck tier (scripts/test.mjs).
 */
import * as assert from 'node:assert/strict';
import * as path from 'node:path';

// eslint is loaded at run time (the test bundle keeps it external, as it does mocha).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ESLint } = require('eslint') as typeof import('eslint');

const repo = path.resolve(__dirname, '../../..');

/** The specifiers ESLint reports under no-restricted-imports for `source` at `file` (repository-relative). */
async function restricted(file: string, source: string): Promise<string[]> {
	const eslint = new ESLint({ cwd: repo });
	const [result] = await eslint.lintText(source, { filePath: path.join(repo, file) });
	return result.messages
		.filter((m) => m.ruleId === 'no-restricted-imports')
		.map((m) => /'([^']+)' import is restricted/.exec(m.message)?.[1] ?? m.message);
}

const imports = (specs: string[]): string => specs.map((s, i) => `import * as m${i} from '${s}';\nvoid m${i};\n`).join('');

describe('lint zones (eslint.config.mjs)', function () {
	this.timeout(120_000);

	const cases: Array<{ file: string; banned: string[]; allowed: string[] }> = [
		{ file: 'extension/shared/zoneProbe.ts', banned: ['../core/proc', 'vscode', 'node:fs', 'path'], allowed: ['./report'] },
		{ file: 'extension/core/zoneProbe.ts', banned: ['vscode', '../cli/mapCli', '../vscode/commands', '../../media/map/main'], allowed: ['../shared/report', './launch/runLaunch', 'node:fs', '../../package.json'] },
		{ file: 'extension/core/map/zoneProbe.ts', banned: ['../../cli/mapCli', '../../vscode/settings'], allowed: ['../launch/launchSpec', '../../shared/mapSchema'] },
		{ file: 'extension/cli/zoneProbe.ts', banned: ['vscode', '../vscode/commands'], allowed: ['../core/proc', '../shared/report', '../../media/panel/panel.css'] },
		{ file: 'extension/vscode/zoneProbe.ts', banned: ['../cli/mapCli'], allowed: ['vscode', '../core/proc', '../shared/report'] },
		{ file: 'media/map/zoneProbe.ts', banned: ['../../extension/core/proc', '../../extension/vscode/settings', 'vscode', 'node:fs', '../../../elsewhere'], allowed: ['../../extension/shared/mapSchema', './render', '../panel/main'] },
	];
	for (const c of cases) {
		it(`${path.dirname(c.file)}/: refuses ${c.banned.join(', ')}; allows ${c.allowed.join(', ')}`, async () => {
			const found = await restricted(c.file, imports([...c.banned, ...c.allowed]));
			assert.deepEqual([...new Set(found)].sort(), [...c.banned].sort());
		});
	}

	it('sees `import type` and `export … from` too', async () => {
		const found = await restricted('extension/core/zoneProbe.ts', "import type { X } from '../vscode/commands';\nexport { Y } from '../cli/mapCli';\nexport type Z = X;\n");
		assert.deepEqual(found.sort(), ['../cli/mapCli', '../vscode/commands']);
	});
});
