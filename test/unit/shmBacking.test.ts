/**
 * Which launches get a private directory for Open MPI's shared-memory segments and under which parameter name
 * (extension/core/launch/shmBacking.ts), read from the real captured `mpirun --version` and `ompi_info` of the two
 * testbeds. The directory itself (created, used by real ranks, removed after a crash) is tested against real mpirun
 * in test/engine/shmBacking.test.ts.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { backingChosen, ranksStayHere, shmBackingParam } from '../../extension/core/launch/shmBacking';

const FIX = path.resolve(process.cwd(), 'test-fixtures', 'tools');
const read = (p: string): string => fs.readFileSync(path.join(FIX, p), 'utf8');

describe('shmBacking: the backing-directory parameter per Open MPI version', () => {
	it('Open MPI 4.1.4 (Debian 12, `mpirun.openmpi (OpenRTE) 4.1.4`): btl_vader_backing_directory, a parameter its ompi_info lists', () => {
		assert.equal(shmBackingParam(read('debian12-cpu/mpirun_version.txt')), 'btl_vader_backing_directory');
		assert.match(read('debian12-cpu/ompi_info.txt'), /^mca:btl:vader:param:btl_vader_backing_directory:value:\/dev\/shm$/m);
	});
	it('Open MPI 5.0.7 (H200 testbed): btl_sm_backing_directory, the name its ompi_info lists (vader only as a synonym)', () => {
		assert.equal(shmBackingParam(read('h200-testbed/mpirun_version.txt')), 'btl_sm_backing_directory');
		const info = read('h200-testbed/ompi_info.txt');
		assert.match(info, /^mca:btl:sm:param:btl_sm_backing_directory:value:\/dev\/shm$/m);
		assert.match(info, /^mca:btl:sm:param:btl_sm_backing_directory:synonym:name:btl_vader_backing_directory$/m);
		assert.equal(shmBackingParam(info), 'btl_sm_backing_directory');
	});
	it('no parameter for what is not a known Open MPI version (MPICH, 1.x, empty)', () => {
		assert.equal(shmBackingParam(read('debian12-cpu/mpirun_version_mpich.txt')), null);
		assert.equal(shmBackingParam('mpirun (Open MPI) 1.10.7'), null);
		assert.equal(shmBackingParam(''), null);
	});
});

describe('shmBacking: which launches get one', () => {
	it('only launches that keep every rank on the launching host (a missing directory elsewhere would switch the BTL to TCP)', () => {
		assert.equal(ranksStayHere([]), true);
		assert.equal(ranksStayHere(['--map-by', 'core', '--bind-to', 'none']), true);
		for (const extra of [['--host', 'a:2,b:2'], ['-H', 'a,b'], ['--hostfile', 'h'], ['-hostfile', 'h'], ['--machinefile', 'm'], ['-hosts', 'a,b'], ['-f', 'hosts'], ['--nodelist=a,b'], ['--host=a,b'], ['--rankfile', 'r']]) {
			assert.equal(ranksStayHere(extra), false, extra.join(' '));
		}
	});
	it('a backing directory the user chose (MCA list or OMPI_MCA_ environment) is kept', () => {
		assert.equal(backingChosen([['btl_vader_backing_directory', '/scratch']], []), true);
		assert.equal(backingChosen([['btl_sm_backing_directory', '/scratch']], []), true);
		assert.equal(backingChosen([], [['OMPI_MCA_btl_vader_backing_directory', '/scratch']]), true);
		assert.equal(backingChosen([['btl', 'self,vader']], [['UCX_TLS', 'sm']]), false);
	});
});
