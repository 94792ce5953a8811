#include "probe.hh"

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <mutex>

namespace gpumpi::addon {
namespace {

// Larger than every implementation's MPI_MAX_LIBRARY_VERSION_STRING (Open MPI 256, MPICH 8192).
constexpr int kVersionBuffer = 16384;

void probeMpi(LibraryProbe& lib) {
	void* h = openLibrary(lib);
	if (!h) return;
	using GetLibraryVersion = int (*)(char*, int*);
	void* sym = dlsym(h, "MPI_Get_library_version");
	if (!sym) {
		lib.path = pathOfSymbol(dlsym(h, "MPI_Init"));
		lib.error = "MPI_Get_library_version not found";
		return;
	}
	lib.path = pathOfSymbol(sym);
	std::string buf(kVersionBuffer, '\0');
	int len = 0;
	// Legal before MPI_Init since MPI-3.0 (section 8.1.1).
	int rc = reinterpret_cast<GetLibraryVersion>(sym)(&buf[0], &len);
	if (rc != 0) {
		lib.error = "MPI_Get_library_version returned " + std::to_string(rc);
		return;
	}
	if (len < 0 || len > kVersionBuffer) len = static_cast<int>(std::strlen(buf.c_str()));
	buf.resize(static_cast<size_t>(len));
	if (auto nul = buf.find('\0'); nul != std::string::npos) buf.resize(nul);  // Open MPI counts the NUL
	lib.version = trimTrailing(buf);
}

void probeUcx(LibraryProbe& lib) {
	void* h = openLibrary(lib);
	if (!h) return;
	void* sym = dlsym(h, "ucp_get_version_string");
	if (!sym) {
		lib.path = pathOfSymbol(dlsym(h, "ucp_init_version"));
		lib.error = "ucp_get_version_string not found";
		return;
	}
	lib.path = pathOfSymbol(sym);
	const char* v = reinterpret_cast<const char* (*)()>(sym)();
	lib.version = v ? trimTrailing(v) : "";
}

void probeCuda(LibraryProbe& lib) {
	void* h = openLibrary(lib);
	if (!h) return;
	void* sym = dlsym(h, "cuDriverGetVersion");
	if (!sym) {
		lib.error = "cuDriverGetVersion not found";
		return;
	}
	lib.path = pathOfSymbol(sym);
	int v = 0;
	int rc = reinterpret_cast<int (*)(int*)>(sym)(&v);  // needs no cuInit
	if (rc != 0) {
		lib.error = "cuDriverGetVersion returned CUresult " + std::to_string(rc);
		return;
	}
	lib.version = std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace

const std::vector<SonameList>& probedSonames() {
	static const std::vector<SonameList> list = {
	    {"mpi", "libmpi.so.40"},       // Open MPI 3.x-5.x
	    {"mpi", "libmpi.so.12"},       // MPICH ABI (Intel MPI, MVAPICH)
	    {"mpi", "libmpich.so.12"},     // MPICH
	    {"mpi", "libmpi_cray.so.12"},  // Cray MPICH
	    {"mpi", "libmpi.so"},          // Intel MPI / unversioned dev symlink
	    {"ucx", "libucp.so.0"},
	    {"cuda", "libcuda.so.1"},
	    {"nvml", "libnvidia-ml.so.1"},
	};
	return list;
}

std::string trimTrailing(std::string s) {
	while (!s.empty() && (s.back() == '\0' || s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) {
		s.pop_back();
	}
	return s;
}

std::string pathOfSymbol(void* symbol) {
	if (!symbol) return "";
	Dl_info info{};
	if (dladdr(symbol, &info) && info.dli_fname) return info.dli_fname;
	return "";
}

void* openLibrary(LibraryProbe& lib) {
	dlerror();
	void* h = dlopen(lib.soname.c_str(), RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char* e = dlerror();
		lib.error = e ? e : "dlopen failed";
		return nullptr;
	}
	lib.loaded = true;
	return h;
}

HostProbe probeHost() {
	static std::mutex serialise;  // MPI and NVML state is process-wide: one probe at a time
	std::lock_guard<std::mutex> lock(serialise);
	const auto start = std::chrono::steady_clock::now();
	HostProbe out;
	for (const auto& entry : probedSonames()) {
		LibraryProbe lib;
		lib.kind = entry.kind;
		lib.soname = entry.soname;
		if (lib.kind == "mpi") probeMpi(lib);
		else if (lib.kind == "ucx") probeUcx(lib);
		else if (lib.kind == "cuda") probeCuda(lib);
		else if (lib.kind == "nvml") probeNvml(lib, out.nvml);
		out.libraries.push_back(std::move(lib));
	}
	out.elapsedMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
	return out;
}

}  // namespace gpumpi::addon
