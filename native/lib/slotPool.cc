// Staging memory and copy engines. A SlotPool cuts registered regions into equal slots once; the pipeline only
// borrows and returns slots, so nothing is allocated per message. The copy engine is pluggable: CUDA async copies
// on the context's streams (one event per slot), or plain memcpy when host memory stands in for device memory
// (GPUMPI_STAGE_HOST), which lets CI exercise the same chunking / ordering code without a GPU.
#include <cstdlib>
#include <cstring>

#include "internal.hh"

namespace gpumpi::lib {

int SlotPool::acquire(Dir dir) {
	int n = static_cast<int>(slots.size());
	int& held = dir == Dir::Send ? heldBySend : heldByRecv;
	if (n < 2 || held >= n - 1) return -1;
	for (int i = 0; i < n; ++i) {
		if (inUse[i] == SlotUse::Free) {
			inUse[i] = dir == Dir::Send ? SlotUse::Send : SlotUse::Recv;
			++held;
			return i;
		}
	}
	return -1;
}

void SlotPool::release(int slot) {
	if (slot < 0 || slot >= static_cast<int>(slots.size()) || inUse[slot] == SlotUse::Free) return;
	--(inUse[slot] == SlotUse::Send ? heldBySend : heldByRecv);
	inUse[slot] = SlotUse::Free;
}

gpumpi_status poolAddRegion(Ctx* c, SlotPool& p, char* base, size_t bytes, bool owned, bool pinnedByUs, bool device, char* pinBase) {
	if (p.slotBytes == 0) return fail(c, GPUMPI_ERR_INTERNAL, "slot pool has no slot size");
	size_t n = bytes / p.slotBytes;
	if (n == 0) {
		return fail(c, GPUMPI_ERR_STAGING, "staging buffer of %zu bytes is smaller than one chunk (%zu bytes)", bytes, p.slotBytes);
	}
	for (const auto& r : p.regions) {
		if (base < r.base + r.bytes && r.base < base + bytes) return fail(c, GPUMPI_ERR_STAGING, "staging buffer %p overlaps a registered one", static_cast<void*>(base));
	}
	const CudaDriver& d = cudaDriver();
	std::vector<CUevent> evs;
	if (c->cuda) {
		for (size_t i = 0; i < n; ++i) {
			CUevent e = nullptr;
			CUresult r = d.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
			if (r != CUDA_SUCCESS) {
				for (CUevent x : evs) d.cuEventDestroy(x);
				return cudaFail(c, r, "cuEventCreate for a staging slot");
			}
			evs.push_back(e);
		}
	}
	p.regions.push_back({base, bytes, owned, pinnedByUs, device, pinBase ? pinBase : base});
	for (size_t i = 0; i < n; ++i) {
		p.slots.push_back(base + i * p.slotBytes);
		p.events.push_back(c->cuda ? evs[i] : nullptr);
		p.inUse.push_back(SlotUse::Free);
	}
	return GPUMPI_SUCCESS;
}

static void releaseRegion(Ctx* c, const SlotPool::Region& r) {
	const CudaDriver& d = cudaDriver();
	if (r.device) {
		if (r.ownedAlloc && c->cuda) d.cuMemFree(reinterpret_cast<CUdeviceptr>(r.base));
		return;
	}
	if (r.ownedAlloc) {
		if (c->cuda) d.cuMemFreeHost(r.base);
		else std::free(r.base);
	} else if (r.pinnedByUs && c->cuda) {
		d.cuMemHostUnregister(r.pinBase);
	}
}

gpumpi_status poolRemoveRegion(Ctx* c, SlotPool& p, char* base) {
	size_t idx = p.regions.size();
	for (size_t i = 0; i < p.regions.size(); ++i) if (p.regions[i].base == base) idx = i;
	if (idx == p.regions.size()) return fail(c, GPUMPI_ERR_NOT_FOUND, "%p is not a registered staging buffer", static_cast<void*>(base));
	if (p.busy()) return fail(c, GPUMPI_ERR_BUSY, "staging slots are in use by %d request chunk(s); wait for them first", p.busy());
	const SlotPool::Region r = p.regions[idx];
	std::vector<char*> slots;
	std::vector<CUevent> events;
	std::vector<SlotUse> inUse;
	for (size_t i = 0; i < p.slots.size(); ++i) {
		if (p.slots[i] >= r.base && p.slots[i] < r.base + r.bytes) {
			if (p.events[i]) cudaDriver().cuEventDestroy(p.events[i]);
			continue;
		}
		slots.push_back(p.slots[i]);
		events.push_back(p.events[i]);
		inUse.push_back(SlotUse::Free);
	}
	p.slots.swap(slots);
	p.events.swap(events);
	p.inUse.swap(inUse);
	p.regions.erase(p.regions.begin() + static_cast<long>(idx));
	releaseRegion(c, r);
	return GPUMPI_SUCCESS;
}

void poolDestroy(Ctx* c, SlotPool& p) {
	for (CUevent e : p.events) if (e) cudaDriver().cuEventDestroy(e);
	for (const auto& r : p.regions) releaseRegion(c, r);
	p.regions.clear();
	p.slots.clear();
	p.events.clear();
	p.inUse.clear();
	p.heldBySend = p.heldByRecv = 0;
}

gpumpi_status startCopy(Ctx* c, CopyKind k, void* dst, const void* src, size_t n, CUevent ev) {
	if (k == CopyKind::HostMemcpy) {
		if (n) std::memcpy(dst, src, n);
		return GPUMPI_SUCCESS;
	}
	const CudaDriver& d = cudaDriver();
	CUresult r = CUDA_SUCCESS;
	CUstream s = k == CopyKind::D2H ? c->sD2H : k == CopyKind::H2D ? c->sH2D : c->sD2D;
	if (n) switch (k) {
		case CopyKind::D2H: s = c->sD2H; r = d.cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src), n, s); break;
		case CopyKind::H2D: s = c->sH2D; r = d.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, n, s); break;
		case CopyKind::D2D: s = c->sD2D; r = d.cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), n, s); break;
		default: break;
	}
	if (r != CUDA_SUCCESS) return cudaFail(c, r, "async staging copy");
	r = d.cuEventRecord(ev, s);
	if (r != CUDA_SUCCESS) return cudaFail(c, r, "cuEventRecord after a staging copy");
	return GPUMPI_SUCCESS;
}

Poll copyDone(Ctx* c, CopyKind k, CUevent ev) {
	if (k == CopyKind::HostMemcpy) return Poll::Done;
	CUresult r = cudaDriver().cuEventQuery(ev);
	if (r == CUDA_SUCCESS) return Poll::Done;
	if (r == CUDA_ERROR_NOT_READY) return Poll::Pending;
	cudaFail(c, r, "cuEventQuery of a staging copy");
	return Poll::Failed;
}

}  // namespace gpumpi::lib
