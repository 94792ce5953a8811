// CUDA driver API reached at run time through dlopen("libcuda.so.1"), so one build runs with or without a GPU.
// Only the entry points the project uses are declared; types mirror cuda.h (ABI-stable since CUDA 4).
// Thread safety: cudaDriver() loads once (std::call_once) and is safe from any thread.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace gpumpi {

using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUdeviceptr = unsigned long long;  // 64-bit, as cuda.h on x86-64 / aarch64
using CUmemoryPool = struct CUmemPoolHandle_st*;
using CUmemGenericAllocationHandle = unsigned long long;

// The CUresult values the project compares against, as cuda.h's enum cudaError_enum names them (values stable;
// the runtime API's cudaError_t uses the same numbers: cudaErrorInvalidValue = 1, cudaErrorNotReady = 600,
// cudaErrorHostMemoryAlreadyRegistered = 712). No CUDA header is needed: the driver is dlopen-ed.
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr CUresult CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712;

struct CUipcMemHandle { char reserved[64]; };

// Attribute / flag values from cuda.h (stable).
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20;
constexpr int CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED = 116;
constexpr int CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124;
constexpr int CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102;
constexpr int CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103;
constexpr int CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115;
constexpr int CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES = 119;
// CUpointer_attribute (cuPointerGetAttributes; 11/12/14 are 64-bit values, 17 a pointer, the rest 32-bit).
constexpr int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
constexpr int CU_POINTER_ATTRIBUTE_IS_MANAGED = 8;
constexpr int CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;
constexpr int CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE = 10;
constexpr int CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11;
constexpr int CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12;
constexpr int CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES = 14;
constexpr int CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE = 17;
// CUmemAllocationHandleType bits, CUmemAllocationType, CUmemLocationType, CUmemAccess_flags.
constexpr unsigned CU_MEM_HANDLE_TYPE_NONE = 0;
constexpr unsigned CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1;
constexpr unsigned CU_MEM_HANDLE_TYPE_WIN32 = 2;
constexpr unsigned CU_MEM_HANDLE_TYPE_WIN32_KMT = 4;
constexpr unsigned CU_MEM_HANDLE_TYPE_FABRIC = 8;
constexpr int CU_MEM_ALLOCATION_TYPE_PINNED = 1;
constexpr int CU_MEM_LOCATION_TYPE_DEVICE = 1;
constexpr int CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3;
constexpr int CU_MEMORYTYPE_HOST = 1;
constexpr int CU_MEMORYTYPE_DEVICE = 2;
constexpr unsigned CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1;
constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 1;
constexpr unsigned CU_MEMHOSTREGISTER_PORTABLE = 1;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;

// cuda.h's CUmemLocation, CUmemPoolProps (88 bytes; fields after win32SecurityAttributes are zero = defaults),
// CUmemAllocationProp (32 bytes) and CUmemAccessDesc, laid out as cuda.h declares them (CUDA 11.2+).
struct CUmemLocation { int type; int id; };
struct CUmemPoolProps {
	int allocType;
	unsigned handleTypes;
	CUmemLocation location;
	void* win32SecurityAttributes;
	unsigned char reserved[64];
};
struct CUmemAllocationProp {
	int type;
	unsigned requestedHandleTypes;
	CUmemLocation location;
	void* win32HandleMetaData;
	unsigned char allocFlags[8];
};
struct CUmemAccessDesc { CUmemLocation location; int flags; };
static_assert(sizeof(CUmemPoolProps) == 88, "CUmemPoolProps is 88 bytes in cuda.h");
static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp is 32 bytes in cuda.h");

// Every entry point is a plain function pointer; null when the symbol is missing.
struct CudaDriver {
	bool loaded = false;
	std::string library;  // resolved path (dladdr) or ""
	std::string error;    // dlerror() text when not loaded

