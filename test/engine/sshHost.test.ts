/**
 * SshHost against REAL OpenSSH servers: hosts are network + UTS namespaces made by test/hosts/netnsHosts.ts (each
 * its own hostname and sshd, key login), reached with the system `ssh` client. Nothing is faked: wrong keys,
 * changed host keys, refused connections and hung commands are produced for real. Needs root and
 * openssh-server/openssh-client/iproute2 (CI installs them); without them the suite FAILS with the reason.
 */
import { extractJsonDocument } from '../../extension/core/parsers/framedDocument';
import { applyEvidence } from '../../extension/core/map/mapEvidence';
import type { MapDocument } from '../../extension/shared/mapSchema';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { hostSetting } from '../../extension/core/hosts/hostSettings';
import { openRemoteTarget } from '../../extension/core/hosts/remoteTarget';
import { SshHost } from '../../extension/core/hosts/sshHost';
import { deployEngine, nativeSourceFiles, remoteFingerprint } from '../../extension/core/hosts/deployEngine';
import { main } from '../../extension/cli/gpumpiDoctor';
import { inspectHost } from '../../extension/core/inspect';
import { findEngine, repoRoot } from '../../extension/core/native';
import { createNetnsLab, type NetnsLab } from '../hosts/netnsHosts';

describe('SshHost over real sshd in network namespaces', function () {
	this.timeout(60_000);
	let lab: NetnsLab;
	const open: SshHost[] = [];
	// Aliases that point at host-a's address get their own socket directory: ControlPath %C hashes the address, and a
	// shared, already authenticated connection would (rightly) skip the host-key check these tests are about.
	const host = (destination: string, extra: { setup?: string; connectTimeoutSeconds?: number } = {}): SshHost => {
		const controlDir = path.join(lab.dir, /^host-[a-z]$/.test(destination) ? 'cm' : `cm-${destination}`);
		const h = new SshHost({ destination, configFile: lab.sshConfig, controlDir, connectTimeoutSeconds: 10, ...extra });
		open.push(h);
		return h;
	};

	before(async function () {
		this.timeout(60_000);
		lab = await createNetnsLab({ count: 4, unauthorized: ['host-c'], noSshd: ['host-d'] });
		const a = lab.host('host-a');
		fs.writeFileSync(path.join(lab.dir, 'known_hosts_empty'), '');
		// host-a's address recorded with host-b's key: exactly what a reinstalled host (or an attacker) looks like.
		fs.writeFileSync(path.join(lab.dir, 'known_hosts_changed'), `${a.ip} ${lab.hostKey('host-b')}\n`);
		const common = `  User root\n  IdentityFile ${lab.identityFile}\n  IdentitiesOnly yes\n  GlobalKnownHostsFile /dev/null\n`;
		lab.addSshConfig(`Host unknown-key\n  HostName ${a.ip}\n${common}  UserKnownHostsFile ${path.join(lab.dir, 'known_hosts_empty')}\n`);
		lab.addSshConfig(`Host changed-key\n  HostName ${a.ip}\n${common}  UserKnownHostsFile ${path.join(lab.dir, 'known_hosts_changed')}\n`);
		// An address on the lab subnet that nobody owns: ARP gets no answer.
		lab.addSshConfig(`Host blackhole\n  HostName ${lab.subnet.replace(/\.0\/24$/, '.250')}\n${common}  UserKnownHostsFile ${lab.knownHosts}\n`);
	});

	after(async function () {
		this.timeout(30_000);
		await Promise.all(open.map(h => h.close().catch(() => undefined)));
		lab?.teardown();
	});

	it('reads identity, cpus, env, files and directories of the remote host (its own hostname)', async () => {
		const h = host('host-a');
		const id = await h.identity();
		assert.equal(id.hostname, 'host-a');
		assert.equal(id.uid, 0);
		assert.ok((await h.cpuCount()) >= 1);
		assert.match((await h.env()).PATH ?? '', /\/usr\/bin/);
		assert.match((await h.which('mpirun.openmpi')) ?? '', /^\/.*mpirun\.openmpi$/);
		assert.equal(await h.which('no-such-tool-gpumpi'), null);
		const hosts = await h.readFile('/etc/hosts');
		assert.ok(hosts.ok && hosts.text.includes('host-b'), 'the namespace sees the lab /etc/hosts');
		const missing = await h.readFile(path.join(lab.dir, 'missing file'));
		assert.deepEqual(missing, { ok: false, error: 'no such file', notFound: true });
		const cut = await h.readFile('/etc/hosts', 5);
		assert.ok(cut.ok && cut.truncated && cut.text === '127.0');
		const odd = path.join(lab.dir, "dir with 'quotes' and $(x)");
		fs.mkdirSync(odd);
		for (const n of ['a b', '.hidden', '-n', 'x\ny']) { fs.writeFileSync(path.join(odd, n), ''); }
		assert.deepEqual((await h.listDir(odd))?.sort(), ['-n', '.hidden', 'a b', 'x\ny'].sort());
		assert.equal(await h.listDir(path.join(lab.dir, 'nope')), null);
		assert.equal(await h.realpath('/proc/self/../self/..'), '/proc');
	});

	it('passes hostile argv through the remote shell unchanged and executes none of it', async () => {
		const h = host('host-a');
		const pwned = path.join(lab.dir, 'pwned');
		const hostile = ['a b', "it's", '"dq"', `;touch ${pwned}`, `$(touch ${pwned})`, `\`touch ${pwned}\``, 'line1\nline2',
			'-n', '--', '', '\\', '*', '~', '$HOME', '!x', '&&', '|', '>x', 'tab\there', 'ünï', "'", "''"];
		const r = await h.run(['printf', '%s\\0', ...hostile], { timeoutMs: 30_000 });
		assert.equal(r.exitCode, 0, r.error ?? r.stderr);
		assert.deepEqual(r.stdout.split('\0').slice(0, -1), hostile);
		assert.equal(fs.existsSync(pwned), false, 'a hostile argument was executed');
		const env = await h.run(['sh', '-c', 'printf %s "$GPUMPI_T"'], { timeoutMs: 30_000, env: { GPUMPI_T: "$(id) 'q' \n" }, cwd: '/tmp' });
		assert.equal(env.stdout, "$(id) 'q' \n");
		const nf = await h.run(['no-such-program-gpumpi', 'x'], { timeoutMs: 30_000 });
		assert.equal(nf.exitCode, null);
		assert.equal(nf.error, 'not found on PATH');
		const code = await h.run(['sh', '-c', 'echo out; echo err >&2; exit 7'], { timeoutMs: 30_000 });
		assert.deepEqual([code.exitCode, code.stdout, code.stderr.trim()], [7, 'out\n', 'err']);
	});

	it('kills the whole remote process group at timeout and on cancel (no survivor on the remote)', async () => {
		const h = host('host-a');
		const t0 = Date.now();
		const r = await h.run(['sh', '-c', 'sleep 987 & sleep 986; wait'], { timeoutMs: 2000 });
		assert.equal(r.timedOut, true);
		assert.equal(r.exitCode, null);
		assert.match(r.error ?? '', /timed out after 2 s/);
		assert.ok(Date.now() - t0 < 20_000, `took ${Date.now() - t0} ms`);
		const ac = new AbortController();
		const p = h.run(['sleep', '985'], { timeoutMs: 50_000, signal: ac.signal });
		setTimeout(() => ac.abort(), 1500);
		const c = await p;
		assert.equal(c.error, 'cancelled');
		await new Promise(res => setTimeout(res, 1500)); // the remote kill sends KILL one second after TERM
		const left = lab.processes('host-a').filter(l => /^sleep 98[567]$/.test(l));
		assert.deepEqual(left, [], `survivors on host-a: ${left.join(', ')}`);
	});

	it('runs the setup line in a login shell before each command, and reports a failing one with its output', async () => {
		const ok = host('host-a', { setup: 'export GPUMPI_FROM_SETUP="set up"; echo noise-on-stdout' });
		const r = await ok.run(['sh', '-c', 'printf %s "$GPUMPI_FROM_SETUP"'], { timeoutMs: 30_000 });
		assert.equal(r.stdout, 'set up', 'setup output must not pollute the tool output');
		assert.equal((await ok.env()).GPUMPI_FROM_SETUP, 'set up');
		const bad = host('host-a', { setup: 'echo "Lmod has detected the following error: module openmpi/9 not found" >&2; false' });
		const f = await bad.run(['true'], { timeoutMs: 30_000 });
		assert.equal(f.exitCode, null);
		assert.match(f.error ?? '', /setup line for host-a failed \(exit status 1\): .*module openmpi\/9 not found/);
	});

	it('fails clearly, within its timeout, for refused connections, unknown addresses, refused keys and host keys', async () => {
		const cases: [string, RegExp, number][] = [
			['host-d', /connection to host-d refused: no SSH server is listening/, 15_000],
			['blackhole', /blackhole (did not answer within 3 s|is unreachable)/, 20_000],
			['host-c', /host-c refused the login \(Permission denied \(publickey\)\).*authorized_keys/, 15_000],
			['unknown-key', /host key of unknown-key is not in known_hosts.*never accepts host keys/, 15_000],
			['changed-key', /host key of changed-key has CHANGED.*known_hosts_changed line 1.*man-in-the-middle/, 15_000],
		];
		const results = await Promise.all(cases.map(async ([dest, re, limit]) => {
			const t0 = Date.now();
			const r = await host(dest, { connectTimeoutSeconds: 3 }).run(['true'], { timeoutMs: 30_000 });
			return { dest, re, limit, r, ms: Date.now() - t0 };
		}));
		for (const { dest, re, limit, r, ms } of results) {
			assert.equal(r.exitCode, null, dest);
			assert.match(r.error ?? '', re, `${dest}: ${r.error}`);
			assert.ok(ms < limit, `${dest} took ${ms} ms`);
		}
	});

	it('inspects a namespace host over ssh: the report names the host and the engine ran there', async function () {
		this.timeout(120_000);
		const engine = findEngine('openmpi', {});
		assert.ok(engine.path, `engine not built: ${engine.tried.join(', ')}`);
		const h = host('host-b');
		const report = await inspectHost(h, {
			ranks: 2, timeoutSeconds: 90, enginePath: engine.path, mpirunPath: 'mpirun.openmpi',
			probe: async () => ({ error: 'the native addon probe runs only on the local host', tried: [] }),
		});
		assert.equal(report.host.kind, 'ssh');
		assert.equal(report.host.label, 'host-b');
		const identity = report.raw.find(r => r.id === 'identity');
		assert.match(identity?.stdout ?? '', /hostname=host-b/);
		const eng = report.raw.find(r => r.id === 'engine');
		assert.equal(eng?.exitCode, 0, `${eng?.error} ${eng?.stderr.slice(-500)}`);
		assert.ok(report.engine, 'engine document parsed');
		assert.deepEqual([...new Set(report.engine.ranks.map(r => r.host))], ['host-b']);
	});

	it('CLI: inspect --host names the remote host in the JSON report; a bad --host is a usage error', async function () {
		this.timeout(120_000);
		const engine = findEngine('openmpi', {});
		assert.ok(engine.path, `engine not built: ${engine.tried.join(', ')}`);
		let out = '';
		let err = '';
		const io = { stdout: (t: string) => { out += t; }, stderr: (t: string) => { err += t; }, cwd: lab.dir, signal: new AbortController().signal };
		const code = await main(['inspect', '--host', 'host-b', '--ssh-config', lab.sshConfig, '--setup', 'export GPUMPI_CLI_SETUP=1',
			'--engine', engine.path, '--mpirun', 'mpirun.openmpi', '--json'], io);
		assert.equal(code, 0, err);
		const report = JSON.parse(out) as { host: { kind: string; label: string }; raw: { id: string; stdout: string; exitCode: number | null }[] };
		assert.deepEqual(report.host, { id: 'ssh:host-b', label: 'host-b', kind: 'ssh' });
		assert.match(report.raw.find(r => r.id === 'identity')?.stdout ?? '', /hostname=host-b/);
		assert.equal(report.raw.find(r => r.id === 'engine')?.exitCode, 0);
		err = '';
		assert.equal(await main(['inspect', '--host=-oProxyCommand=touch /tmp/x'], io), 2);
		assert.match(err, /--host: the ssh destination "-oProxyCommand=touch \/tmp\/x" starts with "-"/);
		assert.equal(await main(['inspect', '--setup', 'module load x'], io), 2);
	});

	it('runs mpirun across two namespace hosts: 4 ranks on 2 distinct hostnames', async function () {
		this.timeout(120_000);
		const engine = findEngine('openmpi', {});
		assert.ok(engine.path, `engine not built: ${engine.tried.join(', ')}`);
		const h = host('host-a');
		const r = await h.run(['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--host', 'host-a:2,host-b:2', '-np', '4',
			'--mca', 'btl_tcp_if_include', lab.subnet, '--mca', 'oob_tcp_if_include', lab.subnet, '--mca', 'plm_rsh_agent', 'ssh',
			'-x', 'PATH', engine.path, 'inspect'], { timeoutMs: 100_000 });
		assert.equal(r.exitCode, 0, `${r.error ?? ''} ${r.stderr.slice(-1500)}`);
		const doc = JSON.parse(r.stdout) as { world_size: number; ranks: { rank: number; host: string }[] };
		assert.equal(doc.world_size, 4);
		assert.deepEqual(doc.ranks.map(x => x.host).sort(), ['host-a', 'host-a', 'host-b', 'host-b']);
	});

	it('runs the IPC-pointer reproducer in the report\'s own layout: 2 nodes, imports within a node, sends across', async function () {
		this.timeout(120_000);
		const engine = findEngine('openmpi', {});
		assert.ok(engine.path, `engine not built: ${engine.tried.join(', ')}`);
		const r = await host('host-a').run(['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--host', 'host-a:2,host-b:2', '-np', '4',
			'--mca', 'btl_tcp_if_include', lab.subnet, '--mca', 'oob_tcp_if_include', lab.subnet, '--mca', 'plm_rsh_agent', 'ssh',
			'-x', 'PATH', engine.path, 'repro', 'ipc', '--variant', 'direct', '--size', '1M', '--memory', 'host', '--json'], { timeoutMs: 100_000 });
		assert.equal(r.exitCode, 0, `${r.error ?? ''} ${r.stderr.slice(-1500)}`);
		const extracted = extractJsonDocument(r.stdout);
		assert.ok('json' in extracted, 'error' in extracted ? extracted.error : '');
		const doc = extracted.json as { outcome: string; topology: { hosts: string[]; imports_intra_node: boolean; sends_inter_node: boolean } };
		assert.deepEqual(doc.topology.hosts, ['host-a', 'host-a', 'host-b', 'host-b']);
		assert.equal(doc.topology.imports_intra_node, true);
		assert.equal(doc.topology.sends_inter_node, true, 'rank 0 -> 3 and 2 -> 1 cross the two hosts, as in the report');
		assert.equal(doc.outcome, 'correct');
	});

	it('maps 2+2 ranks across two namespace hosts: shared memory inside a host, tcp between hosts', async function () {
		this.timeout(180_000);
		const engine = findEngine('openmpi', {});
		assert.ok(engine.path, `engine not built: ${engine.tried.join(', ')}`);
		const r = await host('host-a').run(['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--host', 'host-a:2,host-b:2', '-np', '4',
			'--mca', 'btl_tcp_if_include', lab.subnet, '--mca', 'oob_tcp_if_include', lab.subnet, '--mca', 'plm_rsh_agent', 'ssh',
			'--mca', 'btl_base_verbose', '100', '-x', 'PATH', engine.path, 'map', '--large', '4M', '--iters', '2', '--json'], { timeoutMs: 150_000 });
		assert.equal(r.exitCode, 0, `${r.error ?? ''} ${r.stderr.slice(-1500)}`);
		const extracted = extractJsonDocument(r.stdout);
		assert.ok('json' in extracted, 'error' in extracted ? extracted.error : '');
		const doc = applyEvidence(extracted.json as MapDocument, r.stdout, r.stderr);
		assert.equal(doc.pairs.length, 6);
		for (const p of doc.pairs) {
			const sameHost = Math.floor(p.a / 2) === Math.floor(p.b / 2);
			assert.equal(p.same_host, sameHost, `pair ${p.a}-${p.b}`);
			assert.equal(p.channel, sameHost ? 'shared_memory' : 'network', `pair ${p.a}-${p.b}: ${p.evidence.join(' | ')}`);
			assert.equal(p.status, 'ok');
			assert.ok((p.bandwidth_gbps ?? 0) > 0);
		}
	});
});

