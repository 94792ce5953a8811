/**
 * Runs inside the real extension host: "GPU-MPI: Show Transport Map" with a saved map as its argument (a Uri or a
 * plain path, as tests and the explorer pass them, no QuickPick) reaches the transport-map webview, which says ready:
 * the REAL H200 device result (test-fixtures/map/h200-testbed-map-2026-12-02.json, run ob1-tcp: every pair MPI host
 * staging after the tcp btl evidence), a real 4-rank Open MPI capture, and a file that is no map (refused, nothing
 * changes). Then a simulated 2 048-rank map (256 nodes, scripts/mapScaleGen.mjs, too big for the webview to hold):
 * the webview gets the node overview only (typed arrays through VS Code's postMessage) and says it drew the 256
 * nodes' matrix, the planted faults named in the headline.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as vscode from 'vscode';
import type { MapDocument } from '../../../extension/shared/mapSchema';
import { recordMetric } from './metrics';
import { generateScaleMap, plantedFaults } from '../../../scripts/mapScaleGen.mjs';

const EXTENSION_ID = 'gpumpi.gpumpi-doctor';
const COMMAND = 'gpumpiDoctor.showTransportMap';

interface MapState {
	ready: boolean; delivered: string | null; worldSize: number; pairs: number; classes: string[]; busy: boolean;
	live: { round: number; rounds: number; measured: number; failures: number } | null;
	nodes: number; wholeDocument: boolean; headline: string | null; rendered: { view: string; nodes: number; cells: number; outliers: number; ms: number } | null;
}
interface DoctorApi { transportMapState?(): MapState | null }

async function api(): Promise<{ doctor: DoctorApi; root: string }> {
	const ext = vscode.extensions.getExtension<DoctorApi>(EXTENSION_ID);
	assert.ok(ext, `${EXTENSION_ID} not installed`);
	return { doctor: await ext.activate(), root: ext.extensionPath };
}

async function waitFor(doctor: DoctorApi, pred: (s: MapState) => boolean, ms = 30_000): Promise<MapState | null> {
	const t0 = Date.now();
	let s = doctor.transportMapState?.() ?? null;
	while (!(s && pred(s)) && Date.now() - t0 < ms) { await new Promise(r => setTimeout(r, 200)); s = doctor.transportMapState?.() ?? null; }
	return s;
}

describe('transport map panel', function () {
	this.timeout(90_000);
	const H200 = 'h200-testbed-map-2026-12-02.json — run ob1-tcp (saved device result)';

	it('Show Transport Map with a Uri of the real H200 device result (run ob1-tcp): the webview gets 6 host-staging pairs', async () => {
		const { doctor, root } = await api();
		assert.equal(typeof doctor.transportMapState, 'function', 'API exposes transportMapState()');
		const file = path.join(root, 'test-fixtures', 'map', 'h200-testbed-map-2026-12-02.json');
		const t0 = performance.now();
		const doc = await vscode.commands.executeCommand<MapDocument | undefined>(COMMAND, vscode.Uri.file(file), 'ob1-tcp');
		assert.ok(doc, 'the command returned the map it showed');
		assert.equal(doc.memory, 'device');
		assert.ok(doc.mpi.library_version.startsWith('Open MPI v5.0.7'));
		const s = await waitFor(doctor, x => x.ready && x.delivered === H200);
		recordMetric('mapOpenSavedMs', performance.now() - t0);
		assert.ok(s, 'panel open');
		assert.equal(s.ready, true, 'the map webview sent ready');
		assert.equal(s.delivered, H200);
		assert.equal(s.worldSize, 4);
		assert.deepEqual(s.classes, Array(6).fill('host_staging'), 'the tcp btl evidence was joined: host staging, not same GPU');
	});

	it('a plain path of a map document replaces it; a file that is no map, or an unknown run, is refused and changes nothing', async () => {
		const { doctor, root } = await api();
		const file = path.join(root, 'test-fixtures', 'map', 'map-4-openmpi-vader.json');
		const doc = await vscode.commands.executeCommand<MapDocument | undefined>(COMMAND, file);
		assert.equal(doc?.pairs.length, 6);
		const s = await waitFor(doctor, x => x.ready && x.delivered === file);
		assert.equal(s?.delivered, file, 'the webview received the second map');
		assert.deepEqual(s?.classes, Array(6).fill('host_memory'));
		const bad = await vscode.commands.executeCommand<MapDocument | undefined>(COMMAND, vscode.Uri.file(path.join(root, 'package.json')));
		assert.equal(bad, undefined, 'package.json is not a transport map');
		const noRun = await vscode.commands.executeCommand<MapDocument | undefined>(COMMAND, path.join(root, 'test-fixtures', 'map', 'h200-testbed-map-2026-12-02.json'), 'no-such-run');
		assert.equal(noRun, undefined, 'an unknown run of a device result is refused');
		assert.equal(doctor.transportMapState?.()?.delivered, file, 'the panel still shows the last good map');
	});

	it('a map run from VS Code on this machine streams into the panel: the plan at once, progress as pairs come, then the map', async function () {
		this.timeout(240_000);
		const { doctor } = await api();
		const seen: Array<NonNullable<MapState['live']>> = [];
		let polling = true;
		const poll = (async () => {
			while (polling) {
				const live = doctor.transportMapState?.()?.live;
				if (live && !seen.some(x => x.measured === live.measured && x.round === live.round)) { seen.push(live); }
				await new Promise(r => setTimeout(r, 50));
			}
		})();
		let doc: MapDocument | undefined;
		try { doc = await vscode.commands.executeCommand<MapDocument | undefined>(COMMAND, { host: '$local', np: 6 }); } finally { polling = false; await poll; }
		assert.ok(doc, 'no map (see the GPU-MPI Doctor log)');
		assert.equal(doc.pairs.length, 15);
		assert.ok(seen.length > 0, 'the panel never had a live map: the plan did not reach it');
		assert.equal(seen[0].rounds, doc.schedule?.rounds, 'the plan\'s rounds');
		assert.ok(seen.every((x, i) => i === 0 || x.measured >= seen[i - 1].measured), JSON.stringify(seen));
		const s = await waitFor(doctor, x => x.ready && x.live === null && x.delivered !== null && x.pairs === 15);
		assert.equal(s?.live, null, 'the finished map replaces the live one');
		assert.ok(s?.headline, 'the finished map has its analysis');
		console.log(`      live states seen: ${seen.map(x => `${x.measured}/${x.rounds}`).join(' ')}`);
	});

	it('a 2 048-rank map (256 nodes, 39 808 pairs): the node overview alone reaches the webview, which draws the node matrix', async function () {
		this.timeout(180_000);
		const { doctor } = await api();
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-map16-'));
		try {
			const file = path.join(dir, 'map-2048.json');
			fs.writeFileSync(file, JSON.stringify(generateScaleMap(256)));
			const t0 = performance.now();
			const doc = await vscode.commands.executeCommand<MapDocument | undefined>(COMMAND, file);
			assert.equal(doc?.world_size, 2048);
			const s = await waitFor(doctor, x => x.ready && x.delivered === file && x.rendered?.nodes === 256, 120_000);
			recordMetric('mapOpen2048RanksMs', performance.now() - t0);
			assert.ok(s, `not drawn: ${JSON.stringify(doctor.transportMapState?.())}`);
			assert.equal(s.wholeDocument, false, 'too big for the webview: the overview stands for it');
			assert.deepEqual(s.classes, []);
			assert.equal(s.nodes, 256);
			const planted = plantedFaults(256).expected.outliers;
			assert.equal(s.headline?.startsWith(planted[0].subject), true, String(s.headline));
			assert.equal(s.rendered?.view, 'nodes');
			assert.equal(s.rendered?.outliers, planted.length, 'the analysis done on open (the file has none) came along');
			assert.ok((s.rendered?.cells ?? 0) > 256 * 255 / 2, `cells drawn: ${s.rendered?.cells}`);
		} finally { fs.rmSync(dir, { recursive: true, force: true }); }
	});
});
