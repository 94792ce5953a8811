#include "reproCommon.hh"

#include "docFrame.hh"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

namespace gpumpi::repro {

int localRankFromEnv() {
	static const char* const names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMIX_LOCAL_RANK",
	                                    "PMI_LOCAL_RANK", "SLURM_LOCALID", "MV2_COMM_WORLD_LOCAL_RANK"};
	for (const char* n : names) {
		const char* v = std::getenv(n);
		if (v && *v) {
			char* end = nullptr;
			long r = std::strtol(v, &end, 10);
			if (end && *end == '\0' && r >= 0 && r < 1 << 20) return static_cast<int>(r);
		}
	}
	return 0;
}

CudaSetup setupCudaBeforeMpi(int localRank) {
	CudaSetup s;
	const CudaDriver& d = cudaDriver();
	if (!d.loaded) {
		s.reason = d.error.empty() ? "libcuda.so.1 could not be loaded" : d.error;
		return s;
	}
	CUresult r = d.cuInit(0);
	if (r != CUDA_SUCCESS) {
		s.reason = "cuInit: " + cudaErrorText(r);
		return s;
	}
	r = d.cuDeviceGetCount(&s.deviceCount);
	if (r != CUDA_SUCCESS) {
		s.reason = "cuDeviceGetCount: " + cudaErrorText(r);
		return s;
	}
	if (s.deviceCount <= 0) {
		s.reason = "the CUDA driver loaded but reports no GPU (cuDeviceGetCount = 0)";
		return s;
	}
	if (!d.cuDevicePrimaryCtxRetain || !d.cuCtxSetCurrent || !d.cuMemAlloc || !d.cuIpcGetMemHandle) {
		s.reason = "libcuda.so.1 lacks an entry point the reproducer needs";
		return s;
	}
	int ordinal = localRank % s.deviceCount;
	CUdevice dev = 0;
	r = d.cuDeviceGet(&dev, ordinal);
	if (r != CUDA_SUCCESS) {
		s.reason = "cuDeviceGet(" + std::to_string(ordinal) + "): " + cudaErrorText(r);
		return s;
	}
	r = d.cuDevicePrimaryCtxRetain(&s.ctx, dev);
	if (r != CUDA_SUCCESS) {
		s.reason = "cuDevicePrimaryCtxRetain: " + cudaErrorText(r);
		s.ctx = nullptr;
		return s;
	}
	r = d.cuCtxSetCurrent(s.ctx);
	if (r != CUDA_SUCCESS) {
		s.reason = "cuCtxSetCurrent: " + cudaErrorText(r);
		d.cuDevicePrimaryCtxRelease(dev);
		s.ctx = nullptr;
		return s;
	}
	s.device = ordinal;
	s.usable = true;
	return s;
}

void releaseCuda(const CudaSetup& setup) {
	if (!setup.ctx) return;
	const CudaDriver& d = cudaDriver();
	CUdevice dev = 0;
	if (d.cuDeviceGet && d.cuDeviceGet(&dev, setup.device) == CUDA_SUCCESS && d.cuDevicePrimaryCtxRelease)
		d.cuDevicePrimaryCtxRelease(dev);
}

std::string mpiErrorText(int rc) {
	char buf[MPI_MAX_ERROR_STRING + 1] = {0};
	int len = 0;
	if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
	if (len < 0) len = 0;
	if (len > MPI_MAX_ERROR_STRING) len = MPI_MAX_ERROR_STRING;
	return std::string(buf, std::strlen(buf));
}

int mpiErrorClass(int rc) {
	int cls = rc;
	if (MPI_Error_class(rc, &cls) != MPI_SUCCESS) return rc;
	return cls;
}

static std::string trimmed(const char* s, size_t n) {
	std::string out(s, strnlen(s, n));
	while (!out.empty() && (out.back() == '\n' || out.back() == ' ' || out.back() == '\t' || out.back() == '\r')) out.pop_back();
	return out;
}

namespace {
// Which order this process used: "before" (default) or "after" MPI_Init (GPUMPI_CUDA_INIT=after-mpi-init).
const char* gCudaInitOrder = "before";
}  // namespace

bool cudaAfterMpiInitRequested(std::string& error) {
	const char* v = std::getenv("GPUMPI_CUDA_INIT");
	if (!v || !*v || std::strcmp(v, "before-mpi-init") == 0) return false;
	if (std::strcmp(v, "after-mpi-init") == 0) return true;
	error = std::string("GPUMPI_CUDA_INIT='") + v + "' is not one of before-mpi-init, after-mpi-init; using before-mpi-init";
	return false;
}

