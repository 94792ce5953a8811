// Core of the Node addon: find out which MPI / UCX / CUDA / NVML libraries this host can load and what they say about
// themselves, without spawning anything and without MPI_Init. Plain C++: never touches JavaScript values
// (binding.cc converts). Thread: probeHost() runs on a libuv threadpool thread; calls are serialised by a mutex.
// dlopen handles are deliberately NEVER closed: MPI libraries install destructors/atexit handlers and their own
// dlopened components, so unloading them inside the editor's process is not safe; a later probe() gets the same
// already-loaded copy back from dlopen (reference count), which is cheap.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace gpumpi::addon {

/** One dlopen attempt (ProbedLibrary in extension/shared/addonTypes.ts). */
struct LibraryProbe {
	std::string kind;  // "mpi" | "ucx" | "cuda" | "nvml"
	std::string soname;
	bool loaded = false;
	std::string path;
	std::string version;
	std::string error;
};

/** One NVLink (NvmlLink). */
struct NvmlLinkInfo {
	unsigned link = 0;
	bool active = false;
	std::string remotePciBusId;
};

/** One GPU as NVML sees it (NvmlDevice). */
struct NvmlDeviceInfo {
	unsigned index = 0;
	std::string name;
	std::string uuid;
	std::string pciBusId;
	std::vector<NvmlLinkInfo> nvlinks;
};

/** NVML section (NvmlProbe); absent when libnvidia-ml.so.1 did not load. */
struct NvmlInfo {
	std::string error;
	std::string driverVersion;
	int cudaDriverVersion = 0;
	std::vector<NvmlDeviceInfo> devices;
};

/** Whole result (ProbeResult). */
struct HostProbe {
	std::vector<LibraryProbe> libraries;
	std::optional<NvmlInfo> nvml;
	double elapsedMs = 0;
};

/** The sonames tried for each kind, in order (one home for the list). */
struct SonameList {
	const char* kind;
	const char* soname;
};
const std::vector<SonameList>& probedSonames();

/** Probe every library of probedSonames(). Never throws for a missing library (it is reported); may throw
 *  std::bad_alloc. */
HostProbe probeHost();

/** NVML half of the probe (nvmlProbe.cc): `lib` is filled in, `nvml` set when the library loaded. */
void probeNvml(LibraryProbe& lib, std::optional<NvmlInfo>& nvml);

/** dladdr() path of a resolved symbol, or "". */
std::string pathOfSymbol(void* symbol);

/** dlopen(soname, RTLD_NOW | RTLD_LOCAL); on failure fills lib.error with dlerror(). */
void* openLibrary(LibraryProbe& lib);

/** Trailing NULs / whitespace removed. */
std::string trimTrailing(std::string s);

}  // namespace gpumpi::addon
