/**
 * The reproducers, the map and the bundle run on a CHOSEN host, launched from the CLI and from the runners the VS Code
 * commands use: real sshd in network-namespace hosts (test/hosts/netnsHosts.ts), real Open MPI mpirun started on
 * host-a, ranks on host-a and host-b. Also: cancelling a run that spans both hosts leaves no rank on either.
 * Namespace hosts share this machine's file system, so the engine built here is a valid path on them (the deploy
 * path is tested in sshHost.test.ts / modules.test.ts); --engine points at it to keep the suite fast.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { main } from '../../extension/cli/gpumpiDoctor';
import { hostSetting } from '../../extension/core/hosts/hostSettings';
import { resolveLaunchTarget } from '../../extension/core/hosts/launchTarget';
import { findEngine } from '../../extension/core/native';
import { runIpcVariants } from '../../extension/core/repro/ipcRunner';
import type { ReproIpcReport } from '../../extension/shared/reproSchema';
import type { MapDocument } from '../../extension/shared/mapSchema';
import { createNetnsLab, type NetnsLab } from '../hosts/netnsHosts';

const sleep = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms));

describe('reproducers, map and collect on a chosen ssh host (real sshd + Open MPI across namespace hosts)', function () {
	this.timeout(150_000);
	let lab: NetnsLab;
	let engine = '';
	/** Open MPI options that keep its traffic on the lab subnet and let mpirun on host-a start ranks on host-b. */
	let across: string[] = [];

	const cli = async (args: string[]): Promise<{ code: number; out: string; err: string }> => {
		let out = '';
		let err = '';
		const io = { stdout: (t: string) => { out += t; }, stderr: (t: string) => { err += t; }, cwd: lab.dir, signal: new AbortController().signal };
		const code = await main(args, io);
		return { code, out, err };
	};

	before(async function () {
		this.timeout(60_000);
		engine = findEngine('openmpi', {}).path ?? '';
		assert.ok(engine, 'the Open MPI engine is not built (node scripts/buildNative.mjs --all-mpis)');
		lab = await createNetnsLab({ count: 2 });
		across = ['--mca', 'btl_tcp_if_include', lab.subnet, '--mca', 'oob_tcp_if_include', lab.subnet, '--mca', 'plm_rsh_agent', 'ssh'];
	});

	after(function () {
		lab?.teardown();
	});

	it('CLI: repro ipc --host host-a --hosts host-a:2,host-b:2 runs the report\'s 2-node layout from host-a and shows the command', async () => {
		const r = await cli(['repro', 'ipc', '--host', 'host-a', '--ssh-config', lab.sshConfig, '--mpirun', 'mpirun.openmpi', '--engine', engine,
			'--hosts', 'host-a:2,host-b:2', ...across, '--launcher-arg', '-x', '--launcher-arg', 'PATH',
			'--memory', 'host', '--size', '1M', '--variants', 'direct,bounce', '--trials', '2', '--json']);
		assert.equal(r.code, 0, r.err);
		const rep = JSON.parse(r.out) as ReproIpcReport;
		const runs = rep.variants.flatMap(v => v.runs);
		assert.deepEqual(rep.variants.map(v => `${v.class}:${v.trials}`), ['works:2', 'works:2'], JSON.stringify(runs.map(v => [v.detail, v.evidence.slice(0, 5)])));
		assert.deepEqual(runs[0].ranks.map(x => x.host).sort(), ['host-a', 'host-a', 'host-b', 'host-b']);
		const cmd = runs[0].command;
		assert.equal(cmd[0], 'mpirun.openmpi');
		assert.deepEqual(cmd.slice(cmd.indexOf('--host'), cmd.indexOf('--host') + 2), ['--host', 'host-a:2,host-b:2']);
	});

	it('CLI: map --host host-b maps on that host; a wrong --hosts list and a hostile --host are usage errors', async () => {
		const r = await cli(['map', '--host', 'host-b', '--ssh-config', lab.sshConfig, '--mpirun', 'mpirun.openmpi', '--engine', engine,
			'--np', '2', '--memory', 'host', '--large', '1M', '--iters', '2', '--loopback', '--json']);
		assert.equal(r.code, 0, r.err);
		const doc = JSON.parse(r.out) as MapDocument;
		assert.deepEqual(doc.ranks.map(x => x.host), ['host-b', 'host-b']);
		assert.equal(doc.pairs.length, 1);
		assert.equal(doc.pairs[0].status, 'ok');
		const bad = await cli(['map', '--host', 'host-b', '--ssh-config', lab.sshConfig, '--mpirun', 'mpirun.openmpi', '--engine', engine, '--hosts', 'a;reboot']);
		assert.equal(bad.code, 2, bad.err);
		assert.match(bad.err, /--hosts: host list "a;reboot" must look like a:2,b:2/);
		const hostile = await cli(['map', '--host', '-oProxyCommand=touch /tmp/gpumpi-pwned', '--engine', engine]);
		assert.equal(hostile.code, 2);
		assert.match(hostile.err, /--host: the ssh destination .* starts with "-"/);
		assert.equal(fs.existsSync('/tmp/gpumpi-pwned'), false);
	});

	it('CLI: collect --host host-b writes a bundle of host-b that analyze reads back; an unreachable host is an error, not a hang', async () => {
		const out = path.join(lab.dir, 'bundle-b');
		const r = await cli(['collect', '--host', 'host-b', '--ssh-config', lab.sshConfig, '--out', out]);
		assert.equal(r.code, 0, r.err);
		const a = await cli(['analyze', out, '--json']);
		assert.equal(a.code, 0, a.err);
		const report = JSON.parse(a.out) as { summary: { hostname: string }; raw: Array<{ id: string; stdout: string }> };
		assert.equal(report.summary.hostname, 'host-b');
		assert.match(report.raw.find(x => x.id === 'identity')?.stdout ?? '', /hostname=host-b/);
		lab.addSshConfig(`Host gone\n  HostName ${lab.subnet.replace(/\.0\/24$/, '.251')}\n  ConnectTimeout 3\n`);
		const started = Date.now();
		const dead = await cli(['repro', 'ipc', '--host', 'gone', '--ssh-config', lab.sshConfig, '--memory', 'host']);
		assert.equal(dead.code, 3);
		assert.match(dead.err, /cannot reach gone/);
		assert.ok(Date.now() - started < 60_000, `took ${Date.now() - started} ms`);
	});

	it('cancelling a run that spans host-a and host-b leaves no rank on either host', async () => {
		const target = await resolveLaunchTarget({
			host: hostSetting({ name: 'a', sshHost: 'host-a', mpirun: 'mpirun.openmpi' }), mpirun: '', flavor: null, engine, srun: null,
			hostList: 'host-a:2,host-b:2', np: 4, remote: { configFile: lab.sshConfig, controlDir: path.join(lab.dir, 'cm-cancel') },
		});
		assert.ok(target.ok, target.ok ? '' : target.error);
		try {
			assert.equal(target.flavor, 'openmpi', 'flavour detected on host-a');
			const abort = new AbortController();
			const running = runIpcVariants({
				engine, host: target.host, spec: target.spec,
				configs: [{ label: 'across', env: [], mca: [['btl_tcp_if_include', lab.subnet], ['oob_tcp_if_include', lab.subnet], ['plm_rsh_agent', 'ssh']], extraArgs: ['-x', 'PATH'] }],
				variants: ['direct'], sizeBytes: 1 << 20, memory: 'host', timeoutMs: 120_000, engineArgs: ['--inject', 'hang'], signal: abort.signal,
			});
			const ranksOn = (h: string): string[] => lab.processes(h).filter(l => l.startsWith(`${engine} repro ipc`));
			let seen = 0;
			for (let i = 0; i < 100 && seen < 4; i++) { await sleep(200); seen = ranksOn('host-a').length + ranksOn('host-b').length; }
			assert.equal(seen, 4, 'the 4 ranks never started on the two hosts');
			await sleep(1000);
			const before = ['host-a', 'host-b'].map(h => `${h}:\n  pid ppid pgid sid command\n  ${lab.processTable(h).join('\n  ')}`).join('\n');
			if (process.env.GPUMPI_TEST_TRACE === '1') { console.log(before); }
			const t0 = Date.now();
			abort.abort();
			const rep = await running;
			assert.equal(rep.variants.length, 0, 'the cut trial is not counted');
			assert.equal(rep.partial, true);
			assert.notEqual(rep.cut?.outcome, 'correct');
			// The result itself says what the stop ended and that it checked the session afterwards.
			assert.ok(rep.cut?.evidence.some(e => /^stopped remote session \d+ on a .*afterwards none of it is left/.test(e)),
				`the cleanup check is part of the result: ${JSON.stringify(rep.cut?.evidence.slice(0, 4))}`);
			let left = [...ranksOn('host-a'), ...ranksOn('host-b')];
			for (let i = 0; i < 50 && left.length > 0; i++) { await sleep(200); left = [...ranksOn('host-a'), ...ranksOn('host-b')]; }
			const after = (): string => ['host-a', 'host-b'].map(h => `${h}:\n  ${lab.processTable(h).join('\n  ')}`).join('\n');
			assert.deepEqual(left, [], `ranks survived the cancel; before the cancel:\n${before}\nafter:\n${after()}`);
			const orted = [...lab.processes('host-a'), ...lab.processes('host-b')].filter(l => /orted|mpirun/.test(l));
			assert.deepEqual(orted, [], `launcher daemons survived the cancel; before the cancel:\n${before}\nafter:\n${after()}`);
			assert.ok(Date.now() - t0 < 30_000, `cleanup took ${Date.now() - t0} ms`);
		} finally {
			await target.close();
		}
	});

	it('a host without MPI on its PATH (as before `module load`): inspect says "No MPI found", repro and map say why they cannot run', async function () {
		// The setup line puts a bin folder first on PATH that has every /usr/bin program except the MPI ones, and drops
		// /usr/bin: what a cluster login node looks like before its MPI module is loaded. Built here, for real.
		const bin = path.join(lab.dir, 'no-mpi-bin');
		fs.mkdirSync(bin);
		for (const f of fs.readdirSync('/usr/bin')) {
			if (/mpi|ompi|orte|hydra|oshmem|opal|shmem/i.test(f)) { continue; }
			fs.symlinkSync(path.join('/usr/bin', f), path.join(bin, f));
		}
		const setup = `export PATH=${bin}:/usr/sbin:/sbin`;
		const inspect = await cli(['inspect', '--host', 'host-b', '--ssh-config', lab.sshConfig, '--setup', setup, '--engine', engine, '--json']);
		assert.equal(inspect.code, 0, inspect.err);
		const report = JSON.parse(inspect.out) as { findings: Array<{ id: string; title: string; message: string; evidence: unknown[] }> };
		assert.ok(report.findings.some(f => f.id === 'mpi-not-found'), `findings: ${report.findings.map(f => f.id).join(', ')}`);
		// What was not there is one finding (the engine given, but no mpirun to launch it), not a parse problem each.
		assert.deepEqual(report.findings.filter(f => f.id === 'parse-problem' && /ompi_info|mpirun|engine/.test(f.title)).map(f => f.title), []);
		const absent = report.findings.filter(f => f.id === 'tools-not-installed');
		assert.equal(absent.length, 1, `findings: ${report.findings.map(f => f.id).join(', ')}`);
		assert.match(absent[0].title, /^Not installed: ompi_info, mpirun, .*the gpumpi engine$/);
		assert.match(absent[0].message, /the gpumpi engine \(mpirun not found on PATH\)/);
		const repro = await cli(['repro', 'ipc', '--host', 'host-b', '--ssh-config', lab.sshConfig, '--setup', setup, '--engine', engine, '--memory', 'host']);
		assert.equal(repro.code, 3);
		assert.match(repro.err, /cannot tell whether mpirun on host-b is Open MPI or MPICH \(is it on PATH after the setup line\?/);
		const deploy = await cli(['map', '--host', 'host-b', '--ssh-config', lab.sshConfig, '--setup', setup, '--flavor', 'openmpi']);
		assert.equal(deploy.code, 3);
		assert.match(deploy.err, /mpicc not found on host-b \(after its setup line\): the engine is built there with cmake and mpicc/);
	});
});
