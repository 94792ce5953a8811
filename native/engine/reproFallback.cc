#include "reproFallback.hh"
#include "reproTransfer.hh"  // first: it sets the MPI C-only macros before <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpumpi::repro {
namespace {

const char* statusName(int s) {
	switch (s) {
		case kOk: return "ok";
		case kWrongData: return "wrong_data";
		case kMpiError: return "mpi_error";
		case kSetupError: return "setup_error";
		default: return "skipped";
	}
}

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

}  // namespace

bool parseSizeList(const std::string& text, std::vector<unsigned long long>& out, std::string& error) {
	out.clear();
	size_t dots = text.find("..");
	if (dots != std::string::npos) {
		unsigned long long lo = 0, hi = 0;
		if (!parseSize(text.substr(0, dots), lo) || !parseSize(text.substr(dots + 2), hi) || lo == 0 || hi < lo) {
			error = "bad size range '" + text + "' (expected e.g. 1M..1G)";
			return false;
		}
		for (unsigned long long s = lo; s <= hi; s *= 4) {
			out.push_back(s);
			if (s > (~0ull >> 3)) break;
		}
		if (out.back() != hi) out.push_back(hi);
	} else {
		size_t start = 0;
		while (start <= text.size()) {
			size_t comma = text.find(',', start);
			std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
			unsigned long long v = 0;
			if (!parseSize(item, v) || v == 0) {
				error = "bad size '" + item + "' in '" + text + "'";
				return false;
			}
			out.push_back(v);
			if (comma == std::string::npos) break;
			start = comma + 1;
		}
	}
	for (auto s : out)
		if (s % 4) {
			error = "sizes must be multiples of 4 bytes (" + std::to_string(s) + ")";
			return false;
		}
	if (out.size() > 64) {
		error = "too many sizes (" + std::to_string(out.size()) + ", at most 64)";
		return false;
	}
	return true;
}

