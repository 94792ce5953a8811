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

/** Every round with two pairs or more: all its pairs were running at one instant (the latest start before the earliest end). */
export function roundsOverlap(doc: MapDocument): { rounds: number; overlapping: number; worst: string } {
	const byRound = new Map<number, MapPair[]>();
	for (const p of doc.pairs) { if (p.round !== undefined && p.status === 'ok') { byRound.set(p.round, [...(byRound.get(p.round) ?? []), p]); } }
	let rounds = 0;
	let overlapping = 0;
	let worst = '';
	for (const [r, ps] of byRound) {
		if (ps.length < 2) { continue; }
		rounds++;
		const lastStart = Math.max(...ps.map(p => p.started_s ?? Infinity));
		const firstEnd = Math.min(...ps.map(p => p.ended_s ?? -Infinity));
		if (lastStart < firstEnd) { overlapping++; } else { worst = `round ${r}: ${ps.map(p => `${p.a}-${p.b} ${p.started_s?.toFixed(4)}..${p.ended_s?.toFixed(4)}`).join(', ')}`; }
	}
	return { rounds, overlapping, worst };
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

	it('rounds: the pairs of a round run at the same time (start/end stamps overlap); sequential steps do not', async () => {
		const rounds = await ompiMap(6, { schedule: 'rounds' });
		assert.equal(rounds.schedule?.mode, 'rounds');
		assert.equal(rounds.schedule?.rounds, 5);
		assert.equal(rounds.schedule?.max_concurrent_pairs, 3);
		assert.ok(rounds.pairs.every(p => p.status === 'ok' && (p.verified_messages ?? 0) > 0 && p.corrupted_messages === 0), JSON.stringify(rounds.pairs.map(p => [p.a, p.b, p.status, p.error])));
		const o = roundsOverlap(rounds);
		console.log(`  [rounds] ${o.overlapping} of ${o.rounds} rounds had all their pairs running at once; ${rounds.elapsed_s?.toFixed(2)} s`);
		assert.equal(o.overlapping, o.rounds, o.worst);
		const seq = await ompiMap(6, { schedule: 'sequential' });
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
			assert.equal(code, 0, err);
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
		for (let i = 0; i < 600 && !/"round":1,/.test(run.stdout); i++) { await new Promise(r => setTimeout(r, 50)); }
		assert.match(run.stdout, /"schema":"gpumpi\.map-round\/1","round":1,/, `round 1 never streamed:\n${run.stderr}`);
		run.interrupt();
		const code = await run.closed;
		assert.equal(code, 130, run.stderr);
		const lines = run.stdout.trim().split('\n');
		const doc = JSON.parse(lines[lines.length - 1]) as MapDocument;
		assert.match(doc.partial?.reason ?? '', /interrupted/);
		assert.equal(doc.pairs.filter(p => p.status === 'ok').length, 4, 'rounds 0 and 1 (2 pairs each) were measured');
		assert.deepEqual(JSON.parse(fs.readFileSync(outFile, 'utf8')), doc, '--out holds the same partial map');
		assert.match(run.stderr, /interrupted \(.*\); the partial map keeps what was measured: 4 of 6 pairs/);
		assert.deepEqual(await run.left(), [], 'processes the CLI started are still running');
	});
});
