#include "inspectCuda.hh"

#include <cstdio>

#include "cudaDriver.hh"

namespace gpumpi::engine {
namespace {

void addError(CudaReport& r, const std::string& what) {
	if (!r.error.empty()) r.error += "; ";
	r.error += what;
}

// Records a failed call as "call: CUDA_ERROR_X: text"; returns true on success.
bool check(CudaReport& r, CUresult res, const char* call) {
	if (res == CUDA_SUCCESS) return true;
	addError(r, std::string(call) + ": " + cudaErrorText(res));
	return false;
}

bool missing(CudaReport& r, const void* fn, const char* name) {
	if (fn) return false;
	addError(r, std::string(name) + " not found in the CUDA driver library");
	return true;
}

CudaDeviceInfo describeDevice(CudaReport& r, const CudaDriver& d, int ordinal, CUdevice dev) {
	CudaDeviceInfo info;
	info.ordinal = ordinal;
	char buf[256] = {};
	if (d.cuDeviceGetName && check(r, d.cuDeviceGetName(buf, sizeof buf - 1, dev), "cuDeviceGetName")) info.name = buf;
	char bus[64] = {};
	if (d.cuDeviceGetPCIBusId && check(r, d.cuDeviceGetPCIBusId(bus, sizeof bus - 1, dev), "cuDeviceGetPCIBusId")) {
		info.pciBusId = bus;
	}
	unsigned char uuid[16] = {};
	if (d.cuDeviceGetUuid && check(r, d.cuDeviceGetUuid(reinterpret_cast<char*>(uuid), dev), "cuDeviceGetUuid")) {
		info.uuid = formatGpuUuid(uuid);
	}
	size_t mem = 0;
	if (d.cuDeviceTotalMem && check(r, d.cuDeviceTotalMem(&mem, dev), "cuDeviceTotalMem")) info.totalMemBytes = mem;
	int major = 0, minor = 0;
	if (d.cuDeviceGetAttribute &&
	    check(r, d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute(major)") &&
	    check(r, d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute(minor)")) {
		info.computeCapability = std::to_string(major) + "." + std::to_string(minor);
	}
	int mode = -1;
	if (d.cuDeviceGetAttribute && check(r, d.cuDeviceGetAttribute(&mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, dev), "cuDeviceGetAttribute(compute mode)")) {
		// CUcomputemode in cuda.h: 0 default, 1 exclusive thread (removed in CUDA 8+), 2 prohibited, 3 exclusive process.
		static const char* const names[] = {"default", "exclusive_thread", "prohibited", "exclusive_process"};
		info.computeMode = mode >= 0 && mode <= 3 ? names[mode] : "unknown " + std::to_string(mode);
	}
	// Not `check`ed: a driver that does not know the attribute is "unknown", not an error of this rank.
	int v = 0;
	if (d.cuDeviceGetAttribute && d.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, dev) == CUDA_SUCCESS) info.gpuDirectRdma = v ? 1 : 0;
	if (d.cuDeviceGetAttribute && d.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev) == CUDA_SUCCESS) info.dmaBuf = v ? 1 : 0;
	return info;
}

}  // namespace

std::string formatGpuUuid(const unsigned char b[16]) {
	char out[64];
	std::snprintf(out, sizeof out, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
	              b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
	return out;
}

CudaReport probeAndSelectCuda(int localRank) {
	CudaReport r;
	const CudaDriver& d = cudaDriver();
	r.driverLoaded = d.loaded;
	r.library = d.loaded ? d.library : d.error;
	if (!d.loaded) {
		r.error = d.error.empty() ? "libcuda.so.1 could not be loaded" : d.error;
		return r;
	}
	if (d.cuDriverGetVersion) check(r, d.cuDriverGetVersion(&r.driverVersion), "cuDriverGetVersion");
	r.initResult = d.cuInit(0);
	if (!check(r, r.initResult, "cuInit")) return r;
	if (!check(r, d.cuDeviceGetCount(&r.deviceCount), "cuDeviceGetCount") || r.deviceCount <= 0) {
		if (r.deviceCount <= 0 && r.error.empty()) addError(r, "cuDeviceGetCount: no CUDA devices");
		r.deviceCount = r.deviceCount < 0 ? 0 : r.deviceCount;
		return r;
	}
	if (missing(r, reinterpret_cast<const void*>(d.cuDeviceGet), "cuDeviceGet")) return r;
	std::vector<CUdevice> handles;
	for (int i = 0; i < r.deviceCount; ++i) {
		CUdevice dev = 0;
		if (!check(r, d.cuDeviceGet(&dev, i), "cuDeviceGet")) return r;
		handles.push_back(dev);
		r.devices.push_back(describeDevice(r, d, i, dev));
	}
	if (r.deviceCount >= 2 && d.cuDeviceCanAccessPeer) {
		r.p2p.assign(r.deviceCount, std::vector<bool>(r.deviceCount, false));
		for (int i = 0; i < r.deviceCount; ++i) {
			for (int j = 0; j < r.deviceCount; ++j) {
				if (i == j) { r.p2p[i][j] = true; continue; }
				int can = 0;
				if (check(r, d.cuDeviceCanAccessPeer(&can, handles[i], handles[j]), "cuDeviceCanAccessPeer")) r.p2p[i][j] = can != 0;
			}
		}
	}
	const int sel = (localRank < 0 ? 0 : localRank) % r.deviceCount;
	if (missing(r, reinterpret_cast<const void*>(d.cuDevicePrimaryCtxRetain), "cuDevicePrimaryCtxRetain") ||
	    missing(r, reinterpret_cast<const void*>(d.cuCtxSetCurrent), "cuCtxSetCurrent")) {
		return r;
	}
	CUcontext ctx = nullptr;
	if (!check(r, d.cuDevicePrimaryCtxRetain(&ctx, handles[sel]), "cuDevicePrimaryCtxRetain")) return r;
	r.selectedDevice = sel;
	if (!check(r, d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")) return r;
	CUcontext current = nullptr;
	if (d.cuCtxGetCurrent && check(r, d.cuCtxGetCurrent(&current), "cuCtxGetCurrent")) {
		r.initialisedBeforeMpiInit = current != nullptr;
	}
	return r;
}

void releaseCuda(const CudaReport& report) {
	const CudaDriver& d = cudaDriver();
	if (report.selectedDevice < 0 || !d.loaded || !d.cuDeviceGet || !d.cuDevicePrimaryCtxRelease) return;
	CUdevice dev = 0;
	if (d.cuDeviceGet(&dev, report.selectedDevice) != CUDA_SUCCESS) return;
	if (d.cuCtxSetCurrent) d.cuCtxSetCurrent(nullptr);
	d.cuDevicePrimaryCtxRelease(dev);  // result ignored: the process is about to exit
}

void writeCudaJson(JsonWriter& w, const CudaReport& r) {
	w.beginObject();
	w.key("driver_loaded").value(r.driverLoaded);
	w.key("library").value(r.library);
	w.key("error").value(r.error);
	w.key("driver_version").value(r.driverVersion);
	w.key("init_result").value(r.initResult);
	w.key("device_count").value(r.deviceCount);
	w.key("devices").beginArray();
	for (const auto& dev : r.devices) {
		w.beginObject();
		w.key("ordinal").value(dev.ordinal);
		w.key("name").value(dev.name);
		w.key("pci_bus_id").value(dev.pciBusId);
		w.key("uuid").value(dev.uuid);
		w.key("total_mem_bytes").value(dev.totalMemBytes);
		w.key("compute_capability").value(dev.computeCapability);
		w.key("compute_mode").value(dev.computeMode);
		w.key("gpu_direct_rdma_supported");
		if (dev.gpuDirectRdma < 0) w.null(); else w.value(dev.gpuDirectRdma == 1);
		w.key("dma_buf_supported");
		if (dev.dmaBuf < 0) w.null(); else w.value(dev.dmaBuf == 1);
		w.endObject();
	}
	w.endArray();
	w.key("p2p").beginArray();
	for (const auto& row : r.p2p) {
		w.beginArray();
		for (bool b : row) w.value(b);
		w.endArray();
	}
	w.endArray();
	w.key("selected_device").value(r.selectedDevice);
	w.key("initialised_before_mpi_init").value(r.initialisedBeforeMpiInit);
	w.endObject();
}

}  // namespace gpumpi::engine
