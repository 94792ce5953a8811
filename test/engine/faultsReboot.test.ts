/**
 * A remote host that "reboots" during the engine's deploy (issue 15), real: `inspect --host host-a` against a namespace
 * host with real sshd (test/hosts/netnsHosts.ts), with a setup line that gives a toolchain never seen before (a cmake
 * of its own first on PATH, as `module load cmake` would), so the deploy copies and builds. Once the build's own
 * programs run on host-a, every process in host-a's namespaces is SIGKILLed, sshd included (what a crash or a reboot
 * does to processes; its files stay, as a disk does). Asserted: the CLI ends (no hang) saying the host was lost during
 * the deploy; nothing of the run is left here (processes it started, ssh clients, a ControlMaster); the cut build is
 * not marked built. Then sshd is started again (the host is back) and the same command runs: the deploy rebuilds
 * (the half-built engine is not taken for a complete one), the engine runs there, and a third run reuses it.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CliRun, procTable } from './cliProcess';
import { deployFaultLab, sleep } from './faultHelpers';

const BUILDING = /^(\S*\/)?(cmake|g?make|cc1(plus)?|c\+\+|g\+\+|gcc|cc|as|ld|collect2)( |$)/;

describe('faults: the ssh host reboots during the engine deploy (namespace host, real sshd)', function () {
	this.timeout(300_000);
	const fl = deployFaultLab('gpumpi-faults-cmake-');

	const args = (): string[] => ['inspect', '--json', '--verbose', '--host', 'host-a', '--ssh-config', fl.lab.sshConfig, '--mpirun', 'mpirun.openmpi',
		'--connect-timeout', '3', '--setup', fl.setupLine];

	it('killed mid-build: a clear "lost during the deploy" error, nothing left, no engine marked built; back up, the next run rebuilds and works', async () => {
		const run = new CliRun(args(), fl.lab.dir);
		let seen: string[] = [];
		// The build proper (not the toolchain's `gcc --version`): make or a compiler proper, under `cmake --build`.
		for (let i = 0; i < 1200 && seen.length === 0 && run.child.exitCode === null; i++) { await sleep(50); seen = fl.lab.processes('host-a').filter(l => BUILDING.test(l) && /cc1|^(\S*\/)?g?make |cmake --build/.test(l)); }
		assert.ok(seen.length > 0, `the build never started on host-a:\n${run.stderr}`);
		fl.lab.crash('host-a');
		const t0 = Date.now();
		const code = await Promise.race([run.closed, sleep(90_000).then(() => 'hung' as const)]);
		const took = Date.now() - t0;
		const said = run.stderr.split('\n').filter(l => !/^\s*$/.test(l) && !/^\[/.test(l));
		console.log(`  [reboot mid-deploy] crash while "${seen[0].slice(0, 60)}"; exit ${code} after ${took} ms; deploy error: ${said.find(l => /lost the connection/.test(l)) ?? '(none)'}; last: ${said.slice(-2).join(' | ').slice(0, 400)}`);
		assert.notEqual(code, 'hung', `the CLI did not end within 90 s:\n${run.stderr}`);
		assert.equal(code, 0, 'inspect reports an unreachable host as a finding (exit 0)');
		assert.match(run.stderr, /gpumpi-doctor: lost the connection to host-a during the engine deploy \((configuring with cmake|building)\): .*nothing was marked built there/);
		const cut = JSON.parse(run.stdout) as { findings: Array<{ id: string; message: string }> };
		assert.deepEqual(cut.findings.map(f => f.id), ['host-unreachable'], `after the host went away the report should say only that: ${cut.findings.map(f => `${f.id}: ${f.message}`).join('; ').slice(0, 600)}`);
		const fresh = fl.freshDirs();
		assert.equal(fresh.length, 1, `expected one new engine cache directory, found ${JSON.stringify(fresh)}`);
		assert.equal(fs.existsSync(path.join(fl.cache, fresh[0], 'built.ok')), false, 'a cut build was marked built');
		assert.deepEqual(await run.left(), [], 'processes the CLI started are still running here');
		const ssh = procTable().filter(p => p.argv.includes(fl.lab.dir) && /(^|\/)ssh /.test(p.argv));
		assert.deepEqual(ssh.map(p => p.argv), [], 'ssh clients (or a ControlMaster) of the cut run are left');

		await fl.lab.restart('host-a');
		const again = new CliRun(args(), fl.lab.dir);
		const code2 = await again.closed;
		assert.equal(code2, 0, again.stderr);
		assert.match(again.stderr, /Building the engine on host-a/, 'the second run did not rebuild the cut engine');
		const report = JSON.parse(again.stdout) as { raw: Array<{ id: string; exitCode: number | null; command: string[] }> };
		const engineRun = report.raw.find(r => r.id === 'engine');
		assert.ok(engineRun, 'no engine run in the report');
		assert.equal(engineRun.exitCode, 0, JSON.stringify(engineRun).slice(0, 600));
		assert.ok(engineRun.command.some(a => a.startsWith(path.join(fl.cache, fresh[0]))), `the engine that ran is not the rebuilt one: ${engineRun.command.join(' ')}`);
		assert.equal(fs.existsSync(path.join(fl.cache, fresh[0], 'built.ok')), true);
		const third = new CliRun(args(), fl.lab.dir);
		assert.equal(await third.closed, 0, third.stderr);
		assert.doesNotMatch(third.stderr, /Building the engine/, 'a complete engine was rebuilt');
		console.log(`  [reboot mid-deploy] after the restart: rebuilt and ran (exit ${code2}); a third run reused it`);
	});
});
