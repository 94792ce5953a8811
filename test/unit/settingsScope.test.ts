/**
 * Settings that name things of one machine (paths of the engine, mpirun and the ssh configuration; the SSH hosts
 * reached from it) are machine-scoped: under Remote-SSH a user setting of the laptop does not reach the cluster
 * node, and a workspace may still override (machine-overridable). The others stay window-scoped.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

describe('settings scope (package.json)', () => {
	const pkg = JSON.parse(fs.readFileSync(path.join(process.cwd(), 'package.json'), 'utf8')) as { contributes: { configuration: { title: string; properties: Record<string, { scope?: string }> } } };
	const props = pkg.contributes.configuration.properties;
	it('per-machine settings are machine-overridable; the rest keep the default scope', () => {
		const machine = Object.entries(props).filter(([, v]) => v.scope === 'machine-overridable').map(([k]) => k).sort();
		assert.deepEqual(machine, ['gpumpiDoctor.enginePath', 'gpumpiDoctor.hosts', 'gpumpiDoctor.mpirunPath', 'gpumpiDoctor.sshConfigFile']);
		assert.ok(Object.values(props).every(v => v.scope === undefined || v.scope === 'machine-overridable'));
		assert.equal(pkg.contributes.configuration.title, 'GPU-MPI Doctor');
	});
});
