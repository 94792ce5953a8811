// `gpumpi inspect`: every rank describes its MPI, CUDA and launcher environment; rank 0 prints one JSON document
// (schema "gpumpi.inspect/1", extension/shared/engineSchema.ts, docs/engine-schema.md).
// Order inside one rank: local rank from the launcher's environment -> CUDA context current (inspectCuda.hh) ->
// MPI_Init -> MPI queries -> gather to rank 0 -> MPI_Finalize -> release the CUDA context.
// Thread: main thread only; runInspect calls MPI_Init/MPI_Finalize, so call it at most once per process.
#pragma once
#include <map>
#include <string>

namespace gpumpi::engine {

/** Local rank from the launcher (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, PMI_LOCAL_RANK, SLURM_LOCALID,
 *  MV2_COMM_WORLD_LOCAL_RANK, first valid one wins); -1 when none is set or parseable. Safe before MPI_Init. */
int localRankFromEnv();

/** The calling process's environment filtered to the launcher/MPI/UCX/CUDA prefixes the schema lists. */
std::map<std::string, std::string> filteredEnvironment();

/** The prefixes filteredEnvironment keeps (the schema's list, in one place). */
const char* const* inspectEnvPrefixes();

/** Result of runInspect: `document` is set on rank 0 only; `error` is set when something failed. */
struct InspectOutcome {
	int rank = -1;
	std::string document;
	std::string error;
	bool ok = false;
};

/** Run the whole inspection (MPI_Init .. MPI_Finalize). Never throws. */
InspectOutcome runInspect();

}  // namespace gpumpi::engine
