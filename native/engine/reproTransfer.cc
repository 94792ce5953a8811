#include "reproTransfer.hh"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace gpumpi::repro {
namespace {

void* asPtr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

void fillPatternHost(void* p, unsigned long long bytes) {
	auto* w = static_cast<uint32_t*>(p);
	for (unsigned long long i = 0; i < bytes / 4; i++) w[i] = pattern(0, i);
}

}  // namespace

bool FallbackRun::setup(unsigned long long maxSize, bool needStaging, bool needHost) {
	const CudaDriver& d = cudaDriver();
	if (mDevice) {
		CUresult r = d.cuMemAlloc(&mDev, maxSize);
		if (r != CUDA_SUCCESS) { mDev = 0; failCuda(r, "cuMemAlloc"); return false; }
		if (mRank == 0) {  // fill in chunks through a host buffer
			std::vector<uint32_t> tmp(std::min<unsigned long long>(maxSize, 16ull << 20) / 4);
			for (unsigned long long off = 0; off < maxSize; off += tmp.size() * 4) {
				unsigned long long n = std::min<unsigned long long>(tmp.size() * 4, maxSize - off);
				for (unsigned long long i = 0; i < n / 4; i++) tmp[i] = pattern(0, off / 4 + i);
				r = d.cuMemcpyHtoD(mDev + off, tmp.data(), n);
				if (r != CUDA_SUCCESS) { failCuda(r, "cuMemcpyHtoD"); return false; }
			}
		}
		r = d.cuStreamCreate(&mStream, CU_STREAM_NON_BLOCKING);
		if (r != CUDA_SUCCESS) { mStream = nullptr; failCuda(r, "cuStreamCreate"); return false; }
	} else {
		mDevHost = std::malloc(maxSize);
		if (!mDevHost) { mError = "malloc: cannot allocate " + formatSize(maxSize); return false; }
		if (mRank == 0) fillPatternHost(mDevHost, maxSize);
		else std::memset(mDevHost, 0xA5, maxSize);  // not 0: malloc+memset(0) may become calloc and leave pages untouched
	}
	if (needStaging) {
		mStageBytes = mOpt.chunkBytes * static_cast<unsigned long long>(mOpt.nbuf);
		if (mDevice) {
			CUresult r = d.cuMemAllocHost(&mStage, mStageBytes);
			if (r != CUDA_SUCCESS) { mStage = nullptr; failCuda(r, "cuMemAllocHost (staging)"); return false; }
			mEvents.assign(static_cast<size_t>(mOpt.nbuf), nullptr);
			for (auto& e : mEvents) {
				r = d.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
				if (r != CUDA_SUCCESS) { e = nullptr; failCuda(r, "cuEventCreate"); return false; }
			}
		} else {
			mStage = std::malloc(mStageBytes);
			if (!mStage) { mError = "malloc: cannot allocate the staging buffers"; return false; }
		}
		std::memset(mStage, 0xA5, mStageBytes);
	}
	if (needHost) {
		mHostBytes = maxSize;
		mHost = std::malloc(maxSize);
		if (!mHost) { mError = "malloc: cannot allocate " + formatSize(maxSize) + " host baseline buffer"; return false; }
		if (mRank == 0) fillPatternHost(mHost, maxSize);
		else std::memset(mHost, 0xA5, maxSize);
	}
	return true;
}

void FallbackRun::release() {
	const CudaDriver& d = cudaDriver();
	for (auto e : mEvents)
		if (e) d.cuEventDestroy(e);
	mEvents.clear();
	if (mStream) d.cuStreamDestroy(mStream);
	mStream = nullptr;
	if (mStage) {
		if (mDevice) d.cuMemFreeHost(mStage);
		else std::free(mStage);
	}
	mStage = nullptr;
	if (mDev) d.cuMemFree(mDev);
	mDev = 0;
	std::free(mDevHost);
	mDevHost = nullptr;
	std::free(mHost);
	mHost = nullptr;
}

int FallbackRun::plain(void* buf, unsigned long long size) {
	std::vector<MPI_Request> reqs;
	for (unsigned long long off = 0; off < size; off += kMaxMessageBytes) {
		int n = static_cast<int>(std::min(kMaxMessageBytes, size - off));
		void* p = static_cast<char*>(buf) + off;
		MPI_Request r = MPI_REQUEST_NULL;
		int rc = mRank == 0 ? MPI_Isend(p, n, MPI_BYTE, 1, 11, MPI_COMM_WORLD, &r) : MPI_Irecv(p, n, MPI_BYTE, 0, 11, MPI_COMM_WORLD, &r);
		if (rc != MPI_SUCCESS) {
			if (!reqs.empty()) MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
			return failMpi(rc, mRank == 0 ? "MPI_Isend" : "MPI_Irecv");
		}
		reqs.push_back(r);
	}
	int rc = MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
	return rc == MPI_SUCCESS ? kOk : failMpi(rc, "MPI_Waitall");
}

