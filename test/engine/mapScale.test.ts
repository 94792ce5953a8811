/**
 * The map at scale, for real (issue 36): the engine's schedules against their TypeScript twin up to 2 048 hosts; on
 * this host under Debian's Open MPI 4.1.4 and MPICH 4.0.2 the rounds' pairs overlapping in time (sequential steps do
 * not), a stalled rank's pair a timeout finding while the rounds go on, a corrupted message caught by its checksum, a
 * rank killed mid-run with what was streamed before kept, and Ctrl-C writing the map of what was measured. Then on
 * the Slurm lab (test/hosts/slurmLab.ts: 4 compute hosts, srun, one rank each) one host's link shaped with tc: the
 * map names that host and its NIC first in every run, and nothing without the shaping; a rank killed under srun.
 * The faults are the engine's test hooks (GPUMPI_TEST_MAP_KILL / _STALL / _CORRUPT, native/engine/mapRounds.hh).
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { main } from '../../extension/cli/gpumpiDoctor';
import { DEFAULT_MAP_OPTIONS, runMap } from '../../extension/core/map/mapRunner';
import { findEngine, type EngineFlavor } from '../../extension/core/native';
import { defaultSpec, type LaunchConfig } from '../../extension/core/launch/launchSpec';
import { buildSchedule, type MapSchedule } from '../../extension/shared/mapSchedule';
import { MAP_PLAN_SCHEMA, MAP_ROUND_SCHEMA, type MapDocument, type MapPair } from '../../extension/shared/mapSchema';
import { createSlurmLab, slurmUnavailable, type SlurmLab } from '../hosts/slurmLab';
import { CliRun } from './cliProcess';

function enginePath(flavor: EngineFlavor): string {
	const found = findEngine(flavor, {});
	assert.ok(found.path, `engine '${flavor}' not built; tried:\n  ${found.tried.join('\n  ')}`);
	return found.path;
}

/** Hosts h0, h1, … with `per` ranks each. */
function hosts(n: number, per: number): string[] {
	return Array.from({ length: n * per }, (_, r) => `h${Math.floor(r / per)}`);
}

/**
 * Rounds with two pairs or more: how many ran all their pairs at one instant (the latest start before the earliest
 * end), and how many ran every pair beside at least one other of its round (its interval overlaps another's). On a
 * machine with fewer cores than ranks the scheduler may still run a round's pairs partly one after another, so the
 * second is what the tests require of every round; sequential steps never overlap at all.
 */
export function roundsOverlap(doc: MapDocument): { rounds: number; allAtOnce: number; concurrent: number; worst: string } {
	const byRound = new Map<number, MapPair[]>();
	for (const p of doc.pairs) { if (p.round !== undefined && p.status === 'ok') { byRound.set(p.round, [...(byRound.get(p.round) ?? []), p]); } }
	let rounds = 0;
	let allAtOnce = 0;
	let concurrent = 0;
	let worst = '';
	const s = (p: MapPair): number => p.started_s ?? Infinity;
	const e = (p: MapPair): number => p.ended_s ?? -Infinity;
	for (const [r, ps] of byRound) {
		if (ps.length < 2) { continue; }
		rounds++;
		if (Math.max(...ps.map(s)) < Math.min(...ps.map(e))) { allAtOnce++; }
		if (ps.every(p => ps.some(q => q !== p && s(q) < e(p) && s(p) < e(q)))) { concurrent++; } else {
			worst = `round ${r}: ${ps.map(p => `${p.a}-${p.b} ${p.started_s?.toFixed(4)}..${p.ended_s?.toFixed(4)}`).join(', ')}`;
		}
	}
	return { rounds, allAtOnce, concurrent, worst };
}

const LOCAL: LaunchConfig = { label: 'ob1 vader', env: [['UCX_NET_DEVICES', 'lo']], mca: [['pml', 'ob1'], ['btl', 'self,vader']], extraArgs: [] };

