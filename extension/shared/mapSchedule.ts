/**
 * The schedules of `gpumpi map` (docs/map-schema.md, "Schedules"): which pairs are measured and which of them at the
 * same time. The engine's generator is native/engine/mapSchedule.cc; this twin is what the unit tests check up to
 * 2 048 hosts, and the engine tier checks that the engine's `--plan` prints the same (test/engine/mapScale.test.ts).
 * Pure; no imports beyond shared/.
 */

/** A pair of ranks, a < b. */
export type RankPair = [number, number];

/** Pairs in measuring order and the rounds as indices into `pairs` (a round's pairs share no rank). */
export interface MapSchedule {
	mode: 'sequential' | 'rounds';
	pairs: RankPair[];
	rounds: number[][];
}

/** Round-robin tournament of m participants (circle method): m-1 rounds of m/2 pairs (m odd: m rounds, one sits out). */
export function tournament(m: number): RankPair[][] {
	const out: RankPair[][] = [];
	if (m < 2) { return out; }
	const slots = m % 2 === 0 ? m : m + 1;
	const at = new Array<number>(slots).fill(0);
	for (let r = 0; r < slots - 1; r++) {
		at[0] = 0;
		for (let i = 1; i < slots; i++) { at[i] = 1 + (i - 1 + r) % (slots - 1); }
		const round: RankPair[] = [];
		for (let i = 0; i < slots / 2; i++) {
			const x = at[i];
			const y = at[slots - 1 - i];
			if (x >= m || y >= m) { continue; }
			round.push([Math.min(x, y), Math.max(x, y)]);
		}
		out.push(round);
	}
	return out;
}

/** The classic selection (sequential schedule): all a < b pairs, or intra-host pairs plus the lowest ranks of each host pair. */
export function selectPairs(hostOfRank: readonly string[], sampled: boolean): RankPair[] {
	const out: RankPair[] = [];
	const seen = new Set<string>();
	for (let a = 0; a < hostOfRank.length; a++) {
		for (let b = a + 1; b < hostOfRank.length; b++) {
			if (!sampled || hostOfRank[a] === hostOfRank[b]) { out.push([a, b]); continue; }
			const key = JSON.stringify([hostOfRank[a], hostOfRank[b]].sort());
			if (!seen.has(key)) { seen.add(key); out.push([a, b]); }
		}
	}
	return out;
}

function byPair(x: RankPair, y: RankPair): number { return x[0] - y[0] || x[1] - y[1]; }

/** The schedule for these hosts of ranks 0..N-1 (the engine's buildSchedule). */
export function buildSchedule(hostOfRank: readonly string[], sampled: boolean, mode: MapSchedule['mode']): MapSchedule {
	const s: MapSchedule = { mode, pairs: [], rounds: [] };
	const addRound = (round: RankPair[]): void => {
		if (round.length === 0) { return; }
		round.sort(byPair);
		s.rounds.push(round.map(p => s.pairs.push(p) - 1));
	};
	if (mode === 'sequential') {
		s.pairs = selectPairs(hostOfRank, sampled);
		s.rounds = s.pairs.map((_, i) => [i]);
		return s;
	}
	if (!sampled) {
		for (const round of tournament(hostOfRank.length)) { addRound(round); }
		return s;
	}
	const index = new Map<string, number>();
	const members: number[][] = [];
	hostOfRank.forEach((h, r) => {
		let i = index.get(h);
		if (i === undefined) { i = members.length; index.set(h, i); members.push([]); }
		members[i].push(r);
	});
	const local = members.map(m => tournament(m.length));
	const localRounds = Math.max(0, ...local.map(t => t.length));
	for (let k = 0; k < localRounds; k++) {
		addRound(members.flatMap((m, h) => (local[h][k] ?? []).map(([x, y]): RankPair => [m[x], m[y]])));
	}
	tournament(members.length).forEach((hostPairs, r) => {
		addRound(hostPairs.map(([x, y]): RankPair => {
			const a = members[x][r % members[x].length];
			const b = members[y][r % members[y].length];
			return [Math.min(a, b), Math.max(a, b)];
		}));
	});
	return s;
}

/**
 * What is wrong with a schedule (empty: nothing): a pair twice, a rank twice in one round, a pair in no round or in
 * two. Used by the tests on the TypeScript generator and on the engine's own `--plan` output.
 */
export function scheduleProblems(s: MapSchedule, worldSize: number): string[] {
	const out: string[] = [];
	// Flat arrays, not sets of strings: a 2 048-host schedule has two million pairs.
	const seen = worldSize <= 8192 ? new Uint8Array(worldSize * worldSize) : null;
	const seenSet = new Set<number>();
	s.pairs.forEach(([a, b], i) => {
		if (!(a >= 0 && a < b && b < worldSize)) { out.push(`pair ${i} is ${a}-${b}`); return; }
		const key = a * worldSize + b;
		if (seen ? seen[key]++ > 0 : seenSet.has(key)) { out.push(`pair ${a}-${b} twice`); }
		if (!seen) { seenSet.add(key); }
	});
	const placed = new Uint32Array(s.pairs.length);
	const busy = new Int32Array(worldSize).fill(-1);
	s.rounds.forEach((round, r) => {
		for (const i of round) {
			const p = s.pairs[i];
			if (!p) { out.push(`round ${r}: no pair ${i}`); continue; }
			placed[i]++;
			for (const rank of p) {
				if (rank < 0 || rank >= worldSize) { continue; }
				if (busy[rank] === r) { out.push(`round ${r}: rank ${rank} twice`); }
				busy[rank] = r;
			}
		}
	});
	placed.forEach((n, i) => { if (n !== 1) { out.push(`pair ${i} is in ${n} rounds`); } });
	return out.slice(0, 20);
}
