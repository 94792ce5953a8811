/*
 * libgpumpi — GPU buffers over MPI without surprises.
 *
 * What it does
 *   - Discovers, per peer of an MPI communicator, the path a GPU buffer takes (same GPU, CUDA IPC peer-to-peer,
 *     GPUDirect RDMA, host-staged inside MPI, MPI not CUDA-aware, or host-only) and tells why (gpumpi_path).
 *   - Moves GPU buffers with gpumpi_isend / gpumpi_irecv: where the path is direct the device pointer goes to MPI;
 *     where MPI would stage through host memory itself (or cannot take device pointers at all) the library runs
 *     its own pipelined staging through host buffers that YOU register once (or that it allocates once at init).
 *     The library never allocates staging memory per message: memory use does not grow with message size.
 *   - Receives into / sends from GPU memory imported with CUDA IPC (gpumpi_ipc_open) without handing the imported
 *     pointer to MPI (it bounces through a persistent device buffer or through host staging).
 *
 * Rules both sides must follow (the wire protocol is derived deterministically from the pair's path class):
 *   - a send and its matching receive pass the same byte count, the same tag and the same per-call flags;
 *   - peers and tags are explicit (no MPI_ANY_SOURCE / MPI_ANY_TAG); tags are 0..MPI_TAG_UB;
 *   - every rank of the communicator calls gpumpi_init / gpumpi_finalize (they are collective).
 * Messages with the same (peer, tag) are matched in the order they were posted, as in MPI.
 * Threading: a context is used by one thread at a time (the caller serialises; MPI_THREAD_FUNNELED is enough).
 * CUDA: reached through the driver API loaded at run time (libcuda.so.1); nothing links CUDA. Without a driver the
 * library works on host memory and returns GPUMPI_ERR_NO_CUDA for anything that needs a GPU.
 */
#ifndef GPUMPI_H
#define GPUMPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUMPI_VERSION_MAJOR 0
#define GPUMPI_VERSION_MINOR 1

/** Status codes. Every API function returns one; GPUMPI_SUCCESS is 0. */
typedef enum gpumpi_status {
	GPUMPI_SUCCESS = 0,
	GPUMPI_ERR_ARG = 1,          /**< NULL pointer, negative size, bad flag combination */
	GPUMPI_ERR_PEER = 2,         /**< peer rank out of range (or MPI_ANY_SOURCE / MPI_PROC_NULL) */
	GPUMPI_ERR_TAG = 3,          /**< tag < 0, > MPI_TAG_UB, or MPI_ANY_TAG */
	GPUMPI_ERR_NO_CUDA = 4,      /**< a device pointer or a CUDA feature was used but no CUDA driver/device is usable */
	GPUMPI_ERR_CUDA = 5,         /**< a CUDA driver call failed (detail in gpumpi_last_error) */
	GPUMPI_ERR_MPI = 6,          /**< an MPI call failed (detail in gpumpi_last_error) */
	GPUMPI_ERR_NO_STAGING = 7,   /**< the staging protocol is needed but no staging buffer is registered */
	GPUMPI_ERR_STAGING = 8,      /**< bad staging registration (too small, overlapping, not pinned, …) */
	GPUMPI_ERR_NOT_FOUND = 9,    /**< unknown buffer / mapping / request */
	GPUMPI_ERR_MISMATCH = 10,    /**< sender and receiver disagree (size, flags, protocol) */
	GPUMPI_ERR_NOMEM = 11,       /**< a one-time allocation (at init / registration) failed */
	GPUMPI_ERR_BUSY = 12,        /**< requests are still in flight (finalize, unregister, close) */
	GPUMPI_ERR_UNSUPPORTED = 13, /**< not available on this stack (e.g. shared-memory path without shm) */
	GPUMPI_ERR_INTERNAL = 14
} gpumpi_status;

/** How a GPU buffer travels between this rank and a peer (see docs/library.md for every reason). */
typedef enum gpumpi_path_class {
	GPUMPI_PATH_SELF = 0,             /**< the peer is this rank */
	GPUMPI_PATH_SAME_GPU = 1,         /**< both ranks use the same GPU (CUDA IPC within one device) */
	GPUMPI_PATH_PEER_TO_PEER = 2,     /**< same host, peer-accessible GPUs (CUDA IPC over NVLink / PCIe) */
	GPUMPI_PATH_GPUDIRECT_RDMA = 3,   /**< different hosts, nvidia_peermem + InfiniBand/RoCE devices on both */
	GPUMPI_PATH_STAGED_SAME_HOST = 4, /**< same host, but MPI would stage GPU data through host memory */
	GPUMPI_PATH_STAGED_REMOTE = 5,    /**< different hosts, MPI would stage GPU data through host memory */
	GPUMPI_PATH_NOT_CUDA_AWARE = 6,   /**< MPI cannot take device pointers at all */
	GPUMPI_PATH_HOST_ONLY = 7         /**< no usable CUDA on this rank or the peer: host memory only */
} gpumpi_path_class;

