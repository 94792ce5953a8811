/**
 * The streamed records of `gpumpi map --json --stream` read line by line (extension/core/map/mapStream.ts) from REAL
 * captured engine output (test-fixtures/map/stream/, see its README): the plan, the rounds and the document of a
 * whole run; a run whose rank 3 was killed at round 3, turned into the partial map the runner returns; damaged
 * copies of chunks; srun's words for a dead task.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { applyRecord, emptyStreamState, MapStreamReader, partialMapDocument, srunFailedTasks, streamedMapDocument, type MapStreamRecord } from '../../extension/core/map/mapStream';
import { findOutliers } from '../../extension/core/map/outliers';
import { validateMapDocument } from '../../extension/shared/mapSchema';

const DIR = path.resolve(process.cwd(), 'test-fixtures', 'map', 'stream');
const read = (f: string): string => fs.readFileSync(path.join(DIR, f), 'utf8');

function feed(text: string, sliceAbove?: number): { records: MapStreamRecord[]; at: number[] } {
	const reader = new MapStreamReader(sliceAbove);
	const records: MapStreamRecord[] = [];
	const at: number[] = [];
	text.split('\n').forEach((l, i) => { for (const r of reader.push(l)) { records.push(r); at.push(i); } });
	records.push(...reader.finish());
	return { records, at };
}

describe('map stream (real engine output, line by line)', () => {
	it('a whole run: the plan, 5 rounds, then the document, each as soon as its first intact copy has come', () => {
		const text = read('ompi-6-rounds.stdout');
		const { records, at } = feed(text);
		assert.deepEqual(records.map(r => r.kind), ['plan', 'round', 'round', 'round', 'round', 'round', 'map']);
		const rounds = records.filter(r => r.kind === 'round').map(r => (r.kind === 'round' ? r.round : null)!);
		assert.deepEqual(rounds.map(r => r.round), [0, 1, 2, 3, 5], 'the last record is the final one (round = rounds)');
		assert.ok(rounds[4].final);
		assert.deepEqual(rounds.map(r => r.pairs.length), [3, 3, 3, 3, 3]);
		// Each record is taken at the end of its first copy, long before the output ends (copies 2 and 3 follow).
		const lines = text.split('\n').length;
		assert.ok(at[0] < lines / 4, `the plan came at line ${at[0]} of ${lines}`);
		const s = emptyStreamState();
		for (const r of records) { applyRecord(s, r); }
		assert.equal(s.outcomes.size, 15);
		assert.ok([...s.outcomes.values()].every(p => p.status === 'ok' && (p.verified_messages ?? 0) > 0));
		const doc = records[6].kind === 'map' ? validateMapDocument(records[6].doc) : 'no map';
		assert.ok(typeof doc !== 'string', String(doc));
		assert.equal(doc.schedule?.mode, 'rounds');
		assert.equal(doc.schedule?.max_concurrent_pairs, 3);
	});

	it('survives the first copy of every chunk damaged: the record comes from a later copy', () => {
		const seen = new Set<string>();
		const damaged = read('ompi-6-rounds.stdout').split('\n').map(l => {
			const m = /^@@GPUMPI-JSON@@ (\w{8}) (\d+) /.exec(l);
			if (!m || seen.has(`${m[1]} ${m[2]}`)) { return l; }
			seen.add(`${m[1]} ${m[2]}`);
			return l.slice(0, l.length - 5) + 'XXXXX';
		}).join('\n');
		assert.deepEqual(feed(damaged).records.map(r => r.kind), ['plan', 'round', 'round', 'round', 'round', 'round', 'map']);
	});

	it('a rank killed at round 3 (mpirun ended the job): the partial map keeps rounds 0-2, names rank 3 first', () => {
		const { records } = feed(read('ompi-6-killed.stdout'));
		assert.deepEqual(records.map(r => r.kind), ['plan', 'round', 'round', 'round']);
		const s = emptyStreamState();
		for (const r of records) { applyRecord(s, r); }
		const doc = partialMapDocument(s, { reason: 'rank 3 crashed (Killed): mpirun.openmpi noticed that process rank 3 …', failedRanks: [3] });
		assert.ok(doc);
		assert.equal(doc.schema, 'gpumpi.map/1');
		assert.equal(doc.partial?.rounds_received, 3);
		assert.deepEqual(doc.pairs.filter(p => p.status === 'ok').map(p => p.round), [0, 0, 0, 1, 1, 1, 2, 2, 2]);
		const rest = doc.pairs.filter(p => p.status !== 'ok');
		assert.equal(rest.length, 6);
		for (const p of rest) {
			assert.equal(p.status, 'not_measured');
			assert.equal(p.bandwidth_gbps, null);
			assert.equal(p.error, p.a === 3 || p.b === 3 ? `not measured: rank 3 failed before round ${p.round}` : `not measured: the run ended before round ${p.round}`);
		}
		const o = findOutliers(doc);
		assert.equal(o.outliers[0]?.subject, 'rank 3 (vm)');
		assert.match(o.headline, /^partial map \(rank 3 crashed .*\): 9 of 15 pairs measured\. rank 3 \(vm\) failed mid-run: 2 pairs \(2 not measured\)/);
		assert.match(read('ompi-6-killed.stderr'), /process rank 3 with PID \d+ on node vm exited on signal 9/);
	});

	it('--final-without-pairs: the document leaves its pairs to the rounds; the runner\'s map has every pair with its streamed outcome', () => {
		const { records } = feed(read('ompi-6-final-without-pairs.stdout'));
		assert.deepEqual(records.map(r => r.kind), ['plan', 'round', 'round', 'round', 'round', 'round', 'map']);
		const s = emptyStreamState();
		for (const r of records) { applyRecord(s, r); }
		const engine = records[6].kind === 'map' ? validateMapDocument(records[6].doc) : 'no map';
		assert.ok(typeof engine !== 'string', String(engine));
		assert.equal(engine.pairs_streamed, true);
		assert.deepEqual(engine.pairs, []);
		const doc = streamedMapDocument(s, engine);
		assert.ok(typeof doc !== 'string', String(doc));
		assert.equal(doc.pairs.length, 15);
		assert.equal(doc.pairs_streamed, undefined);
		assert.equal(doc.elapsed_s, engine.elapsed_s);
		assert.equal(doc.incomplete, null);
		doc.pairs.forEach((p, i) => {
			const o = s.outcomes.get(i)!;
			assert.equal(p.status, 'ok');
			assert.deepEqual([p.a, p.b, p.round, p.bandwidth_gbps, p.latency_us, p.verified_messages], [o.a, o.b, o.round, o.bandwidth_gbps, o.latency_us, o.verified_messages]);
			assert.deepEqual([p.class, p.reason, p.evidence], [s.plan!.pairs[i].class, s.plan!.pairs[i].reason, s.plan!.pairs[i].evidence]);
		});
		assert.equal(findOutliers(doc).outliers.length, 0);
		// Without the plan there is nothing to put the pairs on; a document that has its pairs is kept as it is.
		assert.match(String(streamedMapDocument(emptyStreamState(), engine)), /the plan did not come/);
		const whole = feed(read('ompi-6-rounds.stdout')).records[6];
		const wholeDoc = whole.kind === 'map' ? validateMapDocument(whole.doc) : 'no map';
		assert.ok(typeof wholeDoc !== 'string');
		assert.equal(streamedMapDocument(s, wholeDoc), wholeDoc);
	});

	it('records past the slice limit are parsed in slices of whole pairs: the same records (limit lowered to 1 byte; 64 MiB in use)', () => {
		for (const f of ['ompi-6-rounds.stdout', 'ompi-6-killed.stdout', 'ompi-6-final-without-pairs.stdout']) {
			const whole = feed(read(f));
			const sliced = feed(read(f), 1);
			assert.ok(whole.records.length >= 4, f);
			assert.deepEqual(sliced.records, whole.records, f);
			assert.deepEqual(sliced.at, whole.at, f);
		}
	});

	it('no plan, no partial map (nothing of the run is known)', () => {
		assert.equal(partialMapDocument(emptyStreamState(), { reason: 'x', failedRanks: [] }), null);
	});

	it('srun\'s dead tasks: the one that died and the ones -K1 ended ("Terminated")', () => {
		const err = ['srun: error: host-d: task 2: Killed', 'srun: Terminating StepId=12.0', 'srun: error: host-c: task 1: Terminated',
			'srun: error: host-b: tasks 0,3: Terminated', 'srun: error: host-e: task 5: Segmentation fault (core dumped)'].join('\n');
		assert.deepEqual(srunFailedTasks(err).filter(t => !/^Terminated/.test(t.how)), [
			{ rank: 2, host: 'host-d', how: 'Killed' }, { rank: 5, host: 'host-e', how: 'Segmentation fault (core dumped)' }]);
		assert.deepEqual(srunFailedTasks('plain output\n'), []);
	});
});
