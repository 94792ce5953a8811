// `gpumpi map`: command-line front of the transport map (engine/map.hh). Arguments are validated here, before
// MPI_Init, so a usage error never starts MPI. JSON output format: docs/map-schema.md.
#include <cstdio>
#include <string>
#include <vector>

#include "args.hh"
#include "command.hh"
#include "map.hh"
#include "mapSchedule.hh"

namespace {

using namespace gpumpi::cli;

const char* kUsage =
    "Usage: gpumpi map [--pairs all|sampled] [--max-ranks N] [--schedule auto|sequential|rounds] [--pair-timeout S]\n"
    "                  [--large 64M] [--small 8] [--iters N] [--memory device|host] [--json [--stream [--final-without-pairs]]]\n"
    "                  (run under mpirun, any number of ranks)\n"
    "\n"
    "Per rank: host, GPU (UUID, PCI bus id, NUMA node), CPU binding, NICs. Per pair of ranks: ping-pong bandwidth at\n"
    "--large and latency at --small, every message's data checked, and the path class (same_gpu, p2p, gpudirect_rdma,\n"
    "host_staging, not_cuda_aware, host_memory) with its evidence.\n"
    "All pairs up to --max-ranks (default 16) ranks; beyond that, or with --pairs sampled: every pair within a host\n"
    "plus one pair per pair of hosts. --schedule sequential measures one pair at a time (the others wait at a barrier);\n"
    "rounds measures rounds of pairs that share no rank at the same time (a round-robin tournament: O(hosts) rounds);\n"
    "auto (default) is sequential for all pairs and rounds for a sampled map. Each pair must finish within\n"
    "--pair-timeout seconds (default 60) or it is a timeout, and the run goes on.\n"
    "Defaults: --large 64M --small 8 --iters 5 --memory device.\n"
    "With --json the document is printed framed (@@GPUMPI-JSON@@ lines, docs/repro-schema.md); --stream also prints\n"
    "the plan (gpumpi.map-plan/1) first and a record per round (gpumpi.map-round/1) as the rounds end;\n"
    "--final-without-pairs: the document then has \"pairs_streamed\": true and no pairs (every pair's last outcome\n"
    "is in the round records: a 16 384-rank document would repeat ~1 GB).\n"
    "Exit status 4: the document was printed but a rank went silent or stuck, and the job was ended with MPI_Abort.\n"
    "--plan a,a,b,b prints the pairs and rounds that would be measured for these hosts of ranks 0..N-1 and exits\n"
    "without MPI (put --pairs / --max-ranks / --schedule before it).\n";

int usageError(const std::string& msg) { return gpumpi::cli::usageError("map", msg, kUsage); }

int mapMain(const std::vector<std::string>& args) {
	gpumpi::map::MapOptions o;
	for (size_t i = 0; i < args.size(); i++) {
		const std::string& a = args[i];
		const bool hasValue = i + 1 < args.size();
		const std::string v = hasValue ? args[i + 1] : std::string();
		unsigned long long s = 0;
		if (a == "--json") { o.json = true; continue; }
		if (a == "--stream") { o.stream = true; continue; }
		if (a == "--final-without-pairs") { o.finalWithoutPairs = true; continue; }
		if (a == "--plan") {
			// Print the pairs that would be measured for a comma-separated host per rank, then exit (no MPI).
			if (i + 1 >= args.size()) return usageError("--plan needs a host per rank, e.g. a,a,b,b");
			const std::vector<std::string> hosts = split(args[i + 1]);
			if (hosts.size() < 2 || hosts.size() > 65536) return usageError("--plan needs 2..65536 hosts");
			const bool sampled = o.sampled || static_cast<int>(hosts.size()) > o.maxRanks;
			const gpumpi::map::Schedule sch = gpumpi::map::buildSchedule(hosts, sampled, gpumpi::map::roundsSchedule(o, sampled));
			// One write per line of output: a 2 048-host plan has two million pairs.
			std::string out = std::string("{\"sampled\":") + (sampled ? "true" : "false") + ",\"schedule\":\"" + (sch.rounds ? "rounds" : "sequential") + "\",\"pairs\":[";
			for (size_t k = 0; k < sch.pairs.size(); k++) {
				out += (k ? ",[" : "[") + std::to_string(sch.pairs[k].first) + "," + std::to_string(sch.pairs[k].second) + "]";
			}
			out += "],\"rounds\":[";
			for (size_t r = 0; r < sch.roundPairs.size(); r++) {
				out += r ? ",[" : "[";
				for (size_t k = 0; k < sch.roundPairs[r].size(); k++) out += (k ? "," : "") + std::to_string(sch.roundPairs[r][k]);
				out += "]";
			}
			out += "]}\n";
			std::fwrite(out.data(), 1, out.size(), stdout);
			return 0;
		}
		if (a == "--help" || a == "-h") { std::fputs(kUsage, stdout); return 0; }
		if (a != "--pairs" && a != "--max-ranks" && a != "--large" && a != "--small" && a != "--iters" && a != "--memory" &&
		    a != "--schedule" && a != "--pair-timeout")
			return usageError("unknown option '" + a + "'");
		if (!hasValue) return usageError(a + " needs a value");
		i++;
		if (a == "--pairs") {
			if (v != "all" && v != "sampled") return usageError("--pairs needs all or sampled");
			o.sampled = v == "sampled";
		} else if (a == "--max-ranks") {
			if (!parseInt(v, 2, 1 << 20, o.maxRanks)) return usageError("--max-ranks needs 2..1048576");
		} else if (a == "--large") {
			if (!parseSize(v, s) || s == 0 || s > (1ull << 30)) return usageError("--large needs 1..1G bytes (e.g. 64M)");
			o.largeBytes = s;
		} else if (a == "--small") {
			if (!parseSize(v, s) || s == 0 || s > (1ull << 20)) return usageError("--small needs 1..1M bytes (e.g. 8)");
			o.smallBytes = s;
		} else if (a == "--schedule") {
			if (v != "auto" && v != "sequential" && v != "rounds") return usageError("--schedule needs auto, sequential or rounds");
			o.schedule = v;
		} else if (a == "--pair-timeout") {
			int t = 0;
			if (!parseInt(v, 1, 86400, t)) return usageError("--pair-timeout needs 1..86400 seconds");
			o.pairTimeoutS = t;
		} else if (a == "--iters") {
			if (!parseInt(v, 1, 1000, o.iters)) return usageError("--iters needs 1..1000");
		} else {
			if (v != "device" && v != "host") return usageError("--memory needs device or host");
			o.memory = v;
		}
	}
	if (o.stream && !o.json) return usageError("--stream needs --json");
	if (o.finalWithoutPairs && !o.stream) return usageError("--final-without-pairs needs --stream (the pairs come in the round records)");
	return gpumpi::map::runMap(o);
}

const gpumpi::cli::Registration reg{"map", "transport map: where ranks run and how each pair of ranks moves GPU data", mapMain};

}  // namespace
