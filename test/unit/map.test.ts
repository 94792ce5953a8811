/**
 * Pure parts of the transport map: document validation, the runner's evidence join (Open MPI btl lines per pair from
 * a real captured stderr, UCX lanes), path-class refinement, layout / matrix preparation for the webview, SVG export
 * escaping, and the map webview's message validation (plus the diagnostics panel's, which shares the frame check).
 * Inputs are the real captures of test-fixtures/map/ (README there), except where a test builds a pair by hand to
 * reach a class this GPU-less machine cannot produce (said at the test).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { applyEvidence, pairChannel, parseBtlPairs, refineClass } from '../../extension/core/map/mapEvidence';
import { failureLines } from '../../extension/core/launch/launcherOutput';
import { asFromMapWebviewEnvelope } from '../../extension/shared/mapProtocol';
import { allFilter, bandwidthMatrix, edgeWidth, heatColor, layoutMap, mapToSvg, placeEdgeLabels, DEFAULT_PALETTE } from '../../extension/shared/mapLayout';
import { validateMapDocument, type MapDocument, type MapPair } from '../../extension/shared/mapSchema';
import { asFromWebviewEnvelope } from '../../extension/shared/protocol';

const FIX = path.resolve(process.cwd(), 'test-fixtures', 'map');
function load(name: string): MapDocument {
	const d = validateMapDocument(JSON.parse(fs.readFileSync(path.join(FIX, name), 'utf8')));
	assert.ok(typeof d !== 'string', `${name}: ${d}`);
	return d;
}

describe('map schema validation', () => {
	it('accepts the real 4-rank captures and the generated 1 024-rank map', () => {
		assert.equal(load('map-4-openmpi-vader.json').pairs.length, 6);
		assert.equal(load('map-4-openmpi-tcp.json').pairs.length, 6);
		const big = load('map-1024.json');
		assert.equal(big.world_size, 1024);
		assert.equal(big.pairs.length, 128 * 28 + (128 * 127) / 2);
		assert.ok(big.generated, 'a generated fixture says so');
	});
	it('rejects malformed documents with a reason', () => {
		const good = JSON.parse(fs.readFileSync(path.join(FIX, 'map-4-openmpi-vader.json'), 'utf8')) as Record<string, unknown>;
		const bad = (patch: (d: Record<string, unknown> & { pairs: Array<Record<string, unknown>> }) => void): string => {
			const d = JSON.parse(JSON.stringify(good)) as Record<string, unknown> & { pairs: Array<Record<string, unknown>> };
			patch(d);
			const r = validateMapDocument(d);
			assert.equal(typeof r, 'string');
			return r as string;
		};
		assert.match(bad(d => { d.schema = 'gpumpi.map/2'; }), /schema/);
		assert.match(bad(d => { d.pairs[0].b = 99; }), /out of range/);
		assert.match(bad(d => { d.pairs[0].a = d.pairs[0].b; }), /out of range/);
		assert.match(bad(d => { d.pairs[0].class = 'warp_drive'; }), /unknown class/);
		assert.match(bad(d => { d.pairs[0].bandwidth_gbps = -1; }), /bad bandwidth/);
		assert.match(bad(d => { d.world_size = 1e9; }), /world_size/);
		assert.equal(validateMapDocument(null), 'not a JSON object');
		assert.equal(validateMapDocument([]), 'not a JSON object');
	});
});

describe('map evidence (runner side)', () => {
	const stderr = fs.readFileSync(path.join(FIX, 'ob1-vader-4.stderr.txt'), 'utf8');

	it('maps every Open MPI bml line of a real run to its pair through the rank lines', () => {
		const btl = parseBtlPairs(stderr);
		for (let a = 0; a < 4; a++) {
			for (let b = 0; b < 4; b++) { assert.equal(btl.get(`${a}>${b}`), a === b ? 'self' : 'vader', `${a}>${b}`); }
		}
		assert.equal(parseBtlPairs('garbage\n[x:1] mca: bml: Using vader btl for send to [[1,1],0] on node x').size, 0, 'no rank line: no guess');
	});

	it('joins the evidence to the engine document without changing host-memory classes', () => {
		const doc = load('map-4-openmpi-vader.json');
		const bare: MapDocument = { ...doc, pairs: doc.pairs.map(p => ({ a: p.a, b: p.b, same_host: p.same_host, class: p.class, reason: p.reason, evidence: [p.evidence[0]], status: p.status, bandwidth_gbps: p.bandwidth_gbps, latency_us: p.latency_us })) };
		const out = applyEvidence(bare, '', stderr);
		for (const p of out.pairs) {
			assert.equal(p.class, 'host_memory');
			assert.equal(p.channel, 'shared_memory');
			assert.deepEqual(p.transport, { btlAB: 'vader', btlBA: 'vader', ucxLanes: [] });
			assert.ok(p.evidence.includes(`Open MPI btl: vader (${p.a}→${p.b}), vader (${p.b}→${p.a})`));
		}
		assert.equal(bare.pairs[0].channel, undefined, 'the input is not changed');
	});

	// Device-memory pairs are built by hand: this machine has no GPU, so no real p2p/same_gpu pair exists here.
	const gpuPair: MapPair = { a: 0, b: 1, same_host: true, class: 'same_gpu', reason: 'engine', evidence: [], status: 'ok', bandwidth_gbps: 100, latency_us: 3 };
	it('a GPU path over a btl without GPU support is host staging; smcuda keeps it', () => {
		const tcp = refineClass(gpuPair, 'device', { btlAB: 'tcp', btlBA: 'tcp', ucxLanes: [] });
		assert.equal(tcp.cls, 'host_staging');
		assert.ok(tcp.evidence.some(e => /tcp btl has no GPU path/.test(e)));
		assert.equal(refineClass(gpuPair, 'device', { btlAB: 'smcuda', btlBA: 'smcuda', ucxLanes: [] }).cls, 'same_gpu');
		assert.equal(refineClass(gpuPair, 'host', { btlAB: 'tcp', btlBA: 'tcp', ucxLanes: [] }).cls, 'same_gpu', 'only device memory is refined');
		assert.equal(refineClass(gpuPair, 'device', undefined).cls, 'same_gpu');
	});
	it('UCX cuda_copy without cuda_ipc on one host is host staging; cuda_ipc keeps the GPU path', () => {
		assert.equal(refineClass({ ...gpuPair, class: 'p2p' }, 'device', { btlAB: null, btlBA: null, ucxLanes: ['cuda_copy/cuda', 'sysv/memory'] }).cls, 'host_staging');
		const ipc = refineClass({ ...gpuPair, class: 'p2p' }, 'device', { btlAB: null, btlBA: null, ucxLanes: ['cuda_copy/cuda', 'cuda_ipc/cuda'] });
		assert.equal(ipc.cls, 'p2p');
		assert.ok(ipc.evidence.some(e => /cuda_ipc/.test(e)));
	});
	it('channel: from the btl when logged, else from the hosts', () => {
		assert.equal(pairChannel({ a: 0, b: 1, same_host: true }, { btlAB: 'tcp', btlBA: null, ucxLanes: [] }), 'network');
		assert.equal(pairChannel({ a: 0, b: 1, same_host: true }, undefined), 'shared_memory');
		assert.equal(pairChannel({ a: 0, b: 1, same_host: false }, undefined), 'network');
	});
});

describe('map layout for the webview', () => {
	it('4 ranks on one host without GPU: one host, one group, distinct dots inside it, 6 edges', () => {
		const doc = load('map-4-openmpi-vader.json');
		const v = layoutMap(doc);
		assert.equal(v.hosts.length, 1);
		assert.equal(v.hosts[0].gpus.length, 1);
		assert.equal(v.hosts[0].gpus[0].label, 'no GPU');
		const g = v.hosts[0].gpus[0];
		const pos = new Set([...v.ranks.values()].map(r => `${r.x.toFixed(1)},${r.y.toFixed(1)}`));
		assert.equal(pos.size, 4);
		for (const r of v.ranks.values()) { assert.ok(r.x > g.x && r.x < g.x + g.w && r.y > g.y && r.y < g.y + g.h, `rank ${r.rank} outside its box`); }
		assert.equal(v.edges.length, 6);
		assert.ok(v.bwMax >= v.bwMin && v.bwMin > 0);
		const none = layoutMap(doc, { classes: new Set(['p2p']), hosts: null });
		assert.equal(none.edges.length, 0, 'class filter');
	});
	it('1 024 ranks: 128 host boxes without overlap, host filter keeps only touching edges', () => {
		const doc = load('map-1024.json');
		const v = layoutMap(doc);
		assert.equal(v.hosts.length, 128);
		assert.equal(v.ranks.size, 1024);
		for (let i = 1; i < v.hosts.length; i++) {
			const a = v.hosts[i - 1], b = v.hosts[i];
			assert.ok(b.x >= a.x + a.w || b.y >= a.y + a.h, `hosts ${i - 1} and ${i} overlap`);
		}
		const one = layoutMap(doc, { ...allFilter(), hosts: new Set(['node005']) });
		assert.equal(one.edges.length, 28 + 127);
		assert.ok(one.edges.every(e => doc.ranks[e.pair.a].host === 'node005' || doc.ranks[e.pair.b].host === 'node005'));
	});
	it('matrix: symmetric, measured cells exact, sampled host blocks filled from their representative pair', () => {
		const doc = load('map-1024.json');
		const m = bandwidthMatrix(doc);
		assert.equal(m.n, 1024);
		const p = doc.pairs.find(x => !x.same_host)!;
		assert.equal(m.values[p.a * 1024 + p.b], p.bandwidth_gbps);
		assert.equal(m.values[p.b * 1024 + p.a], p.bandwidth_gbps);
		assert.equal(m.representative[p.a * 1024 + p.b], 0);
		// Rank 9 is on node001 with rank 8; the pair (1, 9) was not measured: it shows the (0, 8) representative.
		const rep = doc.pairs.find(x => x.a === 0 && x.b === 8)!;
		assert.equal(m.values[1 * 1024 + 9], rep.bandwidth_gbps);
		assert.equal(m.representative[1 * 1024 + 9], 1);
		assert.ok(Number.isNaN(m.values[0]), 'the diagonal is not measured');
		const small = bandwidthMatrix(load('map-4-openmpi-vader.json'));
		assert.equal(small.representative.reduce((s, x) => s + x, 0), 0, 'an all-pairs map has no representative cells');
	});
	it('edge widths grow with bandwidth; the heat scale runs dark to bright', () => {
		assert.equal(edgeWidth(1, 1, 100), 1);
		assert.equal(edgeWidth(100, 1, 100), 6);
		assert.ok(edgeWidth(10, 1, 100) > 1 && edgeWidth(10, 1, 100) < 6);
		assert.equal(edgeWidth(null, 1, 100), 1);
		const lum = (c: [number, number, number]): number => c[0] + c[1] + c[2];
		assert.ok(lum(heatColor(0)) < lum(heatColor(0.5)) && lum(heatColor(0.5)) < lum(heatColor(1)));
		assert.deepEqual(heatColor(Number.NaN), heatColor(0));
	});
	it('SVG export escapes hostile host names', () => {
		const doc = load('map-4-openmpi-vader.json');
		const evil: MapDocument = { ...doc, ranks: doc.ranks.map(r => ({ ...r, host: '<script>alert(1)</script>"&' })) };
		const svg = mapToSvg(evil, layoutMap(evil), DEFAULT_PALETTE, { fg: '#fff', bg: '#000', box: '#888' });
		assert.ok(!svg.includes('<script>'));
		assert.ok(svg.includes('&lt;script&gt;'));
		assert.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"'));
	});
});

describe('map webview messages', () => {
	it('accepts the map messages and rejects everything else', () => {
		assert.ok(asFromMapWebviewEnvelope({ kind: 'request', id: 1, body: { type: 'ready' } }));
		assert.ok(asFromMapWebviewEnvelope({ kind: 'request', id: 2, body: { type: 'export', format: 'svg', data: '<svg/>' } }));
		assert.ok(asFromMapWebviewEnvelope({ kind: 'request', id: 3, body: { type: 'export', format: 'png', data: 'data:image/png;base64,AAAA' } }));
		assert.equal(asFromMapWebviewEnvelope({ kind: 'request', id: 3, body: { type: 'export', format: 'png', data: 'file:///etc/passwd' } }), null);
		assert.equal(asFromMapWebviewEnvelope({ kind: 'request', id: 4, body: { type: 'export', format: 'exe', data: '' } }), null);
		assert.equal(asFromMapWebviewEnvelope({ kind: 'event', body: { type: 'copy', text: 'x' } }), null, 'a diagnostics message is not a map message');
		assert.equal(asFromMapWebviewEnvelope({ kind: 'request', body: { type: 'ready' } }), null, 'request without id');
		assert.equal(asFromMapWebviewEnvelope('ready'), null);
		// JSON export: the host writes its own document; a webview's JSON text is refused.
		assert.ok(asFromMapWebviewEnvelope({ kind: 'request', id: 5, body: { type: 'export', format: 'json', data: '' } }));
		assert.equal(asFromMapWebviewEnvelope({ kind: 'request', id: 5, body: { type: 'export', format: 'json', data: '{"schema":"x"}' } }), null);
		// Drill-downs name one or two hosts; pairs two rank numbers; the rendered report numbers.
		assert.ok(asFromMapWebviewEnvelope({ kind: 'request', id: 6, body: { type: 'drill', hosts: ['node0001'] } }));
		assert.ok(asFromMapWebviewEnvelope({ kind: 'request', id: 6, body: { type: 'drill', hosts: ['node0001', 'node0002'] } }));
		for (const hosts of [[], ['a', 'b', 'c'], [''], [5], 'node0001', ['x'.repeat(257)]]) {
			assert.equal(asFromMapWebviewEnvelope({ kind: 'request', id: 6, body: { type: 'drill', hosts } }), null, JSON.stringify(hosts).slice(0, 40));
		}
		assert.ok(asFromMapWebviewEnvelope({ kind: 'request', id: 7, body: { type: 'pair', a: 0, b: 16383 } }));
		for (const [a, b] of [[-1, 2], [1.5, 2], ['1', 2], [1, null]]) { assert.equal(asFromMapWebviewEnvelope({ kind: 'request', id: 7, body: { type: 'pair', a, b } }), null); }
		assert.ok(asFromMapWebviewEnvelope({ kind: 'request', id: 8, body: { type: 'cancelRun' } }));
		assert.ok(asFromMapWebviewEnvelope({ kind: 'request', id: 9, body: { type: 'rendered', view: 'nodes', nodes: 2048, cells: 2097920, outliers: 4, ms: 80.5 } }));
		assert.equal(asFromMapWebviewEnvelope({ kind: 'request', id: 9, body: { type: 'rendered', view: 'nodes', nodes: NaN, cells: 1, outliers: 0, ms: 1 } }), null);
	});
	it('the diagnostics panel validator still behaves as before', () => {
		assert.ok(asFromWebviewEnvelope({ kind: 'event', body: { type: 'copy', text: 'x' } }));
		assert.ok(asFromWebviewEnvelope({ kind: 'reply', inReplyTo: 3 }));
		assert.equal(asFromWebviewEnvelope({ kind: 'event', body: { type: 'copy', text: 5 } }), null);
		assert.equal(asFromWebviewEnvelope({ kind: 'event', body: { type: 'runMap' } }), null);
	});
});

describe('gpumpi-doctor map (CLI, no run)', () => {
	const run = async (argv: string[]): Promise<{ code: number; out: string; err: string }> => {
		let out = '', err = '';
		const { mapMain } = await import('../../extension/cli/mapCli');
		const code = await mapMain(argv, { stdout: t => { out += t; }, stderr: t => { err += t; }, cwd: process.cwd(), signal: new AbortController().signal });
		return { code, out, err };
	};
	it('--from-json prints a saved map as a table', async () => {
		const r = await run(['--from-json', 'test-fixtures/map/map-4-openmpi-vader.json']);
		assert.equal(r.code, 0, r.err);
		assert.match(r.out, /Transport map: 4 ranks, 6 of 6 pairs, host memory/);
		assert.equal(r.out.split('\n').filter(l => /^\s+\d-\d\s+host memory only\s+shared memory/.test(l)).length, 6);
	});
	it('usage errors exit 2, unreadable or invalid files exit 3', async () => {
		assert.equal((await run(['--np', '1'])).code, 2);
		assert.equal((await run(['--pairs', 'most'])).code, 2);
		assert.equal((await run(['--bogus'])).code, 2);
		assert.equal((await run(['--from-json', 'test-fixtures/map/does-not-exist.json'])).code, 3);
		const notMap = await run(['--from-json', 'package.json']);
		assert.equal(notMap.code, 3);
		assert.match(notMap.err, /package\.json: not a map: schema/);
		const notJson = await run(['--from-json', 'README.md']);
		assert.equal(notJson.code, 3);
		assert.match(notJson.err, /README\.md: not JSON: /);
	});
});

describe('map edge labels', () => {
	it('the Slurm 2+2 map (real, srun across two nodes): the four crowded inter-host labels get boxes that do not overlap', () => {
		const doc = load('slurm-lab-map-2026-12-02.json');
		assert.deepEqual([...new Set(doc.ranks.map(r => r.host))].sort(), ['host-b', 'host-c']);
		assert.match(doc.runner?.command.join(' ') ?? '', /srun --job-name=gpumpi-[0-9a-f]{8} --kill-on-bad-exit=1 --mpi=pmix -N2 -n 4 /);
		const view = layoutMap(doc);
		// Label boxes as the panel draws them at 1 200 px wide (~50 × 16 px "0.8 GB/s"), in layout units.
		const scale = Math.min(4, 1175 / view.width); // the panel fits the width, at most 4×
		const w = 50 / scale, h = 16 / scale;
		const spots = placeEdgeLabels(view.edges, view.edges.map(() => w), h);
		assert.equal(spots.length, 6);
		for (let i = 0; i < spots.length; i++) {
			for (let j = i + 1; j < spots.length; j++) {
				const apart = Math.abs(spots[i].x - spots[j].x) >= w || Math.abs(spots[i].y - spots[j].y) >= h;
				assert.ok(apart, `labels ${i} and ${j} overlap at ${JSON.stringify([spots[i], spots[j]])}`);
			}
		}
		// Without the sliding, the middles of the inter-host curves do overlap (what the picture looked like before).
		const mids = view.edges.map(e => ({ x: 0.25 * e.x1 + 0.5 * e.cx + 0.25 * e.x2, y: 0.25 * e.y1 + 0.5 * e.cy + 0.25 * e.y2 }));
		assert.ok(mids.some((a, i) => mids.some((b, j) => j > i && Math.abs(a.x - b.x) < w && Math.abs(a.y - b.y) < h)));
	});

	it('a lone edge keeps its label in the middle of its curve', () => {
		const [spot] = placeEdgeLabels([{ x1: 0, y1: 0, x2: 100, y2: 0, cx: 50, cy: 40 }], [30], 12);
		assert.deepEqual(spot, { x: 50, y: 20 });
	});
});

// A map run that printed no document keeps what its output said (explain-latency keeps only this line per trial).
describe('map runner: the lines that say why a run printed no map', () => {
	it('Open MPI 5.0.7 on the H100, smcuda,self with host buffers (exit 14): the help block\'s first line and the attempted BTLs, not the verbose listing', () => {
		const text = fs.readFileSync(path.join(FIX, 'h100-testbed', 'smcuda-host-memory.stderr'), 'utf8');
		assert.deepEqual(failureLines(text), [
			'At least one pair of MPI processes are unable to reach each other for',
			'BTLs attempted: self',
			'MPI_INIT has failed because at least one MPI process is unreachable',
		]);
	});

	it('the same line from several ranks once; a btl parameter line ("btl: smcuda: cuda_max_send_size=…") is no cause; nothing to say: none', () => {
		assert.deepEqual(failureLines('[vm:1] btl: smcuda: cuda_max_send_size=131072\n[vm:1] *** An error occurred in MPI_Init\n[vm:2] *** An error occurred in MPI_Init\n'), ['[vm:1] *** An error occurred in MPI_Init']);
		assert.deepEqual(failureLines('all fine\n'), []);
	});
});
