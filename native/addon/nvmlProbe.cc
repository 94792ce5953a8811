// NVML through dlopen (no nvml.h here): only the types and entry points the probe needs, laid out as in nvml.h.
#include <dlfcn.h>

#include <cstddef>
#include <cstring>

#include "probe.hh"

namespace gpumpi::addon {
namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr unsigned NVML_NVLINK_MAX_LINKS = 18;

struct nvmlPciInfo_t {
	char busIdLegacy[16];
	unsigned domain;
	unsigned bus;
	unsigned device;
	unsigned pciDeviceId;
	unsigned pciSubSystemId;
	char busId[32];
};
static_assert(offsetof(nvmlPciInfo_t, busId) == 36 && sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t layout (nvml.h)");

struct Nvml {
	nvmlReturn_t (*init)() = nullptr;
	nvmlReturn_t (*shutdown)() = nullptr;
	const char* (*errorString)(nvmlReturn_t) = nullptr;
	nvmlReturn_t (*driverVersion)(char*, unsigned) = nullptr;
	nvmlReturn_t (*cudaDriverVersion)(int*) = nullptr;
	nvmlReturn_t (*count)(unsigned*) = nullptr;
	nvmlReturn_t (*handleByIndex)(unsigned, nvmlDevice_t*) = nullptr;
	nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
	nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
	nvmlReturn_t (*pciInfo)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
	nvmlReturn_t (*linkState)(nvmlDevice_t, unsigned, int*) = nullptr;
	nvmlReturn_t (*remotePci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
};

template <typename F>
void bind(void* h, F& fn, const char* name, const char* fallback = nullptr) {
	void* p = dlsym(h, name);
	if (!p && fallback) p = dlsym(h, fallback);
	fn = reinterpret_cast<F>(p);
}

std::string errorText(const Nvml& n, const char* call, nvmlReturn_t rc) {
	const char* s = n.errorString ? n.errorString(rc) : nullptr;
	return std::string(call) + ": " + (s ? s : "nvmlReturn_t") + " (" + std::to_string(rc) + ")";
}

void appendError(NvmlInfo& info, const std::string& e) {
	if (!info.error.empty()) info.error += "; ";
	info.error += e;
}

NvmlDeviceInfo describe(const Nvml& n, NvmlInfo& info, unsigned index, nvmlDevice_t dev) {
	NvmlDeviceInfo d;
	d.index = index;
	char buf[128] = {};
	if (n.name && n.name(dev, buf, sizeof buf - 1) == NVML_SUCCESS) d.name = buf;
	std::memset(buf, 0, sizeof buf);
	if (n.uuid && n.uuid(dev, buf, sizeof buf - 1) == NVML_SUCCESS) d.uuid = buf;
	nvmlPciInfo_t pci{};
	if (n.pciInfo) {
		nvmlReturn_t rc = n.pciInfo(dev, &pci);
		if (rc == NVML_SUCCESS) d.pciBusId = std::string(pci.busId, strnlen(pci.busId, sizeof pci.busId));
		else appendError(info, errorText(n, "nvmlDeviceGetPciInfo", rc));
	}
	for (unsigned link = 0; n.linkState && link < NVML_NVLINK_MAX_LINKS; ++link) {
		int active = 0;
		if (n.linkState(dev, link, &active) != NVML_SUCCESS) continue;  // NOT_SUPPORTED on PCIe-only GPUs / absent links
		NvmlLinkInfo l;
		l.link = link;
		l.active = active != 0;
		nvmlPciInfo_t remote{};
		if (n.remotePci && n.remotePci(dev, link, &remote) == NVML_SUCCESS) {
			l.remotePciBusId = std::string(remote.busId, strnlen(remote.busId, sizeof remote.busId));
		}
		d.nvlinks.push_back(std::move(l));
	}
	return d;
}

}  // namespace

void probeNvml(LibraryProbe& lib, std::optional<NvmlInfo>& nvml) {
	void* h = openLibrary(lib);
	if (!h) return;
	Nvml n;
	bind(h, n.init, "nvmlInit_v2", "nvmlInit");
	bind(h, n.shutdown, "nvmlShutdown");
	bind(h, n.errorString, "nvmlErrorString");
	bind(h, n.driverVersion, "nvmlSystemGetDriverVersion");
	bind(h, n.cudaDriverVersion, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion");
	bind(h, n.count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
	bind(h, n.handleByIndex, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
	bind(h, n.name, "nvmlDeviceGetName");
	bind(h, n.uuid, "nvmlDeviceGetUUID");
	bind(h, n.pciInfo, "nvmlDeviceGetPciInfo_v3");
	bind(h, n.linkState, "nvmlDeviceGetNvLinkState");
	bind(h, n.remotePci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
	NvmlInfo info;
	lib.path = pathOfSymbol(reinterpret_cast<void*>(n.init));
	if (!n.init || !n.shutdown) {
		info.error = "nvmlInit_v2/nvmlShutdown not found";
		lib.error = info.error;
		nvml = std::move(info);
		return;
	}
	nvmlReturn_t rc = n.init();
	if (rc != NVML_SUCCESS) {
		info.error = errorText(n, "nvmlInit_v2", rc);
		lib.error = info.error;
		nvml = std::move(info);
		return;
	}
	char ver[96] = {};
	if (n.driverVersion && (rc = n.driverVersion(ver, sizeof ver - 1)) == NVML_SUCCESS) info.driverVersion = ver;
	else if (n.driverVersion) appendError(info, errorText(n, "nvmlSystemGetDriverVersion", rc));
	if (n.cudaDriverVersion && (rc = n.cudaDriverVersion(&info.cudaDriverVersion)) != NVML_SUCCESS) {
		appendError(info, errorText(n, "nvmlSystemGetCudaDriverVersion", rc));
	}
	unsigned count = 0;
	if (n.count && n.handleByIndex && (rc = n.count(&count)) == NVML_SUCCESS) {
		for (unsigned i = 0; i < count; ++i) {
			nvmlDevice_t dev = nullptr;
			if ((rc = n.handleByIndex(i, &dev)) != NVML_SUCCESS) {
				appendError(info, errorText(n, "nvmlDeviceGetHandleByIndex", rc));
				continue;
			}
			info.devices.push_back(describe(n, info, i, dev));
		}
	} else if (n.count) {
		appendError(info, errorText(n, "nvmlDeviceGetCount", rc));
	}
	rc = n.shutdown();
	if (rc != NVML_SUCCESS) appendError(info, errorText(n, "nvmlShutdown", rc));
	lib.version = info.driverVersion;
	nvml = std::move(info);
}

}  // namespace gpumpi::addon
