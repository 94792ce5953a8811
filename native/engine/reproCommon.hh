// Pieces shared by the two reproducers (`gpumpi repro ipc`, `gpumpi repro fallback`): CUDA set-up before MPI_Init,
// the test pattern, MPI error text, the JSON markers, and a background sampler of this process's memory.
// Thread: everything here is called from the main thread, except MemorySampler's own thread (documented there).
// Never throws: failures are returned as text.
#pragma once
#include <mpi.h>  // C API only: CMake sets OMPI_SKIP_MPICXX / MPICH_SKIP_MPICXX for every target

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "cudaDriver.hh"
#include "json.hh"

namespace gpumpi::repro {

/** Word written into a target before a transfer; never produced by pattern(). */
constexpr uint32_t kPoison = 0xDEADBEEFu;

/** The 32-bit word `index` of a message sent by `senderRank`: depends on both, never 0 and never kPoison. */
inline uint32_t pattern(int senderRank, uint64_t index) {
	uint32_t v = static_cast<uint32_t>(senderRank + 1) * 0x9E3779B1u ^ static_cast<uint32_t>(index * 0x85EBCA77ull) ^
	             static_cast<uint32_t>(index >> 32);
	if (v == 0 || v == kPoison) v = 0x13579BDFu;
	return v;
}

/**
 * One rank's outcome of a transfer, ordered by severity: a run's outcome is the worst of its ranks. kSkipped: a
 * fallback measurement not made (after an earlier failure at that size, or not applicable).
 */
enum Status : int { kOk = 0, kWrongData = 1, kMpiError = 2, kSetupError = 3, kSkipped = 4 };

/** The documents' name of a status: "ok", "wrong_data", "mpi_error", "setup_error", "skipped". */
inline const char* statusName(int status) {
	switch (status) {
		case kOk: return "ok";
		case kWrongData: return "wrong_data";
		case kMpiError: return "mpi_error";
		case kSetupError: return "setup_error";
		default: return "skipped";
	}
}

/** Local rank from the launcher's environment (Open MPI, MPICH/Hydra, Slurm, PMIx), or 0. */
int localRankFromEnv();

/** What the CUDA set-up before MPI_Init achieved. */
struct CudaSetup {
	bool usable = false;   // a context is current and memory can be allocated
	std::string reason;    // why not (e.g. "libcuda.so.1: cannot open shared object file: ...")
	int device = -1;       // ordinal made current
	int deviceCount = 0;
	CUcontext ctx = nullptr;
};

/**
 * Load the driver, cuInit, retain the primary context of device (localRank % count) and make it current.
 * Runs before MPI_Init by default (startReproMpi; GPUMPI_CUDA_INIT=after-mpi-init runs it after). Never throws.
 */
CudaSetup setupCudaBeforeMpi(int localRank);

/** GPUMPI_CUDA_INIT=after-mpi-init? A bad value is false with `error` set (the caller prints it). */
bool cudaAfterMpiInitRequested(std::string& error);

/** Release what setupCudaBeforeMpi retained (after MPI_Finalize). */
void releaseCuda(const CudaSetup& setup);

/** What startReproMpi established: the CUDA set-up, this rank, and the memory kind every rank agreed on. */
struct ReproStart {
	CudaSetup cuda;
	int rank = 0;
	int size = 0;
	bool device = false;    // every rank has a usable GPU and device memory was asked for
	std::string gpuReason;  // why the run is not on device memory ("" when device)
};

/**
 * The start of every reproducer: when `memory` is "device", set CUDA up before MPI_Init; then MPI_Init, errors
 * returned (MPI_ERRORS_RETURN), the rank line announced, and device memory only when all ranks have a usable GPU.
 * Returns false (after printing "gpumpi <what>: MPI_Init failed") when MPI_Init fails; CUDA is released then.
 */
bool startReproMpi(const std::string& memory, const char* what, ReproStart& out);

/** "MPI_ERR_TRUNCATE: message truncated" style text for an MPI return code. */
std::string mpiErrorText(int rc);

/** MPI_Error_class of rc (or rc when that fails). */
int mpiErrorClass(int rc);

/** Write {"library_version","implementation","cuda_aware":{compile_time,run_time,query}} as a value. */
void writeMpiJson(JsonWriter& w);

/** gethostname(), or "?" */
std::string hostName();

/** Every rank's hostName() (at most 255 bytes each), in rank order, on every rank (MPI_Allgather of MPI_COMM_WORLD). */
std::vector<std::string> allHostNames(int size);

/** Marker of the line each rank prints on stderr after MPI_Init, so a runner can map a crashed pid to its rank. */
constexpr const char* kRankLine = "@@GPUMPI-RANK@@";

/** Print "@@GPUMPI-RANK@@ rank=R pid=P host=H" on stderr (one line, flushed). */
void announceRank(int rank);

/** Print `json` on stdout as a framed document (native/common/docFrame.hh); a write failure is reported on stderr. */
void printJsonDocument(const std::string& json);

/** Gather one JSON fragment per rank on rank 0 (in rank order). Returns false (with error) if MPI failed. */
bool gatherStrings(const std::string& mine, std::vector<std::string>& all, std::string& error);

/** Fields of /proc/self/status in bytes (-1 when the kernel does not report them). */
struct ProcMemory {
	long long rss = -1;
	long long hwm = -1;
	long long pinned = -1;  // VmPin
	long long locked = -1;  // VmLck
};
ProcMemory readProcMemory();

/**
 * Samples VmRSS / VmPin / VmLck (and, when a CUDA context is given, device memory in use via cuMemGetInfo, which
 * counts every process on that GPU) every ~1 ms on its own thread between start() and stop(), keeping maxima.
 * start()/stop() are called from the main thread; the sampler thread only writes the atomics.
 */
class MemorySampler {
public:
	explicit MemorySampler(CUcontext ctx) : mCtx(ctx) {}
	~MemorySampler() { stop(); }
	/** Take the baseline and start sampling. */
	void start();
	/** Stop sampling (joins the thread) and take a last sample. */
	void stop();
	long long rssBaseline() const { return mRssBase; }
	long long rssPeakGrowth() const;
	long long pinnedPeakGrowth() const;  // -1 when VmPin is not reported
	long long lockedPeakGrowth() const;  // -1 when VmLck is not reported
	long long deviceUsedPeakGrowth() const;  // -1 without a CUDA context
	unsigned long long samples() const { return mSamples.load(); }

private:
	void sampleOnce();
	CUcontext mCtx;
	std::thread mThread;
	std::atomic<bool> mRunning{false};
	std::atomic<unsigned long long> mSamples{0};
	long long mRssBase = -1, mPinBase = -1, mLckBase = -1, mDevBase = -1;
	std::atomic<long long> mRssMax{-1}, mPinMax{-1}, mLckMax{-1}, mDevMax{-1};
};

/** "64 MiB", "1 GiB", "4096 B" */
std::string formatSize(unsigned long long bytes);

}  // namespace gpumpi::repro
