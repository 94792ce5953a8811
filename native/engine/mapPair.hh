// One pair of `gpumpi map`, measured against a deadline with every message's data checked (docs/map-schema.md,
// "Measurement"). The first rank sends, the second echoes what it received unchanged; both time nothing but the MPI
// calls. Every message carries a pattern of its own (seeded by pair, size and iteration): the second rank checks each
// message it received (a→b) after echoing it, the first checks each echo (b→a) after its round trip — outside the
// timed part, through a host copy for device buffers. All waits are nonblocking requests polled against the pair's
// deadline, so a hung peer costs at most --pair-timeout; requests still pending then are cancelled, and when MPI
// cannot cancel them their buffers are retired (never reused, never freed) so a late message lands nowhere that
// matters. Thread: main thread only (MPI_THREAD_SINGLE). Never throws.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cudaDriver.hh"

namespace gpumpi::map {

/** Outcome of a pair (the document's "status"). */
enum class PairStatus : int { Ok = 0, Skipped = 1, MpiError = 2, Timeout = 3, DataError = 4, SetupError = 5, NotMeasured = 6 };
/** "ok", "skipped", "mpi_error", "timeout", "data_error", "setup_error", "not_measured". */
const char* statusName(PairStatus s);
/** Which outcome wins when two sides disagree: the worse one (timeout > mpi_error > data_error > ok). */
PairStatus worseStatus(PairStatus x, PairStatus y);

/** Seconds since the Unix epoch (CLOCK_REALTIME): comparable between ranks as far as their clocks agree. */
double wallSeconds();

/** The pattern of one message: deterministic from its seed, so both sides know what must arrive. */
uint64_t messageSeed(int pair, int phase, int iteration);
void fillPattern(void* p, unsigned long long bytes, uint64_t seed);
/** Byte offset of the first byte that differs from the pattern, or -1 when the message is intact. */
long long firstPatternMismatch(const void* p, unsigned long long bytes, uint64_t seed);
/** Position-dependent 64-bit checksum (Fletcher-style sums of 64-bit words, tail bytes included). */
uint64_t checksum(const void* p, unsigned long long bytes);
/** checksum() of the pattern of `seed`, without a buffer. */
uint64_t patternChecksum(unsigned long long bytes, uint64_t seed);

/** Two message buffers of one rank (host or device) and, for device buffers, a host copy for filling and checking. */
class PairBuffers {
public:
	PairBuffers() = default;
	PairBuffers(const PairBuffers&) = delete;
	PairBuffers& operator=(const PairBuffers&) = delete;
	~PairBuffers();
	/** Allocate both buffers of `bytes`; false with the reason. */
	bool allocate(bool device, unsigned long long bytes, std::string& error);
	/** A request may still write into the current buffers: keep them allocated forever and allocate new ones. */
	bool retire(std::string& error);
	void* ptr(int i) const;
	/** Write the pattern of `seed` into buffer i (through the host copy for device memory). */
	bool fill(int i, unsigned long long bytes, uint64_t seed, std::string& error);
	/** Check buffer i against the pattern of `seed`: "" when intact, else what differs. */
	std::string check(int i, unsigned long long bytes, uint64_t seed);
	/** Test hook: flip byte `offset` of buffer i. */
	void corrupt(int i, unsigned long long offset);
	int retired() const { return mRetired; }

private:
	void release();
	bool mDevice = false;
	unsigned long long mBytes = 0;
	void* mHost[2] = {nullptr, nullptr};
	CUdeviceptr mDev[2] = {0, 0};
	std::vector<unsigned char> mStage;  // device buffers: the host copy
	int mRetired = 0;
};

/** What one pair is and how to measure it. */
struct PairSpec {
	int pair = 0;        // index in the schedule (seeds, tags' payload)
	int peer = 0;
	bool first = false;  // this rank sends first and keeps the numbers
	unsigned long long smallBytes = 8, largeBytes = 0;
	int latencyIters = 20, iters = 5;
	double timeoutS = 60;
	bool corruptEcho = false;  // test hook: flip one byte of the first large message before echoing it
};

/** One side's view of a pair. */
struct PairMeasure {
	PairStatus status = PairStatus::Ok;
	double bandwidthGbps = -1, latencyUs = -1;  // first rank only
	double started = 0, ended = 0;              // wallSeconds()
	int verified = 0, corrupted = 0;            // messages checked by both sides (first rank: after the peer's verdict)
	std::string error;                          // first problem, with the side that saw it
	bool abandoned = false;                     // a request could not be completed nor cancelled
};

/** Sleep this long between polls of a pair's bandwidth messages (0: spin, yielding now and then). */
void setWaitNap(long microseconds);

/** Measure the pair from this rank's side (both ranks call it for the same spec, mirrored). */
PairMeasure measurePair(const PairSpec& spec, PairBuffers& buffers);

/** Message tags of `gpumpi map` (distinct from everything else the engine sends on MPI_COMM_WORLD). */
constexpr int kTagData = 7101, kTagEcho = 7102, kTagVerdict = 7103, kTagReport = 7104, kTagDone = 7105;

}  // namespace gpumpi::map