/** What the library does with a device buffer for that peer (the wire protocol; both ranks compute the same). */
typedef enum gpumpi_protocol {
	GPUMPI_PROTO_DIRECT = 0, /**< hand the buffer to MPI (split into pieces <= direct_piece_bytes) */
	GPUMPI_PROTO_STAGED = 1, /**< pipelined staging through the registered host buffers, MPI moves host chunks */
	GPUMPI_PROTO_SHM = 2     /**< same host: a pinned shared segment, MPI only carries small signals */
} gpumpi_protocol;

/** Result of gpumpi_path. */
typedef struct gpumpi_path_info {
	int peer;
	gpumpi_path_class path;
	gpumpi_protocol protocol;    /**< what gpumpi_isend/irecv use for device buffers to this peer */
	int same_host;               /**< 1 when both ranks run on one host (host name + boot id) */
	int mpi_cuda_aware;          /**< 1 both ranks' MPI report CUDA support, 0 not, -1 cannot tell */
	size_t chunk_bytes;          /**< staging chunk agreed for the pair */
	double calib_us;             /**< calibration round trip (small host message), or -1 when not calibrated */
	char peer_host[64];
	char peer_gpu[32];           /**< peer's GPU PCI bus id ("" when it has none) */
	char reason[512];            /**< why this class, in words (facts used, overrides seen) */
} gpumpi_path_info;

/** Flags for gpumpi_config.flags and the per-call flags of gpumpi_isend_ex / gpumpi_irecv_ex. */
enum {
	GPUMPI_FORCE_DIRECT = 1u << 0, /**< always hand buffers to MPI (device pointers only if MPI is CUDA-aware) */
	GPUMPI_FORCE_STAGED = 1u << 1, /**< always use the staging pipeline (never SHM) */
	GPUMPI_STAGE_HOST = 1u << 2,   /**< host buffers also go through the staging buffers with memcpy (testing the
	                                     pipeline without a GPU; both sides must set it) */
	GPUMPI_CALIBRATE = 1u << 3,    /**< config only: short calibration exchange at init (O(peers) small messages) */
	GPUMPI_NO_SHM = 1u << 4,       /**< config only: never use the shared-segment protocol */
	GPUMPI_FORCE_SHM = 1u << 5     /**< config: also set up shared segments to same-host peers whose protocol is not SHM
	                                     (both ranks must set it); per call: use the segment for this transfer (host
	                                     buffers are then copied with memcpy) */
};

/** Flags for gpumpi_register_staging. */
enum {
	GPUMPI_STAGING_PIN = 0,            /**< the library pins the buffer with cuMemHostRegister (and unpins it) */
	GPUMPI_STAGING_ALREADY_PINNED = 1  /**< the caller pinned it (cudaHostAlloc / cudaHostRegister) */
};

/** Configuration for gpumpi_init; gpumpi_config_default fills the defaults. NULL config = defaults. */
typedef struct gpumpi_config {
	size_t chunk_bytes;         /**< staging chunk (default 16 MiB; 4 KiB .. 1 GiB); the pair uses the min of both */
	int num_buffers;            /**< staging slots in flight (default 4, 2..64) */
	int alloc_staging;          /**< 1: allocate num_buffers x chunk_bytes pinned host memory once at init (default 0) */
	size_t direct_piece_bytes;  /**< largest single MPI message of the direct protocol (default 256 MiB, <= 1 GiB);
	                                 the IPC bounce buffer is 2 x this (device memory, only after gpumpi_ipc_open) */
	int device;                 /**< CUDA device ordinal, -1 = local rank modulo device count (default -1) */
	unsigned flags;             /**< GPUMPI_FORCE_*, GPUMPI_STAGE_HOST, GPUMPI_CALIBRATE, GPUMPI_NO_SHM */
} gpumpi_config;

typedef struct gpumpi_ctx gpumpi_ctx;
typedef struct gpumpi_request gpumpi_request;

/** An exportable handle for device memory (wraps a CUDA IPC handle + offset + size). Plain bytes: send it by MPI. */
typedef struct gpumpi_ipc_handle {
	char cuda_handle[64];
	uint64_t offset;   /**< offset of the exported pointer inside its allocation */
	uint64_t bytes;    /**< size of the allocation from the exported pointer on */
	char gpu[32];      /**< PCI bus id of the exporting GPU */
} gpumpi_ipc_handle;

void gpumpi_config_default(gpumpi_config* cfg);

