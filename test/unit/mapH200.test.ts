/**
 * The REAL H200 device map (test-fixtures/map/h200-testbed-map-2026-12-02.json: scripts/gpu/map.sh on the GPU
 * testbed, 4 ranks on one H200, three runs) through the product's loader (core/map/mapFile.ts's fromDeviceResult, which joins each
 * run's evidence lines) and the webview's layout: what docs/screenshots/transport-map-h200-{ob1,tcp}.png show
 * (scripts/screenshotMap.mjs renders them).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fromDeviceResult } from '../../extension/core/map/mapFile';
import { edgeWidth, layoutMap, MIN_WIDTH_SPAN } from '../../extension/shared/mapLayout';
import type { MapDocument } from '../../extension/shared/mapSchema';

const FILE = path.resolve(process.cwd(), 'test-fixtures', 'map', 'h200-testbed-map-2026-12-02.json');

function runs(): Map<string, MapDocument> {
	const r = fromDeviceResult(JSON.parse(fs.readFileSync(FILE, 'utf8')));
	assert.ok(r, 'the device result is recognised (schema gpumpi.map-gpu/1)');
	const out = new Map<string, MapDocument>();
	for (const run of r) {
		assert.ok(typeof run.doc !== 'string', `${run.name}: ${String(run.doc)}`);
		out.set(run.name, run.doc);
	}
	return out;
}

describe('real H200 transport map (device result)', () => {
	it('loads the three runs, 4 ranks on one GPU with device memory', () => {
		const m = runs();
		assert.deepEqual([...m.keys()], ['ob1-smcuda', 'ob1-tcp', 'ucx']);
		for (const doc of m.values()) {
			assert.equal(doc.memory, 'device');
			assert.equal(doc.pairs.length, 6);
			assert.equal(new Set(doc.ranks.map(r => r.gpu?.uuid)).size, 1, 'all ranks share one H200');
		}
	});
	it('ob1 smcuda: every pair is "same GPU" at hundreds of GB/s; ob1 tcp: every pair is MPI host staging at ~2 GB/s', () => {
		const m = runs();
		for (const p of m.get('ob1-smcuda')!.pairs) {
			assert.equal(p.class, 'same_gpu');
			assert.ok(p.bandwidth_gbps !== null && p.bandwidth_gbps > 300, `${p.a}-${p.b}: ${String(p.bandwidth_gbps)}`);
		}
		for (const p of m.get('ob1-tcp')!.pairs) {
			assert.equal(p.class, 'host_staging', 'the tcp btl evidence turns the engine\'s same-GPU guess into host staging');
			assert.equal(p.engine_class, 'same_gpu');
			assert.ok(p.bandwidth_gbps !== null && p.bandwidth_gbps > 1 && p.bandwidth_gbps < 3, `${p.a}-${p.b}: ${String(p.bandwidth_gbps)}`);
		}
	});
	it('draws pairs within 1 % of each other about equally wide (no 6× width from measurement noise)', () => {
		for (const name of ['ob1-smcuda', 'ob1-tcp']) {
			const view = layoutMap(runs().get(name)!);
			assert.equal(view.edges.length, 6);
			const w = view.edges.map(e => e.width);
			assert.ok(Math.max(...w) - Math.min(...w) < 0.5, `${name}: widths ${w.join(', ')}`);
			assert.ok(Math.min(...w) > 5, `${name}: the fastest pairs of the map are drawn wide`);
		}
		// A real spread (the 1 024-rank map's decades) still uses the whole 1..6 px range.
		assert.equal(edgeWidth(0.1, 0.1, 100), 1);
		assert.equal(edgeWidth(100, 0.1, 100), 6);
		assert.ok(edgeWidth(100 / MIN_WIDTH_SPAN, 99, 100) < 1.01, 'the span never shrinks below MIN_WIDTH_SPAN');
	});
});
