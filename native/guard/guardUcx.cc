// UCX's memory-type cache, as the guard sees it (pml ucx). Why this file exists (issue 31, measured on the H100
// testbed, Open MPI 5.0.7 + UCX 1.13.1):
//   UCX creates its memory-type cache lazily, at the process's first memory-type lookup (ucs_memtype_cache_get_global
//   in src/ucs/memory/memtype_cache.c), seeding it from /proc/self/maps: every mapping without access rights or of
//   /dev/nvidia* becomes an "unknown" region that UCX asks the driver about (src/ucm/cuda/cudamem.c,
//   ucm_cudamem_scan_regions_cb). Later it learns only of allocations its hooks see (1.13: cuMemAlloc*, Managed,
//   Pitch; 1.15 adds cuMemAllocAsync / FromPoolAsync; 1.18 adds cuMemMap; no version hooks cuIpcOpenMemHandle), and
//   an address it has no region for is host memory ("not found in memtype cache, assuming host memory",
//   src/ucp/core/ucp_context.h). So device memory mapped after the cache was created through a call UCX does not
//   hook — a legacy IPC import, VMM memory before 1.18, pool memory before 1.15 — is sent with cma / memcpy on a GPU
//   address: process_vm_writev "Bad address" and SIGABRT (seen: the seed's import pattern without the guard).
//   The guard's own exchange at MPI_Init (PMPI_Comm_dup, Allgather, Allreduce) is the process's first transfer, so
//   with the guard loaded the cache was created earlier than without it, and a torch expandable-segments program or
//   a cudaMallocAsync program that works without the guard aborted under report mode.
// What the guard does: at the program's first buffer (its own first transfer, where UCX would have created the
// cache without the guard) it replays UCX's seeding scan into the cache (ucs_memtype_cache_update, "unknown"), so
// the cache knows what it would have known; then each new device range the driver reports is checked against what
// UCX can know of it (ucxMissed), which report and warn mode only record, and fix mode tells UCX about (the same
// update for that one range). Nothing is done when the pml is not UCX, the cache is off (UCX_MEMTYPE_CACHE=n), the
// UCX version is one whose memory-type numbering the guard does not know, or UCX's symbols cannot be found.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "guardState.hh"

namespace gpumpi::guard {
namespace {

using UpdateFn = void (*)(const void*, size_t, int /* ucs_memory_type_t */, uint8_t /* ucs_sys_device_t */);
using VersionFn = void (*)(unsigned*, unsigned*, unsigned*);
constexpr uint8_t kSysDevUnknown = 0xff;  // UCS_SYS_DEVICE_ID_UNKNOWN (UINT8_MAX) in every release since 1.10

struct UcxCache {
	bool replayed = false;
	UpdateFn update = nullptr;
	int unknownType = -1;  // UCS_MEMORY_TYPE_UNKNOWN of this release (= UCS_MEMORY_TYPE_LAST)
	std::vector<std::pair<uintptr_t, uintptr_t>> scanned;  // sorted [start, end) of the replayed scan
	std::map<uintptr_t, uintptr_t> missed;                 // device ranges UCX cannot know of, by start
	UcxMemtypeFacts facts;
};
UcxCache& cache() {
	static UcxCache* c = new UcxCache();
	return *c;
}

/** UCS_MEMORY_TYPE_UNKNOWN per release (src/ucs/memory/memory_type.h at each tag): HOST CUDA CUDA_MANAGED ROCM
 *  ROCM_MANAGED [RDMA 1.16] [ZE_HOST ZE_DEVICE ZE_MANAGED 1.17] [GAUDI 1.21] LAST; -1 for a release not checked. */
int unknownTypeOf(unsigned major, unsigned minor) {
	if (major != 1) return -1;
	if (minor >= 10 && minor <= 15) return 5;
	if (minor == 16) return 6;
	if (minor >= 17 && minor <= 20) return 9;
	if (minor == 21 || minor == 22) return 10;
	return -1;
}

/** A symbol of a loaded UCX library: the global scope, else the library itself when it was loaded RTLD_LOCAL. */
void* ucxSym(const char* lib, const char* name) {
	if (void* p = dlsym(RTLD_DEFAULT, name)) return p;
	struct Find { const char* lib; std::string path; } f{lib, ""};
	dl_iterate_phdr([](dl_phdr_info* info, size_t, void* data) -> int {
		auto* f = static_cast<Find*>(data);
		const char* full = info->dlpi_name ? info->dlpi_name : "";
		const char* base = std::strrchr(full, '/') ? std::strrchr(full, '/') + 1 : full;
		if (std::strncmp(base, f->lib, std::strlen(f->lib)) == 0) { f->path = full; return 1; }
		return 0;
	}, &f);
	if (f.path.empty()) return nullptr;
	void* h = dlopen(f.path.c_str(), RTLD_NOW | RTLD_NOLOAD);
	if (!h) return nullptr;
	void* p = dlsym(h, name);
	dlclose(h);
	return p;
}

bool cacheOff() {
	const char* v = std::getenv("UCX_MEMTYPE_CACHE");
	if (!v) return false;
	return !std::strcmp(v, "n") || !std::strcmp(v, "no") || !std::strcmp(v, "off") || !std::strcmp(v, "0") || !std::strcmp(v, "N");
}

/** UCM's seeding scan (ucm_cudamem_scan_regions_cb): mappings with no access rights, or of /dev/nvidia*. */
std::vector<std::pair<uintptr_t, uintptr_t>> scanMaps() {
	std::vector<std::pair<uintptr_t, uintptr_t>> out;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return out;
	std::string all;
	char buf[65536];
	for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) all.append(buf, size_t(n));
	close(fd);
	size_t i = 0;
	while (i < all.size()) {
		size_t j = all.find('\n', i);
		if (j == std::string::npos) j = all.size();
		std::string line = all.substr(i, j - i);
		i = j + 1;
		unsigned long long a = 0, b = 0;
		char perms[8] = {0};
		int pathAt = 0;
		if (std::sscanf(line.c_str(), "%llx-%llx %7s %*s %*s %*s %n", &a, &b, perms, &pathAt) < 3) continue;
		bool none = perms[0] != 'r' && perms[1] != 'w' && perms[2] != 'x';
		const char* path = pathAt > 0 && size_t(pathAt) <= line.size() ? line.c_str() + pathAt : "";
		if (none || std::strncmp(path, "/dev/nvidia", 11) == 0) out.emplace_back(uintptr_t(a), uintptr_t(b));
	}
	std::sort(out.begin(), out.end());
	return out;
}

bool inScanned(const UcxCache& c, uintptr_t p) {
	auto it = std::upper_bound(c.scanned.begin(), c.scanned.end(), std::make_pair(p, UINTPTR_MAX));
	return it != c.scanned.begin() && p < std::prev(it)->second;
}

/** Whether this release's hooks report allocations of class `cls` to the cache (src/ucm/cuda/cudamem.c per tag). */
bool hooked(const UcxMemtypeFacts& f, Cls cls) {
	if (cls == kIpcImport) return false;
	if (cls == kVmm) return f.minor >= 18;
	if (cls == kPool) return f.minor >= 15;
	return true;  // cuMemAlloc*, cuMemAllocManaged, cuMemAllocPitch: every release
}

}  // namespace

