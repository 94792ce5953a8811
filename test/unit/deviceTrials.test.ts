/**
 * What the H200 testbed measured on 2026-12-03 (Open MPI 5.0.7 + UCX 1.13.1 with CUDA, one GPU), kept as real captures
 * and checked here so the claims in docs/device-results.md cannot drift from them:
 * - `bash scripts/testGpu.sh trials` run twice (runs 1 and 3 of that session; run 2's report did not come back):
 *   `gpumpi-doctor repro ipc --pml-ucx --also UCX_TLS=^cuda_ipc`, 11 trials per variant, 64 MiB device memory, 4 ranks;
 * - `gpumpi-doctor map --explain-latency --memory device` (scripts/gpu/cli.sh): which factor explains the ~150 µs
 *   8-byte latency between two ranks on the one GPU.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ReproIpcReport } from '../../extension/shared/reproSchema';

const root = path.resolve(process.cwd(), 'test-fixtures');
const read = <T>(p: string): T => JSON.parse(fs.readFileSync(path.join(root, p), 'utf8')) as T;

describe('H200 testbed, 2026-12-03 (real device results)', () => {
	const runs = ['trials-2026-12-03-run1.json', 'trials-2026-12-03-run3.json'].map(f => read<ReproIpcReport>(`repro/h200-testbed/${f}`));

	it('two full trial runs give the same verdict class for every variant and configuration', () => {
		const classes = runs.map(r => new Map(r.variants.map(v => [`${v.config} / ${v.variant}`, v.class])));
		assert.equal(classes[0].size, 8, '4 variants × 2 configurations');
		assert.deepEqual([...classes[1].entries()].sort(), [...classes[0].entries()].sort());
		for (const r of runs) {
			for (const v of r.variants) {
				assert.equal(v.trials, 11, `${v.config} / ${v.variant}: the default trial count`);
				assert.equal(Object.values(v.counts).reduce((a, b) => a + b, 0), 11);
			}
		}
	});

	it('the user\'s pattern (direct) is unreliable under both configurations, the bounce and host variants work in 11 of 11', () => {
		for (const r of runs) {
			for (const v of r.variants) {
				if (v.variant === 'direct' || v.variant === 'send-from-import') {
					assert.equal(v.class, 'unreliable', `${v.config} / ${v.variant}: ${JSON.stringify(v.counts)}`);
					assert.ok(v.counts.crashed > 0 && v.counts.correct > 0);
				} else {
					assert.equal(v.class, 'works', `${v.config} / ${v.variant}`);
					assert.equal(v.counts.correct, 11);
				}
			}
			assert.match(r.verdict.answer, /^Unreliable/);
		}
	});

	it('the ~150 µs device latency is explained by MPS alone, measured: every other factor leaves it where it is', () => {
		type Summary = { median: number; min: number; max: number; n: number } | null;
		type Factor = { id: string; status: string; result: { latency_us: Summary } | null; verdict?: string };
		const e = read<{ exit: number; doc: { explained_by: string[]; baseline: { latency_us: Summary }; factors: Factor[]; headline: string } }>('map/h200-latency/explain-latency-2026-12-03.json');
		assert.equal(e.exit, 0);
		assert.deepEqual(e.doc.explained_by, ['mps']);
		const base = e.doc.baseline.latency_us!;
		assert.ok(base.min > 100, `as-is ${base.min}–${base.max} µs`);
		const mps = e.doc.factors.find(f => f.id === 'mps')!.result!.latency_us!;
		assert.ok(mps.max < base.min / 5, `MPS ${mps.min}–${mps.max} µs vs as-is ${base.min}–${base.max} µs`);
		for (const f of e.doc.factors.filter(x => x.id !== 'mps' && x.result?.latency_us)) {
			assert.ok(f.result!.latency_us!.min > 100, `${f.id}: ${f.result!.latency_us!.min} µs`);
		}
		assert.match(e.doc.headline, /explained by changing MPS on/);
	});

	it('latency.sh (one factor at a time, 3 launches each) agrees: 150–160 µs without MPS in every transport, < 20 µs with it', () => {
		const l = read<{ mps_available: boolean; runs: Array<{ name: string; mps: boolean; exit: number; latency_us: number[] }> }>('map/h200-latency/latency-2026-12-03.json');
		assert.equal(l.mps_available, true);
		const dev = l.runs.filter(r => r.name.startsWith('device-') && r.exit === 0);
		assert.equal(dev.length, 24, '4 transports × 3 launches × MPS off/on');
		for (const r of dev) {
			const us = r.latency_us[0];
			if (r.mps) { assert.ok(us < 20, `${r.name} with MPS: ${us} µs`); } else { assert.ok(us > 150 && us < 160, `${r.name} without MPS: ${us} µs`); }
		}
	});
});
