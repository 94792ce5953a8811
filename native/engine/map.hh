// `gpumpi map`: the transport map of an MPI job. Every rank reports where it runs (host, GPU, NUMA node, CPU
// binding, NICs); then pairs of ranks are measured one at a time (ping-pong: bandwidth at a large size, latency at a
// small size) while the other ranks wait at a barrier, and each pair gets a path class with the evidence for it.
// JSON output: docs/map-schema.md (schema "gpumpi.map/1"). Thread: main thread only. Never throws.
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
};

/** Which pairs to measure: all a<b pairs, or every intra-host pair plus one representative pair per host pair. */
std::vector<std::pair<int, int>> selectPairs(const std::vector<std::string>& hostOfRank, bool sampled);

/** Run the map (calls MPI_Init / MPI_Finalize). Returns the process exit code. */
int runMap(const MapOptions& o);

}  // namespace gpumpi::map
