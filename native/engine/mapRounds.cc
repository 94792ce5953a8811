// The rounds of `gpumpi map` (see mapRounds.hh).
#include "mapRounds.hh"

#include <sched.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "reproCommon.hh"

namespace gpumpi::map {

namespace {

/** Seconds a barrier, a round's reports or the final done messages may take beyond --pair-timeout. */
constexpr double kGraceS = 10;

/** One side's result of a pair, sent to rank 0 (fixed size: MPI_BYTE). */
struct WireReport {
	int32_t pair = 0, reporter = 0, status = 0, verified = 0, corrupted = 0, abandoned = 0;
	double bandwidth = -1, latency = -1, started = 0, ended = 0;
	char error[320] = {0};
};

/** A rank's last message to rank 0: whether its MPI state is clean enough for MPI_Finalize. */
struct WireDone {
	int32_t rank = 0, barrierTimeouts = 0, abandoned = 0, firstUnsynced = -1;
};

void napMicroseconds(long us) {
	timespec t{us / 1000000, (us % 1000000) * 1000};
	nanosleep(&t, nullptr);
}

/** A fault a test asks for: <rank>@<round>[:<seconds>] in an environment variable (engine tier only). */
struct Fault {
	int rank = -1, round = -1;
	double seconds = 0;
	bool at(int me, int r) const { return me == rank && r == round; }
};

Fault faultFromEnv(const char* name) {
	Fault f;
	const char* v = std::getenv(name);
	if (v && std::sscanf(v, "%d@%d:%lf", &f.rank, &f.round, &f.seconds) >= 2 && f.rank >= 0 && f.round >= 0) return f;
	return Fault{};
}

/** Rank 0's side: posted receives for reports and done messages, applied to the outcomes as they arrive. */
class Collector {
public:
	Collector(const Schedule& s, RoundsResult& res, int size) : mSchedule(s), mRes(res), mDone(size, false) { mDone[0] = true; }
	void post() {
		MPI_Irecv(&mReport, sizeof mReport, MPI_BYTE, MPI_ANY_SOURCE, kTagReport, MPI_COMM_WORLD, &mReportReq);
		MPI_Irecv(&mDoneMsg, sizeof mDoneMsg, MPI_BYTE, MPI_ANY_SOURCE, kTagDone, MPI_COMM_WORLD, &mDoneReq);
	}
	/** Take every report and done message that has arrived. */
	void drain() {
		for (int flag = 1; flag && mReportReq != MPI_REQUEST_NULL;) {
			if (MPI_Test(&mReportReq, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
			if (!flag) break;
			apply(mReport);
			MPI_Irecv(&mReport, sizeof mReport, MPI_BYTE, MPI_ANY_SOURCE, kTagReport, MPI_COMM_WORLD, &mReportReq);
		}
		for (int flag = 1; flag && mDoneReq != MPI_REQUEST_NULL;) {
			if (MPI_Test(&mDoneReq, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
			if (!flag) break;
			if (mDoneMsg.rank > 0 && mDoneMsg.rank < static_cast<int>(mDone.size()) && !mDone[mDoneMsg.rank]) {
				mDone[mDoneMsg.rank] = true;
				mDoneCount++;
				mRes.barrierTimeouts += mDoneMsg.barrierTimeouts;
				mRes.abandonedRequests += mDoneMsg.abandoned;
				if (mDoneMsg.firstUnsynced >= 0 && (mRes.firstUnsyncedRound < 0 || mDoneMsg.firstUnsynced < mRes.firstUnsyncedRound))
					mRes.firstUnsyncedRound = mDoneMsg.firstUnsynced;
			}
			if (mDoneCount + 1 < static_cast<int>(mDone.size()))
				MPI_Irecv(&mDoneMsg, sizeof mDoneMsg, MPI_BYTE, MPI_ANY_SOURCE, kTagDone, MPI_COMM_WORLD, &mDoneReq);
		}
	}
	void apply(const WireReport& r) {
		if (r.pair < 0 || r.pair >= static_cast<int>(mRes.outcomes.size())) return;
		PairOutcome& o = mRes.outcomes[r.pair];
		const auto st = static_cast<PairStatus>(r.status);
		o.status = o.status == PairStatus::NotMeasured ? st : worseStatus(o.status, st);
		const bool first = mSchedule.pairs[r.pair].first == r.reporter;
		if (first) {
			o.reported = true;
			o.bandwidthGbps = r.bandwidth;
			o.latencyUs = r.latency;
		}
		o.verified = std::max<int>(o.verified, r.verified);
		o.corrupted = std::max<int>(o.corrupted, r.corrupted);
		const double s = r.started - mRes.epoch, e = r.ended - mRes.epoch;
		o.started = o.started < 0 ? s : std::min(o.started, s);
		o.ended = std::max(o.ended, e);
		std::string err(r.error, strnlen(r.error, sizeof r.error));
		if (!err.empty() && o.errorRank < 0) o.errorRank = r.reporter;
		if (!err.empty() && o.error.find(err) == std::string::npos) o.error += (o.error.empty() ? "" : "; ") + err;
		if (r.abandoned) mRes.abandonedRequests++;
		mChanged.push_back(r.pair);
	}
	bool allDone() const { return mDoneCount + 1 >= static_cast<int>(mDone.size()); }
	std::vector<int> takeChanged() {
		std::sort(mChanged.begin(), mChanged.end());
		mChanged.erase(std::unique(mChanged.begin(), mChanged.end()), mChanged.end());
		return std::move(mChanged);
	}
	/** Cancel the posted receives; false when MPI still holds one (its buffer must then outlive this run). */
	bool finish() {
		for (int i = 1; i < static_cast<int>(mDone.size()); i++)
			if (!mDone[i]) mRes.silentRanks.push_back(i);
		for (MPI_Request* q : {&mReportReq, &mDoneReq})
			if (*q != MPI_REQUEST_NULL) MPI_Cancel(q);
		const double until = MPI_Wtime() + 1;
		for (MPI_Request* q : {&mReportReq, &mDoneReq}) {
			int flag = 0;
			while (*q != MPI_REQUEST_NULL && MPI_Wtime() < until && MPI_Test(q, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag) napMicroseconds(100);
		}
		return mReportReq == MPI_REQUEST_NULL && mDoneReq == MPI_REQUEST_NULL;
	}

private:
	const Schedule& mSchedule;
	RoundsResult& mRes;
	std::vector<bool> mDone;
	int mDoneCount = 0;
	WireReport mReport;
	WireDone mDoneMsg;
	MPI_Request mReportReq = MPI_REQUEST_NULL, mDoneReq = MPI_REQUEST_NULL;
	std::vector<int> mChanged;
};

/** Non-zero ranks: reports in flight to rank 0 (their buffers live until the send completes). */
class Sender {
public:
	void send(std::unique_ptr<WireReport> r) {
		Pending p{MPI_REQUEST_NULL, std::move(r), nullptr};
		if (MPI_Isend(p.report.get(), sizeof(WireReport), MPI_BYTE, 0, kTagReport, MPI_COMM_WORLD, &p.req) == MPI_SUCCESS) mPending.push_back(std::move(p));
	}
	void sendDone(const WireDone& d) {
		Pending p{MPI_REQUEST_NULL, nullptr, std::make_unique<WireDone>(d)};
		if (MPI_Isend(p.done.get(), sizeof(WireDone), MPI_BYTE, 0, kTagDone, MPI_COMM_WORLD, &p.req) == MPI_SUCCESS) mPending.push_back(std::move(p));
	}
	void progress() {
		for (auto it = mPending.begin(); it != mPending.end();) {
			int flag = 0;
			if (MPI_Test(&it->req, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag) it = mPending.erase(it); else ++it;
		}
	}
	/** Wait for every send until `deadline`; the number still pending then. */
	int flush(double deadline) {
		while (!mPending.empty() && MPI_Wtime() < deadline) { progress(); if (!mPending.empty()) napMicroseconds(200); }
		return static_cast<int>(mPending.size());
	}
	/** Sends still pending at the end: MPI may still read their buffers, so they are never freed. */
	void abandonPending() {
		for (Pending& p : mPending) { (void)p.report.release(); (void)p.done.release(); }
		mPending.clear();
	}

private:
	struct Pending {
		MPI_Request req;
		std::unique_ptr<WireReport> report;
		std::unique_ptr<WireDone> done;
	};
	std::vector<Pending> mPending;
};

std::unique_ptr<WireReport> toWire(int pair, int rank, const PairMeasure& m) {
	auto w = std::make_unique<WireReport>();
	w->pair = pair;
	w->reporter = rank;
	w->status = static_cast<int32_t>(m.status);
	w->verified = m.verified;
	w->corrupted = m.corrupted;
	w->abandoned = m.abandoned ? 1 : 0;
	w->bandwidth = m.bandwidthGbps;
	w->latency = m.latencyUs;
	w->started = m.started;
	w->ended = m.ended;
	std::snprintf(w->error, sizeof w->error, "%s", m.error.c_str());
	return w;
}

}  // namespace

RoundsResult runRounds(const RoundsConfig& cfg, const Schedule& schedule, const std::vector<bool>& measure, int rank, int size,
                       const RoundSink& sink) {
	RoundsResult res;
	const double t0 = MPI_Wtime();
	res.epoch = wallSeconds();
	MPI_Bcast(&res.epoch, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (rank == 0) res.outcomes.assign(schedule.pairs.size(), PairOutcome{});

	PairBuffers buffers;
	bool allocOk = buffers.allocate(cfg.device, std::max(cfg.largeBytes, cfg.smallBytes), res.allocError);
	int mine = allocOk ? 1 : 0, all = 0;
	MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	res.allAllocOk = all == 1;
	if (!res.allAllocOk) {
		res.cleanEnd = true;
		res.elapsedS = MPI_Wtime() - t0;
		if (rank == 0 && sink) sink(static_cast<int>(schedule.roundPairs.size()), {}, res);
		return res;
	}

	const int rounds = static_cast<int>(schedule.roundPairs.size());
	std::vector<int> myPair(rounds, -1);
	for (int r = 0; r < rounds; r++)
		for (int i : schedule.roundPairs[r])
			if (schedule.pairs[i].first == rank || schedule.pairs[i].second == rank) myPair[r] = i;

	std::unique_ptr<Collector> collector;
	if (rank == 0) { collector = std::make_unique<Collector>(schedule, res, size); collector->post(); }
	Sender sender;
	const Fault kill = faultFromEnv("GPUMPI_TEST_MAP_KILL"), stall = faultFromEnv("GPUMPI_TEST_MAP_STALL"),
	            corrupt = faultFromEnv("GPUMPI_TEST_MAP_CORRUPT");
	bool synced = true;
	int barrierTimeouts = 0, abandoned = 0, firstUnsynced = -1;
	double lastSink = MPI_Wtime();
	const double barrierWait = cfg.pairTimeoutS + kGraceS;

	int handedOver = -1;  // rank 0: the last round handed to the sink
	auto roundReported = [&](int round) {
		for (int i : schedule.roundPairs[round]) if (measure[i] && !res.outcomes[i].reported) return false;
		return true;
	};
	auto handOver = [&](int round, bool force) {
		if (rank != 0 || !sink) return;
		handedOver = std::max(handedOver, round);
		if (!force && !schedule.rounds && MPI_Wtime() - lastSink < cfg.sequentialRecordEveryS) return;
		const std::vector<int> changed = collector->takeChanged();
		if (changed.empty() && !force) return;
		sink(round, changed, res);
		lastSink = MPI_Wtime();
	};

	for (int r = 0; r < rounds; r++) {
		if (synced) {
			MPI_Request barrier = MPI_REQUEST_NULL;
			const double deadline = MPI_Wtime() + barrierWait;
			const double waitStart = MPI_Wtime();
			int done = 0;
			if (MPI_Ibarrier(MPI_COMM_WORLD, &barrier) != MPI_SUCCESS) synced = false;
			while (synced && !done) {
				if (MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) { synced = false; break; }
				if (done) break;
				if (collector) collector->drain();
				sender.progress();
				if (MPI_Wtime() > deadline) { synced = false; break; }
				// Waiting ranks leave the cores to the measuring ones after the first millisecond.
				if (MPI_Wtime() - waitStart > 1e-3) napMicroseconds(50); else sched_yield();
			}
			if (!synced) {
				barrierTimeouts++;
				firstUnsynced = r;
				if (rank == 0 && res.firstUnsyncedRound < 0) res.firstUnsyncedRound = r;
				std::fprintf(stderr, "gpumpi map: rank %d: the barrier before round %d did not complete within %g s; the remaining rounds run unsynchronised\n",
				             rank, r, barrierWait);
				std::fflush(stderr);
			}
		}
		if (kill.at(rank, r)) {
			// After the round's barrier: every message of the rounds before has been taken by its receiver.
			std::fprintf(stderr, "gpumpi map: rank %d kills itself at round %d (GPUMPI_TEST_MAP_KILL)\n", rank, r);
			std::fflush(stderr);
			raise(SIGKILL);
		}
		const int p = myPair[r];
		if (p >= 0 && measure[p]) {
			const auto& pr = schedule.pairs[p];
			PairSpec spec;
			spec.pair = p;
			spec.first = pr.first == rank;
			spec.peer = spec.first ? pr.second : pr.first;
			spec.smallBytes = cfg.smallBytes;
			spec.largeBytes = cfg.largeBytes;
			spec.latencyIters = cfg.latencyIters;
			spec.iters = cfg.iters;
			// Unsynchronised, partners left the missed barrier up to one pair timeout apart (the one whose pair had timed
			// out left last): twice the timeout, so that skew alone is no timeout.
			spec.timeoutS = synced ? cfg.pairTimeoutS : 2 * cfg.pairTimeoutS;
			spec.corruptEcho = corrupt.at(rank, r);
			if (stall.at(rank, r)) {
				std::fprintf(stderr, "gpumpi map: rank %d stalls %g s before its pair of round %d (GPUMPI_TEST_MAP_STALL)\n", rank, stall.seconds, r);
				std::fflush(stderr);
				napMicroseconds(static_cast<long>(stall.seconds * 1e6));
			}
			PairMeasure m = measurePair(spec, buffers);
			if (m.abandoned) {
				abandoned++;
				std::string e;
				if (!buffers.retire(e)) {
					// No memory for new buffers: the rest of this rank's pairs cannot be measured; say so on each.
					m.error += "; new buffers could not be allocated (" + e + ")";
					res.allocError = e;
				}
			}
			if (spec.first || m.status != PairStatus::Ok) {
				auto w = toWire(p, rank, m);
				if (rank == 0) collector->apply(*w); else sender.send(std::move(w));
			}
		}
		sender.progress();
		// Rank 0 hands the previous round over after its own pair of this round, so that it starts that pair with the
		// others (the record's printing falls between rounds, where everyone waits at the barrier anyway). Synchronised:
		// every pair of the previous round has been reported (or is about to be): wait for them briefly.
		if (rank == 0 && r > 0 && handedOver < r - 1) {
			if (synced) {
				const double until = MPI_Wtime() + kGraceS;
				while (!roundReported(r - 1) && MPI_Wtime() < until) { collector->drain(); if (!roundReported(r - 1)) napMicroseconds(50); }
			} else {
				collector->drain();
			}
			handOver(r - 1, false);
		}
	}

	// The end: every rank tells rank 0 whether its MPI state is clean; rank 0 waits for all of them (or the deadline).
	const double endDeadline = MPI_Wtime() + (synced ? barrierWait : 2 * cfg.pairTimeoutS + kGraceS);
	if (rank != 0) {
		WireDone d;
		d.rank = rank;
		d.barrierTimeouts = barrierTimeouts;
		d.abandoned = abandoned;
		d.firstUnsynced = firstUnsynced;
		sender.sendDone(d);
		if (sender.flush(endDeadline) > 0) sender.abandonPending();  // rank 0 then misses this rank's done: MPI_Abort
	} else {
		res.barrierTimeouts += barrierTimeouts;
		res.abandonedRequests += abandoned;
		while (!collector->allDone() && MPI_Wtime() < endDeadline) { collector->drain(); if (!collector->allDone()) napMicroseconds(200); }
		collector->drain();
		const bool cancelled = collector->finish();
		if (!cancelled) res.abandonedRequests++;
		res.elapsedS = MPI_Wtime() - t0;
		res.cleanEnd = res.silentRanks.empty() && res.barrierTimeouts == 0 && res.abandonedRequests == 0;
		handOver(rounds, true);
		if (!cancelled) (void)collector.release();  // MPI may still write into its receive buffers: never freed
	}
	res.elapsedS = MPI_Wtime() - t0;
	return res;
}

}  // namespace gpumpi::map
