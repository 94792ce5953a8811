#include "gpuMemory.hh"

#include <cstdio>

namespace gpumpi {
namespace {

constexpr CUresult kNotSupported = 801;  // CUDA_ERROR_NOT_SUPPORTED

CUresult failed(std::string& failedCall, const char* call, CUresult r) {
	failedCall = call;
	return r;
}

CUresult allocPool(MemKind kind, int device, size_t bytes, GpuMemory& out, std::string& failedCall) {
	const CudaDriver& d = cudaDriver();
	if (kind == MemKind::PoolDefault) {
		if (!d.cuMemAllocAsync) return failed(failedCall, "cuMemAllocAsync (not in this driver)", kNotSupported);
		CUresult r = d.cuMemAllocAsync(&out.ptr, bytes, nullptr);
		if (r != CUDA_SUCCESS) return failed(failedCall, "cuMemAllocAsync", r);
	} else {
		if (!d.cuMemPoolCreate || !d.cuMemAllocFromPoolAsync || !d.cuMemPoolDestroy)
			return failed(failedCall, "cuMemPoolCreate (not in this driver)", kNotSupported);
		CUmemPoolProps props{};
		props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
		props.handleTypes = kind == MemKind::PoolFd ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
		props.location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
		CUresult r = d.cuMemPoolCreate(&out.pool, &props);
		if (r != CUDA_SUCCESS) { out.pool = nullptr; return failed(failedCall, "cuMemPoolCreate", r); }
		r = d.cuMemAllocFromPoolAsync(&out.ptr, bytes, out.pool, nullptr);
		if (r != CUDA_SUCCESS) {
			d.cuMemPoolDestroy(out.pool);
			out.pool = nullptr;
			return failed(failedCall, "cuMemAllocFromPoolAsync", r);
		}
	}
	CUresult r = d.cuCtxSynchronize ? d.cuCtxSynchronize() : CUDA_SUCCESS;
	if (r != CUDA_SUCCESS) { freeGpuMemory(out); return failed(failedCall, "cuCtxSynchronize (after the stream-ordered allocation)", r); }
	return CUDA_SUCCESS;
}

CUresult allocVmm(MemKind kind, int device, size_t bytes, GpuMemory& out, std::string& failedCall) {
	const CudaDriver& d = cudaDriver();
	if (!d.cuMemCreate || !d.cuMemAddressReserve || !d.cuMemMap || !d.cuMemSetAccess || !d.cuMemGetAllocationGranularity ||
	    !d.cuMemUnmap || !d.cuMemRelease || !d.cuMemAddressFree)
		return failed(failedCall, "cuMemCreate (not in this driver)", kNotSupported);
	CUmemAllocationProp prop{};
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.requestedHandleTypes = kind == MemKind::VmmFd ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
	prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
	size_t gran = 0;
	CUresult r = d.cuMemGetAllocationGranularity(&gran, &prop, 0 /* CU_MEM_ALLOC_GRANULARITY_MINIMUM */);
	if (r != CUDA_SUCCESS || gran == 0) return failed(failedCall, "cuMemGetAllocationGranularity", r == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : r);
	const size_t size = (bytes + gran - 1) / gran * gran;
	if ((r = d.cuMemCreate(&out.vmm, size, &prop, 0)) != CUDA_SUCCESS) { out.vmm = 0; return failed(failedCall, "cuMemCreate", r); }
	if ((r = d.cuMemAddressReserve(&out.ptr, size, 0, 0, 0)) != CUDA_SUCCESS) {
		d.cuMemRelease(out.vmm);
		out = GpuMemory{};
		return failed(failedCall, "cuMemAddressReserve", r);
	}
	out.mapped = size;
	if ((r = d.cuMemMap(out.ptr, size, 0, out.vmm, 0)) != CUDA_SUCCESS) {
		d.cuMemAddressFree(out.ptr, size);
		d.cuMemRelease(out.vmm);
		out = GpuMemory{};
		return failed(failedCall, "cuMemMap", r);
	}
	CUmemAccessDesc access{{CU_MEM_LOCATION_TYPE_DEVICE, device}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	if ((r = d.cuMemSetAccess(out.ptr, size, &access, 1)) != CUDA_SUCCESS) {
		freeGpuMemory(out);
		return failed(failedCall, "cuMemSetAccess", r);
	}
	return CUDA_SUCCESS;
}

}  // namespace

const char* memKindName(MemKind k) {
	switch (k) {
		case MemKind::Device: return "cuMemAlloc";
		case MemKind::PoolDefault: return "pool-default";
		case MemKind::Pool: return "pool";
		case MemKind::PoolFd: return "pool-posix-fd";
		case MemKind::Vmm: return "vmm";
		case MemKind::VmmFd: return "vmm-posix-fd";
	}
	return "?";
}

const char* memKindCalls(MemKind k) {
	switch (k) {
		case MemKind::Device: return "cuMemAlloc (cudaMalloc)";
		case MemKind::PoolDefault: return "cuMemAllocAsync from the default pool (cudaMallocAsync)";
		case MemKind::Pool: return "cuMemPoolCreate (handle type none) + cuMemAllocFromPoolAsync";
		case MemKind::PoolFd: return "cuMemPoolCreate (POSIX FD handle type) + cuMemAllocFromPoolAsync";
		case MemKind::Vmm: return "cuMemCreate (handle type none) + cuMemMap";
		case MemKind::VmmFd: return "cuMemCreate (POSIX FD handle type) + cuMemMap";
	}
	return "?";
}

CUresult allocGpuMemory(MemKind kind, int device, size_t bytes, GpuMemory& out, std::string& failedCall) {
	out = GpuMemory{};
	out.kind = kind;
	out.bytes = bytes;
	failedCall.clear();
	const CudaDriver& d = cudaDriver();
	if (!d.loaded) return failed(failedCall, "dlopen libcuda.so.1", kNotSupported);
	CUresult r = CUDA_SUCCESS;
	if (kind == MemKind::Device) {
		r = d.cuMemAlloc ? d.cuMemAlloc(&out.ptr, bytes) : kNotSupported;
		if (r != CUDA_SUCCESS) failedCall = "cuMemAlloc";
	} else if (kind == MemKind::Vmm || kind == MemKind::VmmFd) {
		r = allocVmm(kind, device, bytes, out, failedCall);
	} else {
		r = allocPool(kind, device, bytes, out, failedCall);
	}
	if (r != CUDA_SUCCESS) {
		MemKind keep = kind;
		out = GpuMemory{};
		out.kind = keep;
	}
	return r;
}

void freeGpuMemory(GpuMemory& m) {
	const CudaDriver& d = cudaDriver();
	if (m.ptr && d.loaded) {
		if (m.kind == MemKind::Device) {
			d.cuMemFree(m.ptr);
		} else if (m.kind == MemKind::Vmm || m.kind == MemKind::VmmFd) {
			d.cuMemUnmap(m.ptr, m.mapped);
			d.cuMemAddressFree(m.ptr, m.mapped);
		} else if (d.cuMemFreeAsync) {
			d.cuMemFreeAsync(m.ptr, nullptr);
			if (d.cuCtxSynchronize) d.cuCtxSynchronize();
		}
	}
	if (m.vmm && d.cuMemRelease) d.cuMemRelease(m.vmm);
	if (m.pool && d.cuMemPoolDestroy) d.cuMemPoolDestroy(m.pool);
	MemKind keep = m.kind;
	m = GpuMemory{};
	m.kind = keep;
}

PointerIpcAttrs queryPointerIpcAttrs(PointerGetAttributesFn getAttrs, CUdeviceptr p) {
	PointerIpcAttrs a;
	if (!getAttrs) return a;
	int attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
	               CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
	               CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE};
	constexpr unsigned n = sizeof attrs / sizeof attrs[0];
	uint64_t vals[n] = {};  // every slot 8 bytes: 32-bit attributes land in the low half (little-endian), the rest zero
	void* data[n];
	for (unsigned i = 0; i < n; ++i) data[i] = &vals[i];
	a.result = getAttrs(n, attrs, data, p);
	if (a.result != CUDA_SUCCESS) return a;
	a.memoryType = static_cast<unsigned>(vals[0]);
	a.managed = static_cast<unsigned>(vals[1]) != 0;
	a.legacyIpcCapable = static_cast<unsigned>(vals[2]) != 0;
	a.rangeStart = vals[3];
	a.rangeSize = vals[4];
	a.allowedHandleTypes = vals[5];
	a.fromPool = vals[6] != 0;
	return a;
}

std::string handleTypeNames(uint64_t mask) {
	if (mask == 0) return "none";
	std::string out;
	auto add = [&](const char* s) { if (!out.empty()) out += ","; out += s; };
	if (mask & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) add("posix_fd");
	if (mask & CU_MEM_HANDLE_TYPE_WIN32) add("win32");
	if (mask & CU_MEM_HANDLE_TYPE_WIN32_KMT) add("win32_kmt");
	if (mask & CU_MEM_HANDLE_TYPE_FABRIC) add("fabric");
	const uint64_t rest = mask & ~uint64_t(0xF);
	if (rest) {
		char buf[32];
		std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(rest));
		add(buf);
	}
	return out;
}

}  // namespace gpumpi
