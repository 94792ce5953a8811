/**
 * framework-allocator-pool-vmm. The stacks are real captures: the H200 testbed's tool outputs (UCX 1.13.1 with
 * cuda_ipc, Open MPI 5.0.7 with CUDA), Debian's (no CUDA anywhere), the engine with the FAKE CUDA driver
 * (test-fixtures/engine/debian12-fakecuda: its ipc_memory probe lines) and real guard reports (H100: a program that
 * passed cudaMallocAsync memory to MPI; the seed's IPC pattern: cudaMalloc memory). The settings are what a user
 * exports: `env` lines, a script's lines (`script:<path>` as the collector keeps them: `N:text`), an ldd line naming
 * libkokkoscore — written here, and combined with the real stacks (no machine here has PyTorch, CUDA.jl or Kokkos).
 * The recorded measurement the rule cites (torch_send.py, expandable segments vs the default allocator) is read from
 * its data file, never retyped.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { analyze } from '../../../extension/core/analyze';
import { guardRankLines } from '../../../extension/core/collect/programLinks';
import { torchConf } from '../../../extension/core/rules/allocatorRules';
import type { Finding, RawOutput } from '../../../extension/shared/report';
import { debianRaw, h200Raw, rawText } from './fixtureRaw';

const ROOT = process.cwd();
const find = (raw: RawOutput[]): Finding[] => analyze(raw, 'test').findings.filter((f) => f.id === 'framework-allocator-pool-vmm');
const env = (...lines: string[]): RawOutput => rawText('env', lines.join('\n'));
/** The H200 tools, their own `env` output replaced by the given lines. */
const h200With = (...lines: string[]): RawOutput[] => [...h200Raw().filter((r) => r.id !== 'env'), env(...lines)];
const reports = (dir: string): string[] => fs.readdirSync(path.join(ROOT, dir)).filter((f) => /^rank\d+\.json$/.test(f)).map((f) => fs.readFileSync(path.join(ROOT, dir, f), 'utf8'));
const fakeEngine = (): RawOutput => ({ id: 'engine', command: ['mpirun', '-np', '2', 'gpumpi', 'inspect'], exitCode: 0, stdout: fs.readFileSync(path.join(ROOT, 'test-fixtures/engine/debian12-fakecuda/inspect-np2-ipcmem.json'), 'utf8'), stderr: '', durationMs: 1 });

