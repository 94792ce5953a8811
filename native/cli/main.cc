// gpumpi: the engine CLI. Dispatches to the registered subcommands (see command.hh).
#include <cstdio>
#include <cstring>
#include <string>
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

int main(int argc, char** argv) {
	// Line-buffer stdout: UCX writes its log (UCX_LOG_LEVEL=info lanes, the runners' evidence) through this same
	// FILE*, and with a pipe it would be block-buffered and lost when a rank is killed (e.g. MPICH hanging in
	// MPI_Finalize over tcp, seen 2026-12-02: the map was complete but no ep_cfg line had reached the runner).
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
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
