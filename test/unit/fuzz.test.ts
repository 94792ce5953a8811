/**
 * Fuzz analyze() with damaged versions of the real fixtures (fixed-seed PRNG, bounded iterations):
 * truncated, reordered, byte-flipped, random bytes, printable garbage and multi-MB outputs. analyze() must never
 * throw, must return a summary, and must say (a parse-problem finding naming the output) when it could not read one.
 * The damaged inputs are synthetic by design: they stand for broken tools and hostile files.
 */
import * as assert from 'node:assert/strict';
import { analyze } from '../../extension/core/analyze';
import type { RawOutput } from '../../extension/shared/report';
import { prng } from './prng';
import { debianRaw, fixtureText, h200Engine, h200Raw, rawFromFixture, rawText } from './rules/fixtureRaw';

const rand = prng(0x5eed);
const int = (n: number): number => Math.floor(rand() * n);

function randomBytes(n: number): string {
	const b = Buffer.alloc(n);
	for (let i = 0; i < n; i++) { b[i] = int(256); }
	return b.toString(rand() < 0.5 ? 'utf8' : 'latin1');
}

function printableGarbage(lines: number): string {
	const out: string[] = [];
	for (let i = 0; i < lines; i++) {
		const words: string[] = [];
		for (let w = 0, n = 1 + int(6); w < n; w++) { words.push(Array.from({ length: 1 + int(8) }, () => String.fromCharCode(97 + int(26))).join('')); }
		out.push(words.join(' '));
	}
	return out.join('\n') + '\n';
}

function shuffleLines(text: string): string {
	const l = text.split('\n');
	for (let i = l.length - 1; i > 0; i--) { const j = int(i + 1); [l[i], l[j]] = [l[j], l[i]]; }
	return l.join('\n');
}

function flipBytes(text: string): string {
	const chars = text.split('');
	for (let k = 0, n = 1 + int(20); k < n && chars.length > 0; k++) { chars[int(chars.length)] = String.fromCharCode(int(0x250)); }
	return chars.join('');
}

/** A window of a large text so most iterations stay cheap (the full text is used by the huge cases). */
function window(text: string, max: number): string {
	if (text.length <= max) { return text; }
	const start = int(text.length - max);
	return text.slice(start, start + max);
}

function mutate(text: string, kind: number): string {
	switch (kind) {
		case 0: return window(text, 30000).slice(0, int(Math.min(text.length, 30000) + 1)); // truncated
		case 1: return shuffleLines(window(text, 30000)); // reordered
		case 2: return flipBytes(window(text, 30000)); // corrupted bytes
		default: return window(text, 30000) + randomBytes(int(200)); // trailing junk
	}
}

/** Every raw output with its real fixture text (the corpus being damaged). */
const CORPUS: RawOutput[] = [...debianRaw(), ...h200Raw().filter((r) => !['ompi_info', 'mpirun_version', 'env'].includes(r.id)),
	h200Engine('inspect-np4-nocp.json'), rawFromFixture('h200-testbed', 'ucx_info_c'),
	// libfabric's fi_info, the real Debian 12 capture (the FI_HMEM run with its start-up log on stderr)
	rawText('fi_info_hmem', fixtureText('debian12-libfabric', 'fi_info_hmem.txt'), { stderr: fixtureText('debian12-libfabric', 'fi_info_hmem.stderr.txt') }),
	rawFromFixture('debian12-libfabric', 'fi_info_version'), rawFromFixture('debian12-libfabric', 'fi_info'),
	// sysfs outputs in sysCollect.ts's format (this machine's real capture is empty; these lines are synthetic).
	rawText('sys_modules', 'nvidia_peermem 16384 0 - Live 0x0 (OE)\nnvidia 9871360 1 nvidia_peermem, Live 0x0 (OE)\n/sys/module/nvidia_peermem/version=580.159.04\n'),
	rawText('sys_infiniband', 'mlx5_0\tport=1\tstate=4: ACTIVE\tlink_layer=InfiniBand\trate=200 Gb/sec (4X HDR)\tnuma_node=0\tpci=0000:3b:00.0\n'),
	rawText('sys_gpu_numa', '0000:19:00.0\tclass=0x030200\tnuma_node=1\tlocal_cpulist=48-95\n')]
	.filter((r) => r.stdout !== '');

