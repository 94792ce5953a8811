// `gpumpi repro ipc|fallback`: command-line front of the two reproducers (engine/reproIpc, engine/reproFallback).
// Arguments are validated here, before MPI_Init, so a usage error never starts MPI. JSON output format:
// docs/repro-schema.md.
#include <cstdio>
#include <string>
#include <vector>

#include "args.hh"
#include "command.hh"
#include "libModes.hh"
#include "reproFallback.hh"
#include "reproIpc.hh"

namespace {

using namespace gpumpi::cli;

const char* kUsage =
    "Usage: gpumpi repro ipc [--variant direct|bounce|host|send-from-import|pool|vmm] [--size BYTES|64M]\n"
    "                        [--memory device|host] [--json]            (run under mpirun -np 4)\n"
    "       gpumpi repro fallback [--sizes 1M..1G|1M,64M] [--modes mpi,staged,host] [--chunk 16M] [--nbuf 4]\n"
    "                        [--memory device|host] [--iters 3] [--json] (run under mpirun -np 2)\n"
    "                        (--modes also takes lib-auto, lib-staged, lib-shm: the same transfers through libgpumpi)\n"
    "\n"
    "ipc: the IPC-pointer scenario (ranks 0,2 export GPU memory, ranks 1,3 import it and receive into it).\n"
    "fallback: device-buffer bandwidth and memory of MPI vs manual pinned staging vs host-to-host vs libgpumpi.\n"
    "With --json the document is printed between the lines @@GPUMPI-JSON-BEGIN@@ and @@GPUMPI-JSON-END@@.\n"
    "Test hooks: ipc --variant crash-test or --inject crash (rank 1 really segfaults), --inject hang (rank 1 sleeps),\n"
    "  --inject crash-fraction=F --inject-seed S --trial I (rank 1 segfaults or rank 3 aborts in a fraction F of the\n"
    "  trials, decided from S and I), --inject wrong-fraction=F (the same draw: rank 0 or 2 overwrites the received data\n"
    "  before verifying it, a deliberate wrong result).\n";

int usageError(const std::string& msg) { return gpumpi::cli::usageError("repro", msg, kUsage); }

int ipcCommand(const std::vector<std::string>& args) {
	gpumpi::repro::IpcOptions o;
	for (size_t i = 0; i < args.size(); i++) {
		const std::string& a = args[i];
		std::string v;
		if (a == "--json") o.json = true;
		else if (a == "--help" || a == "-h") { std::fputs(kUsage, stdout); return 0; }
		else if (a == "--variant") {
			if (!valueOf(args, i, v) || !gpumpi::repro::isIpcVariant(v)) return usageError("--variant needs direct, bounce, host, send-from-import, pool or vmm");
			o.variant = v;
		} else if (a == "--size") {
			unsigned long long s = 0;
			if (!valueOf(args, i, v) || !parseSize(v, s) || s == 0 || s % 4 || s > (1ull << 30))
				return usageError("--size needs a multiple of 4 bytes between 4 and 1G (e.g. 64M)");
			o.sizeBytes = s;
		} else if (a == "--memory") {
			if (!valueOf(args, i, v) || (v != "device" && v != "host")) return usageError("--memory needs device or host");
			o.memory = v;
		} else if (a == "--inject") {
			if (!valueOf(args, i, v)) return usageError("--inject needs crash, hang, crash-fraction=F or wrong-fraction=F");
			const bool crashF = v.rfind("crash-fraction=", 0) == 0, wrongF = v.rfind("wrong-fraction=", 0) == 0;
			if (crashF || wrongF) {
				char* end = nullptr;
				const std::string f = v.substr(15);
				double x = std::strtod(f.c_str(), &end);
				if (f.empty() || !end || *end || !(x >= 0 && x <= 1)) return usageError("--inject " + v.substr(0, 15) + "F needs 0 <= F <= 1");
				(crashF ? o.crashFraction : o.wrongFraction) = x;
			} else if (v != "crash" && v != "hang") {
				return usageError("--inject needs crash, hang, crash-fraction=F or wrong-fraction=F");
			}
			o.inject = v;
		} else if (a == "--inject-seed" || a == "--trial") {
			char* end = nullptr;
			if (!valueOf(args, i, v) || v.empty() || v[0] == '-') return usageError(a + " needs a whole number");
			unsigned long long n = std::strtoull(v.c_str(), &end, 10);
			if (!end || *end) return usageError(a + " needs a whole number");
			(a == "--trial" ? o.trial : o.injectSeed) = n;
		} else {
			return usageError("unknown option '" + a + "'");
		}
	}
	return gpumpi::repro::runIpc(o);
}

int fallbackCommand(const std::vector<std::string>& args) {
	gpumpi::repro::FallbackOptions o;
	std::string err;
	if (!parseSizeList("1M..1G", o.sizes, err)) return usageError(err);
	o.modes = {"mpi", "staged", "host"};
	for (size_t i = 0; i < args.size(); i++) {
		const std::string& a = args[i];
		std::string v;
		if (a == "--json") o.json = true;
		else if (a == "--help" || a == "-h") { std::fputs(kUsage, stdout); return 0; }
		else if (a == "--sizes") {
			if (!valueOf(args, i, v) || !parseSizeList(v, o.sizes, err)) return usageError(err.empty() ? "--sizes needs a value" : err);
		} else if (a == "--modes") {
			if (!valueOf(args, i, v)) return usageError("--modes needs a value");
			o.modes.clear();
			for (const auto& m : split(v)) {
				if (m != "mpi" && m != "staged" && m != "host" && !gpumpi::isLibMode(m))
					return usageError("unknown mode '" + m + "' (mpi, staged, host, lib-auto, lib-staged, lib-shm)");
				bool dup = false;
				for (const auto& x : o.modes) dup = dup || x == m;
				if (!dup) o.modes.push_back(m);
			}
		} else if (a == "--chunk") {
			unsigned long long s = 0;
			if (!valueOf(args, i, v) || !parseSize(v, s) || s < 4096 || s % 4 || s > gpumpi::repro::kMaxMessageBytes)
				return usageError("--chunk needs a multiple of 4 bytes between 4K and 1G");
			o.chunkBytes = s;
		} else if (a == "--nbuf") {
			if (!valueOf(args, i, v)) return usageError("--nbuf needs a value");
			if (!parseInt(v, 1, 64, o.nbuf)) return usageError("--nbuf needs 1..64");
		} else if (a == "--iters") {
			if (!valueOf(args, i, v)) return usageError("--iters needs a value");
			if (!parseInt(v, 1, 1000, o.iters)) return usageError("--iters needs 1..1000");
		} else if (a == "--memory") {
			if (!valueOf(args, i, v) || (v != "device" && v != "host")) return usageError("--memory needs device or host");
			o.memory = v;
		} else {
			return usageError("unknown option '" + a + "'");
		}
	}
	return gpumpi::repro::runFallback(o);
}

int reproMain(const std::vector<std::string>& args) {
	if (args.empty()) return usageError("which reproducer? (ipc or fallback)");
	std::vector<std::string> rest(args.begin() + 1, args.end());
	if (args[0] == "ipc") return ipcCommand(rest);
	if (args[0] == "fallback") return fallbackCommand(rest);
	if (args[0] == "--help" || args[0] == "-h") { std::fputs(kUsage, stdout); return 0; }
	return usageError("unknown reproducer '" + args[0] + "' (ipc or fallback)");
}

const gpumpi::cli::Registration reg{"repro", "reproduce the two user reports (ipc, fallback) on this stack", reproMain};

}  // namespace
