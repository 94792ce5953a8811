/**
 * Chart tick labels (media/repro/chart.ts): every y tick prints its exact value with one number of decimals, so no
 * two labels read the same for any data maximum (before: a 0.1 GB/s maximum gave "0.0, 0.1, 0.1, 0.1").
 */
import * as assert from 'node:assert/strict';
import { buildLineChart, niceMax, tickDecimals, yTickLabels } from '../../media/repro/chart';

describe('chart ticks', () => {
	it('decimals follow the step', () => {
		assert.deepEqual([0.25, 2.5, 0.05, 5, 0.025, 1, 250].map(tickDecimals), [2, 1, 2, 0, 3, 0, 0]);
	});

	it('no repeated label for any maximum from 1e-4 to 1e4', () => {
		for (let v = 1e-4; v < 1e4; v *= 1.07) {
			const { max, step } = niceMax(v);
			const labels = yTickLabels(max, step);
			assert.equal(new Set(labels).size, labels.length, `max ${max} step ${step}: ${labels.join(', ')}`);
			assert.ok(labels.length >= 4 && labels.length <= 6, `max ${max}: ${labels.length} ticks`);
			labels.forEach((l, i) => assert.ok(Math.abs(Number(l) - i * step) <= step * 1e-6, `${l} is ${i} × ${step}`));
		}
		assert.deepEqual(yTickLabels(0.1, 0.025), ['0', '0.025', '0.050', '0.075', '0.100']);
	});

	it('the chart SVG carries those labels', () => {
		const svg = buildLineChart({ title: 't', xLabel: 'x', yLabel: 'GB/s', series: [{ name: 's', points: [{ x: 1024, y: 0.09 }, { x: 4096, y: 0.1 }] }], formatX: String, formatY: y => y.toFixed(1), emptyText: '-' });
		const ticks = [...svg.matchAll(/class="chart-tick"[^>]*text-anchor="end"[^>]*>([^<]*)</g)].map(m => m[1]);
		assert.deepEqual(ticks, ['0', '0.025', '0.050', '0.075', '0.100']);
	});
});
