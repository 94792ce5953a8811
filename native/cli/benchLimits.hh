// The copy limits `gpumpi bench` reports beside its transfers (docs/library.md, "limits").
#pragma once

#include <cstddef>

namespace gpumpi::cli {

/** One process: D2H and H2D alone (one pinned buffer of min(bytes, 1 GiB)), and duplex = both at once on two
 *  streams of this process (per direction). Best of 3; -1 without CUDA. */
struct CopyLimits { double d2h = -1, h2d = -1, duplex = -1; };
CopyLimits copyLimits(bool device, size_t bytes);

/** Two processes on one GPU, the shm path's copies without its protocol: each rank copies `bytes` of device memory
 *  in `chunk` pieces through a ring of `nbuf` host slots on one stream, rank 0 D2H, rank 1 H2D. Alone (one rank at a
 *  time) and both at once (started by a barrier), with the ring in memory from cuMemHostAlloc ("alloc") and in
 *  shared anonymous memory pinned with cuMemHostRegister ("registered", what the shm segments are; and "huge", the
 *  same after madvise(MADV_HUGEPAGE)). Also both at
 *  once with one whole copy each ("whole"). GB/s per direction, best of 3; -1 without CUDA or where it failed. */
struct PairLimits {
	size_t chunk = 0;
	int nbuf = 0;
	double aloneD2h = -1, aloneH2d = -1;                     // ring "alloc"
	double bothD2h = -1, bothH2d = -1;                       // ring "alloc"
	double bothRegD2h = -1, bothRegH2d = -1;                 // ring "registered"
	double bothHugeD2h = -1, bothHugeH2d = -1;               // ring "registered", madvise(MADV_HUGEPAGE) first
	double bothWholeD2h = -1, bothWholeH2d = -1;             // one copy of `bytes` each
	bool measured() const { return bothD2h > 0 && bothH2d > 0; }
};
/** Collective over MPI_COMM_WORLD (exactly 2 ranks; every rank calls it). Meaningful on rank 0. */
PairLimits pairLimits(bool device, int rank, size_t bytes, size_t chunk, int nbuf);

}  // namespace gpumpi::cli
