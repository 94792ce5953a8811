// `gpumpi map`: the transport map of an MPI job. Every rank reports where it runs (host, GPU, NUMA node, CPU
// binding, NICs); then pairs of ranks are measured (ping-pong: bandwidth at a large size, latency at a small size,
// every message's data checked) in the rounds of a schedule (mapSchedule.hh: one pair at a time, or rounds of pairs
// that share no rank, measured at the same time), each pair against a deadline, and each pair gets a path class with
// the evidence for it. JSON output: docs/map-schema.md (schema "gpumpi.map/1"; with --stream also the plan and one
// record per round as they happen). Thread: main thread only. Never throws.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace gpumpi::map {

/** Options of one `gpumpi map` run (validated by cli/mapCmd.cc). */
struct MapOptions {
	bool json = false;
	bool sampled = false;                      // --pairs sampled (forced when world size > maxRanks)
	int maxRanks = 16;                         // all pairs up to this many ranks
	unsigned long long largeBytes = 64ull << 20;  // bandwidth size
	unsigned long long smallBytes = 8;            // latency size
	int iters = 5;                             // timed round trips per size (best counts)
	std::string memory = "device";             // device | host
	std::string schedule = "auto";             // auto (rounds when sampled) | sequential | rounds
	double pairTimeoutS = 60;                  // per pair: every wait is polled against this deadline
	bool stream = false;                       // --stream (with --json): the plan and a record per round, then the document
	bool finalWithoutPairs = false;            // --final-without-pairs (with --stream): the document leaves the pairs to the records
};

/** Exit status of a run that printed its document but ended with MPI_Abort (a rank silent or stuck). */
constexpr int kExitIncomplete = 4;

/** Whether `o` measures in rounds of concurrent pairs (--schedule rounds, or auto and a sampled map). */
bool roundsSchedule(const MapOptions& o, bool sampled);

/** Run the map (calls MPI_Init / MPI_Finalize). Returns the process exit code. */
int runMap(const MapOptions& o);

}  // namespace gpumpi::map
