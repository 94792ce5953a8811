/**
 * The repro runner's pure parts: mpirun argv per flavour (presets as data, never a shell), classification of a run
 * from its REAL captured output (test-fixtures/repro/), the IPC and fallback verdicts, the readable summaries, and
 * rebuilding reports from a saved device result (entries wrapped around the real captured outputs).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ExecuteResult } from '../../extension/core/proc';
import { classifyFallbackRun, combineFallback, fallbackVerdict } from '../../extension/core/repro/fallbackRunner';
import { classifyIpcRun, summarizeAll } from '../../extension/core/repro/ipcRunner';
import { ipcVerdict } from '../../extension/core/repro/ipcVerdict';
import { buildLaunchArgv } from '../../extension/core/launch/launchArgv';
import { defaultSpec, parsePreset, withJobName } from '../../extension/core/launch/launchSpec';
import { PML_UCX_MCA } from '../../extension/core/launch/evidenceSwitches';
import { hostListArgs } from '../../extension/core/hosts/launchTarget';
import { gatherTransportEvidence } from '../../extension/core/parsers/transportLines';
import { renderFallbackReport, renderIpcReport, reportsFromDeviceJson } from '../../extension/core/repro/reproRender';
import type { IpcVariantResult } from '../../extension/shared/reproSchema';

const DIR = path.resolve(process.cwd(), 'test-fixtures', 'repro');
function fx(name: string): string { return fs.readFileSync(path.join(DIR, name), 'utf8'); }
function captured(base: string, exitCode: number): ExecuteResult {
	return { exitCode, signal: null, stdout: fx(`${base}.stdout`), stderr: fx(`${base}.stderr`), timedOut: false, durationMs: 1000 };
}

describe('repro launcher: mpirun argv', () => {
	it('Open MPI: root, oversubscribe, loopback, MCA and -x presets, then -np and the program', () => {
		const spec = { ...defaultSpec('openmpi', 'mpirun.openmpi', 4), allowRunAsRoot: true, loopbackOnly: true,
			mca: [...PML_UCX_MCA, ['btl_smcuda_use_cuda_ipc', '0'] as [string, string]], env: [['UCX_TLS', '^cuda_ipc'] as [string, string]] };
		const argv = buildLaunchArgv(spec, ['/e/gpumpi', 'repro', 'ipc']);
		assert.deepEqual(argv, ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--mca', 'btl_tcp_if_include', 'lo',
			'--mca', 'pml', 'ucx', '--mca', 'pml_ucx_tls', 'any', '--mca', 'pml_ucx_devices', 'any', '--mca', 'btl_smcuda_use_cuda_ipc', '0',
			'-x', 'UCX_TLS=^cuda_ipc', '-np', '4', '/e/gpumpi', 'repro', 'ipc']);
	});

	it('MPICH: -genv NAME value; MCA parameters are refused with a clear message', () => {
		const spec = { ...defaultSpec('mpich', 'mpirun.mpich', 2), env: [['UCX_TLS', 'sm,cuda_copy,self'] as [string, string]] };
		assert.deepEqual(buildLaunchArgv(spec, ['g']), ['mpirun.mpich', '-genv', 'UCX_TLS', 'sm,cuda_copy,self', '-np', '2', 'g']);
		assert.throws(() => buildLaunchArgv({ ...spec, mca: [['pml', 'ucx']] }, ['g']), /Open MPI only/);
	});

	it('hostile values stay one argv item; bad names are refused', () => {
		const p = parsePreset('UCX_TLS=$(rm -rf /); echo "x"');
		assert.ok(p);
		const argv = buildLaunchArgv({ ...defaultSpec('openmpi', 'mpirun', 2), env: [p] }, ['g']);
		assert.ok(argv.includes('UCX_TLS=$(rm -rf /); echo "x"'));
		assert.equal(parsePreset('A B=1'), null);
		assert.equal(parsePreset('=1'), null);
		assert.throws(() => buildLaunchArgv({ ...defaultSpec('openmpi', 'mpirun', 2), mca: [['pml;x', 'ucx']] }, ['g']), /bad MCA/);
		assert.throws(() => buildLaunchArgv(defaultSpec('openmpi', 'mpirun', 0), ['g']), /rank count/);
	});
});

describe('repro launcher: srun argv and host lists', () => {
	const srun = { srun: 'srun', mpi: 'pmi2', allocation: ['-p', 'debug', '-N', '2'], jobName: 'gpumpi-test' };

	it('Open MPI under srun: MCA parameters become OMPI_MCA_* and presets stay whole in the environment (commas too)', () => {
		const spec = { ...defaultSpec('openmpi', 'mpirun', 4), srun, mca: [['pml', 'ob1'] as [string, string]], env: [['UCX_TLS', 'sm,cuda_copy,self'] as [string, string]] };
		assert.deepEqual(buildLaunchArgv(spec, ['/e/gpumpi', 'map']), ['env', 'OMPI_MCA_pml=ob1', 'UCX_TLS=sm,cuda_copy,self',
			'srun', '--job-name=gpumpi-test', '--kill-on-bad-exit=1', '--mpi=pmi2', '-p', 'debug', '-N', '2', '-n', '4', '/e/gpumpi', 'map']);
	});

	it('MPICH under srun refuses MCA; no presets means no env prefix; the plugin follows the flavour when not given', () => {
		const spec = { ...defaultSpec('mpich', 'mpirun', 2), srun: { ...srun, mpi: null, allocation: [] } };
		assert.deepEqual(buildLaunchArgv(spec, ['g']), ['srun', '--job-name=gpumpi-test', '--kill-on-bad-exit=1', '--mpi=pmi2', '-n', '2', 'g']);
		assert.ok(buildLaunchArgv({ ...spec, flavor: 'openmpi' }, ['g']).includes('--mpi=pmix'));
		assert.ok(buildLaunchArgv({ ...spec, srun: { ...spec.srun, mpi: 'none' } }, ['g']).includes('--mpi=none'));
		assert.throws(() => buildLaunchArgv({ ...spec, mca: [['pml', 'ucx']] }, ['g']), /Open MPI only/);
	});

	it('bad plugin and job names are refused; withJobName fills a fresh name only when empty', () => {
		const base = defaultSpec('openmpi', 'mpirun', 2);
		assert.throws(() => buildLaunchArgv({ ...base, srun: { ...srun, mpi: 'pmi2 --x' } }, ['g']), /bad srun --mpi/);
		assert.throws(() => buildLaunchArgv({ ...base, srun: { ...srun, jobName: '' } }, ['g']), /bad Slurm job name/);
		const a = withJobName({ ...base, srun: { ...srun, jobName: '' } }).srun?.jobName ?? '';
		const b = withJobName({ ...base, srun: { ...srun, jobName: '' } }).srun?.jobName ?? '';
		assert.match(a, /^gpumpi-[0-9a-f]{8}$/);
		assert.notEqual(a, b);
		assert.equal(withJobName({ ...base, srun }).srun?.jobName, 'gpumpi-test');
		assert.equal(withJobName(base).srun, undefined);
	});

	it('explicit host lists per launcher, malformed lists refused', () => {
		assert.deepEqual(hostListArgs('a:2,b:2', 'openmpi', false), ['--host', 'a:2,b:2']);
		assert.deepEqual(hostListArgs('a:2,b:2', 'mpich', false), ['-hosts', 'a:2,b:2']);
		assert.deepEqual(hostListArgs('node1:2,node2', 'openmpi', true), ['--nodelist=node1,node2']);
		for (const bad of ['a b', '-x', 'a;b', 'a,,b', '$(x)', '']) { assert.throws(() => hostListArgs(bad, 'openmpi', false), /host list/); }
	});
});

describe('repro runner: classifying real runs', () => {
	it('a correct run keeps the engine outcome, ranks and the UCX lanes as evidence', () => {
		const v = classifyIpcRun('direct', 'ucx', ['mpirun'], captured('ompi-ucx-ipc-direct', 0), 60000);
		assert.equal(v.outcome, 'correct');
		assert.equal(v.ranks.length, 4);
		assert.equal(v.memory, 'host');
		assert.ok(v.evidence.some(l => /ep_cfg\[\d\]: tag\(/.test(l)));
	});

	it('an Open MPI crash is "crashed" with rank 1 and signal 11', () => {
		const v = classifyIpcRun('crash-test', 'ob1', ['mpirun'], captured('ompi-ipc-crash', 139), 60000);
		assert.equal(v.outcome, 'crashed');
		assert.equal(v.signal, 11);
		assert.equal(v.crashedRank, 1);
		assert.match(v.detail, /rank 1 was killed by signal 11/);
	});

	it('an MPICH crash is "crashed" with rank 1 and signal 11', () => {
		const v = classifyIpcRun('crash-test', 'mpich', ['mpirun'], captured('mpich-ipc-crash', 11), 60000);
		assert.equal(v.outcome, 'crashed');
		assert.equal(v.crashedRank, 1);
		assert.equal(v.signal, 11);
	});

	it('a timeout and a launcher that cannot start are told apart', () => {
		const t = classifyIpcRun('direct', 'x', ['mpirun'], { exitCode: null, signal: 'SIGTERM', stdout: '', stderr: '', timedOut: true, durationMs: 5000, error: 'timed out' }, 5000);
		assert.equal(t.outcome, 'timed_out');
		const l = classifyIpcRun('direct', 'x', ['nope'], { exitCode: null, signal: null, stdout: '', stderr: '', timedOut: false, durationMs: 1, error: 'not found' }, 5000);
		assert.equal(l.outcome, 'launch_error');
		assert.match(l.detail, /^could not start nope: not found/);
		// The ssh connection lost after the start (sshHost: its remote session stopped, so `cleanup` is set): it had started.
		const lost = classifyIpcRun('direct', 'x', ['mpirun.openmpi'], { exitCode: null, signal: null, stdout: '', stderr: '', timedOut: false, durationMs: 2000,
			error: 'the ssh connection to host-a ended while the command ran (ssh exit status 255); reconnected and stopped remote session 7 on host-a: …',
			cleanup: 'stopped remote session 7 on host-a: SIGTERM to 5 process(es); afterwards none of it is left' }, 5000);
		assert.equal(lost.outcome, 'launch_error');
		assert.match(lost.detail, /^mpirun\.openmpi started but did not finish: the ssh connection to host-a ended while the command ran/);
	});
});

// Real launches of a program the launcher cannot start (test-fixtures/repro/launch/README.md): Open MPI 4.1.4 exits
// 132 / 131 after its "could not access or execute" / execve blocks, which is not SIGILL / SIGQUIT of a rank; the
// old reading counted such a run as a crash of the reproducer's pattern (seen in a vscode in-host run where the
// engine was not built: "4 of 4 trials not correct; crashed: a rank was killed by signal 4 (Illegal instruction)").
describe('repro runner: a launcher that cannot start the program is a launch error, never a crash', () => {
	const cases: Array<{ base: string; code: number; launcher: string; detail: RegExp }> = [
		{ base: 'launch/ompi-launch-missing', code: 132, launcher: 'mpirun.openmpi', detail: /^mpirun\.openmpi could not start \/nonexistent\/gpumpi on node vm \(could not access or execute the executable\); 4 processes failed to start: no rank ran/ },
		{ base: 'launch/ompi-launch-noperm', code: 132, launcher: 'mpirun.openmpi', detail: /could not start \/tmp\/cap\/noperm on node vm/ },
		{ base: 'launch/ompi-launch-wrongarch', code: 131, launcher: 'mpirun.openmpi', detail: /could not start \/tmp\/cap\/armbin on node vm \(Exec format error\); 4 processes failed to start/ },
		{ base: 'launch/mpich-launch-missing', code: 255, launcher: 'mpirun.mpich', detail: /^mpirun\.mpich could not start \/nonexistent\/gpumpi on node vm \(No such file or directory\): no rank ran/ },
		{ base: 'launch/mpich-launch-noperm', code: 255, launcher: 'mpirun.mpich', detail: /could not start \/tmp\/cap\/noperm on node vm \(Permission denied\)/ },
		// Open MPI 5.0.7 (PRRTE, the H100 testbed) exits 183 and says "lacked permissions" for both: quoted, not believed.
		{ base: 'launch/ompi5-launch-missing', code: 183, launcher: 'mpirun', detail: /^mpirun could not start \/nonexistent\/gpumpi on node vm \(in its words "lacked permissions to execute an executable", which Open MPI 5 also says of a file that does not exist\): no rank ran/ },
		{ base: 'launch/ompi5-launch-noperm', code: 183, launcher: 'mpirun', detail: /^mpirun could not start \/tmp\/t644 on node vm \(in its words "lacked permissions/ },
	];
	for (const c of cases) {
		it(`${c.base} (exit ${c.code}): launch_error naming the program, the node and the reason, with the launcher's lines`, () => {
			const v = classifyIpcRun('direct', 'x', [c.launcher], captured(c.base, c.code), 60000);
			assert.equal(v.outcome, 'launch_error', v.detail);
			assert.equal(v.signal, null);
			assert.match(v.detail, c.detail);
			assert.ok(v.evidence.length > 0 && v.evidence.every(l => captured(c.base, c.code).stderr.includes(l) || captured(c.base, c.code).stdout.includes(l)), v.evidence.join(' | '));
			const f = classifyFallbackRun(['mpi'], 'x', [c.launcher], captured(c.base, c.code), 60000);
			assert.equal(f.run.outcome, 'launch_error', f.run.detail);
			assert.match(f.run.detail, c.detail);
		});
	}

	it('PRRTE\'s report of a foreign-architecture program (rank 0 "exited on signal 13 (Broken pipe)", exit 141, no rank line): not a crash of the pattern; nothing was measured', () => {
		// Before: "crashed: rank 0 was killed by signal 13 (Broken pipe)", counted against the IPC pattern.
		const c = captured('launch/ompi5-launch-wrongarch', 141);
		const v = classifyIpcRun('direct', 'x', ['mpirun'], c, 60000);
		assert.equal(v.outcome, 'launch_error', v.detail);
		assert.equal(v.signal, null);
		assert.match(v.detail, /^no rank reached the end of MPI_Init \(no rank line\) and mpirun exited with status 141; the program may never have run; the output ends: .*signal 13 \(Broken pipe\)/);
		assert.ok(v.evidence.some(l => /signal 13 \(Broken pipe\)/.test(l)), v.evidence.join(' | '));
		const f = classifyFallbackRun(['mpi'], 'x', ['mpirun'], c, 60000);
		assert.equal(f.run.outcome, 'launch_error', f.run.detail);
	});

	it('Hydra that printed nothing and exited 141 (its proxy pipe closed first): not a crash; no rank started, so nothing was measured', () => {
		const v = classifyIpcRun('direct', 'x', ['mpirun.mpich'], captured('launch/mpich-launch-missing-silent', 141), 60000);
		assert.equal(v.outcome, 'launch_error');
		assert.equal(v.signal, null);
		assert.equal(v.detail, 'no rank reached the end of MPI_Init (no rank line) and mpirun.mpich exited with status 141; the program may never have run, and it printed nothing');
		const f = classifyFallbackRun(['mpi'], 'x', ['mpirun.mpich'], captured('launch/mpich-launch-missing-silent', 141), 60000);
		assert.equal(f.run.outcome, 'launch_error');
	});

	it('a program the shell ran instead (MPICH execvp falls back to /bin/sh for a foreign ELF): no rank started, the shell\'s line as evidence', () => {
		const v = classifyIpcRun('direct', 'x', ['mpirun.mpich'], captured('launch/mpich-launch-wrongarch', 2), 60000);
		assert.equal(v.outcome, 'launch_error');
		assert.match(v.detail, /no rank reached the end of MPI_Init .*status 2; the program may never have run; the output ends: .*Syntax error/);
		assert.ok(v.evidence.some(l => /Syntax error/.test(l)), v.evidence.join(' | '));
	});

	it('a run whose ranks started but printed no document stays "no result" (it measured something and failed)', () => {
		const c = captured('ompi-ucx-ipc-direct', 1);
		const rankLines = c.stderr.split('\n').filter(l => l.includes('@@GPUMPI-RANK@@')).join('\n');
		assert.ok(rankLines.length > 0);
		const v = classifyIpcRun('direct', 'x', ['mpirun'], { ...c, stdout: '', stderr: `${rankLines}\nsomething went wrong\n` }, 60000);
		assert.equal(v.outcome, 'no_output');
	});
});

function variant(v: Partial<IpcVariantResult> & Pick<IpcVariantResult, 'variant' | 'outcome'>): IpcVariantResult {
	return { trial: 1, config: 'c', detail: '', signal: null, signalName: null, crashedRank: null, ranks: [], evidence: [], command: [], exitCode: 0, durationMs: 1, memory: 'device', gpuUnavailableReason: null, signatures: [], log: '', ...v };
}

/** n trials of one variant, the listed trial numbers failing with `bad`. */
function trials(name: string, n: number, failing: number[], bad: Partial<IpcVariantResult> = {}, config = 'c'): IpcVariantResult[] {
	return Array.from({ length: n }, (_, i) => failing.includes(i + 1)
		? variant({ variant: name, outcome: 'crashed', signal: 11, signalName: 'Segmentation fault', crashedRank: 3, ...bad, trial: i + 1, config })
		: variant({ variant: name, outcome: 'correct', trial: i + 1, config }));
}

