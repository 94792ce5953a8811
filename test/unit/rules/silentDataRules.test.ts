/**
 * Silent wrong data and the GPUDirect RDMA path (issue 35): mpich-nolocal-set, ucx-memtype-cache-static-cudart,
 * ucx-cuda-ipc-vmm-multi-chunk and ucx-cuda-copy-dmabuf on REAL outputs — Debian's MPICH 4.0.2 (mpivars, mpichversion:
 * ch4:ucx), UCX 1.13.1 (ucx_info -c with and without UCX_MEM_CUDA_HOOK_MODE=reloc), readelf of a program with the CUDA
 * runtime linked statically (test-fixtures/tools/debian12-linkorder), the H200 testbed's captures. Where a test adds
 * an environment line it is the user's own setting, as typedFixes.test.ts does. The captures of the GPU machine's
 * device script (scripts/gpu/silentData.sh) are read when the integrator has copied its document to
 * test-fixtures/tools/gpu-silentdata/silentData.json (README there); until then those tests are pending.
 */
import * as assert from 'node:assert/strict';
import { analyze } from '../../../extension/core/analyze';
import type { Finding, RawOutput } from '../../../extension/shared/report';
import { debianMpichRaw, debianRaw, fixtureText, h200Engine, h200EngineRun, h200Raw, rawFromFixture, rawText, silentDataDoc } from './fixtureRaw';

const LF = 'debian12-libfabric';
const LO = 'debian12-linkorder';
function find(raw: RawOutput[], id: string): Finding[] { return analyze(raw, 'test').findings.filter((f) => f.id === id); }
function program(name: string): RawOutput[] {
	return [
		rawText(`readelf_d:${name}`, fixtureText(LO, `readelf-d-${name}.txt`), { command: ['readelf', '-d', name] }),
		rawText(`readelf_s:${name}`, fixtureText(LO, `readelf-s-cudaFree-${name}.txt`), { command: ['readelf', '-sW', name] }),
	];
}
const withEnv = (raw: RawOutput[], env: string): RawOutput[] => [...raw.filter((r) => r.id !== 'env'), rawText('env', env)];

describe('mpich-nolocal-set', () => {
	it('fires where MPICH read MPIR_CVAR_NOLOCAL=1 (mpivars), with what it costs and the narrower switch of this release', () => {
		const raw = [...withEnv(debianMpichRaw(), fixtureText(LF, 'env-nolocal-1.txt')), rawText('mpivars', fixtureText(LF, 'mpivars-nolocal-1.txt'), { command: ['mpivars'] })];
		const f = find(raw, 'mpich-nolocal-set');
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'info');
		assert.match(f[0].message, /^MPIR_CVAR_NOLOCAL is on \(as this MPICH read it: mpivars\) \(MPIR_CVAR_NOLOCAL=1, collector environment\): MPICH operates "as though all processes are located on another node"/);
		assert.match(f[0].message, /MPICH 4\.0\.2 predates that fix: on Intel GPUs the setting \(or the narrower threshold\) is still warranted\./);
		assert.match(f[0].message, /switching that cache off \(MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=0: MPICH 4\.0\.2: an int before PR #6526/);
		assert.match(f[0].evidence[0].line, /^\tMPIR_CVAR_NOLOCAL {15}=1\tSCOPE_ALL_EQ/);
		assert.equal(f[0].fix?.command, 'mpivars | grep -E "NOLOCAL|IPC_GPU"');
	});
	it('the alias MPIR_CVAR_NO_LOCAL (CSCS\'s spelling) counts the same, from the environment alone', () => {
		const f = find(withEnv(debianMpichRaw(), fixtureText(LF, 'env-no_local-1.txt')), 'mpich-nolocal-set');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /\(MPIR_CVAR_NO_LOCAL=1, collector environment\)/);
	});
	it('is quiet when it is not set, and for an MPI that is not MPICH', () => {
		assert.equal(find(debianMpichRaw(), 'mpich-nolocal-set').length, 0);
		assert.equal(find([...debianMpichRaw(), rawText('mpivars', fixtureText(LO, 'mpivars.txt'), { command: ['mpivars'] })], 'mpich-nolocal-set').length, 0, 'listed as 0');
		assert.equal(find(withEnv(h200Raw(), fixtureText(LF, 'env-nolocal-1.txt')), 'mpich-nolocal-set').length, 0, 'Open MPI ignores it');
	});
});

