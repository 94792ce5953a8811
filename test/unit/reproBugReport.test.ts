/**
 * "Copy as bug report" on the REAL H200 testbed result (test-fixtures/repro/h200-testbed/repro-2026-12-02.json, written
 * by scripts/gpu/repro.sh on 2026-12-02: Open MPI 5.0.7 + UCX 1.13.1 with CUDA), plus the saved-result loader and
 * the `--markdown` CLI switch. The assertions are what that run showed, read through the product's own code.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { backtraceHead, bugReportMarkdown, reproduceArgs } from '../../extension/core/repro/bugReport';
import { posixQuote as shellQuote } from '../../extension/shared/shellQuote';
import { loadReproText, reproResultsDocument } from '../../extension/core/repro/reproFile';
import { reproMain } from '../../extension/cli/reproCli';
import { captureIo } from './cli/captureIo';
import type { Report } from '../../extension/shared/report';

const FIXTURE = path.resolve('test-fixtures/repro/h200-testbed/repro-2026-12-02.json');

async function capture(argv: string[]): Promise<{ code: number; out: string; err: string }> {
	const io = captureIo();
	const code = await reproMain(argv, io);
	return { code, out: io.out, err: io.err };
}

describe('repro bug report (Markdown) on the real H200 result', () => {
	const loaded = loadReproText(fs.readFileSync(FIXTURE, 'utf8'));
	const md = bugReportMarkdown({ ipc: loaded.ipc, fallback: loaded.fallback, outputs: loaded.outputs, source: 'repro-2026-12-02.json' });

	it('loads the device result: 13 ipc runs, 6 fallback configurations, raw outputs kept', () => {
		assert.equal(loaded.kind, 'device-result');
		assert.equal(loaded.ipc?.variants.length, 13);
		assert.equal(loaded.fallback.length, 6);
		assert.equal(Object.keys(loaded.outputs).length, 19);
	});

	it('names Open MPI 5.0.7 and the UCX version the runs loaded', () => {
		assert.match(md, /^- MPI library: Open MPI v5\.0\.7\b/m);
		assert.match(md, /^- UCX: 1\.13\.1 \(loaded from \/opt\/testbed2\/lib\/libucp\.so\.0\)/m);
		assert.match(md, /CUDA driver: not collected/);
	});

	it('reports send-from-import crashing under UCX_TLS=^cuda_ipc on rank 3 with signal 11, with the backtrace head', () => {
		// Rates per variant: one trial each in this file, so no verdict class, and the counts say 0 of 1 correct.
		assert.match(md, /\| ucx UCX_TLS=\^cuda_ipc \| send-from-import \| inconclusive \| 0 of 1 \| 1 \| 0 \| 0 \| 0 \| 0 \|/);
		assert.match(md, /\*\*send-from-import under ucx UCX_TLS=\^cuda_ipc: crashed \(SIGSEGV\): SIGSEGV in ucp_dt_pack\*\* — 1 of 1 trials \(trial 1; rank 3\)/);
		assert.match(md, /UCX copied the message with the CPU \(ucp_dt_pack/);
		assert.match(md, /==== backtrace \(tid:\s+2123\) ====\n 0 {2}\/opt\/testbed2\/lib\/libucs\.so\.0\(ucs_handle_error/);
		assert.match(md, /ucp_dt_pack\+0x4c/);
		// The deliberate crash hook is labelled as such, not presented as a finding.
		assert.match(md, /\| ob1 \| crash-test \(deliberate test hook\) \| inconclusive \| 0 of 1 \| 1 \|/);
	});

	it('reports the 775 MiB RSS growth at 1 GiB for UCX_TLS=sm,cuda_copy,self in the table and the verdict', () => {
		const section = md.slice(md.indexOf('### GPU-buffer fallback reproducer: ucx UCX_TLS=sm,cuda_copy,self\n'));
		assert.ok(section.length > 0);
		const own = section.slice(0, section.indexOf('\n### ') > 0 ? section.indexOf('\n### ') : undefined);
		assert.match(own, /^\| 1 GiB \| 35\.86 \| 3\.92 \| 4\.31 \| 775\.1 \| 0\.0 \| 0\.0 \|$/m);
		assert.match(own, /MPI needed 775\.1 MiB extra resident host memory/);
		assert.match(own, /gpumpi-doctor repro fallback --mpirun \/opt\/testbed2\/bin\/mpirun --pml-ucx .*--preset UCX_TLS=sm,cuda_copy,self --sizes 1M\.\.1G/);
	});

	it('gives the UCX lanes once per configuration and one reproduce line per ipc configuration', () => {
		assert.match(md, /^ucx: ep_cfg\[2\]: tag\(sysv\/memory cma\/memory cuda_ipc\/cuda\)$/m);
		assert.match(md, /^ucx UCX_TLS=\^cuda_ipc: ep_cfg\[2\]: tag\(sysv\/memory cma\/memory\)$/m);
		assert.equal((md.match(/^ucx: ep_cfg\[2\]/gm) ?? []).length, 1);
		assert.equal((md.match(/^gpumpi-doctor repro ipc /gm) ?? []).length, 3);
		assert.match(md, /^gpumpi-doctor repro ipc --mpirun \/opt\/testbed2\/bin\/mpirun --pml-ucx .*--preset 'UCX_TLS=\^cuda_ipc' --size 64M --variants direct,bounce,host,send-from-import --trials 1$/m);
	});

	it('adds CUDA driver, UCX label and GPUs from an inspection report of the session', () => {
		const inspect = { summary: { ucx: { label: 'UCX 1.13.1', cuda: 'yes', detail: '' }, cuda: { label: 'CUDA 12.8', driverVersion: '570.124.06' }, gpus: [{ index: 0, name: 'NVIDIA H200', pciBusId: '', memoryMiB: 143771 }] } } as unknown as Report;
		const m2 = bugReportMarkdown({ fallback: loaded.fallback.slice(0, 1), inspect });
		assert.match(m2, /CUDA driver: 570\.124\.06/);
		assert.match(m2, /GPUs: 0: NVIDIA H200/);
		assert.match(m2, /^- Host inspection: ran \(time unknown\)$/m);
		assert.doesNotMatch(m2, /Host inspection: none/);
	});

	it('says when no host inspection ran in the session', () => {
		const m3 = bugReportMarkdown({ fallback: loaded.fallback.slice(0, 1) });
		assert.match(m3, /^- Host inspection: none in this session \(run "GPU-MPI: Inspect Host" or `gpumpi-doctor inspect --json` and attach it\)$/m);
		const withHeadline = { summary: { ucx: { label: '', cuda: 'no', detail: '' }, cuda: { label: '', driverVersion: '' }, gpus: [] }, createdAt: '2026-12-03T10:00:00Z', headline: { verdict: 'fails', text: 'GPU buffers will fail here: X.', evidence: [] } } as unknown as Report;
		assert.match(bugReportMarkdown({ fallback: loaded.fallback.slice(0, 1), inspect: withHeadline }), /^- Host inspection: GPU buffers will fail here: X\. \(2026-12-03T10:00:00Z\)$/m);
	});

	it('hostile strings cannot break the Markdown structure or smuggle a shell command', () => {
		assert.equal(shellQuote("a'b; rm -rf /"), `'a'\\''b; rm -rf /'`);
		const ipc = structuredClone(loaded.ipc!);
		ipc.variants[0].config = 'x | y\n### injected';
		ipc.variants[0].runs[0].config = 'x | y\n### injected';
		ipc.variants[0].failureModes = [{ key: 'k', label: 'mpi error', outcome: 'mpi_error', signal: null, count: 1, trials: [1], ranks: [], signatures: [], explanations: [], sampleTrial: 1, sampleLog: '', sampleEvidence: ['```', 'pwned'] }];
		const m3 = bugReportMarkdown({ ipc });
		assert.match(m3, /\| x \\\| y ### injected \| direct \| inconclusive \|/);
		assert.doesNotMatch(m3, /^### injected/m);
		assert.match(m3, /^````\n```\npwned\n````$/m, 'fence longer than the content\'s backticks');
	});

	it('reproduceArgs drops the evidence switches and keeps presets as single items', () => {
		const args = reproduceArgs('ipc', ['mpirun', '--mca', 'btl_base_verbose', '100', '-x', 'UCX_LOG_LEVEL=info', '-x', 'UCX_TLS=$(id)', '-np', '4', '/b/gpumpi', 'repro', 'ipc', '--variant', 'direct', '--size', '1048576', '--memory', 'host', '--json']);
		assert.deepEqual(args, ['gpumpi-doctor', 'repro', 'ipc', '--preset', 'UCX_TLS=$(id)', '--memory', 'host', '--size', '1M', '--variants', 'direct']);
		assert.deepEqual(backtraceHead('no crash here\n'), []);
	});

	it('CLI: repro ipc --markdown --from-json prints the report; --json with --markdown is a usage error', async () => {
		const r = await capture(['ipc', '--markdown', '--from-json', FIXTURE]);
		assert.equal(r.code, 0, r.err);
		assert.match(r.out, /^## GPU-aware MPI: receiving into a CUDA IPC-imported GPU pointer/);
		assert.match(r.out, /crashed \(SIGSEGV\): SIGSEGV in ucp_dt_pack\*\* — 1 of 1 trials \(trial 1; rank 3\)/);
		assert.equal((await capture(['ipc', '--markdown', '--json', '--from-json', FIXTURE])).code, 2);
	});

	it('CLI: a saved --json report loads again (round trip) and gives the same Markdown table', async () => {
		const saved = await capture(['fallback', '--json', '--from-json', FIXTURE]);
		assert.equal(saved.code, 0);
		const again = loadReproText(saved.out);
		assert.equal(again.kind, 'report');
		assert.equal(again.fallback.length, 6);
		assert.match(bugReportMarkdown({ fallback: again.fallback }), /\| 1 GiB \| 35\.86 \| 3\.92 \| 4\.31 \| 775\.1 \|/);
		assert.throws(() => loadReproText('{"schema":"other"}'), /expected a JSON array/);
		assert.throws(() => loadReproText('not json'), /not JSON/);
	});
});

describe('the reproducer panel\'s "Save…" reads back (real H200 result)', () => {
	it('both reproducers of one host in one file: "Open Reproducer Result…" gets the same reports', () => {
		const loaded = loadReproText(fs.readFileSync(FIXTURE, 'utf8'));
		const saved = JSON.stringify(reproResultsDocument({ ipc: loaded.ipc, fallback: loaded.fallback, source: 'ipc run on this host' }));
		const again = loadReproText(saved);
		assert.equal(again.kind, 'report');
		assert.deepEqual(again.ipc, loaded.ipc);
		assert.deepEqual(again.fallback, loaded.fallback);
		const onlyFallback = loadReproText(JSON.stringify(reproResultsDocument({ ipc: null, fallback: loaded.fallback, source: '' })));
		assert.equal(onlyFallback.ipc, null);
		assert.throws(() => loadReproText(JSON.stringify({ schema: 'gpumpi.repro.results/1', ipc: { schema: 'x' }, fallback: [] })), /ipc is neither null nor/);
		assert.throws(() => loadReproText(JSON.stringify({ schema: 'gpumpi.repro.results/1', ipc: null, fallback: [{}] })), /fallback is not an array of/);
	});
});
