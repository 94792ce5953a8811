/**
 * `gpumpi-doctor inspect --host X --json` (the built CLI, a real process) against hosts that cannot be reached, each
 * failure produced for real: network-namespace hosts (test/hosts/netnsHosts.ts) without sshd (connection refused)
 * and with the lab key missing from authorized_keys (login refused), an alias whose known_hosts entry holds another
 * host's key (host key changed), an address of the lab subnet nobody owns (no answer within ConnectTimeout 3), and
 * `nohost.invalid` (the system resolver's real failure: .invalid never resolves, RFC 2606). Each must exit 0 with a
 * report whose ONLY finding is host-unreachable naming the reason, ssh's own line as evidence, and no check run.
 * Needs root and openssh-server/openssh-client/iproute2 (CI installs them); without them the suite FAILS.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Report } from '../../extension/shared/report';
import { createNetnsLab, type NetnsLab } from '../hosts/netnsHosts';

const repo = path.resolve(__dirname, '../../..');
const cliJs = path.join(repo, 'dist', 'cli.js');

describe('inspect --host of unreachable hosts (real ssh failures)', function () {
	this.timeout(120_000);
	let lab: NetnsLab;

	before(async function () {
		this.timeout(60_000);
		if (!fs.existsSync(cliJs)) { throw new Error(`${cliJs} is missing: run node scripts/build.mjs first`); }
		lab = await createNetnsLab({ count: 3, unauthorized: ['host-b'], noSshd: ['host-c'] });
		const a = lab.host('host-a');
		const common = `  User root\n  IdentityFile ${lab.identityFile}\n  IdentitiesOnly yes\n  GlobalKnownHostsFile /dev/null\n`;
		// host-a's address recorded with host-b's key: what a reinstalled host (or an attacker) looks like.
		fs.writeFileSync(path.join(lab.dir, 'known_hosts_changed'), `${a.ip} ${lab.hostKey('host-b')}\n`);
		lab.addSshConfig(`Host changed-key\n  HostName ${a.ip}\n${common}  UserKnownHostsFile ${path.join(lab.dir, 'known_hosts_changed')}\n`);
		lab.addSshConfig(`Host blackhole\n  HostName ${lab.subnet.replace(/\.0\/24$/, '.250')}\n${common}  UserKnownHostsFile ${lab.knownHosts}\n`);
	});

	after(function () { lab?.teardown(); });

	const cases: { host: string; kind: RegExp; label: RegExp; evidence: RegExp; limitMs: number }[] = [
		{ host: 'nohost.invalid', kind: /^name-not-resolved$/, label: /host name not resolved/, evidence: /Could not resolve hostname nohost\.invalid/, limitMs: 15_000 },
		{ host: 'host-c', kind: /^refused$/, label: /connection refused/, evidence: /port 22: Connection refused/, limitMs: 15_000 },
		{ host: 'host-b', kind: /^auth-failed$/, label: /login refused/, evidence: /Permission denied \(publickey/, limitMs: 15_000 },
		{ host: 'changed-key', kind: /^host-key-changed$/, label: /host key changed/, evidence: /REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed|Offending/, limitMs: 15_000 },
		// Nobody answers ARP for .250: ssh reports either its ConnectTimeout or the kernel's "No route to host".
		{ host: 'blackhole', kind: /^(timeout|unreachable)$/, label: /connection timed out|network unreachable/, evidence: /port 22: (Connection timed out|No route to host)/, limitMs: 20_000 },
	];

	for (const c of cases) {
		it(`${c.host}: exit 0, one host-unreachable finding (${c.label.source}), nothing checked`, () => {
			const t0 = Date.now();
			const r = spawnSync(process.execPath, [cliJs, 'inspect', '--host', c.host, '--ssh-config', lab.sshConfig, '--connect-timeout', '3', '--json'],
				{ cwd: lab.dir, encoding: 'utf8', timeout: 60_000 });
			const ms = Date.now() - t0;
			assert.equal(r.status, 0, `exit ${r.status}: ${r.stderr}`);
			const report = JSON.parse(r.stdout) as Report;
			assert.deepEqual(report.findings.map(f => f.id), ['host-unreachable'], JSON.stringify(report.findings.map(f => f.title)));
			const f = report.findings[0];
			assert.equal(f.severity, 'error');
			assert.match(f.title, c.label);
			assert.match(f.message, new RegExp(`^cannot reach ${c.host.replace(/\./g, '\\.')}: `));
			assert.ok(f.evidence.some(e => e.source === 'connect' && c.evidence.test(e.line)), `evidence: ${JSON.stringify(f.evidence)}`);
			assert.deepEqual(report.raw.map(x => x.id), ['connect'], 'nothing but the connection attempt may run');
			const kind = /^reason: (\S+)/.exec(report.raw[0].notes?.[0] ?? '')?.[1] ?? '';
			assert.match(kind, c.kind);
			assert.ok(report.raw[0].command.includes('BatchMode=yes'), report.raw[0].command.join(' '));
			assert.equal(report.summary.mpi.label, 'not checked');
			assert.doesNotMatch(r.stdout, /mpi-not-found|No MPI found/);
			assert.ok(ms < c.limitMs, `took ${ms} ms`);
		});
	}

	it('collect --host of an unreachable host exits 3 with the reason and writes no bundle', () => {
		const out = path.join(lab.dir, 'bundle-of-nothing');
		const r = spawnSync(process.execPath, [cliJs, 'collect', '--host', 'host-c', '--ssh-config', lab.sshConfig, '--out', out],
			{ cwd: lab.dir, encoding: 'utf8', timeout: 60_000 });
		assert.equal(r.status, 3, r.stderr);
		assert.match(r.stderr, /cannot reach host-c: connection to host-c refused/);
		assert.match(r.stderr, /no bundle written/);
		assert.equal(fs.existsSync(out), false);
	});
});
