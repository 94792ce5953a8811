/**
 * The program's link order collected by `gpumpi-doctor guard` for real (collect/programLinks.ts → the rule
 * mpich-gpu-ipc-cache-hooks): two builds of one small MPI program with Debian's MPICH, `mpicc.mpich app.c -lcudart`
 * (the wrapper puts -lmpich last: libcudart is needed first) and `gcc app.c -lmpich -lcudart`, run under real
 * mpirun.mpich with the guard; readelf, mpivars and mpichversion are the real tools. libcudart: the real CUDA 13
 * runtime where /usr/local/cuda-13.0/lib has it (the CI machine does), otherwise a stub shared library built here
 * with the soname libcudart.so.13 and a cudaFree symbol — a real ELF library, but not NVIDIA's; the test names which.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot } from '../../extension/core/native';

const ROOT = repoRoot() ?? process.cwd();
const BIN = path.join(ROOT, 'bin', 'gpumpi-doctor.js');
const REAL_CUDART = '/usr/local/cuda-13.0/lib';

interface Finding { id: string; severity: string; message: string; evidence: Array<{ source: string; line: string }>; fix?: { text: string; command?: string } }

function sh(argv: string[], cwd: string): void {
	const r = spawnSync(argv[0], argv.slice(1), { cwd, encoding: 'utf8', timeout: 120_000 });
	assert.equal(r.status, 0, `${argv.join(' ')}: ${r.stderr}`);
}

function guard(args: string[], cwd: string, extraPath?: string): { code: number | null; findings: Finding[]; stderr: string } {
	const env: Record<string, string | undefined> = { ...process.env };
	for (const k of Object.keys(env)) { if (k.startsWith('GPUMPI_') || k.startsWith('MPIR_CVAR_') || k === 'LD_PRELOAD') { delete env[k]; } }
	if (extraPath) { env.PATH = `${extraPath}:${env.PATH ?? ''}`; }
	const r = spawnSync(process.execPath, [BIN, 'guard', '--json', '--', ...args], { cwd, env, encoding: 'utf8', timeout: 240_000, maxBuffer: 64 * 1024 * 1024 });
	assert.ok(r.stdout.trim().startsWith('{'), `guard printed no JSON (exit ${r.status}): ${r.stderr.slice(-2000)}`);
	return { code: r.status, findings: (JSON.parse(r.stdout) as { findings: Finding[] }).findings, stderr: r.stderr };
}
const hooks = (fs: Finding[]): Finding[] => fs.filter((f) => f.id === 'mpich-gpu-ipc-cache-hooks');

describe('program links under the guard (real MPICH, readelf, mpivars)', function () {
	this.timeout(600_000);
	let dir = '';
	let cudartDir = '';
	let which = '';
	before(function () {
		if (spawnSync('mpicc.mpich', ['-show'], { encoding: 'utf8' }).status !== 0) { this.skip(); }
		dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-links-'));
		if (fs.existsSync(path.join(REAL_CUDART, 'libcudart.so'))) {
			cudartDir = REAL_CUDART;
			which = 'the real CUDA 13 runtime';
		} else {
			cudartDir = path.join(dir, 'stub');
			fs.mkdirSync(cudartDir);
			fs.writeFileSync(path.join(cudartDir, 'cudart.c'), 'int cudaFree(void *p) { (void)p; return 35; }\n');
			sh(['gcc', '-shared', '-fPIC', '-Wl,-soname,libcudart.so.13', '-o', 'libcudart.so.13', 'cudart.c'], cudartDir);
			fs.symlinkSync('libcudart.so.13', path.join(cudartDir, 'libcudart.so'));
			which = 'a stub libcudart.so.13 built here (no CUDA runtime on this machine)';
		}
		fs.writeFileSync(path.join(dir, 'app.c'), [
			'#include <mpi.h>', '#include <stdio.h>', 'int cudaFree(void *p);',
			'int main(int argc, char **argv) { MPI_Init(&argc, &argv); int rc = cudaFree((void *)0); int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);',
			'  if (r == 0) { printf("cudaFree(0) = %d\\n", rc); } MPI_Finalize(); return 0; }', ''].join('\n'));
		const cuda = [`-L${cudartDir}`, `-Wl,-rpath,${cudartDir}`, '-lcudart'];
		sh(['mpicc.mpich', 'app.c', '-o', 'app-cudart-first', ...cuda], dir);
		sh(['gcc', 'app.c', '-o', 'app-mpi-first', '-I/usr/include/x86_64-linux-gnu/mpich', '-lmpich', ...cuda], dir);
		// The static runtime only where NVIDIA's is installed (no stub stands in for it).
		if (fs.existsSync(path.join(REAL_CUDART, 'libcudart_static.a'))) {
			sh(['mpicc.mpich', 'app.c', '-o', 'app-cudart-static', `-L${REAL_CUDART}`, '-lcudart_static', '-lpthread', '-ldl', '-lrt'], dir);
		}
	});
	after(() => { if (dir) { fs.rmSync(dir, { recursive: true, force: true }); } });

	it('mpicc.mpich app.c -lcudart: the finding, with readelf\'s lines and the CVAR as MPICH lists it', () => {
		const r = guard(['mpirun.mpich', '-np', '2', './app-cudart-first'], dir);
		assert.equal(r.code, 0, r.stderr.slice(-1500));
		const f = hooks(r.findings);
		assert.equal(f.length, 1, `${which}: ${JSON.stringify(r.findings.map((x) => x.id))}`);
		assert.equal(f[0].severity, 'warning');
		assert.match(f[0].message, /^\.\/app-cudart-first needs libcudart\.so\.13 \(DT_NEEDED #1\) before libmpich\.so\.12 \(#2\)/);
		assert.ok(f[0].evidence.some((e) => e.source === 'readelf_d:./app-cudart-first' && /\(NEEDED\)\s+Shared library: \[libcudart\.so\.13\]/.test(e.line)));
		assert.ok(f[0].evidence.some((e) => e.source === 'mpivars' && /^\s*MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=1\t/.test(e.line)), JSON.stringify(f[0].evidence));
		assert.match(f[0].fix?.command ?? '', /^export MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=0 /);
	});

	it('the CVAR forwarded with -genv is what mpivars is run with: =0 → info, the cache off', () => {
		const f = hooks(guard(['mpirun.mpich', '-genv', 'MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE', '0', '-np', '2', './app-cudart-first'], dir).findings);
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'info');
		assert.match(f[0].message, /MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=0 turns the cache off/);
	});

	it('static cudart over MPICH ch4:ucx: ucx-memtype-cache-static-cudart with UCX_MEM_CUDA_HOOK_MODE=reloc forwarded, quiet with the default hooks', function () {
		if (!fs.existsSync(path.join(dir, 'app-cudart-static'))) { this.skip(); }
		const id = (fs: Finding[]): Finding[] => fs.filter((f) => f.id === 'ucx-memtype-cache-static-cudart');
		const reloc = guard(['mpirun.mpich', '-genv', 'UCX_MEM_CUDA_HOOK_MODE', 'reloc', '-np', '2', './app-cudart-static'], dir);
		assert.equal(reloc.code, 0, reloc.stderr.slice(-1500));
		const f = id(reloc.findings);
		assert.equal(f.length, 1, JSON.stringify(reloc.findings.map((x) => x.id)));
		assert.match(f[0].message, /^\.\/app-cudart-static has the CUDA runtime linked in statically .*UCX_MEM_CUDA_HOOK_MODE=reloc, collector environment/);
		assert.equal(f[0].fix?.command, 'export UCX_MEMTYPE_CACHE=n');
		assert.equal(id(guard(['mpirun.mpich', '-np', '2', './app-cudart-static'], dir).findings).length, 0);
	});

	it('MPIR_CVAR_NOLOCAL forwarded with -genv: mpivars lists it as MPICH read it, and mpich-nolocal-set says what it costs', () => {
		const r = guard(['mpirun.mpich', '-genv', 'MPIR_CVAR_NOLOCAL', '1', '-np', '2', './app-mpi-first'], dir);
		const f = r.findings.filter((x) => x.id === 'mpich-nolocal-set');
		assert.equal(f.length, 1, JSON.stringify(r.findings.map((x) => x.id)));
		assert.ok(f[0].evidence.some((e) => e.source === 'mpivars' && /^\s*MPIR_CVAR_NOLOCAL\s*=1\t/.test(e.line)), JSON.stringify(f[0].evidence));
	});

	it('gcc app.c -lmpich -lcudart: quiet; a bare program name is found on PATH as the launcher finds it', () => {
		assert.equal(hooks(guard(['mpirun.mpich', '-np', '2', './app-mpi-first'], dir).findings).length, 0);
		const bare = guard(['mpirun.mpich', '-np', '1', 'app-cudart-first'], os.tmpdir(), dir);
		assert.equal(hooks(bare.findings).length, 1, bare.stderr.slice(-1500));
		assert.match(hooks(bare.findings)[0].evidence[0].source, /^readelf_d:app-cudart-first$/);
	});
});