namespace {

/**
 * One staged transfer's view of the nbuf x chunk staging buffers: buffer b's address, chunk k's offset and length, and
 * per buffer the chunk it holds, its state (kIdle = 0, then the direction's own) and its MPI request.
 */
struct StageSlots {
	StageSlots(void* stage, unsigned long long chunkBytes, unsigned long long bytes, int nbuf)
	    : base(static_cast<char*>(stage)), chunk(chunkBytes), size(bytes), chunks(static_cast<long long>((bytes + chunkBytes - 1) / chunkBytes)),
	      state(static_cast<size_t>(nbuf), 0), which(static_cast<size_t>(nbuf), -1), req(static_cast<size_t>(nbuf), MPI_REQUEST_NULL) {}
	int count() const { return static_cast<int>(state.size()); }
	char* buffer(int b) const { return base + static_cast<unsigned long long>(b) * chunk; }
	unsigned long long offset(long long k) const { return static_cast<unsigned long long>(k) * chunk; }
	int length(long long k) const { return static_cast<int>(std::min(chunk, size - offset(k))); }

	char* const base;
	const unsigned long long chunk, size;
	const long long chunks;
	std::vector<int> state;
	std::vector<long long> which;
	std::vector<MPI_Request> req;
};

constexpr int kIdle = 0;

}  // namespace

int FallbackRun::copyStage(int b, char* host, unsigned long long off, int len, bool toHost) {
	if (!mDevice) {
		char* dev = static_cast<char*>(mDevHost) + off;
		if (toHost) std::memcpy(host, dev, len);
		else std::memcpy(dev, host, len);
		return kOk;
	}
	const CudaDriver& d = cudaDriver();
	CUresult r = toHost ? d.cuMemcpyDtoHAsync(host, mDev + off, len, mStream) : d.cuMemcpyHtoDAsync(mDev + off, host, len, mStream);
	if (r != CUDA_SUCCESS) return failCuda(r, toHost ? "cuMemcpyDtoHAsync" : "cuMemcpyHtoDAsync");
	r = d.cuEventRecord(mEvents[b], mStream);
	return r == CUDA_SUCCESS ? kOk : failCuda(r, "cuEventRecord");
}

int FallbackRun::copyDone(int b, bool* done) {
	*done = true;
	if (!mDevice) return kOk;
	CUresult r = cudaDriver().cuEventQuery(mEvents[b]);
	*done = r == CUDA_SUCCESS;
	return r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY ? kOk : failCuda(r, "cuEventQuery");
}

int FallbackRun::mpiDone(MPI_Request* req, const char* call, bool* done) {
	int flag = 0;
	int rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
	*done = flag != 0;
	return rc == MPI_SUCCESS ? kOk : failMpi(rc, call);
}

// Sender: D2H copies of chunk k (async, on one stream) overlap the MPI sends of earlier chunks; sends go out in order.
int FallbackRun::stagedSend(unsigned long long size) {
	enum { kCopying = 1, kSending = 2 };
	StageSlots s(mStage, mOpt.chunkBytes, size, mOpt.nbuf);
	long long nextCopy = 0, nextSend = 0, done = 0;
	while (done < s.chunks) {
		for (int b = 0; b < s.count(); b++) {
			if (s.state[b] != kIdle || nextCopy >= s.chunks) continue;
			if (int st = copyStage(b, s.buffer(b), s.offset(nextCopy), s.length(nextCopy), true)) return st;
			s.which[b] = nextCopy++;
			s.state[b] = kCopying;
		}
		for (bool sent = true; sent;) {  // post every copied chunk that is next in order
			sent = false;
			for (int b = 0; b < s.count(); b++) {
				if (s.state[b] != kCopying || s.which[b] != nextSend) continue;
				bool copied = false;
				if (int st = copyDone(b, &copied)) return st;
				if (!copied) break;
				int rc = MPI_Isend(s.buffer(b), s.length(s.which[b]), MPI_BYTE, 1, 12, MPI_COMM_WORLD, &s.req[b]);
				if (rc != MPI_SUCCESS) return failMpi(rc, "MPI_Isend (staged)");
				s.state[b] = kSending;
				nextSend++;
				sent = true;
			}
		}
		for (int b = 0; b < s.count(); b++) {
			if (s.state[b] != kSending) continue;
			bool sentAll = false;
			if (int st = mpiDone(&s.req[b], "MPI_Test (staged send)", &sentAll)) return st;
			if (sentAll) { s.state[b] = kIdle; done++; }
		}
	}
	return kOk;
}

