/**
 * libgpumpi as users get it (native/cmake/install.cmake): `cmake --install` of each MPI flavour's build into a
 * temporary prefix, then native/examples/staged_exchange.c copied OUTSIDE the tree and built two ways against the
 * installed package only — the host's real mpicc (mpicc.openmpi / mpicc.mpich) with `pkg-config --cflags --libs
 * gpumpi`, and a tiny CMake project with find_package(gpumpi) — and run under real mpirun -np 2 (host memory: this
 * machine has no GPU). Also the fix the fallback verdict hands over (extension/core/repro/fallbackFix.ts): its exact
 * setup / exchange / teardown strings placed in a small harness, compiled the same way and run. No shell anywhere: pkg-config's output is split into argv here.
 * Builds: node scripts/ensure.mjs --all-mpis (native/build/engine-openmpi and engine-mpich).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot } from '../../extension/core/native';
import { execute, type ExecuteResult } from '../../extension/core/proc';
import { ipcBounceFix, libFix, type LibFixMode } from '../../extension/core/repro/fallbackFix';

const ROOT = repoRoot() ?? process.cwd();
const TIMEOUT_MS = 180_000;

const FLAVORS = [
	{ flavor: 'openmpi', mpicc: 'mpicc.openmpi', launch: ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--mca', 'btl_tcp_if_include', 'lo', '-np', '2'] },
	{ flavor: 'mpich', mpicc: 'mpicc.mpich', launch: ['mpirun.mpich', '-np', '2'] },
] as const;

function show(r: ExecuteResult): string {
	return `exit ${r.exitCode} signal ${r.signal} ${r.error ?? ''}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-3000)}`;
}

async function run(argv: string[], cwd: string, env?: Record<string, string | undefined>): Promise<ExecuteResult> {
	const r = await execute(argv, { cwd, timeoutMs: TIMEOUT_MS, env: env ? { ...process.env, ...env } : undefined }).result;
	assert.equal(r.timedOut, false, `${argv.join(' ')} timed out\n${show(r)}`);
	return r;
}

/** Runs the example under mpirun and checks both ranks' lines and the verdict. */
async function runExample(launch: readonly string[], exe: string, cwd: string): Promise<void> {
	// Outside the tree: nothing may resolve libgpumpi from native/build (no LD_LIBRARY_PATH; the RUNPATH is the prefix).
	const r = await run([...launch, exe, '1048577'], cwd, { LD_LIBRARY_PATH: undefined });
	assert.equal(r.exitCode, 0, show(r));
	assert.match(r.stdout, /^staged_exchange: OK$/m, show(r));
	for (const rank of [0, 1]) {
		assert.match(r.stdout, new RegExp(`^rank ${rank}: received 1048577 bytes from ${1 - rank} .* 0 wrong, host memory`, 'm'), show(r));
	}
}

