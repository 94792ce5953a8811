/**
 * Test fixture: N real "hosts" on this machine, each a network namespace + UTS namespace (its own hostname) with its
 * own OpenSSH server (key login), joined by veth pairs to a bridge in a bridge namespace; one more veth gives this
 * process (the root namespace) an address on the same subnet so the system `ssh` client can reach them.
 * Inside each host's private mount namespace /etc/hosts and /root/.ssh are bind-mounted from the lab directory, so
 * the machine's real /etc/hosts and ~/.ssh are never touched (same for ~/.bashrc and ~/.profile, replaced by a plain file) (an empty /root/.ssh is created when missing, as the
 * bind-mount target). Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN), iproute2, openssh-server/client, util-linux.
 *
 * `createNetnsLab` returns a lab whose `teardown()` kills every process in its namespaces and deletes them; it also
 * runs on process exit and on SIGTERM/SIGINT, and a lab whose process was SIGKILLed is removed by the next lab
 * (`reapDeadLabs`, from a registry in the temp dir).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

/** One host of the lab. */
export interface NetnsHost {
	/** Hostname and ssh alias (host-a, host-b, …). */
	name: string;
	ip: string;
	/** Network namespace name (for `ip netns exec`). */
	ns: string;
	/** Whether an sshd runs there. */
	sshd: boolean;
}

/** Options for `createNetnsLab`. */
export interface NetnsLabOptions {
	/** Number of hosts (named host-a, host-b, …). */
	count: number;
	/** Hosts (by name) that get no sshd (connection refused). */
	noSshd?: string[];
	/** Hosts (by name) whose authorized_keys lacks the lab key (login refused). */
	unauthorized?: string[];
}

/** A running lab. */
export interface NetnsLab {
	dir: string;
	/** ssh_config for the client in the root namespace: one alias per host (plus the ones tests add). */
	sshConfig: string;
	/** Private key accepted by the hosts. */
	identityFile: string;
	/** known_hosts with every host's real key. */
	knownHosts: string;
	subnet: string;
	hosts: NetnsHost[];
	host(name: string): NetnsHost;
	/** Public host key line ("ssh-ed25519 AAAA…") of a host. */
	hostKey(name: string): string;
	/** Append an ssh_config block to the lab's config. */
	addSshConfig(block: string): void;
	/** Run argv inside a host's network namespace (synchronously). */
	execIn(name: string, argv: string[]): string;
	/** Command lines of the processes in a host's namespaces. */
	processes(name: string): string[];
	/** "pid ppid pgid sid command" of the processes in a host's namespaces (evidence for a failing test). */
	processTable(name: string): string[];
	/** A crash or reboot of a host: SIGKILL to every process in its namespaces, sshd included (its files stay). */
	crash(name: string): void;
	/**
	 * The host torn down, not just its processes: its veth removed first (so no FIN or RST gets out: to this machine
	 * its address is simply gone, as for a machine that lost power or network), then every process in its namespaces
	 * SIGKILLed and the namespace deleted (`ip netns del`). Not restartable.
	 */
	vanish(name: string): void;
	/** Start the host's sshd again (after `crash`: the host is back) and wait until it accepts connections. */
	restart(name: string): Promise<void>;
	/**
	 * Shape the host's link, both directions: `tc qdisc replace … root <qdisc…>` on its eth0 (what it sends) and on the
	 * bridge's end of its veth (what it receives); null removes both. Throws with tc's message when the kernel lacks
	 * the qdisc (e.g. "Specified qdisc kind is unknown." for netem without sch_netem).
	 */
	shape(name: string, qdisc: string[] | null): void;
	teardown(): void;
}

const SSHD = '/usr/sbin/sshd';

function sh(argv: string[], timeoutMs = 20_000): string {
	return execFileSync(argv[0], argv.slice(1), { encoding: 'utf8', timeout: timeoutMs, stdio: ['ignore', 'pipe', 'pipe'] });
}

function quiet(argv: string[]): void {
	try { sh(argv, 10_000); } catch { /* cleanup: already gone */ }
}

