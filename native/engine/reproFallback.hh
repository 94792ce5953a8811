// `gpumpi repro fallback`: the persistent-fallback-buffer question of shared/seeds (UCX discussion): 2 ranks move
// device buffers of growing size (1 MiB .. 1 GiB by default) three ways: `mpi` (device pointers straight to
// MPI_Isend/Irecv), `staged` (our own pipeline through persistent pinned host buffers: nbuf x chunk, D2H overlapped
// with MPI and H2D), and `host` (host-to-host baseline). For each size and mode: bandwidth (best / median), the data
// verified, and each rank's peak growth of resident, pinned/locked host and device memory during the transfer
// (sampled every ~1 ms). The verdict is the runner's job (it also has the transport evidence).
#pragma once
#include "reproOptions.hh"

namespace gpumpi::repro {

/** Run the sweep in this rank; returns the process exit code. */
int runFallback(const FallbackOptions& opts);

}  // namespace gpumpi::repro