for (const { flavor, mpicc, launch } of FLAVORS) {
	describe(`libgpumpi installed package (${flavor})`, function () {
		this.timeout(10 * 60_000);
		const build = path.join(ROOT, 'native', 'build', `engine-${flavor}`);
		let tmp = '';
		let prefix = '';
		let src = '';

		before(async function () {
			if (!fs.existsSync(path.join(build, 'libgpumpi.so'))) { assert.fail(`${build}/libgpumpi.so missing: node scripts/ensure.mjs --all-mpis`); }
			tmp = fs.mkdtempSync(path.join(os.tmpdir(), `gpumpi-install-${flavor}-`));
			prefix = path.join(tmp, 'prefix');
			src = path.join(tmp, 'user');
			fs.mkdirSync(src);
			fs.copyFileSync(path.join(ROOT, 'native', 'examples', 'staged_exchange.c'), path.join(src, 'staged_exchange.c'));
			const r = await run(['cmake', '--install', build, '--prefix', prefix], tmp);
			assert.equal(r.exitCode, 0, show(r));
		});
		after(() => { if (tmp) { fs.rmSync(tmp, { recursive: true, force: true }); } });

		it('installs the library, the header, the CMake package and gpumpi.pc naming the MPI it was built with', () => {
			for (const f of ['lib/libgpumpi.so', 'include/gpumpi.h', 'lib/cmake/gpumpi/gpumpiConfig.cmake', 'lib/cmake/gpumpi/gpumpiConfigVersion.cmake',
				'lib/cmake/gpumpi/gpumpiTargets.cmake', 'lib/pkgconfig/gpumpi.pc']) {
				assert.ok(fs.existsSync(path.join(prefix, f)), `${f} not installed`);
			}
			const pc = fs.readFileSync(path.join(prefix, 'lib/pkgconfig/gpumpi.pc'), 'utf8');
			assert.match(pc, new RegExp(`^mpi_flavour=${flavor}$`, 'm'));
			assert.match(pc, new RegExp(`^Requires\\.private: ${flavor === 'mpich' ? 'mpich' : 'ompi-c'}$`, 'm'));
			assert.doesNotMatch(pc, new RegExp(ROOT.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), 'gpumpi.pc must not point into the source tree');
		});

		it(`builds staged_exchange.c outside the tree with ${mpicc} $(pkg-config --cflags --libs gpumpi) and runs it under mpirun -np 2`, async () => {
			const env = { PKG_CONFIG_PATH: path.join(prefix, 'lib', 'pkgconfig') };
			const pc = await run(['pkg-config', '--cflags', '--libs', 'gpumpi'], src, env);
			assert.equal(pc.exitCode, 0, show(pc));
			const flags = pc.stdout.trim().split(/\s+/).filter(Boolean);
			assert.ok(flags.some(f => f.startsWith('-I') && fs.realpathSync(f.slice(2)) === fs.realpathSync(path.join(prefix, 'include'))), pc.stdout);
			const cc = await run([mpicc, 'staged_exchange.c', ...flags, '-o', 'staged_exchange'], src, env);
			assert.equal(cc.exitCode, 0, show(cc));
			await runExample(launch, './staged_exchange', src);
		});

		it('the fallback verdict\'s fix (each lib mode) compiles against the installed package and moves the data', async () => {
			const env = { PKG_CONFIG_PATH: path.join(prefix, 'lib', 'pkgconfig') };
			const pc = await run(['pkg-config', '--cflags', '--libs', 'gpumpi'], src, env);
			const flags = pc.stdout.trim().split(/\s+/).filter(Boolean);
			for (const mode of ['lib-auto', 'lib-staged', 'lib-shm'] as LibFixMode[]) {
				const fix = libFix(mode, 1 << 20, 4, flavor);
				assert.ok(fix.code.includes(fix.setup) && fix.code.includes(fix.exchange) && fix.code.includes(fix.teardown), 'Copy code must copy the tested lines');
				const file = `fix_${mode.replace('-', '_')}.c`;
				fs.writeFileSync(path.join(src, file), [
					'#include <mpi.h>', '#include <stdio.h>', '#include <stdlib.h>', '#include <string.h>', '#include "gpumpi.h"',
					'int main(int argc, char** argv) {',
					'MPI_Init(&argc, &argv);',
					'int rank = 0; MPI_Comm_rank(MPI_COMM_WORLD, &rank);',
					'int peer = 1 - rank, tag = 7;',
					'size_t bytes = ((size_t)3 << 20) + 5;',
					'unsigned char* sendbuf = malloc(bytes); unsigned char* recvbuf = malloc(bytes);',
					'for (size_t i = 0; i < bytes; ++i) sendbuf[i] = (unsigned char)(i * 13 + (size_t)rank);',
					'memset(recvbuf, 0, bytes);',
					fix.setup, fix.exchange,
					'size_t bad = 0; for (size_t i = 0; i < bytes; ++i) if (recvbuf[i] != (unsigned char)(i * 13 + (size_t)peer)) ++bad;',
					'printf("rank %d: %zu wrong of %zu\\n", rank, bad, bytes);',
					fix.teardown,
					'free(sendbuf); free(recvbuf);',
					'MPI_Finalize();', 'return bad != 0;', '}', '',
				].join('\n'));
				const cc = await run([mpicc, '-Wall', '-Werror', file, ...flags, '-o', file.replace(/\.c$/, '')], src, env);
				assert.equal(cc.exitCode, 0, `${mode}: the printed fix does not compile\n${show(cc)}\n${fs.readFileSync(path.join(src, file), 'utf8')}`);
				const r = await run([...launch, `./${file.replace(/\.c$/, '')}`], src, { LD_LIBRARY_PATH: undefined });
				assert.equal(r.exitCode, 0, `${mode}\n${show(r)}`);
				for (const rank of [0, 1]) { assert.match(r.stdout, new RegExp(`^rank ${rank}: 0 wrong of 3145733$`, 'm'), `${mode}\n${show(r)}`); }
			}
		});

		it('the IPC verdict\'s bounce code (gpumpi_ipc_export / open / irecv / close) compiles against the installed package', async () => {
			const env = { PKG_CONFIG_PATH: path.join(prefix, 'lib', 'pkgconfig') };
			const flags = (await run(['pkg-config', '--cflags', '--libs', 'gpumpi'], src, env)).stdout.trim().split(/\s+/).filter(Boolean);
			const fix = ipcBounceFix();
			assert.ok(fix.code.includes(fix.exporter) && fix.code.includes(fix.importer));
			fs.writeFileSync(path.join(src, 'bounce_fix.c'), [
				'#include <mpi.h>', '#include <stdio.h>', '#include "gpumpi.h"',
				'/* compile check only: exporting needs device memory, which this machine has not */',
				'void export_side(gpumpi_ctx* ctx, void* dev_ptr, int importer, int tag) {', fix.exporter, '}',
				'void import_side(gpumpi_ctx* ctx, size_t bytes, int exporter, int sender, int tag) {', fix.importer, '}',
				'int main(void) { return 0; }', '',
			].join('\n'));
			const cc = await run([mpicc, '-Wall', '-Werror', 'bounce_fix.c', ...flags, '-o', 'bounce_fix'], src, env);
			assert.equal(cc.exitCode, 0, `${show(cc)}\n${fs.readFileSync(path.join(src, 'bounce_fix.c'), 'utf8')}`);
		});

		it('builds it with a CMake project using find_package(gpumpi) and runs it under mpirun -np 2', async () => {
			const proj = path.join(tmp, 'cmake-user');
			fs.mkdirSync(proj);
			fs.copyFileSync(path.join(src, 'staged_exchange.c'), path.join(proj, 'staged_exchange.c'));
			fs.writeFileSync(path.join(proj, 'CMakeLists.txt'), [
				'cmake_minimum_required(VERSION 3.18)',
				'project(user_app C)',
				'find_package(gpumpi 0.1 REQUIRED)',
				'add_executable(staged_exchange staged_exchange.c)',
				'target_link_libraries(staged_exchange PRIVATE gpumpi::gpumpi)',
				'message(STATUS "gpumpi MPI flavour: ${gpumpi_MPI_FLAVOUR}")',
				'',
			].join('\n'));
			const cfg = await run(['cmake', '-S', proj, '-B', path.join(proj, 'build'), `-DCMAKE_PREFIX_PATH=${prefix}`], proj);
			assert.equal(cfg.exitCode, 0, show(cfg));
			assert.match(cfg.stdout, new RegExp(`gpumpi MPI flavour: ${flavor}`), show(cfg));
			const b = await run(['cmake', '--build', path.join(proj, 'build')], proj);
			assert.equal(b.exitCode, 0, show(b));
			await runExample(launch, path.join(proj, 'build', 'staged_exchange'), proj);
		});
	});
}
