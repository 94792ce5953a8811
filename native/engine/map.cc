// `gpumpi map` (see map.hh): rank facts, pair selection, one-pair-at-a-time ping-pong, path classes with evidence.
#include "map.hh"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "mapSys.hh"
#include "rankAffinity.hh"
#include "reproCommon.hh"
#include "version.hh"

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

namespace gpumpi::map {

using repro::CudaSetup;

std::vector<std::pair<int, int>> selectPairs(const std::vector<std::string>& hostOfRank, bool sampled) {
	std::vector<std::pair<int, int>> out;
	const int n = static_cast<int>(hostOfRank.size());
	std::set<std::pair<std::string, std::string>> seenHostPairs;
	for (int a = 0; a < n; a++) {
		for (int b = a + 1; b < n; b++) {
			if (!sampled || hostOfRank[a] == hostOfRank[b]) {
				out.emplace_back(a, b);
				continue;
			}
			// One representative pair per unordered host pair: the lowest ranks of both hosts.
			auto key = std::minmax(hostOfRank[a], hostOfRank[b]);
			if (seenHostPairs.insert({key.first, key.second}).second) out.emplace_back(a, b);
		}
	}
	return out;
}

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
};

std::string encodeFacts(const Facts& f) {
	std::string peers;
	for (const auto& [bus, can] : f.peerAccess) peers += bus + "=" + (can ? "1" : "0") + ";";
	return f.host + kSep + f.uuid + kSep + f.busId + kSep + peers + kSep + (f.peermem ? "1" : "0") + kSep + std::to_string(f.ibCount);
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

/** Ping-pong between me and peer; `first` starts. Best round-trip seconds of `iters` timed rounds (one warm-up). */
int pingPong(void* buf, unsigned long long bytes, int peer, bool first, int iters, double& best, std::string& err) {
	best = 1e300;
	const int count = static_cast<int>(bytes);
	for (int it = 0; it <= iters; it++) {
		double t0 = MPI_Wtime();
		int rc;
		if (first) {
			rc = MPI_Send(buf, count, MPI_BYTE, peer, 71, MPI_COMM_WORLD);
			if (rc == MPI_SUCCESS) rc = MPI_Recv(buf, count, MPI_BYTE, peer, 72, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			rc = MPI_Recv(buf, count, MPI_BYTE, peer, 71, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (rc == MPI_SUCCESS) rc = MPI_Send(buf, count, MPI_BYTE, peer, 72, MPI_COMM_WORLD);
		}
		double t = MPI_Wtime() - t0;
		if (rc != MPI_SUCCESS) { err = repro::mpiErrorText(rc); return rc; }
		if (it > 0) best = std::min(best, t);
	}
	return MPI_SUCCESS;
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

/** Every rank's facts, the pairs to measure and their classes (every rank computes the same). */
struct Plan {
	std::vector<Facts> facts;
	std::vector<std::pair<int, int>> pairs;
	std::vector<PairClass> classes;
	bool sampled = false;
};

bool planPairs(const MapOptions& o, const repro::ReproStart& start, const Facts& mine, Plan& plan, std::string& err) {
	std::vector<std::string> factsText;
	if (!allgatherStrings(encodeFacts(mine), factsText, err)) return false;
	std::vector<std::string> hosts;
	for (const auto& t : factsText) { plan.facts.push_back(decodeFacts(t)); hosts.push_back(plan.facts.back().host); }
	plan.sampled = o.sampled || start.size > o.maxRanks;
	plan.pairs = selectPairs(hosts, plan.sampled);
	// start.device is what every rank agreed on: a device run where one rank lost its GPU is a host run for everyone.
	std::string cudaHow;
	const int cudaAware = mpiCudaAware(cudaHow);
	for (const auto& [a, b] : plan.pairs) plan.classes.push_back(classify(plan.facts[a], plan.facts[b], start.device, cudaAware, cudaHow));
	return true;
}

/** The measurements, reduced on rank 0 (-1: not measured), and this rank's errors as {"pair","rank","error"} fragments. */
struct Measured {
	std::vector<double> bw, lat;
	bool allAllocOk = false;
	std::string allocError;  // this rank's
	std::string errorsJson;
	int latIters = 0;
};

/** Step 3: one buffer of the larger size per rank, then each pair's ping-pongs while the others wait at a barrier. */
Measured measurePairs(const MapOptions& o, const repro::ReproStart& start, const Plan& plan) {
	const int rank = start.rank;
	const bool useDevice = start.device;
	Measured m;
	const unsigned long long bytes = std::max(o.largeBytes, o.smallBytes);
	CUdeviceptr dptr = 0;
	void* hbuf = nullptr;
	if (useDevice) {
		const CudaDriver& d = cudaDriver();
		CUresult r = d.cuMemAlloc(&dptr, bytes);
		if (r == CUDA_SUCCESS) r = d.cuMemsetD8(dptr, static_cast<unsigned char>(rank + 1), bytes);
		if (r != CUDA_SUCCESS) m.allocError = "cuMemAlloc/cuMemsetD8: " + cudaErrorText(r);
	} else {
		hbuf = std::malloc(bytes);
		if (!hbuf) m.allocError = "malloc failed";
		else std::memset(hbuf, rank + 1, bytes);
	}
	int allocOk = m.allocError.empty() ? 1 : 0, allAllocOk = 0;
	MPI_Allreduce(&allocOk, &allAllocOk, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	m.allAllocOk = allAllocOk != 0;
	void* buf = useDevice ? reinterpret_cast<void*>(static_cast<uintptr_t>(dptr)) : hbuf;

	const size_t np = plan.pairs.size();
	std::vector<double> bw(np, -1), lat(np, -1);
	m.latIters = std::max(10, o.iters * 4);
	for (size_t i = 0; i < np; i++) {
		const auto [a, b] = plan.pairs[i];
		if ((rank == a || rank == b) && plan.classes[i].measure && m.allAllocOk) {
			const int peer = rank == a ? b : a;
			double best = 0;
			std::string e;
			int r = pingPong(buf, o.smallBytes, peer, rank == a, m.latIters, best, e);
			if (r == MPI_SUCCESS && rank == a) lat[i] = best / 2 * 1e6;
			if (r == MPI_SUCCESS) r = pingPong(buf, o.largeBytes, peer, rank == a, o.iters, best, e);
			if (r == MPI_SUCCESS && rank == a) bw[i] = static_cast<double>(o.largeBytes) / (best / 2) / 1e9;
			if (r != MPI_SUCCESS) {
				JsonWriter ew;
				ew.beginObject().key("pair").value(static_cast<long long>(i)).key("rank").value(rank).key("error").value(e).endObject();
				if (!m.errorsJson.empty()) m.errorsJson += ',';
				m.errorsJson += ew.str();
			}
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
	m.bw.assign(np, -1);
	m.lat.assign(np, -1);
	if (np) {
		MPI_Reduce(bw.data(), m.bw.data(), static_cast<int>(np), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		MPI_Reduce(lat.data(), m.lat.data(), static_cast<int>(np), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	}
	if (dptr) cudaDriver().cuMemFree(dptr);
	std::free(hbuf);
	return m;
}

/** Step 4 (rank 0): the gpumpi.map/1 document, or the human table. */
void writeMap(const MapOptions& o, const repro::ReproStart& start, const Plan& plan, const Measured& m, bool gathered,
              const std::vector<std::string>& rankJson, const std::vector<std::string>& errorsAll) {
	const bool useDevice = start.device;
	const int size = start.size;
	const size_t np = plan.pairs.size();
	const auto& facts = plan.facts;
	JsonWriter w;
	w.beginObject();
	w.key("schema").value("gpumpi.map/1");
	w.key("tool").beginObject().key("name").value("gpumpi").key("version").value(GPUMPI_VERSION).endObject();
	w.key("options").beginObject().key("pairs").value(o.sampled ? "sampled" : "all").key("max_ranks").value(o.maxRanks);
	w.key("large_bytes").value(o.largeBytes).key("small_bytes").value(o.smallBytes).key("iters").value(o.iters);
	w.key("latency_iters").value(m.latIters).key("memory").value(o.memory).endObject();
	w.key("memory").value(useDevice ? "device" : "host");
	w.key("gpu_unavailable_reason");
	if (o.memory == "device" && !useDevice) w.value(start.gpuReason); else w.null();
	w.key("mpi");
	repro::writeMpiJson(w);
	w.key("world_size").value(size).key("sampled").value(plan.sampled);
	w.key("total_pairs").value(static_cast<long long>(size) * (size - 1) / 2);
	w.key("setup_error");
	if (!m.allAllocOk) w.value("buffer allocation failed on at least one rank" + (m.allocError.empty() ? std::string() : ": " + m.allocError)); else w.null();
	w.key("ranks").beginArray();
	if (gathered) for (const auto& r : rankJson) w.raw(r);
	w.endArray();
	w.key("pairs").beginArray();
	for (size_t i = 0; i < np; i++) {
		const auto [a, b] = plan.pairs[i];
		const PairClass& pc = plan.classes[i];
		const bool ok = m.bw[i] >= 0 && m.lat[i] >= 0;
		w.beginObject().key("a").value(a).key("b").value(b).key("same_host").value(facts[a].host == facts[b].host);
		w.key("class").value(pc.cls).key("reason").value(pc.reason).key("evidence").beginArray();
		for (const auto& e : pc.evidence) w.value(e);
		w.endArray();
		w.key("status").value(!pc.measure ? "skipped" : !m.allAllocOk ? "setup_error" : ok ? "ok" : "mpi_error");
		w.key("bandwidth_gbps");
		writeNumberOrNull(w, m.bw[i]);
		w.key("latency_us");
		writeNumberOrNull(w, m.lat[i]);
		w.endObject();
	}
	w.endArray();
	w.key("errors").beginArray();
	if (gathered) for (const auto& e : errorsAll) if (e.size() > 2) w.raw(e.substr(1, e.size() - 2));
	w.endArray();
	w.endObject();
	if (o.json) {
		repro::printJsonDocument(w.str());
	} else {
		std::printf("gpumpi map: %d ranks, %zu pairs (%s), %s memory\n", size, np, plan.sampled ? "sampled" : "all", useDevice ? "device" : "host");
		for (size_t i = 0; i < np; i++) {
			const PairClass& pc = plan.classes[i];
			std::printf("  %d-%d  %-15s %10.3f GB/s %10.2f us  %s\n", plan.pairs[i].first, plan.pairs[i].second, pc.cls.c_str(), m.bw[i], m.lat[i], pc.reason.c_str());
		}
	}
	std::fflush(stdout);
}

}  // namespace

int runMap(const MapOptions& o) {
	repro::ReproStart start;  // CUDA before MPI_Init (device memory), MPI, the memory kind every rank agreed on
	if (!repro::startReproMpi(o.memory, "map", start)) return 3;
	const RankReport mine = describeRank(start);
	Plan plan;
	std::string err;
	if (!planPairs(o, start, mine.facts, plan, err)) {
		std::fprintf(stderr, "gpumpi map: %s\n", err.c_str());
		MPI_Abort(MPI_COMM_WORLD, 3);
		return 3;
	}
	const Measured m = measurePairs(o, start, plan);
	std::vector<std::string> rankJson, errorsAll;
	bool gathered = repro::gatherStrings(mine.json, rankJson, err) && repro::gatherStrings("[" + m.errorsJson + "]", errorsAll, err);
	if (start.rank == 0) writeMap(o, start, plan, m, gathered, rankJson, errorsAll);
	MPI_Finalize();
	if (start.cuda.usable) repro::releaseCuda(start.cuda);
	return gathered ? 0 : 3;
}

}  // namespace gpumpi::map
