/* A FAKE libcuda.so.1 for CI machines without a GPU (loaded through GPUMPI_LIBCUDA by the engine, the guard and
 * guard_demo --ipc; never installed, never named libcuda.so.1). "Device memory" is POSIX shared memory, so that CUDA
 * IPC between processes can be imitated for real: cuIpcGetMemHandle puts the segment's name in the handle and
 * cuIpcOpenMemHandle maps it in the importing process, where an MPI receive then really lands in the owner's memory.
 * cuPointerGetAttributes knows exactly the ranges this library handed out and answers "not CUDA memory" (success,
 * memory type 0, as the real driver does) for everything else. cuMemAlloc ranges are legacy-IPC capable; ranges from
 * the stream-ordered pool calls (cuMemAllocAsync, cuMemPoolCreate + cuMemAllocFromPoolAsync) and from the VMM calls
 * (cuMemCreate + cuMemMap) are NOT, report the handle types they were created with and (pools) a mempool handle, and
 * cuIpcGetMemHandle refuses them with CUDA_ERROR_INVALID_VALUE — what the CUDA documentation says of such memory
 * (https://developer.nvidia.com/blog/introducing-low-level-gpu-virtual-memory-management/); the exact error code the
 * real driver returns is whatever the H200 capture shows, not this file's claim.
 * Only the entry points the project's tests use exist; it is not a CUDA emulator. The stream, event, async
 * copy and pinned-host entry points exist for the guard's STAGE transfer (libgpumpi inside the guard): copies are
 * synchronous memcpy, so every event is complete when recorded; "pinned" host memory is plain memory. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))
typedef unsigned long long CUdeviceptr;
typedef struct { char reserved[64]; } CUipcMemHandle;
enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, MAX_RANGES = 256 };

enum { KIND_LEGACY = 0, KIND_POOL = 1, KIND_VMM = 2 };
struct Range { uintptr_t base; size_t size; int imported; int kind; unsigned handleTypes; char name[40]; };
static struct Range ranges[MAX_RANGES];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned serial;

static struct Range* find(uintptr_t p) {
	for (int i = 0; i < MAX_RANGES; i++)
		if (ranges[i].size && p >= ranges[i].base && p < ranges[i].base + ranges[i].size) return &ranges[i];
	return NULL;
}
static struct Range* slot(void) {
	for (int i = 0; i < MAX_RANGES; i++) if (!ranges[i].size) return &ranges[i];
	return NULL;
}
static void* mapName(const char* name, size_t size, int create) {
	int fd = shm_open(name, create ? O_RDWR | O_CREAT | O_EXCL : O_RDWR, 0600);
	if (fd < 0) return NULL;
	if (create && ftruncate(fd, (off_t)size) != 0) { close(fd); shm_unlink(name); return NULL; }
	void* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

API int cuInit(unsigned flags) { (void)flags; return OK; }
API int cuDriverGetVersion(int* v) { if (v) *v = 12000; return OK; }
API int cuDeviceGetCount(int* n) { if (n) *n = 1; return OK; }
API int cuDeviceGet(int* d, int ordinal) { if (!d || ordinal != 0) return INVALID_VALUE; *d = 0; return OK; }
API int cuDevicePrimaryCtxRetain(void** ctx, int dev) { (void)dev; static int c; if (ctx) *ctx = &c; return OK; }
static __thread void* current;
API int cuCtxSetCurrent(void* ctx) { current = ctx; return OK; }
API int cuCtxGetCurrent(void** ctx) { if (ctx) *ctx = current; return OK; }
API int cuCtxGetDevice(int* d) { if (!current) return 201; /* CUDA_ERROR_INVALID_CONTEXT */ if (d) *d = 0; return OK; }
API int cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return OK; }
API int cuDeviceGetPCIBusId(char* bus, int len, int dev) { (void)dev; if (bus && len > 0) snprintf(bus, (size_t)len, "0000:fa:ce:00.0"); return OK; }
API int cuDeviceGetUuid_v2(char* uuid, int dev) { (void)dev; if (uuid) memcpy(uuid, "fake-cuda-gpu-00", 16); return OK; }
API int cuDeviceCanAccessPeer(int* ok, int a, int b) { (void)a; (void)b; if (ok) *ok = 0; return OK; }
static int streams, events;
API int cuStreamCreate(void** s, unsigned flags) { (void)flags; if (s) *s = &streams; return OK; }
API int cuStreamDestroy_v2(void* s) { (void)s; return OK; }
API int cuStreamQuery(void* s) { (void)s; return OK; }
API int cuEventCreate(void** e, unsigned flags) { (void)flags; if (e) *e = &events; return OK; }
API int cuEventDestroy_v2(void* e) { (void)e; return OK; }
API int cuEventRecord(void* e, void* s) { (void)e; (void)s; return OK; }
API int cuEventQuery(void* e) { (void)e; return OK; }
API int cuEventSynchronize(void* e) { (void)e; return OK; }
API int cuMemHostAlloc(void** p, size_t n, unsigned flags) { (void)flags; if (!p) return INVALID_VALUE; *p = malloc(n); return *p ? OK : OUT_OF_MEMORY; }
API int cuMemAllocHost_v2(void** p, size_t n) { return cuMemHostAlloc(p, n, 0); }
API int cuMemFreeHost(void* p) { free(p); return OK; }
API int cuMemHostRegister_v2(void* p, size_t n, unsigned flags) { (void)p; (void)n; (void)flags; return OK; }
API int cuMemHostUnregister(void* p) { (void)p; return OK; }
API int cuCtxSynchronize(void) { return OK; }
/* `gpumpi bench` samples free device memory; the fake has no budget of its own: a fixed 16 GiB total, 8 GiB free */
API int cuMemGetInfo_v2(size_t* fr, size_t* tot) { if (fr) *fr = (size_t)8 << 30; if (tot) *tot = (size_t)16 << 30; return OK; }
API int cuStreamSynchronize(void* stream) { (void)stream; return OK; }
API int cuGetErrorName(int r, const char** s) { if (s) *s = r == OK ? "CUDA_SUCCESS" : "CUDA_ERROR_FAKE"; return OK; }
API int cuGetErrorString(int r, const char** s) { if (s) *s = r == OK ? "no error" : "error (fake libcuda)"; return OK; }