describe('ucx-memtype-cache-static-cudart', () => {
	const reloc = (): RawOutput[] => [...withEnv(debianMpichRaw(), fixtureText(LF, 'env-hook-reloc.txt')), rawFromFixture(LF, 'ucx_info_c', 'ucx_info_c-hook-reloc.txt', ['ucx_info', '-c'])];
	it('fires for a static-cudart program over MPICH ch4:ucx when UCX\'s CUDA hooks are in reloc mode', () => {
		const f = find([...reloc(), ...program('app-cudart-static')], 'ucx-memtype-cache-static-cudart');
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'info', 'info: the miss was not seen on the GPU machine under reloc (silentData capture)');
		assert.match(f[0].message, /^app-cudart-static has the CUDA runtime linked in statically .* \(libmpich\.so\.12\) over UCX, whose CUDA memory hooks are in reloc mode here \(UCX_MEM_CUDA_HOOK_MODE=reloc, collector environment\)/);
		assert.match(f[0].evidence[0].line, /FUNC +LOCAL +DEFAULT +\d+ cudaFree$/);
		assert.ok(f[0].evidence.some((e) => e.line === 'MPICH Device:    \tch4:ucx'));
		assert.equal(f[0].fix?.command, 'export UCX_MEMTYPE_CACHE=n');
	});
	it('reads the hook mode from ucx_info -c as well (the mode the ranks get when the environment sets it elsewhere)', () => {
		const raw = [...debianMpichRaw(), rawFromFixture(LF, 'ucx_info_c', 'ucx_info_c-hook-reloc.txt', ['ucx_info', '-c']), ...program('app-cudart-static')];
		assert.match(find(raw, 'ucx-memtype-cache-static-cudart')[0]?.message ?? '', /UCX_MEM_CUDA_HOOK_MODE=reloc, ucx_info -c/);
	});
	it('is quiet with the default bistro hooks, with the cache off, and for a program with a shared cudart', () => {
		assert.equal(find([...debianMpichRaw(), rawFromFixture(LF, 'ucx_info_c', 'ucx_info_c.txt', ['ucx_info', '-c']), ...program('app-cudart-static')], 'ucx-memtype-cache-static-cudart').length, 0, 'bistro');
		assert.equal(find([...debianMpichRaw(), ...program('app-cudart-static')], 'ucx-memtype-cache-static-cudart').length, 0, 'no ucx_info -c, nothing set: the default');
		const off = [...withEnv(debianMpichRaw(), `${fixtureText(LF, 'env-hook-reloc.txt')}UCX_MEMTYPE_CACHE=n\n`), ...program('app-cudart-static')];
		assert.equal(find(off, 'ucx-memtype-cache-static-cudart').length, 0, 'UCX_MEMTYPE_CACHE=n');
		assert.equal(find([...reloc(), ...program('app-cudart-first')], 'ucx-memtype-cache-static-cudart').length, 0, 'shared cudart');
	});
	it('the fix is valid on the captured UCX (typed against ucx_info -c)', () => {
		const f = analyze([...reloc(), ...program('app-cudart-static')], 'x').findings.find((x) => x.id === 'ucx-memtype-cache-static-cudart');
		assert.equal(f?.fix?.command, 'export UCX_MEMTYPE_CACHE=n', 'not withdrawn by the typed-fix check');
	});
});

describe('ucx-cuda-ipc-vmm-multi-chunk', () => {
	it('is quiet on UCX 1.13.1 (no VMM export from cuda_ipc before 1.18): the H200 testbed and Debian', () => {
		assert.equal(find([...h200Raw(), h200Engine('inspect-np1.json')], 'ucx-cuda-ipc-vmm-multi-chunk').length, 0);
		assert.equal(find(debianRaw(), 'ucx-cuda-ipc-vmm-multi-chunk').length, 0);
	});
});

