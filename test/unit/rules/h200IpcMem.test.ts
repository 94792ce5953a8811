/**
 * The H200 memory-IPC capture (test-fixtures/engine/h200-testbed/ipcMem-2026-12-03.json, `bash scripts/testGpu.sh ipcMem`
 * on the real H200, docs/device-results.md "Memory IPC capability") read through the product's own code: the inspect
 * document's `ipc_memory` probe through the engine parser and gpu-memory-not-legacy-ipc (beside the same testbed's tool
 * outputs), and the repro ipc trials through the saved-device-result reader (classifyIpcRun → summarizeAll →
 * ipcVerdict), so the verdict the product prints on these runs is the one asserted here.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { analyze } from '../../../extension/core/analyze';
import { reportsFromDeviceJson } from '../../../extension/core/repro/reproRender';
import type { Finding, RawOutput } from '../../../extension/shared/report';
import type { ReproIpcReport } from '../../../extension/shared/reproSchema';
import { ENGINE_FIXTURES, h200Raw } from './fixtureRaw';

interface CaptureRun { config: string; variant: string; size: string; trial: number; command: string; exit_code: number; timed_out: boolean; duration_s: number; output: string; document: unknown }
interface Capture { schema: string; trials: number; inspect: { ranks: Array<{ ipc_memory: { allocations: Array<{ kind: string }> } }> }; runs: CaptureRun[] }
const capture = JSON.parse(fs.readFileSync(path.join(ENGINE_FIXTURES, 'ipcMem-2026-12-03.json'), 'utf8')) as Capture;

/** The capture's inspect document as the collector's `engine` output (scripts/gpu/ipcMem.sh ran it with -np 2). */
function engine(doc: unknown): RawOutput {
	return { id: 'engine', command: ['mpirun', '--allow-run-as-root', '--oversubscribe', '--mca', 'mca_base_component_path', '/opt/testbed2/lib/openmpi', '-np', '2', 'gpumpi', 'inspect'], exitCode: 0, stdout: JSON.stringify(doc), stderr: '', durationMs: 1 };
}
function find(raw: RawOutput[]): Finding[] { return analyze(raw, 'h200').findings.filter((f) => f.id === 'gpu-memory-not-legacy-ipc'); }

/** The capture's trials of one message size as a saved device result (the entries scripts/gpu/repro.sh writes). */
function ipcReport(size: string): ReproIpcReport {
	const entries = capture.runs.filter((r) => r.size === size).map((r) => ({ kind: 'ipc', ...r }));
	const ipc = reportsFromDeviceJson(entries).ipc;
	assert.ok(ipc, `an ipc report for ${size}`);
	return ipc;
}

