// Buffer classes with a range cache, and the CUDA entry points the guard interposes to keep it true: IPC imports
// (runtime and driver API, and driver entry points handed out by cuGetProcAddress), frees, host registration.
// The driver is never loaded by the guard while the program has not loaded it: a process without libcuda has only
// host memory, and classifying it must cost no dlopen and no driver query in steady state.
#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "cudaDriver.hh"
#include "gpuMemory.hh"
#include "guardState.hh"

namespace gpumpi::guard {
namespace {

struct Range { uintptr_t end; Cls cls; };

struct Cache {
	std::map<uintptr_t, Range> known;      // driver-known ranges (and IPC imports), by start
	std::map<uintptr_t, uintptr_t> plain;  // page ranges the driver does not know (or no driver): host
	uintptr_t lastStart = 0, lastEnd = 0;  // the last hit (either map)
	Cls lastCls = kHost;
	bool ready = false;                    // cuPointerGetAttributes usable
	unsigned missesSinceCheck = 1u << 30;  // re-check "is libcuda loaded" every 256 misses
	std::atomic<bool> cudaSeen{false};     // an interposed CUDA call ran: re-check at the next miss
	CUresult (*getAttrs)(unsigned, int*, void**, CUdeviceptr) = nullptr;
};
Cache& cache() {
	static Cache* c = new Cache();
	return *c;
}

constexpr uintptr_t kPage = 4096;
constexpr size_t kMaxPlain = 65536;

const char* libcudaName() {
	const char* o = std::getenv("GPUMPI_LIBCUDA");
	return o && *o ? o : "libcuda.so.1";
}

/** Whether the driver can be asked; loads our table only once the program itself has loaded libcuda. */
bool driverReady(Cache& c) {
	if (c.ready) return true;
	if (!c.cudaSeen.load(std::memory_order_relaxed) && ++c.missesSinceCheck < 256) return false;
	c.missesSinceCheck = 0;
	c.cudaSeen.store(false, std::memory_order_relaxed);
	void* h = dlopen(libcudaName(), RTLD_NOW | RTLD_NOLOAD);
	if (!h) return false;
	const CudaDriver& d = cudaDriver();
	c.getAttrs = reinterpret_cast<decltype(c.getAttrs)>(dlsym(h, "cuPointerGetAttributes"));
	dlclose(h);
	if (!d.loaded || !c.getAttrs || !d.cuInit || d.cuInit(0) != CUDA_SUCCESS) return false;
	c.ready = true;
	c.plain.clear();  // written while there was no driver to ask
	c.lastEnd = 0;
	return true;
}

Cls query(Cache& c, uintptr_t p, uintptr_t* start, uintptr_t* end) {
	st().classifyQueries++;
	const PointerIpcAttrs a = queryPointerIpcAttrs(c.getAttrs, CUdeviceptr(p));  // common/gpuMemory: one home
	if (a.result != CUDA_SUCCESS || a.memoryType == 0) return kHost;  // not known to the driver
	*start = uintptr_t(a.rangeStart);
	*end = uintptr_t(a.rangeStart + a.rangeSize);
	if (a.managed) return kManaged;
	if (a.memoryType == unsigned(CU_MEMORYTYPE_HOST)) return kPinnedHost;
	if (a.fromPool) return kPool;
	if (!a.legacyIpcCapable) {
		// not legacy-IPC capable, not from a pool: VMM memory has an allocation handle; a legacy IPC import has none
		// (CUDA 13, driver 580, H100: cuMemRetainAllocationHandle 0 for cuMemCreate+cuMemMap, 1 for a
		// cudaIpcOpenMemHandle import and for cudaMalloc memory): so imports are seen however the program opened them
		// (static cudart, a driver entry point the guard never saw)
		const CudaDriver& d = cudaDriver();
		CUmemGenericAllocationHandle h = 0;
		if (!d.cuMemRetainAllocationHandle || !d.cuMemRelease) return kVmm;
		if (d.cuMemRetainAllocationHandle(&h, reinterpret_cast<void*>(p)) != CUDA_SUCCESS) return kIpcImport;
		d.cuMemRelease(h);
		return kVmm;
	}
	return kDevice;
}

void dropRange(uintptr_t p) {
	Lock l;
	Cache& c = cache();
	auto it = c.known.upper_bound(p);
	if (it != c.known.begin()) {
		--it;
		if (p < it->second.end) c.known.erase(it);
	}
	c.lastEnd = 0;
	c.cudaSeen.store(true, std::memory_order_relaxed);
	ucxForget(p);
}

void hostChanged() {
	Lock l;
	Cache& c = cache();
	c.plain.clear();
	c.lastEnd = 0;
	c.cudaSeen.store(true, std::memory_order_relaxed);
}

void addImport(CUdeviceptr base) {
	const CudaDriver& d = cudaDriver();
	CUdeviceptr b = base;
	size_t size = 0;
	if (!d.cuMemGetAddressRange || d.cuMemGetAddressRange(&b, &size, base) != CUDA_SUCCESS || size == 0) { b = base; size = 1; }
	Lock l;
	Cache& c = cache();
	c.known[uintptr_t(b)] = Range{uintptr_t(b) + size, kIpcImport};
	ucxNewRange(uintptr_t(b), uintptr_t(b) + size, kIpcImport);  // before the program's first transfer: a no-op
	c.lastEnd = 0;
	c.cudaSeen.store(true, std::memory_order_relaxed);
}

/** The real `name`: the next definition in the global scope, or, when the library that has it sits in a local
 *  scope only (libcuda loaded RTLD_LOCAL by cudart or by UCX's module, whose calls still reach the guard's exported
 *  wrapper through the global scope), that library's own definition, found among the loaded objects. */
void* findReal(const char* name, bool cudart) {
	if (void* p = dlsym(RTLD_NEXT, name)) return p;
	struct Find { bool cudart; const char* fake; std::string path; } f{cudart, std::getenv("GPUMPI_LIBCUDA"), ""};
	dl_iterate_phdr([](dl_phdr_info* info, size_t, void* data) -> int {
		auto* f = static_cast<Find*>(data);
		const char* full = info->dlpi_name ? info->dlpi_name : "";
		const char* base = std::strrchr(full, '/') ? std::strrchr(full, '/') + 1 : full;
		bool match = f->cudart ? std::strncmp(base, "libcudart.so", 12) == 0
		                       : std::strncmp(base, "libcuda.so", 10) == 0 || (f->fake && *f->fake && std::strcmp(full, f->fake) == 0);
		if (match) { f->path = full; return 1; }
		return 0;
	}, &f);
	if (f.path.empty()) return nullptr;
	void* h = dlopen(f.path.c_str(), RTLD_NOW | RTLD_NOLOAD);
	if (!h) return nullptr;
	void* p = dlsym(h, name);  // a handle's own scope: the library and its dependencies, never the guard
	dlclose(h);
	return p;
}

/** A real entry point, resolved at first use and again while it is missing. */
template <typename F>
struct Real {
	const char* name;
	bool cudart;
	std::atomic<F> fn{nullptr};
	F get() {
		F f = fn.load(std::memory_order_relaxed);
		if (!f) {
			f = reinterpret_cast<F>(findReal(name, cudart));
			fn.store(f, std::memory_order_relaxed);
		}
		return f;
	}
};

}  // namespace

Cls classify(const void* ptr, uint64_t bytes) {
	ucxFirstBuffer();  // once: before the program's first transfer (guardUcx.cc)
	Cache& c = cache();
	uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
	if (p >= c.lastStart && p < c.lastEnd) { st().cacheHits++; return c.lastCls; }
	auto it = c.known.upper_bound(p);
	if (it != c.known.begin() && p < std::prev(it)->second.end) {
		--it;
		st().cacheHits++;
		c.lastStart = it->first; c.lastEnd = it->second.end; c.lastCls = it->second.cls;
		return c.lastCls;
	}
	auto pt = c.plain.upper_bound(p);
	if (pt != c.plain.begin() && p < std::prev(pt)->second) {
		--pt;
		st().cacheHits++;
		c.lastStart = pt->first; c.lastEnd = pt->second; c.lastCls = kHost;
		return kHost;
	}
	uintptr_t start = 0, end = 0;
	Cls cls = driverReady(c) ? query(c, p, &start, &end) : kHost;
	if (cls == kHost) {
		start = p & ~(kPage - 1);
		end = (p + (bytes ? bytes : 1) + kPage - 1) & ~(kPage - 1);
		if (c.plain.size() >= kMaxPlain) c.plain.clear();
		c.plain[start] = end;
	} else {
		if (end <= p) { start = p; end = p + (bytes ? bytes : 1); }
		c.known[start] = Range{end, cls};
		ucxNewRange(start, end, cls);
	}
	c.lastStart = start; c.lastEnd = end; c.lastCls = cls;
	return cls;
}

bool ipcImportRange(const void* ptr, uintptr_t* base, size_t* size) {
	Cache& c = cache();
	uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
	auto it = c.known.upper_bound(p);
	if (it == c.known.begin()) return false;
	--it;
	if (p >= it->second.end || it->second.cls != kIpcImport) return false;
	*base = it->first;
	*size = it->second.end - it->first;
	return true;
}

std::string cudaDetail(bool* available) {
	Cache& c = cache();
	*available = c.ready;
	if (c.ready) return "driver " + cudaDriver().library + " (loaded by the program)";
	void* h = dlopen(libcudaName(), RTLD_NOW | RTLD_NOLOAD);
	if (h) {
		dlclose(h);
		return "the program loaded libcuda but no buffer needed a query";
	}
	return std::string(libcudaName()) + " was not loaded by the program: every buffer is host memory";
}

bool copyDevice(void* dst, const void* src, size_t bytes, std::string* why) {
	const CudaDriver& d = cudaDriver();
	if (!d.cuMemcpyDtoD) { *why = "no cuMemcpyDtoD"; return false; }
	CUresult r = d.cuMemcpyDtoD(CUdeviceptr(reinterpret_cast<uintptr_t>(dst)), CUdeviceptr(reinterpret_cast<uintptr_t>(src)), bytes);
	if (r != CUDA_SUCCESS) { *why = "cuMemcpyDtoD: " + cudaErrorText(r); return false; }
	// a device-to-device copy may still run when cuMemcpyDtoD returns (CUDA's "API synchronization behavior"): wait
	// for it on the legacy stream it was queued on, before MPI reads the bounce buffer or the program the import
	if (d.cuStreamSynchronize && (r = d.cuStreamSynchronize(nullptr)) != CUDA_SUCCESS) { *why = "cuStreamSynchronize: " + cudaErrorText(r); return false; }
	return true;
}

namespace {
struct Bounce { void* p; size_t size; bool busy; };
std::vector<Bounce>& bounces() {
	static auto* v = new std::vector<Bounce>();
	return *v;
}
}  // namespace

void* bounceAcquire(size_t bytes, std::string* why) {
	for (Bounce& b : bounces()) {
		if (!b.busy && b.size >= bytes) { b.busy = true; return b.p; }
	}
	const CudaDriver& d = cudaDriver();
	if (!d.cuMemAlloc) { *why = "no CUDA driver"; return nullptr; }
	size_t size = 1 << 16;
	while (size < bytes) size <<= 1;
	CUdeviceptr p = 0;
	CUresult r = d.cuMemAlloc(&p, size);
	if (r != CUDA_SUCCESS) { *why = "cuMemAlloc(" + std::to_string(size) + "): " + cudaErrorText(r); return nullptr; }
	void* ptr = reinterpret_cast<void*>(uintptr_t(p));
	bounces().push_back(Bounce{ptr, size, true});
	return ptr;
}

void bounceRelease(void* p) {
	for (Bounce& b : bounces()) {
		if (b.p == p) { b.busy = false; return; }
	}
}

void bounceFreeAll() {
	const CudaDriver& d = cudaDriver();
	for (Bounce& b : bounces()) {
		if (d.cuMemFree) d.cuMemFree(CUdeviceptr(reinterpret_cast<uintptr_t>(b.p)));
	}
	bounces().clear();
}

}  // namespace gpumpi::guard

