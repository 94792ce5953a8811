/**
 * mpich-gpu-ipc-cache-hooks on REAL readelf output of three builds of one tiny program against Debian's MPICH 4.0.2
 * and CUDA 13.0's runtime (test-fixtures/tools/debian12-linkorder/README.md), beside Debian's real tool outputs.
 */
import * as assert from 'node:assert/strict';
import { analyze } from '../../../extension/core/analyze';
import { parseLinkOrder } from '../../../extension/core/parsers/linkOrder';
import type { Finding, RawOutput } from '../../../extension/shared/report';
import { debianMpichRaw, fixtureText, rawText } from './fixtureRaw';

const SYS = 'debian12-linkorder';
function program(name: string): RawOutput[] {
	return [
		rawText(`readelf_d:${name}`, fixtureText(SYS, `readelf-d-${name}.txt`), { command: ['readelf', '-d', name] }),
		rawText(`readelf_s:${name}`, fixtureText(SYS, `readelf-s-cudaFree-${name}.txt`), { command: ['readelf', '-sW', name] }),
	];
}
function find(raw: RawOutput[]): Finding[] { return analyze(raw, 'test').findings.filter((f) => f.id === 'mpich-gpu-ipc-cache-hooks'); }

describe('link order (readelf)', () => {
	it('reads DT_NEEDED in order and a statically linked cudaFree', () => {
		const first = parseLinkOrder(fixtureText(SYS, 'readelf-d-app-cudart-first.txt'), fixtureText(SYS, 'readelf-s-cudaFree-app-cudart-first.txt'), 'd');
		assert.deepEqual(first.needed.map((n) => n.soname), ['libcudart.so.13', 'libmpich.so.12', 'libc.so.6']);
		assert.equal(first.cudart?.index, 0);
		assert.equal(first.mpi?.index, 1);
		assert.equal(first.staticCudart, null);
		const stat = parseLinkOrder(fixtureText(SYS, 'readelf-d-app-cudart-static.txt'), fixtureText(SYS, 'readelf-s-cudaFree-app-cudart-static.txt'), 'd', 's');
		assert.equal(stat.cudart, null);
		assert.match(stat.staticCudart?.line ?? '', /FUNC +LOCAL +DEFAULT +15 cudaFree/);
	});
});

describe('mpich-gpu-ipc-cache-hooks', () => {
	it('fires when libcudart comes before libmpich (what mpicc.mpich app.c -lcudart produces)', () => {
		const f = find([...debianMpichRaw(), ...program('app-cudart-first')]);
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'warning');
		assert.match(f[0].message, /^app-cudart-first needs libcudart\.so\.13 \(DT_NEEDED #1\) before libmpich\.so\.12 \(#2\)/);
		assert.match(f[0].evidence[0].line, /\(NEEDED\)\s+Shared library: \[libcudart\.so\.13\]/);
		assert.ok(f[0].sources?.some((s) => s.url.endsWith('/pmodels/mpich/issues/7304')));
		assert.match(f[0].fix?.command ?? '', /MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=disabled/);
	});
	it('fires for a statically linked cudart, naming the symbol line', () => {
		const f = find([...debianMpichRaw(), ...program('app-cudart-static')]);
		assert.equal(f.length, 1);
		assert.match(f[0].message, /cudaFree linked in statically/);
	});
	it('is quiet with libmpich first, and without any program output; info only when the cache is off', () => {
		assert.equal(find([...debianMpichRaw(), ...program('app-mpi-first')]).length, 0);
		assert.equal(find(debianMpichRaw()).length, 0);
		const env = rawText('env', 'MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=disabled\n');
		const f = find([...debianMpichRaw(), env, ...program('app-cudart-first')]);
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'info');
		assert.match(f[0].message, /MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=disabled is set, which turns the cache off/);
	});
});
