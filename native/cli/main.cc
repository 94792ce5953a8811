// gpumpi: the engine CLI. Dispatches to the registered subcommands (see command.hh).
#include <unistd.h>
#include <csignal>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "command.hh"
#include "version.hh"

namespace gpumpi::cli {
std::vector<Command>& commands() {
	static std::vector<Command> all;
	return all;
}
}  // namespace gpumpi::cli

static void usage(FILE* out) {
	std::fprintf(out, "gpumpi %s — what your MPI / UCX / CUDA stack does with GPU buffers\n\nUsage: gpumpi <command> [options]\n\nCommands:\n", GPUMPI_VERSION);
	for (const auto& c : gpumpi::cli::commands()) std::fprintf(out, "  %-12s %s\n", c.name, c.help);
	std::fprintf(out, "\nRun 'gpumpi <command> --help' for a command's options.\n");
}

/**
 * Test hook (the engine tier's framing tests; never set by the product): GPUMPI_TEST_NOISE=1 makes every rank but 0
 * write 3000-byte lines of hostile bytes (control characters, NUL, quotes, braces, a fake begin marker) to stdout
 * every 5 ms until it exits, as UCX or PMIx logs of other ranks would while rank 0 prints its document.
 */
static void startTestNoise() {
	const char* on = std::getenv("GPUMPI_TEST_NOISE");
	if (!on || std::strcmp(on, "1") != 0) return;
	const char* rank = nullptr;
	for (const char* k : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
		if ((rank = std::getenv(k)) != nullptr) break;
	}
	if (!rank || std::strcmp(rank, "0") == 0) return;
	std::string line = std::string("noise from rank ") + rank + ": {\"schema\": \x01\x1b[31m\t\"@@GPUMPI-JSON-BEGIN@@ ";
	line += std::string(1, '\0');
	while (line.size() < 2999) line += "\"}{\\ \x7f\x02";
	line.resize(2999);
	line += '\n';
	std::thread([line] {
		for (;;) {
			if (::write(1, line.data(), line.size()) < 0) return;
			std::this_thread::sleep_for(std::chrono::milliseconds(5));
		}
	}).detach();
}

int main(int argc, char** argv) {
	// Line-buffer stdout: UCX writes its log (UCX_LOG_LEVEL=info lanes, the runners' evidence) through this same
	// FILE*, and with a pipe it would be block-buffered and lost when a rank is killed (e.g. MPICH hanging in
	// MPI_Finalize over tcp, seen 2026-12-02: the map was complete but no ep_cfg line had reached the runner).
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	// A reader that went away (stdout a closed pipe) is a write error to report on stderr with an exit status, not a
	// silent death by SIGPIPE (exit 141 with no word, seen in test/engine/faultsOutput.test.ts before this line).
	std::signal(SIGPIPE, SIG_IGN);
	startTestNoise();
	if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!std::strcmp(argv[1], "--version")) {
		std::printf("%s\n", GPUMPI_VERSION);
		return 0;
	}
	for (const auto& c : gpumpi::cli::commands()) {
		if (!std::strcmp(argv[1], c.name)) return c.fn(std::vector<std::string>(argv + 2, argv + argc));
	}
	std::fprintf(stderr, "gpumpi: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
