/**
 * Runs inside the real extension host: the "GPU-MPI Hosts" view lists this machine and the configured
 * `gpumpiDoctor.hosts` entries (invalid ones as problems), the host commands validate what they store, and
 * "Inspect Host" with a host name argument inspects that host over the real `ssh` client. The configured host's
 * destination is `ssh://root@127.0.0.1:1` (nothing listens on port 1), so ssh fails for real, at once and without
 * DNS or network; the report must be exactly one host-unreachable finding quoting ssh's refusal (the real ssh path to real sshd hosts is covered by test/engine/sshHost.test.ts
 * and test/engine/modules.test.ts, which need root network namespaces).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { Report } from '../../../extension/shared/report';

const EXTENSION_ID = 'gpumpi.gpumpi-doctor';

interface HostsApi {
	inspect(host?: string): Promise<Report>;
	lastCommandError(): string | undefined;
	hostsView(): { label: string; description: string; problem: boolean; click?: { command: string; arguments: unknown[] } }[];
	lastReport(): Report | undefined;
	panelReady(): boolean;
}

async function api(): Promise<HostsApi> {
	const ext = vscode.extensions.getExtension<HostsApi>(EXTENSION_ID);
	assert.ok(ext, `${EXTENSION_ID} not installed`);
	return ext.activate();
}

const cfg = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('gpumpiDoctor');

async function setHosts(value: unknown): Promise<void> {
	await cfg().update('hosts', value, vscode.ConfigurationTarget.Global);
}

describe('hosts view and host commands', function () {
	this.timeout(120_000);
	const PWNED = '/tmp/gpumpi-hosts-test-pwned';

	before(async () => {
		fs.rmSync(PWNED, { force: true });
		await setHosts([
			{ name: 'cluster-a', sshHost: 'ssh://root@127.0.0.1:1', setup: 'module load mpi/openmpi' },
			{ name: 'evil', sshHost: `-oProxyCommand=touch ${PWNED}` },
		]);
	});

	after(async () => {
		await setHosts(undefined);
		fs.rmSync(PWNED, { force: true });
	});

	it('lists this machine, the configured host, and the invalid entry as a problem', async () => {
		// The view is contributed and opens in the workbench (the command exists only for a registered view).
		await vscode.commands.executeCommand('gpumpiDoctor.hostsView.focus');
		const rows = (await api()).hostsView();
		assert.equal(rows[0].label, 'This machine');
		const host = rows.find(r => r.label === 'cluster-a');
		assert.ok(host, `cluster-a missing from ${JSON.stringify(rows)}`);
		assert.equal(host.problem, false);
		assert.equal(rows.some(r => r.label === 'evil'), false, 'an invalid entry is not listed as a host');
		const problem = rows.find(r => r.problem);
		assert.ok(problem, `no problem row in ${JSON.stringify(rows)}`);
		assert.match(problem.description, /starts with "-"/);
	});

	it('edit rejects a hostile ssh destination with a clear message and keeps the setting', async () => {
		const doctor = await api();
		const before = JSON.stringify(cfg().get('hosts'));
		const result = await vscode.commands.executeCommand('gpumpiDoctor.editHost', 'cluster-a', { name: 'cluster-a', sshHost: '-oProxyCommand=sh' });
		assert.equal(result, undefined);
		assert.match(doctor.lastCommandError() ?? '', /Host not saved: .*starts with "-" \(ssh would read it as an option\)/);
		assert.equal(JSON.stringify(cfg().get('hosts')), before, 'the setting is unchanged');
		await vscode.commands.executeCommand('gpumpiDoctor.editHost', 'cluster-a', { name: 'cluster-a', sshHost: 'a b;reboot' });
		assert.match(doctor.lastCommandError() ?? '', /whitespace or control characters/);
	});

	it('add stores a valid host, refuses a duplicate name, remove deletes it', async () => {
		const doctor = await api();
		await vscode.commands.executeCommand('gpumpiDoctor.addHost', { name: 'node-2', sshHost: 'user@node-2.invalid', setup: 'module load mpi/mpich' });
		assert.ok(doctor.hostsView().some(r => r.label === 'node-2'), 'node-2 listed after add');
		await vscode.commands.executeCommand('gpumpiDoctor.addHost', { name: 'node-2', sshHost: 'other.invalid' });
		assert.match(doctor.lastCommandError() ?? '', /already used/);
		assert.equal(await vscode.commands.executeCommand('gpumpiDoctor.removeHost', 'node-2'), true);
		assert.equal(doctor.hostsView().some(r => r.label === 'node-2'), false);
	});

	it('Inspect Host with a host name inspects that host over ssh and the report names it', async () => {
		const doctor = await api();
		const report = await vscode.commands.executeCommand<Report | undefined>('gpumpiDoctor.inspectHost', 'cluster-a');
		assert.ok(report, `no report: ${doctor.lastCommandError()}`);
		assert.equal(report.host.kind, 'ssh');
		assert.equal(report.host.label, 'cluster-a (ssh://root@127.0.0.1:1)');
		// The connection is tested first: the one finding says why it failed, nothing else ran, nothing is "not found".
		assert.deepEqual(report.findings.map(f => f.id), ['host-unreachable']);
		assert.match(report.findings[0].title, /Cannot reach cluster-a \(ssh:\/\/root@127\.0\.0\.1:1\) \(connection refused\)/);
		assert.match(report.findings[0].message, /^cannot reach cluster-a \(ssh:\/\/root@127\.0\.0\.1:1\): connection to .* refused: no SSH server is listening there/);
		assert.ok(report.findings[0].evidence.some(e => /Connection refused/.test(e.line)), JSON.stringify(report.findings[0].evidence));
		assert.deepEqual(report.raw.map(r => r.id), ['connect']);
		assert.equal(report.summary.mpi.label, 'not checked');
		const row = doctor.hostsView().find(r => r.label === 'cluster-a');
		assert.match(row?.description ?? '', /^unreachable: connection refused/);
		assert.equal(fs.existsSync(PWNED), false, 'the invalid entry was never run');
	});

	it('clicking a host row shows that host\'s last report; a row never inspected has no click', async () => {
		const doctor = await api();
		const local = doctor.lastReport()?.host.kind === 'local' ? doctor.lastReport() : await doctor.inspect();
		assert.equal(local?.host.kind, 'local');
		const remote = await vscode.commands.executeCommand<Report | undefined>('gpumpiDoctor.inspectHost', 'cluster-a');
		assert.equal(doctor.lastReport(), remote, 'cluster-a is the current report');
		const click = (label: string): Thenable<Report | undefined> => {
			const c = doctor.hostsView().find(r => r.label === label)?.click;
			assert.ok(c, `the ${label} row has no click command: ${JSON.stringify(doctor.hostsView())}`);
			// What VS Code runs when the row is clicked: TreeItem.command with its arguments.
			return vscode.commands.executeCommand<Report | undefined>(c.command, ...c.arguments);
		};
		assert.equal(await click('This machine'), local);
		assert.equal(doctor.lastReport(), local, 'the panel now shows this machine\'s report');
		const t0 = Date.now();
		while (!doctor.panelReady() && Date.now() - t0 < 30_000) { await new Promise(r => setTimeout(r, 100)); }
		assert.ok(doctor.panelReady(), 'the panel is open and ready');
		assert.equal(await click('cluster-a'), remote);
		assert.equal(doctor.lastReport(), remote);
		await vscode.commands.executeCommand('gpumpiDoctor.addHost', { name: 'node-3', sshHost: 'node-3.invalid' });
		assert.equal(doctor.hostsView().find(r => r.label === 'node-3')?.click, undefined, 'not inspected: nothing to show');
		assert.equal(await vscode.commands.executeCommand('gpumpiDoctor.showHostReport', 'node-3'), undefined);
		assert.match(doctor.lastCommandError() ?? '', /node-3 has not been inspected in this window yet/);
		await vscode.commands.executeCommand('gpumpiDoctor.removeHost', 'node-3');
	});

	it('Test Connection names the reason ssh gives (refused, name not resolved) and marks the row', async () => {
		const doctor = await api();
		const refused = await vscode.commands.executeCommand<{ ok: boolean; kind?: string; error?: string }>('gpumpiDoctor.testConnection', 'cluster-a');
		assert.equal(refused?.ok, false, JSON.stringify(refused));
		assert.equal(refused?.kind, 'refused');
		await vscode.commands.executeCommand('gpumpiDoctor.addHost', { name: 'nowhere', sshHost: 'nohost.invalid' });
		const unresolved = await vscode.commands.executeCommand<{ ok: boolean; kind?: string; error?: string }>('gpumpiDoctor.testConnection', 'nowhere');
		assert.equal(unresolved?.kind, 'name-not-resolved', JSON.stringify(unresolved));
		assert.match(unresolved?.error ?? '', /Could not resolve hostname nohost\.invalid/);
		assert.match(doctor.hostsView().find(r => r.label === 'nowhere')?.description ?? '', /^unreachable: host name not resolved/);
		const report = await vscode.commands.executeCommand<Report | undefined>('gpumpiDoctor.inspectHost', 'nowhere');
		assert.deepEqual(report?.findings.map(f => f.id), ['host-unreachable']);
		assert.doesNotMatch(JSON.stringify(report?.findings), /mpi-not-found|No MPI found/);
		await vscode.commands.executeCommand('gpumpiDoctor.removeHost', 'nowhere');
	});

	it('an invalid or unknown host name is refused, never run', async () => {
		const doctor = await api();
		assert.equal(await vscode.commands.executeCommand('gpumpiDoctor.inspectHost', 'evil'), undefined);
		assert.match(doctor.lastCommandError() ?? '', /host evil is not used because its setting is invalid: .*starts with "-"/);
		assert.equal(fs.existsSync(PWNED), false);
	});

	it('the reproducers refuse an invalid host entry and name an unreachable one, never running anything', async () => {
		const doctor = await api();
		const opts = { memory: 'host', size: '1M', variants: ['direct'], presets: [], baseline: true };
		assert.equal(await vscode.commands.executeCommand('gpumpiDoctor.reproIpc', { ...opts, host: 'evil' }), undefined);
		assert.match(doctor.lastCommandError() ?? '', /host evil is not used because its setting is invalid/);
		assert.equal(fs.existsSync(PWNED), false);
		const started = Date.now();
		assert.equal(await vscode.commands.executeCommand('gpumpiDoctor.reproFallback', { memory: 'host', sizes: '1M', presets: [], baseline: true, host: 'cluster-a' }), undefined);
		assert.match(doctor.lastCommandError() ?? '', /cannot reach cluster-a \(ssh:\/\/root@127\.0\.0\.1:1\): .*refused/);
		assert.ok(Date.now() - started < 60_000);
		assert.equal(await vscode.commands.executeCommand('gpumpiDoctor.reproIpc', { ...opts, host: 42 }), undefined);
		assert.match(doctor.lastCommandError() ?? '', /host must be a host name/);
	});

	it('edit keeps the keys it does not ask for (mpirun, Slurm launcher options)', async () => {
		const doctor = await api();
		await vscode.commands.executeCommand('gpumpiDoctor.addHost', { name: 'slurm-1', sshHost: 'login1', mpirun: '/opt/ompi/bin/mpirun', launcher: 'srun', srunArgs: ['-p', 'gpu', '-N', '2'] });
		await vscode.commands.executeCommand('gpumpiDoctor.editHost', 'slurm-1', { name: 'slurm-1', sshHost: 'login2' });
		const stored = (cfg().get<unknown[]>('hosts') ?? []).find(e => (e as { name?: string }).name === 'slurm-1');
		assert.deepEqual(stored, { name: 'slurm-1', sshHost: 'login2', mpirun: '/opt/ompi/bin/mpirun', launcher: 'srun', srunArgs: ['-p', 'gpu', '-N', '2'] });
		assert.equal(await vscode.commands.executeCommand('gpumpiDoctor.editHost', 'slurm-1', { name: 'slurm-1', sshHost: 'login2', srunArgs: 'x' }), undefined);
		assert.match(doctor.lastCommandError() ?? '', /srunArgs must be an array/);
		await vscode.commands.executeCommand('gpumpiDoctor.removeHost', 'slurm-1');
	});
});