describe('H200 memory IPC capture (2026-12-03, real device)', () => {
	it('gpu-memory-not-legacy-ipc fires on the real probe: every pool and VMM kind refused, cuMemAlloc the baseline', () => {
		const f = find([...h200Raw(), engine(capture.inspect)]);
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'warning');
		for (const kind of ['pool-default', 'pool', 'pool-posix-fd', 'vmm', 'vmm-posix-fd']) {
			assert.match(f[0].message, new RegExp(`\\b${kind} \\([^)]*\\)?[^;]*cuIpcGetMemHandle CUDA_ERROR_INVALID_VALUE: invalid argument`), kind);
		}
		assert.match(f[0].message, /cuMemAlloc memory: legacy IPC yes, cuIpcGetMemHandle ok/);
		assert.match(f[0].message, /UCX 1\.13\.1 has cuda_ipc, which registers every GPU buffer with cuIpcGetMemHandle \(cuda_ipc_md\.c up to 1\.17\): for such memory that call fails, and with it the registration \(ucx#7110\)/);
		// The evidence is the probe's own line for each refused kind, as the engine printed it on the H200.
		const lines = f[0].evidence.map((e) => e.line);
		assert.ok(lines.some((l) => /allocations\[1\]: .*"kind":"pool-default".*"legacy_ipc_capable":false.*"ipc_get_mem_handle":"CUDA_ERROR_INVALID_VALUE: invalid argument"/.test(l)), lines.join('\n'));
		assert.ok(lines.some((l) => /allocations\[5\]: .*"kind":"vmm-posix-fd".*"allowed_handle_types":"posix_fd"/.test(l)));
		assert.ok(lines.some((l) => /allocations\[0\]: .*"kind":"cuMemAlloc".*"legacy_ipc_capable":true/.test(l)), 'the cuMemAlloc baseline line');
	});

	it('is quiet on the same probe with only its cuMemAlloc part (an application that never uses a pool or VMM)', () => {
		const onlyMalloc = JSON.parse(JSON.stringify(capture.inspect)) as Capture['inspect'];
		for (const r of onlyMalloc.ranks) { r.ipc_memory.allocations = r.ipc_memory.allocations.filter((a) => a.kind === 'cuMemAlloc'); }
		assert.equal(onlyMalloc.ranks[0].ipc_memory.allocations.length, 1);
		assert.equal(find([...h200Raw(), engine(onlyMalloc)]).length, 0);
	});

	it('holds 5 trials of each cell, as docs/device-results.md says', () => {
		assert.equal(capture.schema, 'gpumpi.gpu-ipcmem-runs/1');
		assert.equal(capture.runs.length, 2 * 3 * 2 * 5, 'ob1/ucx × pool/vmm/direct × 4K/64M × 5');
		const correct = (config: string, size: string, variant: string): number =>
			capture.runs.filter((r) => r.config === config && r.size === size && r.variant === variant && (r.document as { outcome?: string } | null)?.outcome === 'correct').length;
		assert.deepEqual(['direct', 'pool', 'vmm'].map((v) => correct('ucx', '64M', v)), [3, 2, 1]);
		assert.deepEqual(['direct', 'pool', 'vmm'].map((v) => correct('ucx', '4K', v)), [5, 3, 5]);
		assert.ok(['4K', '64M'].every((s) => ['direct', 'pool', 'vmm'].every((v) => correct('ob1', s, v) === 5)));
	});

	it('64M: the verdict gives "k of n" per cell and puts nothing on the memory kind (direct, cuMemAlloc, crashes too)', () => {
		const r = ipcReport('64M');
		const cell = (config: string, variant: string) => r.variants.find((v) => v.config === config && v.variant === variant);
		assert.equal(cell('ucx', 'direct')?.class, 'unreliable');
		assert.equal(cell('ucx', 'direct')?.counts.correct, 3);
		assert.equal(cell('ucx', 'direct')?.counts.crashed, 2);
		assert.equal(cell('ucx', 'pool')?.class, 'unreliable');
		assert.equal(cell('ucx', 'vmm')?.class, 'unreliable');
		assert.equal(cell('ob1', 'direct')?.class, 'works');
		assert.equal(r.verdict.answer, 'Unreliable: receiving into an IPC-imported GPU pointer fails intermittently (ucx: 2 of 5 failed); correct in every trial with ob1: 0 of 5 failed: a failure rate above 45 % is ruled out at 95 %.');
		const why = r.verdict.why.join('\n');
		assert.match(why, /^direct \(ucx\): 2 of 5 failed/m);
		assert.match(why, /Not recommended \(intermittent\): pool \(ucx\): 3 of 5 failed[^;]*; vmm \(ucx\): 4 of 5 failed/);
		assert.match(why, /Works instead \(every trial correct\): direct \(ob1\): 5 of 5 correct; pool \(ob1\): 5 of 5 correct; vmm \(ob1\): 5 of 5 correct/);
		// Nothing it cannot know: with the cuMemAlloc variant crashing as well, no line blames pools, VMM or legacy IPC.
		assert.doesNotMatch(`${r.verdict.answer}\n${why}`, /legacy|pool memory|VMM memory|cuMemCreate|cuMemAllocAsync|because of the (pool|vmm)/i);
		assert.match(why, /Could still have missed: failures rarer than 45 % per run \(5 trials/);
		// pool and vmm import nothing: their cuIpcGetMemHandle refusal is the memory kind, never "re-export of imported memory".
		for (const v of [cell('ucx', 'pool'), cell('ucx', 'vmm')]) {
			assert.ok(v?.runs.every((t) => !t.signatures.some((h) => h.id === 'cuda-ipc-reexport')), `${v?.variant}: no re-export signature`);
			assert.ok(v?.runs.some((t) => t.signatures.some((h) => h.id === 'cuda-ipc-not-legacy')), `${v?.variant}: the refusal is read`);
		}
		assert.ok(cell('ucx', 'direct')?.runs.some((t) => t.signatures.some((h) => h.id === 'cuda-ipc-reexport')));
	});

	it('4K: direct correct in 5 of 5 under both pmls, pool under ucx crashed in 2 of 5 and is not offered as a workaround', () => {
		const r = ipcReport('4K');
		assert.equal(r.verdict.directClass, 'works');
		assert.match(r.verdict.answer, /^Yes: receiving into an IPC-imported GPU pointer was correct in every trial \(ob1: 0 of 5 failed[^;]*; ucx: 0 of 5 failed/);
		assert.ok(!r.verdict.worksInstead.some((w) => w.startsWith('pool (ucx)')));
		assert.match(r.verdict.why.join('\n'), /Not recommended \(intermittent\): pool \(ucx\): 2 of 5 failed/);
	});
});