const UcxMemtypeFacts& ucxMemtypeFacts() { return cache().facts; }

void ucxFirstBuffer() {
	UcxCache& c = cache();
	if (c.replayed) return;
	c.replayed = true;
	State& g = st();
	UcxMemtypeFacts& f = c.facts;
	if (g.pml != "ucx") return;
	if (cacheOff()) { f.state = "off (UCX_MEMTYPE_CACHE)"; return; }
	auto ver = reinterpret_cast<VersionFn>(ucxSym("libucp.so", "ucp_get_version"));
	c.update = reinterpret_cast<UpdateFn>(ucxSym("libucs.so", "ucs_memtype_cache_update"));
	if (!ver || !c.update) { f.state = "UCX symbols not found"; return; }
	ver(&f.major, &f.minor, &f.release);
	c.unknownType = unknownTypeOf(f.major, f.minor);
	if (c.unknownType < 0) { f.state = "UCX release not known to the guard: nothing replayed or told"; return; }
	c.scanned = scanMaps();
	// ucs_memtype_cache_update does nothing while UCX has no cache yet: then UCX seeds it itself at this very call
	for (const auto& r : c.scanned) c.update(reinterpret_cast<const void*>(r.first), r.second - r.first, c.unknownType, kSysDevUnknown);
	f.replayedRegions = c.scanned.size();
	f.state = "replayed";
}

void ucxNewRange(uintptr_t start, uintptr_t end, Cls cls) {
	UcxCache& c = cache();
	if (c.facts.state != std::string("replayed") || cls == kHost || cls == kPinnedHost || hooked(c.facts, cls) || inScanned(c, start)) return;
	c.missed[start] = end;
	c.facts.missedRanges++;
	if (st().mode == Mode::Fix) {
		c.update(reinterpret_cast<const void*>(start), end - start, c.unknownType, kSysDevUnknown);
		c.facts.toldRanges++;
	}
}

void ucxForget(uintptr_t p) {
	UcxCache& c = cache();
	auto it = c.missed.upper_bound(p);
	if (it == c.missed.begin()) return;
	--it;
	if (p < it->second) c.missed.erase(it);
}

bool ucxMissed(const void* ptr) {
	const UcxCache& c = cache();
	if (c.missed.empty()) return false;
	uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
	auto it = c.missed.upper_bound(p);
	return it != c.missed.begin() && p < std::prev(it)->second;
}

}  // namespace gpumpi::guard