// Receiver: receives are posted in chunk order into free staging buffers; each completed one is copied H2D (async)
// and its buffer is reused once that copy has finished.
int FallbackRun::stagedRecv(unsigned long long size) {
	enum { kReceiving = 1, kCopying = 2 };
	StageSlots s(mStage, mOpt.chunkBytes, size, mOpt.nbuf);
	long long nextPost = 0, done = 0;
	while (done < s.chunks) {
		for (int b = 0; b < s.count(); b++) {
			if (s.state[b] != kIdle || nextPost >= s.chunks) continue;
			int rc = MPI_Irecv(s.buffer(b), s.length(nextPost), MPI_BYTE, 0, 12, MPI_COMM_WORLD, &s.req[b]);
			if (rc != MPI_SUCCESS) return failMpi(rc, "MPI_Irecv (staged)");
			s.which[b] = nextPost++;
			s.state[b] = kReceiving;
		}
		for (int b = 0; b < s.count(); b++) {
			bool finished = false;
			if (s.state[b] == kReceiving) {
				if (int st = mpiDone(&s.req[b], "MPI_Test (staged receive)", &finished)) return st;
				if (!finished) continue;
				if (int st = copyStage(b, s.buffer(b), s.offset(s.which[b]), s.length(s.which[b]), false)) return st;
				s.state[b] = mDevice ? kCopying : kIdle;  // with --memory host the copy is done already
				if (!mDevice) done++;
			} else if (s.state[b] == kCopying) {
				if (int st = copyDone(b, &finished)) return st;
				if (!finished) continue;
				s.state[b] = kIdle;
				done++;
			}
		}
	}
	if (mDevice) {
		CUresult r = cudaDriver().cuStreamSynchronize(mStream);
		if (r != CUDA_SUCCESS) return failCuda(r, "cuStreamSynchronize");
	}
	return kOk;
}

int FallbackRun::transfer(const std::string& mode, unsigned long long size, double& seconds) {
	double t0 = MPI_Wtime();
	int st = kOk;
	if (mode == "host") st = plain(mHost, size);
	else if (mode == "mpi") st = plain(mDevice ? asPtr(mDev) : mDevHost, size);
	else if (isLibMode(mode)) {
		gpumpi_protocol proto = GPUMPI_PROTO_DIRECT;
		if (!mLib) {
			mError = "libgpumpi was not started";
			st = kSetupError;
		} else if (mLib->transfer(mode, mDevice ? asPtr(mDev) : mDevHost, size, mDevice, &proto) != GPUMPI_SUCCESS) {
			mError = mLib->error();
			st = kMpiError;
		}
		mLastProto = gpumpi_protocol_name(proto);
	} else st = mRank == 0 ? stagedSend(size) : stagedRecv(size);
	seconds = MPI_Wtime() - t0;
	return st;
}

int FallbackRun::poison(const std::string& mode, unsigned long long size) {
	if (mRank != 1) return kOk;
	if (mode == "host") {
		auto* w = static_cast<uint32_t*>(mHost);
		for (unsigned long long i = 0; i < size / 4; i++) w[i] = kPoison;
		return kOk;
	}
	if (mDevice) {
		CUresult r = cudaDriver().cuMemsetD32(mDev, kPoison, size / 4);
		if (r == CUDA_SUCCESS) r = cudaDriver().cuCtxSynchronize();
		return r == CUDA_SUCCESS ? kOk : failCuda(r, "cuMemsetD32");
	}
	auto* w = static_cast<uint32_t*>(mDevHost);
	for (unsigned long long i = 0; i < size / 4; i++) w[i] = kPoison;
	return kOk;
}

int FallbackRun::verify(const std::string& mode, unsigned long long size, long long& words, long long& wrong) {
	words = static_cast<long long>(size / 4);
	wrong = 0;
	if (mode == "host" || !mDevice) {
		const auto* w = static_cast<const uint32_t*>(mode == "host" ? mHost : mDevHost);
		for (unsigned long long i = 0; i < size / 4; i++)
			if (w[i] != pattern(0, i)) wrong++;
		return wrong ? kWrongData : kOk;
	}
	std::vector<uint32_t> tmp(std::min<unsigned long long>(size, 16ull << 20) / 4);
	for (unsigned long long off = 0; off < size; off += tmp.size() * 4) {
		unsigned long long n = std::min<unsigned long long>(tmp.size() * 4, size - off);
		CUresult r = cudaDriver().cuMemcpyDtoH(tmp.data(), mDev + off, n);
		if (r != CUDA_SUCCESS) return failCuda(r, "cuMemcpyDtoH (verification)");
		for (unsigned long long i = 0; i < n / 4; i++)
			if (tmp[i] != pattern(0, off / 4 + i)) wrong++;
	}
	return wrong ? kWrongData : kOk;
}

}  // namespace gpumpi::repro
