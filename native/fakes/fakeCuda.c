/* A FAKE libcuda.so.1 for CI machines without a GPU (loaded through GPUMPI_LIBCUDA by the engine, the guard and
 * guard_demo --ipc; never installed, never named libcuda.so.1). "Device memory" is POSIX shared memory, so that CUDA
 * IPC between processes can be imitated for real: cuIpcGetMemHandle puts the segment's name in the handle and
 * cuIpcOpenMemHandle maps it in the importing process, where an MPI receive then really lands in the owner's memory.
 * cuPointerGetAttributes knows exactly the ranges this library handed out (device memory, legacy-IPC capable) and
 * answers "not CUDA memory" (success, memory type 0, as the real driver does) for everything else.
 * Only the entry points the project's guard tests use exist; it is not a CUDA emulator. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))
typedef unsigned long long CUdeviceptr;
typedef struct { char reserved[64]; } CUipcMemHandle;
enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, MAX_RANGES = 256 };

struct Range { uintptr_t base; size_t size; int imported; char name[40]; };
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
API int cuCtxSetCurrent(void* ctx) { (void)ctx; return OK; }
API int cuCtxSynchronize(void) { return OK; }
API int cuStreamSynchronize(void* stream) { (void)stream; return OK; }
API int cuGetErrorName(int r, const char** s) { if (s) *s = r == OK ? "CUDA_SUCCESS" : "CUDA_ERROR_FAKE"; return OK; }
API int cuGetErrorString(int r, const char** s) { if (s) *s = r == OK ? "no error" : "error (fake libcuda)"; return OK; }

API int cuMemAlloc_v2(CUdeviceptr* out, size_t size) {
	if (!out || !size) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	struct Range* r = slot();
	int rc = OUT_OF_MEMORY;
	if (r) {
		snprintf(r->name, sizeof r->name, "/gpumpi-fakecuda-%d-%u", (int)getpid(), serial++);
		void* p = mapName(r->name, size, 1);
		if (p) { r->base = (uintptr_t)p; r->size = size; r->imported = 0; *out = (CUdeviceptr)r->base; rc = OK; }
	}
	pthread_mutex_unlock(&mu);
	return rc;
}
static int release(CUdeviceptr p, int imported) {
	pthread_mutex_lock(&mu);
	struct Range* r = find((uintptr_t)p);
	int rc = INVALID_VALUE;
	if (r && r->base == (uintptr_t)p && r->imported == imported) {
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

API int cuIpcGetMemHandle(CUipcMemHandle* h, CUdeviceptr p) {
	pthread_mutex_lock(&mu);
	struct Range* r = find((uintptr_t)p);
	int rc = INVALID_VALUE;
	if (h && r && !r->imported && r->base == (uintptr_t)p) {
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
/* attributes: 2 memory type, 8 is managed, 10 legacy IPC capable, 11 range start, 12 range size, 17 mempool */
API int cuPointerGetAttributes(unsigned n, int* attrs, void** data, CUdeviceptr p) {
	pthread_mutex_lock(&mu);
	struct Range* r = find((uintptr_t)p);
	for (unsigned i = 0; i < n; i++) {
		uint64_t v = 0;
		if (r) {
			switch (attrs[i]) {
				case 2: v = 2; break;
				case 10: v = 1; break;
				case 11: v = r->base; break;
				case 12: v = r->size; break;
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
