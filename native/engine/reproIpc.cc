#include "reproIpc.hh"
#include "reproIpcRun.hh"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace gpumpi::repro {
namespace {

using ipc::IpcRun;
using ipc::RankResult;
using ipc::copyText;

void writeRank(JsonWriter& w, const RankResult& r) {
	w.beginObject();
	w.key("rank").value(r.rank);
	w.key("host").value(std::string(r.host, strnlen(r.host, sizeof r.host)));
	w.key("local_rank").value(r.localRank);
	w.key("pid").value(r.pid);
	w.key("device").value(r.device);
	w.key("role").value(r.role);
	w.key("buffer").value(r.buffer);
	w.key("status").value(statusName(r.status));
	if (r.status == kMpiError || r.status == kSetupError) {
		w.key("error").beginObject();
		w.key("call").value(r.call);
		if (r.status == kMpiError) w.key("class").value(r.errorClass);
		w.key("message").value(r.error);
		w.endObject();
	}
	if (r.verified) {
		w.key("verified").beginObject();
		w.key("words").value(r.checkedWords);
		w.key("wrong").value(r.wrongWords);
		if (r.wrongWords > 0) {
			w.key("first_wrong_index").value(r.firstWrongIndex);
			char buf[16];
			std::snprintf(buf, sizeof buf, "0x%08x", r.firstWrongValue);
			w.key("first_wrong_value").value(buf);
			std::snprintf(buf, sizeof buf, "0x%08x", r.firstWrongExpected);
			w.key("first_wrong_expected").value(buf);
		}
		w.endObject();
	}
	w.key("transfer_seconds").value(r.transferSeconds);
	w.endObject();
}

std::string describeVariant(const std::string& v, bool device) {
	const char* mem = device ? "GPU" : "host (POSIX shm)";
	if (v == "direct" || v == "crash-test")
		return std::string("ranks 1 and 3 receive straight into the ") + mem + " memory they imported from ranks 0 and 2";
	if (v == "bounce") return std::string("ranks 1 and 3 receive into their own ") + (device ? "device" : "host") + " buffer, then copy into the import";
	if (v == "pool" || v == "vmm")
		return std::string("ranks 0 and 2 send from ") + (!device ? "host memory (no GPU)" : v == "pool" ? "stream-ordered pool memory (cuMemAllocAsync, the default pool)" : "VMM memory (cuMemCreate with POSIX-FD handles + cuMemMap)") +
		       " to ranks 1 and 3 on their node, which receive into memory allocated the same way";
	if (v == "host") return std::string("ranks 1 and 3 receive into ") + (device ? "pinned host memory, then copy (H2D)" : "host memory, then copy") + " into the import";
	return std::string("ranks 1 and 3 send FROM the ") + mem + " memory they imported; ranks 0 and 2 receive into their own buffers";
}

/** The document's verdict: its outcome and a one-line detail. */
struct Verdict {
	std::string outcome, detail;
};

/** Exactly 4 ranks, each importer on its owner's node; else the usage or placement error, and nothing runs. */
Verdict checkPlacement(int size, const std::vector<std::string>& hosts) {
	Verdict v;
	if (size != 4) {
		v.outcome = "usage_error";
		v.detail = "repro ipc needs exactly 4 ranks (mpirun -np 4), got " + std::to_string(size);
	} else if (hosts[0] != hosts[1] || hosts[2] != hosts[3]) {
		v.outcome = "placement_error";
		v.detail = "IPC needs each importer on its owner's node, but rank 0 is on " + hosts[0] + ", rank 1 on " + hosts[1] +
		           ", rank 2 on " + hosts[2] + ", rank 3 on " + hosts[3] +
		           "; place ranks 0,1 on one node and 2,3 on the other (Open MPI: --map-by ppr:2:node or --host a:2,b:2)";
	}
	return v;
}

/** This rank's part of the variant (only when `runIt`), with who and where it ran. */
RankResult runRank(const IpcOptions& opts, const ReproStart& start, bool runIt) {
	IpcRun run(opts, start.cuda, start.device);
	if (runIt) run.run(start.rank, start.size);
	RankResult res = run.result();
	res.rank = start.rank;
	res.localRank = localRankFromEnv();
	res.pid = static_cast<int>(getpid());
	res.device = start.device ? start.cuda.device : -1;
	copyText(res.host, sizeof res.host, hostName());
	return res;
}

/** Every rank's result on rank 0 (as bytes: every rank runs the same binary); rank 0's alone when the gather failed. */
std::vector<RankResult> gatherResults(const RankResult& res, int rank, int size, int* rc) {
	std::vector<RankResult> all(rank == 0 ? static_cast<size_t>(size) : 1);
	*rc = MPI_Gather(&res, sizeof res, MPI_BYTE, all.data(), sizeof res, MPI_BYTE, 0, MPI_COMM_WORLD);
	if (rank == 0 && *rc != MPI_SUCCESS) all.assign(1, res);
	return all;
}

/** The verdict of a run that ran: the worst rank status; an error names the first rank with it, wrong data the first wrong word. */
Verdict judge(const std::vector<RankResult>& all, const IpcOptions& opts, bool device) {
	int worst = kOk;
	long long wrong = 0, words = 0;
	for (const auto& r : all) {
		if (r.status > worst) worst = r.status;
		wrong += r.wrongWords;
		words += r.checkedWords;
	}
	Verdict v;
	if (worst == kMpiError || worst == kSetupError) {
		const RankResult* first = nullptr;
		for (const auto& r : all)
			if (r.status == worst) { first = &r; break; }
		v.outcome = statusName(worst);
		v.detail = "rank " + std::to_string(first->rank) + " (" + first->role + ", " + first->buffer + "): " + first->call + ": " + first->error;
	} else if (worst == kWrongData) {
		v.outcome = "wrong_data";
		v.detail = std::to_string(wrong) + " of " + std::to_string(words) + " 32-bit words wrong in the owners' memory";
		for (const auto& r : all)
			if (r.wrongWords > 0) {
				char buf[160];
				std::snprintf(buf, sizeof buf, " (rank %d: first wrong word %lld = 0x%08x, expected 0x%08x%s)", r.rank,
				              r.firstWrongIndex, r.firstWrongValue, r.firstWrongExpected,
				              r.firstWrongValue == kPoison ? ", still the poison value: nothing arrived" : "");
				v.detail += buf;
				break;
			}
	} else {
		v.outcome = "correct";
		v.detail = "every one of " + std::to_string(words) + " 32-bit words arrived intact (" + describeVariant(opts.variant, device) + ")";
	}
	return v;
}

/** The gpumpi.repro.ipc/1 document (docs/repro-schema.md); `ranks` empty: the "ranks" array stays empty. */
std::string document(const IpcOptions& opts, const ReproStart& start, const std::vector<std::string>& hosts, const Verdict& v,
                     const std::vector<RankResult>& ranks) {
	const bool device = start.device;
	const int size = start.size;
	JsonWriter w;
	w.beginObject();
	w.key("schema").value("gpumpi.repro.ipc/1");
	w.key("variant").value(opts.variant);
	w.key("inject").value(opts.inject);
	w.key("description").value(describeVariant(opts.variant, device));
	w.key("memory").value(device ? "device" : "host");
	w.key("requested_memory").value(opts.memory);
	if (!device) w.key("gpu_unavailable_reason").value(start.gpuReason);
	else w.key("gpu_unavailable_reason").null();
	w.key("size_bytes").value(opts.sizeBytes);
	w.key("np").value(size);
	w.key("mpi");
	writeMpiJson(w);
	w.key("topology").beginObject();
	w.key("hosts").beginArray();
	for (const std::string& h : hosts) w.value(h);
	w.endArray();
	bool placed = size == 4 && hosts[0] == hosts[1] && hosts[2] == hosts[3];
	w.key("imports_intra_node").value(placed);
	w.key("sends_inter_node").value(size == 4 && hosts[0] != hosts[3] && hosts[2] != hosts[1]);
	w.endObject();
	w.key("outcome").value(v.outcome);
	w.key("detail").value(v.detail);
	w.key("ranks").beginArray();
	for (const auto& r : ranks) writeRank(w, r);
	w.endArray();
	w.endObject();
	return w.str();
}

}  // namespace

