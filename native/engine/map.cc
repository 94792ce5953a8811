// `gpumpi map` (see map.hh): rank facts, pair selection, the schedule's rounds (mapRounds.cc), path classes with
// evidence, the streamed records and the document.
#include "map.hh"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "mapRounds.hh"
#include "mapSchedule.hh"
#include "mapSys.hh"
#include "rankAffinity.hh"
#include "reproCommon.hh"
#include "version.hh"

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

namespace gpumpi::map {

using repro::CudaSetup;

namespace {

constexpr char kSep = '\x1f';

/** CUDA-awareness of this MPI at run time: 1 yes, 0 no, -1 the library cannot say. */
int mpiCudaAware(std::string& how) {
#if defined(OPEN_MPI) && OPEN_MPI && defined(MPIX_CUDA_AWARE_SUPPORT)
	how = "MPIX_Query_cuda_support() = " + std::to_string(MPIX_Query_cuda_support());
	return MPIX_Query_cuda_support() ? 1 : 0;
#elif defined(MPICH_VERSION) && defined(MPIX_GPU_SUPPORT_CUDA)
	int ok = 0;
	if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &ok) != MPI_SUCCESS) { how = "MPIX_GPU_query_support failed"; return -1; }
	how = "MPIX_GPU_query_support(CUDA) = " + std::to_string(ok);
	return ok ? 1 : 0;
#else
	how = "this MPI has no CUDA-awareness query (no MPIX_CUDA_AWARE_SUPPORT / MPIX_GPU_SUPPORT_CUDA)";
	return -1;
#endif
}

std::vector<std::string> split(const std::string& s, char c) {
	std::vector<std::string> out;
	size_t start = 0;
	while (true) {
		size_t p = s.find(c, start);
		out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
		if (p == std::string::npos) return out;
		start = p + 1;
	}
}

bool allgatherStrings(const std::string& mine, std::vector<std::string>& all, std::string& error) {
	int size = 0;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int len = static_cast<int>(mine.size());
	std::vector<int> lens(size), displs(size);
	int rc = MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS) { error = "MPI_Allgather: " + repro::mpiErrorText(rc); return false; }
	long long total = 0;
	for (int i = 0; i < size; i++) { displs[i] = static_cast<int>(total); total += lens[i]; }
	if (total > (1ll << 30)) { error = "rank facts too large"; return false; }
	std::string buf(static_cast<size_t>(total), '\0');
	rc = MPI_Allgatherv(mine.data(), len, MPI_CHAR, buf.data(), lens.data(), displs.data(), MPI_CHAR, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS) { error = "MPI_Allgatherv: " + repro::mpiErrorText(rc); return false; }
	all.clear();
	for (int i = 0; i < size; i++) all.push_back(buf.substr(displs[i], lens[i]));
	return true;
}

/** The facts classification needs, one record per rank (exchanged as kSep-separated text). */
struct Facts {
	std::string host, uuid, busId;
	std::map<std::string, bool> peerAccess;  // bus id -> can access
	bool peermem = false;
	int ibCount = 0;
	std::string machine;  // /proc/sys/kernel/random/boot_id: one kernel, whatever the hostname (containers, namespaces)
	int onlineCpus = 0;
};

/** Which machine a rank runs on: its kernel's boot id, else its host name. */
std::string machineKey(const Facts& f) { return f.machine.empty() ? "host " + f.host : f.machine; }

/** This kernel's boot id ("" when unreadable). */
std::string bootId() {
	FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r");
	if (!f) return "";
	char buf[64] = {0};
	const bool ok = std::fgets(buf, sizeof buf, f) != nullptr;
	std::fclose(f);
	std::string id = ok ? buf : "";
	while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
	return id;
}

std::string encodeFacts(const Facts& f) {
	std::string peers;
	for (const auto& [bus, can] : f.peerAccess) peers += bus + "=" + (can ? "1" : "0") + ";";
	return f.host + kSep + f.uuid + kSep + f.busId + kSep + peers + kSep + (f.peermem ? "1" : "0") + kSep + std::to_string(f.ibCount) + kSep +
	       f.machine + kSep + std::to_string(f.onlineCpus);
}

