/**
 * The latency experiment for real (extension/core/map/latencyExperiment.ts, `gpumpi-doctor map --explain-latency`):
 * Debian's Open MPI 4.1.4, 2 ranks, host memory, as-is `--mca pml ob1 --mca btl tcp,self` on loopback, with the
 * factor "btl vader,self" changed — shared memory really is faster than TCP here, so the product must find that out
 * by measuring it, and say it with the numbers it measured. MPS cannot apply on this machine (no NVIDIA driver
 * utilities): it must be "not available", never "no effect". The MPS start/stop mechanics are checked with a
 * stand-in control program (a shell script: the real nvidia-cuda-mps-control needs an NVIDIA driver).
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultSpec } from '../../extension/core/launch/launchSpec';
import { compareLatency, formatUs, LATENCY_FACTORS, runLatencyExperiment, type LatencyExperiment } from '../../extension/core/map/latencyExperiment';
import { DEFAULT_MAP_OPTIONS } from '../../extension/core/map/mapRunner';
import { findEngine } from '../../extension/core/native';

const repo = path.resolve(__dirname, '../../..');
const cliJs = path.join(repo, 'dist', 'cli.js');

function engine(): string {
	const found = findEngine('openmpi', {});
	assert.ok(found.path, `engine 'openmpi' not built; tried:\n  ${found.tried.join('\n  ')}`);
	return found.path;
}

describe('latency experiment (engine, real Open MPI, host memory)', function () {
	this.timeout(240_000);

	it('tcp as-is vs vader: vader explains the 8-byte latency, with the measured numbers; MPS is not available here', () => {
		const mpsHere = (process.env.PATH ?? '').split(':').some(d => d && fs.existsSync(path.join(d, 'nvidia-cuda-mps-control')));
		const r = spawnSync(process.execPath, [cliJs, 'map', '--explain-latency', '--mpirun', 'mpirun.openmpi', '--flavor', 'openmpi', '--engine', engine(),
			'--memory', 'host', '--mca', 'pml', 'ob1', '--mca', 'btl', 'tcp,self', '--loopback', '--factors', 'ob1-vader,mps', '--trials', '3', '--timeout', '60', '--json'],
		{ encoding: 'utf8', timeout: 200_000 });
		assert.equal(r.status, 0, r.stderr);
		assert.match(r.stderr, /trial 3 of 3: changing --mca pml ob1 --mca btl vader,self/, 'progress on stderr');
		const e = JSON.parse(r.stdout) as LatencyExperiment;
		assert.equal(e.schema, 'gpumpi.latency-experiment/1');
		const base = e.baseline, vader = e.factors.find(f => f.id === 'ob1-vader')!;
		assert.equal(base.measured, 3, JSON.stringify(base.trials));
		assert.equal(vader.result?.measured, 3, JSON.stringify(vader.result?.trials));
		assert.match(base.command.join(' '), /--mca btl tcp,self/);
		assert.match(vader.result!.command.join(' '), /--mca btl vader,self/);
		assert.doesNotMatch(vader.result!.command.join(' '), /tcp,self/, 'the factor replaces the baseline\'s btl, not appends to it');
		// What each run really used, from Open MPI's own btl selection lines.
		assert.ok(base.evidence.some(l => l.includes('Open MPI btl: tcp')), base.evidence.join(' | '));
		assert.ok(vader.result!.evidence.some(l => l.includes('Open MPI btl: vader')), vader.result!.evidence.join(' | '));
		const bl = base.latency_us!, vl = vader.result!.latency_us!;
		console.log(`      measured: tcp ${bl.median} (${bl.min}–${bl.max}) µs, vader ${vl.median} (${vl.min}–${vl.max}) µs`);
		// The verdict follows the rule from the measured spreads (and on this machine it is "explains").
		assert.equal(vader.verdict, compareLatency(bl, vl).verdict);
		assert.equal(vader.verdict, 'explains', `${vader.sentence}: shared memory was expected to be well below TCP`);
		assert.ok(vl.max < bl.min && vl.median <= bl.median / 2);
		assert.deepEqual(e.explained_by, ['ob1-vader']);
		assert.ok(vader.sentence.startsWith(`changing --mca pml ob1 --mca btl vader,self: 8-byte latency ${formatUs(vl.median)} µs (${formatUs(vl.min)}–${formatUs(vl.max)}, 3 of 3 trials) vs ${formatUs(bl.median)} µs (${formatUs(bl.min)}–${formatUs(bl.max)}) as-is`), vader.sentence);
		assert.match(e.headline, new RegExp(`^The 8-byte latency of ${formatUs(bl.median).replace('.', '\\.')} µs as-is is explained by changing --mca pml ob1 --mca btl vader,self`));
		const mps = e.factors.find(f => f.id === 'mps')!;
		if (!mpsHere) {
			assert.equal(mps.status, 'not_available');
			assert.equal(mps.verdict, null, 'no verdict, and no "no effect"');
			assert.match(mps.reason ?? '', /nvidia-cuda-mps-control is not on PATH/);
			assert.ok(e.untested.some(u => /^MPS on: .*not available here/.test(u)), e.untested.join(' | '));
		}
	});

	// The factor's runs fail for real: Open MPI's vader cannot create its segment in a backing directory that does not
	// exist (the user's own MCA setting, kept by the launch). Before: "exit status 1: no JSON document in the output",
	// and the cause (Open MPI's shmem line) was lost — as the H200 and H100 runs of the host-memory factor were (exit 14).
	it('a factor whose every run fails: "measured no trial", and each trial keeps what the output said went wrong', () => {
		const r = spawnSync(process.execPath, [cliJs, 'map', '--explain-latency', '--mpirun', 'mpirun.openmpi', '--flavor', 'openmpi', '--engine', engine(),
			'--memory', 'host', '--mca', 'pml', 'ob1', '--mca', 'btl', 'tcp,self', '--mca', 'btl_vader_backing_directory', '/nonexistent/gpumpi-dir', '--loopback',
			'--factors', 'ob1-vader', '--trials', '2', '--timeout', '60', '--json'],
		{ encoding: 'utf8', timeout: 200_000 });
		assert.equal(r.status, 0, r.stderr);
		const e = JSON.parse(r.stdout) as LatencyExperiment;
		assert.equal(e.baseline.measured, 2, JSON.stringify(e.baseline.trials));
		const vader = e.factors.find(f => f.id === 'ob1-vader')!;
		assert.equal(vader.result?.measured, 0);
		assert.equal(vader.verdict, 'no_verdict');
		for (const t of vader.result!.trials) {
			assert.match(t.error ?? '', /^exit status \d+: no JSON document in the output; the output says: .*shmem: mmap: an error occurred while determining whether or not \/nonexistent\/gpumpi-dir\/vader_segment/, t.error ?? '');
			assert.doesNotMatch(t.error ?? '', /components_open|ORTE_ERROR_LOG/);
		}
		assert.ok(e.untested.some(u => u.includes('2 of 2 trials failed') && u.includes('shmem: mmap: an error occurred')), e.untested.join(' | '));
	});

	it('MPS factor: a private daemon (own pipe and log directories) is started, its variables reach the ranks, it is asked and quit', async () => {
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-fakemps-'));
		try {
			// Stand-in for nvidia-cuda-mps-control: -d records its start; otherwise it reads commands from stdin.
			const calls = path.join(dir, 'calls');
			const control = path.join(dir, 'nvidia-cuda-mps-control');
			fs.writeFileSync(control, `#!/bin/sh\nif [ "$1" = -d ]; then echo "start $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY" >>'${calls}'; echo "daemon up" >"$CUDA_MPS_LOG_DIRECTORY/control.log"; exit 0; fi\nwhile read c; do echo "$c $CUDA_MPS_PIPE_DIRECTORY" >>'${calls}'; [ "$c" = get_server_list ] && echo 4242; done\nexit 0\n`, { mode: 0o755 });
			const e = await runLatencyExperiment({
				engine: engine(), spec: { ...defaultSpec('openmpi', 'mpirun.openmpi', 2), loopbackOnly: true },
				baseline: { label: 'as-is', env: [], mca: [['pml', 'ob1'], ['btl', 'vader,self']], extraArgs: [] },
				map: { ...DEFAULT_MAP_OPTIONS, large: '64K', memory: 'host' },
				factors: LATENCY_FACTORS.filter(f => f.id === 'mps'), trials: 2, timeoutMs: 60_000, mps: { control },
			});
			const lines = fs.readFileSync(calls, 'utf8').trim().split('\n');
			assert.equal(lines.length, 4, lines.join(' | '));
			const [start, alive, list, quit] = lines;
			assert.equal(alive, list, 'the daemon is asked once before the trials (does it answer?) and once after');
			const m = /^start (\S+\/pipe) (\S+\/log)$/.exec(start);
			assert.ok(m, start);
			assert.ok(m[1].startsWith(path.join(os.tmpdir(), 'gpumpi-mps-')), 'a private directory, not the system default');
			assert.equal(list, `get_server_list ${m[1]}`);
			assert.equal(quit, `quit ${m[1]}`);
			assert.equal(fs.existsSync(path.dirname(m[1])), false, 'the temp dir is removed afterwards');
			const f = e.factors[0];
			assert.equal(f.status, 'measured');
			assert.equal(f.result?.measured, 2, JSON.stringify(f.result?.trials));
			assert.ok(f.result!.command.includes(`CUDA_MPS_PIPE_DIRECTORY=${m[1]}`), f.result!.command.join(' '));
			assert.ok(!e.baseline.command.some(a => a.startsWith('CUDA_MPS')), 'only the MPS configuration gets the variables');
			assert.deepEqual(f.result!.notes.slice(1), ['MPS server(s) ran for the ranks: pid 4242', 'MPS control daemon stopped (quit: ok); its log ends: daemon up']);
			assert.notEqual(f.verdict, null, 'two measured trials on each side give a verdict');
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});

	it('MPS factor: a control program that exits 0 but whose daemon does not answer is "not available", and nothing is measured as MPS', async () => {
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-fakemps-'));
		try {
			const control = path.join(dir, 'nvidia-cuda-mps-control');
			fs.writeFileSync(control, '#!/bin/sh\n[ "$1" = -d ] && exit 0\necho "Cannot find MPS control daemon process" >&2\nexit 1\n', { mode: 0o755 });
			const e = await runLatencyExperiment({
				engine: engine(), spec: { ...defaultSpec('openmpi', 'mpirun.openmpi', 2), loopbackOnly: true },
				baseline: { label: 'as-is', env: [], mca: [['pml', 'ob1'], ['btl', 'vader,self']], extraArgs: [] },
				map: { ...DEFAULT_MAP_OPTIONS, large: '64K', memory: 'host' },
				factors: LATENCY_FACTORS.filter(f => f.id === 'mps'), trials: 2, timeoutMs: 60_000, mps: { control },
			});
			const f = e.factors[0];
			assert.equal(f.status, 'not_available');
			assert.equal(f.result, null);
			assert.match(f.reason ?? '', /does not answer get_server_list .*Cannot find MPS control daemon process/);
			assert.equal(e.baseline.trials.length, 2, 'the baseline still ran');
			assert.ok(e.untested.some(u => /MPS: not available here/.test(u)), e.untested.join(' | '));
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});
});
