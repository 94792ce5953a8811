// `gpumpi inspect`: argv handling only; the work is in engine/inspect.cc.
#include <cstdio>
#include <string>
#include <vector>

#include "command.hh"
#include "docFrame.hh"
#include "inspect.hh"

namespace {

void usage(FILE* out) {
	std::fprintf(out,
	             "Usage: mpirun [mpirun options] gpumpi inspect\n"
	             "       gpumpi inspect            (singleton: one rank, no launcher)\n\n"
	             "Every rank makes a CUDA context current on GPU (local rank %% device count), calls MPI_Init, and\n"
	             "reports its MPI library, CUDA awareness, CUDA devices and launcher environment. Rank 0 prints one\n"
	             "JSON document (schema gpumpi.inspect/1, see docs/engine-schema.md) on stdout.\n\n"
	             "Options:\n  --framed     print the document framed in checked chunks (how gpumpi-doctor reads it; see\n"
	             "               native/common/docFrame.hh), so other ranks' output cannot damage it\n"
	             "  -h, --help   this text\n\nExit status: 0 success, 1 MPI failure, 2 usage error.\n");
}

int inspectMain(const std::vector<std::string>& args) {
	bool framed = false;
	for (const auto& a : args) {
		if (a == "--framed") {
			framed = true;
			continue;
		}
		if (a == "--help" || a == "-h") {
			usage(stdout);
			return 0;
		}
		std::fprintf(stderr, "gpumpi inspect: unknown option '%s'\n\n", a.c_str());
		usage(stderr);
		return 2;
	}
	gpumpi::engine::InspectOutcome r = gpumpi::engine::runInspect();
	if (!r.error.empty()) std::fprintf(stderr, "gpumpi inspect (rank %d): %s\n", r.rank, r.error.c_str());
	if (!r.ok) return 1;
	if (r.rank == 0 && framed) {
		std::string error;
		if (!gpumpi::writeFramedDocument(r.document, error)) {
			std::fprintf(stderr, "gpumpi inspect: writing stdout: %s\n", error.c_str());
			return 1;
		}
	} else if (r.rank == 0) {
		r.document += '\n';
		if (std::fwrite(r.document.data(), 1, r.document.size(), stdout) != r.document.size() || std::fflush(stdout) != 0) {
			std::perror("gpumpi inspect: writing stdout");
			return 1;
		}
	}
	return 0;
}

const gpumpi::cli::Registration reg{"inspect", "describe each rank's MPI, CUDA and environment as JSON", inspectMain};

}  // namespace
