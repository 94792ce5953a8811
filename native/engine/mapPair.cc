// One pair of `gpumpi map` (see mapPair.hh).
#include "mapPair.hh"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "reproCommon.hh"

namespace gpumpi::map {

const char* statusName(PairStatus s) {
	switch (s) {
		case PairStatus::Ok: return "ok";
		case PairStatus::Skipped: return "skipped";
		case PairStatus::MpiError: return "mpi_error";
		case PairStatus::Timeout: return "timeout";
		case PairStatus::DataError: return "data_error";
		case PairStatus::SetupError: return "setup_error";
		case PairStatus::NotMeasured: return "not_measured";
	}
	return "not_measured";
}

PairStatus worseStatus(PairStatus x, PairStatus y) {
	auto rank = [](PairStatus s) {
		switch (s) {
			case PairStatus::Timeout: return 6;
			case PairStatus::MpiError: return 5;
			case PairStatus::SetupError: return 4;
			case PairStatus::DataError: return 3;
			case PairStatus::NotMeasured: return 2;
			case PairStatus::Skipped: return 1;
			case PairStatus::Ok: return 0;
		}
		return 0;
	};
	return rank(x) >= rank(y) ? x : y;
}

double wallSeconds() {
	timespec t{};
	clock_gettime(CLOCK_REALTIME, &t);
	return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

uint64_t messageSeed(int pair, int phase, int iteration) {
	uint64_t z = (static_cast<uint64_t>(static_cast<uint32_t>(pair)) << 24) ^ (static_cast<uint64_t>(phase) << 20) ^ static_cast<uint64_t>(iteration);
	z += 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

namespace {

/** Word i of the pattern of `seed`: a bijection of (seed + i), so every position and every message differ. */
inline uint64_t patternWord(uint64_t seed, uint64_t i) { return (seed + i) * 0x9E3779B97F4A7C15ull; }

struct Sums {
	uint64_t s1 = 0, s2 = 0;
	void add(uint64_t w) { s1 += w; s2 += s1; }
	uint64_t value(unsigned long long bytes) const { return (s1 ^ (s2 << 32 | s2 >> 32)) + bytes; }
};

}  // namespace

void fillPattern(void* p, unsigned long long bytes, uint64_t seed) {
	const unsigned long long words = bytes / 8;
	auto* w = static_cast<unsigned char*>(p);
	for (unsigned long long i = 0; i < words; i++) {
		const uint64_t v = patternWord(seed, i);
		std::memcpy(w + i * 8, &v, 8);
	}
	const uint64_t tail = patternWord(seed, words);
	std::memcpy(w + words * 8, &tail, bytes % 8);
}

uint64_t checksum(const void* p, unsigned long long bytes) {
	Sums s;
	const auto* c = static_cast<const unsigned char*>(p);
	const unsigned long long words = bytes / 8;
	for (unsigned long long i = 0; i < words; i++) {
		uint64_t v;
		std::memcpy(&v, c + i * 8, 8);
		s.add(v);
	}
	uint64_t tail = 0;
	std::memcpy(&tail, c + words * 8, bytes % 8);
	if (bytes % 8) s.add(tail);
	return s.value(bytes);
}

uint64_t patternChecksum(unsigned long long bytes, uint64_t seed) {
	Sums s;
	const unsigned long long words = bytes / 8;
	for (unsigned long long i = 0; i < words; i++) s.add(patternWord(seed, i));
	if (bytes % 8) {
		uint64_t tail = 0;
		const uint64_t v = patternWord(seed, words);
		std::memcpy(&tail, &v, bytes % 8);
		s.add(tail);
	}
	return s.value(bytes);
}

long long firstPatternMismatch(const void* p, unsigned long long bytes, uint64_t seed) {
	const auto* c = static_cast<const unsigned char*>(p);
	for (unsigned long long i = 0; i < bytes; i += 8) {
		const uint64_t v = patternWord(seed, i / 8);
		const unsigned long long n = std::min<unsigned long long>(8, bytes - i);
		for (unsigned long long k = 0; k < n; k++)
			if (c[i + k] != reinterpret_cast<const unsigned char*>(&v)[k]) return static_cast<long long>(i + k);
	}
	return -1;
}

PairBuffers::~PairBuffers() { release(); }

void PairBuffers::release() {
	for (int i = 0; i < 2; i++) {
		std::free(mHost[i]);
		mHost[i] = nullptr;
		if (mDev[i]) cudaDriver().cuMemFree(mDev[i]);
		mDev[i] = 0;
	}
}

bool PairBuffers::allocate(bool device, unsigned long long bytes, std::string& error) {
	mDevice = device;
	mBytes = std::max(bytes, 8ull);
	for (int i = 0; i < 2; i++) {
		if (device) {
			CUresult r = cudaDriver().cuMemAlloc(&mDev[i], mBytes);
			if (r != CUDA_SUCCESS) { error = "cuMemAlloc: " + cudaErrorText(r); return false; }
		} else {
			mHost[i] = std::malloc(mBytes);
			if (!mHost[i]) { error = "malloc of " + repro::formatSize(mBytes) + " failed"; return false; }
			std::memset(mHost[i], 0, mBytes);
		}
	}
	if (device) mStage.assign(mBytes, 0);
	return true;
}

bool PairBuffers::retire(std::string& error) {
	// Deliberately leaked: MPI may still write into (or read from) them.
	for (int i = 0; i < 2; i++) { mHost[i] = nullptr; mDev[i] = 0; }
	mRetired++;
	return allocate(mDevice, mBytes, error);
}

void* PairBuffers::ptr(int i) const {
	return mDevice ? reinterpret_cast<void*>(static_cast<uintptr_t>(mDev[i])) : mHost[i];
}

bool PairBuffers::fill(int i, unsigned long long bytes, uint64_t seed, std::string& error) {
	if (!mDevice) { fillPattern(mHost[i], bytes, seed); return true; }
	fillPattern(mStage.data(), bytes, seed);
	CUresult r = cudaDriver().cuMemcpyHtoD(mDev[i], mStage.data(), bytes);
	if (r != CUDA_SUCCESS) { error = "cuMemcpyHtoD: " + cudaErrorText(r); return false; }
	return true;
}

void PairBuffers::corrupt(int i, unsigned long long offset) {
	unsigned char* p = static_cast<unsigned char*>(mHost[i]);
	if (mDevice) {
		cudaDriver().cuMemcpyDtoH(mStage.data(), mDev[i], mBytes);
		mStage[offset] ^= 0x5A;
		cudaDriver().cuMemcpyHtoD(mDev[i], mStage.data(), mBytes);
		return;
	}
	p[offset] ^= 0x5A;
}

std::string PairBuffers::check(int i, unsigned long long bytes, uint64_t seed) {
	const void* p = mHost[i];
	if (mDevice) {
		CUresult r = cudaDriver().cuMemcpyDtoH(mStage.data(), mDev[i], bytes);
		if (r != CUDA_SUCCESS) return "cuMemcpyDtoH for the check: " + cudaErrorText(r);
		p = mStage.data();
	}
	const uint64_t got = checksum(p, bytes), want = patternChecksum(bytes, seed);
	if (got == want) return "";
	char text[200];
	std::snprintf(text, sizeof text, "checksum %016llx instead of %016llx, first wrong byte at offset %lld of %llu",
	              static_cast<unsigned long long>(got), static_cast<unsigned long long>(want), firstPatternMismatch(p, bytes, seed), bytes);
	return text;
}

namespace {

long gWaitNapUs = 0;

}  // namespace

void setWaitNap(long microseconds) { gWaitNapUs = std::max(0L, std::min(microseconds, 100000L)); }

namespace {

constexpr int kTimedOut = -1;

/**
 * Poll the requests (each set to MPI_REQUEST_NULL when complete) until they are done or `deadline` (MPI_Wtime)
 * passes. `nap`: sleep gWaitNapUs between polls when it is set (bandwidth messages only: a nap would be most of a
 * small message's round trip).
 */
int waitUntil(MPI_Request* reqs, int n, double deadline, bool nap = false) {
	for (unsigned spins = 1;; spins++) {
		bool all = true;
		for (int i = 0; i < n; i++) {
			if (reqs[i] == MPI_REQUEST_NULL) continue;
			int flag = 0;
			const int rc = MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE);
			if (rc != MPI_SUCCESS) return rc;
			if (!flag) all = false;
		}
		if (all) return MPI_SUCCESS;
		if (MPI_Wtime() > deadline) return kTimedOut;
		// Yield now and then: ranks may share cores (CI, oversubscribed nodes); a free core returns at once. On a
		// machine with more ranks than CPUs, sleep between polls instead (gWaitNapUs, set by setWaitNap).
		if (nap && gWaitNapUs > 0) {
			timespec t{0, gWaitNapUs * 1000};
			nanosleep(&t, nullptr);
		} else if (spins % 64 == 0) {
			sched_yield();
		}
	}
}

/** Cancel what is still pending; true when every request is gone (completed or cancelled) within a second. */
bool cancelAll(MPI_Request* reqs, int n) {
	for (int i = 0; i < n; i++)
		if (reqs[i] != MPI_REQUEST_NULL) MPI_Cancel(&reqs[i]);
	return waitUntil(reqs, n, MPI_Wtime() + 1.0) == MPI_SUCCESS;
}

/** What the second rank tells the first after both phases: its own checks. */
struct Verdict {
	int32_t checked = 0, corrupted = 0;
	char firstProblem[200] = {0};
};

const char* phaseName(int phase) { return phase == 0 ? "latency" : "bandwidth"; }

}  // namespace

PairMeasure measurePair(const PairSpec& s, PairBuffers& b) {
	PairMeasure m;
	m.started = wallSeconds();
	const double deadline = MPI_Wtime() + s.timeoutS;
	int me = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
	// Stop the pair: say where, cancel what is pending, retire the buffers if MPI keeps them.
	auto stop = [&](int rc, const std::string& where) {
		if (rc == kTimedOut) {
			m.status = PairStatus::Timeout;
			char t[64];
			std::snprintf(t, sizeof t, "%g", s.timeoutS);
			m.error = "rank " + std::to_string(me) + ": no answer from rank " + std::to_string(s.peer) + " within " + t + " s (" + where + ")";
		} else {
			m.status = PairStatus::MpiError;
			m.error = "rank " + std::to_string(me) + ": " + repro::mpiErrorText(rc) + " (" + where + ")";
		}
		if (!cancelAll(reqs, 2)) m.abandoned = true;
		m.ended = wallSeconds();
		return m;
	};
	const unsigned long long sizes[2] = {s.smallBytes, s.largeBytes};
	const int rounds[2] = {s.latencyIters, s.iters};
	double best[2] = {1e300, 1e300};
	int checked = 0, corrupted = 0;
	std::string problem;
	for (int ph = 0; ph < 2; ph++) {
		const unsigned long long bytes = sizes[ph];
		const int count = static_cast<int>(bytes);
		const int n = rounds[ph] + 1;  // the first round trip is the untimed warm-up
		auto where = [&](int it, const char* what) {
			return std::string(what) + ", " + phaseName(ph) + " message " + std::to_string(it + 1) + " of " + std::to_string(n) + ", " + repro::formatSize(bytes);
		};
		if (s.first) {
			for (int it = 0; it < n; it++) {
				const uint64_t seed = messageSeed(s.pair, ph, it);
				std::string e;
				if (!b.fill(0, bytes, seed, e)) { m.status = PairStatus::SetupError; m.error = "rank " + std::to_string(me) + ": " + e; m.ended = wallSeconds(); return m; }
				int rc = MPI_Irecv(b.ptr(1), count, MPI_BYTE, s.peer, kTagEcho, MPI_COMM_WORLD, &reqs[1]);
				const double t0 = MPI_Wtime();
				if (rc == MPI_SUCCESS) rc = MPI_Isend(b.ptr(0), count, MPI_BYTE, s.peer, kTagData, MPI_COMM_WORLD, &reqs[0]);
				if (rc == MPI_SUCCESS) rc = waitUntil(reqs, 2, deadline, ph == 1);
				const double t = MPI_Wtime() - t0;
				if (rc != MPI_SUCCESS) return stop(rc, where(it, "round trip"));
				if (it > 0) best[ph] = std::min(best[ph], t);
				checked++;
				const std::string bad = b.check(1, bytes, seed);
				if (!bad.empty() && corrupted++ == 0)
					problem = "rank " + std::to_string(me) + ": the echo from rank " + std::to_string(s.peer) + " differs (" + where(it, "") .substr(2) + "): " + bad;
			}
		} else {
			int rc = MPI_Irecv(b.ptr(0), count, MPI_BYTE, s.peer, kTagData, MPI_COMM_WORLD, &reqs[0]);
			if (rc != MPI_SUCCESS) return stop(rc, where(0, "receive"));
			for (int it = 0; it < n; it++) {
				const int cur = it % 2;
				rc = waitUntil(&reqs[0], 1, deadline, ph == 1);
				if (rc != MPI_SUCCESS) return stop(rc, where(it, "receive"));
				if (s.corruptEcho && ph == 1 && it == 0) b.corrupt(cur, bytes / 2);
				rc = MPI_Isend(b.ptr(cur), count, MPI_BYTE, s.peer, kTagEcho, MPI_COMM_WORLD, &reqs[1]);
				if (rc == MPI_SUCCESS) rc = waitUntil(&reqs[1], 1, deadline, ph == 1);
				if (rc != MPI_SUCCESS) return stop(rc, where(it, "echo"));
				if (it + 1 < n) {
					rc = MPI_Irecv(b.ptr(1 - cur), count, MPI_BYTE, s.peer, kTagData, MPI_COMM_WORLD, &reqs[0]);
					if (rc != MPI_SUCCESS) return stop(rc, where(it + 1, "receive"));
				}
				checked++;
				const std::string bad = b.check(cur, bytes, messageSeed(s.pair, ph, it));
				if (!bad.empty() && corrupted++ == 0)
					problem = "rank " + std::to_string(me) + ": the message from rank " + std::to_string(s.peer) + " differs (" + where(it, "").substr(2) + "): " + bad;
			}
		}
	}
	// The second rank's checks go to the first, which reports the pair. On the heap: a receive MPI can neither complete
	// nor cancel keeps it (leaked) instead of writing into a stack frame that is gone.
	auto owned = std::make_unique<Verdict>();
	Verdict& v = *owned;
	if (s.first) {
		int rc = MPI_Irecv(&v, sizeof v, MPI_BYTE, s.peer, kTagVerdict, MPI_COMM_WORLD, &reqs[0]);
		if (rc == MPI_SUCCESS) rc = waitUntil(reqs, 1, deadline);
		if (rc != MPI_SUCCESS) {
			PairMeasure out = stop(rc, "waiting for the peer's checks");
			if (out.abandoned) (void)owned.release();
			return out;
		}
		v.firstProblem[sizeof v.firstProblem - 1] = 0;
		m.verified = checked + v.checked;
		m.corrupted = corrupted + v.corrupted;
		if (problem.empty() && v.corrupted > 0) problem = v.firstProblem;
		m.latencyUs = best[0] / 2 * 1e6;
		m.bandwidthGbps = static_cast<double>(s.largeBytes) / (best[1] / 2) / 1e9;
	} else {
		v.checked = checked;
		v.corrupted = corrupted;
		std::snprintf(v.firstProblem, sizeof v.firstProblem, "%s", problem.c_str());
		int rc = MPI_Isend(&v, sizeof v, MPI_BYTE, s.peer, kTagVerdict, MPI_COMM_WORLD, &reqs[0]);
		if (rc == MPI_SUCCESS) rc = waitUntil(reqs, 1, deadline);
		if (rc != MPI_SUCCESS) {
			PairMeasure out = stop(rc, "sending this side's checks");
			if (out.abandoned) (void)owned.release();
			return out;
		}
		m.verified = checked;
		m.corrupted = corrupted;
	}
	if (m.corrupted > 0) { m.status = PairStatus::DataError; m.error = problem; }
	m.ended = wallSeconds();
	return m;
}

}  // namespace gpumpi::map