Facts decodeFacts(const std::string& s) {
	Facts f;
	auto p = split(s, kSep);
	if (p.size() < 6) return f;
	f.host = p[0]; f.uuid = p[1]; f.busId = p[2];
	for (const auto& kv : split(p[3], ';')) {
		size_t eq = kv.find('=');
		if (eq != std::string::npos) f.peerAccess[kv.substr(0, eq)] = kv.substr(eq + 1) == "1";
	}
	f.peermem = p[4] == "1";
	f.ibCount = std::atoi(p[5].c_str());
	if (p.size() >= 8) { f.machine = p[6]; f.onlineCpus = std::atoi(p[7].c_str()); }
	return f;
}

struct PairClass {
	std::string cls, reason;
	std::vector<std::string> evidence;
	bool measure = true;
};

/** The path class of pair (a, b) from both ranks' facts, the memory used and the MPI's CUDA-awareness. */
PairClass classify(const Facts& a, const Facts& b, bool device, int cudaAware, const std::string& cudaHow) {
	PairClass c;
	const bool sameHost = a.host == b.host;
	c.evidence.push_back(sameHost ? "same host " + a.host : "hosts " + a.host + " and " + b.host);
	if (!device) {
		c.cls = "host_memory";
		c.reason = sameHost ? "host buffers; MPI uses shared memory within a host" : "host buffers; MPI uses the network between hosts";
		return c;
	}
	c.evidence.push_back("MPI CUDA-awareness: " + cudaHow);
	if (cudaAware != 1) {
		c.cls = "not_cuda_aware";
		c.measure = false;
		c.reason = cudaAware == 0 ? "the MPI library says it is not CUDA-aware: device pointers cannot be handed to it"
		                          : "the MPI library cannot tell whether it is CUDA-aware; device pointers were not risked";
		return c;
	}
	if (sameHost) {
		if (!a.uuid.empty() && a.uuid == b.uuid) {
			c.cls = "same_gpu";
			c.evidence.push_back("both ranks use " + a.uuid + " (" + a.busId + ")");
			c.reason = "both ranks share one GPU: CUDA IPC within the device when the MPI transport supports it";
			return c;
		}
		auto it = a.peerAccess.find(b.busId);
		bool can = it != a.peerAccess.end() && it->second;
		c.evidence.push_back("cuDeviceCanAccessPeer(" + a.busId + " -> " + b.busId + ") = " +
		                     (it == a.peerAccess.end() ? std::string("not visible") : can ? "1" : "0"));
		if (can) {
			c.cls = "p2p";
			c.reason = "GPUs on one host with peer access (NVLink or PCIe P2P): CUDA IPC can move data GPU to GPU";
		} else {
			c.cls = "host_staging";
			c.reason = "GPUs on one host without peer access: data goes through host memory";
		}
		return c;
	}
	c.evidence.push_back(std::string("nvidia_peermem: ") + (a.peermem ? "loaded" : "not loaded") + " on " + a.host + ", " +
	                     (b.peermem ? "loaded" : "not loaded") + " on " + b.host);
	c.evidence.push_back("RDMA devices: " + std::to_string(a.ibCount) + " on " + a.host + ", " + std::to_string(b.ibCount) + " on " + b.host);
	if (a.peermem && b.peermem && a.ibCount > 0 && b.ibCount > 0) {
		c.cls = "gpudirect_rdma";
		c.reason = "different hosts, RDMA devices and nvidia_peermem on both: the NIC can read and write GPU memory";
	} else {
		c.cls = "host_staging";
		c.reason = "different hosts without GPUDirect RDMA on both sides: GPU data is staged through host memory";
	}
	return c;
}

void writeNumberOrNull(JsonWriter& w, double v) { if (v >= 0) w.value(v); else w.null(); }

/** This rank's facts for the classification, and its entry of "ranks" (JSON). */
struct RankReport {
	Facts facts;
	std::string json;
};

