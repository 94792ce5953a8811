/**
 * Pure parts of the CLI: the settings validation it shares with the extension, and the text report's terminal
 * escaping. The built CLI run for real on this machine is test/engine/cli.test.ts.
 */
import * as assert from 'node:assert/strict';
import { DEFAULT_SETTINGS, normalizeSettings } from '../../extension/core/inspect';
import { terminalSafe } from '../../extension/cli/textReport';

describe('settings validation shared by the CLI and the extension', () => {
	it('keeps good values and rejects hostile ones with a message each', () => {
		const good = normalizeSettings({ ranks: 4, timeoutSeconds: 2.5, enginePath: '/opt/gpumpi', mpirunPath: 'mpirun.mpich' });
		assert.deepEqual(good, { settings: { ranks: 4, timeoutSeconds: 2.5, enginePath: '/opt/gpumpi', mpirunPath: 'mpirun.mpich' }, problems: [] });
		const bad = normalizeSettings({ ranks: '4; rm -rf /', timeoutSeconds: Number.NaN, enginePath: 'rel/path/gpumpi', mpirunPath: '/bin/mpirun\0x' });
		assert.deepEqual(bad.settings, DEFAULT_SETTINGS);
		assert.equal(bad.problems.length, 4);
		assert.equal(normalizeSettings({ ranks: 1.5 }).problems.length, 1);
		assert.equal(normalizeSettings({ ranks: 1025 }).problems.length, 1);
		assert.equal(normalizeSettings({ timeoutSeconds: Infinity }).problems.length, 1);
	});
});

describe('text report', () => {
	it('makes terminal escape sequences visible instead of sending them', () => {
		assert.equal(terminalSafe('a\u001b[2Jb\tc\nd\u0007'), 'a\\x1b[2Jb\tc\nd\\x07');
	});
});
