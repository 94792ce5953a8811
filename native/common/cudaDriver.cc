#include "cudaDriver.hh"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace gpumpi {
namespace {

template <typename F>
void bind(void* h, F& fn, const char* name, const char* fallback = nullptr) {
	void* p = dlsym(h, name);
	if (!p && fallback) p = dlsym(h, fallback);
	fn = reinterpret_cast<F>(p);
}

CudaDriver load() {
	CudaDriver d;
	const char* override_path = std::getenv("GPUMPI_LIBCUDA");  // tests / unusual installs
	const char* name = (override_path && *override_path) ? override_path : "libcuda.so.1";
	dlerror();
	void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char* e = dlerror();
		d.error = e ? e : "dlopen failed";
		return d;
	}
	bind(h, d.cuInit, "cuInit");
	bind(h, d.cuDriverGetVersion, "cuDriverGetVersion");
	bind(h, d.cuGetErrorName, "cuGetErrorName");
	bind(h, d.cuGetErrorString, "cuGetErrorString");
	bind(h, d.cuDeviceGetCount, "cuDeviceGetCount");
	bind(h, d.cuDeviceGet, "cuDeviceGet");
	bind(h, d.cuDeviceGetName, "cuDeviceGetName");
	bind(h, d.cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId");
	bind(h, d.cuDeviceGetUuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid");
	bind(h, d.cuDeviceTotalMem, "cuDeviceTotalMem_v2");
	bind(h, d.cuDeviceGetAttribute, "cuDeviceGetAttribute");
	bind(h, d.cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer");
	bind(h, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	bind(h, d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
	bind(h, d.cuCtxSetCurrent, "cuCtxSetCurrent");
	bind(h, d.cuCtxGetCurrent, "cuCtxGetCurrent");
	bind(h, d.cuCtxGetDevice, "cuCtxGetDevice");
	bind(h, d.cuCtxSynchronize, "cuCtxSynchronize");
	bind(h, d.cuMemGetInfo, "cuMemGetInfo_v2");
	bind(h, d.cuMemAlloc, "cuMemAlloc_v2");
	bind(h, d.cuMemFree, "cuMemFree_v2");
	bind(h, d.cuMemAllocHost, "cuMemAllocHost_v2");
	bind(h, d.cuMemHostAlloc, "cuMemHostAlloc");
	bind(h, d.cuMemFreeHost, "cuMemFreeHost");
	bind(h, d.cuMemHostRegister, "cuMemHostRegister_v2");
	bind(h, d.cuMemHostUnregister, "cuMemHostUnregister");
	bind(h, d.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
	bind(h, d.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
	bind(h, d.cuMemcpyDtoD, "cuMemcpyDtoD_v2");
	bind(h, d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
	bind(h, d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
	bind(h, d.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
	bind(h, d.cuMemsetD8, "cuMemsetD8_v2");
	bind(h, d.cuMemsetD32, "cuMemsetD32_v2");
	bind(h, d.cuPointerGetAttribute, "cuPointerGetAttribute");
	bind(h, d.cuPointerGetAttributes, "cuPointerGetAttributes");
	bind(h, d.cuMemAllocAsync, "cuMemAllocAsync");
	bind(h, d.cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync");
	bind(h, d.cuMemFreeAsync, "cuMemFreeAsync");
	bind(h, d.cuMemPoolCreate, "cuMemPoolCreate");
	bind(h, d.cuMemPoolDestroy, "cuMemPoolDestroy");
	bind(h, d.cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity");
	bind(h, d.cuMemCreate, "cuMemCreate");
	bind(h, d.cuMemRelease, "cuMemRelease");
	bind(h, d.cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle");
	bind(h, d.cuMemAddressReserve, "cuMemAddressReserve");
	bind(h, d.cuMemAddressFree, "cuMemAddressFree");
	bind(h, d.cuMemMap, "cuMemMap");
	bind(h, d.cuMemUnmap, "cuMemUnmap");
	bind(h, d.cuMemSetAccess, "cuMemSetAccess");
	bind(h, d.cuMemGetAddressRange, "cuMemGetAddressRange_v2");
	bind(h, d.cuIpcGetMemHandle, "cuIpcGetMemHandle");
	bind(h, d.cuIpcOpenMemHandle, "cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle");
	bind(h, d.cuIpcCloseMemHandle, "cuIpcCloseMemHandle");
	bind(h, d.cuStreamCreate, "cuStreamCreate");
	bind(h, d.cuStreamDestroy, "cuStreamDestroy_v2");
	bind(h, d.cuStreamSynchronize, "cuStreamSynchronize");
	bind(h, d.cuStreamQuery, "cuStreamQuery");
	bind(h, d.cuEventCreate, "cuEventCreate");
	bind(h, d.cuEventDestroy, "cuEventDestroy_v2");
	bind(h, d.cuEventRecord, "cuEventRecord");
	bind(h, d.cuEventQuery, "cuEventQuery");
	bind(h, d.cuEventSynchronize, "cuEventSynchronize");
	if (!d.cuInit || !d.cuDeviceGetCount) {
		d.error = std::string(name) + " has no cuInit/cuDeviceGetCount";
		return d;
	}
	Dl_info info{};
	if (dladdr(reinterpret_cast<void*>(d.cuInit), &info) && info.dli_fname) d.library = info.dli_fname;
	d.loaded = true;
	return d;
}

}  // namespace

const CudaDriver& cudaDriver() {
	static CudaDriver d;
	static std::once_flag once;
	std::call_once(once, [] { d = load(); });
	return d;
}

std::string cudaErrorText(CUresult r) {
	const CudaDriver& d = cudaDriver();
	const char* name = nullptr;
	const char* str = nullptr;
	if (d.cuGetErrorName) d.cuGetErrorName(r, &name);
	if (d.cuGetErrorString) d.cuGetErrorString(r, &str);
	if (name && str) return std::string(name) + ": " + str;
	if (name) return name;
	return "CUresult " + std::to_string(r);
}

}  // namespace gpumpi
