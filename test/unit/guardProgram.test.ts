/** The guard's program text in VS Code: absolute, workspace-relative, a command name on PATH; the recent list. */
import * as assert from 'node:assert/strict';
import { guardTaskArgv } from '../../extension/core/guard/guardTask';
import { programLabel, recentPrograms, resolveProgram, withRecent, RECENT_PROGRAMS_MAX } from '../../extension/core/guard/guardProgram';

describe('guard program (VS Code input)', () => {
	const here = { local: true, workspaceDir: '/home/u/proj' };
	it('an absolute path as given (normalised), a relative one against the workspace folder, a bare name kept for PATH', () => {
		assert.deepEqual(resolveProgram('/opt/app/bin//lmp', here), { program: '/opt/app/bin/lmp' });
		assert.deepEqual(resolveProgram('./build/app', here), { program: '/home/u/proj/build/app' });
		assert.deepEqual(resolveProgram('build/../bin/app ', here), { program: '/home/u/proj/bin/app' });
		assert.deepEqual(resolveProgram('python3', here), { program: 'python3' });
		assert.deepEqual(resolveProgram('python3', { local: false, workspaceDir: null }), { program: 'python3' });
	});
	it('refuses what cannot be resolved, saying why', () => {
		assert.match((resolveProgram('./a.out', { local: true, workspaceDir: null }) as { error: string }).error, /needs an open workspace folder/);
		assert.match((resolveProgram('./a.out', { local: false, workspaceDir: '/w' }) as { error: string }).error, /remote host: an absolute path there/);
		assert.match((resolveProgram('~/a.out', here) as { error: string }).error, /without ~/);
		assert.ok('error' in resolveProgram('  ', here));
		assert.ok('error' in resolveProgram('/bin/a\u0000b', here));
		assert.ok('error' in resolveProgram('a\nb', here));
	});
	it('labels inside the workspace are relative; the recent list keeps 5, newest first, once each, junk dropped', () => {
		assert.equal(programLabel('/home/u/proj/build/app', '/home/u/proj'), './build/app');
		assert.equal(programLabel('/home/u/project2/app', '/home/u/proj'), '/home/u/project2/app');
		assert.equal(programLabel('python3', '/home/u/proj'), 'python3');
		assert.deepEqual(withRecent(['/a', '/b', 7, '', '/c'], '/b'), ['/b', '/a', '/c']);
		assert.deepEqual(withRecent('garbage', '/x'), ['/x']);
		assert.deepEqual(recentPrograms(['/a', '/a', null, '/b']), ['/a', '/b']);
		assert.deepEqual(recentPrograms({ length: 3 }), []);
		const many = withRecent(['/1', '/2', '/3', '/4', '/5', '/6'], '/0');
		assert.equal(many.length, RECENT_PROGRAMS_MAX);
		assert.deepEqual(many, ['/0', '/1', '/2', '/3', '/4']);
	});
});

describe('gpumpi-guard task definition → CLI argv', () => {
	it('a program with ranks, mode and staging; a launcher as given; every value one word', () => {
		assert.deepEqual(guardTaskArgv({ program: './build/app', args: ['-n', 'a b; rm -rf /'], np: 4, mode: 'fix', stage: true }),
			['guard', '--np', '4', '--mode', 'fix', '--stage', '--', './build/app', '-n', 'a b; rm -rf /']);
		assert.deepEqual(guardTaskArgv({ program: 'python3', args: ['train.py'] }), ['guard', '--np', '2', '--mode', 'report', '--', 'python3', 'train.py']);
		assert.deepEqual(guardTaskArgv({ program: 'mpirun', args: ['-np', '2', './app'] }), ['guard', '--mode', 'report', '--', 'mpirun', '-np', '2', './app']);
		assert.deepEqual(guardTaskArgv({ program: '/usr/bin/mpirun.openmpi', args: [] }), ['guard', '--mode', 'report', '--', '/usr/bin/mpirun.openmpi']);
		assert.deepEqual(guardTaskArgv({ program: 'app', mpirun: '/opt/ompi/bin/mpirun' }), ['guard', '--np', '2', '--mode', 'report', '--mpirun', '/opt/ompi/bin/mpirun', '--', 'app']);
	});
	it('refuses a bad definition, naming the field', () => {
		assert.match(guardTaskArgv({ program: '' }) as string, /"program"/);
		assert.match(guardTaskArgv({ program: 'a', args: 'x y' }) as string, /"args" must be an array/);
		assert.match(guardTaskArgv({ program: 'a', np: 0 }) as string, /"np" must be an integer/);
		assert.match(guardTaskArgv({ program: 'a', np: '4' }) as string, /"np" must be an integer/);
		assert.match(guardTaskArgv({ program: 'a', mode: 'fixit' }) as string, /"mode"/);
		assert.match(guardTaskArgv({ program: 'a', stage: 'yes' }) as string, /"stage"/);
		assert.match(guardTaskArgv({ program: 'srun', np: 4 }) as string, /not a launcher/);
	});
});
