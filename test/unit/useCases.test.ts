/**
 * The one core function per use case that the CLI and VS Code both call (core/guard/guardUseCase.ts,
 * core/repro/reproUseCase.ts, core/map/mapUseCase.ts): what each decides before and around the run, the same for
 * both front ends: the guard library (beside the engine, built on an ssh host whose engine was deployed there, never
 * for a library given by path), STAGE, a launch the launcher would refuse (nothing is launched), loopback, and one
 * fallback report per configuration.
 *
 * The host is a recording stand-in (the unit tier launches nothing): it answers `mpirun --version` with the real
 * captured Debian 12 text, `mktemp -d` with a directory name, a listing per directory, and fails every launch. The
 * real runs are the engine tier's (guardCli.test.ts, repro.test.ts, map.test.ts through the CLI; remoteLaunch.test.ts
 * on an ssh host).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Host, HostRunOptions } from '../../extension/core/host';
import type { ExecuteResult } from '../../extension/core/proc';
import { defaultSpec, type LaunchConfig, type LaunchSpec, type MpiFlavor } from '../../extension/core/launch/launchSpec';
import { runGuardUseCase, type GuardUseCaseRequest } from '../../extension/core/guard/guardUseCase';
import { runReproUseCase } from '../../extension/core/repro/reproUseCase';
import { runMapUseCase } from '../../extension/core/map/mapUseCase';
import { DEFAULT_MAP_OPTIONS } from '../../extension/core/map/mapRunner';

const VERSION = fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures', 'tools', 'debian12-cpu', 'mpirun_version.txt'), 'utf8');

function result(exitCode: number, stdout = ''): ExecuteResult {
	return { exitCode, signal: null, stdout, stderr: '', timedOut: false, durationMs: 1 };
}

/** Records every argv and the environment it got; `dirs` is what listDir answers (changed by `onRun`). */
function recordingHost(kind: 'local' | 'ssh', dirs: Record<string, string[]>, onRun?: (argv: readonly string[]) => void): { host: Host; runs: Array<{ argv: string[]; env?: Record<string, string> }> } {
	const runs: Array<{ argv: string[]; env?: Record<string, string> }> = [];
	const host: Host = {
		ref: { id: kind === 'local' ? 'local' : 'h', label: kind === 'local' ? 'this machine' : 'h', kind },
		async run(argv: readonly string[], o: HostRunOptions) {
			runs.push({ argv: [...argv], ...(o.env ? { env: o.env } : {}) });
			onRun?.(argv);
			if (argv[1] === '--version') { return result(0, VERSION); }
			if (argv[0] === 'mktemp') { return result(0, `${argv[argv.length - 1].replace(/X+$/, 'Ab3dE6gH')}\n`); }
			if (['rm', 'cmake', 'scancel', 'squeue'].includes(argv[0])) { return result(0); }
			return result(1);
		},
		async readFile() { return { ok: false, error: 'none', notFound: true }; },
		async env() { return {}; },
		async which() { return null; },
		async listDir(p: string) { return dirs[p] ?? null; },
		async realpath(p: string) { return p; },
		async identity() { return { uid: 1000, user: 'u', hostname: 'h' }; },
		async cpuCount() { return 4; },
	};
	return { host, runs };
}

function target(host: Host, flavor: MpiFlavor, opts: { engineDeployed?: boolean; spec?: Partial<LaunchSpec>; np?: number } = {}) {
	return { host, label: host.ref.label, engine: '/opt/e/gpumpi', engineDeployed: opts.engineDeployed ?? false, flavor, spec: { ...defaultSpec(flavor, 'mpirun', opts.np ?? 2), ...opts.spec } };
}

function guardRequest(t: GuardUseCaseRequest['target'], over: Partial<GuardUseCaseRequest> = {}): GuardUseCaseRequest {
	return { target: t, command: ['./app', 'x'], np: 2, mode: 'report', stage: false, env: [], guardLib: null, reportParent: null, timeoutMs: 10_000, guardOptions: ['--np', '2'], ...over };
}

const LIB = '/opt/e/libgpumpi_guard.so';
const launches = (runs: Array<{ argv: string[] }>): string[][] => runs.map(r => r.argv).filter(a => a.includes('./app'));

