#include "inspectIpcMem.hh"

#include <cstdlib>
#include <cstring>

#include "cudaDriver.hh"
#include "gpuMemory.hh"

namespace gpumpi::engine {
namespace {

constexpr size_t kProbeBytes = 2u << 20;  // one VMM granule on current GPUs; pools round up themselves

int deviceAttr(const CudaDriver& d, int attr, int device) {
	CUdevice dev = 0;
	int v = -1;
	if (!d.cuDeviceGet || !d.cuDeviceGetAttribute || d.cuDeviceGet(&dev, device) != CUDA_SUCCESS) return -1;
	return d.cuDeviceGetAttribute(&v, attr, dev) == CUDA_SUCCESS ? v : -1;
}

}  // namespace

IpcMemReport probeIpcMemory(int device) {
	IpcMemReport r;
	const char* env = std::getenv("GPUMPI_INSPECT_IPC_MEM");
	if (env && std::strcmp(env, "0") == 0) { r.skipped = "GPUMPI_INSPECT_IPC_MEM=0"; return r; }
	const CudaDriver& d = cudaDriver();
	if (device < 0 || !d.loaded) { r.skipped = "no CUDA device selected in this rank"; return r; }
	r.probed = true;
	r.bytes = kProbeBytes;
	r.poolsSupported = deviceAttr(d, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device);
	r.vmmSupported = deviceAttr(d, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device);
	r.posixFdSupported = deviceAttr(d, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, device);
	r.poolHandleTypes = deviceAttr(d, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, device);
	for (MemKind k : kAllMemKinds) {
		IpcMemProbe p;
		p.kind = memKindName(k);
		p.calls = memKindCalls(k);
		GpuMemory m;
		std::string call;
		CUresult a = allocGpuMemory(k, device, kProbeBytes, m, call);
		if (a != CUDA_SUCCESS) {
			p.allocError = call + ": " + cudaErrorText(a);
			r.probes.push_back(p);
			continue;
		}
		p.allocated = true;
		const PointerIpcAttrs at = queryPointerIpcAttrs(d.cuPointerGetAttributes, m.ptr);
		p.attrResult = at.result;
		p.legacyIpcCapable = at.legacyIpcCapable;
		p.allowedHandleTypes = at.allowedHandleTypes;
		p.fromPool = at.fromPool;
		if (d.cuIpcGetMemHandle) {
			CUipcMemHandle h{};
			p.ipcGetResult = d.cuIpcGetMemHandle(&h, m.ptr);  // a handle that is never opened needs no release
			if (p.ipcGetResult != CUDA_SUCCESS) p.ipcGetError = cudaErrorText(p.ipcGetResult);
		}
		freeGpuMemory(m);
		r.probes.push_back(p);
	}
	return r;
}

void writeIpcMemJson(JsonWriter& w, const IpcMemReport& r) {
	w.beginObject();
	w.key("probed").value(r.probed);
	w.key("skipped").value(r.skipped);
	w.key("bytes").value(r.bytes);
	w.key("device").beginObject();
	w.key("memory_pools_supported").value(r.poolsSupported);
	w.key("vmm_supported").value(r.vmmSupported);
	w.key("posix_fd_supported").value(r.posixFdSupported);
	w.key("mempool_supported_handle_types").value(r.poolHandleTypes);
	w.endObject();
	w.key("allocations").beginArray();
	for (const auto& p : r.probes) {
		w.beginObject();
		w.key("kind").value(p.kind);
		w.key("calls").value(p.calls);
		w.key("allocated").value(p.allocated);
		w.key("alloc_error").value(p.allocError);
		if (p.allocated && p.attrResult == CUDA_SUCCESS) {
			w.key("legacy_ipc_capable").value(p.legacyIpcCapable);
			w.key("allowed_handle_types").value(handleTypeNames(p.allowedHandleTypes));
			w.key("allowed_handle_types_mask").value(p.allowedHandleTypes);
			w.key("from_pool").value(p.fromPool);
		} else {
			w.key("legacy_ipc_capable").null();
			w.key("allowed_handle_types").null();
			w.key("allowed_handle_types_mask").null();
			w.key("from_pool").null();
		}
		w.key("attributes_result").value(p.attrResult);
		w.key("ipc_get_mem_handle").value(p.ipcGetResult < 0 ? "not tried" : p.ipcGetResult == CUDA_SUCCESS ? "ok" : p.ipcGetError);
		w.endObject();
	}
	w.endArray();
	w.endObject();
}

}  // namespace gpumpi::engine
