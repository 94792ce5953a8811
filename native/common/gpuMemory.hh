// GPU memory allocated the ways applications allocate it — cuMemAlloc (what cudaMalloc does), a stream-ordered pool
// (cudaMallocAsync's default pool, or an explicit cuMemPoolCreate pool with or without POSIX-FD export), and the
// virtual memory management API (cuMemCreate + cuMemMap, with or without POSIX-FD export) — and what the driver says
// about its IPC capability (CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, ALLOWED_HANDLE_TYPES, MEMPOOL_HANDLE).
// One home for both concerns: `gpumpi inspect` (engine/inspectIpcMem), the `repro ipc` variants pool and vmm, and the
// guard's buffer classification (guard/guardClassify.cc) all use it. Why it matters: legacy CUDA IPC
// (cuIpcGetMemHandle, what UCX's cuda_ipc and Open MPI's smcuda export) works only for cuMemAlloc memory
// (https://developer.nvidia.com/blog/introducing-low-level-gpu-virtual-memory-management/, openucx/ucx#7110).
// Thread: any thread with the allocation's context current. Never throws.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "cudaDriver.hh"

namespace gpumpi {

/** How a buffer is allocated. Names (memKindName) are the schema's `kind` values (docs/engine-schema.md). */
enum class MemKind {
	Device,       // "cuMemAlloc": cuMemAlloc (cudaMalloc)
	PoolDefault,  // "pool-default": cuMemAllocAsync from the device's default pool (cudaMallocAsync)
	Pool,         // "pool": cuMemPoolCreate with handle type none, cuMemAllocFromPoolAsync
	PoolFd,       // "pool-posix-fd": cuMemPoolCreate with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
	Vmm,          // "vmm": cuMemCreate (handle type none) + cuMemAddressReserve + cuMemMap + cuMemSetAccess
	VmmFd,        // "vmm-posix-fd": the same, requesting CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
};
constexpr MemKind kAllMemKinds[] = {MemKind::Device, MemKind::PoolDefault, MemKind::Pool, MemKind::PoolFd, MemKind::Vmm, MemKind::VmmFd};
const char* memKindName(MemKind k);
/** The calls that allocate it, for people ("cuMemPoolCreate(POSIX FD) + cuMemAllocFromPoolAsync"). */
const char* memKindCalls(MemKind k);

/** One allocation; free it with freeGpuMemory (idempotent). */
struct GpuMemory {
	MemKind kind = MemKind::Device;
	CUdeviceptr ptr = 0;
	size_t bytes = 0;   // what was asked for
	size_t mapped = 0;  // VMM: the size rounded up to the granularity
	CUmemoryPool pool = nullptr;  // an explicit pool (destroyed with the memory)
	CUmemGenericAllocationHandle vmm = 0;
};

/**
 * Allocate `bytes` on `device` (its context must be current) the way `kind` says. On failure returns the CUresult
 * (or CUDA_ERROR_NOT_SUPPORTED = 801 when the driver lacks the entry points) and sets `failedCall`; nothing is left
 * allocated. Stream-ordered allocations are made on the legacy default stream and synchronised before returning.
 */
CUresult allocGpuMemory(MemKind kind, int device, size_t bytes, GpuMemory& out, std::string& failedCall);
void freeGpuMemory(GpuMemory& m);

/** What the driver reports about one pointer (cuPointerGetAttributes; one call). */
struct PointerIpcAttrs {
	CUresult result = -1;   // of cuPointerGetAttributes (not called: -1)
	unsigned memoryType = 0;  // CU_MEMORYTYPE_*; 0 when the driver does not know the pointer
	bool managed = false;
	bool legacyIpcCapable = false;
	uint64_t rangeStart = 0, rangeSize = 0;
	uint64_t allowedHandleTypes = 0;  // CU_MEM_HANDLE_TYPE_* bits
	bool fromPool = false;            // CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE non-null
};
using PointerGetAttributesFn = CUresult (*)(unsigned, int*, void**, CUdeviceptr);
/** Ask `getAttrs` (the driver's cuPointerGetAttributes; the guard passes the program's own) about `p`. */
PointerIpcAttrs queryPointerIpcAttrs(PointerGetAttributesFn getAttrs, CUdeviceptr p);

/** "posix_fd", "win32", "win32_kmt", "fabric" joined by "," ("none" for 0; unknown bits as "0x..."). */
std::string handleTypeNames(uint64_t mask);

}  // namespace gpumpi
