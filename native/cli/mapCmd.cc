// `gpumpi map`: command-line front of the transport map (engine/map.hh). Arguments are validated here, before
// MPI_Init, so a usage error never starts MPI. JSON output format: docs/map-schema.md.
#include <cstdio>
#include <string>
#include <vector>

#include "args.hh"
#include "command.hh"
#include "map.hh"

namespace {

using namespace gpumpi::cli;

const char* kUsage =
    "Usage: gpumpi map [--pairs all|sampled] [--max-ranks N] [--large 64M] [--small 8] [--iters N]\n"
    "                  [--memory device|host] [--json]        (run under mpirun, any number of ranks)\n"
    "\n"
    "Per rank: host, GPU (UUID, PCI bus id, NUMA node), CPU binding, NICs. Per pair of ranks: ping-pong bandwidth at\n"
    "--large and latency at --small, measured one pair at a time (the others wait at a barrier), and the path class\n"
    "(same_gpu, p2p, gpudirect_rdma, host_staging, not_cuda_aware, host_memory) with its evidence.\n"
    "All pairs up to --max-ranks (default 16) ranks; beyond that, or with --pairs sampled: every pair within a host\n"
    "plus one pair per pair of hosts. Defaults: --large 64M --small 8 --iters 5 --memory device.\n"
    "With --json the document is printed between the lines @@GPUMPI-JSON-BEGIN@@ and @@GPUMPI-JSON-END@@.\n"
    "--plan a,a,b,b prints the pairs that would be measured for these hosts of ranks 0..N-1 and exits without MPI\n"
    "(put --pairs / --max-ranks before it).\n";

int usageError(const std::string& msg) { return gpumpi::cli::usageError("map", msg, kUsage); }

int mapMain(const std::vector<std::string>& args) {
	gpumpi::map::MapOptions o;
	for (size_t i = 0; i < args.size(); i++) {
		const std::string& a = args[i];
		const bool hasValue = i + 1 < args.size();
		const std::string v = hasValue ? args[i + 1] : std::string();
		unsigned long long s = 0;
		if (a == "--json") { o.json = true; continue; }
		if (a == "--plan") {
			// Print the pairs that would be measured for a comma-separated host per rank, then exit (no MPI).
			if (i + 1 >= args.size()) return usageError("--plan needs a host per rank, e.g. a,a,b,b");
			const std::vector<std::string> hosts = split(args[i + 1]);
			if (hosts.size() < 2 || hosts.size() > 65536) return usageError("--plan needs 2..65536 hosts");
			const bool sampled = o.sampled || static_cast<int>(hosts.size()) > o.maxRanks;
			std::printf("{\"sampled\":%s,\"pairs\":[", sampled ? "true" : "false");
			bool first = true;
			for (const auto& [x, y] : gpumpi::map::selectPairs(hosts, sampled)) {
				std::printf("%s[%d,%d]", first ? "" : ",", x, y);
				first = false;
			}
			std::printf("]}\n");
			return 0;
		}
		if (a == "--help" || a == "-h") { std::fputs(kUsage, stdout); return 0; }
		if (a != "--pairs" && a != "--max-ranks" && a != "--large" && a != "--small" && a != "--iters" && a != "--memory")
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
		} else if (a == "--iters") {
			if (!parseInt(v, 1, 1000, o.iters)) return usageError("--iters needs 1..1000");
		} else {
			if (v != "device" && v != "host") return usageError("--memory needs device or host");
			o.memory = v;
		}
	}
	return gpumpi::map::runMap(o);
}

const gpumpi::cli::Registration reg{"map", "transport map: where ranks run and how each pair of ranks moves GPU data", mapMain};

}  // namespace