int runFallback(const FallbackOptions& opts) {
	ReproStart start;
	if (!startReproMpi(opts.memory, "repro fallback", start)) return 1;
	CudaSetup& cuda = start.cuda;
	std::string& gpuReason = start.gpuReason;
	const int rank = start.rank, size = start.size;
	const bool device = start.device;

	char myHost[256] = {0};
	std::snprintf(myHost, sizeof myHost, "%s", hostName().c_str());
	std::vector<char> hosts(static_cast<size_t>(size > 0 ? size : 1) * 256, 0);
	MPI_Allgather(myHost, 256, MPI_CHAR, hosts.data(), 256, MPI_CHAR, MPI_COMM_WORLD);
	auto hostOf = [&](int r) { return std::string(&hosts[static_cast<size_t>(r) * 256], strnlen(&hosts[static_cast<size_t>(r) * 256], 256)); };

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
	for (int r = 0; r < size; r++) w.value(hostOf(r));
	w.endArray();
	w.key("same_node").value(size == 2 && hostOf(0) == hostOf(1));
	w.key("device_ordinals").beginArray();
	int myDev = device ? cuda.device : -1;
	std::vector<int> devs(static_cast<size_t>(size > 0 ? size : 1), -1);
	MPI_Gather(&myDev, 1, MPI_INT, devs.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
	for (int r = 0; r < size && rank == 0; r++) w.value(devs[static_cast<size_t>(r)]);
	w.endArray();
	w.key("chunk_bytes").value(opts.chunkBytes);
	w.key("nbuf").value(opts.nbuf);
	w.key("iters").value(opts.iters);
	w.key("max_message_bytes").value(kMaxMessageBytes);
	std::string outcome = "ok", detail;
	std::string table = "  mode         size  best GB/s   median  data          RSS+ MiB  dev+ MiB\n";

	if (size != 2) {
		outcome = "usage_error";
		detail = "repro fallback needs exactly 2 ranks (mpirun -np 2), got " + std::to_string(size);
		w.key("results").beginArray().endArray();
	} else {
		unsigned long long maxSize = *std::max_element(opts.sizes.begin(), opts.sizes.end());
		bool needStaging = std::find(opts.modes.begin(), opts.modes.end(), "staged") != opts.modes.end();
		bool needHost = std::find(opts.modes.begin(), opts.modes.end(), "host") != opts.modes.end();
		FallbackRun run(opts, cuda, device, rank);
		int okHere = run.setup(maxSize, needStaging, needHost) ? 1 : 0, okAll = 0;
		MPI_Allreduce(&okHere, &okAll, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
		w.key("results").beginArray();
		if (!okAll) {
			outcome = "setup_error";
			// Tell rank 0 what failed (either rank may have).
			char err[512] = {0};
			std::snprintf(err, sizeof err, "%s", run.error().c_str());
			std::vector<char> errs(rank == 0 ? 1024 : 1);
			MPI_Gather(err, 512, MPI_CHAR, errs.data(), 512, MPI_CHAR, 0, MPI_COMM_WORLD);
			if (rank == 0) detail = std::string(errs[0] ? &errs[0] : &errs[512]);
			if (rank == 0 && detail.empty()) detail = "buffer allocation failed";
		} else {
			for (const auto& mode : opts.modes) {
				bool skipRest = false;
				for (unsigned long long sz : opts.sizes) {
					int status = kOk;
					std::vector<double> secs;
					long long words = 0, wrong = 0;
					MemorySampler sampler(run.ctx());
					std::string err;
					int errClass = 0;
					if (!skipRest) {
						sampler.start();
						for (int it = 0; it < opts.iters && status == kOk; it++) {
							int st = run.poison(mode, sz);
							int mine[1] = {st}, worst[1] = {0};
							MPI_Allreduce(mine, worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
							if (worst[0] != kOk) { status = worst[0]; break; }
							MPI_Barrier(MPI_COMM_WORLD);
							double s = 0;
							st = run.transfer(mode, sz, s);
							double smax = 0;
							int stAll = 0;
							MPI_Allreduce(&st, &stAll, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
							MPI_Allreduce(&s, &smax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
							if (stAll != kOk) { status = stAll; break; }
							secs.push_back(smax);
						}
						sampler.stop();
						if (status == kOk && rank == 1) status = run.verify(mode, sz, words, wrong);
						int stAll = 0;
						MPI_Allreduce(&status, &stAll, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
						status = stAll;
						MPI_Bcast(&words, 1, MPI_LONG_LONG, 1, MPI_COMM_WORLD);
						MPI_Bcast(&wrong, 1, MPI_LONG_LONG, 1, MPI_COMM_WORLD);
						if (status == kMpiError || status == kSetupError) {
							skipRest = true;  // a broken path stays broken; don't pile up errors
							char e[512] = {0};
							std::snprintf(e, sizeof e, "%s", run.error().c_str());
							std::vector<char> errs(rank == 0 ? 1024 : 1);
							MPI_Gather(e, 512, MPI_CHAR, errs.data(), 512, MPI_CHAR, 0, MPI_COMM_WORLD);
							if (rank == 0) err = errs[0] ? &errs[0] : &errs[512];
							errClass = run.errorClass();
						}
					} else {
						status = kSkipped;
					}
					RankMemory mem;
					mem.rssGrowth = sampler.rssPeakGrowth();
					mem.pinnedGrowth = sampler.pinnedPeakGrowth();
					mem.lockedGrowth = sampler.lockedPeakGrowth();
					mem.deviceGrowth = sampler.deviceUsedPeakGrowth();
					mem.rssBaseline = sampler.rssBaseline();
					mem.libraryPinned = run.libraryPinned(mode);
					mem.samples = static_cast<long long>(sampler.samples());
					std::vector<RankMemory> mems(2);
					MPI_Gather(&mem, sizeof mem, MPI_BYTE, mems.data(), sizeof mem, MPI_BYTE, 0, MPI_COMM_WORLD);
					if (rank != 0) continue;
					w.beginObject();
					w.key("mode").value(mode);
					w.key("size_bytes").value(sz);
					w.key("messages").value(mode == "staged" ? (sz + opts.chunkBytes - 1) / opts.chunkBytes
					                                         : (sz + kMaxMessageBytes - 1) / kMaxMessageBytes);
					w.key("status").value(status == kSkipped ? "skipped" : statusName(status));
					if (status == kMpiError || status == kSetupError) {
						w.key("error").value(err);
						if (status == kMpiError) w.key("error_class").value(errClass);
					}
					w.key("seconds").beginArray();
					for (double s : secs) w.value(s);
					w.endArray();
					double best = 0;
					for (double s : secs) best = (best == 0 || s < best) ? s : best;
					if (!secs.empty() && best > 0) {
						w.key("best_gbps").value(static_cast<double>(sz) / best / 1e9);
						w.key("median_gbps").value(static_cast<double>(sz) / median(secs) / 1e9);
					} else {
						w.key("best_gbps").null();
						w.key("median_gbps").null();
					}
					w.key("verified").beginObject();
					w.key("words").value(words);
					w.key("wrong").value(wrong);
					w.endObject();
					w.key("memory").beginArray();
					for (int r = 0; r < 2; r++) {
						const RankMemory& m = mems[static_cast<size_t>(r)];
						w.beginObject();
						w.key("rank").value(r);
						writeGrowth(w, "rss_baseline_bytes", m.rssBaseline);
						writeGrowth(w, "rss_peak_growth_bytes", m.rssGrowth);
						writeGrowth(w, "pinned_peak_growth_bytes", m.pinnedGrowth);
						writeGrowth(w, "locked_peak_growth_bytes", m.lockedGrowth);
						writeGrowth(w, "device_used_peak_growth_bytes", m.deviceGrowth);
						w.key("library_pinned_bytes").value(m.libraryPinned);
						w.key("samples").value(m.samples);
						w.endObject();
					}
					w.endArray();
					w.endObject();
					{  // one line of the human summary (printed without --json)
						long long rss = std::max(mems[0].rssGrowth, mems[1].rssGrowth);
						long long dev = std::max(mems[0].deviceGrowth, mems[1].deviceGrowth);
						char line[256];
						std::snprintf(line, sizeof line, "  %-7s %9s %10.2f %8.2f  %-11s %9.1f %9s\n", mode.c_str(), formatSize(sz).c_str(),
						              best > 0 ? static_cast<double>(sz) / best / 1e9 : 0.0,
						              secs.empty() ? 0.0 : static_cast<double>(sz) / median(secs) / 1e9,
						              status == kOk ? "verified" : (status == kSkipped ? "skipped" : statusName(status)),
						              rss < 0 ? 0.0 : static_cast<double>(rss) / (1 << 20),
						              dev < 0 ? "-" : std::to_string(dev >> 20).c_str());
						table += line;
					}
					if (status != kOk && outcome == "ok") {
						outcome = "partial";
						detail = mode + " at " + formatSize(sz) + ": " + (status == kWrongData ? "wrong data" : err);
					}
				}
			}
		}
		w.endArray();
	}
	w.key("outcome").value(outcome);
	w.key("detail").value(detail);
	w.endObject();
	if (rank == 0) {
		if (opts.json) printJsonDocument(w.str());
		else {
			std::printf("repro fallback, %s memory%s%s: %s%s%s\n%s", device ? "device" : "host", device ? "" : " (no GPU verdict: ",
			            device ? "" : (gpuReason + ")").c_str(), outcome.c_str(), detail.empty() ? "" : ": ", detail.c_str(), table.c_str());
			std::printf("  (RSS+/dev+: largest peak growth of either rank during the transfers; --json for every figure)\n");
		}
	}
	MPI_Finalize();
	releaseCuda(cuda);
	return 0;
}

}  // namespace gpumpi::repro