/** Collective over comm. Discovers paths (one allgather + one alltoall), duplicates comm for its own traffic. */
gpumpi_status gpumpi_init(MPI_Comm comm, const gpumpi_config* cfg, gpumpi_ctx** ctx);
/** Collective. Fails with GPUMPI_ERR_BUSY (and keeps the context) while requests are in flight. */
gpumpi_status gpumpi_finalize(gpumpi_ctx** ctx);

/** Path to a peer (any rank of the communicator, including this one). */
gpumpi_status gpumpi_path(gpumpi_ctx* ctx, int peer, gpumpi_path_info* info);
const char* gpumpi_path_name(gpumpi_path_class path);
const char* gpumpi_protocol_name(gpumpi_protocol proto);

/** Register a host buffer as staging memory (>= one chunk; split into chunk-sized slots). Not while in flight. */
gpumpi_status gpumpi_register_staging(gpumpi_ctx* ctx, void* host_buf, size_t bytes, int flags);
gpumpi_status gpumpi_unregister_staging(gpumpi_ctx* ctx, void* host_buf);
/** Bytes of host staging memory the library holds (registered + allocated + shared segments). */
size_t gpumpi_staging_bytes(gpumpi_ctx* ctx);

gpumpi_status gpumpi_isend(gpumpi_ctx* ctx, const void* buf, size_t bytes, int peer, int tag, gpumpi_request** req);
gpumpi_status gpumpi_irecv(gpumpi_ctx* ctx, void* buf, size_t bytes, int peer, int tag, gpumpi_request** req);
/** Same with per-call flags (GPUMPI_FORCE_DIRECT / GPUMPI_FORCE_STAGED / GPUMPI_STAGE_HOST); the peer must match them. */
gpumpi_status gpumpi_isend_ex(gpumpi_ctx* ctx, const void* buf, size_t bytes, int peer, int tag, unsigned flags,
                              gpumpi_request** req);
gpumpi_status gpumpi_irecv_ex(gpumpi_ctx* ctx, void* buf, size_t bytes, int peer, int tag, unsigned flags,
                              gpumpi_request** req);
/** Completes *req (drives every request of the context) and frees it; *req becomes NULL. NULL *req: success. */
gpumpi_status gpumpi_wait(gpumpi_ctx* ctx, gpumpi_request** req);
/** Drives progress; *done = 1 and *req freed (set NULL) when complete. */
gpumpi_status gpumpi_test(gpumpi_ctx* ctx, gpumpi_request** req, int* done);
/** Waits for all; returns the first error but completes (and frees) every request it can. */
gpumpi_status gpumpi_waitall(gpumpi_ctx* ctx, int count, gpumpi_request** reqs);
/** The protocol a request uses (for logs and tests). */
gpumpi_protocol gpumpi_request_protocol(const gpumpi_request* req);

/** CUDA IPC helpers: export device memory, open a peer's export (remembered), close it. */
gpumpi_status gpumpi_ipc_export(gpumpi_ctx* ctx, void* dev_ptr, gpumpi_ipc_handle* handle);
gpumpi_status gpumpi_ipc_open(gpumpi_ctx* ctx, const gpumpi_ipc_handle* handle, void** dev_ptr);
gpumpi_status gpumpi_ipc_close(gpumpi_ctx* ctx, void* dev_ptr);

const char* gpumpi_strerror(gpumpi_status st);
/** Detail of the last error on this context ("" when none). Valid until the next call on ctx. */
const char* gpumpi_last_error(gpumpi_ctx* ctx);

/* ---- Utilities for programs that do not link the CUDA runtime (tests, examples, benchmarks) ---- */
/** Before MPI_Init: retain the primary context of device (-1 = local rank from OMPI_COMM_WORLD_LOCAL_RANK /
 *  MPI_LOCALRANKID / SLURM_LOCALID, modulo the device count) and make it current — like cudaSetDevice + cudaFree(0).
 *  Returns GPUMPI_ERR_NO_CUDA without a driver or device. *device_out (may be NULL) gets the ordinal. */
gpumpi_status gpumpi_cuda_preinit(int device, int* device_out);
/** 1 when ptr is device memory according to the CUDA driver, 0 otherwise (always 0 without CUDA). */
int gpumpi_is_device_ptr(const void* ptr);
gpumpi_status gpumpi_device_alloc(void** ptr, size_t bytes);
gpumpi_status gpumpi_device_free(void* ptr);
/** Copy between any host/device pointers (cuMemcpy*, synchronous). */
gpumpi_status gpumpi_memcpy(void* dst, const void* src, size_t bytes);
gpumpi_status gpumpi_device_memset(void* ptr, int value, size_t bytes);
/** Free and total device memory of the current context (cuMemGetInfo). */
gpumpi_status gpumpi_device_mem_info(size_t* free_bytes, size_t* total_bytes);

#ifdef __cplusplus
}
#endif
#endif /* GPUMPI_H */