describe('repro verdicts', () => {
	it('IPC: direct fails in every trial, bounce correct in every trial -> "No", the failure mode, and bounce with its count', () => {
		const runs = [
			...trials('direct', 3, [1, 2, 3], { outcome: 'mpi_error', signal: null, crashedRank: null, detail: 'rank 1: MPI_Wait (receive): MPI_ERR_OTHER' }),
			...trials('bounce', 3, []), ...trials('host', 3, []),
		];
		const v = ipcVerdict(summarizeAll(runs, 3), { sizeBytes: 64 << 20 });
		assert.equal(v.directWorks, false);
		assert.equal(v.directClass, 'fails');
		assert.equal(v.gpuVerdict, true);
		assert.match(v.answer, /^No: .*3 of 3 failed/);
		assert.ok(v.why.some(w => /mpi error: no known signature in its output: 3 of 3/.test(w)), v.why.join('\n'));
		// No signature in these trials: no explanation is attached (the old rule matched the word anywhere).
		assert.ok(!v.why.some(w => /cuda_ipc transport tries to export/.test(w)));
		assert.deepEqual(v.worksInstead, ['bounce: 3 of 3 correct', 'host: 3 of 3 correct']);
		assert.match(v.conditions.protocol, /^rendezvous: 64 MiB/);
		// bounce works: the verdict hands over libgpumpi's IPC helper calls
		assert.match(v.bounceFix?.code ?? '', /gpumpi_ipc_open\(ctx, &h, &peer_mem\)[\s\S]*gpumpi_irecv\(ctx, peer_mem, bytes, sender, tag, &r\)[\s\S]*gpumpi_ipc_close/);
	});

	it('IPC: one trial is never a verdict; 0 of 12 failed states the rate ruled out', () => {
		const one = ipcVerdict(summarizeAll(trials('direct', 1, []), 1), { sizeBytes: 1 << 20 });
		assert.equal(one.directClass, 'inconclusive');
		assert.equal(one.directWorks, null);
		assert.doesNotMatch(one.answer, /^Yes/);
		const twelve = ipcVerdict(summarizeAll(trials('direct', 12, []), 12), { sizeBytes: 1 << 20 });
		assert.equal(twelve.directClass, 'works');
		assert.match(twelve.answer, /^Yes: .*0 of 12 failed: a failure rate above 22 % is ruled out at 95 %/);
	});

	it('IPC: a workaround that crashed once is not recommended; intermittent direct is "Unreliable"', () => {
		const runs = [
			...trials('direct', 6, [2, 5], {}, 'ucx'), ...trials('direct', 6, [1, 3, 4, 6], {}, 'ucx, UCX_TLS=^cuda_ipc'),
			...trials('bounce', 6, [], {}, 'ucx'), ...trials('send-from-import', 6, [4], {}, 'ucx, UCX_TLS=^cuda_ipc'),
		];
		const v = ipcVerdict(summarizeAll(runs, 6), { sizeBytes: 64 << 20 });
		assert.equal(v.directClass, 'unreliable');
		assert.match(v.answer, /^Unreliable: .*ucx: 2 of 6 failed; ucx, UCX_TLS=\^cuda_ipc: 4 of 6 failed/);
		assert.deepEqual(v.worksInstead, ['bounce (ucx): 6 of 6 correct']);
		assert.ok(v.why.some(w => /Not recommended \(intermittent\): send-from-import \(ucx, UCX_TLS=\^cuda_ipc\): 1 of 6 failed/.test(w)));
	});

	it('IPC: host-memory runs give no GPU verdict and say why', () => {
		const v = ipcVerdict(summarizeAll(trials('direct', 2, []).map(r => ({ ...r, memory: 'host' as const, gpuUnavailableReason: 'libcuda.so.1: cannot open shared object file' })), 2));
		assert.equal(v.gpuVerdict, false);
		assert.match(v.answer, /No GPU verdict.*libcuda\.so\.1/);
	});

	it('fallback: a real host-memory run gives numbers but no GPU verdict', () => {
		const { run, doc } = classifyFallbackRun(['mpi', 'staged', 'host'], 'ucx', ['mpirun'], captured('ompi-ucx-proto-fallback', 0), 60000);
		assert.equal(run.outcome, 'ok');
		assert.ok(doc);
		const rep = combineFallback('ucx', [run], [doc], gatherTransportEvidence(fx('ompi-ucx-proto-fallback.stdout'), ''));
		assert.equal(rep.verdict.gpuVerdict, false);
		assert.equal(rep.verdict.path, 'unknown');
		assert.equal(rep.verdict.atBytes, 16 << 20);
		assert.ok(rep.verdict.stagedOverMpi !== null && rep.verdict.stagedOverMpi > 0);
		const text = renderFallbackReport(rep);
		assert.match(text, /mpi\s+16 MiB/);
		assert.match(text, /No GPU verdict/);
	});

	it('fallback: an mpi-mode crash on device memory means "cannot"; a slow MPI with cuda_copy lanes means "staged"', () => {
		// The real host-memory results re-labelled as device memory, to drive the decision rules (no GPU here).
		const { doc } = classifyFallbackRun(['mpi', 'staged', 'host'], 'x', ['m'], captured('ompi-ucx-proto-fallback', 0), 1);
		assert.ok(doc);
		const crashed = classifyFallbackRun(['mpi'], 'x', ['m'], captured('ompi-ipc-crash', 139), 1).run;
		assert.equal(crashed.outcome, 'crashed');
		const noMpi = doc.results.filter(r => r.mode !== 'mpi');
		const cannot = fallbackVerdict('device', null, [crashed], noMpi, { lanes: [], protocols: [], btls: [], lines: [] }, false);
		assert.equal(cannot.path, 'cannot');
		assert.match(cannot.pathText, /not CUDA-aware/);
		const slow = doc.results.map(r => r.mode === 'mpi' ? { ...r, best_gbps: 0.5 } : { ...r, best_gbps: 4 });
		const lanes = [{ host: 'h', pid: 1, epCfg: 0, lanes: { tag: ['tcp/lo', 'cuda_copy/cuda'] }, line: '' }];
		const staged = fallbackVerdict('device', null, [], slow, { lanes, protocols: [], btls: [], lines: [] }, true);
		assert.equal(staged.path, 'staged');
		assert.ok(staged.text.some(t => /manual staging is 8\.00× faster than MPI \(range 8\.00–8\.00×/.test(t)), staged.text.join('\n'));
		assert.ok(staged.text.some(t => /One trial per mode/.test(t)));
		// Two trials whose ranges overlap: "no difference", whatever the medians say.
		const two = [...slow.map(r => ({ ...r, trial: 1, best_gbps: r.mode === 'mpi' ? 3 : 4 })), ...slow.map(r => ({ ...r, trial: 2, best_gbps: r.mode === 'mpi' ? 5 : 4.2 }))];
		const same = fallbackVerdict('device', null, [], two, { lanes, protocols: [], btls: [], lines: [] }, true);
		assert.equal(same.differs, false);
		assert.ok(same.text.some(t => /no difference between manual staging and MPI: the ranges overlap \(manual staging 4\.10 \(4\.00–4\.20\) vs MPI 4\.00 \(3\.00–5\.00\)/.test(t)), same.text.join('\n'));
	});
});

describe('repro: saved device results (--from-json)', () => {
	it('rebuilds both reports from repro.sh-style entries and renders them', () => {
		const entry = (kind: string, config: string, base: string, exit: number, extra: Record<string, unknown>): Record<string, unknown> => {
			const out = fx(`${base}.stdout`) + fx(`${base}.stderr`);
			return { kind, config, command: 'mpirun -np 4 gpumpi', exit_code: exit, timed_out: false, duration_s: 2, output: out, document: null, ...extra };
		};
		const data = [
			entry('ipc', 'ucx', 'ompi-ucx-ipc-direct', 0, { variant: 'direct' }),
			entry('ipc', 'ob1', 'ompi-ipc-crash', 139, { variant: 'crash-test' }),
			{ ...entry('ipc', 'ob1', 'ompi-ucx-ipc-direct', 124, { variant: 'bounce' }), timed_out: true },
			entry('fallback', 'ucx-proto', 'ompi-ucx-proto-fallback', 0, { modes: 'mpi,staged,host' }),
			'garbage',
		];
		const rep = reportsFromDeviceJson(JSON.parse(JSON.stringify(data)) as unknown);
		assert.ok(rep.ipc);
		assert.deepEqual(rep.ipc.variants.map(v => v.runs.map(r => r.outcome)), [['correct'], ['crashed'], ['timed_out']]);
		assert.deepEqual(rep.ipc.variants.map(v => v.class), ['inconclusive', 'inconclusive', 'inconclusive'], 'one trial each: never a verdict');
		assert.equal(rep.fallback.length, 1);
		assert.equal(rep.fallback[0].results.length, 6);
		const text = renderIpcReport(rep.ipc);
		assert.match(text, /crash-test\s+inconclusive\s+C\s+crashed 1/);
		assert.throws(() => reportsFromDeviceJson({}), /expected a JSON array/);
	});
});
