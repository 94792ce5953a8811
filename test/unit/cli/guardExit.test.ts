/**
 * `gpumpi-doctor guard`'s exit code, both ways: the program's own code comes through unchanged (0, 2, 3, 125 — a 2 is
 * never the CLI's usage error any more), and the guard's own failures have the codes of timeout(1) / env(1) (124
 * timed out, 125 the guard failed, usage errors included, 126 not runnable, 127 not found, 128+N a signal). The mapping
 * itself on every case, then real processes through guardMain: `sh -c 'exit N'`, a missing command, a file without
 * the execute bit, `sleep` under --timeout, a shell that kills itself. The guard library is a stand-in here (an empty
 * file: ld.so says it cannot preload it and runs the program as it is); the real library under real Open MPI and MPICH
 * is test/engine/guardCli.test.ts.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { guardMain } from '../../../extension/cli/guardCli';
import { GUARD_EXIT, guardExitCode } from '../../../extension/core/guard/guardResult';
import { captureIo } from './captureIo';
import { withSpawnSpy } from './spawnSpy';

describe('guard exit code: the mapping', () => {
	const end = (over: Partial<Parameters<typeof guardExitCode>[0]>): number => guardExitCode({ exitCode: null, signal: null, timedOut: false, error: null, ...over });
	it('the program\'s own code whenever it exited, whatever else is known', () => {
		for (const n of [0, 1, 2, 3, 124, 125, 126, 127, 130, 255]) { assert.equal(end({ exitCode: n }), n); }
		assert.equal(end({ exitCode: 2, error: 'not found' }), 2);
	});
	it('without one: 124 timed out, 128+N for signal N, 127 not found, 126 not runnable, 125 anything else', () => {
		assert.equal(end({ timedOut: true, signal: 'SIGKILL', error: 'timed out after 5 s' }), GUARD_EXIT.timedOut);
		assert.equal(end({ signal: 'SIGKILL', error: 'killed by SIGKILL' }), 137);
		assert.equal(end({ signal: 'SIGSEGV' }), 139);
		assert.equal(end({ error: 'not found on PATH' }), GUARD_EXIT.notFound);
		assert.equal(end({ error: 'not found' }), GUARD_EXIT.notFound);
		assert.equal(end({ error: 'permission denied' }), GUARD_EXIT.cannotRun);
		assert.equal(end({ error: 'not an executable' }), GUARD_EXIT.cannotRun);
		assert.equal(end({ error: 'the ssh connection to h ended while the command ran (ssh exit status 255)' }), GUARD_EXIT.guardFailed);
		assert.equal(end({ signal: 'SIGNOTREAL' }), GUARD_EXIT.guardFailed);
		assert.deepEqual(Object.values(GUARD_EXIT), [124, 125, 126, 127, 130]);
	});
});

describe('guard exit code: real processes through gpumpi-doctor guard', function () {
	this.timeout(60_000);
	let dir = '';
	let lib = '';
	before(() => {
		dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-guard-exit-'));
		lib = path.join(dir, 'libgpumpi_guard.so');
		fs.writeFileSync(lib, '');
		fs.writeFileSync(path.join(dir, 'not-executable'), '#!/bin/sh\nexit 0\n', { mode: 0o644 });
	});
	after(() => { fs.rmSync(dir, { recursive: true, force: true }); });

	const guard = async (args: string[]): Promise<{ code: number; out: string; err: string; spawned: string[][] }> => {
		const io = captureIo(dir);
		const { value: code, spawned } = await withSpawnSpy(() => guardMain(args, io));
		return { code, out: io.out, err: io.err, spawned };
	};
	const run = (opts: string[], command: string[]): ReturnType<typeof guard> => guard(['--flavor', 'openmpi', '--guard-lib', lib, ...opts, '--', ...command]);

	it('the program\'s own 0, 2, 3 and 125 come through, with the result document (its exitCode the same)', async () => {
		for (const n of [0, 2, 3, 125]) {
			const r = await run(['--json'], ['sh', '-c', `exit ${n}`]);
			assert.equal(r.code, n, r.err);
			const doc = JSON.parse(r.out) as { exitCode: number | null; timedOut: boolean };
			assert.deepEqual([doc.exitCode, doc.timedOut], [n, false]);
		}
	});

	it('a usage error is 125, not 2: nothing started, nothing on stdout', async () => {
		const r = await run(['--mode', 'repor'], ['sh', '-c', 'exit 2']);
		assert.equal(r.code, GUARD_EXIT.guardFailed);
		assert.match(r.err, /^gpumpi-doctor guard: --mode needs report, warn or fix, got "repor"\n/);
		assert.deepEqual([r.out, r.spawned], ['', []]);
	});

	it('no guard library: 125 and why, the program not run', async () => {
		const r = await guard(['--flavor', 'openmpi', '--guard-lib', path.join(dir, 'none', 'libgpumpi_guard.so'), '--', 'sh', '-c', 'exit 2']);
		assert.equal(r.code, GUARD_EXIT.guardFailed, r.err);
		assert.match(r.err, /no guard library at .*none\/libgpumpi_guard\.so/);
		assert.ok(!r.spawned.some(a => a.includes('exit 2')), JSON.stringify(r.spawned));
		assert.equal(r.out, '');
	});

	it('--out that cannot be written: 125, the program\'s own code named in the message', async () => {
		const r = await run(['--out', dir], ['sh', '-c', 'exit 3']);
		assert.equal(r.code, GUARD_EXIT.guardFailed);
		assert.match(r.err, /cannot write .*\(the program's exit code was 3\)/);
		assert.equal(r.out, '', 'no result printed when the one asked for could not be written');
	});

	it('127 for a command not found, 126 for one that cannot be executed', async () => {
		const missing = await run([], ['gpumpi-no-such-command-here']);
		assert.equal(missing.code, GUARD_EXIT.notFound, missing.err);
		assert.match(missing.err, /gpumpi-no-such-command-here: not found on PATH/);
		const notExec = await run([], [path.join(dir, 'not-executable')]);
		assert.equal(notExec.code, GUARD_EXIT.cannotRun, notExec.err);
		assert.match(notExec.err, /not-executable: permission denied/);
	});

	it('124 when --timeout stopped it; 128+N when signal N ended it', async () => {
		const t0 = Date.now();
		const slow = await run(['--timeout', '1', '--json'], ['sleep', '30']);
		assert.equal(slow.code, GUARD_EXIT.timedOut, slow.err);
		assert.ok(Date.now() - t0 < 20_000);
		assert.equal((JSON.parse(slow.out) as { timedOut: boolean }).timedOut, true);
		const killed = await run(['--json'], ['sh', '-c', 'kill -KILL $$']);
		assert.equal(killed.code, 128 + os.constants.signals.SIGKILL, killed.err);
		assert.deepEqual(Object.entries(JSON.parse(killed.out) as Record<string, unknown>).filter(([k]) => ['exitCode', 'signal'].includes(k)), [['exitCode', null], ['signal', 'SIGKILL']]);
	});
});