using namespace gpumpi;
using namespace gpumpi::guard;

// ---- runtime API (libcudart.so linked dynamically; with a statically linked cudart these are not reached, and an
// import is classified from the driver instead: query() above) ----
struct GuardCudaIpcHandle { char reserved[64]; };
constexpr int kCudartUnknown = 999;  // cudaErrorUnknown: the real function could not be found

GUARD_API int cudaIpcOpenMemHandle(void** devPtr, GuardCudaIpcHandle handle, unsigned flags) {
	static Real<int (*)(void**, GuardCudaIpcHandle, unsigned)> realFn{"cudaIpcOpenMemHandle", true};
	auto real = realFn.get();
	if (!real) return kCudartUnknown;
	int rc = real(devPtr, handle, flags);
	if (rc == 0 && devPtr && *devPtr) addImport(CUdeviceptr(reinterpret_cast<uintptr_t>(*devPtr)));
	return rc;
}
GUARD_API int cudaIpcCloseMemHandle(void* devPtr) {
	static Real<int (*)(void*)> realFn{"cudaIpcCloseMemHandle", true};
	auto real = realFn.get();
	dropRange(reinterpret_cast<uintptr_t>(devPtr));
	return real ? real(devPtr) : kCudartUnknown;
}
GUARD_API int cudaFree(void* p) {
	static Real<int (*)(void*)> realFn{"cudaFree", true};
	auto real = realFn.get();
	if (p) dropRange(reinterpret_cast<uintptr_t>(p));
	return real ? real(p) : kCudartUnknown;
}
GUARD_API int cudaFreeHost(void* p) {
	static Real<int (*)(void*)> realFn{"cudaFreeHost", true};
	auto real = realFn.get();
	if (p) dropRange(reinterpret_cast<uintptr_t>(p));
	return real ? real(p) : kCudartUnknown;
}
GUARD_API int cudaFreeAsync(void* p, void* stream) {
	static Real<int (*)(void*, void*)> realFn{"cudaFreeAsync", true};
	auto real = realFn.get();
	if (p) dropRange(reinterpret_cast<uintptr_t>(p));
	return real ? real(p, stream) : kCudartUnknown;
}
GUARD_API int cudaHostRegister(void* p, size_t size, unsigned flags) {
	static Real<int (*)(void*, size_t, unsigned)> realFn{"cudaHostRegister", true};
	auto real = realFn.get();
	int rc = real ? real(p, size, flags) : kCudartUnknown;
	hostChanged();
	return rc;
}
GUARD_API int cudaHostUnregister(void* p) {
	static Real<int (*)(void*)> realFn{"cudaHostUnregister", true};
	auto real = realFn.get();
	dropRange(reinterpret_cast<uintptr_t>(p));
	return real ? real(p) : kCudartUnknown;
}

