/**
 * Pure parts of the ssh hosts feature: the gpumpiDoctor.hosts setting validation, --host resolution, destination
 * checks and ssh error classification (the live behaviour is tested against real sshd in test/engine/sshHost.test.ts).
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { resolveHost, validateHostSettings } from '../../extension/core/hosts/hostSettings';
import { SshHost, classifySshError } from '../../extension/core/hosts/sshHost';
import { posixQuoteArgv } from '../../extension/core/host';

describe('host settings and ssh errors (pure)', () => {
	it('validates gpumpiDoctor.hosts and rejects hostile values with clear problems', () => {
		const { hosts, problems } = validateHostSettings([
			{ name: 'gpu01', sshHost: 'alice@gpu01.example.org', setup: 'module load openmpi/4.1 cuda/12' },
			{ name: 'evil', sshHost: '-oProxyCommand=touch /tmp/x' },
			{ name: 'ws', sshHost: 'a b' },
			{ name: 'nul', sshHost: 'h\0' },
			{ name: 'gpu01', sshHost: 'other' },
			{ name: '../x', sshHost: 'h' },
			{ name: 'rel', sshHost: 'h', enginePath: 'bin/gpumpi', mpirun: 'x;y' },
			{ name: 'typo', sshHost: 'h', setpu: 'x' },
			'gpu02', 7, null,
		]);
		assert.deepEqual(hosts.map(h => h.name), ['gpu01']);
		assert.equal(hosts[0].setup, 'module load openmpi/4.1 cuda/12');
		const text = problems.join('\n');
		for (const re of [/\[1\] \(evil\): .*starts with "-"/, /\[2\] \(ws\): .*whitespace/, /\[3\] \(nul\): sshHost contains a NUL/,
			/\[4\] \(gpu01\): the name "gpu01" is used twice/, /\[5\]: name "\.\.\/x" must be/, /\[6\] \(rel\): mpirun must be .*enginePath must be an absolute/,
			/\[7\] \(typo\): unknown key "setpu"/, /\[8\] must be an object/, /\[9\] must be an object/, /\[10\] must be an object/]) {
			assert.match(text, re);
		}
		assert.equal(problems.length, 10);
		assert.deepEqual(validateHostSettings('x').problems, ['gpumpiDoctor.hosts must be an array of hosts, got the string "x"']);
		assert.deepEqual(resolveHost(hosts, 'gpu01', 'module load x'), { ...hosts[0], setup: 'module load x' });
		assert.deepEqual(resolveHost(hosts, 'bob@node7'), { name: 'bob@node7', sshHost: 'bob@node7', setup: '', mpirun: '', enginePath: '', launcher: 'mpirun', srunArgs: [], srunMpi: '' });
		assert.match((resolveHost(hosts, '-F/etc/x') as { error: string }).error, /starts with "-"/);
	});

	it('validates the Slurm launcher keys: srun allocation options are argv items, hostile ones stay data or are refused', () => {
		const { hosts, problems } = validateHostSettings([
			{ name: 'slurm', sshHost: 'login1', launcher: 'srun', srunArgs: ['-p', 'gpu', '--gres=gpu:1', '$(reboot)'], srunMpi: 'pmi2' },
			{ name: 'badl', sshHost: 'h', launcher: 'qsub' },
			{ name: 'bada', sshHost: 'h', launcher: 'srun', srunArgs: '-p gpu' },
			{ name: 'badn', sshHost: 'h', launcher: 'srun', srunArgs: ['-p', 'a\nb'] },
			{ name: 'badm', sshHost: 'h', launcher: 'srun', srunMpi: 'pmi2;reboot' },
			{ name: 'long', sshHost: 'h', srunArgs: Array.from({ length: 40 }, () => '-v') },
		]);
		assert.deepEqual(hosts.map(h => h.name), ['slurm']);
		assert.deepEqual(hosts[0].srunArgs, ['-p', 'gpu', '--gres=gpu:1', '$(reboot)']);
		assert.equal(hosts[0].launcher, 'srun');
		assert.equal(hosts[0].srunMpi, 'pmi2');
		const text = problems.join('\n');
		assert.match(text, /\(badl\): launcher must be "mpirun" or "srun"/);
		assert.match(text, /\(bada\): srunArgs must be an array/);
		assert.match(text, /\(badn\): srunArgs must be an array .*no NUL or newline/);
		assert.match(text, /\(badm\): srunMpi must be a plugin name/);
		assert.match(text, /\(long\): srunArgs must be an array of up to 32/);
		assert.equal(problems.length, 5);
	});

	it('throws for a destination ssh would misread', () => {
		assert.throws(() => new SshHost({ destination: '-oProxyCommand=x' }), /starts with "-"/);
		assert.throws(() => new SshHost({ destination: 'host\nx' }), /control characters/);
		assert.throws(() => new SshHost({ destination: '' }), /empty/);
	});

	it('classifies ssh messages it has not seen live (name resolution)', () => {
		assert.match(classifySshError('nope', 'ssh: Could not resolve hostname nope: Name or service not known\r\n', 10), /cannot resolve the host name of nope/);
		assert.match(classifySshError('h', '', 10), /ssh to h failed \(exit status 255, no message\)/);
	});
});

describe('posixQuoteArgv', () => {
	it('quotes every hostile value so that sh reads back exactly the argv (checked with a real /bin/sh)', () => {
		const argv = ['a b', "it's", '$(id)', '`id`', ';x', 'l1\nl2', '-n', '', '\\', '*', '~', '!x', '$HOME', "'", 'tab\tx', 'ünï'];
		const out = execFileSync('/bin/sh', ['-c', `printf '%s\\0' ${posixQuoteArgv(argv)}`], { encoding: 'utf8' });
		assert.deepEqual(out.split('\0').slice(0, -1), argv);
	});
});
