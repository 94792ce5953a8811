/**
 * Ctrl-C of the CLI in every phase (issue 15), all real: `node bin/gpumpi-doctor.js …` started as its own process
 * group (as a shell starts a foreground job) and SIGINT sent to that whole group, as a terminal does on Ctrl-C, at
 * the moment a phase is seen running: launch (mpirun exists, not all ranks yet), inspect (a tool of the inspection
 * runs), collect (its inspection's tools run; an earlier bundle at --out), deploy (the engine's cmake build runs on the
 * namespace host host-a, reached over real sshd). Asserted each time: exit 130 and an "interrupted" line, no result on
 * stdout and no output file (or the earlier one byte-for-byte), and no process left: every process the CLI started
 * (its descendants, recorded while it ran, by pid and start time) and, for deploy, nothing of the build on host-a.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { findEngine } from '../../extension/core/native';
import { CliRun, filesOf, procTable } from './cliProcess';
import { deployFaultLab, sleep } from './faultHelpers';

/** The engine's configure and build on the host (not the toolchain's `cmake --version` / `gcc --version` before them). */
const BUILD_STEP = /^(\S*\/)?(cmake (-S|--build)|g?make |cc1(plus)? )/;
/** Any program of the toolchain: none may be left after the interrupt. */
const TOOLCHAIN = /^(\S*\/)?(cmake|g?make|cc1(plus)?|c\+\+|g\+\+|gcc|cc|as|ld|collect2)( |$)/;

