// The per-rank work of `gpumpi repro ipc` (engine/reproIpc.cc runs it between MPI_Init and the report): owners
// allocate, poison or fill and export (cuIpcGetMemHandle, or POSIX shm on host memory); importers open the handle;
// the variant's transfer; verification word by word in the owner's memory. Thread: main thread only.
// Never throws: every failure lands in the rank's RankResult (status, failing call, message).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#include "gpuMemory.hh"
#include "reproCommon.hh"
#include "reproOptions.hh"

namespace gpumpi::repro {

/** What --inject crash-fraction does in one trial. */
struct InjectedCrash {
	bool crash = false;
	/** 1: SIGSEGV (store through 0x10), 3: abort() (SIGABRT). */
	int rank = -1;
	/** The uniform draw in [0, 1) compared with the fraction (printed, so a test can check it). */
	double draw = 0;
};

/**
 * Deterministic decision from (seed, trial): z = splitmix64(seed XOR trial * 0x9E3779B97F4A7C15); draw = top 53 bits
 * of z / 2^53; crash (or, with wrong-fraction, wrong data) when draw < F; the lowest bit of z picks SIGSEGV in rank 1
 * (0) or abort() in rank 3 (1); with wrong-fraction the owner of that importer (rank 0 or 2) overwrites its data.
 */
InjectedCrash injectedCrash(const IpcOptions& opts);

}  // namespace gpumpi::repro

namespace gpumpi::repro::ipc {

// Fixed-size record gathered on rank 0 as bytes (all ranks run the same binary, so the layout is identical).
struct RankResult {
	int rank = 0, localRank = 0, pid = 0, device = -1;
	int status = kOk;
	int errorClass = 0;  // MPI_Error_class for mpi_error
	int verified = 0;    // 1 when this rank checked words
	int pad = 0;
	long long checkedWords = 0, wrongWords = 0, firstWrongIndex = -1;
	unsigned firstWrongValue = 0, firstWrongExpected = 0;
	double transferSeconds = 0;
	char role[48] = {0};
	char buffer[96] = {0};  // what this rank passed to MPI
	char call[64] = {0};    // failing call
	char error[512] = {0};
	char host[256] = {0};
};

/** Copy s into a fixed char buffer, cut and NUL-terminated. */
inline void copyText(char* dst, size_t cap, const std::string& s) {
	size_t n = s.size() < cap - 1 ? s.size() : cap - 1;
	std::memcpy(dst, s.data(), n);
	dst[n] = '\0';
}


// One memory region: device (CUdeviceptr) or host (plain pointer); `shm` when it is a POSIX shm mapping.
struct Region {
	void* ptr = nullptr;
	CUdeviceptr dev = 0;
	bool device = false;
	bool shm = false;
	bool pinned = false;
	bool imported = false;
	size_t bytes = 0;
	void* mpiPtr() const { return device ? reinterpret_cast<void*>(static_cast<uintptr_t>(dev)) : ptr; }
};

/** One rank's part of one variant. */
class IpcRun {
public:
	IpcRun(const IpcOptions& o, const CudaSetup& cuda, bool device) : mOpt(o), mCuda(cuda), mDevice(device) {}

	void run(int rank, int size);
	RankResult& result() { return mRes; }

private:
	bool fail(int status, const std::string& call, const std::string& text) {
		if (mRes.status == kOk || status > mRes.status) {
			mRes.status = status;
			copyText(mRes.call, sizeof mRes.call, call);
			copyText(mRes.error, sizeof mRes.error, text);
		}
		return false;
	}
	bool cuda(CUresult r, const char* call) { return r == CUDA_SUCCESS ? true : fail(kSetupError, call, cudaErrorText(r)); }
	bool mpi(int rc, const char* call) {
		if (rc == MPI_SUCCESS) return true;
		mRes.errorClass = mpiErrorClass(rc);
		return fail(kMpiError, call, mpiErrorText(rc));
	}
	bool allocLocal(Region& r, bool pinnedHost);
	bool fillPattern(Region& r, int sender);
	bool poison(Region& r);
	bool verify(const Region& r, int sender);
	bool exportRegion(Region& r, char handle[64]);
	bool importRegion(const char handle[64], Region& r);
	void freeRegion(Region& r);
	bool copyInto(Region& dst, const Region& src);
	bool receive(Region& into, int from);
	bool sendFrom(Region& from, int to);
	/** Variants pool and vmm: no application IPC; MPI moves a buffer allocated that way to the same-node partner. */
	void runAllocated(int rank);
	/** Every rank's set-up succeeded (MPI_Allreduce MIN on MPI_COMM_WORLD; a failed reduce counts as no). */
	bool allReady(bool ok);
	// The steps of run() for the IPC variants (reproIpcRun.cc), each on this rank's Plan.
	struct Plan;
	Plan plan(int rank) const;
	bool shareAllocation(const Plan& p, Region& owned, Region& imported);
	bool allocLocalBuffer(const Plan& p, Region& local);
	void crashIfDrawn(const Plan& p);
	void transfer(const Plan& p, Region& imported, Region& local);
	void verifyOwner(const Plan& p, Region& owned, Region& local);

	const IpcOptions& mOpt;
	const CudaSetup& mCuda;
	bool mDevice;
	RankResult mRes;
	std::string mShmName;
};

}  // namespace gpumpi::repro::ipc
