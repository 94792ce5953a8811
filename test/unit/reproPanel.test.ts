/**
 * The reproducer panel's pure parts: the SVG chart builder (escaping, log2 axis, empty data), the results markup
 * on the real H200 fixture (badges, verdicts, escaping of hostile evidence), the panel HTML (CSP with nonce, no
 * inline script or style), the message validator, and the validation of the user's choices.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildLineChart, niceMax } from '../../media/repro/chart';
import { renderReproHtml } from '../../media/repro/render';
import { configsFromChoices, DEFAULT_CHOICES, validateChoices } from '../../extension/core/repro/reproChoices';
import { loadReproText } from '../../extension/core/repro/reproFile';
import { toolbarAndContent, webviewHtml } from '../../extension/shared/webviewHtml';
import { asFromReproWebviewEnvelope, asToReproWebviewEnvelope } from '../../extension/shared/reproProtocol';

const FIXTURE = path.resolve('test-fixtures/repro/h200-testbed/repro-2026-12-02.json');
const fmt = { formatX: (x: number) => `${x} B`, formatY: (y: number) => y.toFixed(1), emptyText: 'nothing', xLabel: 'size', yLabel: 'GB/s' };

describe('repro chart (SVG builder)', () => {
	it('places sizes on a log2 axis: equal spacing for ×4 steps, one tick per power of two', () => {
		const svg = buildLineChart({ ...fmt, title: 't', series: [{ name: 'mpi', points: [1024, 4096, 16384].map((x, i) => ({ x, y: i + 1 })) }], width: 400 });
		const cx = [...svg.matchAll(/<circle cx="([\d.]+)"/g)].map(m => Number(m[1]));
		assert.equal(cx.length, 3 + 1, 'three points and one legend marker');
		assert.ok(Math.abs((cx[1] - cx[0]) - (cx[2] - cx[1])) < 0.2, `equal spacing: ${cx.join(', ')}`);
		for (const e of [10, 11, 12, 13, 14]) { assert.ok(svg.includes(`>${2 ** e} B<`), `tick for 2^${e}`); }
		assert.match(svg, /<polyline points="[^"]+"\/>/);
		assert.match(svg, /<title>mpi: 4096 B → 2\.0<\/title>/);
	});

	it('escapes every text (title, series names, tick labels) and emits no style attributes', () => {
		const svg = buildLineChart({ ...fmt, title: '<script>x</script>', series: [{ name: '"><img src=x onerror=alert(1)>', points: [{ x: 2, y: 1 }] }], formatX: () => '<b>' });
		assert.doesNotMatch(svg, /<script|<img|<b>/);
		assert.match(svg, /&lt;script&gt;x&lt;\/script&gt;/);
		assert.match(svg, /&quot;&gt;&lt;img src=x onerror=alert\(1\)&gt;/);
		assert.doesNotMatch(svg, /style=/);
	});

	it('empty or unusable data gives the empty text, never NaN coordinates', () => {
		const svg = buildLineChart({ ...fmt, title: 't', series: [{ name: 'a', points: [] }, { name: 'b', points: [{ x: 0, y: 1 }, { x: NaN, y: 2 }, { x: 8, y: Infinity }] }] });
		assert.match(svg, /class="chart-empty"[^>]*>nothing</);
		assert.doesNotMatch(svg, /NaN|Infinity/);
		const one = buildLineChart({ ...fmt, title: 't', series: [{ name: 'a', points: [{ x: 64, y: 0 }] }] });
		assert.doesNotMatch(one, /NaN|Infinity/);
		assert.deepEqual(niceMax(35.86), { max: 50, step: 10 });
		assert.deepEqual(niceMax(0), { max: 1, step: 0.25 });
	});
});

describe('repro panel markup on the real H200 result', () => {
	const loaded = loadReproText(fs.readFileSync(FIXTURE, 'utf8'));
	const html = renderReproHtml({ ipc: loaded.ipc, fallback: loaded.fallback, source: 'repro-2026-12-02.json (saved device result)' });

	it('puts IPC and fallback results of one host side by side, and only when both exist', () => {
		assert.ok(loaded.ipc && loaded.fallback.length > 0, 'the fixture has both');
		const cols = /<div class="side-by-side"><div class="column column-ipc"><section class="ipc">[\s\S]*<\/section><\/div><div class="column column-fallback"><section class="fallback" id="fallback-0">/;
		assert.match(html, cols);
		const ipcOnly = renderReproHtml({ ipc: loaded.ipc, fallback: [], source: 'x' });
		const fbOnly = renderReproHtml({ ipc: null, fallback: loaded.fallback, source: 'x' });
		assert.doesNotMatch(ipcOnly, /side-by-side/);
		assert.doesNotMatch(fbOnly, /side-by-side/);
		assert.equal((html.match(/<div /g) ?? []).length - (html.match(/<\/div>/g) ?? []).length, 0, 'balanced divs');
	});

	it('shows the config × variant matrix with the crash badge (rank 3, signal 11)', () => {
		assert.equal((html.match(/<tr><th scope="row">/g) ?? []).length, 3);
		// One mark per trial (a button that opens the trial's log), the class badge and the rate sentence.
		assert.match(html, /<button type="button" class="trial trial-crashed" data-config="ucx UCX_TLS=\^cuda_ipc" data-variant="send-from-import" data-trial="1" title="trial 1 of 1: crashed · rank 3 · signal 11/);
		assert.equal((html.match(/class="trial trial-correct"/g) ?? []).length, 11);
		assert.equal((html.match(/class="badge class-inconclusive"/g) ?? []).length, 13, 'one trial each: never a verdict');
		assert.match(html, /verdict-unknown">Inconclusive: /);
		assert.doesNotMatch(html, /verdict-ok">Yes/);
		assert.match(html, /<h3>Failure modes<\/h3>.*crashed \(SIGSEGV\): SIGSEGV in ucp_dt_pack — <strong>1 of 1<\/strong>/s);
		assert.match(html, /class="open-log" data-config="ucx UCX_TLS=\^cuda_ipc" data-variant="send-from-import" data-trial="1"/);
	});

	it('draws two charts per fallback configuration, with the 775 MiB point as a tooltip', () => {
		assert.equal((html.match(/<svg /g) ?? []).length, 12);
		assert.match(html, /<title>mpi: 1 GiB → 775<\/title>/);
		assert.match(html, /<title>mpi: 1 GiB → 36<\/title>/);
	});

	it('escapes hostile evidence', () => {
		const ipc = structuredClone(loaded.ipc!);
		ipc.variants[0].failureModes = [{ key: 'k', label: '<img src=x>', outcome: 'mpi_error', signal: null, count: 1, trials: [1], ranks: [], signatures: [], explanations: ['<img src=x onerror=alert(1)>'], sampleTrial: 1, sampleLog: '', sampleEvidence: ['<img src=x onerror=alert(1)>'] }];
		ipc.variants[0].config = '<script>alert(1)</script>';
		ipc.variants[0].runs[0].config = '<script>alert(1)</script>';
		ipc.variants[0].runs[0].detail = '"><img src=x>';
		const h = renderReproHtml({ ipc, fallback: [], source: '<b>' });
		assert.doesNotMatch(h, /<img|<script|<b>/);
	});
});

describe('repro panel HTML and messages', () => {
	const html = webviewHtml({ cspSource: 'vscode-webview://abc', nonce: 'AbCdEfGhIjKlMnOpQrSt', scriptUri: 'vscode-webview://abc/dist/repro.js', styleUri: 'vscode-webview://abc/dist/repro.css', lang: 'en', title: 'T', bodyHtml: toolbarAndContent('<button type="button" id="copy-bug-report" disabled>Copy as bug report</button>', '…') });

	it('has a strict CSP with the nonce and no inline script or style', () => {
		const csp = (/<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1] ?? '').replace(/&#39;/g, "'");
		assert.match(csp, /default-src 'none'/);
		assert.match(csp, /script-src 'nonce-AbCdEfGhIjKlMnOpQrSt'(;|$)/);
		assert.match(csp, /style-src vscode-webview:\/\/abc(;|$)/);
		assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
		const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
		assert.equal(scripts.length, 1);
		assert.match(scripts[0][1], /nonce="AbCdEfGhIjKlMnOpQrSt" src="vscode-webview:\/\/abc\/dist\/repro\.js"/);
		assert.equal(scripts[0][2].trim(), '', 'no inline script body');
		assert.doesNotMatch(html, /<style|\sstyle=|\son\w+=/);
		assert.throws(() => webviewHtml({ cspSource: 'x', nonce: "a' 'unsafe-inline", scriptUri: '', styleUri: '', lang: '', title: '', bodyHtml: '' }));
		assert.throws(() => webviewHtml({ cspSource: 'x', nonce: 'AbCdEfGhIjKlMnOpQrSt', scriptUri: '', styleUri: '', lang: '', title: '', bodyHtml: '', bodyAttributes: { 'onload=alert(1) x': '' } }));
		const withStrings = webviewHtml({ cspSource: 'x', nonce: 'AbCdEfGhIjKlMnOpQrSt', scriptUri: '', styleUri: '', lang: '', title: '', bodyHtml: '', bodyAttributes: { 'data-strings': '"><script>' }, imgSources: ['data:'] });
		assert.match(withStrings, /<body data-strings="&quot;&gt;&lt;script&gt;">/);
		assert.match(withStrings, /img-src x data:/);
	});

	it('accepts only well-formed messages from the webview', () => {
		assert.ok(asFromReproWebviewEnvelope({ kind: 'request', id: 1, body: { type: 'ready' } }));
		assert.ok(asFromReproWebviewEnvelope({ kind: 'request', id: 2, body: { type: 'copyBugReport' } }));
		assert.equal(asFromReproWebviewEnvelope({ kind: 'request', id: 2, body: { type: 'copyBugReport', extra: 1 } }), null);
		assert.equal(asFromReproWebviewEnvelope({ kind: 'request', id: 3, body: { type: 'copy', text: 5 } }), null);
		assert.equal(asFromReproWebviewEnvelope({ kind: 'request', body: { type: 'ready' } }), null);
		assert.equal(asFromReproWebviewEnvelope({ kind: 'event', body: { type: 'rerun' } }), null);
		assert.equal(asFromReproWebviewEnvelope('ready'), null);
		assert.ok(asToReproWebviewEnvelope({ kind: 'event', body: { type: 'reproBusy', busy: true, message: 'x' } }));
		assert.equal(asToReproWebviewEnvelope({ kind: 'event', body: { type: 'showRepro', data: { ipc: null } } }), null);
	});
});

describe('repro choices (QuickPick values, workspaceState, command arguments)', () => {
	it('refuses hostile or malformed values with a reason', () => {
		assert.equal(typeof validateChoices({ size: '64M; rm -rf /' }), 'string');
		assert.equal(typeof validateChoices({ mpirun: '--help' }), 'string');
		assert.equal(typeof validateChoices({ mpirun: 'mpirun\nrm' }), 'string');
		assert.equal(typeof validateChoices({ variants: ['direct', '$(id)'] }), 'string');
		assert.equal(typeof validateChoices({ presets: ['1BAD=x'] }), 'string');
		assert.equal(typeof validateChoices({ sizes: '1M..1G,7' }), 'string');
		assert.equal(typeof validateChoices({ baseline: false, presets: [] }), 'string');
		assert.equal(typeof validateChoices([]), 'string');
	});

	it('one configuration per preset, side by side; custom values stay one item', () => {
		const c = validateChoices({ presets: ['UCX_TLS=^cuda_ipc', '--mca btl_smcuda_use_cuda_ipc 0', 'MY_VAR=a b;c'], loopback: true });
		assert.ok(typeof c !== 'string');
		const configs = configsFromChoices(c, 'openmpi');
		assert.deepEqual(configs.map(x => x.label), ['default', 'UCX_TLS=^cuda_ipc', '--mca btl_smcuda_use_cuda_ipc 0', 'MY_VAR=a b;c']);
		assert.deepEqual(configs[1].env, [['UCX_NET_DEVICES', 'lo'], ['UCX_TLS', '^cuda_ipc']]);
		assert.deepEqual(configs[1].mca.map(m => m[0]), ['pml', 'pml_ucx_tls', 'pml_ucx_devices']);
		assert.deepEqual(configs[3].env[1], ['MY_VAR', 'a b;c']);
		// MPICH: MCA-only presets are dropped, environment presets keep only their environment.
		const m = configsFromChoices(c, 'mpich');
		assert.deepEqual(m.map(x => x.label), ['default', 'UCX_TLS=^cuda_ipc', 'MY_VAR=a b;c']);
		assert.ok(m.every(x => x.mca.length === 0));
		assert.deepEqual(validateChoices({}), DEFAULT_CHOICES);
	});
});
