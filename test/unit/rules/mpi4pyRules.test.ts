/**
 * mpi4py-thread-multiple-ucx-no-mt on real captures: Debian's mpi4py 3.1.4 probe (Open MPI 4.1.4) and ldd of its MPI
 * module (test-fixtures/tools/debian12-mpi4py), Debian's ompi_info (pml ucx built) and param file (`pml = ^ucx`), both
 * UCX builds' `ucx_info -b` (Debian: ENABLE_MT 1; the GPU testbed: ENABLE_MT 0), real H100 guard reports (pml ucx).
 * The firing case combines Debian's Open MPI + mpi4py with the testbed's UCX build flags (no machine here has both):
 * said so in each test. `env` lines stand for the environment the ranks get.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { analyze } from '../../../extension/core/analyze';
import { guardRankLines } from '../../../extension/core/collect/programLinks';
import type { Finding, RawOutput } from '../../../extension/shared/report';
import { fixtureText, rawFromFixture, rawText } from './fixtureRaw';

const M = 'debian12-mpi4py';
const MODULE = '/usr/lib/python3/dist-packages/mpi4py/MPI.cpython-311-x86_64-linux-gnu.so';
/** Debian's Open MPI and mpi4py, without the distro's param file (which switches pml ucx off). */
const openmpiWithMpi4py = (): RawOutput[] => [
	rawFromFixture('debian12-cpu', 'ompi_info', 'ompi_info.txt', ['ompi_info', '--parsable', '--all']),
	rawFromFixture(M, 'mpi4py', 'mpi4py-probe.txt', ['/usr/bin/python3', '-c', '<mpi4py probe>']),
	rawFromFixture(M, `ldd:${MODULE}`, 'ldd-mpi-module.txt', ['ldd', MODULE]),
];
const ucx = (system: 'debian12-cpu' | 'h200-testbed'): RawOutput[] => [rawFromFixture(system, 'ucx_info_v'), rawFromFixture(system, 'ucx_info_b')];
const find = (raw: RawOutput[]): Finding[] => analyze(raw, 'test').findings.filter((f) => f.id === 'mpi4py-thread-multiple-ucx-no-mt');

describe('mpi4py-thread-multiple-ucx-no-mt', () => {
	it('fires: mpi4py\'s default MULTIPLE, Open MPI 4.1 with pml ucx, a UCX without thread support (testbed build flags)', () => {
		const f = find([...openmpiWithMpi4py(), ...ucx('h200-testbed')]);
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'warning');
		assert.match(f[0].message, /^mpi4py 3\.1\.4 \(\/usr\/bin\/python3\) asks MPI_Init_thread for MPI_THREAD_MULTIPLE \(mpi4py\.rc\.thread_level = "multiple", mpi4py's default, and MPI4PY_RC_THREAD_LEVEL is not set\) of Open MPI v4\.1\.4/);
		assert.match(f[0].message, /UCX 1\.13\.1 was built without thread support \(ucx_info -b: ENABLE_MT 0/);
		assert.match(f[0].message, /Open MPI 4\.1 does this silently/);
		assert.match(f[0].message, /runs over pml ob1 instead/);
		assert.ok(f[0].evidence.some((e) => e.source === 'ucx_info_b' && /^#define ENABLE_MT\s+0$/.test(e.line)));
		assert.ok(f[0].evidence.some((e) => e.source === 'mpi4py' && e.line === 'rc.thread_level=multiple'));
		assert.ok(f[0].evidence.some((e) => e.source === 'ompi_info' && /mca:pml:ucx/.test(e.line)), 'pml ucx is built');
		assert.match(f[0].fix?.command ?? '', /^export MPI4PY_RC_THREAD_LEVEL=single/);
	});

	it('a guarded run\'s Open MPI message is the evidence; pml forced to ucx makes it an error (MPI_Init fails)', () => {
		const said = rawText('program_output', '', { stderr: '[vm:01234] pml_ucx.c:329  Warning: UCP worker does not support MPI_THREAD_MULTIPLE. PML UCX could not be selected\n' });
		const f = find([...openmpiWithMpi4py(), ...ucx('h200-testbed'), said]);
		assert.equal(f.length, 1);
		assert.match(f[0].message, /Open MPI said so: "\[vm:01234\] pml_ucx\.c:329 {2}Warning: UCP worker does not support MPI_THREAD_MULTIPLE/);
		const forced = find([...openmpiWithMpi4py(), ...ucx('h200-testbed'), rawText('env', 'OMPI_MCA_pml=ucx')]);
		assert.equal(forced[0]?.severity, 'error');
		assert.match(forced[0].message, /no pml is left and MPI_Init fails/);
	});

	it('is quiet on Debian as it is: its UCX has thread support (and the run shows MULTIPLE under pml ucx)', () => {
		assert.equal(find([...openmpiWithMpi4py(), ...ucx('debian12-cpu')]).length, 0);
		assert.match(fixtureText(M, 'run-pml-ucx-thread-default.txt'), /^rank 0 thread multiple pml ucx$/m);
	});

	it('is quiet below MULTIPLE (env or script), when pml ucx is excluded, without mpi4py, when the guarded ranks ran pml ucx', () => {
		const base = [...openmpiWithMpi4py(), ...ucx('h200-testbed')];
		assert.equal(find([...base, rawText('env', 'MPI4PY_RC_THREAD_LEVEL=serialized')]).length, 0);
		assert.equal(find([...base, rawText('env', 'MPI4PY_RC_THREADS=0')]).length, 0);
		assert.equal(find([...base, rawText('script:train.py', '4:mpi4py.rc.thread_level = "funneled"')]).length, 0);
		// The ranks' own environment as a real engine run recorded it (MPI4PY_RC_THREAD_LEVEL=serialized, fake CUDA driver).
		const engine: RawOutput = { id: 'engine', command: ['mpirun', '-np', '2', 'gpumpi', 'inspect'], exitCode: 0, stdout: fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures/engine/debian12-fakecuda/inspect-np2-torch-env.json'), 'utf8'), stderr: '', durationMs: 1 };
		assert.equal(find([...base, engine]).length, 0);
		assert.equal(find([...base, rawFromFixture('debian12-cpu', 'mca_params:/etc/openmpi/openmpi-mca-params.conf', 'mca_params.txt')]).length, 0, 'Debian: pml = ^ucx');
		const noMpi4py = [rawFromFixture('debian12-cpu', 'ompi_info', 'ompi_info.txt'), rawFromFixture(M, 'mpi4py', 'mpi4py-probe-not-installed.txt'), ...ucx('h200-testbed')];
		assert.equal(find(noMpi4py).length, 0);
		const reports = ['rank0.json', 'rank1.json'].map((f) => fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures/guard-foreign/h100-testbed/pool-report', f), 'utf8'));
		assert.equal(find([...base, rawText('guard_ranks', guardRankLines(reports))]).length, 0, 'the ranks of a real guarded run (H100) used pml ucx: whatever was asked, pml ucx ran');
	});
});
