/**
 * The product on a real Slurm: Debian's slurmctld + slurmd + munge on network-namespace hosts (test/hosts/slurmLab.ts;
 * host-a is the login node, host-b and host-c the compute nodes). Everything goes through the CLI or the resolver the
 * VS Code commands use, over the real ssh client to host-a, with `--srun`: inspect (engine ranks on the compute
 * nodes), the reproducers and the map under srun with the PMI plugin chosen by flavour, a wrong plugin caught as
 * "singletons", and cancel/timeout ending the job (scancel by name, squeue empty, no process on any host).
 * Namespace hosts share this file system, so the engines built here are valid paths there (--engine).
 */
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { main } from '../../extension/cli/gpumpiDoctor';
import { hostSetting } from '../../extension/core/hosts/hostSettings';
import { resolveLaunchTarget } from '../../extension/core/hosts/launchTarget';
import { findEngine } from '../../extension/core/native';
import { runIpcVariants } from '../../extension/core/repro/ipcRunner';
import type { MapDocument } from '../../extension/shared/mapSchema';
import type { Report } from '../../extension/shared/report';
import type { ReproFallbackReport, ReproIpcReport } from '../../extension/shared/reproSchema';
import { createSlurmLab, slurmUnavailable, type SlurmLab } from '../hosts/slurmLab';

const sleep = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms));

