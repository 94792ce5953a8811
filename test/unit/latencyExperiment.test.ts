/**
 * The comparison rules of the latency experiment (extension/core/map/latencyExperiment.ts) and how a factor becomes a
 * launch: pure functions, no MPI (the real experiment runs in test/engine/latencyExperiment.test.ts).
 */
import * as assert from 'node:assert/strict';
import { defaultSpec, type LaunchConfig } from '../../extension/core/launch/launchSpec';
import { compareLatency, factorSentence, formatUs, LATENCY_FACTORS, planFactor, type ConfigResult } from '../../extension/core/map/latencyExperiment';
import { DEFAULT_MAP_OPTIONS } from '../../extension/core/map/mapRunner';
import { spreadOf, type Spread } from '../../extension/shared/trialStats';

const s = (...v: number[]): Spread => spreadOf(v)!;
const factor = (id: string) => LATENCY_FACTORS.find(f => f.id === id)!;

describe('latency experiment: comparison rules', () => {
	it('explains only when the whole range lies below and the median is at most half', () => {
		assert.equal(compareLatency(s(148, 151, 160), s(7.5, 7.9, 8.3)).verdict, 'explains');
		assert.match(compareLatency(s(148, 151, 160), s(7.5, 7.9, 8.3)).why, /19\.1× lower/);
		// Exactly half still explains; just above half is only "lower".
		assert.equal(compareLatency(s(10, 10, 12), s(4, 5, 5)).verdict, 'explains');
		assert.equal(compareLatency(s(10, 10, 12), s(4, 5.01, 5.1)).verdict, 'lower');
	});

	it('overlapping ranges are no difference, even with a much lower median', () => {
		// One slow outlier in the factor's trials reaches into the baseline's range: no explanation.
		assert.equal(compareLatency(s(100, 150, 160), s(5, 6, 120)).verdict, 'no_difference');
		assert.equal(compareLatency(s(5, 6, 7), s(7, 8, 9)).verdict, 'no_difference', 'touching ranges overlap');
		assert.equal(compareLatency(s(5, 6, 7), s(8, 9, 10)).verdict, 'higher');
	});

	it('one trial on either side is never a verdict', () => {
		const one = compareLatency(s(150), s(1, 2, 3));
		assert.equal(one.verdict, 'no_verdict');
		assert.match(one.why, /baseline measured 1 trial, and one trial is not a verdict/);
		assert.equal(compareLatency(s(150, 151, 152), s(1)).verdict, 'no_verdict');
		assert.match(compareLatency(s(150, 151), null).why, /this configuration measured no trial/);
		assert.equal(compareLatency(null, s(1, 2)).verdict, 'no_verdict');
	});

	it('the sentence carries the measured numbers and the trial counts', () => {
		const cfg = (lat: Spread, trials: number): ConfigResult => ({
			label: 'x', command: [], memory_used: 'device', gpu_unavailable_reason: null, evidence: [], measured: lat.n,
			trials: Array.from({ length: trials }, (_, i) => ({ trial: i + 1, latency_us: null, bandwidth_gbps: null, error: null })),
			latency_us: lat, bandwidth_gbps: null, notes: [],
		});
		const text = factorSentence('MPS on: nvidia-cuda-mps-control -d', '8', cfg(s(148, 151, 160), 3), cfg(s(7.5, 7.9, 8.3), 3), 'explains it');
		assert.equal(text, 'changing MPS on: nvidia-cuda-mps-control -d: 8-byte latency 7.9 µs (7.5–8.3, 3 of 3 trials) vs 151 µs (148–160) as-is — explains it');
		assert.equal(formatUs(0.137), '0.14');
		assert.equal(formatUs(42.25), '42.3');
	});
});

describe('latency experiment: factors as launches', () => {
	const baseline: LaunchConfig = { label: 'as-is', env: [['UCX_TLS', 'rc,sm']], mca: [['pml', 'ob1'], ['btl', 'tcp,self']], extraArgs: [] };
	const o = { baseline, map: { ...DEFAULT_MAP_OPTIONS, memory: 'device' as const }, spec: defaultSpec('openmpi', 'mpirun', 2), mps: { unavailable: 'no nvidia-cuda-mps-control' } };

	it('replaces a setting the baseline has instead of repeating it (Open MPI joins repeated --mca values)', () => {
		const p = planFactor(factor('ob1-vader'), o);
		assert.ok(!('status' in p));
		assert.deepEqual(p.config.mca, [['pml', 'ob1'], ['btl', 'vader,self']]);
		const u = planFactor(factor('ucx-no-cuda-ipc'), o);
		assert.ok(!('status' in u));
		assert.deepEqual(u.config.env, [['UCX_TLS', '^cuda_ipc']]);
		assert.deepEqual(u.config.mca, baseline.mca, 'the rest of the baseline is kept');
	});

	it('a factor the baseline already has is not tested; memory changes the engine option only', () => {
		const same = planFactor(factor('ob1-tcp'), o);
		assert.ok('status' in same && same.status === 'same_as_baseline');
		const mem = planFactor(factor('host-memory'), o);
		assert.ok(!('status' in mem) && mem.memory === 'host' && mem.config.mca === baseline.mca);
		const dev = planFactor(factor('device-memory'), o);
		assert.ok('status' in dev && dev.status === 'same_as_baseline');
	});

	it('what cannot apply is not available, with the reason — never "no effect"', () => {
		const mps = planFactor(factor('mps'), o);
		assert.deepEqual(mps, { status: 'not_available', reason: 'no nvidia-cuda-mps-control' });
		const mpich = planFactor(factor('smcuda-no-ipc'), { ...o, spec: defaultSpec('mpich', 'mpirun.mpich', 2), baseline: { ...baseline, mca: [] } });
		assert.ok('status' in mpich && mpich.status === 'not_available' && /Open MPI setting/.test(mpich.reason));
		const on = planFactor(factor('mps'), { ...o, mps: { control: '/usr/bin/nvidia-cuda-mps-control' } });
		assert.ok(!('status' in on) && on.mps);
	});

	it('every factor id is unique and says what the user would set', () => {
		assert.equal(new Set(LATENCY_FACTORS.map(f => f.id)).size, LATENCY_FACTORS.length);
		for (const f of LATENCY_FACTORS) { assert.match(f.setting, /^(--mca |-x |--memory |MPS on: )/, f.id); }
	});
});
