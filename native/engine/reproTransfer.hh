// The data mover of `gpumpi repro fallback` (engine/reproFallback.cc): buffers of both ranks and one timed transfer
// rank 0 -> rank 1 in a mode: `mpi` (device pointers straight to MPI), `staged` (our pipeline through nbuf x chunk
// persistent pinned host buffers: async D2H overlapped with the MPI sends of earlier chunks, sends in order;
// receives posted in order, async H2D, a buffer reused once its copy finished), `host` (host-to-host baseline).
// With --memory host the "device" buffer is plain host memory (same code paths, no CUDA calls).
// Thread: main thread only. Never throws; failures come back as a Status (reproCommon.hh) with error() set.
#pragma once
#include <string>
#include <vector>

#include "libModes.hh"
#include "reproCommon.hh"
#include "reproOptions.hh"

namespace gpumpi::repro {

/** Buffers and transfers of one rank (rank 0 sends, rank 1 receives). */
class FallbackRun {
public:
	FallbackRun(const FallbackOptions& o, const CudaSetup& cuda, bool device, int rank)
	    : mOpt(o), mCuda(cuda), mDevice(device), mRank(rank) {}
	~FallbackRun() { release(); }

	/** Allocate buffers (both ranks); false with mError on failure. */
	bool setup(unsigned long long maxSize, bool needStaging, bool needHost);
	/** One timed transfer rank 0 -> rank 1 of `size` bytes in `mode`. Returns status; seconds = this rank's time. */
	int transfer(const std::string& mode, unsigned long long size, double& seconds);
	/** Poison the receiver's target for `mode` (outside the timing). */
	int poison(const std::string& mode, unsigned long long size);
	/** Receiver: count wrong words of the last transfer. */
	int verify(const std::string& mode, unsigned long long size, long long& words, long long& wrong);
	CUcontext ctx() const { return mDevice ? mCuda.ctx : nullptr; }
	long long libraryPinned(const std::string& mode) const {
		if (isLibMode(mode)) return mLib ? mLib->pinnedBytes() : 0;
		return mode == "staged" && mDevice ? static_cast<long long>(mStageBytes) : 0;
	}
	/** The libgpumpi session the lib-* modes run through (owned by the caller; null: none started). */
	void attachLib(LibSession* lib) { mLib = lib; }
	/** The protocol the last lib-* transfer used ("" for the other modes). */
	const char* lastProtocol() const { return mLastProto; }
	const std::string& error() const { return mError; }
	int errorClass() const { return mErrorClass; }

private:
	int failCuda(CUresult r, const char* call) {
		mError = std::string(call) + ": " + cudaErrorText(r);
		return kSetupError;
	}
	int failMpi(int rc, const char* call) {
		mErrorClass = mpiErrorClass(rc);
		mError = std::string(call) + ": " + mpiErrorText(rc);
		return kMpiError;
	}
	int plain(void* buf, unsigned long long size);  // mpi / host modes
	int stagedSend(unsigned long long size);
	int stagedRecv(unsigned long long size);
	// The staged pipeline's steps, shared by both directions (kOk, else the failure's status with mError set):
	/** Staging buffer b (`host`) <-> the device buffer at `off`: async on mStream, then buffer b's event recorded; with
	 *  --memory host a memcpy, finished on return. */
	int copyStage(int b, char* host, unsigned long long off, int len, bool toHost);
	/** Whether buffer b's last copyStage has finished (*done). */
	int copyDone(int b, bool* done);
	/** Whether `req` has completed (MPI_Test; *done); `call` names it in the error. */
	int mpiDone(MPI_Request* req, const char* call, bool* done);
	void release();

	const FallbackOptions& mOpt;
	const CudaSetup& mCuda;
	bool mDevice;
	int mRank;
	CUdeviceptr mDev = 0;        // device buffer (device memory)
	void* mDevHost = nullptr;    // stands in for the device buffer with --memory host
	void* mHost = nullptr;       // host baseline buffer
	void* mStage = nullptr;      // nbuf x chunk staging buffers (pinned with device memory)
	unsigned long long mStageBytes = 0, mHostBytes = 0;
	CUstream mStream = nullptr;
	std::vector<CUevent> mEvents;
	std::string mError;
	int mErrorClass = 0;
	LibSession* mLib = nullptr;
	const char* mLastProto = "";
};

}  // namespace gpumpi::repro
