/**
 * The collector's pure helpers (extension/core/collect.ts): environment filter, flavour from `mpirun --version`
 * output, bounded concurrency. The collector run on this machine's real tools is test/engine/collect.test.ts.
 */
import * as assert from 'node:assert/strict';
import type { RawOutput } from '../../extension/shared/report';
import { detectFlavor, filterEnv, runBounded } from '../../extension/core/collect';

describe('collect helpers', () => {
	it('filterEnv keeps the MPI/UCX/CUDA families and escapes newlines', () => {
		const text = filterEnv({ HOME: '/root', OMPI_MCA_pml: 'ucx', UCX_TLS: 'a\nb', PATH: '/bin', CUDA_VISIBLE_DEVICES: '0', XOMPI_: 'no' });
		assert.equal(text, 'CUDA_VISIBLE_DEVICES=0\nOMPI_MCA_pml=ucx\nPATH=/bin\nUCX_TLS=a\\nb\n');
	});

	it('detectFlavor tells the two MPIs apart and is unsure otherwise', () => {
		const mk = (stdout: string, exitCode: number | null = 0): RawOutput => ({ id: 'mpirun_version', command: [], exitCode, stdout, stderr: '', durationMs: 0 });
		assert.equal(detectFlavor(mk('mpirun (Open MPI) 4.1.4\n')), 'openmpi');
		assert.equal(detectFlavor(mk('HYDRA build details:\n    Version: 4.0.2\n')), 'mpich');
		assert.equal(detectFlavor(mk('Intel(R) MPI Library for Linux* OS, Version 2021.10\n')), 'unknown');
		assert.equal(detectFlavor(mk('', null)), 'unknown');
	});

	it('runBounded never has more than the limit in flight', async () => {
		let inFlight = 0;
		let peak = 0;
		const tasks = Array.from({ length: 12 }, () => async () => {
			inFlight++; peak = Math.max(peak, inFlight);
			await new Promise(r => setTimeout(r, 10));
			inFlight--;
		});
		await runBounded(tasks, 4);
		assert.equal(peak, 4);
		assert.equal(inFlight, 0);
	});
});
