#include "reproFallback.hh"
#include "reproTransfer.hh"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpumpi::repro {
namespace {

// Memory figures of one rank for one (mode, size), gathered on rank 0.
struct RankMemory {
	long long rssGrowth = -1, pinnedGrowth = -1, lockedGrowth = -1, deviceGrowth = -1, rssBaseline = -1;
	long long libraryPinned = 0, samples = 0;
};

double median(std::vector<double> v) {
	if (v.empty()) return 0;
	std::sort(v.begin(), v.end());
	size_t m = v.size() / 2;
	return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

void writeGrowth(JsonWriter& w, const char* key, long long v) {
	w.key(key);
	if (v < 0) w.null();
	else w.value(v);
}

/** Rank 0: the error text of rank 0, or rank 1's when rank 0 has none (a collective of both ranks). */
std::string firstError(int rank, const std::string& mine) {
	char e[512] = {0};
	std::snprintf(e, sizeof e, "%s", mine.c_str());
	std::vector<char> errs(rank == 0 ? 1024 : 1);
	MPI_Gather(e, 512, MPI_CHAR, errs.data(), 512, MPI_CHAR, 0, MPI_COMM_WORLD);
	return rank == 0 ? std::string(errs[0] ? &errs[0] : &errs[512]) : std::string();
}

/** Where the job runs: every rank's host, and (on rank 0) every rank's device ordinal. */
struct Job {
	std::vector<std::string> hosts;
	std::vector<int> deviceOrdinals;
	std::vector<long long> memTotal, memAvailable;  // bytes from each rank's /proc/meminfo (-1 unreadable)
};

/** MemTotal / MemAvailable of this host in bytes (-1 when /proc/meminfo cannot be read). */
void readMeminfo(long long& total, long long& available) {
	total = available = -1;
	FILE* f = std::fopen("/proc/meminfo", "r");
	if (!f) return;
	char line[256];
	while (std::fgets(line, sizeof line, f)) {
		long long kb = 0;
		if (std::sscanf(line, "MemTotal: %lld kB", &kb) == 1) total = kb * 1024;
		else if (std::sscanf(line, "MemAvailable: %lld kB", &kb) == 1) available = kb * 1024;
	}
	std::fclose(f);
}

Job describeJob(const ReproStart& start) {
	const int size = start.size;
	Job job;
	job.hosts = allHostNames(size);
	int myDev = start.device ? start.cuda.device : -1;
	job.deviceOrdinals.assign(static_cast<size_t>(size > 0 ? size : 1), -1);
	MPI_Gather(&myDev, 1, MPI_INT, job.deviceOrdinals.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
	long long mine[2] = {-1, -1};
	readMeminfo(mine[0], mine[1]);  // before the buffers: what the node has for the transfers
	std::vector<long long> all(static_cast<size_t>(size > 0 ? size : 1) * 2, -1);
	MPI_Gather(mine, 2, MPI_LONG_LONG, all.data(), 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
	for (int r = 0; r < size; r++) {
		job.memTotal.push_back(all[static_cast<size_t>(r) * 2]);
		job.memAvailable.push_back(all[static_cast<size_t>(r) * 2 + 1]);
	}
	return job;
}

/** One (mode, size): its status, the timed seconds, the verification and both ranks' memory (complete on rank 0). */
struct Measurement {
	std::string mode;
	unsigned long long size = 0;
	int status = kOk;
	std::vector<double> secs;
	long long words = 0, wrong = 0;
	std::string err;  // rank 0
	int errClass = 0;
	std::string skipReason;  // a mode that does not apply here (lib-shm across hosts)
	std::string protocol;    // lib-* modes: the libgpumpi protocol the transfers used
	std::vector<RankMemory> mems = std::vector<RankMemory>(2);
	double best() const {
		double b = 0;
		for (double s : secs) b = (b == 0 || s < b) ? s : b;
		return b;
	}
};

/** The sweep's outcome before the measurements judge it: ok, usage_error or setup_error (with detail). */
struct Sweep {
	std::string outcome = "ok", detail;
	std::vector<Measurement> results;
};

/** The iterations of one mode at one size (both ranks); skip: a broken path stays broken, don't pile up errors. */
Measurement measureOne(const FallbackOptions& opts, FallbackRun& run, int rank, const std::string& mode, unsigned long long sz, bool skip) {
	Measurement m;
	m.mode = mode;
	m.size = sz;
	MemorySampler sampler(run.ctx());
	if (!skip) {
		sampler.start();
		for (int it = 0; it < opts.iters && m.status == kOk; it++) {
			int st = run.poison(mode, sz);
			int mine[1] = {st}, worst[1] = {0};
			MPI_Allreduce(mine, worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
			if (worst[0] != kOk) { m.status = worst[0]; break; }
			MPI_Barrier(MPI_COMM_WORLD);
			double s = 0;
			st = run.transfer(mode, sz, s);
			double smax = 0;
			int stAll = 0;
			MPI_Allreduce(&st, &stAll, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
			MPI_Allreduce(&s, &smax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
			if (stAll != kOk) { m.status = stAll; break; }
			m.secs.push_back(smax);
		}
		sampler.stop();
		m.protocol = run.lastProtocol();
		if (m.status == kOk && rank == 1) m.status = run.verify(mode, sz, m.words, m.wrong);
		int stAll = 0;
		MPI_Allreduce(&m.status, &stAll, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		m.status = stAll;
		MPI_Bcast(&m.words, 1, MPI_LONG_LONG, 1, MPI_COMM_WORLD);
		MPI_Bcast(&m.wrong, 1, MPI_LONG_LONG, 1, MPI_COMM_WORLD);
		if (m.status == kMpiError || m.status == kSetupError) {
			m.err = firstError(rank, run.error());
			m.errClass = run.errorClass();
		}
	} else {
		m.status = kSkipped;
	}
	RankMemory mem;
	mem.rssGrowth = sampler.rssPeakGrowth();
	mem.pinnedGrowth = sampler.pinnedPeakGrowth();
	mem.lockedGrowth = sampler.lockedPeakGrowth();
	mem.deviceGrowth = sampler.deviceUsedPeakGrowth();
	mem.rssBaseline = sampler.rssBaseline();
	mem.libraryPinned = run.libraryPinned(mode);
	mem.samples = static_cast<long long>(sampler.samples());
	MPI_Gather(&mem, sizeof mem, MPI_BYTE, m.mems.data(), sizeof mem, MPI_BYTE, 0, MPI_COMM_WORLD);
	return m;
}

/** Step 3: buffers for the largest size, then every mode at every size (exactly 2 ranks). */
Sweep measureSweep(const FallbackOptions& opts, const ReproStart& start) {
	Sweep sweep;
	if (start.size != 2) {
		sweep.outcome = "usage_error";
		sweep.detail = "repro fallback needs exactly 2 ranks (mpirun -np 2), got " + std::to_string(start.size);
		return sweep;
	}
	const int rank = start.rank;
	unsigned long long maxSize = *std::max_element(opts.sizes.begin(), opts.sizes.end());
	bool needStaging = std::find(opts.modes.begin(), opts.modes.end(), "staged") != opts.modes.end();
	bool needHost = std::find(opts.modes.begin(), opts.modes.end(), "host") != opts.modes.end();
	FallbackRun run(opts, start.cuda, start.device, rank);
	int okHere = run.setup(maxSize, needStaging, needHost) ? 1 : 0, okAll = 0;
	MPI_Allreduce(&okHere, &okAll, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!okAll) {
		sweep.outcome = "setup_error";
		sweep.detail = firstError(rank, run.error());  // either rank may have failed
		if (rank == 0 && sweep.detail.empty()) sweep.detail = "buffer allocation failed";
		return sweep;
	}
	// The lib-* modes: libgpumpi started once, the user's persistent staging buffer registered once (both ranks).
	LibSession lib;
	std::string libError;
	if (std::any_of(opts.modes.begin(), opts.modes.end(), isLibMode)) {
		int libHere = lib.open(MPI_COMM_WORLD, opts.chunkBytes, opts.nbuf, start.device ? start.cuda.device : -1) ? 1 : 0, libAll = 0;
		MPI_Allreduce(&libHere, &libAll, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
		if (libAll) run.attachLib(&lib);
		else libError = firstError(rank, lib.error());
		if (!libAll && rank == 0 && libError.empty()) libError = "libgpumpi did not start";
	}
	for (const auto& mode : opts.modes) {
		const bool libMode = isLibMode(mode);
		const bool libDown = libMode && !libError.empty();
		const std::string why = libMode && !libDown ? libSkipReason(mode, lib.path(), start.device) : "";
		bool skipRest = libDown || !why.empty();
		for (unsigned long long sz : opts.sizes) {
			sweep.results.push_back(measureOne(opts, run, rank, mode, sz, skipRest));
			Measurement& m = sweep.results.back();
			if (libDown) { m.status = kSetupError; m.err = libError; }
			else if (!why.empty()) m.skipReason = why;
			skipRest = skipRest || m.status == kMpiError || m.status == kSetupError;
		}
	}
	run.attachLib(nullptr);
	return sweep;  // lib closes here (collective), before MPI_Finalize
}

double gbps(unsigned long long bytes, double seconds) { return static_cast<double>(bytes) / seconds / 1e9; }

void writeMeasurement(JsonWriter& w, const FallbackOptions& opts, const Measurement& m) {
	w.beginObject();
	w.key("mode").value(m.mode);
	w.key("size_bytes").value(m.size);
	w.key("messages").value(m.mode == "staged" || m.protocol == "staged" || m.protocol == "shm" ? (m.size + opts.chunkBytes - 1) / opts.chunkBytes : (m.size + kMaxMessageBytes - 1) / kMaxMessageBytes);
	w.key("status").value(statusName(m.status));
	if (!m.skipReason.empty()) w.key("skipped_reason").value(m.skipReason);
	if (isLibMode(m.mode)) {
		w.key("protocol");
		if (m.protocol.empty()) w.null();
		else w.value(m.protocol);
	}
	if (m.status == kMpiError || m.status == kSetupError) {
		w.key("error").value(m.err);
		if (m.status == kMpiError) w.key("error_class").value(m.errClass);
	}
	w.key("seconds").beginArray();
	for (double s : m.secs) w.value(s);
	w.endArray();
	const double best = m.best();
	if (!m.secs.empty() && best > 0) {
		w.key("best_gbps").value(gbps(m.size, best));
		w.key("median_gbps").value(gbps(m.size, median(m.secs)));
	} else {
		w.key("best_gbps").null();
		w.key("median_gbps").null();
	}
	w.key("verified").beginObject();
	w.key("words").value(m.words);
	w.key("wrong").value(m.wrong);
	w.endObject();
	w.key("memory").beginArray();
	for (int r = 0; r < 2; r++) {
		const RankMemory& rm = m.mems[static_cast<size_t>(r)];
		w.beginObject();
		w.key("rank").value(r);
		writeGrowth(w, "rss_baseline_bytes", rm.rssBaseline);
		writeGrowth(w, "rss_peak_growth_bytes", rm.rssGrowth);
		writeGrowth(w, "pinned_peak_growth_bytes", rm.pinnedGrowth);
		writeGrowth(w, "locked_peak_growth_bytes", rm.lockedGrowth);
		writeGrowth(w, "device_used_peak_growth_bytes", rm.deviceGrowth);
		w.key("library_pinned_bytes").value(rm.libraryPinned);
		w.key("samples").value(rm.samples);
		w.endObject();
	}
	w.endArray();
	w.endObject();
}

/** One line of the human summary (printed without --json). */
std::string summaryLine(const Measurement& m) {
	long long rss = std::max(m.mems[0].rssGrowth, m.mems[1].rssGrowth);
	long long dev = std::max(m.mems[0].deviceGrowth, m.mems[1].deviceGrowth);
	const double best = m.best();
	char line[256];
	std::snprintf(line, sizeof line, "  %-10s %9s %10.2f %8.2f  %-11s %9.1f %9s\n", m.mode.c_str(), formatSize(m.size).c_str(),
	              best > 0 ? gbps(m.size, best) : 0.0, m.secs.empty() ? 0.0 : gbps(m.size, median(m.secs)),
	              m.status == kOk ? "verified" : statusName(m.status),
	              rss < 0 ? 0.0 : static_cast<double>(rss) / (1 << 20), dev < 0 ? "-" : std::to_string(dev >> 20).c_str());
	return line;
}

/** Step 4 (rank 0): the gpumpi.repro.fallback/1 document, or the human summary. */
void report(const FallbackOptions& opts, const ReproStart& start, const Job& job, Sweep& sweep) {
	const bool device = start.device;
	const int size = start.size;
	const std::string& gpuReason = start.gpuReason;
	JsonWriter w;
	w.beginObject();
	w.key("schema").value("gpumpi.repro.fallback/1");
	w.key("memory").value(device ? "device" : "host");
	w.key("requested_memory").value(opts.memory);
	if (device) w.key("gpu_unavailable_reason").null();
	else w.key("gpu_unavailable_reason").value(gpuReason);
	w.key("np").value(size);
	w.key("mpi");
	writeMpiJson(w);
	w.key("hosts").beginArray();
	for (const auto& h : job.hosts) w.value(h);
	w.endArray();
	w.key("same_node").value(size == 2 && job.hosts[0] == job.hosts[1]);
	w.key("device_ordinals").beginArray();
	for (int d : job.deviceOrdinals) w.value(d);
	w.endArray();
	w.key("node_memory").beginArray();
	for (size_t r = 0; r < job.memTotal.size(); r++) {
		w.beginObject();
		w.key("rank").value(static_cast<int>(r));
		writeGrowth(w, "mem_total_bytes", job.memTotal[r]);
		writeGrowth(w, "mem_available_bytes", job.memAvailable[r]);
		w.endObject();
	}
	w.endArray();
	w.key("chunk_bytes").value(opts.chunkBytes);
	w.key("nbuf").value(opts.nbuf);
	w.key("iters").value(opts.iters);
	w.key("max_message_bytes").value(kMaxMessageBytes);
	std::string& outcome = sweep.outcome;
	std::string& detail = sweep.detail;
	std::string table = "  mode            size  best GB/s   median  data          RSS+ MiB  dev+ MiB\n";
	w.key("results").beginArray();
	for (const Measurement& m : sweep.results) {
		writeMeasurement(w, opts, m);
		table += summaryLine(m);
		// A mode that does not apply here (lib-shm across hosts) is a skipped row with its reason, not a failure.
		const bool notApplicable = m.status == kSkipped && !m.skipReason.empty();
		if (m.status != kOk && !notApplicable && outcome == "ok") {
			outcome = "partial";
			detail = m.mode + " at " + formatSize(m.size) + ": " + (m.status == kWrongData ? "wrong data" : m.err);
		}
	}
	w.endArray();
	w.key("outcome").value(outcome);
	w.key("detail").value(detail);
	w.endObject();
	if (opts.json) printJsonDocument(w.str());
	else {
		std::printf("repro fallback, %s memory%s%s: %s%s%s\n%s", device ? "device" : "host", device ? "" : " (no GPU verdict: ",
		            device ? "" : (gpuReason + ")").c_str(), outcome.c_str(), detail.empty() ? "" : ": ", detail.c_str(), table.c_str());
		std::printf("  (RSS+/dev+: largest peak growth of either rank during the transfers; --json for every figure)\n");
	}
}

}  // namespace

int runFallback(const FallbackOptions& opts) {
	ReproStart start;
	if (!startReproMpi(opts.memory, "repro fallback", start)) return 1;
	const Job job = describeJob(start);
	Sweep sweep = measureSweep(opts, start);
	if (start.rank == 0) report(opts, start, job, sweep);
	MPI_Finalize();
	releaseCuda(start.cuda);
	return 0;
}

}  // namespace gpumpi::repro
