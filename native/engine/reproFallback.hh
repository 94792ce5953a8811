// `gpumpi repro fallback`: the persistent-fallback-buffer question of shared/seeds (UCX discussion): 2 ranks move
// device buffers of growing size (1 MiB .. 1 GiB by default) three ways: `mpi` (device pointers straight to
// MPI_Isend/Irecv), `staged` (our own pipeline through persistent pinned host buffers: nbuf x chunk, D2H overlapped
// with MPI and H2D), and `host` (host-to-host baseline). For each size and mode: bandwidth (best / median), the data
// verified, and each rank's peak growth of resident, pinned/locked host and device memory during the transfer
// (sampled every ~1 ms). The verdict is the runner's job (it also has the transport evidence).
#pragma once
#include <string>
#include <vector>

namespace gpumpi::repro {

/** Options of one `repro fallback` run (already validated by the CLI). */
struct FallbackOptions {
	std::vector<unsigned long long> sizes;  // bytes, each a multiple of 4
	std::vector<std::string> modes;         // mpi | staged | host
	unsigned long long chunkBytes = 16ull << 20;
	int nbuf = 4;
	std::string memory = "device";  // device | host
	int iters = 3;
	bool json = false;
};

/** Largest single MPI message the reproducer posts; bigger transfers are split, as users must (count is an int). */
constexpr unsigned long long kMaxMessageBytes = 1ull << 30;

/** Run the sweep in this rank; returns the process exit code. */
int runFallback(const FallbackOptions& opts);

}  // namespace gpumpi::repro
