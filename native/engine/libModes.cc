#include "libModes.hh"

#include <cstdlib>

namespace gpumpi {

bool isLibMode(const std::string& mode) { return mode == "lib-auto" || mode == "lib-staged" || mode == "lib-shm"; }

unsigned libCallFlags(const std::string& mode, bool deviceBuffers) {
	const std::string m = mode.rfind("lib-", 0) == 0 ? mode.substr(4) : mode;
	if (m == "direct") return GPUMPI_FORCE_DIRECT;
	if (m == "staged") return GPUMPI_FORCE_STAGED | (deviceBuffers ? 0u : static_cast<unsigned>(GPUMPI_STAGE_HOST));
	if (m == "shm") return GPUMPI_FORCE_SHM;
	return 0;
}

std::string libSkipReason(const std::string& mode, const gpumpi_path_info& info, bool deviceBuffers) {
	const std::string m = mode.rfind("lib-", 0) == 0 ? mode.substr(4) : mode;
	if (m == "direct" && deviceBuffers && info.mpi_cuda_aware != 1) return "MPI is not CUDA-aware";
	if (m == "shm" && !info.same_host) return "peer is on another host (the shared segment needs one host)";
	return "";
}

gpumpi_status libTransfer(gpumpi_ctx* ctx, int rank, void* buf, size_t bytes, unsigned flags, gpumpi_protocol* proto,
                          const std::function<void()>& tick) {
	gpumpi_request* r = nullptr;
	gpumpi_status st = rank == 0 ? gpumpi_isend_ex(ctx, buf, bytes, 1, 5, flags, &r) : gpumpi_irecv_ex(ctx, buf, bytes, 0, 5, flags, &r);
	if (st != GPUMPI_SUCCESS) return st;
	*proto = gpumpi_request_protocol(r);
	int done = 0;
	while (!done && st == GPUMPI_SUCCESS) {
		st = gpumpi_test(ctx, &r, &done);
		if (tick) tick();
	}
	return st;
}

bool LibSession::open(MPI_Comm comm, unsigned long long chunk, int nbuf, int cudaDevice) {
	gpumpi_config cfg;
	gpumpi_config_default(&cfg);
	cfg.chunk_bytes = chunk;
	cfg.num_buffers = nbuf;
	cfg.device = cudaDevice;
	cfg.flags = GPUMPI_FORCE_SHM;  // segments for lib-shm even where auto would not pick it (both ranks set it)
	int rank = 0;
	MPI_Comm_rank(comm, &rank);
	gpumpi_status st = gpumpi_init(comm, &cfg, &mCtx);
	if (st != GPUMPI_SUCCESS) {
		mError = std::string("gpumpi_init: ") + gpumpi_strerror(st) + ": " + gpumpi_last_error(nullptr);
		mCtx = nullptr;
		return false;
	}
	gpumpi_path(mCtx, 1 - rank, &mInfo);
	const size_t bytes = static_cast<size_t>(chunk) * static_cast<size_t>(nbuf);
	mStaging = std::malloc(bytes);  // the user's persistent buffer; the library pins it once
	if (!mStaging) { mError = "malloc of the staging buffer failed"; return false; }
	st = gpumpi_register_staging(mCtx, mStaging, bytes, GPUMPI_STAGING_PIN);
	if (st != GPUMPI_SUCCESS) { mError = std::string("gpumpi_register_staging: ") + gpumpi_last_error(mCtx); return false; }
	return true;
}

int LibSession::transfer(const std::string& mode, void* buf, unsigned long long bytes, bool deviceBuffers, gpumpi_protocol* proto) {
	gpumpi_status st = libTransfer(mCtx, mInfo.peer == 1 ? 0 : 1, buf, bytes, libCallFlags(mode, deviceBuffers), proto, {});
	if (st != GPUMPI_SUCCESS) mError = std::string(gpumpi_strerror(st)) + ": " + gpumpi_last_error(mCtx);
	return st;
}

void LibSession::close() {
	if (mCtx) {
		if (mStaging) gpumpi_unregister_staging(mCtx, mStaging);
		gpumpi_finalize(&mCtx);
		mCtx = nullptr;
	}
	std::free(mStaging);
	mStaging = nullptr;
}

}  // namespace gpumpi