void writeMpiJson(JsonWriter& w) {
	char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {0};
	int len = 0;
	std::string version;
	if (MPI_Get_library_version(lib, &len) == MPI_SUCCESS) version = trimmed(lib, sizeof lib - 1);
	w.beginObject();
	w.key("library_version").value(version);
	w.key("cuda_first_touched").value(std::string(gCudaInitOrder) + " MPI_Init");
#if defined(OPEN_MPI) && OPEN_MPI
	w.key("implementation").value("openmpi");
#elif defined(MPICH_VERSION)
	w.key("implementation").value("mpich");
#else
	w.key("implementation").value("unknown");
#endif
	w.key("cuda_aware").beginObject();
#if defined(OPEN_MPI) && OPEN_MPI && defined(MPIX_CUDA_AWARE_SUPPORT)
	w.key("compile_time").value(MPIX_CUDA_AWARE_SUPPORT ? true : false);
	w.key("run_time").value(MPIX_Query_cuda_support() ? true : false);
	w.key("query").value("MPIX_Query_cuda_support");
#elif defined(MPICH_VERSION) && defined(MPIX_GPU_SUPPORT_CUDA)
	w.key("compile_time").null();
	int ok = 0;
	if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &ok) == MPI_SUCCESS) w.key("run_time").value(ok ? true : false);
	else w.key("run_time").null();
	w.key("query").value("MPIX_GPU_query_support");
#else
	w.key("compile_time").null();
	w.key("run_time").null();
	w.key("query").value("");
#endif
	w.endObject();
	w.endObject();
}

std::string hostName() {
	char buf[256] = {0};
	if (gethostname(buf, sizeof buf - 1) != 0) return "?";
	return buf;
}

std::vector<std::string> allHostNames(int size) {
	char mine[256] = {0};
	std::snprintf(mine, sizeof mine, "%s", hostName().c_str());
	std::vector<char> all(static_cast<size_t>(size > 0 ? size : 1) * 256, 0);
	MPI_Allgather(mine, 256, MPI_CHAR, all.data(), 256, MPI_CHAR, MPI_COMM_WORLD);
	std::vector<std::string> out;
	for (int r = 0; r < size; r++) out.emplace_back(&all[static_cast<size_t>(r) * 256], strnlen(&all[static_cast<size_t>(r) * 256], 256));
	return out;
}

bool startReproMpi(const std::string& memory, const char* what, ReproStart& out) {
	// CUDA is set up before MPI_Init by default; GPUMPI_CUDA_INIT=after-mpi-init touches it first after MPI_Init, the
	// order many applications use (the device experiment of docs/device-results.md compares the two).
	std::string orderError;
	const bool after = memory == "device" && cudaAfterMpiInitRequested(orderError);
	if (!orderError.empty()) std::fprintf(stderr, "gpumpi %s: %s\n", what, orderError.c_str());
	if (memory == "device" && !after) {
		out.cuda = setupCudaBeforeMpi(localRankFromEnv());
		if (!out.cuda.usable) out.gpuReason = out.cuda.reason;
	} else if (memory != "device") {
		out.gpuReason = "host memory was requested (--memory host)";
	}
	int provided = 0;
	int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
	if (rc != MPI_SUCCESS) {
		std::fprintf(stderr, "gpumpi %s: MPI_Init failed (%d)\n", what, rc);
		releaseCuda(out.cuda);
		return false;
	}
	if (after) {
		gCudaInitOrder = "after";
		out.cuda = setupCudaBeforeMpi(localRankFromEnv());
		if (!out.cuda.usable) out.gpuReason = out.cuda.reason;
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, &out.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &out.size);
	announceRank(out.rank);
	// Every rank must agree on the memory kind: device only when all ranks have a usable GPU.
	int gpuHere = out.cuda.usable ? 1 : 0, gpuAll = 0;
	MPI_Allreduce(&gpuHere, &gpuAll, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	out.device = gpuAll == 1;
	if (memory == "device" && !out.device && out.gpuReason.empty()) out.gpuReason = "another rank has no usable GPU";
	return true;
}

void announceRank(int rank) {
	std::fprintf(stderr, "%s rank=%d pid=%d host=%s\n", kRankLine, rank, static_cast<int>(getpid()), hostName().c_str());
	std::fflush(stderr);
}

void printJsonDocument(const std::string& json) {
	std::string error;
	if (!writeFramedDocument(json, error)) {
		std::fprintf(stderr, "gpumpi: the result document could not be written to stdout (%s)\n", error.c_str());
		std::fflush(stderr);
	}
}

bool gatherStrings(const std::string& mine, std::vector<std::string>& all, std::string& error) {
	int rank = 0, size = 1;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int len = static_cast<int>(mine.size());
	std::vector<int> lens(rank == 0 ? size : 1, 0);
	int rc = MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS) {
		error = "MPI_Gather: " + mpiErrorText(rc);
		return false;
	}
	std::vector<int> displs(rank == 0 ? size : 1, 0);
	long long total = 0;
	if (rank == 0) {
		for (int i = 0; i < size; i++) {
			displs[i] = static_cast<int>(total);
			total += lens[i];
		}
	}
	std::vector<char> buf(rank == 0 ? static_cast<size_t>(total) + 1 : 1);
	rc = MPI_Gatherv(mine.data(), len, MPI_CHAR, buf.data(), lens.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS) {
		error = "MPI_Gatherv: " + mpiErrorText(rc);
		return false;
	}
	if (rank == 0) {
		all.clear();
		for (int i = 0; i < size; i++) all.emplace_back(buf.data() + displs[i], static_cast<size_t>(lens[i]));
	}
	return true;
}

