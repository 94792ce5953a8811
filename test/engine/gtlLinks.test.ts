/**
 * The program rules on programs read for real (collect/programLinks.ts): `gpumpi-doctor inspect --program` and `guard`.
 * - cray-mpich-gtl-not-linked: a small MPI program built here against STAND-IN libraries named like Cray MPICH's
 *   (libmpi_cray.so.12, which needs Debian's MPICH, and libmpi_gtl_cuda.so: no Cray code, see
 *   test-fixtures/tools/debian12-gtl/README.md), with and without the GTL; real readelf and ldd; under the guard it
 *   runs for real with mpirun.mpich (Debian's MPICH ignores MPICH_GPU_SUPPORT_ENABLED).
 * - framework-allocator-pool-vmm and the mpi4py probe under the guard: Debian's mpi4py (python3-mpi4py) with Open MPI,
 *   PYTORCH_CUDA_ALLOC_CONF forwarded with -x; the ranks pass host buffers only, so the finding says the setting did
 *   not reach MPI's buffers (information).
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot } from '../../extension/core/native';

const ROOT = repoRoot() ?? process.cwd();
const BIN = path.join(ROOT, 'bin', 'gpumpi-doctor.js');
const MPICH_INC = '/usr/include/x86_64-linux-gnu/mpich';

interface Finding { id: string; severity: string; message: string; evidence: Array<{ source: string; line: string }>; fix?: { text: string; command?: string } }

function sh(argv: string[], cwd: string): void {
	const r = spawnSync(argv[0], argv.slice(1), { cwd, encoding: 'utf8', timeout: 120_000 });
	assert.equal(r.status, 0, `${argv.join(' ')}: ${r.stderr}`);
}

/** Run the CLI with a clean environment plus `extra`; the findings of its JSON output. */
function cli(args: string[], cwd: string, extra: Record<string, string> = {}): { code: number | null; findings: Finding[]; stderr: string; raw: Array<{ id: string; stdout: string }> } {
	const env: Record<string, string | undefined> = { ...process.env, ...extra };
	for (const k of Object.keys(env)) { if ((k.startsWith('GPUMPI_') || k === 'LD_PRELOAD' || k.startsWith('MPICH_GPU') || k.startsWith('PYTORCH_')) && !(k in extra)) { delete env[k]; } }
	const r = spawnSync(process.execPath, [BIN, ...args], { cwd, env, encoding: 'utf8', timeout: 300_000, maxBuffer: 256 * 1024 * 1024 });
	assert.ok(r.stdout.trim().startsWith('{'), `no JSON (exit ${r.status}): ${r.stderr.slice(-2000)}`);
	const doc = JSON.parse(r.stdout) as { findings: Finding[]; raw?: Array<{ id: string; stdout: string }> };
	return { code: r.status, findings: doc.findings, stderr: r.stderr, raw: doc.raw ?? [] };
}
const gtl = (f: Finding[]): Finding[] => f.filter((x) => x.id === 'cray-mpich-gtl-not-linked');

