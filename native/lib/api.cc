// The C API of libgpumpi: context life cycle, errors, staging registration, requests, IPC helpers.
// Every entry point catches everything (no exception crosses the C boundary) and reports through gpumpi_status
// plus the context's last-error text.
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "internal.hh"

using namespace gpumpi;
using namespace gpumpi::lib;

namespace {
thread_local std::string gNoCtxError;  // detail for failures without a context (init)

Ctx* C(gpumpi_ctx* p) { return reinterpret_cast<Ctx*>(p); }

template <typename F>
gpumpi_status guard(Ctx* c, F&& f) {
	if (c) c->lastError.clear();
	try {
		return f();
	} catch (const std::bad_alloc&) {
		return c ? fail(c, GPUMPI_ERR_NOMEM, "out of memory") : GPUMPI_ERR_NOMEM;
	} catch (const std::exception& e) {
		return c ? fail(c, GPUMPI_ERR_INTERNAL, "internal error: %s", e.what()) : GPUMPI_ERR_INTERNAL;
	} catch (...) {
		return c ? fail(c, GPUMPI_ERR_INTERNAL, "internal error") : GPUMPI_ERR_INTERNAL;
	}
}

int localRankFromEnv() {
	for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID", "MV2_COMM_WORLD_LOCAL_RANK"}) {
		const char* s = std::getenv(v);
		if (s && *s) return std::atoi(s);
	}
	return 0;
}

