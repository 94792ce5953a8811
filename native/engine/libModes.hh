// libgpumpi transfer modes shared by `gpumpi bench` (cli/benchCmd.cc) and `gpumpi repro fallback`
// (engine/reproFallback.cc), so both measure the library the same way: the per-call flags of a mode, why a mode
// does not apply to a peer, one verified-by-the-caller transfer rank 0 -> rank 1, and (for the reproducer) a
// session that starts libgpumpi once and registers the user's persistent host buffer as its staging memory.
// Mode names: bench uses auto|direct|staged|shm; the reproducer the stable names lib-auto|lib-staged|lib-shm
// (docs/report-schema.md). Thread: main thread only. Never throws.
#pragma once
#include <mpi.h>

#include <functional>
#include <string>

#include "gpumpi.h"

namespace gpumpi {

/** True for the reproducer's library modes (lib-auto, lib-staged, lib-shm). */
bool isLibMode(const std::string& mode);
/** Per-call flags of a library mode (either spelling); host buffers get GPUMPI_STAGE_HOST for staged. */
unsigned libCallFlags(const std::string& mode, bool deviceBuffers);
/** Why a library mode does not apply to this peer ("" when it does). */
std::string libSkipReason(const std::string& mode, const gpumpi_path_info& info, bool deviceBuffers);
/** One transfer of bytes rank 0 -> rank 1 (tag 5) through ctx; tick runs while it is in flight (may be empty). */
gpumpi_status libTransfer(gpumpi_ctx* ctx, int rank, void* buf, size_t bytes, unsigned flags, gpumpi_protocol* proto,
                          const std::function<void()>& tick);

/** libgpumpi started once for the reproducer: the user's persistent staging buffer registered, segments set up. */
class LibSession {
public:
	LibSession() = default;
	LibSession(const LibSession&) = delete;
	LibSession& operator=(const LibSession&) = delete;
	~LibSession() { close(); }
	/** Collective over comm. chunk x nbuf bytes of malloc'd host memory become the staging buffer (pinned by the
	 *  library); cudaDevice: the ordinal the caller already uses (-1 none). False with error() set. */
	bool open(MPI_Comm comm, unsigned long long chunk, int nbuf, int cudaDevice);
	/** One timed-by-the-caller transfer in mode; proto gets the protocol used. */
	int transfer(const std::string& mode, void* buf, unsigned long long bytes, bool deviceBuffers, gpumpi_protocol* proto);
	const gpumpi_path_info& path() const { return mInfo; }
	/** Host memory the library holds (the registered buffer, shared segments). */
	long long pinnedBytes() const { return mCtx ? static_cast<long long>(gpumpi_staging_bytes(mCtx)) : 0; }
	const std::string& error() const { return mError; }
	void close();

private:
	gpumpi_ctx* mCtx = nullptr;
	void* mStaging = nullptr;
	gpumpi_path_info mInfo{};
	std::string mError;
};

}  // namespace gpumpi