describe('map at scale: the engine\'s schedules and faults on this host (real MPI)', function () {
	this.timeout(120_000);
	let dir = '';
	before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-mapscale-')); });
	after(() => { if (dir) { fs.rmSync(dir, { recursive: true, force: true }); } });

	const ompiMap = async (np: number, over: Partial<typeof DEFAULT_MAP_OPTIONS>, env: Array<[string, string]> = []): Promise<MapDocument> => {
		const spec = { ...defaultSpec('openmpi', 'mpirun.openmpi', np), loopbackOnly: true };
		const r = await runMap({ engine: enginePath('openmpi'), spec, config: { ...LOCAL, env: [...LOCAL.env, ...env] }, map: { ...DEFAULT_MAP_OPTIONS, memory: 'host', large: '1M', ...over }, timeoutMs: 90_000 });
		assert.ok(r.ok, r.ok ? '' : `${r.error}\n${r.outputTail}`);
		return r.doc;
	};

	it('--plan: the engine prints the schedules of the TypeScript twin, up to 2 048 hosts', function () {
		this.timeout(120_000);
		const engine = enginePath('openmpi');
		const cases: Array<[string[], boolean, MapSchedule['mode']]> = [
			[['a', 'a', 'b', 'b', 'c'], false, 'sequential'], [['a', 'a', 'b', 'b', 'c'], true, 'sequential'],
			[['a', 'a', 'b', 'b', 'c'], false, 'rounds'], [['a', 'a', 'b', 'b', 'c'], true, 'rounds'],
			[hosts(16, 1), false, 'rounds'], [['x', 'y', 'y', 'x', 'z', 'y', 'z'], true, 'rounds'],
			[hosts(128, 8), true, 'rounds'], [hosts(2048, 1), true, 'rounds'], [hosts(2048, 2), true, 'rounds'],
		];
		for (const [h, sampled, mode] of cases) {
			const args = ['map', '--max-ranks', String(1 << 20), ...(sampled ? ['--pairs', 'sampled'] : []), '--schedule', mode, '--plan', h.join(',')];
			const r = spawnSync(engine, args, { encoding: 'utf8', maxBuffer: 256 << 20 });
			assert.equal(r.status, 0, r.stderr);
			const got = JSON.parse(r.stdout) as { sampled: boolean; schedule: string; pairs: Array<[number, number]>; rounds: number[][] };
			const want = buildSchedule(h, sampled, mode);
			assert.equal(got.schedule, mode);
			assert.equal(got.pairs.length, want.pairs.length, `${h.length} ranks ${mode}`);
			assert.deepEqual(got.pairs, want.pairs, `${h.length} ranks ${mode}: pairs`);
			assert.deepEqual(got.rounds, want.rounds, `${h.length} ranks ${mode}: rounds`);
		}
		// auto: sequential for all pairs, rounds once the map is sampled (beyond --max-ranks).
		const auto = (extra: string[]): string => (JSON.parse(spawnSync(engine, ['map', ...extra, '--plan', hosts(4, 5).join(',')], { encoding: 'utf8' }).stdout) as { schedule: string }).schedule;
		assert.equal(auto([]), 'rounds');
		assert.equal(auto(['--max-ranks', '32']), 'sequential');
	});

	it('rounds: the pairs of a round run side by side (start/end stamps overlap); sequential steps do not', async () => {
		// 4 MiB × 10: pairs long enough (tens of ms) that the scheduler's jitter on 2 shared cores does not decide it.
		const rounds = await ompiMap(6, { schedule: 'rounds', large: '4M', iters: 10 });
		assert.equal(rounds.schedule?.mode, 'rounds');
		assert.equal(rounds.schedule?.rounds, 5);
		assert.equal(rounds.schedule?.max_concurrent_pairs, 3);
		assert.ok(rounds.pairs.every(p => p.status === 'ok' && (p.verified_messages ?? 0) > 0 && p.corrupted_messages === 0), JSON.stringify(rounds.pairs.map(p => [p.a, p.b, p.status, p.error])));
		const o = roundsOverlap(rounds);
		console.log(`  [rounds] ${o.allAtOnce} of ${o.rounds} rounds had all their pairs running at one instant, ${o.concurrent} every pair beside another; ${rounds.elapsed_s?.toFixed(2)} s`);
		assert.equal(o.concurrent, o.rounds, o.worst);
		const seq = await ompiMap(6, { schedule: 'sequential', large: '4M', iters: 10 });
		assert.equal(seq.schedule?.mode, 'sequential');
		assert.equal(seq.schedule?.rounds, 15);
		const sorted = [...seq.pairs].sort((x, y) => (x.started_s ?? 0) - (y.started_s ?? 0));
		for (let i = 1; i < sorted.length; i++) {
			assert.ok((sorted[i - 1].ended_s ?? 0) <= (sorted[i].started_s ?? 0), `sequential pairs ${sorted[i - 1].a}-${sorted[i - 1].b} and ${sorted[i].a}-${sorted[i].b} overlap`);
		}
	});

	it('a stalled rank (GPUMPI_TEST_MAP_STALL=3@1:4, --pair-timeout 2): its pair is a timeout finding, every other pair is measured', async () => {
		const doc = await ompiMap(4, { schedule: 'rounds', pairTimeout: 2 }, [['GPUMPI_TEST_MAP_STALL', '3@1:4']]);
		const stalled = doc.pairs.find(p => p.round === 1 && (p.a === 3 || p.b === 3));
		assert.equal(stalled?.status, 'timeout', JSON.stringify(stalled));
		assert.match(stalled?.error ?? '', /no answer from rank 3 within 2 s/);
		assert.ok(doc.pairs.filter(p => p !== stalled).every(p => p.status === 'ok'), JSON.stringify(doc.pairs.map(p => [p.a, p.b, p.status])));
		assert.equal(doc.incomplete ?? null, null, 'the run ended cleanly (every barrier met, nothing left pending)');
		assert.match(doc.outliers?.headline ?? '', new RegExp(`^pair ${stalled?.a}-${stalled?.b} .*timeout`));
	});

	it('a rank stuck beyond the barrier deadline (STALL=3@1:15, --pair-timeout 2): the rounds go on unsynchronised, the document says incomplete, MPI_Abort (exit 4)', async function () {
		this.timeout(120_000);
		const spec = { ...defaultSpec('openmpi', 'mpirun.openmpi', 4), loopbackOnly: true };
		const r = await runMap({ engine: enginePath('openmpi'), spec, config: { ...LOCAL, env: [...LOCAL.env, ['GPUMPI_TEST_MAP_STALL', '3@1:15']] },
			map: { ...DEFAULT_MAP_OPTIONS, memory: 'host', large: '1M', schedule: 'rounds', pairTimeout: 2 }, timeoutMs: 90_000 });
		assert.ok(r.ok, r.ok ? '' : `${r.error}\n${r.outputTail}`);
		const doc = r.doc;
		assert.equal(doc.runner?.exitCode, 4, `the engine ended the job with MPI_Abort(…, 4) after its document; runner ${JSON.stringify({ ...doc.runner, evidenceLines: undefined })}, incomplete ${JSON.stringify(doc.incomplete)}`);
		assert.equal(r.partial, undefined, 'the engine\'s own document, not one built from the stream');
		// Rank 3 sleeps 15 s > 2 s + 10 s: the others' barrier before round 2 misses its deadline.
		assert.equal(doc.incomplete?.first_unsynchronized_round, 2, JSON.stringify(doc.incomplete));
		assert.ok((doc.incomplete?.barrier_timeouts ?? 0) >= 1);
		assert.equal(doc.incomplete?.ends_with, 'MPI_Abort');
		const withRank3 = doc.pairs.filter(p => (p.a === 3 || p.b === 3) && (p.round ?? 0) >= 1);
		assert.ok(withRank3.every(p => p.status === 'timeout'), JSON.stringify(withRank3.map(p => [p.a, p.b, p.status, p.error])));
		assert.ok(doc.pairs.filter(p => p.a !== 3 && p.b !== 3).every(p => p.status === 'ok'), JSON.stringify(doc.pairs.map(p => [p.a, p.b, p.status])));
	});

	it('a corrupted message (GPUMPI_TEST_MAP_CORRUPT=2@0): data_error with the checksum and the first wrong byte, numbers kept', async () => {
		const doc = await ompiMap(4, { schedule: 'rounds' }, [['GPUMPI_TEST_MAP_CORRUPT', '2@0']]);
		const bad = doc.pairs.find(p => p.round === 0 && (p.a === 2 || p.b === 2));
		assert.equal(bad?.status, 'data_error');
		assert.match(bad?.error ?? '', /checksum [0-9a-f]{16} instead of [0-9a-f]{16}, first wrong byte at offset 524288 of 1048576/);
		assert.ok((bad?.corrupted_messages ?? 0) >= 1 && bad?.bandwidth_gbps !== null);
		assert.ok(doc.pairs.filter(p => p !== bad).every(p => p.status === 'ok'));
		assert.equal(doc.outliers?.outliers[0]?.kind, 'failed');
	});

	for (const flavor of ['openmpi', 'mpich'] as const) {
		it(`a rank killed mid-run under ${flavor === 'openmpi' ? 'Open MPI\'s mpirun (it names the rank)' : 'MPICH\'s Hydra (it cannot tell which)'}: the launcher ends the job, the streamed rounds are kept`, async () => {
			let out = '';
			let err = '';
			const io = { stdout: (t: string) => { out += t; }, stderr: (t: string) => { err += t; }, cwd: dir, signal: new AbortController().signal };
			const code = await main(['map', '--mpirun', flavor === 'openmpi' ? 'mpirun.openmpi' : 'mpirun.mpich', '--engine', enginePath(flavor), '--np', '6',
				'--memory', 'host', '--large', '1M', '--schedule', 'rounds', '--loopback', '--preset', 'GPUMPI_TEST_MAP_KILL=3@3', '--json-lines'], io);
			assert.equal(code, 3, `the run ended early: exit 3, the partial map on stdout\n${err}`);
			const lines = out.trim().split('\n').map(l => JSON.parse(l) as { schema?: string; round?: number });
			assert.equal(lines[0].schema, MAP_PLAN_SCHEMA);
			// Round r is streamed while rank 0 waits for round r+1 to start; the launcher may end the job before round 2's
			// record (rank 3 dies at the start of round 3), never before round 1's.
			const streamed = lines.filter(l => l.schema === MAP_ROUND_SCHEMA).map(l => l.round);
			assert.deepEqual(streamed.slice(0, 2), [0, 1], 'rounds 0 and 1 were streamed before rank 3 died');
			const doc = lines[lines.length - 1] as unknown as MapDocument;
			const before = doc.pairs.filter(p => (p.round ?? 99) < 2);
			assert.equal(before.length, 6);
			assert.ok(before.every(p => p.status === 'ok' && p.bandwidth_gbps !== null), 'what was measured before the kill is kept');
			const measured = doc.pairs.filter(p => p.status === 'ok').length;
			const dead = doc.pairs.filter(p => (p.round ?? 0) >= 3 && (p.a === 3 || p.b === 3));
			console.log(`  [kill ${flavor}] rounds streamed ${streamed.join(',')}; ${measured} of 15 pairs kept; ${doc.partial?.reason}`);
			assert.match(err, new RegExp(`the partial map keeps what was measured: ${measured} of 15 pairs`));
			if (flavor === 'openmpi') {
				// mpirun names the rank that died: its pairs say so, and it is the first finding.
				assert.match(doc.partial?.reason ?? '', /rank 3 crashed \((Killed|signal 9)\)/);
				assert.deepEqual(doc.partial?.failed_ranks, [3]);
				assert.ok(dead.length > 0 && dead.every(p => p.status === 'not_measured' && /rank 3 failed before round \d/.test(p.error ?? '')), JSON.stringify(dead));
				assert.match(doc.outliers?.headline ?? '', new RegExp(`^partial map \\(rank 3 crashed .*\\): ${measured} of 15 pairs measured\\. rank 3 \\(\\S+\\) failed mid-run`));
			} else {
				// Hydra SIGKILLs the others and names one of them: the rank cannot be told (hydraCrash.ts), and the map does not guess.
				assert.match(doc.partial?.reason ?? '', /rank unknown: Hydra reported/);
				assert.deepEqual(doc.partial?.failed_ranks, []);
				assert.ok(dead.length > 0 && dead.every(p => p.status === 'not_measured' && /the run ended before round \d/.test(p.error ?? '')), JSON.stringify(dead));
				assert.match(doc.outliers?.headline ?? '', new RegExp(`^partial map \\(.*\\): ${measured} of 15 pairs measured\\. `));
			}
		});
	}

	it('Ctrl-C while a pair hangs: the CLI writes the map of what was measured (stdout and --out), exit 130, nothing left', async () => {
		const outFile = path.join(dir, 'partial.json');
		const run = new CliRun(['map', '--mpirun', 'mpirun.openmpi', '--engine', enginePath('openmpi'), '--np', '4', '--memory', 'host', '--large', '1M',
			'--schedule', 'rounds', '--loopback', '--preset', 'GPUMPI_TEST_MAP_STALL=3@2:60', '--json-lines', '--out', outFile], dir);
		const round1 = /"schema":"gpumpi\.map-round\/1","round":1,/;
		for (let i = 0; i < 600 && !round1.test(run.stdout); i++) { await new Promise(r => setTimeout(r, 50)); }
		assert.match(run.stdout, round1, `round 1 never streamed:\n${run.stderr}`);
		run.interrupt();
		const code = await run.closed;
		assert.equal(code, 130, run.stderr);
		const lines = run.stdout.trim().split('\n');
		const doc = JSON.parse(lines[lines.length - 1]) as MapDocument;
		assert.match(doc.partial?.reason ?? '', /interrupted/);
		// Rounds 0 and 1 were measured (rank 0 hands round 1 over after its own pair of round 2, which it adds); rank 3's
		// pair of round 2 was hanging.
		assert.ok(doc.pairs.filter(p => (p.round ?? 9) < 2).every(p => p.status === 'ok'), JSON.stringify(doc.pairs.map(p => [p.a, p.b, p.round, p.status])));
		const hung = doc.pairs.find(p => p.round === 2 && (p.a === 3 || p.b === 3));
		assert.equal(hung?.status, 'not_measured');
		const measured = doc.pairs.filter(p => p.status === 'ok').length;
		assert.deepEqual(JSON.parse(fs.readFileSync(outFile, 'utf8')), doc, '--out holds the same partial map');
		assert.match(run.stderr, new RegExp(`interrupted; the run was stopped; the partial map keeps what was measured: ${measured} of 6 pairs`));
		assert.deepEqual(await run.left(), [], 'processes the CLI started are still running');
	});
});