/** CUDA for the context: the chosen device's primary context, made current; streams for the copy engine. */
void setupCuda(Ctx* c) {
	const CudaDriver& d = cudaDriver();
	if (!d.loaded) { c->noCudaWhy = "CUDA driver not loadable (" + d.error + ")"; return; }
	CUresult r = d.cuInit(0);
	if (r != CUDA_SUCCESS) { c->noCudaWhy = "cuInit failed: " + cudaErrorText(r); return; }
	int n = 0;
	r = d.cuDeviceGetCount(&n);
	if (r != CUDA_SUCCESS || n == 0) { c->noCudaWhy = r != CUDA_SUCCESS ? "cuDeviceGetCount failed: " + cudaErrorText(r) : "no CUDA device visible"; return; }
	int ord = c->cfg.device;
	CUcontext cur = nullptr;
	if (ord < 0 && d.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur) {
		CUdevice dv = 0;
		if (d.cuCtxGetDevice(&dv) == CUDA_SUCCESS) ord = dv;
	}
	if (ord < 0) ord = localRankFromEnv() % n;
	if (ord >= n) { c->noCudaWhy = "device " + std::to_string(ord) + " requested, " + std::to_string(n) + " visible"; return; }
	if ((r = d.cuDeviceGet(&c->dev, ord)) != CUDA_SUCCESS || (r = d.cuDevicePrimaryCtxRetain(&c->cuctx, c->dev)) != CUDA_SUCCESS) {
		c->noCudaWhy = "device " + std::to_string(ord) + ": " + cudaErrorText(r);
		return;
	}
	if ((r = d.cuCtxSetCurrent(c->cuctx)) != CUDA_SUCCESS || (r = d.cuStreamCreate(&c->sD2H, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS ||
	    (r = d.cuStreamCreate(&c->sH2D, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS || (r = d.cuStreamCreate(&c->sD2D, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
		c->noCudaWhy = "CUDA context/stream setup failed: " + cudaErrorText(r);
		d.cuDevicePrimaryCtxRelease(c->dev);
		c->cuctx = nullptr;
		return;
	}
	c->cuda = true;
}

void teardownCuda(Ctx* c) {
	if (!c->cuda) return;
	const CudaDriver& d = cudaDriver();
	d.cuCtxSetCurrent(c->cuctx);
	for (CUstream s : {c->sD2H, c->sH2D, c->sD2D}) if (s) { d.cuStreamSynchronize(s); d.cuStreamDestroy(s); }
	d.cuDevicePrimaryCtxRelease(c->dev);
	c->cuda = false;
}

gpumpi_status allocStaging(Ctx* c) {
	size_t bytes = c->cfg.chunk_bytes * static_cast<size_t>(c->cfg.num_buffers);
	void* p = nullptr;
	if (c->cuda) {
		CUresult r = cudaDriver().cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE);
		if (r != CUDA_SUCCESS) return fail(c, GPUMPI_ERR_NOMEM, "cuMemHostAlloc(%zu) for staging failed: %s", bytes, cudaErrorText(r).c_str());
	} else if (posix_memalign(&p, 4096, bytes) != 0) {
		return fail(c, GPUMPI_ERR_NOMEM, "allocating %zu bytes of staging memory failed", bytes);
	}
	gpumpi_status st = poolAddRegion(c, c->host, static_cast<char*>(p), bytes, true, false, false);
	if (st != GPUMPI_SUCCESS) { if (c->cuda) cudaDriver().cuMemFreeHost(p); else std::free(p); }
	return st;
}

void destroy(Ctx* c) {
	if (c->cuda) makeCurrent(c);
	shmTeardown(c);
	poolDestroy(c, c->host);
	poolDestroy(c, c->bounce);
	for (const auto& m : c->ipc) cudaDriver().cuIpcCloseMemHandle(m.opened);
	c->ipc.clear();
	teardownCuda(c);
	int fin = 0;
	MPI_Finalized(&fin);
	if (!fin) {
		if (c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
		for (MPI_Comm* x : {&c->sigComm, &c->shmComm, &c->ackComm, &c->hdrComm}) if (*x != MPI_COMM_NULL) MPI_Comm_free(x);
	}
	delete c;
}

}  // namespace

namespace gpumpi::lib {

gpumpi_status fail(Ctx* c, gpumpi_status st, const char* fmt, ...) {
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (c) c->lastError = buf;
	else gNoCtxError = buf;
	return st;
}

gpumpi_status cudaFail(Ctx* c, CUresult r, const char* what) {
	return fail(c, GPUMPI_ERR_CUDA, "%s: %s", what, cudaErrorText(r).c_str());
}

bool makeCurrent(Ctx* c) { return c->cuda && cudaDriver().cuCtxSetCurrent(c->cuctx) == CUDA_SUCCESS; }

std::string mpiErrorText(int code) {
	char buf[MPI_MAX_ERROR_STRING + 1] = {0};
	int len = 0;
	if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
	return std::string(buf, static_cast<size_t>(len));
}

}  // namespace gpumpi::lib

extern "C" {

void gpumpi_config_default(gpumpi_config* cfg) {
	if (!cfg) return;
	std::memset(cfg, 0, sizeof *cfg);
	cfg->chunk_bytes = 16u << 20;
	cfg->num_buffers = 4;
	cfg->alloc_staging = 0;
	cfg->direct_piece_bytes = 256u << 20;
	cfg->device = -1;
	cfg->flags = 0;
}

gpumpi_status gpumpi_init(MPI_Comm comm, const gpumpi_config* cfgIn, gpumpi_ctx** out) {
	return guard(nullptr, [&]() -> gpumpi_status {
		gNoCtxError.clear();
		if (!out) return fail(nullptr, GPUMPI_ERR_ARG, "gpumpi_init: ctx pointer is NULL");
		*out = nullptr;
		int inited = 0, fin = 0;
		MPI_Initialized(&inited);
		MPI_Finalized(&fin);
		if (!inited || fin) return fail(nullptr, GPUMPI_ERR_MPI, "gpumpi_init: call it between MPI_Init and MPI_Finalize");
		if (comm == MPI_COMM_NULL) return fail(nullptr, GPUMPI_ERR_ARG, "gpumpi_init: communicator is MPI_COMM_NULL");
		gpumpi_config cfg;
		gpumpi_config_default(&cfg);
		if (cfgIn) cfg = *cfgIn;
		const size_t kMin = 4096, kMax = 1u << 30;
		if (cfg.chunk_bytes < kMin || cfg.chunk_bytes > kMax) return fail(nullptr, GPUMPI_ERR_ARG, "chunk_bytes %zu outside 4 KiB .. 1 GiB", cfg.chunk_bytes);
		if (cfg.direct_piece_bytes < kMin || cfg.direct_piece_bytes > kMax) return fail(nullptr, GPUMPI_ERR_ARG, "direct_piece_bytes %zu outside 4 KiB .. 1 GiB", cfg.direct_piece_bytes);
		if (cfg.num_buffers < 2 || cfg.num_buffers > 64) return fail(nullptr, GPUMPI_ERR_ARG, "num_buffers %d outside 2..64", cfg.num_buffers);
		if ((cfg.flags & GPUMPI_FORCE_DIRECT) && (cfg.flags & (GPUMPI_FORCE_STAGED | GPUMPI_STAGE_HOST))) return fail(nullptr, GPUMPI_ERR_ARG, "FORCE_DIRECT conflicts with FORCE_STAGED / STAGE_HOST");
		if (cfg.flags & ~kConfigFlags) return fail(nullptr, GPUMPI_ERR_ARG, "unknown config flags 0x%x", cfg.flags & ~kConfigFlags);
		auto* c = new Ctx();
		c->cfg = cfg;
		int rc = MPI_Comm_dup(comm, &c->comm);
		if (rc == MPI_SUCCESS) rc = MPI_Comm_dup(comm, &c->sigComm);
		if (rc == MPI_SUCCESS) rc = MPI_Comm_dup(comm, &c->shmComm);
		if (rc == MPI_SUCCESS) rc = MPI_Comm_dup(comm, &c->ackComm);
		if (rc == MPI_SUCCESS) rc = MPI_Comm_dup(comm, &c->hdrComm);
		if (rc != MPI_SUCCESS) { std::string t = mpiErrorText(rc); destroy(c); return fail(nullptr, GPUMPI_ERR_MPI, "MPI_Comm_dup failed: %s", t.c_str()); }
		MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
		for (MPI_Comm x : {c->sigComm, c->shmComm, c->ackComm, c->hdrComm}) MPI_Comm_set_errhandler(x, MPI_ERRORS_RETURN);
		MPI_Comm_rank(c->comm, &c->rank);
		MPI_Comm_size(c->comm, &c->size);
		void* ub = nullptr;
		int flag = 0;
		if (MPI_Comm_get_attr(c->comm, MPI_TAG_UB, &ub, &flag) == MPI_SUCCESS && flag && ub) c->tagUb = *static_cast<int*>(ub);
		setupCuda(c);
		c->host.slotBytes = cfg.chunk_bytes;
		c->bounce.slotBytes = cfg.direct_piece_bytes;
		gpumpi_status st = discover(c);
		if (st == GPUMPI_SUCCESS) st = shmSetup(c);
		if (st == GPUMPI_SUCCESS && cfg.alloc_staging) st = allocStaging(c);
		if (st != GPUMPI_SUCCESS) {
			std::string t = c->lastError;
			destroy(c);
			return fail(nullptr, st, "%s", t.c_str());
		}
		*out = reinterpret_cast<gpumpi_ctx*>(c);
		return GPUMPI_SUCCESS;
	});
}

gpumpi_status gpumpi_finalize(gpumpi_ctx** ctx) {
	if (!ctx || !*ctx) return fail(nullptr, GPUMPI_ERR_ARG, "gpumpi_finalize: NULL context");
	Ctx* c = C(*ctx);
	return guard(c, [&]() -> gpumpi_status {
		if (!c->active.empty()) return fail(c, GPUMPI_ERR_BUSY, "%zu request(s) still in flight; wait for them before gpumpi_finalize", c->active.size());
		destroy(c);
		*ctx = nullptr;
		return GPUMPI_SUCCESS;
	});
}

const char* gpumpi_path_name(gpumpi_path_class p) {
	switch (p) {
		case GPUMPI_PATH_SELF: return "self";
		case GPUMPI_PATH_SAME_GPU: return "same-gpu";
		case GPUMPI_PATH_PEER_TO_PEER: return "peer-to-peer";
		case GPUMPI_PATH_GPUDIRECT_RDMA: return "gpudirect-rdma";
		case GPUMPI_PATH_STAGED_SAME_HOST: return "staged-same-host";
		case GPUMPI_PATH_STAGED_REMOTE: return "staged-remote";
		case GPUMPI_PATH_NOT_CUDA_AWARE: return "not-cuda-aware";
		case GPUMPI_PATH_HOST_ONLY: return "host-only";
	}
	return "unknown";
}

const char* gpumpi_protocol_name(gpumpi_protocol p) {
	switch (p) {
		case GPUMPI_PROTO_DIRECT: return "direct";
		case GPUMPI_PROTO_STAGED: return "staged";
		case GPUMPI_PROTO_SHM: return "shm";
	}
	return "unknown";
}

gpumpi_status gpumpi_path(gpumpi_ctx* ctx, int peer, gpumpi_path_info* info) {
	if (!ctx) return fail(nullptr, GPUMPI_ERR_ARG, "gpumpi_path: NULL context");
	Ctx* c = C(ctx);
	return guard(c, [&]() -> gpumpi_status {
		if (!info) return fail(c, GPUMPI_ERR_ARG, "gpumpi_path: info is NULL");
		if (peer < 0 || peer >= c->size) return fail(c, GPUMPI_ERR_PEER, "peer %d is out of range 0..%d", peer, c->size - 1);
		const Peer& p = c->peers[peer];
		std::memset(info, 0, sizeof *info);
		info->peer = peer;
		info->path = p.path;
		info->protocol = p.proto;
		info->same_host = p.sameHost ? 1 : 0;
		info->mpi_cuda_aware = p.aware;
		info->chunk_bytes = p.chunk;
		info->calib_us = p.calibUs;
		std::snprintf(info->peer_host, sizeof info->peer_host, "%s", p.host.c_str());
		std::snprintf(info->peer_gpu, sizeof info->peer_gpu, "%s", p.gpu.c_str());
		std::snprintf(info->reason, sizeof info->reason, "%s", p.reason.c_str());
		return GPUMPI_SUCCESS;
	});
}

gpumpi_status gpumpi_register_staging(gpumpi_ctx* ctx, void* buf, size_t bytes, int flags) {
	if (!ctx) return fail(nullptr, GPUMPI_ERR_ARG, "gpumpi_register_staging: NULL context");
	Ctx* c = C(ctx);
	return guard(c, [&]() -> gpumpi_status {
		if (!buf) return fail(c, GPUMPI_ERR_ARG, "staging buffer is NULL");
		if (flags != GPUMPI_STAGING_PIN && flags != GPUMPI_STAGING_ALREADY_PINNED) return fail(c, GPUMPI_ERR_ARG, "unknown staging flags %d", flags);
		if (c->host.busy()) return fail(c, GPUMPI_ERR_BUSY, "staging slots are in use; register before posting transfers");
		if (bytes < c->host.slotBytes) return fail(c, GPUMPI_ERR_STAGING, "staging buffer of %zu bytes is smaller than one chunk (%zu bytes)", bytes, c->host.slotBytes);
		if (c->cuda && gpumpi_is_device_ptr(buf)) return fail(c, GPUMPI_ERR_STAGING, "staging buffer %p is device memory; it must be host memory", buf);
		// Overlap with an already-registered staging buffer is the caller's error: detect it before pinning
		// (cuMemHostRegister would otherwise fail first with CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED).
		const char* b = static_cast<const char*>(buf);
		for (const auto& reg : c->host.regions)
			if (b < reg.base + reg.bytes && reg.base < b + bytes)
				return fail(c, GPUMPI_ERR_STAGING, "staging buffer %p (%zu bytes) overlaps the registered staging buffer %p (%zu bytes)", buf, bytes,
				            static_cast<void*>(reg.base), reg.bytes);
		bool pinned = false;
		char* pinBase = static_cast<char*>(buf);
		if (c->cuda && flags == GPUMPI_STAGING_PIN) {
			makeCurrent(c);
			CUresult r = cudaDriver().cuMemHostRegister(buf, bytes, CU_MEMHOSTREGISTER_PORTABLE);
			if (r == CUDA_ERROR_INVALID_VALUE) {  // some drivers want page-aligned ranges: pin the enclosing pages
				uintptr_t a = reinterpret_cast<uintptr_t>(buf) & ~static_cast<uintptr_t>(4095);
				uintptr_t e = (reinterpret_cast<uintptr_t>(buf) + bytes + 4095) & ~static_cast<uintptr_t>(4095);
				r = cudaDriver().cuMemHostRegister(reinterpret_cast<void*>(a), e - a, CU_MEMHOSTREGISTER_PORTABLE);
				pinBase = reinterpret_cast<char*>(a);
			}
			if (r == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)  // pinned by the caller or another library
				return fail(c, GPUMPI_ERR_STAGING, "staging buffer %p is already pinned (cuMemHostRegister: %s); pass GPUMPI_STAGING_ALREADY_PINNED", buf,
				            cudaErrorText(r).c_str());
			if (r != CUDA_SUCCESS) return cudaFail(c, r, "cuMemHostRegister of the staging buffer");
			pinned = true;
		}
		gpumpi_status st = poolAddRegion(c, c->host, static_cast<char*>(buf), bytes, false, pinned, false, pinBase);
		if (st != GPUMPI_SUCCESS && pinned) cudaDriver().cuMemHostUnregister(pinBase);
		return st;
	});
}

gpumpi_status gpumpi_unregister_staging(gpumpi_ctx* ctx, void* buf) {
	if (!ctx) return fail(nullptr, GPUMPI_ERR_ARG, "gpumpi_unregister_staging: NULL context");
	Ctx* c = C(ctx);
	return guard(c, [&]() -> gpumpi_status {
		for (const auto& r : c->host.regions)
			if (r.base == buf && r.ownedAlloc) return fail(c, GPUMPI_ERR_ARG, "%p was allocated by the library (alloc_staging); it is freed by gpumpi_finalize", buf);
		if (c->cuda) makeCurrent(c);
		return poolRemoveRegion(c, c->host, static_cast<char*>(buf));
	});
}

gpumpi_status gpumpi_isend(gpumpi_ctx* ctx, const void* buf, size_t bytes, int peer, int tag, gpumpi_request** req) {
	return gpumpi_isend_ex(ctx, buf, bytes, peer, tag, 0, req);
}

gpumpi_status gpumpi_irecv(gpumpi_ctx* ctx, void* buf, size_t bytes, int peer, int tag, gpumpi_request** req) {
	return gpumpi_irecv_ex(ctx, buf, bytes, peer, tag, 0, req);
}

gpumpi_status gpumpi_isend_ex(gpumpi_ctx* ctx, const void* buf, size_t bytes, int peer, int tag, unsigned flags, gpumpi_request** req) {
	if (!ctx) return fail(nullptr, GPUMPI_ERR_ARG, "gpumpi_isend: NULL context");
	Ctx* c = C(ctx);
	return guard(c, [&] { return post(c, Dir::Send, const_cast<void*>(buf), bytes, peer, tag, flags, req); });
}

gpumpi_status gpumpi_irecv_ex(gpumpi_ctx* ctx, void* buf, size_t bytes, int peer, int tag, unsigned flags, gpumpi_request** req) {
	if (!ctx) return fail(nullptr, GPUMPI_ERR_ARG, "gpumpi_irecv: NULL context");
	Ctx* c = C(ctx);
	return guard(c, [&] { return post(c, Dir::Recv, buf, bytes, peer, tag, flags, req); });
}

static gpumpi_status finish(Ctx* c, gpumpi_request** req) {
	gpumpi_request* r = *req;
	gpumpi_status st = r->err;
	if (st != GPUMPI_SUCCESS) fail(c, st, "%s", r->errText.c_str());
	for (size_t i = 0; i < c->active.size(); ++i) if (c->active[i] == r) { c->active.erase(c->active.begin() + static_cast<long>(i)); break; }
	freeRequest(r);
	*req = nullptr;
	return st;
}

gpumpi_status gpumpi_test(gpumpi_ctx* ctx, gpumpi_request** req, int* done) {
	if (!ctx) return fail(nullptr, GPUMPI_ERR_ARG, "gpumpi_test: NULL context");
	Ctx* c = C(ctx);
	return guard(c, [&]() -> gpumpi_status {
		if (!req || !done) return fail(c, GPUMPI_ERR_ARG, "gpumpi_test: NULL request or done pointer");
		*done = 0;
		if (!*req) { *done = 1; return GPUMPI_SUCCESS; }
		if ((*req)->ctx != c) return fail(c, GPUMPI_ERR_NOT_FOUND, "request belongs to another context");
		makeCurrent(c);
		progress(c);
		if (!(*req)->done) return GPUMPI_SUCCESS;
		*done = 1;
		return finish(c, req);
	});
}

gpumpi_status gpumpi_wait(gpumpi_ctx* ctx, gpumpi_request** req) {
	if (!ctx) return fail(nullptr, GPUMPI_ERR_ARG, "gpumpi_wait: NULL context");
	Ctx* c = C(ctx);
	return guard(c, [&]() -> gpumpi_status {
		if (!req) return fail(c, GPUMPI_ERR_ARG, "gpumpi_wait: NULL request pointer");
		if (!*req) return GPUMPI_SUCCESS;
		if ((*req)->ctx != c) return fail(c, GPUMPI_ERR_NOT_FOUND, "request belongs to another context");
		makeCurrent(c);
		while (!(*req)->done) {
			progress(c);
			if (!(*req)->done) sched_yield();
		}
		return finish(c, req);
	});
}

gpumpi_status gpumpi_waitall(gpumpi_ctx* ctx, int count, gpumpi_request** reqs) {
	if (!ctx) return fail(nullptr, GPUMPI_ERR_ARG, "gpumpi_waitall: NULL context");
	Ctx* c = C(ctx);
	if (count < 0 || (count > 0 && !reqs)) return fail(c, GPUMPI_ERR_ARG, "gpumpi_waitall: bad count %d or NULL array", count);
	gpumpi_status first = GPUMPI_SUCCESS;
	std::string firstText;
	for (int i = 0; i < count; ++i) {
		gpumpi_status st = gpumpi_wait(ctx, &reqs[i]);
		if (st != GPUMPI_SUCCESS && first == GPUMPI_SUCCESS) { first = st; firstText = c->lastError; }
	}
	if (first != GPUMPI_SUCCESS) c->lastError = firstText;
	return first;
}

gpumpi_protocol gpumpi_request_protocol(const gpumpi_request* req) { return req ? req->proto : GPUMPI_PROTO_DIRECT; }

size_t gpumpi_staging_bytes(gpumpi_ctx* ctx) {
	if (!ctx) return 0;
	size_t n = 0;
	for (const auto& r : C(ctx)->host.regions) n += r.bytes;
	return n + shmBytes(C(ctx));
}

gpumpi_status gpumpi_ipc_export(gpumpi_ctx* ctx, void* ptr, gpumpi_ipc_handle* h) {
	if (!ctx) return fail(nullptr, GPUMPI_ERR_ARG, "gpumpi_ipc_export: NULL context");
	Ctx* c = C(ctx);
	return guard(c, [&]() -> gpumpi_status {
		if (!ptr || !h) return fail(c, GPUMPI_ERR_ARG, "gpumpi_ipc_export: NULL pointer or handle");
		if (!c->cuda) return fail(c, GPUMPI_ERR_NO_CUDA, "CUDA IPC needs CUDA: %s", c->noCudaWhy.c_str());
		makeCurrent(c);
		if (!gpumpi_is_device_ptr(ptr)) return fail(c, GPUMPI_ERR_ARG, "%p is not device memory", ptr);
		const CudaDriver& d = cudaDriver();
		CUdeviceptr base = 0;
		size_t size = 0;
		CUresult r = d.cuMemGetAddressRange(&base, &size, reinterpret_cast<CUdeviceptr>(ptr));
		if (r != CUDA_SUCCESS) return cudaFail(c, r, "cuMemGetAddressRange");
		std::memset(h, 0, sizeof *h);
		CUipcMemHandle ih;
		r = d.cuIpcGetMemHandle(&ih, base);
		if (r != CUDA_SUCCESS) return cudaFail(c, r, "cuIpcGetMemHandle (memory from cuMemAlloc/cudaMalloc only; not imported, VMM or pool memory)");
		std::memcpy(h->cuda_handle, ih.reserved, sizeof ih.reserved);
		h->offset = reinterpret_cast<CUdeviceptr>(ptr) - base;
		h->bytes = size - h->offset;
		std::snprintf(h->gpu, sizeof h->gpu, "%s", c->self.gpuBus);
		return GPUMPI_SUCCESS;
	});
}

gpumpi_status gpumpi_ipc_open(gpumpi_ctx* ctx, const gpumpi_ipc_handle* h, void** out) {
	if (!ctx) return fail(nullptr, GPUMPI_ERR_ARG, "gpumpi_ipc_open: NULL context");
	Ctx* c = C(ctx);
	return guard(c, [&]() -> gpumpi_status {
		if (!h || !out) return fail(c, GPUMPI_ERR_ARG, "gpumpi_ipc_open: NULL handle or output pointer");
		*out = nullptr;
		if (!c->cuda) return fail(c, GPUMPI_ERR_NO_CUDA, "CUDA IPC needs CUDA: %s", c->noCudaWhy.c_str());
		makeCurrent(c);
		const CudaDriver& d = cudaDriver();
		if (c->bounce.slots.empty()) {  // once per context: the persistent device bounce buffer for imported memory
			CUdeviceptr b = 0;
			size_t bytes = 2 * c->bounce.slotBytes;
			CUresult r = d.cuMemAlloc(&b, bytes);
			if (r != CUDA_SUCCESS) return cudaFail(c, r, "cuMemAlloc of the device bounce buffer for imported memory");
			gpumpi_status st = poolAddRegion(c, c->bounce, reinterpret_cast<char*>(b), bytes, true, false, true);
			if (st != GPUMPI_SUCCESS) { d.cuMemFree(b); return st; }
		}
		CUipcMemHandle ih;
		std::memcpy(ih.reserved, h->cuda_handle, sizeof ih.reserved);
		CUdeviceptr p = 0;
		CUresult r = d.cuIpcOpenMemHandle(&p, ih, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
		if (r != CUDA_SUCCESS) return cudaFail(c, r, "cuIpcOpenMemHandle");
		char* user = reinterpret_cast<char*>(p) + h->offset;
		c->ipc.push_back({user, static_cast<size_t>(h->bytes), p});
		*out = user;
		return GPUMPI_SUCCESS;
	});
}

gpumpi_status gpumpi_ipc_close(gpumpi_ctx* ctx, void* ptr) {
	if (!ctx) return fail(nullptr, GPUMPI_ERR_ARG, "gpumpi_ipc_close: NULL context");
	Ctx* c = C(ctx);
	return guard(c, [&]() -> gpumpi_status {
		for (size_t i = 0; i < c->ipc.size(); ++i) {
			if (c->ipc[i].base != ptr) continue;
			for (gpumpi_request* r : c->active)
				if (r->buf >= c->ipc[i].base && r->buf < c->ipc[i].base + c->ipc[i].bytes) return fail(c, GPUMPI_ERR_BUSY, "a request still uses the mapping %p", ptr);
			makeCurrent(c);
			CUresult res = cudaDriver().cuIpcCloseMemHandle(c->ipc[i].opened);
			c->ipc.erase(c->ipc.begin() + static_cast<long>(i));
			return res == CUDA_SUCCESS ? GPUMPI_SUCCESS : cudaFail(c, res, "cuIpcCloseMemHandle");
		}
		return fail(c, GPUMPI_ERR_NOT_FOUND, "%p is not a pointer returned by gpumpi_ipc_open", ptr);
	});
}

const char* gpumpi_strerror(gpumpi_status st) {
	switch (st) {
		case GPUMPI_SUCCESS: return "success";
		case GPUMPI_ERR_ARG: return "invalid argument";
		case GPUMPI_ERR_PEER: return "peer rank out of range";
		case GPUMPI_ERR_TAG: return "tag out of range";
		case GPUMPI_ERR_NO_CUDA: return "no usable CUDA for a device buffer or CUDA feature";
		case GPUMPI_ERR_CUDA: return "CUDA driver call failed";
		case GPUMPI_ERR_MPI: return "MPI call failed";
		case GPUMPI_ERR_NO_STAGING: return "staging needed but no staging buffer registered";
		case GPUMPI_ERR_STAGING: return "invalid staging buffer";
		case GPUMPI_ERR_NOT_FOUND: return "unknown buffer, mapping or request";
		case GPUMPI_ERR_MISMATCH: return "sender and receiver disagree (size, flags or protocol)";
		case GPUMPI_ERR_NOMEM: return "out of memory";
		case GPUMPI_ERR_BUSY: return "requests still in flight";
		case GPUMPI_ERR_UNSUPPORTED: return "not supported on this stack";
		case GPUMPI_ERR_INTERNAL: return "internal error";
	}
	return "unknown gpumpi status";
}

const char* gpumpi_last_error(gpumpi_ctx* ctx) {
	if (!ctx) return gNoCtxError.c_str();
	return C(ctx)->lastError.c_str();
}

}  // extern "C"