RankReport describeRank(const repro::ReproStart& start) {
	const CudaSetup& cuda = start.cuda;
	RankReport out;
	Facts& mine = out.facts;
	mine.host = repro::hostName();
	GpuInfo gpu;
	if (cuda.usable) {
		gpu = gpuInfo(cuda.device, cuda.deviceCount);
		mine.uuid = gpu.uuid;
		mine.busId = gpu.pciBusId;
		for (const auto& p : gpu.peers) mine.peerAccess[p.pciBusId] = p.canAccess;
	}
	std::string peermemModule;
	mine.peermem = peermemLoaded(peermemModule);
	mine.machine = bootId();
	mine.onlineCpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
	const std::vector<Nic> nics = listNics();
	for (const auto& n : nics) mine.ibCount += n.kind == "ib";
	const std::vector<int> cpus = cpuAffinity();

	JsonWriter rw;
	rw.beginObject();
	rw.key("rank").value(start.rank).key("host").value(mine.host).key("pid").value(static_cast<long long>(getpid()));
	rw.key("local_rank").value(repro::localRankFromEnv());
	rw.key("cpus").beginArray();
	for (int c : cpus) rw.value(c);
	rw.endArray().key("cpu_list").value(cpuListText(cpus));
	rw.key("gpu");
	if (gpu.ordinal >= 0) {
		rw.beginObject().key("ordinal").value(gpu.ordinal).key("name").value(gpu.name).key("uuid").value(gpu.uuid);
		rw.key("pci_bus_id").value(gpu.pciBusId).key("numa_node").value(gpu.numaNode).key("peers").beginArray();
		for (const auto& p : gpu.peers)
			rw.beginObject().key("ordinal").value(p.ordinal).key("pci_bus_id").value(p.pciBusId).key("can_access_peer").value(p.canAccess).endObject();
		rw.endArray().endObject();
	} else {
		rw.null();
	}
	rw.key("nics").beginArray();
	for (const auto& n : nics) {
		rw.beginObject().key("name").value(n.name).key("kind").value(n.kind).key("numa_node").value(n.numaNode);
		rw.key("virtual").value(n.isVirtual).key("state").value(n.state).endObject();
	}
	rw.endArray();
	rw.key("affinity");
	writeAffinityJson(rw, cpus, gpu.ordinal >= 0 ? gpu.pciBusId : "");
	rw.key("peermem").beginObject().key("loaded").value(mine.peermem).key("module").value(peermemModule).endObject();
	rw.endObject();
	out.json = rw.str();
	return out;
}

/** Every rank's facts, the schedule and each scheduled pair's class (every rank computes the same). */
struct Plan {
	std::vector<Facts> facts;
	Schedule schedule;
	std::vector<PairClass> classes;
	std::vector<bool> measure;
	bool sampled = false;
	size_t maxConcurrent = 0;
	/** More ranks than CPUs on this rank's machine: its waits nap between polls (oversubscribed, like CI). */
	int ranksOnMyMachine = 0;
	bool nap = false;
	std::vector<int> oversubscribedRanks;  // every rank whose machine has more ranks than CPUs
	double maxRanksPerCpu = 0;             // the most crowded machine's ranks per online CPU (0: CPUs unknown)
};

/** Microseconds a rank naps between polls where its machine runs more ranks than it has CPUs. */
constexpr long kOversubscribedNapUs = 50;

