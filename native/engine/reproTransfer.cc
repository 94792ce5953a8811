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

// Sender: D2H copies of chunk k (async, on one stream) overlap the MPI sends of earlier chunks; sends go out in order.
int FallbackRun::stagedSend(unsigned long long size) {
	const CudaDriver& d = cudaDriver();
	const unsigned long long chunk = mOpt.chunkBytes;
	const long long n = static_cast<long long>((size + chunk - 1) / chunk);
	const int nb = mOpt.nbuf;
	std::vector<int> state(nb, 0);  // 0 idle, 1 copying, 2 sending
	std::vector<long long> which(nb, -1);
	std::vector<MPI_Request> req(nb, MPI_REQUEST_NULL);
	long long nextCopy = 0, nextSend = 0, done = 0;
	auto len = [&](long long k) { return static_cast<int>(std::min(chunk, size - static_cast<unsigned long long>(k) * chunk)); };
	while (done < n) {
		for (int b = 0; b < nb; b++) {
			if (state[b] != 0 || nextCopy >= n) continue;
			char* h = static_cast<char*>(mStage) + static_cast<unsigned long long>(b) * chunk;
			unsigned long long off = static_cast<unsigned long long>(nextCopy) * chunk;
			if (mDevice) {
				CUresult r = d.cuMemcpyDtoHAsync(h, mDev + off, len(nextCopy), mStream);
				if (r != CUDA_SUCCESS) return failCuda(r, "cuMemcpyDtoHAsync");
				r = d.cuEventRecord(mEvents[b], mStream);
				if (r != CUDA_SUCCESS) return failCuda(r, "cuEventRecord");
			} else {
				std::memcpy(h, static_cast<char*>(mDevHost) + off, len(nextCopy));
			}
			which[b] = nextCopy++;
			state[b] = 1;
		}
		for (bool sent = true; sent;) {  // post every copied chunk that is next in order
			sent = false;
			for (int b = 0; b < nb; b++) {
				if (state[b] != 1 || which[b] != nextSend) continue;
				if (mDevice) {
					CUresult r = d.cuEventQuery(mEvents[b]);
					if (r == CUDA_ERROR_NOT_READY) break;
					if (r != CUDA_SUCCESS) return failCuda(r, "cuEventQuery");
				}
				char* h = static_cast<char*>(mStage) + static_cast<unsigned long long>(b) * chunk;
				int rc = MPI_Isend(h, len(which[b]), MPI_BYTE, 1, 12, MPI_COMM_WORLD, &req[b]);
				if (rc != MPI_SUCCESS) return failMpi(rc, "MPI_Isend (staged)");
				state[b] = 2;
				nextSend++;
				sent = true;
			}
		}
		for (int b = 0; b < nb; b++) {
			if (state[b] != 2) continue;
			int flag = 0;
			int rc = MPI_Test(&req[b], &flag, MPI_STATUS_IGNORE);
			if (rc != MPI_SUCCESS) return failMpi(rc, "MPI_Test (staged send)");
			if (flag) { state[b] = 0; done++; }
		}
	}
	return kOk;
}

// Receiver: receives are posted in chunk order into free staging buffers; each completed one is copied H2D (async)
// and its buffer is reused once that copy has finished.
int FallbackRun::stagedRecv(unsigned long long size) {
	const CudaDriver& d = cudaDriver();
	const unsigned long long chunk = mOpt.chunkBytes;
	const long long n = static_cast<long long>((size + chunk - 1) / chunk);
	const int nb = mOpt.nbuf;
	std::vector<int> state(nb, 0);  // 0 idle, 1 receiving, 2 copying
	std::vector<long long> which(nb, -1);
	std::vector<MPI_Request> req(nb, MPI_REQUEST_NULL);
	long long nextPost = 0, done = 0;
	auto len = [&](long long k) { return static_cast<int>(std::min(chunk, size - static_cast<unsigned long long>(k) * chunk)); };
	while (done < n) {
		for (int b = 0; b < nb; b++) {
			if (state[b] != 0 || nextPost >= n) continue;
			char* h = static_cast<char*>(mStage) + static_cast<unsigned long long>(b) * chunk;
			int rc = MPI_Irecv(h, len(nextPost), MPI_BYTE, 0, 12, MPI_COMM_WORLD, &req[b]);
			if (rc != MPI_SUCCESS) return failMpi(rc, "MPI_Irecv (staged)");
			which[b] = nextPost++;
			state[b] = 1;
		}
		for (int b = 0; b < nb; b++) {
			if (state[b] == 1) {
				int flag = 0;
				int rc = MPI_Test(&req[b], &flag, MPI_STATUS_IGNORE);
				if (rc != MPI_SUCCESS) return failMpi(rc, "MPI_Test (staged receive)");
				if (!flag) continue;
				char* h = static_cast<char*>(mStage) + static_cast<unsigned long long>(b) * chunk;
				unsigned long long off = static_cast<unsigned long long>(which[b]) * chunk;
				if (mDevice) {
					CUresult r = d.cuMemcpyHtoDAsync(mDev + off, h, len(which[b]), mStream);
					if (r != CUDA_SUCCESS) return failCuda(r, "cuMemcpyHtoDAsync");
					r = d.cuEventRecord(mEvents[b], mStream);
					if (r != CUDA_SUCCESS) return failCuda(r, "cuEventRecord");
					state[b] = 2;
				} else {
					std::memcpy(static_cast<char*>(mDevHost) + off, h, len(which[b]));
					state[b] = 0;
					done++;
				}
			} else if (state[b] == 2) {
				CUresult r = d.cuEventQuery(mEvents[b]);
				if (r == CUDA_ERROR_NOT_READY) continue;
				if (r != CUDA_SUCCESS) return failCuda(r, "cuEventQuery");
				state[b] = 0;
				done++;
			}
		}
	}
	if (mDevice) {
		CUresult r = d.cuStreamSynchronize(mStream);
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