// ---- driver API (libcuda.so.1 linked, or resolved through the global scope) ----
namespace {
using IpcOpenFn = CUresult (*)(CUdeviceptr*, CUipcMemHandle, unsigned);
using PtrFn = CUresult (*)(CUdeviceptr);
constexpr CUresult kCuNotFound = 500;  // CUDA_ERROR_NOT_FOUND

CUresult openVia(IpcOpenFn real, CUdeviceptr* p, CUipcMemHandle h, unsigned flags) {
	if (!real) return kCuNotFound;
	CUresult r = real(p, h, flags);
	if (r == CUDA_SUCCESS && p && *p) addImport(*p);
	return r;
}
CUresult closeVia(PtrFn real, CUdeviceptr p) {
	dropRange(uintptr_t(p));
	return real ? real(p) : kCuNotFound;
}

// Entry points handed out by cuGetProcAddress: the real pointer it returned, called by our trampoline.
std::atomic<IpcOpenFn> gpaOpen{nullptr};
std::atomic<PtrFn> gpaClose{nullptr}, gpaFree{nullptr};
CUresult gpaOpenTramp(CUdeviceptr* p, CUipcMemHandle h, unsigned f) { return openVia(gpaOpen.load(), p, h, f); }
CUresult gpaCloseTramp(CUdeviceptr p) { return closeVia(gpaClose.load(), p); }
CUresult gpaFreeTramp(CUdeviceptr p) { return closeVia(gpaFree.load(), p); }

/** Swaps a returned pointer for our trampoline when the slot is free or already holds the same real function. */
template <typename F>
void swapIn(std::atomic<F>& slot, F tramp, void** pfn) {
	F real = reinterpret_cast<F>(*pfn);
	if (!real || real == tramp) return;
	F expected = nullptr;
	if (slot.compare_exchange_strong(expected, real) || expected == real) *pfn = reinterpret_cast<void*>(tramp);
}

void afterGetProc(const char* symbol, void** pfn) {
	if (!symbol || !pfn || !*pfn) return;
	if (std::strcmp(symbol, "cuIpcOpenMemHandle") == 0) swapIn(gpaOpen, &gpaOpenTramp, pfn);
	else if (std::strcmp(symbol, "cuIpcCloseMemHandle") == 0) swapIn(gpaClose, &gpaCloseTramp, pfn);
	else if (std::strcmp(symbol, "cuMemFree") == 0) swapIn(gpaFree, &gpaFreeTramp, pfn);
}
}  // namespace

