/**
 * `gpumpi-doctor guard` for real: the built CLI (bin/gpumpi-doctor.js) runs native/examples/guard_demo under real
 * Open MPI and MPICH with the guard preloaded through the launcher's own options. Checked: the exact counts of
 * guard_demo's fixed pattern, --json parses with the program's output on stderr, the program's exit code becomes ours
 * while the guard's own are 124–127 (a usage error 125, --timeout 124),
 * the report directory is removed, a command that is not a launcher runs with --np, Ctrl-C ends the whole job (130).
 * The IPC scenario uses the FAKE CUDA driver (native/fakes/fakeCuda.c, as test/engine/guardFakeCuda.test.ts explains:
 * CUDA IPC cannot be produced here): report mode gives the ipc-import danger with its call site, fix mode bounces it
 * and the owners verify every word. What only the H200 shows (the unguarded crash): scripts/gpu/guard.sh.
 */
import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot } from '../../extension/core/native';
import { sleep } from './faultHelpers';
import { createNetnsLab, type NetnsLab } from '../hosts/netnsHosts';
import { createSlurmLab, slurmUnavailable, type SlurmLab } from '../hosts/slurmLab';

const ROOT = repoRoot() ?? process.cwd();
const BIN = path.join(ROOT, 'bin', 'gpumpi-doctor.js');

interface Result {
	schema: string; exitCode: number | null; argv: string[]; verdict: string; how: string;
	ranks: { expected: number | null; reported: number; missing: number[] };
	traffic: Array<{ a: number; b: number; calls: number; bytes: number }>;
	findings: Array<{ id: string; severity: string; message: string; evidence: Array<{ line: string }>; fix?: { command?: string } }>;
	map: { schema: string; pairs: Array<{ a: number; b: number; traffic: { bytes_ab: number; bytes_ba: number } }> } | null;
}