describe('the product on a real Slurm (srun through ssh to the login node)', function () {
	this.timeout(120_000);
	let s: SlurmLab;
	let ompi = '';
	let mpich = '';

	const cli = async (args: string[]): Promise<{ code: number; out: string; err: string }> => {
		let out = '';
		let err = '';
		const io = { stdout: (t: string) => { out += t; }, stderr: (t: string) => { err += t; }, cwd: s.dir, signal: new AbortController().signal };
		const code = await main(args, io);
		return { code, out, err };
	};
	const onLogin = (): string[] => ['--host', s.controller, '--ssh-config', s.lab.sshConfig];

	before(async function () {
		this.timeout(90_000);
		const why = slurmUnavailable();
		if (why) { throw new Error(`Slurm lab cannot run here: ${why}`); }
		ompi = findEngine('openmpi', {}).path ?? '';
		mpich = findEngine('mpich', {}).path ?? '';
		assert.ok(ompi && mpich, 'the Open MPI and MPICH engines are not built (node scripts/buildNative.mjs --all-mpis)');
		s = await createSlurmLab({ computeHosts: 2 });
	});

	after(() => { s?.teardown(); });

	it('inspect --srun runs the engine on the compute nodes (4 ranks, 2 per node) and records the srun command', async () => {
		const r = await cli(['inspect', ...onLogin(), '--mpirun', 'mpirun.openmpi', '--engine', ompi, '--ranks', '4', '--srun', '--srun-arg', '-N2', '--json']);
		assert.equal(r.code, 0, r.err);
		const report = JSON.parse(r.out) as Report;
		const eng = report.raw.find(x => x.id === 'engine');
		assert.equal(eng?.exitCode, 0, `${eng?.error} ${eng?.stderr.slice(-800)}`);
		assert.deepEqual(eng?.command.slice(0, 4), ['srun', `--job-name=${eng?.command[1].slice('--job-name='.length)}`, '--kill-on-bad-exit=1', '--mpi=pmix']);
		assert.ok(report.engine, 'engine document parsed');
		assert.equal(report.engine.world_size, 4);
		assert.deepEqual(report.engine.ranks.map(x => x.host).sort(), ['host-b', 'host-b', 'host-c', 'host-c']);
		assert.match(report.raw.find(x => x.id === 'identity')?.stdout ?? '', /hostname=host-a/, 'the tools ran on the login node');
	});

	it('MPICH: pmi2 by flavour gives one job of 4; a wrong plugin (--srun-mpi none) is caught as 4 singletons', async () => {
		const good = await cli(['inspect', ...onLogin(), '--mpirun', 'mpirun.mpich', '--engine', mpich, '--ranks', '4', '--srun', '--srun-arg', '-N2', '--json']);
		assert.equal(good.code, 0, good.err);
		const g = JSON.parse(good.out) as Report;
		assert.ok(g.raw.find(x => x.id === 'engine')?.command.includes('--mpi=pmi2'));
		assert.equal(g.engine?.world_size, 4, g.raw.find(x => x.id === 'engine')?.stderr.slice(-800));
		const bad = await cli(['inspect', ...onLogin(), '--mpirun', 'mpirun.mpich', '--engine', mpich, '--ranks', '4', '--srun-mpi', 'none', '--srun-arg', '-N2', '--json']);
		assert.equal(bad.code, 0, bad.err);
		const b = JSON.parse(bad.out) as Report;
		const notes = b.raw.find(x => x.id === 'engine')?.notes ?? [];
		assert.ok(notes.some(n => /4 separate MPI jobs of world size 1 started instead of one job of 4 ranks/.test(n)), notes.join(' | '));
	});

	it('repro ipc --srun (Open MPI): the report\'s layout on two compute nodes, correct, with the srun command line', async () => {
		const r = await cli(['repro', 'ipc', ...onLogin(), '--mpirun', 'mpirun.openmpi', '--engine', ompi, '--srun', '--srun-arg', '-N2',
			'--memory', 'host', '--size', '1M', '--variants', 'direct,bounce', '--trials', '2', '--json']);
		assert.equal(r.code, 0, r.err);
		const rep = JSON.parse(r.out) as ReproIpcReport;
		const runs = rep.variants.flatMap(v => v.runs);
		assert.deepEqual(runs.map(v => v.outcome), ['correct', 'correct', 'correct', 'correct'], runs.map(v => `${v.detail} ${v.evidence.slice(0, 4).join(' | ')}`).join('\n'));
		assert.deepEqual(runs[0].ranks.map(x => x.host), ['host-b', 'host-b', 'host-c', 'host-c']);
		assert.equal(runs[0].command[0], 'env', 'evidence switches travel as environment');
		assert.ok(runs[0].command.includes('OMPI_MCA_btl_base_verbose=100') && runs[0].command.includes('srun'));
	});

	it('repro fallback --srun (MPICH, pmi2): every mode runs across the two nodes', async () => {
		const r = await cli(['repro', 'fallback', ...onLogin(), '--mpirun', 'mpirun.mpich', '--engine', mpich, '--srun', '--srun-arg', '-N2',
			'--memory', 'host', '--sizes', '1M', '--iters', '1', '--trials', '2', '--json']);
		assert.equal(r.code, 0, r.err);
		const rep = JSON.parse(r.out) as ReproFallbackReport;
		assert.deepEqual(rep.runs.map(x => `${x.trial}:${x.modes.join(',')}:${x.outcome}`), [1, 2].flatMap(t => ['mpi', 'staged', 'host', 'lib-auto', 'lib-staged', 'lib-shm'].map(m => `${t}:${m}:ok`)), rep.runs.map(x => x.detail).join(' | '));
		// lib-shm cannot reach a peer on another node: a skipped row with its reason, not a failed run.
		const shm = rep.results.filter(x => x.mode === 'lib-shm');
		assert.ok(shm.length > 0 && shm.every(x => x.status === 'skipped' && (x.skipped_reason ?? '').length > 0), JSON.stringify(shm));
		assert.ok(rep.runs[0].command.includes('--mpi=pmi2'));
	});

	it('map --srun (Open MPI): 4 ranks on two nodes, shared memory inside a node, network between', async () => {
		const r = await cli(['map', ...onLogin(), '--mpirun', 'mpirun.openmpi', '--engine', ompi, '--srun', '--srun-arg', '-N2', '--np', '4',
			'--memory', 'host', '--large', '1M', '--iters', '2', '--json']);
		assert.equal(r.code, 0, r.err);
		const doc = JSON.parse(r.out) as MapDocument;
		assert.equal(doc.pairs.length, 6);
		for (const p of doc.pairs) {
			assert.equal(p.channel, p.same_host ? 'shared_memory' : 'network', `${p.a}-${p.b}: ${p.evidence.join(' | ')}`);
		}
		assert.deepEqual(doc.runner?.command.slice(doc.runner.command.indexOf('srun'), doc.runner.command.indexOf('srun') + 4).slice(2), ['--kill-on-bad-exit=1', '--mpi=pmix']);
	});

	for (const how of ['cancel', 'timeout'] as const) {
		it(`${how} of a hung srun job (a host setting with launcher srun): scancel by name, squeue empty, no process on any host`, async () => {
			const target = await resolveLaunchTarget({
				host: hostSetting({ name: 'slurm', sshHost: s.controller, mpirun: 'mpirun.mpich', launcher: 'srun', srunArgs: ['-N2'] }),
				mpirun: '', flavor: null, engine: mpich, srun: null, hostList: null, np: 4,
				remote: { configFile: s.lab.sshConfig, controlDir: path.join(s.dir, `cm-${how}`) },
			});
			assert.ok(target.ok, target.ok ? '' : target.error);
			try {
				const abort = new AbortController();
				const running = runIpcVariants({
					engine: mpich, host: target.host, spec: target.spec, configs: [], variants: ['direct'], sizeBytes: 1 << 20, memory: 'host',
					timeoutMs: how === 'timeout' ? 12_000 : 120_000, engineArgs: ['--inject', 'hang'], signal: abort.signal, trials: 1,
				});
				if (how === 'cancel') {
					// Cancel after MPI_Init (the ranks exist for 2 s): a cancel while pmix/pmi2 is still starting can leave a
					// slurmstepd behind in Slurm 22.05 (seen by test/engine/slurmLab.test.ts), which is Slurm's, not ours.
					let ranks = 0;
					for (let i = 0; i < 100 && ranks < 4; i++) { await sleep(200); ranks = s.jobProcesses().filter(p => p.cmd.startsWith(`${mpich} repro ipc`)).length; }
					assert.equal(ranks, 4, `ranks never started: ${JSON.stringify(s.jobProcesses())}`);
					await sleep(2000);
					abort.abort();
				}
				const rep = await running;
				const v = how === 'cancel' ? rep.cut! : rep.variants[0]?.runs[0];
				if (how === 'timeout') { assert.equal(v?.outcome, 'timed_out', JSON.stringify(v)); } else { assert.notEqual(v?.outcome, 'correct'); }
				assert.ok(v.evidence.some(l => /^scancel --name=gpumpi-[0-9a-f]{8}: done$/.test(l)), v.evidence.join(' | '));
				assert.ok(v.evidence.some(l => /^job gpumpi-[0-9a-f]{8} gone from squeue after \d+ ms$/.test(l)), v.evidence.join(' | '));
				await s.waitClean(15_000);
			} finally {
				await target.close();
			}
		});
	}
});