GUARD_API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* p, CUipcMemHandle h, unsigned flags) {
	static Real<IpcOpenFn> realFn{"cuIpcOpenMemHandle_v2", false};
	auto real = realFn.get();
	return openVia(real, p, h, flags);
}
GUARD_API CUresult cuIpcOpenMemHandle(CUdeviceptr* p, CUipcMemHandle h, unsigned flags) {
	static Real<IpcOpenFn> realFn{"cuIpcOpenMemHandle", false};
	auto real = realFn.get();
	return openVia(real, p, h, flags);
}
GUARD_API CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
	static Real<PtrFn> realFn{"cuIpcCloseMemHandle", false};
	auto real = realFn.get();
	return closeVia(real, p);
}
GUARD_API CUresult cuMemFree_v2(CUdeviceptr p) {
	static Real<PtrFn> realFn{"cuMemFree_v2", false};
	auto real = realFn.get();
	return closeVia(real, p);
}
GUARD_API CUresult cuMemHostRegister_v2(void* p, size_t size, unsigned flags) {
	static Real<CUresult (*)(void*, size_t, unsigned)> realFn{"cuMemHostRegister_v2", false};
	auto real = realFn.get();
	CUresult r = real ? real(p, size, flags) : kCuNotFound;
	hostChanged();
	return r;
}
GUARD_API CUresult cuMemHostUnregister(void* p) {
	static Real<CUresult (*)(void*)> realFn{"cuMemHostUnregister", false};
	auto real = realFn.get();
	dropRange(reinterpret_cast<uintptr_t>(p));
	return real ? real(p) : kCuNotFound;
}
GUARD_API CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, unsigned long long flags) {
	static Real<CUresult (*)(const char*, void**, int, unsigned long long)> realFn{"cuGetProcAddress", false};
	auto real = realFn.get();
	if (!real) return kCuNotFound;
	CUresult r = real(symbol, pfn, version, flags);
	if (r == CUDA_SUCCESS) afterGetProc(symbol, pfn);
	return r;
}
GUARD_API CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, unsigned long long flags, void* status) {
	static Real<CUresult (*)(const char*, void**, int, unsigned long long, void*)> realFn{"cuGetProcAddress_v2", false};
	auto real = realFn.get();
	if (!real) return kCuNotFound;
	CUresult r = real(symbol, pfn, version, flags, status);
	if (r == CUDA_SUCCESS) afterGetProc(symbol, pfn);
	return r;
}