bool planPairs(const MapOptions& o, const repro::ReproStart& start, const Facts& mine, Plan& plan, std::string& err) {
	std::vector<std::string> factsText;
	if (!allgatherStrings(encodeFacts(mine), factsText, err)) return false;
	std::vector<std::string> hosts;
	for (const auto& t : factsText) { plan.facts.push_back(decodeFacts(t)); hosts.push_back(plan.facts.back().host); }
	plan.sampled = o.sampled || start.size > o.maxRanks;
	plan.schedule = buildSchedule(hosts, plan.sampled, roundsSchedule(o, plan.sampled));
	// start.device is what every rank agreed on: a device run where one rank lost its GPU is a host run for everyone.
	std::string cudaHow;
	const int cudaAware = mpiCudaAware(cudaHow);
	for (const auto& [a, b] : plan.schedule.pairs) {
		plan.classes.push_back(classify(plan.facts[a], plan.facts[b], start.device, cudaAware, cudaHow));
		plan.measure.push_back(plan.classes.back().measure);
	}
	for (const auto& r : plan.schedule.roundPairs) plan.maxConcurrent = std::max(plan.maxConcurrent, r.size());
	// Ranks that share a kernel share its CPUs: beyond one rank per CPU, spinning ranks take the CPU from the ones that
	// move data (measured on the 2-core CI machine: pairs 2-7x apart when spinning, 1.5-3x when napping).
	std::map<std::string, int> perMachine;
	for (const auto& f : plan.facts) perMachine[machineKey(f)]++;
	for (size_t r = 0; r < plan.facts.size(); r++) {
		const Facts& f = plan.facts[r];
		if (f.onlineCpus > 0 && perMachine[machineKey(f)] > f.onlineCpus) plan.oversubscribedRanks.push_back(static_cast<int>(r));
		if (f.onlineCpus > 0) plan.maxRanksPerCpu = std::max(plan.maxRanksPerCpu, static_cast<double>(perMachine[machineKey(f)]) / f.onlineCpus);
	}
	plan.ranksOnMyMachine = perMachine[machineKey(plan.facts[start.rank])];
	plan.nap = std::find(plan.oversubscribedRanks.begin(), plan.oversubscribedRanks.end(), start.rank) != plan.oversubscribedRanks.end();
	return true;
}

/** Round of every pair (index into schedule.roundPairs). */
std::vector<int> roundOfPairs(const Schedule& s) {
	std::vector<int> out(s.pairs.size(), -1);
	for (size_t r = 0; r < s.roundPairs.size(); r++) for (int i : s.roundPairs[r]) out[i] = static_cast<int>(r);
	return out;
}

/** The fields the plan record and the final document share: run, MPI, memory, ranks, schedule. */
void writeHeader(JsonWriter& w, const MapOptions& o, const repro::ReproStart& start, const Plan& plan, const std::vector<std::string>& rankJson) {
	w.key("tool").beginObject().key("name").value("gpumpi").key("version").value(GPUMPI_VERSION).endObject();
	w.key("options").beginObject().key("pairs").value(o.sampled ? "sampled" : "all").key("max_ranks").value(o.maxRanks);
	w.key("large_bytes").value(o.largeBytes).key("small_bytes").value(o.smallBytes).key("iters").value(o.iters);
	w.key("latency_iters").value(std::max(10, o.iters * 4)).key("memory").value(o.memory);
	w.key("schedule").value(o.schedule).key("pair_timeout_s").value(o.pairTimeoutS).endObject();
	w.key("memory").value(start.device ? "device" : "host");
	w.key("gpu_unavailable_reason");
	if (o.memory == "device" && !start.device) w.value(start.gpuReason); else w.null();
	w.key("mpi");
	repro::writeMpiJson(w);
	w.key("world_size").value(start.size).key("sampled").value(plan.sampled);
	w.key("total_pairs").value(static_cast<long long>(start.size) * (start.size - 1) / 2);
	w.key("schedule").beginObject().key("mode").value(plan.schedule.rounds ? "rounds" : "sequential");
	w.key("rounds").value(static_cast<long long>(plan.schedule.roundPairs.size()));
	w.key("max_concurrent_pairs").value(static_cast<long long>(plan.maxConcurrent)).key("pair_timeout_s").value(o.pairTimeoutS);
	w.key("wait").beginObject().key("mode").value(plan.oversubscribedRanks.empty() ? "spin" : "nap");
	w.key("nap_us").value(plan.oversubscribedRanks.empty() ? 0L : kOversubscribedNapUs).key("oversubscribed_ranks").beginArray();
	for (int r : plan.oversubscribedRanks) w.value(r);
	w.endArray().key("ranks_per_cpu");
	if (plan.maxRanksPerCpu > 0) w.value(plan.maxRanksPerCpu); else w.null();
	w.key("reason");
	if (plan.oversubscribedRanks.empty()) {
		w.null();
	} else {
		const Facts& f = plan.facts[plan.oversubscribedRanks.front()];
		int same = 0;
		for (const auto& x : plan.facts) same += machineKey(x) == machineKey(f);
		w.value(std::to_string(same) + " ranks share the " + std::to_string(f.onlineCpus) + " CPUs of one machine (kernel boot id " +
		        (f.machine.empty() ? "unknown, host " + f.host : f.machine) + "): waiting ranks sleep " + std::to_string(kOversubscribedNapUs) +
		        " us between polls of bandwidth messages instead of spinning");
	}
	w.endObject().endObject();
	w.key("ranks").beginArray();
	for (const auto& r : rankJson) w.raw(r);
	w.endArray();
}

