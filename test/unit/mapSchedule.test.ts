/**
 * The schedules of `gpumpi map` (extension/shared/mapSchedule.ts, twin of native/engine/mapSchedule.cc): rounds of
 * pairs that share no rank, checked up to 2 048 hosts — every pair of hosts exactly once, no host (and no rank) twice
 * in a round, O(hosts) rounds. The engine tier checks that the engine's own `--plan` prints the same schedules
 * (test/engine/mapScale.test.ts).
 */
import * as assert from 'node:assert/strict';
import { buildSchedule, scheduleProblems, selectPairs, tournament, type MapSchedule } from '../../extension/shared/mapSchedule';

/** Hosts h0, h1, … with `per` ranks each (ranks of a host consecutive, as block placement gives). */
function hosts(n: number, per: number): string[] {
	return Array.from({ length: n * per }, (_, r) => `h${Math.floor(r / per)}`);
}

/** Host-level problems of a schedule: a host twice in a round, a pair of hosts measured other than exactly once. */
function hostLevelProblems(s: MapSchedule, hostOf: readonly string[]): string[] {
	const out: string[] = [];
	const names = [...new Set(hostOf)];
	const index = new Map(names.map((h, i) => [h, i]));
	const host = hostOf.map(h => index.get(h) as number);
	const n = names.length;
	const seen = new Uint8Array(n * n);
	const busy = new Int32Array(n).fill(-1);
	s.rounds.forEach((round, r) => {
		for (const i of round) {
			const [x, y] = [host[s.pairs[i][0]], host[s.pairs[i][1]]];
			if (x === y) { continue; }
			for (const h of [x, y]) {
				if (busy[h] === r) { out.push(`round ${r}: host ${names[h]} twice`); }
				busy[h] = r;
			}
			seen[Math.min(x, y) * n + Math.max(x, y)]++;
		}
	});
	for (let x = 0; x < n; x++) {
		for (let y = x + 1; y < n; y++) {
			if (seen[x * n + y] !== 1) { out.push(`host pair ${names[x]}-${names[y]} measured ${seen[x * n + y]} times`); }
		}
	}
	return out.slice(0, 10);
}

describe('map schedules (rounds of concurrent pairs)', () => {
	it('tournament: m-1 rounds of m/2 pairs for even m, m rounds for odd m, every pair once', () => {
		for (const m of [2, 3, 4, 5, 8, 9, 16, 31, 64]) {
			const t = tournament(m);
			assert.equal(t.length, m % 2 === 0 ? m - 1 : m, `m=${m}`);
			const seen = new Set<string>();
			for (const round of t) {
				assert.equal(round.length, Math.floor(m / 2), `m=${m}`);
				const busy = new Set<number>();
				for (const [a, b] of round) {
					assert.ok(a < b && !busy.has(a) && !busy.has(b), `m=${m}: ${a}-${b}`);
					busy.add(a); busy.add(b);
					seen.add(`${a}-${b}`);
				}
			}
			assert.equal(seen.size, m * (m - 1) / 2, `m=${m}`);
		}
		assert.deepEqual(tournament(1), []);
	});

	it('sequential: the classic selection, one pair per round', () => {
		const h = ['a', 'a', 'b', 'b', 'c'];
		const s = buildSchedule(h, true, 'sequential');
		assert.deepEqual(s.pairs, [[0, 1], [0, 2], [0, 4], [2, 3], [2, 4]]);
		assert.deepEqual(s.rounds, [[0], [1], [2], [3], [4]]);
		assert.deepEqual(s.pairs, selectPairs(h, true));
		assert.equal(buildSchedule(h, false, 'sequential').pairs.length, 10);
	});

	it('rounds, all pairs: a tournament over the ranks (N-1 rounds), every pair exactly once', () => {
		const s = buildSchedule(hosts(4, 4), false, 'rounds');
		assert.equal(s.rounds.length, 15);
		assert.equal(s.pairs.length, 120);
		assert.deepEqual(scheduleProblems(s, 16), []);
	});

	it('rounds, sampled: intra-host tournaments in parallel, then the host tournament; local ranks take turns', () => {
		const h = hosts(4, 4);
		const s = buildSchedule(h, true, 'rounds');
		assert.deepEqual(scheduleProblems(s, 16), []);
		// 3 intra-host rounds (4 hosts at once, 2 pairs each), then 3 host rounds of 2 host pairs.
		assert.equal(s.rounds.length, 6);
		assert.deepEqual(s.rounds.map(r => r.length), [8, 8, 8, 2, 2, 2]);
		assert.deepEqual(hostLevelProblems(s, h), []);
		// Host round r uses local rank r mod 4 on both sides: ranks 0,4,8,12 in round 0, then 1,5,9,13, then 2,6,10,14.
		const inter = s.rounds.slice(3).map(r => r.map(i => s.pairs[i]).flat().sort((x, y) => x - y));
		assert.deepEqual(inter, [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14]]);
		assert.equal(s.pairs.length, 4 * 6 + 6, 'the same number of pairs as the sequential sampled selection');
		assert.equal(s.pairs.length, selectPairs(h, true).length);
	});

	it('odd host counts and uneven hosts: one host sits out each round; a host of one rank has no intra round', () => {
		const h = ['a', 'a', 'a', 'b', 'c', 'c'];
		const s = buildSchedule(h, true, 'rounds');
		assert.deepEqual(scheduleProblems(s, h.length), []);
		assert.deepEqual(hostLevelProblems(s, h), []);
		// a: 3 ranks (3 intra rounds), c: 2 ranks (1 round); then 3 host rounds of 1 host pair.
		assert.equal(s.rounds.length, 3 + 3);
		assert.equal(s.pairs.filter(([x, y]) => h[x] === h[y]).length, 3 + 1);
	});

	for (const [n, per] of [[128, 8], [2048, 1], [2048, 2]] as const) {
		it(`${n} hosts × ${per} rank${per > 1 ? 's' : ''}: every host pair exactly once, no host twice in a round, ${n - 1} host rounds`, function () {
			this.timeout(60_000);
			const h = hosts(n, per);
			const s = buildSchedule(h, true, 'rounds');
			const intraRounds = per < 2 ? 0 : per % 2 === 0 ? per - 1 : per;
			assert.equal(s.rounds.length, intraRounds + (n % 2 === 0 ? n - 1 : n), 'O(hosts) rounds, not O(pairs)');
			assert.equal(s.pairs.length, n * per * (per - 1) / 2 + n * (n - 1) / 2);
			assert.deepEqual(scheduleProblems(s, h.length), []);
			assert.deepEqual(hostLevelProblems(s, h), []);
			assert.ok(s.rounds.slice(intraRounds).every(r => r.length === Math.floor(n / 2)), 'every host busy in every host round');
		});
	}

	it('scheduleProblems finds a rank twice in a round, a pair twice and a pair in no round', () => {
		const bad: MapSchedule = { mode: 'rounds', pairs: [[0, 1], [1, 2], [0, 1], [2, 3]], rounds: [[0, 1], [2]] };
		const p = scheduleProblems(bad, 4);
		assert.ok(p.includes('round 0: rank 1 twice'), p.join('; '));
		assert.ok(p.includes('pair 0-1 twice'), p.join('; '));
		assert.ok(p.includes('pair 3 is in 0 rounds'), p.join('; '));
	});
});
