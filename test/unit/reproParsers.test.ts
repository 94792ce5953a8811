/**
 * The parsers of a launched run's output (core/launch/launcherOutput.ts, core/parsers/transportLines.ts,
 * core/parsers/framedDocument.ts) on REAL captured output (test-fixtures/repro/, see its README for the exact commands):
 * marker-wrapped JSON amid UCX log lines, UCX lanes and protocol tables, Open MPI bml lines, Open MPI and MPICH
 * crash reports; plus hostile / damaged input.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { RANK_LINE_MARKER, validateFallbackDocument, validateIpcDocument } from '../../extension/shared/reproSchema';
import { crashedHow, crashedWho, detectCrash, detectLaunchFailure, interestingLines, parseRankLines } from '../../extension/core/launch/launcherOutput';
import { extractJsonDocument } from '../../extension/core/parsers/framedDocument';
import { gatherTransportEvidence, parseBmlLines, parseUcxLanes, parseUcxProtoInfo } from '../../extension/core/parsers/transportLines';

const DIR = path.resolve(process.cwd(), 'test-fixtures', 'repro');
function fx(name: string): string { return fs.readFileSync(path.join(DIR, name), 'utf8'); }

describe('repro parsers: engine JSON between markers', () => {
	it('extracts the IPC document from stdout mixed with UCX info lines', () => {
		const ex = extractJsonDocument(fx('ompi-ucx-ipc-direct.stdout'));
		assert.ok('json' in ex, 'error' in ex ? ex.error : '');
		const doc = validateIpcDocument(ex.json);
		assert.ok(typeof doc !== 'string', String(doc));
		assert.equal(doc.outcome, 'correct');
		assert.equal(doc.ranks.length, 4);
		assert.equal(doc.memory, 'host');
		assert.match(doc.gpu_unavailable_reason ?? '', /libcuda\.so\.1/);
		assert.deepEqual(doc.ranks.filter(r => r.verified).map(r => r.rank), [0, 2]);
	});

	it('extracts the fallback document amid UCX_PROTO_INFO tables', () => {
		const ex = extractJsonDocument(fx('ompi-ucx-proto-fallback.stdout'));
		assert.ok('json' in ex);
		const doc = validateFallbackDocument(ex.json);
		assert.ok(typeof doc !== 'string', String(doc));
		assert.equal(doc.results.length, 6);  // 2 sizes x 3 modes
		assert.ok(doc.results.every(r => r.status === 'ok' && r.verified.wrong === 0));
	});

	it('reports a missing, unterminated or broken document instead of throwing', () => {
		const crash = extractJsonDocument(fx('ompi-ipc-crash.stdout') + fx('ompi-ipc-crash.stderr'));
		assert.ok('error' in crash);
		const text = fx('ompi-ucx-ipc-direct.stdout');
		const cut = extractJsonDocument(text.slice(0, text.indexOf('@@GPUMPI-JSON-END@@')));
		assert.ok('error' in cut && /without end marker/.test(cut.error));
		const broken = extractJsonDocument('@@GPUMPI-JSON-BEGIN@@\n{"schema": \n@@GPUMPI-JSON-END@@\n');
		assert.ok('error' in broken && /does not parse/.test(broken.error));
		assert.equal(typeof validateIpcDocument({ schema: 'other/1' }), 'string');
		assert.equal(typeof validateFallbackDocument([1, 2]), 'string');
	});
});

describe('repro parsers: UCX and Open MPI transport lines', () => {
	it('reads ep_cfg lanes (shared memory, self) of a 4-rank pml ucx run', () => {
		const lanes = parseUcxLanes(fx('ompi-ucx-ipc-direct.stdout'));
		assert.ok(lanes.length >= 4);
		assert.ok(lanes.every(l => l.host === 'vm' && l.pid > 0));
		const tags = lanes.flatMap(l => l.lanes.tag ?? []);
		assert.ok(tags.includes('self/memory0'));
		assert.ok(tags.includes('cma/memory'));
	});

	it('reads tcp/lo lanes when UCX_TLS=tcp,self', () => {
		const lanes = parseUcxLanes(fx('ompi-ucx-tcp-fallback.stdout'));
		assert.ok(lanes.length > 0);
		assert.ok(lanes.every(l => (l.lanes.tag ?? []).includes('tcp/lo')));
	});

	it('reads UCX_PROTO_INFO tables with their titles and ranges', () => {
		const rows = parseUcxProtoInfo(fx('ompi-ucx-proto-fallback.stdout'));
		assert.ok(rows.length > 10);
		const short = rows.find(r => r.protocol === 'eager short' && r.lanes === 'self/memory0');
		assert.ok(short);
		assert.equal(short.memoryType, 'host memory');
		assert.equal(short.fromBytes, 0);
		assert.match(short.operation, /tagged message by ucp_tag_send/);
		const rndv = rows.find(r => /rendezvous zero-copy read from remote/.test(r.protocol));
		assert.ok(rndv);
		assert.equal(rndv.toBytes, null);
		assert.equal(rndv.lanes, 'cma/memory');
	});

	it('reads Open MPI bml selection lines (btl_base_verbose 100)', () => {
		const bml = parseBmlLines(fx('ompi-ob1-btlverbose-fallback.stderr'));
		assert.deepEqual(bml.btls.sort(), ['self', 'vader']);
		assert.ok(bml.lines.every(l => l.includes('mca: bml: Using')));
	});

	it('reads MPICH ch4:ucx lanes the same way', () => {
		const ev = gatherTransportEvidence(fx('mpich-ucx-fallback.stdout'), fx('mpich-ucx-fallback.stderr'));
		assert.ok(ev.lanes.length > 0);
		assert.ok(ev.lines.length > 0);
	});

	it('keeps harmless rdmacm noise out of the interesting lines', () => {
		const lines = interestingLines(fx('ompi-ucx-ipc-direct.stdout'));
		assert.ok(!lines.some(l => /rdma_create_event_channel/.test(l)));
	});
});

describe('repro parsers: crashes', () => {
	it('Open MPI: rank and signal from "noticed that process rank 1 … exited on signal 11"', () => {
		const c = detectCrash(fx('ompi-ipc-crash.stdout'), fx('ompi-ipc-crash.stderr'), 139, null);
		assert.equal(c.crashed, true);
		assert.equal(c.rank, 1);
		assert.equal(c.signal, 11);
		assert.match(c.signalName ?? '', /Segmentation fault/);
		assert.ok(c.evidence.some(l => /exited on signal 11/.test(l)));
	});

	it('MPICH: BAD TERMINATION with the pid mapped to its rank through the engine rank lines', () => {
		const stderr = fx('mpich-ipc-crash.stderr');
		const c = detectCrash(fx('mpich-ipc-crash.stdout'), stderr, 11, null);
		assert.equal(c.crashed, true);
		assert.equal(c.signal, 11);
		assert.ok(c.pid !== null);
		assert.equal(parseRankLines(stderr).get(c.pid!)?.rank, 1);
		assert.equal(c.rank, 1);
	});

	// Real MPICH 4.0.2 Hydra output of failed 4-rank runs (test-fixtures/repro/README.md: the command and the rank that
	// really failed). Hydra's block names one process, often one it SIGKILLed itself in cleanup, and its exit string's
	// signal is the bitwise OR of all the ranks' statuses: the rank and signal must come from what does tell, or the
	// result must say that it cannot tell.
	const hydraCases: Array<{ file: string; code: number; failed: string; rank: number | null; how: string; note?: RegExp }> = [
		{ file: 'mpich-ipc-crash', code: 11, failed: 'rank 1 SIGSEGV; the block names rank 0 (code 9)', rank: 1, how: 'Segmentation fault' },
		{ file: 'mpich-hydra-segv-self', code: 11, failed: 'rank 1 SIGSEGV; the block names rank 1 (code 11)', rank: 1, how: 'Segmentation fault' },
		{ file: 'mpich-hydra-trial-segv', code: 11, failed: 'rank 1 SIGSEGV (--inject crash-fraction); block: rank 0, code 9', rank: 1, how: 'Segmentation fault' },
		{ file: 'mpich-hydra-trial-abort', code: 15, failed: 'rank 3 abort(); block: rank 0, code 9; exit string "signal 15" (6 | 9)', rank: 3, how: 'Aborted' },
		{ file: 'mpich-hydra-trial-abort-self', code: 6, failed: 'rank 3 abort(); block: rank 3, code 6', rank: 3, how: 'Aborted' },
		{ file: 'mpich-hydra-sigkill-rank1-cma', code: 15, failed: 'rank 1 SIGKILLed from outside; rank 0 then aborts in UCX (block: rank 0, code 6)', rank: 1, how: 'signal unknown', note: /rank 1 ended first/ },
		{ file: 'mpich-hydra-sigkill-rank2', code: 9, failed: 'rank 2 SIGKILLed from outside; block: rank 1, code 9', rank: null, how: 'Killed', note: /^rank unknown: Hydra reported rank 1 \(pid \d+\) ended with code 9, and it ends the ranks it cleans up with signal 9 itself$/ },
		{ file: 'mpich-hydra-sigkill-rank0', code: 9, failed: 'rank 0 SIGKILLed from outside; block: rank 0, code 9 (right, but indistinguishable)', rank: null, how: 'Killed', note: /^rank unknown: Hydra reported rank 0 / },
		{ file: 'mpich-hydra-sigkill-rank3', code: 9, failed: 'rank 3 SIGKILLed from outside; block: rank 1, code 9', rank: null, how: 'Killed', note: /^rank unknown: Hydra reported rank 1 / },
	];
	for (const h of hydraCases) {
		it(`MPICH Hydra, ${h.failed}: ${h.rank !== null ? `rank ${h.rank}` : 'rank unknown'} (${h.how})`, () => {
			const c = detectCrash(fx(`${h.file}.stdout`), fx(`${h.file}.stderr`), h.code, null);
			assert.equal(c.crashed, true);
			assert.equal(c.rank, h.rank, `${crashedWho(c)} | ${c.note}`);
			assert.equal(crashedHow(c), h.how);
			if (h.rank !== null) { assert.equal(crashedWho(c), `rank ${h.rank}`); }
			else { assert.match(crashedWho(c), /^a rank \(rank unknown: /); assert.equal(c.pid, null, 'a pid named although the rank is unknown'); }
			if (h.note) { assert.match(c.note ?? '', h.note); }
			if (h.rank !== null && c.pid !== null) { assert.equal(parseRankLines(fx(`${h.file}.stderr`)).get(c.pid)?.rank, h.rank); }
			// Never the signal 15 that no rank got.
			assert.notEqual(c.signal, 15);
		});
	}

	it('MPICH Hydra, an abort without the engine\'s own line: rank unknown, and the OR-ed "signal 15" is not reported as a signal', () => {
		const stderr = fx('mpich-hydra-trial-abort.stderr').split('\n').filter(l => !/gpumpi repro: rank \d+ now/.test(l)).join('\n');
		const c = detectCrash(fx('mpich-hydra-trial-abort.stdout'), stderr, 15, null);
		assert.equal(c.crashed, true);
		assert.equal(c.rank, null);
		assert.equal(c.signal, null);
		assert.equal(crashedHow(c), 'signal unknown');
		assert.match(c.note ?? '', /rank unknown: .*"signal 15" is the bitwise OR of all the ranks' exit statuses/);
	});

	it('MPICH Hydra with one block per process (newer Hydra\'s "RANK R PID P" / "KILLED BY SIGNAL"): the one not killed by 9 failed; all 9: rank unknown', () => {
		const block = (rank: number, sig: number, name: string): string => ['='.repeat(83), '=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES',
			`=   RANK ${rank} PID ${5490 + rank} RUNNING AT gn59`, `=   KILLED BY SIGNAL: ${sig} (${name})`, '='.repeat(83)].join('\n');
		// Written after the shape of public reports of MPICH ≥ 4.1 (not installed here), so made up, not captured.
		const one = detectCrash([block(0, 9, 'Killed'), block(1, 11, 'Segmentation fault'), block(2, 9, 'Killed')].join('\n'), '', 139, null);
		assert.equal(one.rank, 1);
		assert.equal(one.signal, 11);
		const all = detectCrash([block(0, 9, 'Killed'), block(2, 9, 'Killed')].join('\n'), '', 137, null);
		assert.equal(all.rank, null);
		assert.match(all.note ?? '', /^rank unknown: Hydra reported rank 0 \(pid 5490\) and rank 2 \(pid 5492\) ended \(codes 9, 9\)/);
		assert.equal(crashedHow(all), 'Killed');
	});

	for (const mpi of ['openmpi', 'mpich']) {
		it(`Slurm (${mpi} under srun -K1): rank 1 and signal 11 from "srun: error: host-b: task 1: Segmentation fault", not the terminated others`, () => {
			const c = detectCrash(fx(`slurm-lab/srun-${mpi}-inject-crash.stdout`), fx(`slurm-lab/srun-${mpi}-inject-crash.stderr`), 143, null);
			assert.equal(c.crashed, true);
			assert.equal(c.rank, 1);
			assert.equal(c.signal, 11);
			assert.ok(c.evidence.includes('srun: error: host-b: task 1: Segmentation fault'), c.evidence.join(' | '));
			assert.ok(!c.evidence.some(l => /tasks 2-3: Terminated/.test(l)));
		});
	}

	it('a clean run is not a crash; exit status 128+N alone is (SIGPIPE excepted), and says when no rank line was seen', () => {
		assert.equal(detectCrash(fx('ompi-ucx-ipc-direct.stdout'), fx('ompi-ucx-ipc-direct.stderr'), 0, null).crashed, false);
		const c = detectCrash('', 'garbage\n\u0000\u0007', 134, null);
		assert.equal(c.crashed, true);
		assert.equal(c.signal, 6);
		assert.ok(c.evidence.some(l => /status 134 \(128 \+ signal 6\); no rank line was seen/.test(l)), c.evidence.join(' | '));
		// The rank lines of a real run: the status is read the same, without the caveat.
		const rankLines = fx('ompi-ipc-crash.stderr').split('\n').filter(l => l.includes('@@GPUMPI-RANK@@')).join('\n');
		assert.ok(rankLines.length > 0);
		const withRanks = detectCrash('', `${rankLines}\ngarbage`, 134, null);
		assert.equal(withRanks.signal, 6);
		assert.ok(withRanks.evidence.includes('mpirun exited with status 134 (128 + signal 6)'), withRanks.evidence.join(' | '));
		// 141 = 128 + SIGPIPE: a process whose output reader was gone, after another failure; not a crash of its own.
		assert.equal(detectCrash('', 'garbage', 141, null).crashed, false);
	});

	it('launch failures (real Open MPI 4.1.4, Open MPI 5.0.7 and MPICH 4.0.2 output): the program, node and reason; their exit status is no signal', () => {
		const f = (base: string) => detectLaunchFailure(fx(`launch/${base}.stdout`), fx(`launch/${base}.stderr`));
		assert.deepEqual({ ...f('ompi-launch-missing'), evidence: undefined }, { executable: '/nonexistent/gpumpi', node: 'vm', reason: 'could not access or execute the executable', processes: 4, evidence: undefined });
		assert.deepEqual({ ...f('ompi-launch-wrongarch'), evidence: undefined }, { executable: '/tmp/cap/armbin', node: 'vm', reason: 'Exec format error', processes: 4, evidence: undefined });
		assert.deepEqual({ ...f('mpich-launch-missing'), evidence: undefined }, { executable: '/nonexistent/gpumpi', node: 'vm', reason: 'No such file or directory', processes: null, evidence: undefined });
		assert.equal(f('mpich-launch-noperm')?.reason, 'Permission denied');
		assert.ok(f('ompi-launch-missing')!.evidence.includes('4 total processes failed to start'));
		assert.deepEqual({ ...f('ompi5-launch-missing'), evidence: undefined }, { executable: '/nonexistent/gpumpi', node: 'vm', reason: 'in its words "lacked permissions to execute an executable", which Open MPI 5 also says of a file that does not exist', processes: null, evidence: undefined });
		assert.deepEqual(f('ompi5-launch-noperm')!.evidence, ['prterun was unable to launch the specified application as it lacked', 'permissions to execute an executable:', 'Executable: /tmp/t644', 'Node: vm']);
		assert.equal(f('ompi5-launch-wrongarch'), null, 'PRRTE says nothing of a launch failure there, only of a SIGPIPE');
		const root = f('ompi-launch-root');
		assert.equal(root?.rootRefused, true);
		assert.match(root?.reason ?? '', /^mpirun\.openmpi refuses to run as root unless given --allow-run-as-root or OMPI_ALLOW_RUN_AS_ROOT=1 with OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1$/);
		assert.equal(root?.evidence[0], 'mpirun.openmpi has detected an attempt to run as root.');
		assert.equal(f('ompi-launch-missing')?.rootRefused, undefined);
		for (const [base, code] of [['ompi-launch-missing', 132], ['ompi-launch-noperm', 132], ['ompi-launch-wrongarch', 131], ['mpich-launch-missing-silent', 141],
			['ompi5-launch-missing', 183], ['ompi5-launch-noperm', 183], ['ompi5-launch-wrongarch', 141]] as const) {
			assert.equal(detectCrash(fx(`launch/${base}.stdout`), fx(`launch/${base}.stderr`), code, null).crashed, false, base);
		}
		// The SIGPIPE rule holds only before any rank line: a rank that got through MPI_Init and then died of SIGPIPE is
		// still reported (constructed: the wrongarch capture with one rank line, of the PID it names, put before it).
		const late = detectCrash(`${RANK_LINE_MARKER} rank=0 pid=4196 host=vm\n`, fx('launch/ompi5-launch-wrongarch.stderr'), 141, null);
		assert.deepEqual([late.crashed, late.signal, late.rank], [true, 13, 0]);
		// Not launch failures: a real crash, a clean run, the shell running a foreign ELF, nothing at all.
		assert.equal(detectLaunchFailure(fx('ompi-ipc-crash.stdout'), fx('ompi-ipc-crash.stderr')), null);
		assert.equal(detectLaunchFailure(fx('ompi-ucx-ipc-direct.stdout'), fx('ompi-ucx-ipc-direct.stderr')), null);
		assert.equal(f('mpich-launch-wrongarch'), null);
		assert.equal(f('mpich-launch-missing-silent'), null);
	});

	it('never throws on hostile text', () => {
		const junk = '\u0000'.repeat(1000) + '| ep_cfg[x] |\n| 1..inf |\n' + 'noticed that process rank abc'.repeat(100) + '\n'.repeat(5000);
		assert.doesNotThrow(() => {
			detectCrash(junk, junk, null, 'SIGSEGV');
			parseUcxLanes(junk);
			parseUcxProtoInfo(junk);
			extractJsonDocument(junk);
			detectLaunchFailure(`${junk}execvp error on file (x\nExecutable:\n`, junk);
		});
		assert.equal(detectCrash('', '', null, 'SIGSEGV').crashed, true);
	});
});

describe('repro parsers: UCX prefixes with short pids (real capture)', () => {
	it('maps every rank\'s lanes when UCX pads a four-digit pid ("[host-a:2603 :0]")', () => {
		const text = fx('mpich-netns-short-pids.txt');
		const lanes = parseUcxLanes(text);
		assert.equal(lanes.length, 6);
		assert.ok(lanes.every(l => l.pid > 0 && /^host-[ab]$/.test(l.host)), JSON.stringify(lanes.map(l => [l.host, l.pid])));
		const ranks = parseRankLines(text);
		const mapped = new Set(lanes.map(l => ranks.get(l.pid)?.rank));
		assert.deepEqual([...mapped].sort(), [0, 1, 3], 'the capture holds lane lines of ranks 0, 1 and 3');
	});
});