/** A pair's fixed fields: ranks, round, class and the evidence for it. */
void writePairHead(JsonWriter& w, const Plan& plan, size_t i, int round) {
	const auto [a, b] = plan.schedule.pairs[i];
	const PairClass& pc = plan.classes[i];
	w.key("a").value(a).key("b").value(b).key("round").value(round).key("same_host").value(plan.facts[a].host == plan.facts[b].host);
	w.key("class").value(pc.cls).key("reason").value(pc.reason).key("evidence").beginArray();
	for (const auto& e : pc.evidence) w.value(e);
	w.endArray();
}

std::string pairStatus(const Plan& plan, const RoundsResult& res, size_t i) {
	if (!plan.measure[i]) return "skipped";
	if (!res.allAllocOk) return "setup_error";
	return statusName(res.outcomes[i].status);
}

/** A pair's measured fields (the same in round records and the document). */
void writePairResult(JsonWriter& w, const Plan& plan, const RoundsResult& res, size_t i) {
	const PairOutcome& po = res.outcomes[i];
	w.key("status").value(pairStatus(plan, res, i));
	w.key("bandwidth_gbps");
	writeNumberOrNull(w, po.status == PairStatus::Ok || po.status == PairStatus::DataError ? po.bandwidthGbps : -1);
	w.key("latency_us");
	writeNumberOrNull(w, po.status == PairStatus::Ok || po.status == PairStatus::DataError ? po.latencyUs : -1);
	w.key("started_s");
	writeNumberOrNull(w, po.started);
	w.key("ended_s");
	writeNumberOrNull(w, po.ended);
	w.key("verified_messages").value(po.verified).key("corrupted_messages").value(po.corrupted);
	w.key("error");
	if (!po.error.empty()) w.value(po.error); else w.null();
}

/** --stream: the plan record (rank 0, before the first round): the document without measurements. */
void printPlanRecord(const MapOptions& o, const repro::ReproStart& start, const Plan& plan, const std::vector<std::string>& rankJson) {
	JsonWriter w;
	w.beginObject().key("schema").value("gpumpi.map-plan/1");
	writeHeader(w, o, start, plan, rankJson);
	const std::vector<int> roundOf = roundOfPairs(plan.schedule);
	w.key("pairs").beginArray();
	for (size_t i = 0; i < plan.schedule.pairs.size(); i++) {
		w.beginObject();
		writePairHead(w, plan, i, roundOf[i]);
		w.key("measure").value(static_cast<bool>(plan.measure[i])).endObject();
	}
	w.endArray().endObject();
	repro::printJsonDocument(w.str());
}

/** --stream: one round record (rank 0): the pairs whose outcome changed since the last one (marked in `streamed`). */
void printRoundRecord(const Plan& plan, const RoundsResult& res, int round, const std::vector<int>& changed, bool synced, std::vector<char>& streamed) {
	const std::vector<int> roundOf = roundOfPairs(plan.schedule);
	JsonWriter w;
	w.beginObject().key("schema").value("gpumpi.map-round/1").key("round").value(round);
	w.key("rounds").value(static_cast<long long>(plan.schedule.roundPairs.size()));
	w.key("final").value(round >= static_cast<int>(plan.schedule.roundPairs.size()));
	w.key("elapsed_s").value(wallSeconds() - res.epoch).key("synchronized").value(synced);
	w.key("pairs").beginArray();
	for (int i : changed) {
		streamed[static_cast<size_t>(i)] = 1;
		w.beginObject().key("pair").value(i).key("a").value(plan.schedule.pairs[i].first).key("b").value(plan.schedule.pairs[i].second);
		w.key("round").value(roundOf[i]);
		writePairResult(w, plan, res, static_cast<size_t>(i));
		w.endObject();
	}
	w.endArray().endObject();
	repro::printJsonDocument(w.str());
}

