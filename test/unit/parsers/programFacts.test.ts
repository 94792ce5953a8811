/**
 * Parsers of what is read about the user's program and mpi4py (parsers/programFacts.ts) and UCX's thread support
 * (ucx_info -b ENABLE_MT), on real captures: Debian's mpi4py probe and ldd (test-fixtures/tools/debian12-mpi4py),
 * ldd of programs linked against stand-in Cray libraries (debian12-gtl), both UCX builds' `ucx_info -b`, and real
 * guard reports from the H100 (test-fixtures/guard-foreign/h100-testbed). Script lines are parsed from inline text.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { guardRankLines } from '../../../extension/core/collect/programLinks';
import { interpreterKind, parseGuardRanks, parseLdd, parseMpi4pyProbe, parseProgram, parseScriptLines, scriptLines } from '../../../extension/core/parsers/programFacts';
import { emptyUcx, parseUcxBuild } from '../../../extension/core/parsers/ucxInfo';
import { fixtureText } from '../rules/fixtureRaw';

const GUARD = path.resolve(process.cwd(), 'test-fixtures', 'guard-foreign', 'h100-testbed');

describe('program facts parsers', () => {
	it('ucx_info -b: ENABLE_MT 1 on Debian (configured --enable-mt), 0 on the GPU testbed', () => {
		const deb = emptyUcx();
		parseUcxBuild(fixtureText('debian12-cpu', 'ucx_info_b.txt'), deb);
		assert.equal(deb.threadSupport?.value, true);
		assert.match(deb.threadSupport?.evidence.line ?? '', /^#define ENABLE_MT\s+1$/);
		const tb = emptyUcx();
		parseUcxBuild(fixtureText('h200-testbed', 'ucx_info_b.txt'), tb);
		assert.equal(tb.threadSupport?.value, false);
		assert.equal(emptyUcx().threadSupport, null);
	});

	it('the mpi4py probe: version, rc defaults, MPI module and library; "none" when not installed', () => {
		const p = parseMpi4pyProbe(fixtureText('debian12-mpi4py', 'mpi4py-probe.txt'));
		assert.equal(p.python, '/usr/bin/python3');
		assert.equal(p.version?.value, '3.1.4');
		assert.equal(p.rcThreadLevel?.value, 'multiple');
		assert.equal(p.rcThreads?.value, 'True');
		assert.match(p.mpiModule?.value ?? '', /^\/usr\/lib\/python3\/dist-packages\/mpi4py\/MPI\.cpython-311-x86_64-linux-gnu\.so$/);
		assert.match(p.libraryVersion?.value ?? '', /^Open MPI v4\.1\.4, package: Debian OpenMPI/);
		assert.equal(p.libraryVersion?.evidence.lineNo, 7);
		assert.doesNotMatch(p.libraryVersion?.value ?? '', /\u0000/, 'Open MPI\'s trailing NUL is dropped');
		const none = parseMpi4pyProbe(fixtureText('debian12-mpi4py', 'mpi4py-probe-not-installed.txt'));
		assert.equal(none.version, null);
		assert.match(none.python, /pyenv/);
	});

	it('ldd: every resolved library with its path, not-found ones with null, the loader by its path', () => {
		const libs = parseLdd(fixtureText('debian12-mpi4py', 'ldd-mpi-module.txt'), 'ldd:x');
		const mpi = libs.find((l) => l.soname === 'libmpi.so.40');
		assert.equal(mpi?.path, '/lib/x86_64-linux-gnu/libmpi.so.40');
		assert.ok(libs.some((l) => l.soname === 'ld-linux-x86-64.so.2'));
		assert.ok(!libs.some((l) => l.soname === 'linux-vdso.so.1'), 'the vDSO has no path: not a library on disk');
		const site = parseLdd(fixtureText('debian12-gtl', 'ldd-app-site.txt'), 'ldd:app-site');
		assert.equal(site.find((l) => l.soname === 'libmpi_gtl_cuda.so')?.path, '/tmp/gtl/lib/libmpi_gtl_cuda.so', 'the GTL a library needs is in the closure');
		assert.deepEqual(parseLdd('\tlibfoo.so.1 => not found\n', 's'), [{ soname: 'libfoo.so.1', path: null, evidence: { source: 's', line: '\tlibfoo.so.1 => not found', lineNo: 1 } }]);
	});

	it('program kind and interpreters; script lines kept with their own numbers, comments left out', () => {
		assert.equal(interpreterKind('/opt/torch/.venv/bin/python3'), 'python');
		assert.equal(interpreterKind('python3.12'), 'python');
		assert.equal(interpreterKind('/usr/bin/julia'), 'julia');
		assert.equal(interpreterKind('./app'), null);
		assert.equal(interpreterKind('pythonista'), null);
		const p = parseProgram('program=/usr/bin/python3\nkind=python\nscript=train.py\n');
		assert.equal(p?.kind, 'python');
		assert.equal(p?.script?.value, 'train.py');
		assert.equal(parseProgram('kind=elf\n'), null);
		const text = ['import os', '# os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"', 'os.environ["PYTORCH_ALLOC_CONF"] = "expandable_segments:True"', 'import mpi4py', 'mpi4py.rc.thread_level = "serialized"', 'x = 1'].join('\n');
		const kept = scriptLines(text);
		assert.equal(kept, '3:os.environ["PYTORCH_ALLOC_CONF"] = "expandable_segments:True"\n5:mpi4py.rc.thread_level = "serialized"');
		const lines = parseScriptLines(kept, 'script:train.py');
		assert.deepEqual(lines.map((l) => l.evidence.lineNo), [3, 5]);
		assert.equal(lines[1].text, 'mpi4py.rc.thread_level = "serialized"');
	});

	it('guard ranks: pml and buffer classes summed from real H100 reports', () => {
		const reports = ['rank0.json', 'rank1.json'].map((f) => fs.readFileSync(path.join(GUARD, 'pool-report', f), 'utf8'));
		const text = guardRankLines([...reports, 'not json']);
		const ranks = parseGuardRanks(text);
		assert.equal(ranks.length, 2, 'a damaged report is left out');
		assert.equal(ranks[0].pml, 'ucx');
		assert.ok(ranks.every((r) => (r.buffers.pool ?? 0) > 0 && r.buffers.vmm === 0), text);
		assert.deepEqual(parseGuardRanks('rank=0 pml=- device=2\nnonsense\n').map((r) => [r.pml, r.buffers.device]), [[null, 2]]);
	});
});