ProcMemory readProcMemory() {
	ProcMemory m;
	FILE* f = std::fopen("/proc/self/status", "r");
	if (!f) return m;
	char line[256];
	while (std::fgets(line, sizeof line, f)) {
		long long kb = 0;
		if (std::sscanf(line, "VmRSS: %lld kB", &kb) == 1) m.rss = kb * 1024;
		else if (std::sscanf(line, "VmHWM: %lld kB", &kb) == 1) m.hwm = kb * 1024;
		else if (std::sscanf(line, "VmPin: %lld kB", &kb) == 1) m.pinned = kb * 1024;
		else if (std::sscanf(line, "VmLck: %lld kB", &kb) == 1) m.locked = kb * 1024;
	}
	std::fclose(f);
	return m;
}

static void storeMax(std::atomic<long long>& a, long long v) {
	long long cur = a.load();
	while (v > cur && !a.compare_exchange_weak(cur, v)) {
	}
}

static long long deviceUsed(CUcontext ctx) {
	const CudaDriver& d = cudaDriver();
	if (!ctx || !d.cuMemGetInfo) return -1;
	size_t freeB = 0, totalB = 0;
	if (d.cuMemGetInfo(&freeB, &totalB) != CUDA_SUCCESS) return -1;
	return static_cast<long long>(totalB - freeB);
}

void MemorySampler::sampleOnce() {
	ProcMemory m = readProcMemory();
	storeMax(mRssMax, m.rss);
	storeMax(mPinMax, m.pinned);
	storeMax(mLckMax, m.locked);
	if (mCtx) storeMax(mDevMax, deviceUsed(mCtx));
	mSamples++;
}

void MemorySampler::start() {
	stop();
	ProcMemory m = readProcMemory();
	mRssBase = m.rss;
	mPinBase = m.pinned;
	mLckBase = m.locked;
	mDevBase = deviceUsed(mCtx);
	mRssMax = m.rss;
	mPinMax = m.pinned;
	mLckMax = m.locked;
	mDevMax = mDevBase;
	mSamples = 0;
	mRunning = true;
	try {
		mThread = std::thread([this] {
			if (mCtx && cudaDriver().cuCtxSetCurrent) cudaDriver().cuCtxSetCurrent(mCtx);
			while (mRunning.load()) {
				sampleOnce();
				std::this_thread::sleep_for(std::chrono::milliseconds(1));
			}
		});
	} catch (...) {
		mRunning = false;  // no thread: stop() still takes one sample
	}
}

void MemorySampler::stop() {
	bool wasRunning = mRunning.exchange(false);
	if (mThread.joinable()) mThread.join();
	if (wasRunning) sampleOnce();
}

static long long growth(long long base, long long max) { return (base < 0 || max < 0) ? -1 : (max > base ? max - base : 0); }
long long MemorySampler::rssPeakGrowth() const { return growth(mRssBase, mRssMax.load()); }
long long MemorySampler::pinnedPeakGrowth() const { return growth(mPinBase, mPinMax.load()); }
long long MemorySampler::lockedPeakGrowth() const { return growth(mLckBase, mLckMax.load()); }
long long MemorySampler::deviceUsedPeakGrowth() const { return growth(mDevBase, mDevMax.load()); }

std::string formatSize(unsigned long long bytes) {
	char buf[64];
	if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) std::snprintf(buf, sizeof buf, "%llu GiB", bytes >> 30);
	else if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) std::snprintf(buf, sizeof buf, "%llu MiB", bytes >> 20);
	else if (bytes >= (1ull << 10) && bytes % (1ull << 10) == 0) std::snprintf(buf, sizeof buf, "%llu KiB", bytes >> 10);
	else std::snprintf(buf, sizeof buf, "%llu B", bytes);
	return buf;
}

}  // namespace gpumpi::repro