bool isIpcVariant(const std::string& v) {
	return v == "direct" || v == "bounce" || v == "host" || v == "send-from-import" || v == "pool" || v == "vmm" || v == "crash-test";
}

int runIpc(const IpcOptions& opts) {
	ReproStart start;
	if (!startReproMpi(opts.memory, "repro ipc", start)) return 1;
	const std::vector<std::string> hosts = allHostNames(start.size);
	Verdict verdict = checkPlacement(start.size, hosts);
	const bool runIt = verdict.outcome.empty();
	const RankResult res = runRank(opts, start, runIt);
	int rc = MPI_SUCCESS;
	const std::vector<RankResult> all = gatherResults(res, start.rank, start.size, &rc);
	if (start.rank == 0) {
		if (verdict.outcome.empty() && rc != MPI_SUCCESS) verdict = {"mpi_error", "MPI_Gather of the rank results failed: " + mpiErrorText(rc)};
		if (verdict.outcome.empty()) verdict = judge(all, opts, start.device);
		const std::string json = document(opts, start, hosts, verdict, runIt || rc == MPI_SUCCESS ? all : std::vector<RankResult>());
		if (opts.json) {
			printJsonDocument(json);
		} else {
			std::printf("repro ipc, variant %s, %s, %s memory: %s\n  %s\n", opts.variant.c_str(), formatSize(opts.sizeBytes).c_str(),
			            start.device ? "device" : "host", verdict.outcome.c_str(), verdict.detail.c_str());
			if (!start.device) std::printf("  (no GPU verdict: %s)\n", start.gpuReason.c_str());
		}
	}
	MPI_Finalize();
	releaseCuda(start.cuda);
	return 0;
}

}  // namespace gpumpi::repro
