/**
 * mpich-gpu-ipc-cache-hooks on REAL readelf output of three builds of one tiny program against Debian's MPICH 4.0.2
 * and CUDA 13.0's runtime (test-fixtures/tools/debian12-linkorder/README.md), beside Debian's real tool outputs.
 */
import * as assert from 'node:assert/strict';
import { analyze } from '../../../extension/core/analyze';
import { mpiFlavorOfSoname, parseLinkOrder } from '../../../extension/core/parsers/linkOrder';
import { parseMpivars } from '../../../extension/core/parsers/mpivars';
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

	it('tells the MPI from its soname (which engine build a launcher can start as one job)', () => {
		const first = parseLinkOrder(fixtureText(SYS, 'readelf-d-app-cudart-first.txt'), '', 'd');
		assert.equal(mpiFlavorOfSoname(first.mpi!.soname), 'mpich');
		assert.deepEqual(['libmpi.so.40', 'libmpi.so.12', 'libmpi.so.12.1.8', 'libmpich.so.12', 'libmpi.so', 'libmpi.so.400', 'libmpi_cxx.so.40'].map(mpiFlavorOfSoname),
			['openmpi', 'mpich', 'mpich', 'mpich', null, null, null]);
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
		// MPICH 4.0.2 (mpichversion): the CVAR is an int there; "disabled" would make MPI_Init abort.
		assert.match(f[0].fix?.command ?? '', /^export MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=0 /);
		assert.match(f[0].fix?.text ?? '', /MPICH 4\.0\.2: an int before PR #6526/);
	});
	it('fires for a statically linked cudart, naming the symbol line', () => {
		const f = find([...debianMpichRaw(), ...program('app-cudart-static')]);
		assert.equal(f.length, 1);
		assert.match(f[0].message, /cudaFree linked in statically/);
	});
	it('is quiet with libmpich first, and without any program output; info only when the cache is off', () => {
		assert.equal(find([...debianMpichRaw(), ...program('app-mpi-first')]).length, 0);
		assert.equal(find(debianMpichRaw()).length, 0);
		const env = rawText('env', 'MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=0\n');
		const f = find([...debianMpichRaw(), env, ...program('app-cudart-first')]);
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'info');
		assert.match(f[0].message, /MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=0 turns the cache off/);
	});
	it('"disabled" on MPICH 4.0.2 (no mpivars): an error, because that MPICH parses the CVAR as an int and MPI_Init aborts', () => {
		const env = rawText('env', 'MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=disabled\n');
		const f = find([...debianMpichRaw(), env, ...program('app-cudart-first')]);
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'error');
		assert.match(f[0].message, /MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=disabled is set, but MPICH 4\.0\.2: an int before PR #6526: MPI_Init aborts/);
		assert.match(f[0].fix?.command ?? '', /HANDLE_CACHE=0 /);
	});
});

/** Debian's real `mpivars` (MPICH 4.0.2) run with the environment named in the file name (README there). */
function mpivars(file: string, exitCode = 0): RawOutput {
	const text = fixtureText(SYS, file);
	return exitCode === 0 ? rawText('mpivars', text, { command: ['mpivars'] }) : rawText('mpivars', '', { command: ['mpivars'], exitCode, stderr: text });
}

