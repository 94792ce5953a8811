// Which pairs `gpumpi map` measures and in which rounds (docs/map-schema.md, "Schedules"). Pure: no MPI, no I/O.
//
// A round is a set of pairs in which no rank appears twice: its pairs are measured at the same time. Two schedules:
//   sequential  one pair per round (the classic map: every other rank waits), pairs as selectPairs lists them;
//   rounds      all pairs: a round-robin tournament over the ranks (N-1 rounds of N/2 pairs, N odd: N rounds);
//               sampled: first the intra-host pairs of every host at once (a tournament per host, its round k run in
//               round k on every host), then a round-robin tournament over the hosts (n-1 rounds of n/2 host pairs,
//               n odd: n rounds), where host pair (X, Y) in round r is measured by X's local rank r mod |X| and Y's
//               local rank r mod |Y| (so the hosts' ranks, and the NICs and GPUs near them, take turns).
// Run time grows with the number of rounds: O(pairs) for sequential, O(ranks) or O(hosts + ranks per host) for rounds.
// The TypeScript twin used by the unit tests and the runner is extension/shared/mapSchedule.ts; the engine tier checks
// that both print the same schedule (test/engine/mapScale.test.ts).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace gpumpi::map {

/** Pairs (a < b) in measuring order, and the rounds as indices into `pairs` (ascending, consecutive). */
struct Schedule {
	bool rounds = false;  // false: sequential (one pair per round)
	std::vector<std::pair<int, int>> pairs;
	std::vector<std::vector<int>> roundPairs;
};

/** Which pairs to measure: all a<b pairs, or every intra-host pair plus one representative pair per host pair (the
 * lowest ranks of both hosts), in the order the sequential schedule measures them. */
std::vector<std::pair<int, int>> selectPairs(const std::vector<std::string>& hostOfRank, bool sampled);

/** Round-robin tournament of m participants (circle method): m-1 rounds (m even) or m rounds (odd, one sits out). */
std::vector<std::vector<std::pair<int, int>>> tournament(int m);

/** The schedule for these hosts of ranks 0..N-1. `sampled`: intra-host pairs plus one pair per host pair. */
Schedule buildSchedule(const std::vector<std::string>& hostOfRank, bool sampled, bool rounds);

}  // namespace gpumpi::map