describe('framework-allocator-pool-vmm', () => {
	it('PyTorch expandable segments on the testbed\'s stack: VMM memory, UCX 1.13\'s failed registration, smcuda; the fix keeps the other keys', () => {
		const f = find(h200With('PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,max_split_size_mb:128'));
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'warning');
		assert.match(f[0].message, /^PyTorch: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,max_split_size_mb:128 \(collector environment\)\. Its allocator then hands out VMM memory \(cuMemCreate \+ cuMemMap\), which legacy CUDA IPC \(cuIpcGetMemHandle\) cannot export/);
		assert.match(f[0].message, /UCX 1\.13\.1 registers every GPU buffer with cuIpcGetMemHandle/);
		assert.match(f[0].message, /smcuda BTL exports GPU buffers with cuIpcGetMemHandle only/);
		assert.equal(f[0].fix?.command, 'export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128');
		assert.ok(f[0].evidence.some((e) => e.source === 'env' && /^PYTORCH_CUDA_ALLOC_CONF=/.test(e.line)));
		assert.ok(f[0].sources?.some((s) => s.url === 'docs/device-results.md#2026-12-06-second-session-guard-on-programs-it-was-not-written-for-issue-31'));
		assert.equal(find(h200With('PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True'))[0].fix?.command, 'unset PYTORCH_CUDA_ALLOC_CONF');
	});

	it('names the probe line of that allocation kind when the engine probed it (fake driver), and reads the ranks\' environment', () => {
		const f = find([...h200With('PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True'), fakeEngine()]);
		assert.match(f[0].message, /the engine's probe on rank memory of kind vmm-posix-fd: legacy-IPC capable no, cuIpcGetMemHandle CUDA_ERROR_FAKE/);
		assert.ok(f[0].evidence.some((e) => /ipc_memory\.allocations\[\d\]: .*"kind":"vmm-posix-fd"/.test(e.line)), JSON.stringify(f[0].evidence.map((e) => e.line)));
	});

	it('reads the setting from the ranks\' own environment as the engine recorded it (real engine run, fake CUDA driver)', () => {
		const engine: RawOutput = { ...fakeEngine(), stdout: fs.readFileSync(path.join(ROOT, 'test-fixtures/engine/debian12-fakecuda/inspect-np2-torch-env.json'), 'utf8') };
		const f = find([...h200Raw().filter((r) => r.id !== 'env'), engine]);
		assert.equal(f.length, 1);
		assert.match(f[0].message, /^PyTorch: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \(engine rank 0 environment\)/);
		assert.ok(f[0].evidence.some((e) => /ranks\[0\]\.env\.PYTORCH_CUDA_ALLOC_CONF/.test(e.line)), JSON.stringify(f[0].evidence.map((e) => e.line)));
		assert.match(f[0].message, /kind vmm-posix-fd: legacy-IPC capable no/, 'the same run\'s probe');
	});

	it('PYTORCH_ALLOC_CONF (PyTorch 2.9 on): the cudaMallocAsync backend is pool memory; notes which releases read which name', () => {
		const a = find(h200With('PYTORCH_ALLOC_CONF=backend:cudaMallocAsync'));
		assert.equal(a.length, 1);
		assert.match(a[0].message, /stream-ordered pool memory \(cudaMallocAsync\)/);
		assert.match(a[0].message, /PYTORCH_ALLOC_CONF is read by PyTorch 2\.9 and later/);
		assert.equal(a[0].fix?.command, 'unset PYTORCH_ALLOC_CONF');
		const both = find(h200With('PYTORCH_ALLOC_CONF=max_split_size_mb:64', 'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True'));
		assert.match(both[0].message, /PyTorch 2\.9 and later read PYTORCH_ALLOC_CONF \(max_split_size_mb:64\) instead, which does not set it/);
		assert.equal(find(h200With('PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False')).length, 0);
		assert.deepEqual([...torchConf(' expandable_segments : True, roundup_power2_divisions:[256:1,>:8]')], [['expandable_segments', 'True'], ['roundup_power2_divisions', '[256:1,>:8]']]);
	});

	it('on a stack with no CUDA IPC at all (Debian) it is information only', () => {
		const f = find([...debianRaw().filter((r) => r.id !== 'env'), env('PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True')]);
		assert.equal(f[0]?.severity, 'info');
		assert.match(f[0].message, /Nothing read here moves GPU memory by CUDA IPC/);
	});

	it('CUDA.jl: JULIA_CUDA_MEMORY_POOL=cuda, or a Julia program with it unset (the pool is the default); none is quiet', () => {
		assert.equal(find(h200With('JULIA_CUDA_MEMORY_POOL=cuda'))[0]?.fix?.command, 'export JULIA_CUDA_MEMORY_POOL=none');
		const julia = [...h200With(), rawText('program', 'program=/usr/bin/julia\nkind=julia\nscript=run.jl\n')];
		const f = find(julia);
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'info', 'inferred from the default, not seen');
		assert.match(f[0].message, /CUDA\.jl's default is its stream-ordered pool/);
		assert.equal(find([...julia.filter((r) => r.id !== 'env'), env('JULIA_CUDA_MEMORY_POOL=none')]).length, 0);
		assert.equal(find([...julia, rawText('script:run.jl', '2:ENV["JULIA_CUDA_MEMORY_POOL"] = "none"')]).length, 0);
	});

	it('script lines: PyTorch set in code and CuPy\'s MemoryAsyncPool, at the script\'s own line numbers', () => {
		const f = find([...h200With(), rawText('script:train.py', '3:os.environ["PYTORCH_ALLOC_CONF"] = "expandable_segments:True"\n12:cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)')]);
		assert.deepEqual(f.map((x) => x.message.split(':')[0]), ['PyTorch', 'CuPy']);
		assert.ok(f[0].evidence.some((e) => e.source === 'script:train.py' && e.lineNo === 3));
		assert.match(f[1].message, /line 12 of train\.py/);
	});

	it('Kokkos 4.2–4.4 by the library the program loads: information (the build option is not visible), not for 4.5', () => {
		const kk = (v: string): RawOutput => rawText('ldd:/w/lmp', `\tlibkokkoscore.so.${v} => /opt/kokkos/lib64/libkokkoscore.so.${v} (0x00007f0000000000)\n`);
		const f = find([...h200With(), kk('4.4')]);
		assert.equal(f[0]?.severity, 'info');
		assert.match(f[0].message, /^Kokkos: \/w\/lmp loads libkokkoscore\.so\.4\.4 \(Kokkos 4\.4, whose build default is Kokkos_ENABLE_IMPL_CUDA_MALLOC_ASYNC=ON\)\. If it was built with that default/);
		assert.match(f[0].fix?.text ?? '', /-DKokkos_ENABLE_IMPL_CUDA_MALLOC_ASYNC=OFF/);
		assert.equal(find([...h200With(), kk('4.5')]).length, 0);
	});

	it('under the guard: pool buffers seen (real H100 reports) make it a warning; only cudaMalloc buffers make it information', () => {
		const pool = rawText('guard_ranks', guardRankLines(reports('test-fixtures/guard-foreign/h100-testbed/pool-report')));
		const seen = find([env('PYTORCH_ALLOC_CONF=backend:cudaMallocAsync'), pool]);
		assert.equal(seen[0]?.severity, 'warning');
		assert.match(seen[0].message, /Under the guard the ranks passed \d+ pool buffers to MPI\./);
		assert.match(seen[0].message, /Whether this stack relies on legacy CUDA IPC is not known/);
		const device = rawText('guard_ranks', guardRankLines(reports('test-fixtures/guard/openmpi-ipc-report')));
		const notSeen = find([env('PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True'), device]);
		assert.equal(notSeen[0]?.severity, 'info');
		assert.match(notSeen[0].message, /passed no vmm buffer to MPI \(\d+ device buffers: cudaMalloc memory\): the setting did not reach the buffers MPI saw/);
	});

	it('the measurement it cites: the recorded torch_send.py runs, VMM far below the default allocator under pml ucx (read from the data)', () => {
		const runs = fs.readFileSync(path.join(ROOT, 'test-fixtures/guard-foreign/h100-2026-12-06-torch.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { scenario: string; mode: string; rc: number; result: string; bw: number | null });
		const median = (sc: string): number => {
			const bw = runs.filter((r) => r.scenario === sc && r.mode === 'none' && r.rc === 0 && r.result === 'PASS' && r.bw !== null).map((r) => r.bw as number).sort((x, y) => x - y);
			assert.ok(bw.length >= 5, `${sc}: ${bw.length} runs`);
			return bw[Math.floor(bw.length / 2)];
		};
		assert.ok(median('torch-vmm') * 100 < median('torch-default'), `${median('torch-vmm')} vs ${median('torch-default')} GB/s`);
		const doc = fs.readFileSync(path.join(ROOT, 'docs/device-results.md'), 'utf8');
		assert.ok(doc.includes(`| torch-vmm | 10/10 correct, exit 0; `) && doc.includes('| torch-default | 10/10 correct, exit 0; '), 'the table the rule points at has both rows');
	});
});
