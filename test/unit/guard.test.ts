/**
 * The guard's TypeScript half without running anything: the rank-report parser and the merge against REAL reports
 * (test-fixtures/guard/, captured by capture.sh from guard_demo under real Open MPI / MPICH; the IPC ones with the fake
 * CUDA driver, as its README says), damaged and missing reports, hostile strings from a binary's symbol table, the
 * launcher forwarding, and `gpumpi-doctor guard` usage errors (exit 125, the guard's own failure: nothing started). The real runs of the command
 * are in test/engine/guardCli.test.ts.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { guardMain, parseGuardArgs, renderGuardText } from '../../extension/cli/guardCli';
import { mergeGuardReports, printable, type GuardMergeInput, type GuardReportFile } from '../../extension/core/guard/guardMerge';
import { parseGuardReport, siteText, validateStageDetail } from '../../extension/core/parsers/guardReport';
import { gpuBufferCalls, guardInspectionReport, guardResult } from '../../extension/core/guard/guardResult';
import { forwardVariables, launcherKind, ranksAsked, splitArgLine } from '../../extension/core/guard/guardRunner';
import { validateMapDocument } from '../../extension/shared/mapSchema';
import { loadMapText } from '../../extension/core/map/mapFile';
import { captureIo } from './cli/captureIo';
import { withSpawnSpy } from './cli/spawnSpy';

const FIX = path.resolve(process.cwd(), 'test-fixtures', 'guard');

function fixture(name: string): GuardReportFile[] {
	const dir = path.join(FIX, name);
	return fs.readdirSync(dir).filter(f => f.endsWith('.json')).sort().map(f => ({ name: f, text: fs.readFileSync(path.join(dir, f), 'utf8') }));
}
function input(files: GuardReportFile[], over: Partial<GuardMergeInput> = {}): GuardMergeInput {
	return { files, expectedRanks: null, exitCode: 0, signal: null, userCommand: ['mpirun', '-np', '2', './guard_demo'], where: 'this machine', mode: 'report', ...over };
}
const ids = (m: ReturnType<typeof mergeGuardReports>): string[] => m.findings.map(f => f.id);

describe('guard report parser (real reports)', () => {
	for (const dir of fs.readdirSync(FIX).filter(d => fs.statSync(path.join(FIX, d)).isDirectory())) {
		it(`${dir}: every rank's report validates`, () => {
			const files = fixture(dir);
			assert.ok(files.length >= 2);
			for (const f of files) {
				const p = parseGuardReport(f.text);
				assert.ok(p.ok, `${dir}/${f.name}: ${p.ok ? '' : p.error}`);
				assert.equal(`rank${p.report.rank}.json`, f.name);
				assert.ok(p.report.calls.length > 0 && p.report.peers.length > 0);
			}
		});
	}

	it('damaged files are values naming the problem, not exceptions', () => {
		const good = JSON.parse(fixture('openmpi-demo')[0].text);
		const cases: Array<[string, RegExp]> = [
			['', /empty file/],
			['{"schema":"gpumpi-guard-rank/1",', /not JSON/],
			[fixture('openmpi-demo')[0].text.slice(0, 200), /not JSON/],
			[JSON.stringify({ ...good, schema: 'gpumpi-guard-rank/2' }), /schema is "gpumpi-guard-rank\/2"/],
			[JSON.stringify({ ...good, rank: 5 }), /rank 5 is not below size 2/],
			[JSON.stringify({ ...good, peers: [{ ...good.peers[0], sentBytes: -1 }] }), /peers\[0\]\.sentBytes is not a whole number/],
			[JSON.stringify({ ...good, peers: [{ ...good.peers[0], peer: 9 }] }), /peers\[0\]\.peer 9 is not below size 2/],
			[JSON.stringify({ ...good, calls: 'x' }), /calls is not an array/],
			['[1,2]', /report is not an object/],
		];
		for (const [text, re] of cases) {
			const p = parseGuardReport(text);
			assert.equal(p.ok, false, text.slice(0, 60));
			assert.match(p.ok ? '' : p.error, re);
		}
	});

	it('siteText: symbol+offset, else object+offset with the address', () => {
		assert.equal(siteText({ address: '0x55d0', symbol: 'main', object: '/abs/app', offset: '0x1a2b' }), 'app main+0x1a2b');
		assert.equal(siteText({ address: '0x55d0', symbol: null, object: '/abs/guard_demo', offset: '0x33a3' }), 'guard_demo+0x33a3 (0x55d0)');
		assert.equal(siteText(null), 'unknown call site');
	});
});

describe('guard merge (real reports)', () => {
	it('Open MPI guard_demo, 2 ranks: exact per-pair counts, no danger, the unsupported call listed, a valid traffic map', () => {
		const m = mergeGuardReports(input(fixture('openmpi-demo'), { expectedRanks: 2 }));
		assert.equal(m.reports.length, 2);
		assert.deepEqual(m.missingRanks, []);
		// guard_demo's fixed pattern (native/examples/guard_demo.c): 13 messages, 1840 bytes each way
		assert.deepEqual(m.traffic.map(t => [t.a, t.b, t.calls, t.bytes, t.largestMessage, t.path]), [[0, 1, 13, 1840, 400, 'host-only'], [1, 0, 13, 1840, 400, 'host-only']]);
		assert.equal(m.totals.p2pMessages, 26);
		assert.equal(m.totals.p2pBytes, 3680);
		assert.equal(m.totals.dangerKinds, 0);
		assert.equal(m.calls.find(c => c.name === 'MPI_Send')?.count, 4);
		assert.deepEqual(ids(m), ['guard-unsupported-calls', 'guard-no-dangers']);
		assert.match(m.findings[0].message, /MPI_Sendrecv_replace ×2/);
		assert.match(m.verdict, /^gpumpi-guard \(report\): no dangerous GPU-buffer call — \d+ MPI calls, 26 point-to-point messages \(3\.7 kB\); 2 ranks reported; program exit code 0$/);
		const doc = validateMapDocument(JSON.parse(JSON.stringify(m.map)));
		assert.notEqual(typeof doc, 'string', String(doc));
		assert.equal(m.map?.pairs.length, 1);
		assert.deepEqual(m.map?.pairs[0].traffic && [m.map.pairs[0].traffic.bytes_ab, m.map.pairs[0].traffic.bytes_ba, m.map.pairs[0].class], [1840, 1840, 'host_memory']);
	});

	it('MPICH gives the same counts for the same program', () => {
		const a = mergeGuardReports(input(fixture('openmpi-demo')));
		const b = mergeGuardReports(input(fixture('mpich-demo')));
		assert.deepEqual(b.traffic.map(t => [t.a, t.b, t.calls, t.bytes]), a.traffic.map(t => [t.a, t.b, t.calls, t.bytes]));
	});

	it('IPC scenario (fake driver), report mode: the ipc-import danger is an error with both importers, their call site and the fix-mode command', () => {
		const m = mergeGuardReports(input(fixture('openmpi-ipc-report'), { userCommand: ['mpirun', '-np', '4', './guard_demo', '--ipc'] }));
		const f = m.findings.find(x => x.id === 'guard-ipc-import-ucx-cuda-ipc');
		assert.ok(f, ids(m).join());
		assert.equal(f.severity, 'error');
		assert.match(f.message, /^2 calls \(2\.1 MB\) on ranks 1, 3, first at guard_demo\+0x[0-9a-f]+\. buffer /, 'one site for both ranks (ASLR addresses left out)');
		assert.equal(f.evidence.length, 2);
		assert.match(f.evidence[0].line, /^rank 1 \(.+\): MPI_Irecv from rank 2 ×1, 1048576 bytes, first at guard_demo\+0x[0-9a-f]+ \(0x[0-9a-f]+\), action none$/);
		assert.equal(f.fix?.command, 'gpumpi-doctor guard --mode fix -- mpirun -np 4 ./guard_demo --ipc');
		const withOpts = mergeGuardReports(input(fixture('openmpi-ipc-report'), { userCommand: ['mpirun', './a b'], guardOptions: ['--preset', 'UCX_TLS=^cuda_ipc', '--mode', 'warn', '--json'] }));
		assert.equal(withOpts.findings.find(x => x.id === 'guard-ipc-import-ucx-cuda-ipc')?.fix?.command, "gpumpi-doctor guard --mode fix --preset 'UCX_TLS=^cuda_ipc' -- mpirun './a b'");
		assert.ok(f.sources?.every(s => /^(https:\/\/|docs\/[\w-]+\.md#)/.test(s.url)));
		for (const s of f.sources ?? []) {
			if (s.url.startsWith('docs/')) { assert.ok(fs.existsSync(path.join(FIX, '..', '..', s.url.split('#')[0])), s.url); }
		}
		assert.match(m.verdict, /4 dangerous calls of 2 kinds; not fixed: .*MPI call on a CUDA-IPC-imported buffer under UCX/);
		// map: the import pairs carry device / ipc-import classes; the MPI here is not CUDA-aware
		const pair = m.map?.pairs.find(p => p.a === 0 && p.b === 3);
		assert.equal(pair?.class, 'not_cuda_aware');
		assert.equal(pair?.traffic?.buffer_classes.device, 1);
	});

	it('IPC scenario, fix mode: the same danger is info, bounced, no fix offered', () => {
		const m = mergeGuardReports(input(fixture('openmpi-ipc-fix'), { mode: 'fix' }));
		const f = m.findings.find(x => x.id === 'guard-ipc-import-ucx-cuda-ipc');
		assert.equal(f?.severity, 'info');
		assert.match(f?.title ?? '', /fixed by the guard \(bounced\)/);
		assert.equal(f?.fix, undefined);
		assert.equal(m.totals.bounced, 2);
		assert.ok(!/MPI call on a CUDA-IPC-imported buffer/.test(m.verdict.split('—')[0]), m.verdict);
		assert.match(m.verdict, /\(2 bounced by the guard\); not fixed: GPU buffer passed to an MPI that is not CUDA-aware/);
	});

	it('a rank with no report is a finding naming it and the exit code; its traffic is counted from the peer', () => {
		const files = fixture('openmpi-ipc-report').filter(f => f.name !== 'rank3.json');
		const m = mergeGuardReports(input(files, { exitCode: 137 }));
		assert.deepEqual(m.missingRanks, [3]);
		const f = m.findings.find(x => x.id === 'guard-missing-reports');
		assert.equal(f?.severity, 'error');
		assert.match(f?.message ?? '', /^No report from 1 of 4 ranks \(rank 3\): it may have crashed before MPI_Finalize.*exit code 137/);
		assert.ok(ids(m).includes('guard-program-failed'));
		// 0 → 3 from rank 0's sends; 3's own sends (none in this pattern) unknown
		assert.deepEqual(m.traffic.filter(t => t.b === 3).map(t => [t.a, t.bytes]), [[0, 1048576], [2, 68]]);
	});

	it('no report at all, damaged files, duplicate ranks, unfinalized ranks: findings, never dropped', () => {
		assert.deepEqual(ids(mergeGuardReports(input([], { expectedRanks: 4, exitCode: 1 }))), ['guard-program-failed', 'guard-no-report']);
		const good = fixture('openmpi-demo');
		const m = mergeGuardReports(input([...good, { name: 'guard-x.json', text: '{"schema": ' }, { name: 'dup.json', text: good[0].text }]));
		assert.deepEqual(m.findings.filter(f => f.id === 'guard-report-damaged').map(f => f.evidence[0].source), ['guard-x.json', 'dup.json']);
		const nf = mergeGuardReports(input(fixture('openmpi-nofinalize'), { exitCode: 1 }));
		assert.ok(ids(nf).includes('guard-not-finalized'));
		assert.equal(nf.traffic[0].bytes, 1840);
	});

	it('hostile strings from the binary (symbol, object, host) reach findings, map and text escaped', () => {
		const rep = JSON.parse(fixture('openmpi-ipc-report')[1].text);
		rep.host = 'node\u001b[31m1';
		rep.dangers[0].firstSite = { address: '0x1', symbol: 'evil\u001b]0;pwned\u0007<script>alert(1)</script>\u202e', object: '/tmp/a\nb', offset: '0x2' };
		const files = [...fixture('openmpi-ipc-report').filter(f => f.name !== 'rank1.json'), { name: 'rank1.json', text: JSON.stringify(rep) }];
		const m = mergeGuardReports(input(files));
		const strings = (v: unknown): string[] => typeof v === 'string' ? [v] : Array.isArray(v) ? v.flatMap(strings) : v && typeof v === 'object' ? Object.values(v).flatMap(strings) : [];
		const all = strings([m.findings, m.map]);
		assert.ok(all.some(x => x.includes('evil')), 'the symbol is shown');
		assert.deepEqual(all.filter(x => /[\u0000-\u001f\u202e]/.test(x)), [], 'no raw control character');
		const f = m.findings.find(x => x.id === 'guard-ipc-import-ucx-cuda-ipc');
		assert.match(f?.evidence.find(e => e.line.startsWith('rank 1'))?.line ?? '', /rank 1 \(node\\u001b\[31m1\): .*evil\\u001b\]0;pwned\\u0007<script>/);
		assert.equal(m.map?.ranks.find(r => r.rank === 1)?.host, 'node\\u001b[31m1');
		const text = renderGuardText(guardResult({ version: 't', where: 'here', mode: 'report', flavor: 'openmpi', guardLib: '/g.so', command: ['a'],
			outcome: { argv: ['a'], how: 'alone', result: { exitCode: 0, signal: null, stdout: '', stderr: '', timedOut: false, durationMs: 1 }, files, expectedRanks: 4, reportDir: '/tmp/x', notes: [] }, merge: m }));
		assert.ok(!/[\u001b\u0007\u202e]/.test(text), 'text output carries no terminal control');
		// the saved result opens in the map panel (Open JSON…, map --from-json) as its traffic map
		const saved = guardResult({ version: 't', where: 'here', mode: 'report', flavor: 'openmpi', guardLib: '/g.so', command: ['a'],
			outcome: { argv: ['a'], how: 'alone', result: { exitCode: 0, signal: null, stdout: '', stderr: '', timedOut: false, durationMs: 1 }, files, expectedRanks: 4, reportDir: '/tmp/x', notes: [] }, merge: m });
		const loaded = loadMapText(JSON.stringify(saved));
		assert.equal(loaded.kind, 'map');
		assert.equal(loaded.kind === 'map' ? loaded.doc.traffic_source : '', 'gpumpi-guard');
		assert.equal(loadMapText(JSON.stringify({ ...saved, map: null })).kind, 'invalid');
		assert.equal(printable('a\u0000b'), 'a\\u0000b');
	});
});

describe('guard launcher forwarding', () => {
	const vars: Array<[string, string]> = [['LD_PRELOAD', '/x/libgpumpi_guard.so'], ['GPUMPI_GUARD', 'fix']];
	it('inserts the options right after the launcher word, per launcher', () => {
		assert.deepEqual(forwardVariables(['mpirun', '-np', '2', './a'], 'mpirun', 'openmpi', vars), ['mpirun', '-x', 'LD_PRELOAD=/x/libgpumpi_guard.so', '-x', 'GPUMPI_GUARD=fix', '-np', '2', './a']);
		assert.deepEqual(forwardVariables(['mpiexec.hydra', '-n', '2', './a'], 'mpirun', 'mpich', vars), ['mpiexec.hydra', '-genv', 'LD_PRELOAD', '/x/libgpumpi_guard.so', '-genv', 'GPUMPI_GUARD', 'fix', '-n', '2', './a']);
		assert.deepEqual(forwardVariables(['srun', '-n2', './a'], 'srun', 'openmpi', vars), ['srun', '--export=ALL,LD_PRELOAD=/x/libgpumpi_guard.so,GPUMPI_GUARD=fix', '-n2', './a']);
		assert.throws(() => forwardVariables(['srun', './a'], 'srun', 'mpich', [['GPUMPI_GUARD_DIR', '/a,b']]), /comma/);
	});
	it('tells launchers from programs and reads the rank count', () => {
		assert.deepEqual(['mpirun', '/usr/bin/mpirun.openmpi', 'mpiexec.hydra', 'srun', './mpirun-wrapper', 'app', 'prterun'].map(w => launcherKind([w])), ['mpirun', 'mpirun', 'mpirun', 'srun', null, null, 'mpirun']);
		assert.deepEqual([['mpirun', '-np', '4', 'a'], ['mpiexec', '-n', '3'], ['srun', '-n8'], ['srun', '--ntasks=6'], ['mpirun', 'a', '-np'], ['mpirun', '-np', 'x']].map(ranksAsked), [4, 3, 8, 6, null, null]);
	});
});

describe('guard argument line (VS Code command)', () => {
	it('splits like a shell, expands nothing, refuses unclosed quotes', () => {
		assert.deepEqual(splitArgLine(`  -n 5 --name 'a b' "c \\"d\\"" e\\ f $HOME * \`id\` ; `), ['-n', '5', '--name', 'a b', 'c "d"', 'e f', '$HOME', '*', '`id`', ';']);
		assert.deepEqual(splitArgLine(''), []);
		assert.deepEqual(splitArgLine(`''`), ['']);
		assert.equal(splitArgLine(`'open`), "unclosed ' quote");
		assert.equal(splitArgLine('a\u0000b'), 'the arguments have a NUL character');
	});
});

describe('gpumpi-doctor guard usage', () => {
	it('parses a launcher command and the options before --', () => {
		const o = parseGuardArgs(['--mode', 'fix', '--json', '--', 'mpirun.mpich', '-np', '2', './app', '--mode', 'x']);
		assert.equal(o.mode, 'fix');
		assert.deepEqual(o.command, ['mpirun.mpich', '-np', '2', './app', '--mode', 'x']);
		assert.equal(o.mpirun, 'mpirun.mpich');
	});
	it('usage errors exit 125 (the guard\'s own code, never a program\'s 2) with a message and start nothing', async () => {
		for (const [argv, re] of [
			[[], /no command to run/], [['--'], /no command to run/], [['./app'], /put the command after --/],
			[['--mode', 'repor', '--', 'a'], /--mode needs report, warn or fix, got "repor"/], [['--np', '0', '--', 'a'], /--np needs an integer 1\.\.4096/],
			[['--np', '2', '--', 'mpirun', 'a'], /is a launcher/], [['--srun', '--', 'a'], /--srun needs --np/],
			[['--report-dir', 'rel', '--', 'a'], /absolute/], [['--setup', 'x', '--', 'a'], /--setup and --ssh-config need --host/],
			[['--host', '-oProxyCommand=x', '--', 'a'], /--host/], [['--preset', 'bad', '--', 'a'], /--preset needs NAME=VALUE/],
			[['--mca', 'pml', 'ob1', '--', 'a'], /not an option of guard/], [['--out', '', '--', 'a'], /--out needs a file name/],
		] as Array<[string[], RegExp]>) {
			const io = captureIo('/tmp');
			const { value: code, spawned } = await withSpawnSpy(() => guardMain(argv, io));
			assert.equal(code, 125, `${JSON.stringify(argv)}: ${io.err}`);
			assert.match(io.err, re, JSON.stringify(argv));
			assert.equal(io.out, '');
			assert.deepEqual(spawned, []);
		}
	});
});

describe('guard: a mixed launch (a real off report, test-fixtures/guard-mixed)', () => {
	const text = fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures', 'guard-mixed', 'openmpi-mixed-rank0.json'), 'utf8');
	it('the parser reads mode "off" and the reason', () => {
		const p = parseGuardReport(text);
		assert.ok(p.ok, p.ok ? '' : p.error);
		assert.equal(p.report.mode, 'off');
		assert.match(p.report.off ?? '', /^only 1 of 2 ranks showed the guard/);
		const bad = parseGuardReport(text.replace(/"off":"[^"]*"/, '"off":5'));
		assert.deepEqual(bad, { ok: false, error: 'off is not a string' });
	});
	it('the merge: guard-off-at-init (error, evidence the reason) and the silent rank counted as missing', () => {
		const m = mergeGuardReports(input([{ name: 'guard-vm-1.json', text }], { expectedRanks: 2 }));
		const f = m.findings.find(x => x.id === 'guard-off-at-init');
		assert.ok(f, ids(m).join(','));
		assert.equal(f.severity, 'error');
		assert.match(f.evidence?.[0]?.line ?? '', /rank 0 \(.*\): "off": only 1 of 2 ranks/);
		assert.deepEqual(m.missingRanks, [1]);
		assert.doesNotMatch(m.verdict, /no danger/i);
	});
});

describe('guard: STAGE in the merge (real reports, test-fixtures/guard/openmpi-stage*, and the H200 capture)', () => {
	const stageInput = (name: string): GuardMergeInput => input(fixture(name), { expectedRanks: 2, userCommand: ['mpirun', '-np', '2', './guard_stage'] });
	it('the parser reads stageAsked / stageAgreed / stageDetail; a damaged stageDetail names its field', () => {
		const f = fixture('openmpi-stage');
		const p = parseGuardReport(f[0].text);
		assert.ok(p.ok, p.ok ? '' : p.error);
		assert.equal(p.report.stageAsked, true);
		assert.equal(p.report.stageAgreed, true);
		assert.equal(p.report.stageRanks, 2);
		assert.ok(p.report.stageDetail);
		assert.deepEqual(p.report.stageDetail.stagedPeers, [1 - p.report.rank]);
		const raw = JSON.parse(f[0].text);
		raw.stageDetail.peers[0].sentBytes = -1;
		assert.deepEqual(parseGuardReport(JSON.stringify(raw)), { ok: false, error: 'stageDetail.peers[0].sentBytes is not a whole number ≥ 0 (-1)' });
		raw.stageDetail.peers[0].sentBytes = 0;
		raw.stageDetail.stagedPeers = [7];
		assert.deepEqual(parseGuardReport(JSON.stringify(raw)), { ok: false, error: 'stageDetail.stagedPeers[0] 7 is not below size 2' });
		const old = JSON.parse(f[0].text);
		delete old.stageAsked; delete old.stageAgreed; delete old.stageRanks; delete old.stageDetail;
		const po = parseGuardReport(JSON.stringify(old));
		assert.ok(po.ok && po.report.stageDetail === null && !po.report.stageAsked, 'a report of an older guard still reads');
	});
	it('STAGE active: guard-stage (info) with the exact staged count and bytes per rank, the staging held, in the totals and the verdict', () => {
		const m = mergeGuardReports(stageInput('openmpi-stage'));
		const f = m.findings.find(x => x.id === 'guard-stage');
		assert.ok(f, ids(m).join(','));
		assert.equal(f.severity, 'info');
		// guard_stage's 9 device messages of 2 MiB from rank 0 to rank 1 (test/engine/guardStage.test.ts checks the same counts live)
		assert.equal(m.totals.stagedMessages, 9);
		assert.equal(m.totals.stagedBytes, 9 * 2097152);
		assert.equal(f.title, 'STAGE moved 9 device messages (18.9 MB) through bounded staging');
		assert.match(f.message, /bounded by the staging each rank holds \(at most 67\.1 MB, 16\.8 MB × 4 buffers per staged peer\)/);
		assert.match(f.evidence[0].line, /^rank 0: staged peers \[1\], sent 9 to rank 1 \(18\.9 MB\), received none, staging held 67\.1 MB \(16\.8 MB × 4\)$/);
		assert.match(f.evidence[1].line, /^rank 1: staged peers \[0\], sent none, received 9 from rank 0 \(18\.9 MB\)/);
		assert.match(m.verdict, /, 9 staged \(18\.9 MB\);/);
		assert.equal(m.findings.find(x => x.id === 'guard-stage-refused'), undefined);
	});
	it('threshold above the message size: STAGE on, the peer host-staged, nothing staged, said so', () => {
		const m = mergeGuardReports(stageInput('openmpi-stage-min'));
		const f = m.findings.find(x => x.id === 'guard-stage');
		assert.ok(f, ids(m).join(','));
		assert.equal(f.title, 'STAGE was on; no device message large enough went to a staged peer');
		assert.equal(m.totals.stagedMessages, 0);
		assert.doesNotMatch(m.verdict, /staged/);
	});
	it('refused messages (a real report with its refused counts raised, as the guard writes them for MPI_Ssend): guard-stage-refused names each reason', () => {
		const files = fixture('openmpi-stage').map(x => {
			const r = JSON.parse(x.text);
			if (r.rank === 0) { r.stageDetail.refused['send-mode'] = 3; }
			return { name: x.name, text: JSON.stringify(r) };
		});
		const m = mergeGuardReports({ ...stageInput('openmpi-stage'), files });
		const f = m.findings.find(x => x.id === 'guard-stage-refused');
		assert.ok(f, ids(m).join(','));
		assert.equal(f.severity, 'warning');
		assert.match(f.message, /send-mode ×3/);
		assert.match(f.evidence[0].line, /^rank 0: stageDetail\.refused send-mode 3, persistent 0, non-contiguous 0$/);
	});
	it('asked on one rank only: guard-stage-not-agreed (what the guard writes on a mixed launch: stageAgreed false, no stageDetail)', () => {
		const files = fixture('openmpi-stage').map(x => {
			const r = JSON.parse(x.text);
			r.stageAgreed = false; r.stage = false; r.stageRanks = 1; delete r.stageDetail;
			if (r.rank === 1) { r.stageAsked = false; }
			return { name: x.name, text: JSON.stringify(r) };
		});
		const m = mergeGuardReports({ ...stageInput('openmpi-stage'), files });
		const f = m.findings.find(x => x.id === 'guard-stage-not-agreed');
		assert.ok(f, ids(m).join(','));
		assert.equal(f.title, 'STAGE was asked on 1 of 2 ranks: off everywhere');
		assert.equal(m.findings.find(x => x.id === 'guard-stage'), undefined);
	});
	it('the H200 capture (guard-stage-2026-12-04.json, STAGE config): every rank\'s stageDetail validates, 5 x 1 GiB + the 1 MiB warm-up staged per launch from rank 0', () => {
		const cap = JSON.parse(fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures', 'guard-stage', 'h200-testbed', 'guard-stage-2026-12-04.json'), 'utf8'));
		const stage = cap.configs.find((c: { name: string }) => c.name === 'stage');
		assert.ok(stage.trials.length >= 5);
		for (const t of stage.trials) {
			for (const r of t.reports) {
				const v = validateStageDetail(r.stageDetail, 2);
				assert.ok(v.ok && v.detail, v.ok ? 'no detail' : v.error);
				if (r.rank === 0) { assert.deepEqual(v.detail.peers.map(p => [p.peer, p.sentMessages, p.sentBytes]), [[1, 6, 5 * 1073741824 + 1048576]], 'the 5 timed 1 GiB messages and the 1 MiB warm-up'); }
				assert.equal(v.detail.stagingBytes, 67108864);
			}
		}
	});
});

describe('guard on programs it was not written for (real H100 captures, test-fixtures/guard-foreign)', () => {
	const FOREIGN = path.resolve(process.cwd(), 'test-fixtures', 'guard-foreign', 'h100-testbed');
	const files = (name: string): GuardReportFile[] => fs.readdirSync(path.join(FOREIGN, name)).filter(f => f.endsWith('.json')).sort()
		.map(f => ({ name: f, text: fs.readFileSync(path.join(FOREIGN, name, f), 'utf8') }));
	const cmd = ['mpirun', '-np', '4', './gpu_send', '--alloc', 'ipc'];

	it('static-cudart IPC import, report mode: the import is named from the driver and UCX memory-type-cache miss is an error with the fix-mode command', () => {
		const m = mergeGuardReports(input(files('ipc-report'), { userCommand: cmd, exitCode: 134, expectedRanks: 4 }));
		const miss = m.findings.find(f => f.id === 'guard-ucx-memtype-cache-miss');
		assert.ok(miss, ids(m).join(','));
		assert.equal(miss.severity, 'error');
		assert.equal(miss.fix?.command, 'gpumpi-doctor guard --mode fix -- mpirun -np 4 ./gpu_send --alloc ipc');
		assert.ok(miss.evidence?.some(e => /rank 1 .*MPI_Irecv from rank 2/.test(e.line ?? '')), JSON.stringify(miss.evidence));
		const imp = m.findings.find(f => f.id === 'guard-ipc-import-ucx-cuda-ipc');
		assert.equal(imp?.severity, 'error');
		assert.ok(!ids(m).includes('guard-pool-or-vmm-legacy-ipc'), 'a static-cudart import is not called vmm');
	});

	it('fix mode: told-ucx and bounced count as fixed (info), the program succeeded', () => {
		const m = mergeGuardReports(input(files('ipc-fix'), { userCommand: cmd, mode: 'fix', expectedRanks: 4 }));
		const miss = m.findings.find(f => f.id === 'guard-ucx-memtype-cache-miss');
		assert.equal(miss?.severity, 'info');
		assert.match(miss?.title ?? '', /fixed by the guard \(told-ucx\)/);
		assert.match(miss?.message ?? '', /told UCX's memory-type cache/);
		assert.equal(m.findings.find(f => f.id === 'guard-ipc-import-ucx-cuda-ipc')?.severity, 'info');
		assert.ok(!ids(m).includes('guard-program-failed'));
	});

	it('pool memory to a same-host GPU peer: the fix offered is fix mode (measured), not UCX_TLS=^cuda_ipc; bounced under fix', () => {
		const r = mergeGuardReports(input(files('pool-report'), { userCommand: ['mpirun', '-np', '2', './gpu_send', '--alloc', 'pool'] }));
		const f = r.findings.find(x => x.id === 'guard-pool-or-vmm-legacy-ipc');
		assert.equal(f?.severity, 'warning');
		assert.equal(f?.fix?.command, 'gpumpi-doctor guard --mode fix -- mpirun -np 2 ./gpu_send --alloc pool');
		const fx = mergeGuardReports(input(files('pool-fix'), { userCommand: ['mpirun', '-np', '2', './gpu_send', '--alloc', 'pool'], mode: 'fix' }));
		assert.match(fx.findings.find(x => x.id === 'guard-pool-or-vmm-legacy-ipc')?.title ?? '', /fixed by the guard \(bounced\)/);
	});

	it('every rank report carries what the guard did with UCX memory-type cache', () => {
		for (const d of ['ipc-report', 'ipc-fix', 'pool-report', 'pool-fix']) {
			for (const f of files(d)) {
				const p = parseGuardReport(f.text);
				assert.ok(p.ok, `${d}/${f.name}`);
				const raw = JSON.parse(f.text);
				assert.equal(raw.ucxMemtypeCache.state, 'replayed');
				assert.equal(raw.ucxMemtypeCache.ucx, '1.13.1');
				assert.ok(raw.ucxMemtypeCache.replayedRegions > 0);
			}
		}
	});
});

describe('a Fortran program under Open MPI bypasses the guard, and the result says so (real capture, Debian Open MPI 4.1.4)', () => {
	const dir = path.resolve(process.cwd(), 'test-fixtures', 'guard-foreign', 'debian12-openmpi-fortran');
	const files = fs.readdirSync(dir).filter(f => f.endsWith('.json')).sort().map(f => ({ name: f, text: fs.readFileSync(path.join(dir, f), 'utf8') }));

	it('every rank wrote an off report naming libmpi_mpifh; the merge gives guard-bypassed (not a mixed launch) and a "not observed" verdict', () => {
		for (const f of files) {
			const p = parseGuardReport(f.text);
			assert.ok(p.ok, f.name);
			assert.equal(p.report.mode, 'off');
			assert.match(p.report.off ?? '', /libmpi_mpifh\.so\.\d+ is loaded: Open MPI's Fortran bindings call PMPI_\* directly/);
		}
		const m = mergeGuardReports(input(files, { userCommand: ['mpirun', '-np', '2', './f_send'], expectedRanks: 2 }));
		assert.ok(ids(m).includes('guard-bypassed'), ids(m).join(','));
		assert.ok(!ids(m).includes('guard-off-at-init'), 'a bypass is not a mixed launch');
		assert.match(m.verdict, /not observed: the program's mpi calls bypassed the guard on 2 ranks/);
		assert.doesNotMatch(m.verdict, /mixed launch/);
	});
});

describe('the guard result\'s headline claims only what the run saw (real reports)', () => {
	const result = (name: string, mode = 'report') => {
		const files = name.includes('/') ? fs.readdirSync(path.resolve(process.cwd(), 'test-fixtures', name)).filter(f => f.endsWith('.json')).sort()
			.map(f => ({ name: f, text: fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures', name, f), 'utf8') })) : fixture(name);
		const merge = mergeGuardReports(input(files, { mode }));
		return guardResult({ version: 't', where: 'here', mode: 'report', flavor: 'openmpi', guardLib: '/g.so', command: ['a'],
			outcome: { argv: ['a'], how: 'alone', result: { exitCode: 0, signal: null, stdout: '', stderr: '', timedOut: false, durationMs: 1 }, files, expectedRanks: null, reportDir: '/tmp/x', notes: [] }, merge });
	};
	const host = { id: '$local', label: 'this machine', kind: 'local' as const };
	it('a host-buffer program (guard_demo, no CUDA loaded) is "not checked", never "works"', () => {
		const r = result('openmpi-demo');
		assert.equal(gpuBufferCalls(r), 0);
		const h = guardInspectionReport(r, host, { stdout: '', stderr: '' }).headline;
		assert.equal(h?.verdict, 'not-checked');
		assert.match(h?.text ?? '', /No GPU buffer was passed to MPI in this run/);
	});
	it('GPU buffers with every danger fixed are "works" (H100, fix mode); an IPC import under cuda_ipc "fails"', () => {
		const fixed = result('guard-foreign/h100-testbed/ipc-fix', 'fix');
		assert.ok(gpuBufferCalls(fixed) > 0, 'the run sent GPU buffers');
		assert.deepEqual(fixed.findings.filter(f => f.severity !== 'info').map(f => f.id), []);
		assert.equal(guardInspectionReport(fixed, host, { stdout: '', stderr: '' }).headline?.verdict, 'works');
		const ipc = result('openmpi-ipc-report');
		assert.equal(guardInspectionReport(ipc, host, { stdout: '', stderr: '' }).headline?.verdict, 'fails');
	});
});
