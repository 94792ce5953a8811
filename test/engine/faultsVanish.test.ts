/**
 * A remote host torn down during the engine's deploy (issue 15), real: as faultsReboot.test.ts, `inspect --host host-a`
 * with a setup line that makes the engine's cache key new, so the deploy copies and builds on a namespace host with
 * real sshd (test/hosts/netnsHosts.ts); once the build's compiler runs there, the host is not just crashed but torn
 * down (netnsHosts `vanish`): its veth removed first, so no FIN or RST ever reaches this machine and its address is
 * simply gone (a machine that lost power or its network), then its processes killed and `ip netns del`. The open ssh
 * connection then hears nothing at all: only ssh's own keep-alive (ServerAliveInterval × ServerAliveCountMax) can end
 * it, and a reconnect meets ConnectTimeout. Asserted: the CLI ends (no hang) saying the host was lost during the
 * deploy, the report says the host cannot be reached (and nothing about a host nobody looked at), nothing of the run
 * is left here (processes the CLI started, ssh clients, a ControlMaster), the cut build is not marked built.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CliRun, procTable } from './cliProcess';
import { deployFaultLab, sleep } from './faultHelpers';

const BUILD_PROPER = /^(\S*\/)?(cc1(plus)?|g?make|cmake --build)( |$)/;

describe('faults: the ssh host torn down during the engine deploy (namespace and veth deleted, real sshd)', function () {
	this.timeout(300_000);
	const fl = deployFaultLab('gpumpi-faults-vanish-');

	it('torn down mid-build: ends within ssh\'s keep-alive + connect timeout with "lost the connection … during the engine deploy", host-unreachable, nothing left', async () => {
		const run = new CliRun(['inspect', '--json', '--verbose', '--host', 'host-a', '--ssh-config', fl.lab.sshConfig, '--mpirun', 'mpirun.openmpi',
			'--connect-timeout', '3', '--setup', fl.setupLine], fl.lab.dir);
		let seen: string[] = [];
		for (let i = 0; i < 1200 && seen.length === 0 && run.child.exitCode === null; i++) { await sleep(50); seen = fl.lab.processes('host-a').filter(l => BUILD_PROPER.test(l)); }
		assert.ok(seen.length > 0, `the build never started on host-a:\n${run.stderr}`);
		fl.lab.vanish('host-a');
		const t0 = Date.now();
		const code = await Promise.race([run.closed, sleep(150_000).then(() => 'hung' as const)]);
		const took = Date.now() - t0;
		const said = run.stderr.split('\n').filter(l => !/^\s*$/.test(l) && !/^\[/.test(l));
		console.log(`  [host torn down mid-deploy] while "${seen[0].slice(0, 60)}"; exit ${code} after ${took} ms; ${said.find(l => /lost the connection/.test(l))?.slice(0, 500) ?? '(no deploy error)'}`);
		if (code === 'hung') { run.child.kill('SIGKILL'); }
		assert.notEqual(code, 'hung', `the CLI did not end within 150 s:\n${run.stderr.slice(-3000)}`);
		assert.equal(code, 0, 'inspect reports an unreachable host as a finding (exit 0)');
		assert.match(run.stderr, /gpumpi-doctor: lost the connection to host-a during the engine deploy \((copying|configuring with cmake|building)\b[^)]*\): .*nothing was marked built there/);
		const report = JSON.parse(run.stdout) as { findings: Array<{ id: string; message: string }> };
		assert.deepEqual(report.findings.map(f => f.id), ['host-unreachable'], report.findings.map(f => `${f.id}: ${f.message}`).join('; ').slice(0, 600));
		const fresh = fl.freshDirs();
		for (const d of fresh) { assert.equal(fs.existsSync(path.join(fl.cache, d, 'built.ok')), false, `a cut build was marked built: ${d}`); }
		assert.deepEqual(await run.left(), [], 'processes the CLI started are still running here');
		const ssh = procTable().filter(p => p.argv.includes(fl.lab.dir) && /(^|\/)ssh /.test(p.argv));
		assert.deepEqual(ssh.map(p => p.argv), [], 'ssh clients (or a ControlMaster) of the cut run are left');
	});
});