describe('ucx-cuda-copy-dmabuf', () => {
	it('UCX_CUDA_COPY_DMABUF=no on UCX 1.13.1 (the H200 testbed): it does nothing there, said with each rank\'s dma_buf state', () => {
		const raw = [...withEnv(h200Raw(), `${fixtureText('h200-testbed', 'env.txt')}UCX_CUDA_COPY_DMABUF=no\n`), h200EngineRun('inspect-2026-12-04-dmabuf.json', 'np1')];
		const f = find(raw, 'ucx-cuda-copy-dmabuf');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /^UCX_CUDA_COPY_DMABUF=no \(collector environment\) does nothing with UCX 1\.13\.1: the variable exists from UCX 1\.16/);
		assert.match(f[0].message, /Per rank: rank 0 \(vm\) GPU 0000:00:06\.0: dma_buf yes, GPUDirect RDMA attribute yes; nvidia_peermem not loaded on the inspected host\./);
		assert.equal(f[0].fix?.command, 'unset UCX_CUDA_COPY_DMABUF');
	});
	it('UCX_CUDA_COPY_DMABUF=no where the UCX version is not known (no ucx_info): GPUDirect RDMA only through the peer-memory module, which is not loaded here', () => {
		const raw = [rawText('env', 'UCX_CUDA_COPY_DMABUF=no\n'), h200EngineRun('inspect-2026-12-04-dmabuf.json', 'np1'), rawFromFixture('h200-testbed', 'sys_module_nvidia')];
		const f = find(raw, 'ucx-cuda-copy-dmabuf');
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'info', 'no active RDMA port seen: info');
		assert.match(f[0].message, /the NIC can reach GPU memory only through the peer-memory module .* It is not loaded here: GPU messages between nodes are staged through host memory\. The setting is the workaround of rapidsai\/ucxx#749/);
		// no-gpudirect-rdma no longer says dma_buf may stand in for the module when UCX's dmabuf export is off.
		const gdr = find(raw, 'no-gpudirect-rdma');
		assert.match(gdr[0]?.message ?? '', /The CUDA driver reports dma_buf support for 0000:00:06\.0, but UCX_CUDA_COPY_DMABUF switches UCX's dmabuf export off\./);
	});
	it('is quiet when nothing sets it on UCX 1.13.1 (the H200 testbed, Debian)', () => {
		assert.equal(find([...h200Raw(), h200Engine('inspect-np1.json')], 'ucx-cuda-copy-dmabuf').length, 0);
		assert.equal(find(debianRaw(), 'ucx-cuda-copy-dmabuf').length, 0);
	});
});

describe('on the GPU machine\'s captures (scripts/gpu/silentData.sh → test-fixtures/tools/gpu-silentdata/silentData.json)', () => {
	const doc = silentDataDoc();
	it('a static-cudart program over Open MPI\'s pml ucx: quiet with the testbed\'s bistro hooks, a finding (info) with UCX_MEM_CUDA_HOOK_MODE=reloc (its ucx_info -c)', function () {
		if (!doc?.readelf.d || !doc.readelf.s_cudaFree) { this.skip(); }
		const prog = [rawText('readelf_d:gpu_send', doc.readelf.d, { command: ['readelf', '-d', 'gpu_send'] }), rawText('readelf_s:gpu_send', doc.readelf.s_cudaFree, { command: ['readelf', '-sW', 'gpu_send'] })];
		assert.equal(find([...h200Raw(), rawFromFixture('h200-testbed', 'ucx_info_c'), ...prog], 'ucx-memtype-cache-static-cudart').length, 0);
		const f = find([...h200Raw(), rawText('ucx_info_c', doc.ucx_info.c_hook_reloc, { command: ['ucx_info', '-c'] }), ...prog], 'ucx-memtype-cache-static-cudart');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /\(libmpi\.so\.40\) over UCX/);
	});
	it('the measured runs bear out the fix: with UCX_MEMTYPE_CACHE=n (and with the default bistro hooks) every launch passed', function () {
		if (!doc || doc.runs.length === 0) { this.skip(); }
		const all = doc?.runs ?? [];
		for (const setting of ['bistro', 'reloc-cache-n']) {
			const runs = all.filter((r) => r.setting === setting);
			assert.ok(runs.length > 0, setting);
			assert.deepEqual(runs.filter((r) => r.rc !== 0 || r.result !== 'PASS').map((r) => `${r.alloc} trial ${r.trial}: rc ${r.rc} ${r.result}`), [], setting);
		}
	});
	it('UCX 1.20 (when the device run had it): the VMM multi-chunk finding fires', function () {
		if (!doc?.ucx120) { this.skip(); }
		const raw = [...h200Raw().filter((r) => !r.id.startsWith('ucx_info')), rawText('ucx_info_v', doc.ucx120.v), rawText('ucx_info_d', doc.ucx120.d), h200EngineRun('inspect-2026-12-04-dmabuf.json', 'np1')];
		assert.equal(find(raw, 'ucx-cuda-ipc-vmm-multi-chunk').length, 1);
	});
});
