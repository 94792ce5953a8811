/**
 * The registry deactivate() uses to end the runs in flight (extension/core/activeRuns.ts). Real AbortControllers and
 * real timers; the runs are promises that end when their signal aborts (as the runners do) or never (a stuck cleanup).
 */
import * as assert from 'node:assert/strict';
import { createActiveRuns } from '../../extension/core/activeRuns';

describe('active runs (deactivate ends the runs in flight)', () => {
	it('abortAll aborts every run and resolves once each has ended its own cleanup', async () => {
		const runs = createActiveRuns();
		const ended: string[] = [];
		const start = (label: string, cleanupMs: number) => {
			const abort = runs.begin(label);
			abort.signal.addEventListener('abort', () => setTimeout(() => { ended.push(label); runs.end(abort); }, cleanupMs));
			return abort;
		};
		const a = start('map', 20);
		const b = start('guard', 60);
		assert.deepEqual(runs.labels(), ['map', 'guard']);
		const t0 = Date.now();
		const r = await runs.abortAll(5000);
		assert.ok(a.signal.aborted && b.signal.aborted);
		assert.deepEqual(r, { aborted: ['map', 'guard'], stillRunning: [] });
		assert.deepEqual(ended, ['map', 'guard']);
		assert.ok(Date.now() - t0 < 2000, 'waited for the cleanups, not the whole grace period');
		assert.deepEqual(runs.labels(), []);
	});

	it('a run whose cleanup never ends is reported after the grace period, and does not hold deactivate longer', async () => {
		const runs = createActiveRuns();
		const stuck = runs.begin('reproducer');
		const t0 = Date.now();
		const r = await runs.abortAll(100);
		assert.ok(stuck.signal.aborted);
		assert.deepEqual(r.stillRunning, ['reproducer']);
		assert.ok(Date.now() - t0 >= 90 && Date.now() - t0 < 2000);
	});

	it('a finished run is gone: end twice is harmless, and abortAll with nothing in flight returns at once', async () => {
		const runs = createActiveRuns();
		const a = runs.begin('inspection');
		runs.end(a);
		runs.end(a);
		assert.deepEqual(await runs.abortAll(10_000), { aborted: [], stillRunning: [] });
		assert.equal(a.signal.aborted, false, 'a finished run is not aborted');
	});
});