describe('use cases: one core function each for the CLI and VS Code', () => {
	describe('guard (core/guard/guardUseCase.ts)', () => {
		it('no guard library beside the engine: an error naming the path, nothing built, nothing launched', async () => {
			const { host, runs } = recordingHost('local', { '/opt/e': ['gpumpi'] });
			const r = await runGuardUseCase(guardRequest(target(host, 'openmpi')));
			assert.deepEqual(r, { ok: false, refused: false, error: `no guard library at ${LIB} on this machine (build it: node scripts/ensure.mjs --all-mpis, or give --guard-lib)` });
			assert.deepEqual(runs, []);
		});

		it('an engine this product deployed on an ssh host: the guard is built in its build folder first, then the program runs with it', async () => {
			const dirs: Record<string, string[]> = { '/opt/e': ['gpumpi'] };
			const { host, runs } = recordingHost('ssh', dirs, argv => { if (argv[0] === 'cmake') { dirs['/opt/e'].push('libgpumpi_guard.so'); } });
			const progress: string[] = [];
			const r = await runGuardUseCase(guardRequest(target(host, 'openmpi', { engineDeployed: true }), { onProgress: l => progress.push(l) }));
			assert.equal(r.ok, true, JSON.stringify(r));
			assert.deepEqual(runs[0].argv, ['cmake', '--build', '/opt/e', '--target', 'gpumpi_guard', '-j', '2']);
			assert.deepEqual(progress, ['building libgpumpi_guard.so on h (cmake --build /opt/e --target gpumpi_guard)']);
			const [launch] = launches(runs);
			assert.ok(launch.includes(`LD_PRELOAD=${LIB}`), `the guard is preloaded: ${launch.join(' ')}`);
			if (r.ok) { assert.equal(r.result.guardLib, LIB); assert.equal(r.result.where, 'h'); assert.equal(r.result.how, 'spec'); }
		});

		it('a library given by path is never built, deployed engine or not', async () => {
			const { host, runs } = recordingHost('ssh', { '/opt/e': ['gpumpi'], '/x': [] });
			const r = await runGuardUseCase(guardRequest(target(host, 'openmpi', { engineDeployed: true }), { guardLib: '/x/libgpumpi_guard.so' }));
			assert.equal(r.ok, false);
			assert.deepEqual(runs, []);
		});

		it('a launch the launcher would refuse (MCA parameters with MPICH) is refused before anything runs', async () => {
			const { host, runs } = recordingHost('local', { '/opt/e': ['gpumpi', 'libgpumpi_guard.so'] });
			const r = await runGuardUseCase(guardRequest(target(host, 'mpich', { spec: { mca: [['pml', 'ob1']] } })));
			assert.equal(r.ok, false);
			if (!r.ok) { assert.equal(r.refused, true); assert.match(r.error, /MCA parameters \(pml\) are Open MPI only/); }
			assert.deepEqual(runs, []);
		});

		it('STAGE: GPUMPI_GUARD_STAGE=1 forwarded with the launcher line, unless the presets set it', async () => {
			for (const [env, want] of [[[], ['GPUMPI_GUARD_STAGE=1']], [[['GPUMPI_GUARD_STAGE', '0']], ['GPUMPI_GUARD_STAGE=0']]] as const) {
				const { host, runs } = recordingHost('local', { '/opt/e': ['gpumpi', 'libgpumpi_guard.so'] });
				const r = await runGuardUseCase(guardRequest(target(host, 'openmpi'), { command: ['mpirun', '-np', '2', './app'], np: null, stage: true, env: env.map(([k, v]) => [k, v] as [string, string]) }));
				assert.equal(r.ok, true);
				const [launch] = launches(runs);
				assert.deepEqual(launch.filter(a => a.startsWith('GPUMPI_GUARD_STAGE=')), want, launch.join(' '));
				if (r.ok) { assert.equal(r.result.how, 'launcher'); }
			}
		});

		it('a program that is not a launcher runs alone without ranks, with ranks under the target\'s srun', async () => {
			const a = recordingHost('local', { '/opt/e': ['gpumpi', 'libgpumpi_guard.so'] });
			const alone = await runGuardUseCase(guardRequest(target(a.host, 'openmpi'), { np: null }));
			assert.ok(alone.ok && alone.result.how === 'alone');
			assert.deepEqual(launches(a.runs)[0], ['./app', 'x']);
			assert.equal(a.runs.find(r => r.argv[0] === './app')?.env?.LD_PRELOAD, LIB);
			const s = recordingHost('local', { '/opt/e': ['gpumpi', 'libgpumpi_guard.so'] });
			const srun = await runGuardUseCase(guardRequest(target(s.host, 'openmpi', { spec: { srun: { srun: 'srun', mpi: null, allocation: [], jobName: '' } } }), { np: null }));
			assert.ok(srun.ok && srun.result.how === 'spec', JSON.stringify(srun.ok ? srun.result.how : srun));
			const launch = launches(s.runs).find(l => l.includes('srun')) ?? [];
			assert.equal(launch[launch.indexOf('-n') + 1], '1', launch.join(' '));
		});
	});

	describe('repro (core/repro/reproUseCase.ts)', () => {
		const cfg = (label: string, mca: Array<[string, string]> = []): LaunchConfig => ({ label, env: [['UCX_NET_DEVICES', 'lo']], mca, extraArgs: [] });

		it('a configuration the launcher would refuse: nothing launched, no launch line', async () => {
			const { host, runs } = recordingHost('local', {});
			const shown: string[][] = [];
			const r = await runReproUseCase({ target: target(host, 'mpich'), which: 'ipc', configs: [cfg('default'), cfg('ob1', [['pml', 'ob1']])], loopback: true, memory: 'host', trials: 1, timeoutMs: 10_000, variants: ['direct'], sizeBytes: 4096, engineArgs: [], onLaunchLine: a => shown.push(a) });
			assert.equal(r.ok, false);
			if (!r.ok) { assert.equal(r.refused, true); assert.match(r.error, /Open MPI only/); }
			assert.deepEqual(runs, []);
			assert.deepEqual(shown, []);
		});

		it('fallback: one report per configuration, loopback on the launch, the first launch line shown once', async () => {
			const { host, runs } = recordingHost('local', {});
			const shown: string[][] = [];
			const r = await runReproUseCase({ target: target(host, 'openmpi'), which: 'fallback', configs: [cfg('default'), cfg('ob1', [['pml', 'ob1']])], loopback: true, memory: 'host', trials: 1, timeoutMs: 10_000, modes: ['mpi'], sizes: '1M', iters: 1, protoInfo: false, ucxSettings: [], onLaunchLine: a => shown.push(a) });
			assert.ok(r.ok);
			if (r.ok) { assert.equal(r.ipc, null); assert.deepEqual(r.fallback.map(f => f.runs[0]?.config), ['default', 'ob1']); }
			assert.equal(shown.length, 1);
			assert.ok(shown[0].join(' ').includes('--mca btl_tcp_if_include lo') && shown[0].includes('repro') && shown[0].includes('fallback'), shown[0].join(' '));
			const engineRuns = runs.map(x => x.argv).filter(a => a.includes('/opt/e/gpumpi'));
			assert.ok(engineRuns.length >= 2 && engineRuns.every(a => a.join(' ').includes('--mca btl_tcp_if_include lo')), JSON.stringify(engineRuns));
		});
	});

	describe('map (core/map/mapUseCase.ts)', () => {
		it('refused before anything runs: MCA parameters with MPICH, and engine options the engine would refuse', async () => {
			const cases: Array<[MpiFlavor, Array<[string, string]>, typeof DEFAULT_MAP_OPTIONS]> = [['mpich', [['pml', 'ob1']], DEFAULT_MAP_OPTIONS], ['openmpi', [], { ...DEFAULT_MAP_OPTIONS, iters: 0 }]];
			for (const [flavor, mca, map] of cases) {
				const { host, runs } = recordingHost('local', {});
				const r = await runMapUseCase({ target: target(host, flavor), config: { label: 'map', env: [], mca, extraArgs: [] }, loopback: false, map, timeoutMs: 10_000 });
				assert.equal(r.ok, false);
				if (!r.ok) { assert.equal(r.refused, true, r.error); }
				assert.deepEqual(runs, []);
			}
		});

		it('a failed run says why (refused: false) and was launched with the loopback switch asked for', async () => {
			const { host, runs } = recordingHost('local', {});
			const r = await runMapUseCase({ target: target(host, 'openmpi', { np: 4 }), config: { label: 'map', env: [['UCX_NET_DEVICES', 'lo']], mca: [], extraArgs: [] }, loopback: true, map: DEFAULT_MAP_OPTIONS, timeoutMs: 10_000 });
			assert.equal(r.ok, false);
			if (!r.ok) { assert.equal(r.refused, false); }
			const launch = runs.map(x => x.argv).find(a => a.includes('map'));
			assert.ok(launch && launch.join(' ').includes('--mca btl_tcp_if_include lo') && launch.includes('-np') && launch[launch.indexOf('-np') + 1] === '4', JSON.stringify(launch));
		});
	});
});