describe('mpich-gpu-ipc-cache-hooks with MPICH\'s own CVAR listing (mpivars)', () => {
	it('the listing: every CVAR with a value parsed (343 of the 344 listed: CH3_PORT_RANGE prints none), HANDLE_CACHE an int, default 1', () => {
		const l = parseMpivars(fixtureText(SYS, 'mpivars.txt'), 'mpivars');
		assert.match(fixtureText(SYS, 'mpivars.txt'), /^344 MPI Control Variables/);
		assert.equal(l.cvars.length, 343);
		const h = l.cvars.find((c) => c.name === 'MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE');
		assert.deepEqual([h?.value, h?.type], ['1', 'MPI_INT']);
		assert.match(h?.description ?? '', /set this variable to 0/);
		assert.equal(l.unparsable, null);
	});
	it('default listing: shows HANDLE_CACHE=1 in the evidence, fix =0 "as this MPICH lists it"', () => {
		const f = find([...debianMpichRaw(), mpivars('mpivars.txt'), ...program('app-cudart-first')]);
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'warning');
		assert.match(f[0].message, /The cache's CVARs as this program gets them: MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=1\./);
		assert.ok(f[0].evidence.some((e) => e.source === 'mpivars' && /^\s*MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=1\tSCOPE_ALL_EQ/.test(e.line)));
		assert.match(f[0].fix?.text ?? '', /HANDLE_CACHE=0 \(this MPICH's mpivars lists it as an int: 0 turns it off, "disabled" makes MPI_Init abort\)/);
		assert.ok(f[0].sources?.some((s) => s.url.endsWith('/pmodels/mpich/blob/v4.0.2/src/mpid/ch4/shm/ipc/gpu/gpu_post.c')));
	});
	it('listing with HANDLE_CACHE=0: info; with "disabled": mpivars itself aborted, and the finding is an error naming its line', () => {
		const off = find([...debianMpichRaw(), mpivars('mpivars-handle-cache-0.txt'), ...program('app-cudart-first')]);
		assert.equal(off[0].severity, 'info');
		assert.match(off[0].message, /HANDLE_CACHE=0 turns the cache off/);
		const bad = find([...debianMpichRaw(), rawText('env', 'MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=disabled\n'), mpivars('mpivars-handle-cache-disabled.txt', 15), ...program('app-cudart-first')]);
		assert.equal(bad[0].severity, 'error');
		assert.match(bad[0].message, /HANDLE_CACHE is set to a value this MPICH cannot parse: MPI_Init aborts/);
		assert.ok(bad[0].evidence.some((e) => /Unable to parse environment variable \(MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE\)/.test(e.line)));
	});
	it('the CVAR by release where nothing is listed (synthetic version lines): 4.2 → disabled, 5.1 → CACHE_SIZE=0; a listed CACHE_SIZE wins', () => {
		const at = (version: string, extra: RawOutput[] = []) => find([rawText('mpichversion', `MPICH Version:    \t${version}\nMPICH Device:    \tch4:ucx\n`), ...extra, ...program('app-cudart-first')])[0];
		assert.match(at('4.1.2').fix?.command ?? '', /HANDLE_CACHE=0 /);
		assert.match(at('4.2.0').fix?.command ?? '', /HANDLE_CACHE=disabled /);
		assert.match(at('5.1.0').fix?.command ?? '', /MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE=0 /);
		const listed = rawText('mpivars', '\tMPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE=16\tSCOPE_ALL_EQ\tNo-object\tMPI_INT\tVERBOSITY_USER_BASIC\tsynthetic line\n');
		assert.match(at('5.1.0', [listed]).fix?.command ?? '', /CACHE_SIZE=0 /);
	});
	it('MPICH 4.3-5.0: CACHE_SIZE is an enum there (gpu_post.c@v5.0.1), so the fix is HANDLE_CACHE=disabled, never CACHE_SIZE=0; a 0 set is an error (MPI_Init fails)', () => {
		const at = (version: string, extra: RawOutput[] = []) => find([rawText('mpichversion', `MPICH Version:    \t${version}\nMPICH Device:    \tch4:ucx\n`), ...extra, ...program('app-cudart-first')])[0];
		for (const v of ['4.3.0', '5.0.1']) {
			assert.match(at(v).fix?.command ?? '', /HANDLE_CACHE=disabled /, v);
			assert.doesNotMatch(at(v).fix?.command ?? '', /CACHE_SIZE=0/, v);
		}
		// a listed enum CACHE_SIZE (synthetic mpivars line with the 5.0 default) does not make it the switch
		const listedEnum = rawText('mpivars', '\tMPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE=limited\tSCOPE_ALL_EQ\tNo-object\tMPI_INT\tVERBOSITY_USER_BASIC\tsynthetic line\n');
		assert.match(at('5.0.1', [listedEnum]).fix?.command ?? '', /HANDLE_CACHE=disabled /);
		const zero = at('5.0.1', [rawText('env', 'MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE=0\n')]);
		assert.equal(zero.severity, 'error');
		assert.match(zero.message, /CACHE_SIZE=0 is set, but in this MPICH it is an enum \(unlimited, limited, disabled\): MPI_Init fails/);
		assert.ok(zero.sources?.some((s) => s.url.endsWith('/pmodels/mpich/blob/v5.0.1/src/mpid/ch4/shm/ipc/gpu/gpu_post.c')));
		// 5.1 on (PR #7862): the int, and 0 turns it off
		const off51 = at('5.1.0', [rawText('env', 'MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE=0\n')]);
		assert.equal(off51.severity, 'info');
	});
});