function cli(args: string[], cwd: string, extraEnv: Record<string, string> = {}): { code: number | null; stdout: string; stderr: string } {
	const env: Record<string, string | undefined> = { ...process.env };
	for (const k of Object.keys(env)) {
		if (k.startsWith('GPUMPI_') || k === 'UCX_TLS' || k === 'LD_PRELOAD' || /^(SLURM_|PBS_|LSB_)/.test(k)) { delete env[k]; }
	}
	Object.assign(env, extraEnv);
	const r = spawnSync(process.execPath, [BIN, ...args], { cwd, env, encoding: 'utf8', timeout: 240_000, maxBuffer: 64 * 1024 * 1024 });
	return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
const guardDirOf = (argv: string[]): string => (argv.find(a => a.startsWith('GPUMPI_GUARD_DIR=')) ?? `=${argv[argv.indexOf('GPUMPI_GUARD_DIR') + 1]}`).split('=')[1];

/** Live guard_demo processes whose argv holds `token` (the ranks of one run). */
function demoRanks(token: string): number[] {
	const out: number[] = [];
	for (const d of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(d)) { continue; }
		let cmd: string[];
		try { cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0'); } catch { continue; }
		if (!/guard_demo$/.test(cmd[0]) || !cmd.includes(token)) { continue; }
		try { if (/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${d}/stat`, 'utf8'))) { continue; } } catch { continue; }
		out.push(Number(d));
	}
	return out;
}
async function until(f: () => boolean, ms: number): Promise<boolean> {
	const end = Date.now() + ms;
	while (Date.now() < end) { if (f()) { return true; } await sleep(100); }
	return f();
}

const FLAVORS = [
	{ flavor: 'openmpi', mpirun: ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe'], ucx: ['--mca', 'pml', 'ucx', '--mca', 'pml_ucx_devices', 'any', '--mca', 'pml_ucx_tls', 'any'] },
	{ flavor: 'mpich', mpirun: ['mpirun.mpich'], ucx: [] },
] as const;

for (const { flavor, mpirun, ucx } of FLAVORS) {
	describe(`gpumpi-doctor guard under ${mpirun[0]}`, function () {
		this.timeout(300_000);
		const dir = path.join(ROOT, 'native', 'build', `engine-${flavor}`);
		const demo = path.join(dir, 'examples', 'guard_demo');
		const fake = path.join(dir, 'libgpumpi_fakecuda.so');
		let cwd = '';
		before(() => {
			for (const p of [demo, fake, path.join(dir, 'libgpumpi_guard.so')]) { assert.ok(fs.existsSync(p), `${p} not built: node scripts/ensure.mjs --all-mpis`); }
			cwd = fs.mkdtempSync(path.join(os.tmpdir(), `gpumpi-guardcli-${flavor}-`));
		});
		after(() => { fs.rmSync(cwd, { recursive: true, force: true }); });

		it('--json -- mpirun -np 2 guard_demo: the exact counts, the program output on stderr, the report directory removed', () => {
			const r = cli(['guard', '--json', '--', ...mpirun, '-np', '2', demo], cwd);
			assert.equal(r.code, 0, r.stderr);
			const doc = JSON.parse(r.stdout) as Result;
			assert.equal(doc.schema, 'gpumpi-guard-result/1');
			assert.match(r.stderr, /^RESULT PASS$/m, 'the program output goes to stderr with --json');
			assert.equal(doc.exitCode, 0);
			assert.deepEqual(doc.ranks, { ...doc.ranks, expected: 2, reported: 2, missing: [] });
			assert.deepEqual(doc.traffic.map(t => [t.a, t.b, t.calls, t.bytes]), [[0, 1, 13, 1840], [1, 0, 13, 1840]]);
			assert.deepEqual(doc.findings.map(f => f.id), ['guard-unsupported-calls', 'guard-no-dangers']);
			assert.equal(doc.map?.schema, 'gpumpi.map/1');
			assert.deepEqual([doc.map?.pairs[0].traffic.bytes_ab, doc.map?.pairs[0].traffic.bytes_ba], [1840, 1840]);
			assert.equal(doc.argv[0], mpirun[0], 'the options are inserted after the launcher word');
			assert.equal(fs.existsSync(guardDirOf(doc.argv)), false, 'report directory left behind');
		});

		it('text output: the program output, then the verdict line, the findings and the traffic table', () => {
			const r = cli(['guard', '--', ...mpirun, '-np', '2', demo], cwd);
			assert.equal(r.code, 0, r.stderr);
			assert.match(r.stdout, /^RESULT PASS\n\nVERDICT {2}gpumpi-guard \(report\): no dangerous GPU-buffer call — \d+ MPI calls, 26 point-to-point messages \(3\.7 kB\); 2 ranks reported; program exit code 0$/m);
			assert.match(r.stdout, /^ {2}0→1 +13 +1\.8 kB +400 B {2}host-only +host 24$/m);
		});

		it("the guard's own codes are not the program's: a usage error is 125 before anything runs; --timeout stops the whole job with 124", async () => {
			const usage = cli(['guard', '--mode', 'repor', '--', ...mpirun, '-np', '2', demo], cwd);
			assert.equal(usage.code, 125, usage.stderr);
			assert.match(usage.stderr, /--mode needs report, warn or fix/);
			assert.equal(usage.stdout, '');
			const iters = String(800_000_000 + (process.pid % 1000) + (flavor === 'mpich' ? 1 : 0));
			const t0 = Date.now();
			const r = cli(['guard', '--json', '--timeout', '4', '--', ...mpirun, '-np', '2', demo, '--bench', '--iters', iters], cwd);
			assert.equal(r.code, 124, r.stderr);
			assert.ok(Date.now() - t0 < 60_000, `${Date.now() - t0} ms`);
			const doc = JSON.parse(r.stdout) as Result & { timedOut: boolean };
			assert.deepEqual([doc.exitCode, doc.timedOut], [null, true]);
			assert.ok(await until(() => demoRanks(iters).length === 0, 5000), `ranks left: ${demoRanks(iters).join(', ')}`);
			assert.equal(fs.existsSync(guardDirOf(doc.argv)), false, 'report directory left');
		});

		it("the program's exit code becomes ours and is in the result", () => {
			const r = cli(['guard', '--json', '--', ...mpirun, '-np', '2', demo, '--no-such-option'], cwd);
			assert.equal(r.code, 2, r.stderr);
			assert.match(r.stderr, /usage: guard_demo/);
			const doc = JSON.parse(r.stdout) as Result;
			assert.equal(doc.exitCode, 2);
			assert.equal(doc.findings[0].id, 'guard-program-failed');
			assert.match(doc.verdict, /program exit code 2$/);
		});

		it('a program the launcher cannot start: guard-program-not-started with the launcher\'s lines, its exit code, no guessed cause', () => {
			const missing = path.join(cwd, 'no-such-program');
			const r = cli(['guard', '--json', '--', ...mpirun, '-np', '2', missing], cwd);
			const doc = JSON.parse(r.stdout) as Result;
			assert.notEqual(r.code, 0, r.stderr);
			assert.equal(doc.exitCode, r.code);
			const f = doc.findings.find(x => x.id === 'guard-program-not-started');
			assert.ok(f, `${doc.findings.map(x => x.id).join()}\n${r.stderr}`);
			// What the launcher said (program, node, reason), or, where Hydra printed nothing (1 launch in 6 here, exit 141):
			// what the product then looked at, `test -e` of the program on this machine.
			assert.match(f.message, new RegExp(`^${mpirun[0].replace('.', '\\.')} could not start ${missing.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}( on node \\S+)? \\(`));
			assert.ok(f.evidence.length > 0 && f.evidence.every(e => r.stderr.includes(e.line) || (e.line.startsWith(`test -e ${missing} on `) && e.line.endsWith(': exit 1 (no such file)'))), JSON.stringify(f.evidence));
			assert.ok(!doc.findings.some(x => x.id === 'guard-no-report'), 'the generic list of causes is not given when the cause is known');
			assert.match(doc.verdict, /^gpumpi-guard \(report\): not run: the launcher could not start /);
		});

		it('as root without --allow-run-as-root (Open MPI): guard-run-as-root-refused with the launcher\'s lines, and its fix runs', function () {
			if (flavor !== 'openmpi' || process.getuid?.() !== 0) { this.skip(); }
			const plain = mpirun.filter(a => a !== '--allow-run-as-root');
			const r = cli(['guard', '--json', '--', ...plain, '-np', '2', demo], cwd, { OMPI_ALLOW_RUN_AS_ROOT: '', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '' });
			assert.notEqual(r.code, 0, r.stderr);
			const doc = JSON.parse(r.stdout) as Result;
			const f = doc.findings.find(x => x.id === 'guard-run-as-root-refused');
			assert.ok(f, `${doc.findings.map(x => x.id).join()}\n${r.stderr}`);
			assert.ok(!doc.findings.some(x => ['guard-no-report', 'guard-program-not-started'].includes(x.id)), 'one cause, not the generic list');
			assert.ok(f.evidence.some(e => /has detected an attempt to run as root/.test(e.line)) && f.evidence.every(e => r.stderr.includes(e.line)), JSON.stringify(f.evidence));
			assert.match(doc.verdict, /^gpumpi-guard \(report\): not run: mpirun\.openmpi refused to run as root/);
			// The fix it offers, run: the two variables before the same guard command.
			const fixed = cli(['guard', '--json', '--', ...plain, '-np', '2', demo], cwd, { OMPI_ALLOW_RUN_AS_ROOT: '1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1' });
			assert.equal(fixed.code, 0, fixed.stderr);
			assert.equal((JSON.parse(fixed.stdout) as Result).ranks.reported, 2);
		});

		it('repro ipc with an engine built for another architecture: every trial a launch error, never a crash, verdict inconclusive', () => {
			// A real ELF the kernel refuses (Exec format error): /bin/true with its e_machine set to aarch64 (0xb7).
			const foreign = path.join(cwd, 'gpumpi-aarch64');
			const elf = fs.readFileSync('/bin/true');
			elf.writeUInt16LE(0xb7, 18);
			fs.writeFileSync(foreign, elf, { mode: 0o755 });
			const env: Record<string, string | undefined> = { ...process.env, GPUMPI_ENGINE: foreign };
			const r = spawnSync(process.execPath, [BIN, 'repro', 'ipc', '--json', '--trials', '2', '--memory', 'host', '--size', '1M', '--variants', 'direct', '--mpirun', mpirun[0]], { cwd, env, encoding: 'utf8', timeout: 240_000 });
			assert.equal(r.status, 0, r.stderr);
			const doc = JSON.parse(r.stdout) as { variants: Array<{ class: string; counts: Record<string, number>; failureModes: Array<{ label: string }> }> };
			assert.equal(doc.variants.length, 1, r.stdout.slice(0, 2000));
			const v = doc.variants[0];
			// Open MPI refuses the exec itself and says so; MPICH's execvp hands the ELF to /bin/sh, which fails on it
			// before any rank line: both are runs that measured nothing (launch_error), never a crash or a failure of the pattern.
			assert.deepEqual([v.counts.launch_error, v.counts.crashed, v.counts.no_output], [2, 0, 0], JSON.stringify(v));
			assert.equal(v.class, 'inconclusive');
			if (flavor === 'openmpi') { assert.match(v.failureModes[0].label, /^launch error: mpirun\.openmpi could not start .*gpumpi-aarch64 on node \S+ \(Exec format error\)/); }
			else { assert.match(v.failureModes[0].label, /^launch error: no rank reached the end of MPI_Init/); }
		});

		it('a command that is not a launcher runs with --np 2 through the launch layer', () => {
			const r = cli(['guard', '--json', '--np', '2', '--mpirun', mpirun[0], '--', demo], cwd);
			assert.equal(r.code, 0, r.stderr);
			const doc = JSON.parse(r.stdout) as Result;
			assert.equal(doc.how, 'spec');
			assert.deepEqual(doc.traffic.map(t => [t.a, t.b, t.calls, t.bytes]), [[0, 1, 13, 1840], [1, 0, 13, 1840]]);
		});

		it('IPC scenario (fake driver): report flags the import receive with its call site; --mode fix bounces it and the data is right', () => {
			const args = (mode: string): string[] => ['guard', '--json', '--mode', mode, '--preset', `GPUMPI_LIBCUDA=${fake}`, '--preset', 'UCX_NET_DEVICES=lo', '--',
				...mpirun, ...ucx, '-np', '4', demo, '--ipc', '--size', '1048576'];
			const rep = cli(args('report'), cwd);
			assert.equal(rep.code, 0, rep.stderr);
			const a = JSON.parse(rep.stdout) as Result;
			const danger = a.findings.find(f => f.id === 'guard-ipc-import-ucx-cuda-ipc');
			assert.ok(danger, a.findings.map(f => f.id).join());
			assert.equal(danger.severity, 'error');
			assert.match(danger.message, /^2 calls \(2\.1 MB\) on ranks 1, 3, first at guard_demo\+0x[0-9a-f]+/);
			assert.match(danger.evidence[0].line, /MPI_Irecv from rank 2 ×1, 1048576 bytes, first at guard_demo\+0x[0-9a-f]+ .*action none/);
			assert.match(danger.fix?.command ?? '', /^gpumpi-doctor guard --mode fix --preset GPUMPI_LIBCUDA=.* -- /);
			const fix = cli(args('fix'), cwd);
			assert.equal(fix.code, 0, fix.stderr);
			assert.match(fix.stderr, /^IPC rank 0: 262144 words, 0 wrong$/m);
			assert.match(fix.stderr, /^IPC rank 2: 262144 words, 0 wrong$/m);
			const b = JSON.parse(fix.stdout) as Result;
			const fixed = b.findings.find(f => f.id === 'guard-ipc-import-ucx-cuda-ipc');
			assert.equal(fixed?.severity, 'info');
			assert.ok(fixed?.evidence.every(e => /action bounced$/.test(e.line)), JSON.stringify(fixed?.evidence));
		});
	});
}

describe('gpumpi-doctor guard: Ctrl-C', function () {
	this.timeout(120_000);
	it('SIGINT while the ranks run: exit 130, nothing on stdout, nothing of the job left, the report directory removed', async () => {
		const demo = path.join(ROOT, 'native', 'build', 'engine-openmpi', 'examples', 'guard_demo');
		const iters = String(900_000_000 + (process.pid % 1000));
		const before = new Set(fs.readdirSync(os.tmpdir()).filter(f => f.startsWith('gpumpi-guard-')));
		const child = spawn(process.execPath, [BIN, 'guard', '--json', '--', 'mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '-np', '2', demo, '--bench', '--iters', iters], { stdio: ['ignore', 'pipe', 'pipe'] });
		let stdout = '';
		let stderr = '';
		child.stdout.on('data', d => { stdout += d; });
		child.stderr.on('data', d => { stderr += d; });
		const closed = new Promise<number | null>(res => child.on('close', c => res(c)));
		assert.ok(await until(() => demoRanks(iters).length === 2, 30_000), `the ranks never appeared:\n${stderr}`);
		await sleep(500);
		child.kill('SIGINT');
		assert.equal(await closed, 130, stderr);
		assert.match(stderr, /interrupted; the program was stopped/);
		assert.equal(stdout, '');
		assert.ok(await until(() => demoRanks(iters).length === 0, 5000), `ranks left: ${demoRanks(iters).join(', ')}`);
		const after = fs.readdirSync(os.tmpdir()).filter(f => f.startsWith('gpumpi-guard-') && !before.has(f));
		assert.deepEqual(after, [], 'report directory left');
	});
});

describe('gpumpi-doctor guard --host (real sshd in a network-namespace host)', function () {
	this.timeout(300_000);
	let lab: NetnsLab;
	before(async function () {
		this.timeout(120_000);
		lab = await createNetnsLab({ count: 1 });
	});
	after(() => { lab?.teardown(); });

	it('--host host-a: mpirun runs there with the guard forwarded, the reports are read back over ssh and the directory removed there', () => {
		const dir = path.join(ROOT, 'native', 'build', 'engine-openmpi');
		// Namespace hosts share this machine's file system: the guard and guard_demo built here are valid paths on host-a.
		const r = cli(['guard', '--json', '--host', 'host-a', '--ssh-config', lab.sshConfig, '--guard-lib', path.join(dir, 'libgpumpi_guard.so'),
			'--', 'mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '-np', '2', path.join(dir, 'examples', 'guard_demo')], lab.dir);
		assert.equal(r.code, 0, r.stderr);
		const doc = JSON.parse(r.stdout) as Result & { where: string; reports: Array<{ host: string }> };
		assert.equal(doc.where, 'host-a');
		assert.deepEqual(doc.reports.map(x => x.host), ['host-a', 'host-a'], 'the ranks ran on host-a');
		assert.deepEqual(doc.traffic.map(t => [t.a, t.b, t.calls, t.bytes]), [[0, 1, 13, 1840], [1, 0, 13, 1840]]);
		assert.equal(fs.existsSync(guardDirOf(doc.argv)), false, 'report directory left on host-a');
	});
});

describe('gpumpi-doctor guard under Slurm (real slurmctld / slurmd in namespace hosts, srun from the login node)', function () {
	this.timeout(300_000);
	let s: SlurmLab;
	const dir = path.join(ROOT, 'native', 'build', 'engine-openmpi');
	const demo = path.join(dir, 'examples', 'guard_demo');
	const lib = path.join(dir, 'libgpumpi_guard.so');
	before(async function () {
		this.timeout(120_000);
		const why = slurmUnavailable();
		if (why) { throw new Error(`Slurm lab cannot run here: ${why}`); }
		s = await createSlurmLab({ computeHosts: 2 });
	});
	after(() => { s?.teardown(); });
	const onLogin = (): string[] => ['--host', s.controller, '--ssh-config', s.lab.sshConfig, '--guard-lib', lib];
	const check = (r: { code: number | null; stdout: string; stderr: string }): Result & { reports: Array<{ host: string }> } => {
		assert.equal(r.code, 0, r.stderr);
		const doc = JSON.parse(r.stdout) as Result & { reports: Array<{ host: string }> };
		assert.deepEqual(doc.reports.map(x => x.host).sort(), ['host-b', 'host-c'], 'one rank per compute node');
		assert.deepEqual(doc.traffic.map(t => [t.a, t.b, t.calls, t.bytes]), [[0, 1, 13, 1840], [1, 0, 13, 1840]]);
		return doc;
	};

	it('--srun --np 2: launched by the launch layer, the guard passed with srun --export=ALL,… (srun itself not preloaded)', () => {
		const doc = check(cli(['guard', '--json', ...onLogin(), '--mpirun', 'mpirun.openmpi', '--srun', '--srun-arg', '-N2', '--np', '2', '--', demo], s.dir));
		assert.equal(doc.how, 'spec');
		assert.equal(doc.argv[0], 'srun');
		assert.ok(doc.argv.some(a => a.startsWith(`--export=ALL,LD_PRELOAD=${lib},GPUMPI_GUARD=report,GPUMPI_GUARD_DIR=`)), doc.argv.join(' '));
	});

	it('the user\'s own srun line: the options inserted after the srun word', () => {
		const doc = check(cli(['guard', '--json', ...onLogin(), '--flavor', 'openmpi', '--', 'srun', '--mpi=pmix', '-N2', '-n', '2', demo], s.dir));
		assert.equal(doc.how, 'launcher');
		assert.deepEqual(doc.argv.slice(2), ['--mpi=pmix', '-N2', '-n', '2', demo]);
		assert.equal(doc.ranks.expected, 2);
	});
});

// Hydra exits 141 with no output at all in about 1 launch of 6 of a missing program (test-fixtures/repro/launch): that
// cannot be produced on demand, so a FAKE launcher named mpirun (a sh script: prints nothing, exits 141) stands in for
// that one launch. Everything else is real: the CLI, the guard's report directory, `test -e` on this machine.
describe('gpumpi-doctor guard: a launcher that fails silently', function () {
	this.timeout(120_000);
	let cwd = '';
	before(() => {
		cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-guardcli-silent-'));
		fs.mkdirSync(path.join(cwd, 'bin'));
		fs.writeFileSync(path.join(cwd, 'bin', 'mpirun'), '#!/bin/sh\nexit 141\n', { mode: 0o755 });
	});
	after(() => { fs.rmSync(cwd, { recursive: true, force: true }); });

	it('a missing program: looked at with test -e, reported as not started with that check as evidence', () => {
		const missing = path.join(cwd, 'no-such-program');
		const r = cli(['guard', '--json', '--flavor', 'mpich', '--', path.join(cwd, 'bin', 'mpirun'), '-np', '2', missing], cwd);
		assert.equal(r.code, 141, r.stderr);
		const doc = JSON.parse(r.stdout) as Result;
		const f = doc.findings.find(x => x.id === 'guard-program-not-started');
		assert.ok(f, doc.findings.map(x => x.id).join());
		// The host's label is this machine's name.
		assert.deepEqual(f.evidence.map(e => e.line), [`test -e ${missing} on ${os.hostname()}: exit 1 (no such file)`]);
		assert.match(f.message, new RegExp(`could not start .*no-such-program \\(no such file on ${os.hostname()}, where the launcher ran`));
	});

	// The check looks only on the launching host, so it must not speak for launches whose ranks start elsewhere.
	for (const [label, extra, env] of [
		['an mpirun given other hosts (--host)', ['--host', 'node-a,node-b'], {}],
		['an mpirun given a hostfile', ['--hostfile', '/nonexistent/hosts'], {}],
		['an mpirun inside a 2-node Slurm allocation', [], { SLURM_JOB_NUM_NODES: '2', SLURM_NNODES: '2' }],
		['an mpirun inside a PBS job', [], { PBS_NODEFILE: '/var/spool/pbs/aux/1.server' }],
	] as Array<[string, string[], Record<string, string>]>) {
		it(`a missing program under ${label}: no claim that it is missing, the generic no-report finding`, () => {
			const missing = path.join(cwd, 'no-such-program');
			const r = cli(['guard', '--json', '--flavor', 'mpich', '--', path.join(cwd, 'bin', 'mpirun'), ...extra, '-np', '2', missing], cwd, env);
			assert.equal(r.code, 141, r.stderr);
			const doc = JSON.parse(r.stdout) as Result;
			assert.deepEqual(doc.findings.map(x => x.id).filter(id => id !== 'guard-program-failed'), ['guard-no-report']);
		});
	}

	it('a missing program in a 1-node Slurm allocation: looked at, since every rank starts here', () => {
		const missing = path.join(cwd, 'no-such-program');
		const r = cli(['guard', '--json', '--flavor', 'mpich', '--', path.join(cwd, 'bin', 'mpirun'), '-np', '2', missing], cwd, { SLURM_JOB_NUM_NODES: '1', SLURM_NNODES: '1' });
		assert.equal(r.code, 141, r.stderr);
		const doc = JSON.parse(r.stdout) as Result;
		assert.ok(doc.findings.some(x => x.id === 'guard-program-not-started'), doc.findings.map(x => x.id).join());
	});

	it('a missing program under a (fake, silent) srun: no claim, the compute nodes were not looked at', () => {
		fs.writeFileSync(path.join(cwd, 'bin', 'srun'), '#!/bin/sh\nexit 141\n', { mode: 0o755 });
		const r = cli(['guard', '--json', '--flavor', 'mpich', '--', path.join(cwd, 'bin', 'srun'), '-n', '2', path.join(cwd, 'no-such-program')], cwd);
		assert.equal(r.code, 141, r.stderr);
		const doc = JSON.parse(r.stdout) as Result;
		assert.ok(!doc.findings.some(x => x.id === 'guard-program-not-started'), doc.findings.map(x => x.id).join());
	});

	it('a program that exists: no claim about it, the generic no-report finding', () => {
		const r = cli(['guard', '--json', '--flavor', 'mpich', '--', path.join(cwd, 'bin', 'mpirun'), '-np', '2', '/bin/true'], cwd);
		assert.equal(r.code, 141, r.stderr);
		const doc = JSON.parse(r.stdout) as Result;
		assert.deepEqual(doc.findings.map(x => x.id).filter(id => id !== 'guard-program-failed'), ['guard-no-report']);
	});
});
