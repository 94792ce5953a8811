/**
 * What the headless CLI printed on the real H200 (test-fixtures/cli/h200-testbed/README.md): the documents validate
 * against our schemas and say what was measured there, and the fallback verdict recomputed from the captured
 * measurements and btl lines names the evidence it had.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fallbackVerdict } from '../../extension/core/repro/fallbackRunner';
import { validateMapDocument } from '../../extension/shared/mapSchema';
import type { Report } from '../../extension/shared/report';
import { upgradeFallbackReportV1, upgradeIpcReportV1 } from '../../extension/core/repro/reproFile';

interface DeviceRuns { schema: string; node: string; runs: Array<{ name: string; exit: number; doc: unknown }> }

const FILE = path.resolve(process.cwd(), 'test-fixtures', 'cli', 'h200-testbed', 'cli-2026-12-02.json');
const runs = (): DeviceRuns => JSON.parse(fs.readFileSync(FILE, 'utf8')) as DeviceRuns;
const doc = <T>(name: string): T => {
	const r = runs().runs.find(x => x.name === name);
	assert.ok(r && r.exit === 0 && r.doc, `run ${name} missing or failed`);
	return r.doc as T;
};

describe('the CLI on the H200 (real device result)', () => {
	it('inspect: an H200 with CUDA 13.0, and the site\'s component-path override found as the reason MPI is not CUDA-aware', () => {
		const report = doc<Report>('inspect');
		assert.deepEqual(report.summary.gpus.map(g => g.name), ['NVIDIA H200']);
		assert.equal(report.summary.cuda.label, 'CUDA 13.0');
		assert.equal(report.summary.mpi.cudaAware, 'no');
		assert.equal(report.findings[0].id, 'ompi-component-path-overridden');
		assert.ok(report.raw.find(r => r.id === 'engine')?.command.includes('--allow-run-as-root'));
	});

	it('repro ipc with pml ucx on device memory (a report of before trials): every variant correct once, which is no longer a "Yes"', () => {
		const rep = upgradeIpcReportV1(doc<Record<string, unknown>>('repro-ipc'));
		assert.deepEqual(rep.variants.map(v => `${v.variant}:${v.runs.map(r => r.outcome).join()}:${v.runs[0].memory}:${v.class}`),
			['direct:correct:device:inconclusive', 'bounce:correct:device:inconclusive', 'send-from-import:correct:device:inconclusive']);
		assert.match(rep.verdict.answer, /^Inconclusive: .*1 trial was correct, and one trial is not a verdict/);
		assert.equal(rep.verdict.directWorks, null);
	});

	it('repro fallback (ob1, CUDA IPC off): staged through the host, manual staging faster, and the verdict names the smcuda btl line', () => {
		const rep = upgradeFallbackReportV1(doc<Record<string, unknown>>('repro-fallback'));
		assert.equal(rep.verdict.path, 'staged');
		assert.ok((rep.verdict.stagedOverMpi ?? 0) > 1.1, `staged/MPI = ${rep.verdict.stagedOverMpi}`);
		assert.deepEqual(rep.transports.btls, ['smcuda', 'self']);
		const again = fallbackVerdict(rep.memory, rep.gpuUnavailableReason, rep.runs, rep.results, rep.transports, rep.mpi?.cuda_aware.run_time ?? null);
		assert.equal(again.path, 'staged');
		assert.match(again.text[0], /Open MPI's btl lines name smcuda, self, and smcuda carries GPU data with or without CUDA IPC/);
	});

	it('map on device memory: the one pair shares the GPU at hundreds of GB/s through shared memory', () => {
		const m = validateMapDocument(doc<unknown>('map'));
		assert.ok(typeof m !== 'string', String(m));
		assert.equal(m.memory, 'device');
		assert.equal(m.pairs.length, 1);
		assert.equal(m.pairs[0].class, 'same_gpu');
		assert.ok((m.pairs[0].bandwidth_gbps ?? 0) > 100, `${m.pairs[0].bandwidth_gbps} GB/s`);
	});
});
