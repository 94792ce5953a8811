/**
 * gpu-memory-not-legacy-ipc on captures. The probe lines come from the FAKE CUDA driver's capture
 * (test-fixtures/engine/debian12-fakecuda/, real engine and mpirun, fake libcuda: see its README); the stack it is
 * judged against is real: the H200 testbed's tool outputs (UCX 1.13.1 with cuda_ipc, Open MPI 5.0.7 with CUDA), or
 * Debian's CPU outputs (no CUDA anywhere), or the H200 engine capture from before the probe existed.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { analyze } from '../../../extension/core/analyze';
import type { Finding, RawOutput } from '../../../extension/shared/report';
import { debianRaw, h200Engine, h200Raw } from './fixtureRaw';

const FAKE = path.resolve(process.cwd(), 'test-fixtures', 'engine', 'debian12-fakecuda', 'inspect-np2-ipcmem.json');
function fakeEngine(): RawOutput {
	return { id: 'engine', command: ['mpirun', '-np', '2', 'gpumpi', 'inspect'], exitCode: 0, stdout: fs.readFileSync(FAKE, 'utf8'), stderr: '', durationMs: 1 };
}
function find(raw: RawOutput[]): Finding[] { return analyze(raw, 'test').findings.filter((f) => f.id === 'gpu-memory-not-legacy-ipc'); }

describe('gpu-memory-not-legacy-ipc', () => {
	it('fires with the probe showing pool/VMM memory not legacy-IPC capable and a UCX 1.13 with cuda_ipc + Open MPI with CUDA', () => {
		const f = find([...h200Raw(), fakeEngine()]);
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'warning');
		assert.match(f[0].message, /^Rank 0's probe: GPU memory allocated these ways is not legacy-CUDA-IPC capable: pool-default \(cuMemAllocAsync/);
		assert.match(f[0].message, /vmm-posix-fd \(cuMemCreate \(POSIX FD handle type\) \+ cuMemMap: handles posix_fd, cuIpcGetMemHandle CUDA_ERROR_FAKE/);
		assert.match(f[0].message, /cuMemAlloc memory: legacy IPC yes, cuIpcGetMemHandle ok/);
		assert.match(f[0].message, /UCX 1\.13\.1 has cuda_ipc, which registers every GPU buffer with cuIpcGetMemHandle \(cuda_ipc_md\.c up to 1\.17\): for such memory that call fails, and with it the registration \(ucx#7110\)/);
		assert.match(f[0].message, /smcuda/);
		assert.ok(f[0].evidence.some((e) => /ranks\[0\]\.ipc_memory\.allocations\[1\]: .*"legacy_ipc_capable":false/.test(e.line)));
		assert.ok(f[0].sources?.some((s) => s.url.endsWith('/openucx/ucx/issues/11548')));
		assert.ok(f[0].sources?.some((s) => s.url.endsWith('/openucx/ucx/issues/7110')));
		assert.match(f[0].fix?.command ?? '', /repro ipc --variants pool,vmm,direct/);
	});
	// The UCX version line rewritten (synthetic: only UCX 1.13.1 ran here), to check what the rule says per release
	// range, read from cuda_ipc_md.c at each tag.
	const withUcx = (version: string): RawOutput[] => h200Raw().map((r) => (r.id === 'ucx_info_v' ? { ...r, stdout: r.stdout.replace(/1\.13\.1/g, version) } : r));
	it('UCX 1.18–1.21: fabric handles only, otherwise no CUDA IPC for it (staged pipeline or tcp), not a failed registration', () => {
		const f = find([...withUcx('1.19.0'), fakeEngine()]);
		assert.equal(f.length, 1);
		assert.match(f[0].message, /UCX 1\.19\.0 has cuda_ipc, which exports such memory only as a fabric handle where the allocation allows one, and otherwise does not use CUDA IPC for it/);
		assert.doesNotMatch(f[0].message, /registration/);
	});
	it('UCX 1.22: cuMemCreate memory allowing POSIX FDs is exported, pool memory is not (even a pool allowing POSIX FDs)', () => {
		const f = find([...withUcx('1.22.0'), fakeEngine()]);
		assert.equal(f.length, 1);
		assert.match(f[0].message, /UCX 1\.22\.0 exports cuMemCreate memory that allows POSIX-FD handles itself \(vmm-posix-fd here\), but not pool memory/);
		assert.match(f[0].message, /pool-posix-fd \(/, 'a pool allowing POSIX FDs is still listed');
		assert.match(f[0].message, /smcuda BTL exports GPU buffers with cuIpcGetMemHandle only/, 'every kind is listed: this Open MPI has smcuda too');
		assert.match(f[0].fix?.text ?? '', /pool memory is not exported that way by any released UCX/);
	});
	it('is quiet when nothing in the stack exports with legacy IPC (Debian: UCX and Open MPI without CUDA), and without a probe (older engine)', () => {
		const debianTools = debianRaw().filter((r) => r.id !== 'engine');
		assert.equal(find([...debianTools, fakeEngine()]).length, 0);
		assert.equal(find([...h200Raw(), h200Engine('inspect-np4.json')]).length, 0);
	});
});