	CUresult (*cuInit)(unsigned) = nullptr;
	CUresult (*cuDriverGetVersion)(int*) = nullptr;
	CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
	CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
	CUresult (*cuDeviceGetCount)(int*) = nullptr;
	CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
	CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
	CUresult (*cuDeviceGetPCIBusId)(char*, int, CUdevice) = nullptr;
	CUresult (*cuDeviceGetUuid)(char* /*CUuuid*, 16 bytes*/, CUdevice) = nullptr;
	CUresult (*cuDeviceTotalMem)(size_t*, CUdevice) = nullptr;  // resolved as cuDeviceTotalMem_v2
	CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
	CUresult (*cuDeviceCanAccessPeer)(int*, CUdevice, CUdevice) = nullptr;
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
	CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;  // _v2
	CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
	CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
	CUresult (*cuCtxGetDevice)(CUdevice*) = nullptr;
	CUresult (*cuCtxSynchronize)() = nullptr;
	CUresult (*cuMemGetInfo)(size_t*, size_t*) = nullptr;  // _v2
	CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;  // _v2
	CUresult (*cuMemFree)(CUdeviceptr) = nullptr;  // _v2
	CUresult (*cuMemAllocHost)(void**, size_t) = nullptr;  // _v2
	CUresult (*cuMemHostAlloc)(void**, size_t, unsigned) = nullptr;
	CUresult (*cuMemFreeHost)(void*) = nullptr;
	CUresult (*cuMemHostRegister)(void*, size_t, unsigned) = nullptr;  // _v2
	CUresult (*cuMemHostUnregister)(void*) = nullptr;
	CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;  // _v2
	CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;  // _v2
	CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t) = nullptr;  // _v2
	CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;  // _v2
	CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream) = nullptr;  // _v2
	CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;  // _v2
	CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr;  // _v2
	CUresult (*cuMemsetD32)(CUdeviceptr, unsigned, size_t) = nullptr;  // _v2
	CUresult (*cuPointerGetAttribute)(void*, int, CUdeviceptr) = nullptr;
	CUresult (*cuPointerGetAttributes)(unsigned, int*, void**, CUdeviceptr) = nullptr;
	// Stream-ordered pools (CUDA 11.2+) and virtual memory management (CUDA 10.2+); null on older drivers.
	CUresult (*cuMemAllocAsync)(CUdeviceptr*, size_t, CUstream) = nullptr;
	CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr*, size_t, CUmemoryPool, CUstream) = nullptr;
	CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream) = nullptr;
	CUresult (*cuMemPoolCreate)(CUmemoryPool*, const CUmemPoolProps*) = nullptr;
	CUresult (*cuMemPoolDestroy)(CUmemoryPool) = nullptr;
	CUresult (*cuMemGetAllocationGranularity)(size_t*, const CUmemAllocationProp*, int) = nullptr;
	CUresult (*cuMemCreate)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long) = nullptr;
	CUresult (*cuMemRelease)(CUmemGenericAllocationHandle) = nullptr;
	// succeeds for memory mapped with cuMemMap (VMM); fails for cuMemAlloc and for legacy IPC imports (guard's class)
	CUresult (*cuMemRetainAllocationHandle)(CUmemGenericAllocationHandle*, void*) = nullptr;
	CUresult (*cuMemAddressReserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
	CUresult (*cuMemAddressFree)(CUdeviceptr, size_t) = nullptr;
	CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
	CUresult (*cuMemUnmap)(CUdeviceptr, size_t) = nullptr;
	CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
	CUresult (*cuMemGetAddressRange)(CUdeviceptr*, size_t*, CUdeviceptr) = nullptr;  // _v2
	CUresult (*cuIpcGetMemHandle)(CUipcMemHandle*, CUdeviceptr) = nullptr;
	CUresult (*cuIpcOpenMemHandle)(CUdeviceptr*, CUipcMemHandle, unsigned) = nullptr;  // _v2
	CUresult (*cuIpcCloseMemHandle)(CUdeviceptr) = nullptr;
	CUresult (*cuStreamCreate)(CUstream*, unsigned) = nullptr;
	CUresult (*cuStreamDestroy)(CUstream) = nullptr;  // _v2
	CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
	CUresult (*cuStreamQuery)(CUstream) = nullptr;
	CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
	CUresult (*cuEventDestroy)(CUevent) = nullptr;  // _v2
	CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
	CUresult (*cuEventQuery)(CUevent) = nullptr;
	CUresult (*cuEventSynchronize)(CUevent) = nullptr;
};

// The process-wide driver table; loads libcuda.so.1 on first call (never unloads). Never throws.
const CudaDriver& cudaDriver();

// "CUDA_ERROR_INVALID_VALUE: invalid argument" (or "CUresult 1" when the driver cannot name it).
std::string cudaErrorText(CUresult r);

}  // namespace gpumpi
