/**
 * Runs inside the real extension host: the reproducer and transport-map commands run on a host from
 * `gpumpiDoctor.hosts`, reached over the real `ssh` client to a real sshd. The host is a network + UTS namespace with
 * its own hostname and sshd (test/hosts/netnsHosts.ts), created here by the test itself (needs root, as in CI);
 * `gpumpiDoctor.sshConfigFile` points ssh at the lab's config, so the user's ~/.ssh is never touched. The namespace
 * host shares this machine's file system, so the engine built here is named with `enginePath` (deploying and
 * building over ssh is covered by test/engine/sshHost.test.ts).
 */
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { MapDocument } from '../../../extension/shared/mapSchema';
import type { ReproPanelData } from '../../../extension/shared/reproProtocol';
import { createNetnsLab, netnsUnavailable, type NetnsLab } from '../../hosts/netnsHosts';
import { firstBadRun } from './runEvidence';

const EXTENSION_ID = 'gpumpi.gpumpi-doctor';

interface Api {
	lastCommandError(): string | undefined;
}

const cfg = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('gpumpiDoctor');

describe('reproducers and map on a configured ssh host (real sshd in a network namespace)', function () {
	this.timeout(180_000);
	let lab: NetnsLab | undefined;
	let root = '';

	before(async function () {
		this.timeout(60_000);
		const why = netnsUnavailable();
		assert.equal(why, null, `namespace hosts cannot be created here: ${why}`);
		const ext = vscode.extensions.getExtension<Api>(EXTENSION_ID);
		assert.ok(ext);
		await ext.activate();
		root = ext.extensionPath;
		lab = await createNetnsLab({ count: 1 });
		await cfg().update('sshConfigFile', lab.sshConfig, vscode.ConfigurationTarget.Global);
		await cfg().update('hosts', [
			{ name: 'lab-a', sshHost: 'host-a', mpirun: 'mpirun.openmpi', enginePath: path.join(root, 'native', 'build', 'engine-openmpi', 'gpumpi') },
		], vscode.ConfigurationTarget.Global);
	});

	after(async function () {
		this.timeout(30_000);
		await cfg().update('hosts', undefined, vscode.ConfigurationTarget.Global);
		await cfg().update('sshConfigFile', undefined, vscode.ConfigurationTarget.Global);
		lab?.teardown();
	});

	it('Run IPC-Pointer Reproducer with host lab-a runs the ranks on host-a and says so', async () => {
		const data = await vscode.commands.executeCommand<ReproPanelData | undefined>('gpumpiDoctor.reproIpc', {
			host: 'lab-a', memory: 'host', size: '1M', variants: ['direct', 'bounce'], presets: [], loopback: true, baseline: true, trials: 2,
		});
		const ext = vscode.extensions.getExtension<Api>(EXTENSION_ID);
		assert.ok(data?.ipc, `no result: ${JSON.stringify(ext?.exports.lastCommandError())}`);
		const runs = data.ipc.variants.flatMap(v => v.runs);
		assert.deepEqual(runs.map(v => v.outcome), ['correct', 'correct', 'correct', 'correct'], firstBadRun(runs));
		assert.deepEqual([...new Set(runs[0].ranks.map(r => r.host))], ['host-a']);
		assert.match(data.source, /^ipc run on lab-a \(host-a\) at .* with mpirun\.openmpi \(openmpi\)$/);
	});

	it('a launcher used on this machine (mpirun.mpich) is not carried to lab-a, whose entry says mpirun.openmpi', async () => {
		const local = await vscode.commands.executeCommand<ReproPanelData | undefined>('gpumpiDoctor.reproIpc', {
			mpirun: 'mpirun.mpich', memory: 'host', size: '1M', variants: ['direct'], presets: [], baseline: true, trials: 1,
		});
		assert.match(local?.ipc?.variants[0]?.runs[0]?.command[0] ?? '', /^mpirun\.mpich$/, 'the local run used the launcher it was given');
		// The same options without a launcher, on the host: its own mpirun, not the one remembered from this machine.
		const data = await vscode.commands.executeCommand<ReproPanelData | undefined>('gpumpiDoctor.reproIpc', {
			host: 'lab-a', memory: 'host', size: '1M', variants: ['direct'], presets: [], loopback: true, baseline: true, trials: 1,
		});
		const runs = data?.ipc?.variants.flatMap(v => v.runs) ?? [];
		assert.equal(runs[0]?.command[0], 'mpirun.openmpi', firstBadRun(runs));
		assert.deepEqual(runs.map(v => v.outcome), ['correct'], firstBadRun(runs));
		assert.match(data?.source ?? '', /with mpirun\.openmpi \(openmpi\)$/);
	});

	it('Show Transport Map with {host, np} maps on host-a', async () => {
		const doc = await vscode.commands.executeCommand<MapDocument | undefined>('gpumpiDoctor.showTransportMap', { host: 'lab-a', np: 2 });
		assert.ok(doc, 'no map (see the GPU-MPI Doctor log)');
		assert.deepEqual(doc.ranks.map(r => r.host), ['host-a', 'host-a']);
		assert.equal(doc.pairs.length, 1);
		assert.deepEqual(doc.runner?.command.slice(0, 1), ['mpirun.openmpi']);
	});

	it('a bad sshConfigFile value stops the run with a clear message and nothing is launched', async () => {
		await cfg().update('sshConfigFile', 'relative/config', vscode.ConfigurationTarget.Global);
		try {
			const r = await vscode.commands.executeCommand('gpumpiDoctor.reproIpc', { host: 'lab-a', memory: 'host', size: '1M', variants: ['direct'], presets: [], baseline: true });
			assert.equal(r, undefined);
			const ext = vscode.extensions.getExtension<Api>(EXTENSION_ID);
			assert.match(JSON.stringify(ext?.exports.lastCommandError()), /sshConfigFile must be an absolute path/);
		} finally {
			await cfg().update('sshConfigFile', lab?.sshConfig, vscode.ConfigurationTarget.Global);
		}
	});
});
