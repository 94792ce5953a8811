/**
 * Which word of a guarded command is the program whose link order is read (collect/programLinks.ts), and which
 * variables the command forwards to the ranks: pure argv handling, on the command shapes of Open MPI's mpirun,
 * MPICH's hydra and srun. The collection itself runs for real in test/engine/programLinks.test.ts.
 */
import * as assert from 'node:assert/strict';
import { forwardedEnv, programCandidates } from '../../extension/core/collect/programLinks';

describe('program links: the program in a launcher command', () => {
	it('skips the launcher\'s options and their values (one and two values), stops at MPMD ":"', () => {
		assert.deepEqual(programCandidates(['mpirun.mpich', '-np', '2', '-genv', 'A', 'B', './app', 'x'], true).candidates, ['./app', 'x']);
		assert.deepEqual(programCandidates(['mpirun', '--oversubscribe', '--mca', 'pml', 'ucx', '-x', 'UCX_TLS=sm', '-n', '4', 'app'], true).candidates, ['app']);
		assert.deepEqual(programCandidates(['srun', '--mpi=pmi2', '-N', '1', '--gpus-per-task', '1', './a.out'], true).candidates, ['./a.out']);
		assert.deepEqual(programCandidates(['mpiexec', '-n', '1', './a', ':', '-n', '1', './b'], true).candidates, ['./a']);
		// An unknown option's value is one more candidate (readelf refuses it and the next word is tried).
		assert.deepEqual(programCandidates(['mpirun', '--some-new-option', 'v', './app'], true).candidates, ['v', './app']);
	});
	it('reads -wdir / --wdir= / --chdir; a command that is no launcher is the program itself', () => {
		assert.equal(programCandidates(['mpirun', '-wdir', '/w', '-np', '2', 'app'], true).wdir, '/w');
		assert.equal(programCandidates(['mpirun', '--wdir=/x', 'app'], true).wdir, '/x');
		assert.deepEqual(programCandidates(['./app', '-np', '3'], false), { candidates: ['./app'], wdir: null });
		assert.deepEqual(programCandidates([], false).candidates, []);
	});
	it('variables forwarded: -genv / -env NAME V, -x NAME=V, -x NAME from the launcher\'s own environment', () => {
		assert.deepEqual(forwardedEnv(['mpirun.mpich', '-genv', 'MPIR_CVAR_X', '0', '-env', 'B', '1', '-np', '2', './app'], {}), [['MPIR_CVAR_X', '0'], ['B', '1']]);
		assert.deepEqual(forwardedEnv(['mpirun', '-x', 'A=1', '-x', 'HOME', '-x', 'UNSET', './app'], { HOME: '/root' }), [['A', '1'], ['HOME', '/root']]);
		assert.deepEqual(forwardedEnv(['mpirun', '--mca', 'pml', 'ucx', '-mca', 'pml_ucx_tls', 'any', './app'], {}), [['OMPI_MCA_pml', 'ucx'], ['OMPI_MCA_pml_ucx_tls', 'any']], 'MCA parameters on the command line, as the ranks read them');
	});
});