describe('program rules on real programs: inspect --program and guard', function () {
	this.timeout(900_000);
	let dir = '';
	before(function () {
		if (spawnSync('mpicc.mpich', ['-show'], { encoding: 'utf8' }).status !== 0 || spawnSync('ldd', ['--version']).status !== 0) { this.skip(); }
		dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-gtl-'));
		const lib = path.join(dir, 'lib');
		fs.mkdirSync(lib);
		for (const f of ['gtl.c', 'cray.c', 'app.c']) { fs.copyFileSync(path.join(ROOT, 'test-fixtures', 'tools', 'debian12-gtl', f), path.join(dir, f)); }
		sh(['gcc', '-shared', '-fPIC', '-Wl,-soname,libmpi_gtl_cuda.so', '-o', path.join(lib, 'libmpi_gtl_cuda.so'), 'gtl.c'], dir);
		sh(['gcc', '-shared', '-fPIC', '-Wl,-soname,libmpi_cray.so.12', '-o', path.join(lib, 'libmpi_cray.so.12'), 'cray.c', '-Wl,--no-as-needed', '-lmpich'], dir);
		fs.symlinkSync('libmpi_cray.so.12', path.join(lib, 'libmpi_cray.so'));
		const link = ['-I', MPICH_INC, '-Wl,--no-as-needed', `-L${lib}`, `-Wl,-rpath,${lib}`];
		sh(['gcc', '-o', 'app-gtl', 'app.c', ...link, '-lmpi_cray', '-lmpi_gtl_cuda', '-lmpich'], dir);
		sh(['gcc', '-o', 'app-nogtl', 'app.c', ...link, '-lmpi_cray', '-lmpich'], dir);
	});
	after(() => { if (dir) { fs.rmSync(dir, { recursive: true, force: true }); } });

	it('inspect --program: the error for the program without the GTL (ldd\'s line), none for the one with it', () => {
		const r = cli(['inspect', '--json', '--timeout', '60', '--program', './app-nogtl'], dir, { MPICH_GPU_SUPPORT_ENABLED: '1' });
		const f = gtl(r.findings);
		assert.equal(f.length, 1, JSON.stringify(r.findings.map((x) => x.id)));
		assert.equal(f[0].severity, 'error');
		assert.ok(f[0].evidence.some((e) => e.source === `ldd:${path.join(dir, 'app-nogtl')}` && /libmpi_cray\.so\.12 => /.test(e.line)), JSON.stringify(f[0].evidence));
		assert.ok(r.raw.some((x) => x.id === 'program' && /^kind=elf$/m.test(x.stdout)));
		assert.equal(gtl(cli(['inspect', '--json', '--timeout', '60', '--program', './app-gtl'], dir, { MPICH_GPU_SUPPORT_ENABLED: '1' }).findings).length, 0);
	});

	it('inspect --program with a path that is not a program: one parse finding that says so, nothing else claimed', () => {
		const r = cli(['inspect', '--json', '--timeout', '60', '--program', './app.c'], dir, { MPICH_GPU_SUPPORT_ENABLED: '1' });
		assert.equal(gtl(r.findings).length, 0);
		assert.ok(r.findings.some((x) => x.id === 'parse-problem' && /app\.c: not a program readelf can read/.test(x.message)), JSON.stringify(r.findings.map((x) => x.message)));
	});

	it('guard: the program runs (Debian\'s MPICH), the finding comes from its libraries and the forwarded variable', () => {
		const r = cli(['guard', '--json', '--', 'mpirun.mpich', '-genv', 'MPICH_GPU_SUPPORT_ENABLED', '1', '-np', '2', './app-nogtl'], dir);
		assert.equal(r.code, 0, r.stderr.slice(-1500));
		const f = gtl(r.findings);
		assert.equal(f.length, 1, JSON.stringify(r.findings.map((x) => x.id)));
		assert.ok(f[0].evidence.some((e) => e.source === 'env' && e.line === 'MPICH_GPU_SUPPORT_ENABLED=1'));
		assert.equal(gtl(cli(['guard', '--json', '--', 'mpirun.mpich', '-np', '2', './app-nogtl'], dir).findings).length, 0, 'not switched on');
	});

	it('guard on a Python mpi4py program (Open MPI): the allocator setting it forwards did not reach MPI\'s buffers', function () {
		if (spawnSync('/usr/bin/python3', ['-c', 'import mpi4py'], { encoding: 'utf8' }).status !== 0) { this.skip(); }
		const prog = path.join(ROOT, 'test', 'foreign', 'mpi4py_thread.py');
		const r = cli(['guard', '--json', '--', 'mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '-np', '2', '-x', 'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True', '/usr/bin/python3', prog], dir);
		assert.equal(r.code, 0, r.stderr.slice(-1500));
		const f = r.findings.filter((x) => x.id === 'framework-allocator-pool-vmm');
		assert.equal(f.length, 1, JSON.stringify(r.findings.map((x) => x.id)));
		assert.equal(f[0].severity, 'info');
		assert.match(f[0].message, /^PyTorch: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True/);
		assert.match(f[0].message, /Under the guard the ranks passed no vmm buffer to MPI/);
		assert.equal(r.findings.filter((x) => x.id === 'mpi4py-thread-multiple-ucx-no-mt').length, 0, 'Debian\'s UCX has thread support');
	});
});
