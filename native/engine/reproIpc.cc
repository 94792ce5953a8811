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

}  // namespace

bool isIpcVariant(const std::string& v) {
	return v == "direct" || v == "bounce" || v == "host" || v == "send-from-import" || v == "pool" || v == "vmm" || v == "crash-test";
}

int runIpc(const IpcOptions& opts) {
	ReproStart start;
	if (!startReproMpi(opts.memory, "repro ipc", start)) return 1;
	CudaSetup& cuda = start.cuda;
	std::string& gpuReason = start.gpuReason;
	const int rank = start.rank, size = start.size;
	bool device = start.device;

	std::vector<char> hosts(static_cast<size_t>(size > 0 ? size : 1) * 256, 0);
	char myHost[256] = {0};
	copyText(myHost, sizeof myHost, hostName());
	MPI_Allgather(myHost, 256, MPI_CHAR, hosts.data(), 256, MPI_CHAR, MPI_COMM_WORLD);
	auto hostOf = [&](int r) { return std::string(&hosts[static_cast<size_t>(r) * 256], strnlen(&hosts[static_cast<size_t>(r) * 256], 256)); };

	std::string outcome, detail;
	RankResult res;
	bool runIt = true;
	if (size != 4) {
		outcome = "usage_error";
		detail = "repro ipc needs exactly 4 ranks (mpirun -np 4), got " + std::to_string(size);
		runIt = false;
	} else if (hostOf(0) != hostOf(1) || hostOf(2) != hostOf(3)) {
		outcome = "placement_error";
		detail = "IPC needs each importer on its owner's node, but rank 0 is on " + hostOf(0) + ", rank 1 on " + hostOf(1) +
		         ", rank 2 on " + hostOf(2) + ", rank 3 on " + hostOf(3) +
		         "; place ranks 0,1 on one node and 2,3 on the other (Open MPI: --map-by ppr:2:node or --host a:2,b:2)";
		runIt = false;
	}
	IpcRun run(opts, cuda, device);
	if (runIt) run.run(rank, size);
	res = run.result();
	res.rank = rank;
	res.localRank = localRankFromEnv();
	res.pid = static_cast<int>(getpid());
	res.device = device ? cuda.device : -1;
	copyText(res.host, sizeof res.host, myHost);

	std::vector<RankResult> all(rank == 0 ? static_cast<size_t>(size) : 1);
	int rc = MPI_Gather(&res, sizeof res, MPI_BYTE, all.data(), sizeof res, MPI_BYTE, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		if (rc != MPI_SUCCESS) {
			all.assign(1, res);
			if (outcome.empty()) {
				outcome = "mpi_error";
				detail = "MPI_Gather of the rank results failed: " + mpiErrorText(rc);
			}
		}
		if (outcome.empty()) {
			int worst = kOk;
			const RankResult* first = nullptr;
			long long wrong = 0, words = 0;
			for (const auto& r : all) {
				if (r.status > worst) worst = r.status;
				if (!first && (r.status == kMpiError || r.status == kSetupError)) first = &r;
				wrong += r.wrongWords;
				words += r.checkedWords;
			}
			if (worst == kMpiError || worst == kSetupError) {
				for (const auto& r : all)
					if (r.status == worst) { first = &r; break; }
				outcome = statusName(worst);
				detail = "rank " + std::to_string(first->rank) + " (" + first->role + ", " + first->buffer + "): " + first->call + ": " + first->error;
			} else if (worst == kWrongData) {
				outcome = "wrong_data";
				detail = std::to_string(wrong) + " of " + std::to_string(words) + " 32-bit words wrong in the owners' memory";
				for (const auto& r : all)
					if (r.wrongWords > 0) {
						char buf[160];
						std::snprintf(buf, sizeof buf, " (rank %d: first wrong word %lld = 0x%08x, expected 0x%08x%s)", r.rank,
						              r.firstWrongIndex, r.firstWrongValue, r.firstWrongExpected,
						              r.firstWrongValue == kPoison ? ", still the poison value: nothing arrived" : "");
						detail += buf;
						break;
					}
			} else {
				outcome = "correct";
				detail = "every one of " + std::to_string(words) + " 32-bit words arrived intact (" + describeVariant(opts.variant, device) + ")";
			}
		}
		JsonWriter w;
		w.beginObject();
		w.key("schema").value("gpumpi.repro.ipc/1");
		w.key("variant").value(opts.variant);
		w.key("inject").value(opts.inject);
		w.key("description").value(describeVariant(opts.variant, device));
		w.key("memory").value(device ? "device" : "host");
		w.key("requested_memory").value(opts.memory);
		if (!device) w.key("gpu_unavailable_reason").value(gpuReason);
		else w.key("gpu_unavailable_reason").null();
		w.key("size_bytes").value(opts.sizeBytes);
		w.key("np").value(size);
		w.key("mpi");
		writeMpiJson(w);
		w.key("topology").beginObject();
		w.key("hosts").beginArray();
		for (int r = 0; r < size; r++) w.value(hostOf(r));
		w.endArray();
		bool placed = size == 4 && hostOf(0) == hostOf(1) && hostOf(2) == hostOf(3);
		w.key("imports_intra_node").value(placed);
		w.key("sends_inter_node").value(size == 4 && hostOf(0) != hostOf(3) && hostOf(2) != hostOf(1));
		w.endObject();
		w.key("outcome").value(outcome);
		w.key("detail").value(detail);
		w.key("ranks").beginArray();
		if (runIt || rc == MPI_SUCCESS)
			for (const auto& r : all) writeRank(w, r);
		w.endArray();
		w.endObject();
		if (opts.json) {
			printJsonDocument(w.str());
		} else {
			std::printf("repro ipc, variant %s, %s, %s memory: %s\n  %s\n", opts.variant.c_str(), formatSize(opts.sizeBytes).c_str(),
			            device ? "device" : "host", outcome.c_str(), detail.c_str());
			if (!device) std::printf("  (no GPU verdict: %s)\n", gpuReason.c_str());
		}
	}
	MPI_Finalize();
	releaseCuda(cuda);
	return 0;
}

}  // namespace gpumpi::repro