describe('faults: Ctrl-C (SIGINT to the process group) of the CLI in every phase', function () {
	this.timeout(120_000);
	let dir = '';
	let engine = '';
	before(() => {
		dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-faults-int-'));
		engine = findEngine('openmpi', {}).path ?? '';
		assert.ok(engine, 'the Open MPI engine is not built');
	});
	after(() => { if (dir) { fs.rmSync(dir, { recursive: true, force: true }); } });

	it('launch: SIGINT once mpirun exists, before its 4 ranks all run: exit 130, no result, no --out file, nothing left', async () => {
		const out = path.join(dir, 'launch.json');
		const run = new CliRun(['map', '--mpirun', 'mpirun.openmpi', '--engine', engine, '--np', '4', '--memory', 'host',
			'--large', '8M', '--iters', '400', '--loopback', '--out', out, '--json'], dir);
		const mpirun = await run.waitFor(p => /(^|\/)mpirun(\.openmpi)? /.test(p.argv));
		assert.ok(mpirun, `mpirun never started:\n${run.stderr}`);
		const ranks = run.descendants().filter(p => p.argv.startsWith(`${engine} map`)).length;
		run.interrupt();
		const code = await run.closed;
		console.log(`  [ctrl-c launch] ${ranks} of 4 ranks running at the SIGINT; exit ${code}; stderr: ${run.stderr.trim().split('\n').slice(-3).join(' | ')}`);
		assert.equal(code, 130, run.stderr);
		assert.match(run.stderr, /interrupted/);
		assert.equal(run.stdout, '', 'an interrupted run printed a result');
		assert.equal(fs.existsSync(out), false, 'an interrupted run wrote its --out file');
		assert.deepEqual(await run.left(), [], 'processes the CLI started are still running');
	});

	it('inspect: SIGINT while a tool of the inspection runs: exit 130, nothing on stdout, no HTML report, nothing left', async () => {
		const html = path.join(dir, 'report.html');
		const run = new CliRun(['inspect', '--json', '--html', html, '--ranks', '2', '--mpirun', 'mpirun.openmpi', '--engine', engine], dir);
		const tool = await run.waitFor(p => /ompi_info|ucx_info|mpirun|mpichversion|nvidia-smi|gpumpi /.test(p.argv));
		assert.ok(tool, `no tool of the inspection was seen running:\n${run.stderr}`);
		run.interrupt();
		const code = await run.closed;
		console.log(`  [ctrl-c inspect] SIGINT while "${tool!.argv.slice(0, 80)}" ran; exit ${code}; stderr: ${run.stderr.trim().split('\n').slice(-2).join(' | ')}`);
		assert.equal(code, 130, run.stderr);
		assert.match(run.stderr, /interrupted/);
		assert.equal(run.stdout, '', 'an interrupted inspection printed a report');
		assert.equal(fs.existsSync(html), false, 'an interrupted inspection wrote its HTML report');
		assert.deepEqual(await run.left(), [], 'processes the CLI started are still running');
	});

	it('collect: SIGINT while its inspection runs: exit 130, no bundle written, the earlier bundle at --out byte-for-byte intact', async () => {
		const bundle = path.join(dir, 'bundle');
		const first = new CliRun(['collect', '--out', bundle], dir);
		assert.equal(await first.closed, 0, first.stderr);
		const before = filesOf(bundle);
		assert.ok(Object.keys(before).includes('bundle.json'), 'the first collect wrote no bundle');
		const run = new CliRun(['collect', '--out', bundle], dir);
		const tool = await run.waitFor(p => /ompi_info|ucx_info|mpirun|mpichversion|nvidia-smi|gpumpi /.test(p.argv));
		assert.ok(tool, `no tool of the inspection was seen running:\n${run.stderr}`);
		run.interrupt();
		const code = await run.closed;
		console.log(`  [ctrl-c collect] SIGINT while "${tool!.argv.slice(0, 80)}" ran; exit ${code}; stderr: ${run.stderr.trim().split('\n').slice(-2).join(' | ')}`);
		assert.equal(code, 130, run.stderr);
		assert.match(run.stderr, /interrupted; .*no bundle was written/);
		assert.equal(run.stdout, '');
		assert.deepEqual(filesOf(bundle), before, 'the earlier bundle was changed');
		assert.deepEqual(fs.readdirSync(dir).filter(n => n.startsWith('.bundle')), [], 'a temporary bundle directory was left');
		assert.deepEqual(await run.left(), [], 'processes the CLI started are still running');
	});

	describe('deploy to an ssh host (namespace host with real sshd)', function () {
		const fl = deployFaultLab('gpumpi-faults-cmake-');

		it('SIGINT while the engine builds on host-a: exit 130, the build stopped there, no engine marked built, nothing left here or there', async () => {
			const run = new CliRun(['inspect', '--json', '--host', 'host-a', '--ssh-config', fl.lab.sshConfig, '--mpirun', 'mpirun.openmpi',
				'--setup', fl.setupLine], fl.lab.dir);
			const building = (): string[] => fl.lab.processes('host-a').filter(l => BUILD_STEP.test(l));
			let seen: string[] = [];
			for (let i = 0; i < 600 && seen.length === 0 && run.child.exitCode === null; i++) { await sleep(50); seen = building(); }
			assert.ok(seen.length > 0, `the build never started on host-a:\n${run.stderr}\n${fl.lab.processes('host-a').join('\n')}`);
			const t0 = Date.now();
			run.interrupt();
			const code = await run.closed;
			const took = Date.now() - t0;
			console.log(`  [ctrl-c deploy] SIGINT while "${seen[0].slice(0, 90)}" ran on host-a; exit ${code} after ${took} ms; stderr: ${run.stderr.trim().split('\n').slice(-3).join(' | ')}`);
			assert.equal(code, 130, run.stderr);
			assert.match(run.stderr, /interrupted/);
			assert.ok(took < 30_000, `stopping took ${took} ms`);
			assert.equal(run.stdout, '', 'an interrupted deploy printed a report');
			const toolchain = (): string[] => fl.lab.processes('host-a').filter(l => TOOLCHAIN.test(l));
			let left = toolchain();
			for (let i = 0; i < 25 && left.length > 0; i++) { await sleep(200); left = toolchain(); }
			assert.deepEqual(left, [], `the build still runs on host-a:\n  ${fl.lab.processTable('host-a').join('\n  ')}`);
			const fresh = fl.freshDirs();
			assert.equal(fresh.length, 1, `expected one new engine cache directory, found ${JSON.stringify(fresh)}`);
			assert.equal(fs.existsSync(path.join(fl.cache, fresh[0], 'built.ok')), false, 'a cut build was marked built');
			assert.deepEqual(await run.left(), [], 'processes the CLI started are still running here');
			const ssh = procTable().filter(p => p.argv.includes(fl.lab.dir) && /(^|\/)ssh /.test(p.argv));
			assert.deepEqual(ssh.map(p => p.argv), [], 'ssh clients (or a ControlMaster) of the interrupted run are left');
		});

		it('map --host host-a, SIGINT while the engine builds there (the launch target is being made): exit 130, nothing launched, nothing left', async () => {
			const out = path.join(fl.lab.dir, 'map.json');
			fs.writeFileSync(out, '{"earlier":true}\n');
			const run = new CliRun(['map', '--host', 'host-a', '--ssh-config', fl.lab.sshConfig, '--mpirun', 'mpirun.openmpi', '--np', '2',
				'--setup', fl.setupLine, '--out', out, '--json'], fl.lab.dir);
			const building = (): string[] => fl.lab.processes('host-a').filter(l => BUILD_STEP.test(l));
			let seen: string[] = [];
			for (let i = 0; i < 600 && seen.length === 0 && run.child.exitCode === null; i++) { await sleep(50); seen = building(); }
			assert.ok(seen.length > 0, `the build never started on host-a:\n${run.stderr}`);
			run.interrupt();
			const code = await run.closed;
			console.log(`  [ctrl-c deploy, map] exit ${code}; stderr: ${run.stderr.trim().split('\n').slice(-2).join(' | ')}`);
			assert.equal(code, 130, run.stderr);
			assert.match(run.stderr, /interrupted before the run started; nothing was launched/);
			assert.equal(run.stdout, '');
			assert.equal(fs.readFileSync(out, 'utf8'), '{"earlier":true}\n', 'the earlier --out file was changed');
			const toolchain = (): string[] => fl.lab.processes('host-a').filter(l => TOOLCHAIN.test(l));
			let left = toolchain();
			for (let i = 0; i < 25 && left.length > 0; i++) { await sleep(200); left = toolchain(); }
			assert.deepEqual(left, [], `the build still runs on host-a:\n  ${fl.lab.processTable('host-a').join('\n  ')}`);
			assert.deepEqual(await run.left(), [], 'processes the CLI started are still running here');
		});
	});
});
