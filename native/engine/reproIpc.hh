// `gpumpi repro ipc`: the IPC-pointer scenario of shared/seeds (Open MPI users list, "GPU-aware MPI"): 4 ranks; ranks
// 0 and 2 allocate GPU memory and export it (cuIpcGetMemHandle), rank 1 imports rank 0's allocation and rank 3 imports
// rank 2's; rank 0 sends to rank 3 and rank 2 to rank 1, each receiver receiving INTO THE IMPORTED POINTER (or a
// variant). Verification is word by word in the owner's memory. One variant per process run: the runner isolates
// variants by starting one mpirun each (docs/repro-schema.md). The whole run (MPI_Init .. MPI_Finalize) lives here.
#pragma once
#include <string>

#include "reproOptions.hh"

namespace gpumpi::repro {

/** Variants the CLI accepts (crash-test is a test hook: direct + inject crash). */
bool isIpcVariant(const std::string& v);

/** Run one variant in this rank; returns the process exit code (0 even when the variant's outcome is bad). */
int runIpc(const IpcOptions& opts);

}  // namespace gpumpi::repro