static int allocKind(CUdeviceptr* out, size_t size, int kind, unsigned handleTypes) {
	if (!out || !size) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	struct Range* r = slot();
	int rc = OUT_OF_MEMORY;
	if (r) {
		snprintf(r->name, sizeof r->name, "/gpumpi-fakecuda-%d-%u", (int)getpid(), serial++);
		void* p = mapName(r->name, size, 1);
		if (p) {
			r->base = (uintptr_t)p; r->size = size; r->imported = 0; r->kind = kind; r->handleTypes = handleTypes;
			*out = (CUdeviceptr)r->base; rc = OK;
		}
	}
	pthread_mutex_unlock(&mu);
	return rc;
}
API int cuMemAlloc_v2(CUdeviceptr* out, size_t size) { return allocKind(out, size, KIND_LEGACY, 0); }
static int release(CUdeviceptr p, int imported) {
	pthread_mutex_lock(&mu);
	struct Range* r = find((uintptr_t)p);
	int rc = INVALID_VALUE;
	if (r && r->base == (uintptr_t)p && r->imported == imported && r->kind != KIND_VMM) {
		munmap((void*)r->base, r->size);
		if (!imported) shm_unlink(r->name);
		memset(r, 0, sizeof *r);
		rc = OK;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}
API int cuMemFree_v2(CUdeviceptr p) { return release(p, 0); }
API int cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) { memcpy((void*)(uintptr_t)d, s, n); return OK; }
API int cuMemcpyDtoH_v2(void* d, CUdeviceptr s, size_t n) { memcpy(d, (const void*)(uintptr_t)s, n); return OK; }
API int cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { memmove((void*)(uintptr_t)d, (const void*)(uintptr_t)s, n); return OK; }
API int cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, void* st) { (void)st; return cuMemcpyHtoD_v2(d, s, n); }
API int cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, void* st) { (void)st; return cuMemcpyDtoH_v2(d, s, n); }
API int cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void* st) { (void)st; return cuMemcpyDtoD_v2(d, s, n); }
API int cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { memset((void*)(uintptr_t)d, v, n); return OK; }

