/**
 * A host that cannot be reached is reported as exactly that: collect() tests the connection first and looks at
 * nothing else, and analyze() gives one finding (host-unreachable) and no absence. The Host here is a recording
 * stand-in whose connect() fails (the real ssh failures are produced in test/engine/unreachableHosts.test.ts): it
 * only exists to prove that no other method is called after a failed connect.
 */
import * as assert from 'node:assert/strict';
import { analyze } from '../../extension/core/analyze';
import { collect } from '../../extension/core/collect';
import type { Host, HostConnectResult } from '../../extension/core/host';
import { classifySshFailure } from '../../extension/core/hosts/sshHost';
import { CONNECT_ID, UNREACHABLE_ID } from '../../extension/core/unreachable';

function unreachableHost(result: HostConnectResult, calls: string[]): Host {
	const record = (name: string) => (): never => { calls.push(name); throw new Error(`${name} called on an unreachable host`); };
	return {
		ref: { id: 'ssh:gone', label: 'gone', kind: 'ssh' },
		connect: async () => { calls.push('connect'); return result; },
		run: record('run'), readFile: record('readFile'), env: record('env'), which: record('which'),
		listDir: record('listDir'), realpath: record('realpath'), identity: record('identity'), cpuCount: record('cpuCount'),
	};
}

// What ssh 9.2 (Debian 12) printed for `ssh -o BatchMode=yes nohost.invalid` on this machine.
const RESOLVE_STDERR = 'ssh: Could not resolve hostname nohost.invalid: Name or service not known\r\n';

describe('unreachable hosts', () => {
	it('collect() connects first and runs, reads and asks nothing else when that fails', async () => {
		const calls: string[] = [];
		const c = classifySshFailure('nohost.invalid', RESOLVE_STDERR, 10);
		const host = unreachableHost({ ok: false, kind: c.kind, error: c.message, label: 'host name not resolved', stderr: RESOLVE_STDERR, command: ['ssh', '--', 'nohost.invalid'], durationMs: 20 }, calls);
		const raw = await collect(host, { ranks: 1, timeoutMs: 5000, probe: async () => { calls.push('probe'); return { error: 'x', tried: [] }; } });
		assert.deepEqual(calls, ['connect']);
		assert.deepEqual(raw.map(r => r.id), [CONNECT_ID]);
		assert.equal(raw[0].exitCode, null);
		assert.match(raw[0].error ?? '', /cannot resolve the host name of nohost\.invalid/);
	});

	it('analyze() gives exactly one finding with ssh\'s own line as evidence, and reports nothing absent', async () => {
		const calls: string[] = [];
		const c = classifySshFailure('nohost.invalid', RESOLVE_STDERR, 10);
		assert.equal(c.kind, 'name-not-resolved');
		const host = unreachableHost({ ok: false, kind: c.kind, error: c.message, label: 'host name not resolved', stderr: RESOLVE_STDERR, command: ['ssh', '--', 'nohost.invalid'], durationMs: 20 }, calls);
		const { findings, summary } = analyze(await collect(host, { ranks: 1, timeoutMs: 5000 }), 'gone');
		assert.deepEqual(findings.map(f => f.id), [UNREACHABLE_ID]);
		const f = findings[0];
		assert.equal(f.severity, 'error');
		assert.match(f.title, /Cannot reach gone \(host name not resolved\)/);
		assert.match(f.message, /^cannot reach gone: cannot resolve the host name/);
		assert.deepEqual(f.evidence, [{ source: CONNECT_ID, line: 'ssh: Could not resolve hostname nohost.invalid: Name or service not known', lineNo: 1 }]);
		assert.equal(f.fix?.command, 'ssh -G nohost.invalid');
		assert.equal(summary.mpi.label, 'not checked');
		assert.doesNotMatch(JSON.stringify({ findings, summary }), /not found|No MPI|missing/i);
	});

	it('analyze() stays total for a bundle\'s malformed connect record', () => {
		const garbage = [{ id: 'connect', exitCode: null, stderr: 5, notes: 'x', command: null, error: {} }] as unknown as Parameters<typeof analyze>[0];
		const { findings } = analyze(garbage, 'odd');
		assert.deepEqual(findings.map(f => [f.id, f.title, f.evidence.length]), [[UNREACHABLE_ID, 'Cannot reach odd (ssh failed)', 1]]);
	});

	it('classifies each reason ssh gives into its kind', () => {
		const cases: [string, string][] = [
			['ssh: connect to host 10.0.0.4 port 22: Connection refused', 'refused'],
			['ssh: connect to host 10.0.0.250 port 22: Connection timed out', 'timeout'],
			['ssh: connect to host 10.0.0.250 port 22: No route to host', 'unreachable'],
			['root@10.0.0.3: Permission denied (publickey).', 'auth-failed'],
			['@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\nOffending ED25519 key in /k:1', 'host-key-changed'],
			['No ED25519 host key is known for x and you have requested strict checking.\nHost key verification failed.', 'host-key-unknown'],
			['kex_exchange_identification: read: Connection reset by peer', 'other'],
		];
		for (const [stderr, kind] of cases) { assert.equal(classifySshFailure('x', stderr, 3).kind, kind, stderr); }
	});
});