function mustAnalyze(raw: RawOutput[]): ReturnType<typeof analyze> {
	let a: ReturnType<typeof analyze> | undefined;
	assert.doesNotThrow(() => { a = analyze(raw, 'fuzz'); }, `analyze threw on ${raw.map((r) => r.id).join(',')}`);
	assert.ok(a && Array.isArray(a.findings) && typeof a.summary.mpi.label === 'string');
	return a;
}

function hasParseProblem(a: ReturnType<typeof analyze>, id: string): boolean {
	return a.findings.some((f) => f.id === 'parse-problem' && f.title === `Could not fully read ${id}`);
}

describe('fuzz analyze()', function () {
	this.timeout(20000);

	it('never throws on truncated, reordered, corrupted outputs (≈200 per parser)', () => {
		let runs = 0;
		for (const r of CORPUS) {
			const n = r.id === 'ompi_info' ? 120 : 200;
			for (let i = 0; i < n; i++) {
				mustAnalyze([{ ...r, stdout: mutate(r.stdout, i % 4) }]);
				runs++;
			}
		}
		assert.ok(runs > 2000);
	});

	it('says it could not read random bytes, for every output', () => {
		for (const r of CORPUS) {
			for (let i = 0; i < 20; i++) {
				const a = mustAnalyze([{ ...r, stdout: randomBytes(64 + int(4000)) }]);
				assert.ok(hasParseProblem(a, r.id), `no parse finding for random bytes in ${r.id}`);
			}
		}
	});

	it('says so when a structured output (JSON, XML) is cut short', () => {
		for (const r of CORPUS.filter((x) => ['engine', 'probe', 'nvidia_smi_xml'].includes(x.id))) {
			for (let i = 0; i < 40; i++) {
				const cut = 1 + int(r.stdout.trimEnd().length - 30);
				const a = mustAnalyze([{ ...r, stdout: r.stdout.slice(0, cut) }]);
				assert.ok(hasParseProblem(a, r.id), `no parse finding for ${r.id} cut at ${cut}`);
			}
		}
	});

	it('says it could not read printable garbage', () => {
		for (const r of CORPUS.filter((x) => x.id !== 'sys_module_nvidia')) {
			for (let i = 0; i < 10; i++) {
				const a = mustAnalyze([{ ...r, stdout: printableGarbage(1 + int(50)) }]);
				assert.ok(hasParseProblem(a, r.id), `no parse finding for garbage in ${r.id}`);
			}
		}
	});

	it('handles multi-MB outputs in bounded time', () => {
		const big = fixtureText('debian12-cpu', 'ompi_info.txt').repeat(8); // ≈3.2 MB, 70 000 lines
		const t0 = Date.now();
		const a = mustAnalyze([{ id: 'ompi_info', command: ['ompi_info'], exitCode: 0, stdout: big, stderr: randomBytes(100000), durationMs: 1 }]);
		assert.equal(a.summary.mpi.label, 'Open MPI 4.1.4');
		const line = 'x'.repeat(4 * 1024 * 1024);
		const b = mustAnalyze([{ id: 'ucx_info_d', command: ['ucx_info', '-d'], exitCode: 0, stdout: line, stderr: '', durationMs: 1 }]);
		assert.ok(hasParseProblem(b, 'ucx_info_d'));
		assert.ok(b.findings.every((f) => f.evidence.every((e) => e.line.length <= 401)), 'evidence lines are capped');
		assert.ok(Date.now() - t0 < 8000);
	});

	it('reports failed and timed-out runs instead of parsing them', () => {
		const a = mustAnalyze([{ id: 'engine', command: ['mpirun', 'gpumpi', 'inspect'], exitCode: null, stdout: '', stderr: 'ORTE was unable to reliably start', durationMs: 60000, error: 'timed out after 60 s', timedOut: true }]);
		const f = a.findings.find((x) => x.id === 'parse-problem');
		assert.equal(f?.severity, 'warning');
		assert.match(f?.message ?? '', /timed out after 60 s/);
		assert.equal(f?.evidence[0].line, 'ORTE was unable to reliably start');
	});
});
