/**
 * The statistics of repeated trials (extension/shared/trialStats.ts) and the inputs that choose the trial count
 * (CLI, setting, stored choices, webview messages): numbers checked against their closed forms.
 */
import * as assert from 'node:assert/strict';
import { checkTrials, validateChoices } from '../../extension/core/repro/reproChoices';
import { boundedLog } from '../../extension/core/repro/ipcRunner';
import { asFromReproWebviewEnvelope } from '../../extension/shared/reproProtocol';
import {
	compareSpreads, DEFAULT_TRIALS, percent, rangesOverlap, ruledOutAbove, spreadOf, trialsToDetect, trialVerdict,
} from '../../extension/shared/trialStats';

describe('trial statistics', () => {
	it('the default count catches a 25 % failure rate with ≥ 95 % probability, and no smaller count does', () => {
		assert.equal(DEFAULT_TRIALS, 11);
		assert.ok(1 - 0.75 ** 11 >= 0.95);
		assert.ok(1 - 0.75 ** 10 < 0.95);
		assert.equal(trialsToDetect(0.1, 0.95), 29);
		assert.equal(trialsToDetect(0.5, 0.99), 7);
		assert.throws(() => trialsToDetect(0, 0.95), /strictly between/);
	});

	it('0 of n failed rules out rates above 1 - 0.05^(1/n): 0 of 12 → 22 %, 0 of 11 → 24 %', () => {
		assert.ok(Math.abs(ruledOutAbove(12) - 0.2209) < 1e-4);
		assert.equal(percent(ruledOutAbove(12)), '22 %');
		assert.equal(percent(ruledOutAbove(11)), '24 %');
		assert.equal(percent(ruledOutAbove(100)), '3 %');
		// At that rate, n clean trials have probability exactly 5 %.
		assert.ok(Math.abs((1 - ruledOutAbove(7)) ** 7 - 0.05) < 1e-12);
		assert.throws(() => ruledOutAbove(0), /bad trial count/);
	});

	it('classes: works, fails, unreliable; inconclusive with nothing measured or one trial', () => {
		assert.equal(trialVerdict(12, 12, 0).sentence, '0 of 12 failed: a failure rate above 22 % is ruled out at 95 %');
		assert.equal(trialVerdict(12, 12, 0).class, 'works');
		assert.equal(trialVerdict(5, 5, 5).class, 'fails');
		assert.equal(trialVerdict(6, 6, 2).class, 'unreliable');
		assert.equal(trialVerdict(6, 6, 2).sentence, '2 of 6 failed (33 %): intermittent');
		assert.equal(trialVerdict(3, 0, 0).class, 'inconclusive');
		assert.equal(trialVerdict(1, 1, 0).class, 'inconclusive');
		assert.equal(trialVerdict(1, 1, 1).class, 'inconclusive');
		assert.match(trialVerdict(4, 3, 0).sentence, /0 of 3 failed: .* \(1 of 4 could not run\)$/);
	});

	it('spreads: median of even and odd counts, overlap, and "no difference" when the ranges overlap', () => {
		assert.deepEqual(spreadOf([3, null, 1, 2]), { median: 2, min: 1, max: 3, n: 3 });
		assert.deepEqual(spreadOf([4, 1, 2, 3]), { median: 2.5, min: 1, max: 4, n: 4 });
		assert.equal(spreadOf([null, NaN]), null);
		const staged = spreadOf([6.6, 7.4, 5.9])!, mpi = spreadOf([4.6, 4.0, 4.1])!;
		assert.equal(rangesOverlap(staged, mpi), false);
		assert.equal(compareSpreads('manual staging', staged, 'MPI', mpi).sentence,
			'manual staging is 1.61× faster than MPI (range 1.28–1.85×; manual staging 6.60 (5.90–7.40) vs MPI 4.10 (4.00–4.60) GB/s, median (min–max) of 3 runs).');
		const slower = compareSpreads('manual staging', mpi, 'MPI', staged);
		assert.match(slower.sentence, /^manual staging is 1\.61× slower than MPI \(range 1\.28–1\.85×;/);
		const same = compareSpreads('a', spreadOf([3.9, 4.2])!, 'b', spreadOf([4.1, 4.5])!);
		assert.equal(same.differs, false);
		assert.match(same.sentence, /^no difference between a and b: the ranges overlap/);
	});
});

describe('trial count inputs', () => {
	it('setting / stored choices: whole numbers 1..200; anything else is refused with the reason', () => {
		assert.equal(checkTrials(undefined), 11);
		assert.equal(checkTrials(3), 3);
		for (const bad of [0, -1, 2.5, 201, '11', true, {}]) { assert.match(String(checkTrials(bad)), /trials must be a whole number from 1 to 200/); }
		const c = validateChoices({ trials: 4 });
		assert.ok(typeof c !== 'string' && c.trials === 4);
		assert.match(String(validateChoices({ trials: 1e9 })), /trials must be/);
	});

	it('the webview may ask for one trial\'s log, nothing else', () => {
		const env = (body: Record<string, unknown>): unknown => ({ kind: 'request', id: 1, body });
		assert.ok(asFromReproWebviewEnvelope(env({ type: 'openTrialLog', config: 'ucx', variant: 'direct', trial: 3 })));
		assert.equal(asFromReproWebviewEnvelope(env({ type: 'openTrialLog', config: 'ucx', variant: 'direct', trial: 0 })), null);
		assert.equal(asFromReproWebviewEnvelope(env({ type: 'openTrialLog', config: 'ucx', variant: 'direct', trial: '3' })), null);
		assert.equal(asFromReproWebviewEnvelope(env({ type: 'openTrialLog', config: 'ucx', variant: 'direct', trial: 1, path: '/etc/passwd' })), null);
	});

	it('a trial\'s log keeps head and tail within the bound', () => {
		const big = Array.from({ length: 5000 }, (_, i) => `line ${i}`).join('\n');
		const b = boundedLog(big, 'the crash line', 2000);
		assert.ok(b.length <= 2000, String(b.length));
		assert.match(b, /^line 0\n/);
		assert.match(b, /characters cut/);
		assert.match(b, /--- stderr ---\nthe crash line$/);
		assert.equal(boundedLog('short', ''), 'short');
	});
});