describe('map at scale on the Slurm lab: rounds on 8 compute hosts, a shaped link, a killed rank, 32 ranks', function () {
	this.timeout(240_000);
	let s: SlurmLab;
	let ompi = '';
	const HOSTS = ['host-b', 'host-c', 'host-d', 'host-e', 'host-f', 'host-g', 'host-h', 'host-i'];

	const cli = async (args: string[]): Promise<{ code: number; out: string; err: string }> => {
		let out = '';
		let err = '';
		const io = { stdout: (t: string) => { out += t; }, stderr: (t: string) => { err += t; }, cwd: s.dir, signal: new AbortController().signal };
		const code = await main(args, io);
		return { code, out, err };
	};
	const onLogin = (): string[] => ['--host', s.controller, '--ssh-config', s.lab.sshConfig, '--mpirun', 'mpirun.openmpi', '--engine', ompi, '--srun', '--srun-arg', '-N8', '--memory', 'host'];
	/** One rank on each of the 8 compute hosts under srun (Open MPI, pmix), host memory, rounds. */
	const labMap = async (extra: string[] = []): Promise<MapDocument> => {
		const r = await cli(['map', ...onLogin(), '--np', '8', '--schedule', 'rounds', '--large', '1M', '--iters', '5', '--json', ...extra]);
		assert.equal(r.code, 0, r.err);
		return JSON.parse(r.out) as MapDocument;
	};
	const bandwidths = (d: MapDocument): string => d.pairs.map(p => `${p.a}-${p.b}:${p.bandwidth_gbps?.toFixed(3)}`).join(' ');

	before(async function () {
		this.timeout(150_000);
		const why = slurmUnavailable();
		if (why) { throw new Error(`Slurm lab cannot run here: ${why}`); }
		ompi = enginePath('openmpi');
		s = await createSlurmLab({ computeHosts: 8 });
	});

	after(() => { s?.teardown(); });

	it('no shaping: no outlier in each of 3 runs; the pairs of every round run side by side; ranks nap (8 ranks, 2 CPUs)', async () => {
		for (let run = 1; run <= 3; run++) {
			const d = await labMap();
			console.log(`  [lab plain ${run}] ${d.elapsed_s?.toFixed(2)} s, ${d.outliers?.suspects.length} suspect(s): ${bandwidths(d)} | ${d.outliers?.headline}`);
			assert.deepEqual(d.ranks.map(r => r.host), HOSTS);
			assert.equal(d.schedule?.rounds, 7);
			assert.equal(d.schedule?.wait?.mode, 'nap', 'the lab hosts share this machine\'s kernel and CPUs');
			assert.ok(d.pairs.every(p => p.status === 'ok' && p.channel === 'network'), bandwidths(d));
			assert.deepEqual(d.outliers?.outliers.map(o => o.sentence), [], d.outliers?.headline);
			assert.match(d.outliers?.headline ?? '', /^no outlier: 28 measured pairs in 1 path class/);
			const o = roundsOverlap(d);
			console.log(`  [lab plain ${run}] ${o.allAtOnce} of 7 rounds had their 4 pairs running at one instant, ${o.concurrent} every pair beside another`);
			assert.equal(o.concurrent, 7, o.worst);
		}
	});

	it('host-c\'s veth shaped with tc (both ends): the map names host-c and its eth0 first in each of 5 runs', async () => {
		let shaping: string;
		try {
			s.lab.shape('host-c', ['netem', 'delay', '1ms', 'rate', '400mbit']);
			shaping = 'netem delay 1ms rate 400mbit';
		} catch (e) {
			// A kernel without sch_netem ("Specified qdisc kind is unknown.", this CI machine's): the token bucket slows the rate alone.
			assert.match((e as Error).message, /unknown|not supported|No such file/i, (e as Error).message);
			s.lab.shape('host-c', ['tbf', 'rate', '400mbit', 'burst', '32kb', 'latency', '400ms']);
			shaping = 'tbf rate 400mbit burst 32kb latency 400ms (no sch_netem in this kernel)';
		}
		try {
			for (let run = 1; run <= 5; run++) {
				const d = await labMap();
				console.log(`  [lab shaped ${run}: ${shaping}] ${d.elapsed_s?.toFixed(2)} s: ${d.outliers?.headline}`);
				const first = d.outliers?.outliers[0];
				assert.equal(first?.level, 'node', d.outliers?.headline);
				assert.equal(first?.subject, 'host-c', d.outliers?.headline);
				assert.equal(first?.kind, 'slow');
				assert.match(d.outliers?.headline ?? '', /^node host-c: every pair through eth0 at [\d.]+ GB\/s vs [\d.]+ GB\/s median of the other 21 pairs/);
				assert.equal(first?.pairs, 7, 'host-c\'s seven pairs');
				assert.ok(first?.facts.some(f => /^rank 1 on host-c; NIC eth0 \(net, virtual/.test(f)), first?.facts.join(' | '));
				assert.deepEqual(d.outliers?.outliers.filter(o => !o.subject.includes('host-c')).map(o => o.sentence), [], 'nothing else is named');
			}
		} finally {
			s.lab.shape('host-c', null);
		}
	});

	it('a rank killed mid-run under srun (-K1 ends the step): the rounds streamed before are kept', async () => {
		const r = await cli(['map', ...onLogin(), '--np', '8', '--schedule', 'rounds', '--large', '1M', '--preset', 'GPUMPI_TEST_MAP_KILL=2@3', '--json-lines']);
		assert.equal(r.code, 3, r.err);
		const lines = r.out.trim().split('\n').map(l => JSON.parse(l) as { schema?: string; round?: number });
		const doc = lines[lines.length - 1] as unknown as MapDocument;
		const streamed = new Set(lines.filter(l => l.schema === MAP_ROUND_SCHEMA).map(l => l.round));
		console.log(`  [lab kill] rounds streamed ${[...streamed].join(',')}; ${doc.outliers?.headline}`);
		assert.ok(doc.partial, 'a partial map');
		assert.match(doc.partial.reason, /^rank 2 \(srun task 2 on host-d\): Killed/);
		assert.deepEqual(doc.partial.failed_ranks, [2]);
		assert.match(doc.outliers?.headline ?? '', /^partial map \(rank 2 .*\): \d+ of 28 pairs measured\. rank 2 \(host-d\) failed mid-run/);
		// Round r is streamed while round r+1 runs: rounds 0 and 1 are out before rank 2 dies in round 3.
		assert.ok(streamed.has(0) && streamed.has(1), [...streamed].join(','));
		const kept = doc.pairs.filter(p => streamed.has(p.round));
		assert.ok(kept.length >= 8 && kept.every(p => p.status === 'ok' && p.bandwidth_gbps !== null), bandwidths(doc));
		assert.ok(doc.pairs.filter(p => (p.round ?? 0) >= 3 && (p.a === 2 || p.b === 2)).every(p => p.status === 'not_measured'));
		await s.waitClean(15_000);
	});

	it('32 ranks on 8 hosts (the most this machine runs reliably): the engine\'s schedule is the twin\'s, 3 + 7 rounds, every pair measured', async function () {
		// 64 ranks (8 per host, 2 CPUs in all) ran 149-164 s when they ran; in 2 of 3 tries Open MPI 4.1.4's tcp btl
		// failed to connect ("Operation now in progress", open-mpi/ompi#10734) and a rank died of SIGSEGV.
		this.timeout(300_000);
		// 32 tasks on 8 nodes of 2 CPUs each: srun --overcommit (one task per CPU otherwise).
		const args = ['map', ...onLogin(), '--srun-arg', '--overcommit', '--np', '32', '--pairs', 'sampled', '--large', '64K', '--iters', '2', '--json', '--timeout', '240'];
		let r = await cli(args);
		// Open MPI 4.1.4's start-up crash under srun: a rank dies of SIGSEGV inside MPI_Init (a NULL receive callback in the
		// tcp btl), so before the engine's plan; traced in docs/reliability.md ("The 32-rank lab map"), about 1 launch in 10
		// at this size. Then one more launch, said here; any other failure, or that crash twice, fails the test.
		if (r.code === 3 && !/^plan: /m.test(r.err) && /crashed \(Segmentation fault\)/.test(r.err)) {
			console.log(`  [lab 32 ranks] Open MPI's start-up crash, before the plan (docs/reliability.md): one more launch | ${r.err.split('\n').find(l => /crashed/.test(l))}`);
			await s.waitClean(15_000);
			r = await cli(args);
		}
		assert.equal(r.code, 0, r.err.slice(-3000));
		let d = JSON.parse(r.out) as MapDocument;
		// The lab's PMIx first-contact stall (docs/reliability.md, "Pairs and barriers stalled by Slurm's PMIx"): both
		// ranks of a new pair poll for its first 8-byte message for the whole pair timeout while the stepds' direct
		// modex times out. The engine reports it as it should (timeout findings, the run goes on); the test, which is
		// about the schedule, launches once more and prints what the slurmds logged; twice fails it.
		const firstContact = (x: MapDocument): MapPair[] => x.pairs.filter(p => p.status === 'timeout' && /no answer from rank \d+ within \d+ s \((round trip|receive), latency message [12] of /.test(p.error ?? ''));
		if (firstContact(d).length > 0) {
			const logged = fs.readdirSync(s.dir).filter(f => /^slurmd-.*\.log$/.test(f)).flatMap(f => fs.readFileSync(path.join(s.dir, f), 'utf8').split('\n').filter(l => /dmdx|pmix.*(error|fail)|timed out/i.test(l)).slice(-4).map(l => `${f}: ${l}`));
			console.log(`  [lab 32 ranks] first-contact stall (docs/reliability.md): ${firstContact(d).map(p => `${p.a}-${p.b} round ${p.round}`).join(', ')}; the slurmds logged: ${logged.length > 0 ? logged.join(' | ') : 'nothing about PMIx'}; one more launch`);
			await s.waitClean(15_000);
			const again = await cli(args);
			assert.equal(again.code, 0, again.err.slice(-3000));
			d = JSON.parse(again.out) as MapDocument;
		}
		const hostOf = d.ranks.map(x => x.host);
		assert.deepEqual([...new Set(hostOf)], HOSTS);
		const want = buildSchedule(hostOf, true, 'rounds');
		assert.equal(d.schedule?.mode, 'rounds', 'auto: sampled maps run in rounds');
		assert.deepEqual(d.pairs.map(p => [p.a, p.b]), want.pairs);
		assert.deepEqual(d.pairs.map(p => p.round), want.rounds.flatMap((round, i) => round.map(() => i)));
		assert.equal(d.schedule?.rounds, 10, '3 intra-host rounds (4 ranks per host) + 7 host rounds');
		assert.equal(d.pairs.length, 8 * 6 + 28);
		assert.ok(d.pairs.every(p => p.status === 'ok'), d.pairs.filter(p => p.status !== 'ok').map(p => `${p.a}-${p.b} ${p.status} ${p.error}`).join('; '));
		// 32 ranks on this machine's 2 CPUs: the timings are the scheduler's (3 of 4 such maps named a node before
		// 2026-12-07); the speed findings are held back and the headline says why, failures would still be named.
		assert.equal(d.schedule?.wait?.ranks_per_cpu, 16, JSON.stringify(d.schedule?.wait));
		assert.deepEqual(d.outliers?.outliers.map(x => x.sentence), [], d.outliers?.headline);
		assert.match(d.outliers?.headline ?? '', /^no failure in 76 measured pairs.* — speeds not judged: 16 ranks per CPU \(32 ranks share the 2 CPUs/);
		const o = roundsOverlap(d);
		console.log(`  [lab 32 ranks] ${d.pairs.length} pairs in ${d.schedule?.rounds} rounds (${o.allAtOnce} of ${o.rounds} with all pairs at once, ${o.concurrent} every pair beside another), ${d.elapsed_s?.toFixed(1)} s measuring, ${((d.runner?.durationMs ?? 0) / 1000).toFixed(1)} s in all | ${d.outliers?.headline}`);
	});
});
