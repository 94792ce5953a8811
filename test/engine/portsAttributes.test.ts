/**
 * The "port 1024 is available" notice: VS Code's automatic port forwarding (remote.autoForwardPortsSource
 * "process", the default in a remote window: Remote-SSH, code-server) scans /proc for listening TCP sockets on
 * localhost or 0.0.0.0 and offers each one; a `remote.portsAttributes` key that is a regular expression is tested
 * against the owning process's /proc/PID/cmdline (NUL-separated, as VS Code 1.100 reads it) and
 * `onAutoForward: "ignore"` drops the port. package.json contributes such keys as configurationDefaults.
 *
 * This test runs a real mpirun of the engine (Open MPI 4.1.4 and MPICH 4.0.2, the processes every product launch
 * has: launcher, ranks, and MPICH's hydra_pmi_proxy), finds their listening sockets the way VS Code does
 * (/proc/net/tcp{,6} LISTEN inodes → /proc/PID/fd → /proc/PID/cmdline) and checks that every one of them is matched
 * by a contributed key, while ordinary programs' command lines are not.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findEngine, type EngineFlavor } from '../../extension/core/native';

const ROOT = process.cwd();
const LAUNCH: Record<'openmpi' | 'mpich', string[]> = {
	openmpi: ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '-np', '2'],
	mpich: ['mpirun.mpich', '-np', '2'],
};

/** The regular-expression keys of the contributed remote.portsAttributes default that ignore a port. */
function ignoreKeys(): RegExp[] {
	const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { contributes: { configurationDefaults?: Record<string, Record<string, { onAutoForward?: string }>> } };
	const attrs = pkg.contributes.configurationDefaults?.['remote.portsAttributes'] ?? {};
	return Object.entries(attrs).filter(([, v]) => v.onAutoForward === 'ignore').map(([k]) => new RegExp(k));
}

/** LISTEN sockets: inode → port. */
function listeningInodes(): Map<number, number> {
	const out = new Map<number, number>();
	for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
		let text = '';
		try { text = fs.readFileSync(file, 'utf8'); } catch { continue; }
		for (const line of text.trim().split('\n').slice(1)) {
			const f = line.trim().split(/\s+/);
			if (f[3] !== '0A') { continue; }
			// Every listening address counts (VS Code offers localhost and any-address ones): stricter than VS Code.
			const port = f[1].split(':')[1];
			out.set(Number(f[9]), parseInt(port, 16));
		}
	}
	return out;
}

function parentOf(pid: number): number {
	try { return Number(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1]); } catch { return 0; }
}

/** Processes under `root` (itself included) that own a listening socket: pid → { ports, cmdline as VS Code reads it }. */
function listenersUnder(root: number, seen: Map<number, { ports: Set<number>; cmdline: string }>): void {
	const inodes = listeningInodes();
	for (const d of fs.readdirSync('/proc')) {
		const pid = Number(d);
		if (!Number.isInteger(pid)) { continue; }
		let p = pid;
		for (let i = 0; i < 64 && p > 1 && p !== root; i++) { p = parentOf(p); }
		if (p !== root) { continue; }
		let fds: string[] = [];
		try { fds = fs.readdirSync(`/proc/${pid}/fd`); } catch { continue; }
		for (const fd of fds) {
			let link = '';
			try { link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`); } catch { continue; }
			const m = /^socket:\[(\d+)\]$/.exec(link);
			const port = m ? inodes.get(Number(m[1])) : undefined;
			if (port === undefined) { continue; }
			const entry = seen.get(pid) ?? { ports: new Set<number>(), cmdline: fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8') };
			entry.ports.add(port);
			seen.set(pid, entry);
		}
	}
}

describe('remote.portsAttributes: VS Code ignores the ports of our MPI launches', function () {
	this.timeout(120_000);

	it('the contributed keys are regular expressions VS Code reads as command-line patterns, and ordinary programs do not match', () => {
		const keys = ignoreKeys();
		assert.ok(keys.length >= 1, 'package.json contributes remote.portsAttributes keys with onAutoForward "ignore"');
		for (const k of keys) {
			// VS Code 1.100 (remote.portsAttributes reader): a number, "a-b" range or "host:port" is a port key; anything else a RegExp.
			assert.ok(Number.isNaN(Number(k.source)) && !/^\d+-\d+$/.test(k.source) && !/^[a-z0-9-]+:\d{1,5}$/.test(k.source), `${k.source} is read as a pattern`);
		}
		for (const other of ['python3\x00-m\x00http.server\x00', 'node\x00server.js\x00', '/usr/bin/jupyter-lab\x00--port\x008888\x00', '/home/u/gpumpi-app/bin/serve\x00', 'mpirun\x00-np\x002\x00./my_app\x00']) {
			assert.equal(keys.some(k => k.test(other)), false, `${JSON.stringify(other)} would lose its port notice`);
		}
	});

	for (const flavor of ['openmpi', 'mpich'] as const) {
		it(`${flavor}: every process of a real mpirun of the engine that listens on a port is matched`, async () => {
			const found = findEngine(flavor as EngineFlavor, {});
			assert.ok(found.path, `engine '${flavor}' not built; tried:\n  ${found.tried.join('\n  ')}`);
			const child = spawn(LAUNCH[flavor][0], [...LAUNCH[flavor].slice(1), found.path, 'bench', '--memory', 'host', '--sizes', '256M', '--iters', '8', '--modes', 'mpi'],
				{ stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, UCX_NET_DEVICES: 'lo' } });
			let stderr = '';
			child.stderr.on('data', (b: Buffer) => { stderr += b.toString(); });
			const exited = new Promise<number | null>(resolve => child.on('exit', code => resolve(code)));
			const seen = new Map<number, { ports: Set<number>; cmdline: string }>();
			let done = false;
			void exited.then(() => { done = true; });
			while (!done) {
				if (child.pid) { listenersUnder(child.pid, seen); }
				await new Promise(r => setTimeout(r, 150));
			}
			assert.equal(await exited, 0, `mpirun failed: ${stderr.slice(-800)}`);
			const rows = [...seen.values()].map(v => ({ ports: [...v.ports], cmdline: v.cmdline.replace(/\0/g, ' ').trim() }));
			// The launcher and both ranks listen (Open MPI: mpirun's OOB/PMIx + btl tcp from 1024; MPICH: hydra + ranks).
			assert.ok(rows.length >= 3, `expected the launcher and the ranks listening, saw ${JSON.stringify(rows)}`);
			const keys = ignoreKeys();
			const unmatched = [...seen.values()].filter(v => !keys.some(k => k.test(v.cmdline))).map(v => v.cmdline.replace(/\0/g, ' '));
			assert.deepEqual(unmatched, [], `listening processes VS Code would still offer: ${JSON.stringify(rows)}`);
		});
	}
});
