// Copy limits for `gpumpi bench` (benchLimits.hh). The one-process duplex measured 43 GB/s per direction on the
// H200 where the two-process shm path moved 49 GB/s: a single process is not that path's ceiling, so the pair limits
// measure the same copies from two processes on the one GPU, which is the shm path's real ceiling on a one-GPU host.
#include "benchLimits.hh"

#include <mpi.h>
#include <sys/mman.h>

#include <algorithm>

#include "cudaDriver.hh"
#include "gpumpi.h"

namespace gpumpi::cli {

using gpumpi::cudaDriver;

CopyLimits copyLimits(bool device, size_t bytes) {
	CopyLimits L;
	if (!device) return L;
	const auto& d = cudaDriver();
	size_t n = std::min(bytes, static_cast<size_t>(1) << 30);
	void* host[2] = {nullptr, nullptr};
	void* dev[2] = {nullptr, nullptr};
	CUstream st[2] = {nullptr, nullptr};
	bool ok = true;
	for (int k = 0; k < 2 && ok; ++k)
		ok = d.cuMemHostAlloc(&host[k], n, CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS && gpumpi_device_alloc(&dev[k], n) == GPUMPI_SUCCESS &&
		     d.cuStreamCreate(&st[k], 1 /* CU_STREAM_NON_BLOCKING */) == CUDA_SUCCESS;
	if (ok) {
		auto D = [&](int k) { return reinterpret_cast<CUdeviceptr>(dev[k]); };
		for (int i = 0; i < 3; ++i) {
			double t0 = MPI_Wtime();
			d.cuMemcpyDtoH(host[0], D(0), n);
			double t1 = MPI_Wtime();
			d.cuMemcpyHtoD(D(0), host[0], n);
			double t2 = MPI_Wtime();
			d.cuMemcpyDtoHAsync(host[0], D(0), n, st[0]);
			d.cuMemcpyHtoDAsync(D(1), host[1], n, st[1]);
			d.cuStreamSynchronize(st[0]);
			d.cuStreamSynchronize(st[1]);
			double t3 = MPI_Wtime();
			L.d2h = std::max(L.d2h, n / (t1 - t0) / 1e9);
			L.h2d = std::max(L.h2d, n / (t2 - t1) / 1e9);
			L.duplex = std::max(L.duplex, n / (t3 - t2) / 1e9);
		}
	}
	for (int k = 0; k < 2; ++k) {
		if (st[k]) d.cuStreamDestroy(st[k]);
		if (dev[k]) gpumpi_device_free(dev[k]);
		if (host[k]) d.cuMemFreeHost(host[k]);
	}
	return L;
}

namespace {

/** The resources of one rank's pair measurement; released by the destructor. */
struct PairSide {
	const CudaDriver& d = cudaDriver();
	void* dev = nullptr;
	void* ring = nullptr;      // cuMemHostAlloc
	char* reg = nullptr;       // mmap MAP_SHARED|MAP_ANONYMOUS + cuMemHostRegister
	char* huge = nullptr;      // the same with madvise(MADV_HUGEPAGE) first (only where shmem THP allows it)
	bool regPinned = false, hugePinned = false;
	void* whole = nullptr;     // cuMemHostAlloc of the whole size
	CUstream st = nullptr;
	size_t ringBytes = 0, bytes = 0;
	~PairSide() {
		if (st) d.cuStreamDestroy(st);
		if (dev) gpumpi_device_free(dev);
		if (ring) d.cuMemFreeHost(ring);
		if (regPinned) d.cuMemHostUnregister(reg);
		if (reg) munmap(reg, ringBytes);
		if (hugePinned) d.cuMemHostUnregister(huge);
		if (huge) munmap(huge, ringBytes);
		if (whole) d.cuMemFreeHost(whole);
	}
	bool setUp(size_t n, size_t chunk, int nbuf) {
		bytes = n;
		ringBytes = chunk * static_cast<size_t>(nbuf);
		if (d.cuStreamCreate(&st, 1) != CUDA_SUCCESS || gpumpi_device_alloc(&dev, n) != GPUMPI_SUCCESS) return false;
		if (d.cuMemHostAlloc(&ring, ringBytes, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS) return false;
		void* p = mmap(nullptr, ringBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) return false;
		reg = static_cast<char*>(p);
		std::fill(reg, reg + ringBytes, 0);
		regPinned = d.cuMemHostRegister(reg, ringBytes, CU_MEMHOSTREGISTER_PORTABLE) == CUDA_SUCCESS;
		p = mmap(nullptr, ringBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) return false;
		huge = static_cast<char*>(p);
		madvise(huge, ringBytes, MADV_HUGEPAGE);  // a no-op where /sys/kernel/mm/transparent_hugepage/shmem_enabled is never
		std::fill(huge, huge + ringBytes, 0);
		hugePinned = d.cuMemHostRegister(huge, ringBytes, CU_MEMHOSTREGISTER_PORTABLE) == CUDA_SUCCESS;
		return regPinned && hugePinned && d.cuMemHostAlloc(&whole, n, CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS;
	}
	/** Copies `bytes` in chunk pieces through the ring (one stream, issued at once), or whole when chunk == 0. GB/s. */
	double run(bool d2h, char* host, size_t chunk, int nbuf) {
		auto D = reinterpret_cast<CUdeviceptr>(dev);
		double t0 = MPI_Wtime();
		CUresult r = CUDA_SUCCESS;
		if (chunk == 0) {
			r = d2h ? d.cuMemcpyDtoHAsync(host, D, bytes, st) : d.cuMemcpyHtoDAsync(D, host, bytes, st);
		} else {
			for (size_t off = 0, k = 0; off < bytes && r == CUDA_SUCCESS; off += chunk, ++k) {
				size_t len = std::min(chunk, bytes - off);
				char* slot = host + (k % static_cast<size_t>(nbuf)) * chunk;
				r = d2h ? d.cuMemcpyDtoHAsync(slot, D + off, len, st) : d.cuMemcpyHtoDAsync(D + off, slot, len, st);
			}
		}
		if (r == CUDA_SUCCESS) r = d.cuStreamSynchronize(st);
		double t = MPI_Wtime() - t0;
		return r == CUDA_SUCCESS && t > 0 ? bytes / t / 1e9 : -1;
	}
};

/** One measurement on both ranks: `who` 0 = rank 0 alone, 1 = rank 1 alone, 2 = both at once. Best of 3 of each rank's
 *  own rate, gathered to rank 0 as {d2h (rank 0), h2d (rank 1)}. */
/** ring: 0 cuMemHostAlloc slots, 1 registered shared slots, 3 the same with MADV_HUGEPAGE, 2 one whole buffer. */
void measure(PairSide* s, int rank, int who, int ring, size_t chunk, int nbuf, double* d2h, double* h2d) {
	double best = -1;
	for (int i = 0; i < 3; ++i) {
		MPI_Barrier(MPI_COMM_WORLD);
		if (s && (who == 2 || who == rank)) {
			char* host = ring == 0 ? static_cast<char*>(s->ring) : ring == 1 ? s->reg : ring == 3 ? s->huge : static_cast<char*>(s->whole);
			best = std::max(best, s->run(rank == 0, host, ring == 2 ? 0 : chunk, nbuf));
		}
	}
	double both[2] = {-1, -1};
	MPI_Gather(&best, 1, MPI_DOUBLE, both, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		if (who != 1) *d2h = both[0];
		if (who != 0) *h2d = both[1];
	}
}

}  // namespace

PairLimits pairLimits(bool device, int rank, size_t bytes, size_t chunk, int nbuf) {
	PairLimits L;
	L.chunk = chunk;
	L.nbuf = nbuf;
	int ok = 0, all = 0;
	PairSide side;
	if (device && chunk > 0 && nbuf > 0) ok = side.setUp(std::min(bytes, static_cast<size_t>(1) << 30), chunk, nbuf) ? 1 : 0;
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	PairSide* s = all ? &side : nullptr;
	if (!s) return L;
	measure(s, rank, 0, 0, chunk, nbuf, &L.aloneD2h, &L.aloneH2d);
	measure(s, rank, 1, 0, chunk, nbuf, &L.aloneD2h, &L.aloneH2d);
	measure(s, rank, 2, 0, chunk, nbuf, &L.bothD2h, &L.bothH2d);
	measure(s, rank, 2, 1, chunk, nbuf, &L.bothRegD2h, &L.bothRegH2d);
	measure(s, rank, 2, 3, chunk, nbuf, &L.bothHugeD2h, &L.bothHugeH2d);
	measure(s, rank, 2, 2, chunk, nbuf, &L.bothWholeD2h, &L.bothWholeH2d);
	return L;
}

}  // namespace gpumpi::cli