/** Labs record themselves here ({pid, namespaces, rootIf, dir}) so a later lab can remove those of a killed run. */
const REGISTRY = path.join(os.tmpdir(), 'gpumpi-netns-labs');

/** Whether `pid` runs (a zombie, killed but not yet reaped, counts as gone). */
function processAlive(pid: number): boolean {
	try { process.kill(pid, 0); } catch { return false; }
	try { return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')); } catch { return false; }
}

/** Remove the namespaces, veth and directory of labs whose creating process is gone (SIGKILLed test runs). */
export function reapDeadLabs(): void {
	let names: string[] = [];
	try { names = fs.readdirSync(REGISTRY); } catch { return; }
	for (const name of names) {
		const file = path.join(REGISTRY, name);
		let rec: { pid?: unknown; namespaces?: unknown; rootIf?: unknown; dir?: unknown };
		try { rec = JSON.parse(fs.readFileSync(file, 'utf8')) as typeof rec; } catch { continue; }
		if (typeof rec.pid !== 'number') { continue; }
		if (processAlive(rec.pid)) { continue; }
		for (const ns of Array.isArray(rec.namespaces) ? rec.namespaces.filter((n): n is string => typeof n === 'string' && /^gpd[0-9a-f]{4}-/.test(n)) : []) {
			let pids: string[] = [];
			try { pids = sh(['ip', 'netns', 'pids', ns], 5000).split('\n').filter(p => /^\d+$/.test(p)); } catch { /* gone */ }
			for (const p of pids) { try { process.kill(Number(p), 'SIGKILL'); } catch { /* gone */ } }
			quiet(['ip', 'netns', 'del', ns]);
		}
		if (typeof rec.rootIf === 'string' && /^gpd[0-9a-f]{4}-r$/.test(rec.rootIf)) { quiet(['ip', 'link', 'del', rec.rootIf]); }
		if (typeof rec.dir === 'string' && rec.dir.startsWith(path.join(os.tmpdir(), 'gpumpi-netns-'))) { fs.rmSync(rec.dir, { recursive: true, force: true }); }
		fs.rmSync(file, { force: true });
	}
}

/** Why the lab cannot run here, or null. */
export function netnsUnavailable(): string | null {
	if (typeof process.getuid !== 'function' || process.getuid() !== 0) { return 'needs root'; }
	for (const p of [SSHD, '/usr/bin/ssh', '/usr/bin/ssh-keygen']) {
		if (!fs.existsSync(p)) { return `${p} missing (apt-get install openssh-server openssh-client)`; }
	}
	try { sh(['ip', '-V']); } catch { return 'ip (iproute2) missing'; }
	return null;
}

function waitPort(ip: string, port: number, timeoutMs: number): Promise<void> {
	const deadline = Date.now() + timeoutMs;
	return new Promise((resolve, reject) => {
		const attempt = (): void => {
			const s = net.connect({ host: ip, port });
			s.once('connect', () => { s.destroy(); resolve(); });
			s.once('error', () => {
				s.destroy();
				if (Date.now() > deadline) { reject(new Error(`sshd on ${ip}:${port} did not start within ${timeoutMs} ms`)); } else { setTimeout(attempt, 100); }
			});
		};
		attempt();
	});
}

/** Build the lab. Throws (after cleaning up what it made) when a step fails. */
export async function createNetnsLab(opts: NetnsLabOptions): Promise<NetnsLab> {
	const why = netnsUnavailable();
	if (why) { throw new Error(`network-namespace hosts unavailable: ${why}`); }
	const id = randomBytes(2).toString('hex');
	const prefix = `gpd${id}`;
	const used = sh(['ip', '-4', '-o', 'addr']);
	let third = 0;
	for (let i = 0; i < 50 && (third === 0 || used.includes(`10.231.${third}.`)); i++) { third = 1 + Math.floor(Math.random() * 250); }
	const subnet = `10.231.${third}`;
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-netns-'));
	const brNs = `${prefix}-br`;
	const rootIf = `${prefix}-r`;
	const hosts: NetnsHost[] = Array.from({ length: opts.count }, (_, i) => {
		const name = `host-${String.fromCharCode(97 + i)}`;
		return { name, ip: `${subnet}.${10 + i}`, ns: `${prefix}-${String.fromCharCode(97 + i)}`, sshd: !(opts.noSshd ?? []).includes(name) };
	});
	const sshdPids: number[] = [];
	let tornDown = false;
	reapDeadLabs();
	fs.mkdirSync(REGISTRY, { recursive: true });
	fs.writeFileSync(path.join(REGISTRY, prefix), JSON.stringify({ pid: process.pid, namespaces: [...hosts.map(h => h.ns), brNs], rootIf, dir }));

	const teardown = (): void => {
		if (tornDown) { return; }
		tornDown = true;
		process.removeListener('exit', teardown);
		process.removeListener('SIGTERM', onSignal);
		process.removeListener('SIGINT', onSignal);
		for (const ns of [...hosts.map(h => h.ns), brNs]) {
			let pids: string[] = [];
			try { pids = sh(['ip', 'netns', 'pids', ns], 5000).split('\n').filter(p => /^\d+$/.test(p)); } catch { /* no ns */ }
			for (const p of pids) { try { process.kill(Number(p), 'SIGKILL'); } catch { /* gone */ } }
		}
		for (const pid of sshdPids) { try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ } }
		for (const ns of [...hosts.map(h => h.ns), brNs]) { quiet(['ip', 'netns', 'del', ns]); }
		quiet(['ip', 'link', 'del', rootIf]);
		fs.rmSync(dir, { recursive: true, force: true });
		fs.rmSync(path.join(REGISTRY, prefix), { force: true });
	};
	// A runner that times out sends SIGTERM, which skips 'exit' handlers: tear down, then die of the signal.
	const onSignal = (sig: NodeJS.Signals): void => { teardown(); process.kill(process.pid, sig); };
	process.on('exit', teardown);
	process.once('SIGTERM', onSignal);
	process.once('SIGINT', onSignal);

	try {
		fs.mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
		if (!fs.existsSync('/root/.ssh')) { fs.mkdirSync('/root/.ssh', { mode: 0o700 }); } // bind-mount target only
		const identityFile = path.join(dir, 'id_ed25519');
		sh(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'gpumpi-lab', '-f', identityFile]);
		const pub = fs.readFileSync(`${identityFile}.pub`, 'utf8');

		// Bridge namespace and the root namespace's leg.
		sh(['ip', 'netns', 'add', brNs]);
		sh(['ip', '-n', brNs, 'link', 'add', 'br0', 'type', 'bridge']);
		sh(['ip', '-n', brNs, 'link', 'set', 'br0', 'up']);
		sh(['ip', 'link', 'add', rootIf, 'type', 'veth', 'peer', 'name', `${prefix}-rb`]);
		sh(['ip', 'link', 'set', `${prefix}-rb`, 'netns', brNs]);
		sh(['ip', '-n', brNs, 'link', 'set', `${prefix}-rb`, 'master', 'br0', 'up']);
		sh(['ip', 'addr', 'add', `${subnet}.1/24`, 'dev', rootIf]);
		sh(['ip', 'link', 'set', rootIf, 'up']);

		const etcHosts = path.join(dir, 'hosts');
		fs.writeFileSync(etcHosts, `127.0.0.1 localhost\n${hosts.map(h => `${h.ip} ${h.name}`).join('\n')}\n`);
		const rootSsh = path.join(dir, 'root-ssh');
		fs.mkdirSync(rootSsh, { mode: 0o700 });
		fs.copyFileSync(identityFile, path.join(rootSsh, 'id_ed25519'));
		fs.chmodSync(path.join(rootSsh, 'id_ed25519'), 0o600);
		fs.writeFileSync(path.join(rootSsh, 'config'), 'Host *\n  BatchMode yes\n  StrictHostKeyChecking yes\n  IdentityFile /root/.ssh/id_ed25519\n  IdentitiesOnly yes\n');

		// The lab hosts are other machines: their root gets a plain shell start-up file, not this machine's (which
		// may be slow, e.g. pyenv init), bind-mounted over ~/.bashrc and ~/.profile where those exist.
		const rootRc = path.join(dir, 'bashrc');
		fs.writeFileSync(rootRc, '# gpumpi-doctor test lab host\n');
		const keys = new Map<string, string>();
		for (const h of hosts) {
			const hdir = path.join(dir, h.name);
			fs.mkdirSync(hdir);
			sh(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', h.name, '-f', path.join(hdir, 'ssh_host_ed25519_key')]);
			keys.set(h.name, fs.readFileSync(path.join(hdir, 'ssh_host_ed25519_key.pub'), 'utf8').trim().split(/\s+/).slice(0, 2).join(' '));
			fs.writeFileSync(path.join(hdir, 'authorized_keys'), (opts.unauthorized ?? []).includes(h.name) ? '' : pub, { mode: 0o600 });
			sh(['ip', 'netns', 'add', h.ns]);
			const peer = `${prefix}-${h.name.slice(-1)}b`;
			sh(['ip', 'link', 'add', `${prefix}-${h.name.slice(-1)}h`, 'type', 'veth', 'peer', 'name', peer]);
			sh(['ip', 'link', 'set', `${prefix}-${h.name.slice(-1)}h`, 'netns', h.ns]);
			sh(['ip', '-n', h.ns, 'link', 'set', `${prefix}-${h.name.slice(-1)}h`, 'name', 'eth0']);
			sh(['ip', '-n', h.ns, 'addr', 'add', `${h.ip}/24`, 'dev', 'eth0']);
			sh(['ip', '-n', h.ns, 'link', 'set', 'eth0', 'up']);
			sh(['ip', '-n', h.ns, 'link', 'set', 'lo', 'up']);
			sh(['ip', 'link', 'set', peer, 'netns', brNs]);
			sh(['ip', '-n', brNs, 'link', 'set', peer, 'master', 'br0', 'up']);
		}
		const knownHosts = path.join(dir, 'known_hosts');
		fs.writeFileSync(knownHosts, hosts.map(h => `${h.name},${h.ip} ${keys.get(h.name)}\n`).join(''));
		fs.copyFileSync(knownHosts, path.join(rootSsh, 'known_hosts'));

		const startSshd = (h: NetnsHost): void => {
			const hdir = path.join(dir, h.name);
			const cfg = path.join(hdir, 'sshd_config');
			fs.writeFileSync(cfg, [
				`ListenAddress ${h.ip}`, 'Port 22',
				`HostKey ${path.join(hdir, 'ssh_host_ed25519_key')}`,
				`PidFile ${path.join(hdir, 'sshd.pid')}`,
				`AuthorizedKeysFile ${path.join(hdir, 'authorized_keys')}`,
				'PermitRootLogin prohibit-password', 'PasswordAuthentication no', 'KbdInteractiveAuthentication no',
				'UsePAM no', 'StrictModes no', 'PrintMotd no', 'MaxStartups 50', 'MaxSessions 50', 'LogLevel ERROR', '',
			].join('\n'));
			const log = fs.openSync(path.join(hdir, 'sshd.log'), 'w');
			const child = spawn('ip', ['netns', 'exec', h.ns, 'unshare', '--uts', '--mount', '--propagation', 'private', '--',
				'sh', '-c', 'hostname "$1" && mount --bind "$2" /etc/hosts && mount --bind "$3" /root/.ssh'
				+ ' && for f in .bashrc .profile; do [ ! -e "/root/$f" ] || mount --bind "$6" "/root/$f" || exit 1; done && exec "$4" -D -e -f "$5"',
				'sh', h.name, etcHosts, rootSsh, SSHD, cfg, rootRc], { stdio: ['ignore', log, log], detached: true });
			fs.closeSync(log);
			child.unref();
			if (child.pid) { sshdPids.push(child.pid); }
		};
		for (const h of hosts.filter(x => x.sshd)) { startSshd(h); }
		for (const h of hosts.filter(x => x.sshd)) {
			await waitPort(h.ip, 22, 15_000).catch(e => {
				throw new Error(`${(e as Error).message}; sshd log: ${fs.readFileSync(path.join(dir, h.name, 'sshd.log'), 'utf8').slice(-500)}`);
			});
		}
		const sshConfig = path.join(dir, 'ssh_config');
		fs.writeFileSync(sshConfig, hosts.map(h => [
			`Host ${h.name}`, `  HostName ${h.ip}`, '  User root', `  IdentityFile ${identityFile}`, '  IdentitiesOnly yes',
			`  UserKnownHostsFile ${knownHosts}`, '  GlobalKnownHostsFile /dev/null', '',
		].join('\n')).join('\n'));

		const nsPids = (name: string): string[] => {
			const ns = hosts.find(x => x.name === name)?.ns ?? '-';
			try { return sh(['ip', 'netns', 'pids', ns], 5000).split('\n').filter(p => /^\d+$/.test(p)); } catch { return []; }
		};
		return {
			dir, sshConfig, identityFile, knownHosts, subnet: `${subnet}.0/24`, hosts,
			host: name => {
				const h = hosts.find(x => x.name === name);
				if (!h) { throw new Error(`no lab host ${name}`); }
				return h;
			},
			hostKey: name => keys.get(name) ?? '',
			addSshConfig: block => fs.appendFileSync(sshConfig, `\n${block}\n`),
			execIn: (name, argv) => sh(['ip', 'netns', 'exec', hosts.find(x => x.name === name)?.ns ?? '-', ...argv]),
			processes: name => nsPids(name).map(p => { try { return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' ').trim(); } catch { return ''; } })
				.filter(c => c.length > 0),
			processTable: name => nsPids(name).map(p => {
				try {
					// /proc/PID/stat: "pid (comm) state ppid pgrp session …"; comm may hold spaces, so split after the last ')'.
					const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
					const [, ppid, pgid, sid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
					return `${p} ${ppid} ${pgid} ${sid} ${fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' ').trim()}`;
				} catch { return ''; }
			}).filter(c => c.length > 0),
			crash: name => { for (const p of nsPids(name)) { try { process.kill(Number(p), 'SIGKILL'); } catch { /* gone */ } } },
			vanish: name => {
				const h = hosts.find(x => x.name === name);
				if (!h) { throw new Error(`no lab host ${name}`); }
				sh(['ip', '-n', brNs, 'link', 'del', `${prefix}-${h.name.slice(-1)}b`]);
				for (const p of nsPids(name)) { try { process.kill(Number(p), 'SIGKILL'); } catch { /* gone */ } }
				sh(['ip', 'netns', 'del', h.ns]);
			},
			shape: (name, qdisc) => {
				const h = hosts.find(x => x.name === name);
				if (!h) { throw new Error(`no lab host ${name}`); }
				const ends: Array<[string, string]> = [[h.ns, 'eth0'], [brNs, `${prefix}-${h.name.slice(-1)}b`]];
				for (const [ns, dev] of ends) {
					if (qdisc === null) { quiet(['ip', 'netns', 'exec', ns, 'tc', 'qdisc', 'del', 'dev', dev, 'root']); continue; }
					try { sh(['ip', 'netns', 'exec', ns, 'tc', 'qdisc', 'replace', 'dev', dev, 'root', ...qdisc]); } catch (e) {
						throw new Error(`tc qdisc replace dev ${dev} root ${qdisc.join(' ')}: ${String((e as { stderr?: unknown }).stderr ?? (e as Error).message).trim()}`);
					}
				}
			},
			restart: async name => {
				const h = hosts.find(x => x.name === name);
				if (!h || !h.sshd) { throw new Error(`no lab host ${name} with sshd`); }
				startSshd(h);
				await waitPort(h.ip, 22, 15_000);
			},
			teardown,
		};
	} catch (e) {
		teardown();
		throw e;
	}
}
