/**
 * Transport-map export (shared/mapLayout.ts) on the real 4-rank captures: the vader map (0.65–13.0 GB/s, more than
 * a decade: log colour scale) and the two-host Slurm lab map (0.56–4.54 GB/s, under a decade: linear). The SVG is
 * the whole map with every edge's bandwidth label (none overlapping), rank numbers and both legends; the default
 * file name is the map's host(s) and the local date.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_PALETTE, exportFileName, heatScale, heatT, heatTicks, layoutMap, mapToSvg } from '../../extension/shared/mapLayout';
import { validateMapDocument, type MapDocument } from '../../extension/shared/mapSchema';

const FIX = path.resolve(process.cwd(), 'test-fixtures', 'map');
function load(name: string): MapDocument {
	const d = validateMapDocument(JSON.parse(fs.readFileSync(path.join(FIX, name), 'utf8')));
	assert.ok(typeof d !== 'string', `${name}: ${d}`);
	return d;
}
const COLORS = { fg: '#fff', bg: '#000', box: '#888' };

describe('map export', () => {
	const vader = load('map-4-openmpi-vader.json');
	const slurm = load('slurm-lab-map-2026-12-02.json');

	it('colour scale: linear under a decade, log from one', () => {
		const v = layoutMap(vader), s = layoutMap(slurm);
		assert.equal(heatScale(v.bwMin, v.bwMax), 'log');
		assert.equal(heatScale(s.bwMin, s.bwMax), 'linear');
		const mid = (s.bwMin + s.bwMax) / 2;
		assert.ok(Math.abs(heatT(mid, s.bwMin, s.bwMax) - 0.5) < 1e-12, 'linear: the middle value is the middle colour');
		assert.ok(Math.abs(heatT(Math.sqrt(v.bwMin * v.bwMax), v.bwMin, v.bwMax) - 0.5) < 1e-12, 'log: the geometric middle is');
		assert.equal(heatScale(0, 5), 'linear');
	});

	it('the layout is as wide as its hosts: one tall host gets one column, not a half-empty picture', () => {
		for (const doc of [vader, slurm, load('map-1024.json')]) {
			const v = layoutMap(doc);
			const right = Math.max(...v.hosts.map(h => h.x + h.w));
			// Only the padding right of the last column is left (PAD on each side of a cell, one more at the end).
			assert.ok(v.width - right <= 3 * v.hosts[0].x, `${v.hosts.length} host(s): width ${v.width}, content ends at ${right}`);
		}
	});

	it('legend ticks: distinct labels at increasing places, from min to max', () => {
		for (const [lo, hi] of [[0.5558, 4.5407], [0.65, 12.98], [10.0, 10.04], [1, 1000], [3.2, 3.2001]]) {
			const ticks = heatTicks(lo, hi);
			const labels = ticks.map(t => t.label);
			assert.equal(new Set(labels).size, labels.length, `${lo}..${hi}: ${labels.join(', ')}`);
			assert.ok(ticks.every((t, i) => i === 0 || t.t > ticks[i - 1].t), 'increasing');
			assert.ok(Math.abs(ticks[0].t) < 1e-9 && Math.abs(ticks[ticks.length - 1].t - 1) < 1e-9);
			const decimals = (labels[0].split('.')[1] ?? '').length;
			assert.ok(Math.abs(Number(labels[0]) - lo) <= 0.5 * 10 ** -decimals + 1e-9, `first ${labels[0]} is ${lo} rounded`);
			assert.ok(Math.abs(Number(labels[labels.length - 1]) - hi) <= 0.5 * 10 ** -((labels[labels.length - 1].split('.')[1] ?? '').length) + 1e-9);
		}
		assert.deepEqual(heatTicks(2, 2), [{ t: 1, label: '2.00' }]);
		assert.deepEqual(heatTicks(NaN, NaN), []);
	});

	for (const [name, doc] of [['vader', vader], ['slurm', slurm]] as const) {
		it(`${name}: the SVG has every edge's label (none overlapping), rank numbers and both legends`, () => {
			const view = layoutMap(doc);
			const svg = mapToSvg(doc, view, DEFAULT_PALETTE, COLORS);
			const rects = [...svg.matchAll(/<g class="edge-label"><rect x="([-\d.]+)" y="([-\d.]+)" width="([\d.]+)" height="([\d.]+)"/g)].map(m => m.slice(1, 5).map(Number));
			assert.equal(rects.length, doc.pairs.length);
			for (let i = 0; i < rects.length; i++) {
				for (let j = i + 1; j < rects.length; j++) {
					const [x1, y1, w1, h1] = rects[i], [x2, y2, w2, h2] = rects[j];
					const overlap = x1 < x2 + w2 - 0.2 && x2 < x1 + w1 - 0.2 && y1 < y2 + h2 - 0.2 && y2 < y1 + h1 - 0.2;
					assert.ok(!overlap, `labels ${i} and ${j} overlap: ${rects[i]} / ${rects[j]}`);
				}
			}
			for (const p of doc.pairs) { assert.ok(svg.includes(`>${p.bandwidth_gbps!.toFixed(1)} GB/s</text>`), `label of ${p.a}-${p.b}`); }
			for (const r of doc.ranks) { assert.match(svg, new RegExp(`font-weight="bold" fill="#000">${r.rank}</text>`)); }
			assert.match(svg, /Edge width: bandwidth, \d+\.\d\d–\d+\.\d\d GB\/s/);
			assert.match(svg, /MPI host staging/, 'class legend');
			const height = Number(/<svg [^>]*height="([\d.]+)"/.exec(svg)?.[1]);
			assert.ok(height >= view.height + 40, 'room for both legend lines below the whole map');
		});
	}

	it('default export file name: host(s) and local date, only safe characters', () => {
		const day = new Date(2026, 11, 3, 23, 59);
		assert.equal(exportFileName(vader, 'svg', day), 'transport-map-vm-2026-12-03.svg');
		assert.equal(exportFileName(slurm, 'png', day), 'transport-map-host-b+1-2026-12-03.png');
		assert.equal(exportFileName({ ranks: [{ host: '../../etc/x y' }] } as never, 'json', day), 'transport-map-_.._etc_x_y-2026-12-03.json', 'no path separator survives');
		assert.equal(exportFileName({ ranks: [] }, 'svg', day), 'transport-map-map-2026-12-03.svg');
	});
});