/**
 * Rank 0: the gpumpi.map/1 document, or the human table. With --final-without-pairs (`streamed`: the pairs each round
 * record carried) a last round record first brings every measured pair whose outcome the records have not given yet
 * (a pair nobody reported, with the error set here; all of them when the buffers could not be allocated), then the
 * document has "pairs_streamed": true and no pairs.
 */
void writeMap(const MapOptions& o, const repro::ReproStart& start, const Plan& plan, RoundsResult& res, const std::vector<std::string>& rankJson,
              std::vector<char>& streamed) {
	const size_t np = plan.schedule.pairs.size();
	const bool pairsStreamed = o.json && o.stream && o.finalWithoutPairs;
	// A pair nobody reported: say which of its ranks went silent.
	for (size_t i = 0; i < np; i++) {
		PairOutcome& po = res.outcomes[i];
		if (!plan.measure[i] || !res.allAllocOk || po.status != PairStatus::NotMeasured || !po.error.empty()) continue;
		streamed[i] = 0;  // its error changes here
		std::string who;
		for (int r : {plan.schedule.pairs[i].first, plan.schedule.pairs[i].second})
			if (std::find(res.silentRanks.begin(), res.silentRanks.end(), r) != res.silentRanks.end()) who += (who.empty() ? "rank " : " and rank ") + std::to_string(r);
		po.error = who.empty() ? "no report of this pair reached rank 0" : "no report: " + who + " stopped answering (no end message to rank 0)";
	}
	if (pairsStreamed) {
		std::vector<int> rest;
		for (size_t i = 0; i < np; i++)
			if (plan.measure[i] && (!streamed[i] || !res.allAllocOk)) rest.push_back(static_cast<int>(i));
		if (!rest.empty()) printRoundRecord(plan, res, static_cast<int>(plan.schedule.roundPairs.size()), rest, res.firstUnsyncedRound < 0, streamed);
	}
	const std::vector<int> roundOf = roundOfPairs(plan.schedule);
	JsonWriter w;
	w.beginObject();
	w.key("schema").value("gpumpi.map/1");
	writeHeader(w, o, start, plan, rankJson);
	w.key("setup_error");
	if (!res.allAllocOk) w.value("buffer allocation failed on at least one rank" + (res.allocError.empty() ? std::string() : ": " + res.allocError)); else w.null();
	w.key("elapsed_s").value(res.elapsedS);
	w.key("incomplete");
	if (res.cleanEnd) {
		w.null();
	} else {
		w.beginObject().key("silent_ranks").beginArray();
		for (int r : res.silentRanks) w.value(r);
		w.endArray().key("barrier_timeouts").value(res.barrierTimeouts).key("first_unsynchronized_round").value(res.firstUnsyncedRound);
		w.key("abandoned_requests").value(res.abandonedRequests).key("ends_with").value("MPI_Abort").endObject();
	}
	if (pairsStreamed) w.key("pairs_streamed").value(true);
	w.key("pairs").beginArray();
	for (size_t i = 0; i < np && !pairsStreamed; i++) {
		w.beginObject();
		writePairHead(w, plan, i, roundOf[i]);
		writePairResult(w, plan, res, i);
		w.endObject();
	}
	w.endArray();
	w.key("errors").beginArray();
	for (size_t i = 0; i < np; i++) {
		const PairOutcome& po = res.outcomes[i];
		if (po.error.empty()) continue;
		w.beginObject().key("pair").value(static_cast<long long>(i)).key("rank").value(po.errorRank).key("error").value(po.error).endObject();
	}
	w.endArray();
	w.endObject();
	if (o.json) {
		repro::printJsonDocument(w.str());
	} else {
		std::printf("gpumpi map: %d ranks, %zu pairs (%s) in %zu %s, %s memory, %.1f s\n", start.size, np, plan.sampled ? "sampled" : "all",
		            plan.schedule.roundPairs.size(), plan.schedule.rounds ? "rounds" : "sequential steps", start.device ? "device" : "host", res.elapsedS);
		for (size_t i = 0; i < np; i++) {
			const PairClass& pc = plan.classes[i];
			const PairOutcome& po = res.outcomes[i];
			std::printf("  %4d  %d-%d  %-15s %-12s %10.3f GB/s %10.2f us  %s\n", roundOf[i], plan.schedule.pairs[i].first, plan.schedule.pairs[i].second,
			            pc.cls.c_str(), pairStatus(plan, res, i).c_str(), po.bandwidthGbps, po.latencyUs, po.error.empty() ? pc.reason.c_str() : po.error.c_str());
		}
	}
	std::fflush(stdout);
}

}  // namespace

