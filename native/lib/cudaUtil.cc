// Utility API for programs that do not link the CUDA runtime (tests, examples, the bench): device selection
// before MPI_Init, allocation, copies and memory info through the run-time-loaded driver.
#include <cstdlib>
#include <cstring>
#include <string>

#include "internal.hh"

using namespace gpumpi;

namespace {
thread_local std::string gUtilError;

int localRank() {
	for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID", "MV2_COMM_WORLD_LOCAL_RANK"}) {
		const char* s = std::getenv(v);
		if (s && *s) return std::atoi(s);
	}
	return 0;
}

bool ready() {
	const CudaDriver& d = cudaDriver();
	if (!d.loaded) return false;
	CUcontext cur = nullptr;
	return d.cuCtxGetCurrent && d.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur;
}
}  // namespace

extern "C" {

gpumpi_status gpumpi_cuda_preinit(int device, int* device_out) {
	const CudaDriver& d = cudaDriver();
	if (!d.loaded) return GPUMPI_ERR_NO_CUDA;
	if (d.cuInit(0) != CUDA_SUCCESS) return GPUMPI_ERR_NO_CUDA;
	int n = 0;
	if (d.cuDeviceGetCount(&n) != CUDA_SUCCESS || n <= 0) return GPUMPI_ERR_NO_CUDA;
	int ord = device >= 0 ? device : localRank() % n;
	if (ord >= n) return GPUMPI_ERR_ARG;
	CUdevice dev = 0;
	CUcontext ctx = nullptr;
	if (d.cuDeviceGet(&dev, ord) != CUDA_SUCCESS || d.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) return GPUMPI_ERR_CUDA;
	if (d.cuCtxSetCurrent(ctx) != CUDA_SUCCESS) return GPUMPI_ERR_CUDA;
	if (device_out) *device_out = ord;
	return GPUMPI_SUCCESS;
}

int gpumpi_is_device_ptr(const void* ptr) {
	const CudaDriver& d = cudaDriver();
	if (!ptr || !d.loaded || !d.cuPointerGetAttribute) return 0;
	unsigned type = 0;
	if (d.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS) return 0;
	return type == CU_MEMORYTYPE_DEVICE ? 1 : 0;
}

gpumpi_status gpumpi_device_alloc(void** ptr, size_t bytes) {
	if (!ptr) return GPUMPI_ERR_ARG;
	*ptr = nullptr;
	if (!ready()) return GPUMPI_ERR_NO_CUDA;
	CUdeviceptr p = 0;
	if (cudaDriver().cuMemAlloc(&p, bytes ? bytes : 1) != CUDA_SUCCESS) return GPUMPI_ERR_NOMEM;
	*ptr = reinterpret_cast<void*>(p);
	return GPUMPI_SUCCESS;
}

gpumpi_status gpumpi_device_free(void* ptr) {
	if (!ptr) return GPUMPI_SUCCESS;
	if (!ready()) return GPUMPI_ERR_NO_CUDA;
	return cudaDriver().cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)) == CUDA_SUCCESS ? GPUMPI_SUCCESS : GPUMPI_ERR_CUDA;
}

gpumpi_status gpumpi_memcpy(void* dst, const void* src, size_t bytes) {
	if ((!dst || !src) && bytes) return GPUMPI_ERR_ARG;
	if (!bytes) return GPUMPI_SUCCESS;
	bool dd = gpumpi_is_device_ptr(dst), sd = gpumpi_is_device_ptr(src);
	if (!dd && !sd) { std::memmove(dst, src, bytes); return GPUMPI_SUCCESS; }
	const CudaDriver& d = cudaDriver();
	CUresult r;
	if (dd && sd) r = d.cuMemcpyDtoD(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), bytes);
	else if (dd) r = d.cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(dst), src, bytes);
	else r = d.cuMemcpyDtoH(dst, reinterpret_cast<CUdeviceptr>(src), bytes);
	if (r == CUDA_SUCCESS && d.cuCtxSynchronize) r = d.cuCtxSynchronize();
	return r == CUDA_SUCCESS ? GPUMPI_SUCCESS : GPUMPI_ERR_CUDA;
}

gpumpi_status gpumpi_device_memset(void* ptr, int value, size_t bytes) {
	if (!ptr && bytes) return GPUMPI_ERR_ARG;
	if (!ready()) return GPUMPI_ERR_NO_CUDA;
	const CudaDriver& d = cudaDriver();
	CUresult r = d.cuMemsetD8(reinterpret_cast<CUdeviceptr>(ptr), static_cast<unsigned char>(value), bytes);
	if (r == CUDA_SUCCESS) r = d.cuCtxSynchronize();
	return r == CUDA_SUCCESS ? GPUMPI_SUCCESS : GPUMPI_ERR_CUDA;
}

gpumpi_status gpumpi_device_mem_info(size_t* free_bytes, size_t* total_bytes) {
	if (!free_bytes || !total_bytes) return GPUMPI_ERR_ARG;
	*free_bytes = *total_bytes = 0;
	if (!ready()) return GPUMPI_ERR_NO_CUDA;
	return cudaDriver().cuMemGetInfo(free_bytes, total_bytes) == CUDA_SUCCESS ? GPUMPI_SUCCESS : GPUMPI_ERR_CUDA;
}

}  // extern "C"