API int cuIpcGetMemHandle(CUipcMemHandle* h, CUdeviceptr p) {
	pthread_mutex_lock(&mu);
	struct Range* r = find((uintptr_t)p);
	int rc = INVALID_VALUE;
	if (h && r && !r->imported && r->kind == KIND_LEGACY && r->base == (uintptr_t)p) {
		memset(h, 0, sizeof *h);
		uint64_t size = r->size;
		memcpy(h->reserved, &size, 8);
		snprintf(h->reserved + 8, 56, "%s", r->name);
		rc = OK;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}
API int cuIpcOpenMemHandle_v2(CUdeviceptr* out, CUipcMemHandle h, unsigned flags) {
	(void)flags;
	uint64_t size = 0;
	memcpy(&size, h.reserved, 8);
	if (!out || !size) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	struct Range* r = slot();
	int rc = OUT_OF_MEMORY;
	if (r) {
		snprintf(r->name, sizeof r->name, "%s", h.reserved + 8);
		void* p = mapName(r->name, (size_t)size, 0);
		if (p) { r->base = (uintptr_t)p; r->size = (size_t)size; r->imported = 1; *out = (CUdeviceptr)r->base; rc = OK; }
		else { memset(r, 0, sizeof *r); rc = INVALID_VALUE; }
	}
	pthread_mutex_unlock(&mu);
	return rc;
}
API int cuIpcOpenMemHandle(CUdeviceptr* out, CUipcMemHandle h, unsigned flags) { return cuIpcOpenMemHandle_v2(out, h, flags); }
API int cuIpcCloseMemHandle(CUdeviceptr p) { return release(p, 1); }

API int cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
	pthread_mutex_lock(&mu);
	struct Range* r = find((uintptr_t)p);
	if (r) { if (base) *base = (CUdeviceptr)r->base; if (size) *size = r->size; }
	pthread_mutex_unlock(&mu);
	return r ? OK : INVALID_VALUE;
}
/* one attribute: 2 memory type (2 = device for the ranges handed out, error "not CUDA memory" otherwise) */
API int cuPointerGetAttribute(void* data, int attr, CUdeviceptr p) {
	pthread_mutex_lock(&mu);
	struct Range* r = find((uintptr_t)p);
	pthread_mutex_unlock(&mu);
	if (!r || attr != 2) return INVALID_VALUE;
	unsigned v = 2;
	memcpy(data, &v, 4);
	return OK;
}
/* attributes: 2 memory type, 8 is managed, 10 legacy IPC capable, 11 range start, 12 range size, 17 mempool */
API int cuPointerGetAttributes(unsigned n, int* attrs, void** data, CUdeviceptr p) {
	pthread_mutex_lock(&mu);
	struct Range* r = find((uintptr_t)p);
	for (unsigned i = 0; i < n; i++) {
		uint64_t v = 0;
		if (r) {
			switch (attrs[i]) {
				case 2: v = 2; break;
				case 10: v = r->kind == KIND_LEGACY && !r->imported; break;
				case 11: v = r->base; break;
				case 12: v = r->size; break;
				case 14: v = r->handleTypes; break;
				case 17: v = r->kind == KIND_POOL ? (uint64_t)(uintptr_t)&ranges[0] : 0; break;
				default: v = 0;
			}
		}
		int wide = attrs[i] == 11 || attrs[i] == 12 || attrs[i] == 17;
		if (wide) memcpy(data[i], &v, 8);
		else { unsigned u = (unsigned)v; memcpy(data[i], &u, 4); }
	}
	pthread_mutex_unlock(&mu);
	return OK;
}

API int cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) { unsigned* w = (unsigned*)(uintptr_t)d; for (size_t i = 0; i < n; i++) w[i] = v; return OK; }
/* attributes: 20 compute mode, 75/76 compute capability, 102 VMM, 103 POSIX FD handles, 115 pools, 119 pool handle types */
API int cuDeviceGetAttribute(int* v, int attr, int dev) {
	if (!v || dev != 0) return INVALID_VALUE;
	switch (attr) {
		case 20: *v = 0; return OK;
		case 75: *v = 9; return OK;
		case 76: *v = 0; return OK;
		case 102: case 103: case 115: *v = 1; return OK;
		case 119: *v = 1; return OK;
		default: return INVALID_VALUE;
	}
}