bool roundsSchedule(const MapOptions& o, bool sampled) {
	return o.schedule == "rounds" || (o.schedule == "auto" && sampled);
}

int runMap(const MapOptions& o) {
	repro::ReproStart start;  // CUDA before MPI_Init (device memory), MPI, the memory kind every rank agreed on
	if (!repro::startReproMpi(o.memory, "map", start)) return 3;
	const RankReport mine = describeRank(start);
	Plan plan;
	std::string err;
	std::vector<std::string> rankJson;
	if (!planPairs(o, start, mine.facts, plan, err) || !repro::gatherStrings(mine.json, rankJson, err)) {
		std::fprintf(stderr, "gpumpi map: %s\n", err.c_str());
		MPI_Abort(MPI_COMM_WORLD, 3);
		return 3;
	}
	if (start.rank == 0 && o.json && o.stream) printPlanRecord(o, start, plan, rankJson);
	if (plan.nap) setWaitNap(kOversubscribedNapUs);
	RoundsConfig cfg;
	cfg.device = start.device;
	cfg.smallBytes = o.smallBytes;
	cfg.largeBytes = o.largeBytes;
	cfg.iters = o.iters;
	cfg.latencyIters = std::max(10, o.iters * 4);
	cfg.pairTimeoutS = o.pairTimeoutS;
	RoundSink sink;
	std::vector<char> streamed(plan.schedule.pairs.size(), 0);
	if (o.json && o.stream) {
		sink = [&](int round, const std::vector<int>& changed, const RoundsResult& soFar) {
			printRoundRecord(plan, soFar, round, changed, soFar.firstUnsyncedRound < 0, streamed);
		};
	} else if (!o.json) {
		sink = [&](int round, const std::vector<int>& changed, const RoundsResult&) {
			std::fprintf(stderr, "gpumpi map: round %d of %zu: %zu pair(s) reported\n", std::min<int>(round + 1, static_cast<int>(plan.schedule.roundPairs.size())),
			             plan.schedule.roundPairs.size(), changed.size());
		};
	}
	RoundsResult res = runRounds(cfg, plan.schedule, plan.measure, start.rank, start.size, sink);
	if (start.rank == 0) {
		writeMap(o, start, plan, res, rankJson, streamed);
		if (!res.cleanEnd) {
			// MPI_Finalize would wait for a rank that is gone or stuck: the document is out, end the job.
			std::fprintf(stderr, "gpumpi map: ending the job with MPI_Abort (silent ranks: %zu, barrier timeouts: %d, abandoned requests: %d)\n",
			             res.silentRanks.size(), res.barrierTimeouts, res.abandonedRequests);
			std::fflush(stderr);
			MPI_Abort(MPI_COMM_WORLD, kExitIncomplete);
		}
	}
	MPI_Finalize();
	if (start.cuda.usable) repro::releaseCuda(start.cuda);
	return 0;
}

}  // namespace gpumpi::map