describe('deployEngine over real ssh', function () {
	this.timeout(300_000);
	let lab: NetnsLab;
	let h: SshHost;
	let nativeDir = '';
	let cacheRoot = '';
	before(async function () {
		this.timeout(60_000);
		lab = await createNetnsLab({ count: 1 });
		h = new SshHost({ destination: 'host-a', configFile: lab.sshConfig, controlDir: path.join(lab.dir, 'cm') });
	});
	after(async function () {
		this.timeout(30_000);
		await h?.close().catch(() => undefined);
		lab?.teardown();
	});

	it('copies native/ with tar over ssh, builds gpumpi with the host\'s cmake + mpicc, and reuses it while the fingerprint matches', async () => {
		// A snapshot of native/ (what deploy copies: no build folders), so that edits to the tree while this test
		// builds cannot change the fingerprint between the two calls.
		const source = path.join(repoRoot() ?? process.cwd(), 'native');
		nativeDir = path.join(lab.dir, 'native-snapshot');
		for (const f of nativeSourceFiles(source)) {
			fs.mkdirSync(path.dirname(path.join(nativeDir, f)), { recursive: true });
			fs.copyFileSync(path.join(source, f), path.join(nativeDir, f));
		}
		cacheRoot = path.join(lab.dir, 'cache dir'); // a space: every path must stay one argument
		const first = await deployEngine(h, { nativeDir, cacheRoot, mpicc: 'mpicc.openmpi' });
		assert.ok(first.ok, `deploy failed: ${!first.ok ? `${first.error}\n${first.lines.join('\n')}` : ''}`);
		assert.equal(first.reused, false);
		assert.ok(first.enginePath.startsWith(path.join(cacheRoot, first.fingerprint)));
		const run = await h.run([first.enginePath, '--version'], { timeoutMs: 30_000 });
		assert.equal(run.exitCode, 0, `${run.error} ${run.stderr}`);
		const second = await deployEngine(h, { nativeDir, cacheRoot, mpicc: 'mpicc.openmpi' });
		assert.ok(second.ok && second.reused && second.enginePath === first.enginePath);
		const other = await remoteFingerprint(h, nativeDir, 'mpicc.mpich');
		assert.ok(other.ok && other.fingerprint !== first.fingerprint, 'another MPI must give another fingerprint');
	});

	it('openRemoteTarget reuses the deployed engine and inspectHost runs it on the host', async function () {
		assert.ok(nativeDir && cacheRoot, 'needs the deploy test above');
		const target = await openRemoteTarget(hostSetting({ name: 'node-a', sshHost: 'host-a', mpirun: 'mpirun.openmpi' }),
			{ configFile: lab.sshConfig, controlDir: path.join(lab.dir, 'cm2'), nativeDir, cacheRoot });
		try {
			assert.ok(target.deploy?.ok && target.deploy.reused, JSON.stringify(target.deploy));
			const report = await inspectHost(target.host, {
				ranks: 1, timeoutSeconds: 90, enginePath: target.enginePath, mpirunPath: target.mpirunPath,
				locateEngine: target.locateEngine, probe: target.probe,
			});
			assert.equal(report.host.label, 'node-a (host-a)');
			assert.equal(report.raw.find(r => r.id === 'engine')?.exitCode, 0);
			assert.match(report.raw.find(r => r.id === 'probe')?.error ?? '', /runs only on the local machine, not on node-a/);
		} finally {
			await target.close();
		}
	});

	it('cancelling a deploy while the engine builds kills the remote build (no cmake, make or compiler left) and says so', async function () {
		this.timeout(120_000);
		assert.ok(nativeDir, 'needs the deploy test above');
		const abort = new AbortController();
		const progress: string[] = [];
		const started = Date.now();
		let cancelledAt = 0;
		const building = deployEngine(h, {
			nativeDir, cacheRoot: path.join(lab.dir, 'cache-cancel'), mpicc: 'mpicc.openmpi', signal: abort.signal,
			onProgress: m => { progress.push(m); if (/^Building/.test(m)) { setTimeout(() => { cancelledAt = Date.now(); abort.abort(); }, 1500); } },
		});
		const r = await building;
		assert.ok(cancelledAt > 0, `never reached the build step: ${progress.join(' | ')} ${JSON.stringify(r)}`);
		assert.deepEqual(r, { ok: false, error: 'deploying the engine to host-a was cancelled', lines: [] });
		assert.ok(Date.now() - cancelledAt < 15_000, `cancel took ${Date.now() - cancelledAt} ms (started ${started})`);
		const builders = (): string[] => lab.processes('host-a').filter(l => /cache-cancel/.test(l) || /\b(cc1plus|cc1|make|gmake)\b/.test(l));
		let left = builders();
		for (let i = 0; i < 25 && left.length > 0; i++) { await new Promise(res => setTimeout(res, 200)); left = builders(); }
		assert.deepEqual(left, [], 'build processes survived the cancel');
		const marker = await h.run(['sh', '-c', 'ls "$1"/*/built.ok 2>/dev/null | wc -l', 'sh', path.join(lab.dir, 'cache-cancel')], { timeoutMs: 10_000 });
		assert.equal(marker.stdout.trim(), '0', 'a cancelled build must not be marked as built');
	});

	it('turns a failing remote build into an error with the compiler\'s own lines', async () => {
		// A tiny broken CMake project stands in for native/ here: it exercises the same copy/configure/build path
		// in seconds (the real project is built by the test above).
		const broken = path.join(lab.dir, 'broken-native');
		fs.mkdirSync(broken);
		fs.writeFileSync(path.join(broken, 'CMakeLists.txt'), 'cmake_minimum_required(VERSION 3.18)\nproject(b C)\nadd_executable(gpumpi_cli main.c)\n');
		fs.writeFileSync(path.join(broken, 'main.c'), 'int main(void) { return undeclared_thing; }\n');
		const r = await deployEngine(h, { nativeDir: broken, cacheRoot: path.join(lab.dir, 'cache2'), mpicc: 'mpicc.openmpi' });
		assert.equal(r.ok, false);
		assert.ok(!r.ok);
		assert.match(r.error, /building the engine on host-a failed/);
		assert.ok(r.lines.some(l => /main\.c:1:.*error: .*undeclared_thing/.test(l)), r.lines.join('\n'));
		const none = await deployEngine(h, { nativeDir: broken, cacheRoot: path.join(lab.dir, 'cache3'), mpicc: 'no-such-mpicc' });
		assert.deepEqual(none, { ok: false, error: 'no-such-mpicc not found on host-a (after its setup line): the engine is built there with cmake and mpicc', lines: [] });
	});
});
