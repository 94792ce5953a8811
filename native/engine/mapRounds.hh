// The rounds of `gpumpi map` (docs/map-schema.md, "Schedules" and "Streaming"): every rank walks the same schedule;
// a round starts with a nonblocking barrier polled against a deadline, then the round's pairs are measured at the
// same time (mapPair.hh). The first rank of each pair reports it to rank 0 (and the second rank too when its side
// failed), point to point, so rank 0 holds every result so far without a collective a dead rank could block; rank 0
// hands them to the caller round by round (the streamed records: round r-1 once its own pair of round r is done, so a
// record's printing never delays the start of a round's pairs). A barrier that does not complete within
// --pair-timeout + 10 s (a rank hangs outside a pair, or died while the launcher keeps the others running) ends the
// synchronisation: the remaining rounds run unsynchronised and the run ends with MPI_Abort after the document,
// because MPI_Finalize would wait for the missing rank. Thread: main thread only. Never throws.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "mapPair.hh"
#include "mapSchedule.hh"

namespace gpumpi::map {

/** How to measure (from MapOptions). */
struct RoundsConfig {
	bool device = false;
	unsigned long long smallBytes = 8, largeBytes = 64ull << 20;
	int latencyIters = 20, iters = 5;
	double pairTimeoutS = 60;
	/** Rank 0 hands results over at most this often in sequential schedules (every round in rounds schedules). */
	double sequentialRecordEveryS = 1.0;
};

/** What rank 0 knows of one pair. */
struct PairOutcome {
	PairStatus status = PairStatus::NotMeasured;
	double bandwidthGbps = -1, latencyUs = -1;
	double started = -1, ended = -1;  // seconds since the run's epoch (rank 0's clock at the start)
	int verified = 0, corrupted = 0;
	std::string error;
	int errorRank = -1;     // the rank that reported the first error
	bool reported = false;  // by its first rank
};

/** The whole run as rank 0 saw it (other ranks: only their own bookkeeping). */
struct RoundsResult {
	std::vector<PairOutcome> outcomes;  // rank 0: one per schedule pair
	bool allAllocOk = false;
	std::string allocError;             // this rank's
	int barrierTimeouts = 0;            // rank 0: its own plus what the done messages said
	int firstUnsyncedRound = -1;        // rank 0: the round whose barrier timed out first (-1: every round synchronised)
	std::vector<int> silentRanks;       // rank 0: ranks whose done message never came
	int abandonedRequests = 0;          // rank 0: over all ranks that reported
	bool cleanEnd = false;              // rank 0: MPI_Finalize is safe (every rank done, nothing pending anywhere)
	double elapsedS = 0;
	double epoch = 0;                   // wallSeconds() of rank 0 at the start
};

/** Called on rank 0 with the round just handed over and the pairs whose outcome changed since the last call. */
using RoundSink = std::function<void(int round, const std::vector<int>& changed, const RoundsResult& soFar)>;

/**
 * Walk the schedule on every rank. `measure[i]` false: pair i is not measured (skipped by class). Rank 0 calls
 * `sink` after each round (throttled in sequential schedules) and once more at the end (round = number of rounds).
 * Test hooks (engine tier only; each <rank>@<round>): GPUMPI_TEST_MAP_KILL makes that rank SIGKILL itself when that
 * round has started (after its barrier: a rank dying mid-run); GPUMPI_TEST_MAP_STALL=<rank>@<round>:<seconds> makes it sleep before its
 * pair of that round (a hung peer); GPUMPI_TEST_MAP_CORRUPT makes it flip one byte of the first large message it
 * echoes in that round (corrupted data).
 */
RoundsResult runRounds(const RoundsConfig& cfg, const Schedule& schedule, const std::vector<bool>& measure, int rank, int size,
                       const RoundSink& sink);

}  // namespace gpumpi::map