/* Stream-ordered pools: the stream is ignored (every call completes at once). */
struct Pool { unsigned handleTypes; int used; };
static struct Pool pools[16];
typedef struct { int allocType; unsigned handleTypes; int locType, locId; void* win32; unsigned char reserved[64]; } PoolProps;
API int cuMemPoolCreate(void** pool, const PoolProps* props) {
	if (!pool || !props) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int rc = OUT_OF_MEMORY;
	for (int i = 0; i < 16; i++)
		if (!pools[i].used) { pools[i].used = 1; pools[i].handleTypes = props->handleTypes; *pool = &pools[i]; rc = OK; break; }
	pthread_mutex_unlock(&mu);
	return rc;
}
API int cuMemPoolDestroy(void* pool) { struct Pool* p = pool; if (!p) return INVALID_VALUE; p->used = 0; return OK; }
API int cuMemAllocFromPoolAsync(CUdeviceptr* out, size_t size, void* pool, void* stream) {
	(void)stream;
	struct Pool* p = pool;
	if (!p || !p->used) return INVALID_VALUE;
	return allocKind(out, size, KIND_POOL, p->handleTypes);
}
API int cuMemAllocAsync(CUdeviceptr* out, size_t size, void* stream) { (void)stream; return allocKind(out, size, KIND_POOL, 0); }
API int cuMemFreeAsync(CUdeviceptr p, void* stream) { (void)stream; return release(p, 0); }

/* VMM: cuMemCreate makes a shared-memory segment, cuMemAddressReserve an inaccessible range, cuMemMap maps the
 * segment over it (then the range is "device memory" of kind VMM), cuMemUnmap makes it inaccessible again. */
typedef struct { int type; unsigned requestedHandleTypes; int locType, locId; void* win32; unsigned char flags[8]; } AllocProp;
struct Phys { char name[40]; size_t size; unsigned handleTypes; int used; };
static struct Phys phys[64];
API int cuMemGetAllocationGranularity(size_t* g, const AllocProp* prop, int option) { (void)prop; (void)option; if (!g) return INVALID_VALUE; *g = 2u << 20; return OK; }
API int cuMemCreate(unsigned long long* handle, size_t size, const AllocProp* prop, unsigned long long flags) {
	(void)flags;
	if (!handle || !prop || !size) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int rc = OUT_OF_MEMORY;
	for (int i = 0; i < 64; i++) {
		if (phys[i].used) continue;
		snprintf(phys[i].name, sizeof phys[i].name, "/gpumpi-fakecuda-%d-%u", (int)getpid(), serial++);
		int fd = shm_open(phys[i].name, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd < 0) break;
		int ok = ftruncate(fd, (off_t)size) == 0;
		close(fd);
		if (!ok) { shm_unlink(phys[i].name); break; }
		phys[i].used = 1; phys[i].size = size; phys[i].handleTypes = prop->requestedHandleTypes;
		*handle = (unsigned long long)(i + 1);
		rc = OK;
		break;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}
API int cuMemRelease(unsigned long long handle) {
	if (handle < 1 || handle > 64 || !phys[handle - 1].used) return INVALID_VALUE;
	shm_unlink(phys[handle - 1].name);
	memset(&phys[handle - 1], 0, sizeof phys[0]);
	return OK;
}
API int cuMemAddressReserve(CUdeviceptr* out, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags) {
	(void)align; (void)addr; (void)flags;
	if (!out || !size) return INVALID_VALUE;
	void* p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) return OUT_OF_MEMORY;
	*out = (CUdeviceptr)(uintptr_t)p;
	return OK;
}
API int cuMemAddressFree(CUdeviceptr p, size_t size) { return munmap((void*)(uintptr_t)p, size) == 0 ? OK : INVALID_VALUE; }
API int cuMemMap(CUdeviceptr p, size_t size, size_t offset, unsigned long long handle, unsigned long long flags) {
	(void)flags;
	if (offset || handle < 1 || handle > 64 || !phys[handle - 1].used || size > phys[handle - 1].size) return INVALID_VALUE;
	int fd = shm_open(phys[handle - 1].name, O_RDWR, 0);
	if (fd < 0) return INVALID_VALUE;
	void* m = mmap((void*)(uintptr_t)p, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	struct Range* r = slot();
	if (r) { r->base = (uintptr_t)p; r->size = size; r->imported = 0; r->kind = KIND_VMM; r->handleTypes = phys[handle - 1].handleTypes; r->name[0] = 0; }
	pthread_mutex_unlock(&mu);
	return r ? OK : OUT_OF_MEMORY;
}
API int cuMemSetAccess(CUdeviceptr p, size_t size, const void* desc, size_t count) { (void)p; (void)size; (void)desc; (void)count; return OK; }
API int cuMemUnmap(CUdeviceptr p, size_t size) {
	pthread_mutex_lock(&mu);
	struct Range* r = find((uintptr_t)p);
	if (r && r->kind == KIND_VMM) memset(r, 0, sizeof *r);
	pthread_mutex_unlock(&mu);
	void* m = mmap((void*)(uintptr_t)p, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	return m == MAP_FAILED ? INVALID_VALUE : OK;
}
