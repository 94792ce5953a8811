#include "reproIpcRun.hh"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace gpumpi::repro::ipc {

bool IpcRun::allocLocal(Region& r, bool pinnedHost) {
	r.bytes = mOpt.sizeBytes;
	const CudaDriver& d = cudaDriver();
	if (mDevice && !pinnedHost) {
		r.device = true;
		return cuda(d.cuMemAlloc(&r.dev, r.bytes), "cuMemAlloc");
	}
	if (mDevice && pinnedHost) {
		r.pinned = true;
		return cuda(d.cuMemAllocHost(&r.ptr, r.bytes), "cuMemAllocHost");
	}
	r.ptr = std::malloc(r.bytes);
	if (!r.ptr) return fail(kSetupError, "malloc", "cannot allocate " + formatSize(r.bytes) + " of host memory");
	std::memset(r.ptr, 0xA5, r.bytes);  // resident now (malloc+memset(0) may become calloc)
	return true;
}

bool IpcRun::fillPattern(Region& r, int sender) {
	size_t words = r.bytes / 4;
	if (!r.device) {
		auto* w = static_cast<uint32_t*>(r.ptr);
		for (size_t i = 0; i < words; i++) w[i] = pattern(sender, i);
		return true;
	}
	std::vector<uint32_t> host;
	try {
		host.resize(words);
	} catch (...) {
		return fail(kSetupError, "malloc", "cannot allocate a host copy of " + formatSize(r.bytes));
	}
	for (size_t i = 0; i < words; i++) host[i] = pattern(sender, i);
	if (!cuda(cudaDriver().cuMemcpyHtoD(r.dev, host.data(), r.bytes), "cuMemcpyHtoD")) return false;
	return cuda(cudaDriver().cuCtxSynchronize(), "cuCtxSynchronize");  // complete before another process touches it
}

bool IpcRun::poison(Region& r) {
	if (r.device) {
		if (!cuda(cudaDriver().cuMemsetD32(r.dev, kPoison, r.bytes / 4), "cuMemsetD32")) return false;
		return cuda(cudaDriver().cuCtxSynchronize(), "cuCtxSynchronize");
	}
	auto* w = static_cast<uint32_t*>(r.ptr);
	for (size_t i = 0; i < r.bytes / 4; i++) w[i] = kPoison;
	return true;
}

bool IpcRun::verify(const Region& r, int sender) {
	std::vector<uint32_t> copy;
	const uint32_t* w = static_cast<const uint32_t*>(r.ptr);
	size_t words = r.bytes / 4;
	if (r.device) {
		try {
			copy.resize(words);
		} catch (...) {
			return fail(kSetupError, "malloc", "cannot allocate a host copy for verification");
		}
		if (!cuda(cudaDriver().cuMemcpyDtoH(copy.data(), r.dev, r.bytes), "cuMemcpyDtoH (verification)")) return false;
		w = copy.data();
	}
	mRes.verified = 1;
	mRes.checkedWords = static_cast<long long>(words);
	for (size_t i = 0; i < words; i++) {
		uint32_t want = pattern(sender, i);
		if (w[i] != want) {
			if (mRes.wrongWords == 0) {
				mRes.firstWrongIndex = static_cast<long long>(i);
				mRes.firstWrongValue = w[i];
				mRes.firstWrongExpected = want;
			}
			mRes.wrongWords++;
		}
	}
	if (mRes.wrongWords > 0 && mRes.status == kOk) mRes.status = kWrongData;
	return true;
}

bool IpcRun::exportRegion(Region& r, char handle[64]) {
	std::memset(handle, 0, 64);
	r.bytes = mOpt.sizeBytes;
	if (mDevice) {
		if (!allocLocal(r, false)) return false;
		CUipcMemHandle h{};
		if (!cuda(cudaDriver().cuIpcGetMemHandle(&h, r.dev), "cuIpcGetMemHandle")) return false;
		std::memcpy(handle, h.reserved, 64);
		return true;
	}
	// Host analogue of CUDA IPC: a POSIX shared-memory object the importer maps.
	static unsigned counter = 0;
	mShmName = "/gpumpi-repro-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
	int fd = shm_open(mShmName.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0) return fail(kSetupError, "shm_open", mShmName + ": " + std::strerror(errno));
	if (ftruncate(fd, static_cast<off_t>(r.bytes)) != 0) {
		int e = errno;
		close(fd);
		shm_unlink(mShmName.c_str());
		mShmName.clear();
		return fail(kSetupError, "ftruncate", std::strerror(e));
	}
	void* p = mmap(nullptr, r.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (p == MAP_FAILED) return fail(kSetupError, "mmap", std::strerror(e));
	r.ptr = p;
	r.shm = true;
	copyText(handle, 64, mShmName);
	return true;
}

bool IpcRun::importRegion(const char handle[64], Region& r) {
	r.bytes = mOpt.sizeBytes;
	r.imported = true;
	if (mDevice) {
		CUipcMemHandle h{};
		std::memcpy(h.reserved, handle, 64);
		r.device = true;
		return cuda(cudaDriver().cuIpcOpenMemHandle(&r.dev, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle");
	}
	std::string name(handle, strnlen(handle, 64));
	int fd = shm_open(name.c_str(), O_RDWR, 0);
	if (fd < 0) return fail(kSetupError, "shm_open", name + ": " + std::strerror(errno));
	void* p = mmap(nullptr, r.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (p == MAP_FAILED) return fail(kSetupError, "mmap", std::strerror(e));
	shm_unlink(name.c_str());  // mapped on both sides now: drop the name at once, so no crash can leak it
	r.ptr = p;
	r.shm = true;
	return true;
}

void IpcRun::freeRegion(Region& r) {
	const CudaDriver& d = cudaDriver();
	if (r.device && r.dev) {
		if (r.imported) d.cuIpcCloseMemHandle(r.dev);
		else d.cuMemFree(r.dev);
	} else if (r.shm && r.ptr) {
		munmap(r.ptr, r.bytes);
	} else if (r.pinned && r.ptr) {
		d.cuMemFreeHost(r.ptr);
	} else if (r.ptr) {
		std::free(r.ptr);
	}
	r = Region{};
}

bool IpcRun::copyInto(Region& dst, const Region& src) {
	const CudaDriver& d = cudaDriver();
	if (dst.device && src.device) {
		if (!cuda(d.cuMemcpyDtoD(dst.dev, src.dev, dst.bytes), "cuMemcpyDtoD")) return false;
		return cuda(d.cuCtxSynchronize(), "cuCtxSynchronize");
	}
	if (dst.device) {
		if (!cuda(d.cuMemcpyHtoD(dst.dev, src.ptr, dst.bytes), "cuMemcpyHtoD")) return false;
		return cuda(d.cuCtxSynchronize(), "cuCtxSynchronize");
	}
	std::memcpy(dst.ptr, src.ptr, dst.bytes);
	return true;
}

// Post the receive, wait for it. If MPI refuses the buffer at post time, drain the message into scratch host memory
// so the sender is not left waiting forever (the rank still reports the error).
bool IpcRun::receive(Region& into, int from) {
	MPI_Request req = MPI_REQUEST_NULL;
	int count = static_cast<int>(mOpt.sizeBytes);
	int rc = MPI_Irecv(into.mpiPtr(), count, MPI_BYTE, from, 7, MPI_COMM_WORLD, &req);
	if (rc != MPI_SUCCESS) {
		mpi(rc, "MPI_Irecv");
		void* scratch = std::malloc(mOpt.sizeBytes);
		if (scratch) {
			if (MPI_Recv(scratch, count, MPI_BYTE, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
				// nothing more to do: the error already recorded is the one that matters
			}
			std::free(scratch);
		}
		return false;
	}
	MPI_Status st;
	return mpi(MPI_Wait(&req, &st), "MPI_Wait (receive)");
}

bool IpcRun::sendFrom(Region& from, int to) {
	MPI_Request req = MPI_REQUEST_NULL;
	if (!mpi(MPI_Isend(from.mpiPtr(), static_cast<int>(mOpt.sizeBytes), MPI_BYTE, to, 7, MPI_COMM_WORLD, &req), "MPI_Isend"))
		return false;
	return mpi(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait (send)");
}

}  // namespace gpumpi::repro::ipc

namespace gpumpi::repro {

InjectedCrash injectedCrash(const IpcOptions& opts) {
	InjectedCrash out;
	const double fraction = opts.crashFraction >= 0 ? opts.crashFraction : opts.wrongFraction;
	if (fraction < 0) return out;
	unsigned long long z = opts.injectSeed ^ (opts.trial * 0x9E3779B97F4A7C15ull);
	z += 0x9E3779B97F4A7C15ull;  // splitmix64
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	z = z ^ (z >> 31);
	out.draw = static_cast<double>(z >> 11) / 9007199254740992.0;
	out.crash = out.draw < fraction;
	out.rank = (z & 1) ? 3 : 1;
	return out;
}

}  // namespace gpumpi::repro

namespace gpumpi::repro::ipc {

// pool: cudaMallocAsync's default pool (cuMemAllocAsync); vmm: cuMemCreate requesting POSIX-FD handles (what
// PyTorch's expandable segments allocate, openucx/ucx#11548). Ranks 0 and 2 fill and send to ranks 1 and 3 on their
// node (where MPI would use CUDA IPC), which receive into memory allocated the same way and verify every word.
void IpcRun::runAllocated(int rank) {
	const bool sender = rank == 0 || rank == 2;
	const int partner = sender ? rank + 1 : rank - 1;
	const MemKind kind = mOpt.variant == "pool" ? MemKind::PoolDefault : MemKind::VmmFd;
	copyText(mRes.role, sizeof mRes.role, sender ? "owner" : "importer");
	GpuMemory mem;
	Region r;
	bool ok = true;
	if (mDevice) {
		std::string call;
		CUresult a = allocGpuMemory(kind, mCuda.device, mOpt.sizeBytes, mem, call);
		if (a != CUDA_SUCCESS) ok = fail(kSetupError, call, cudaErrorText(a));
		r.device = true;
		r.dev = mem.ptr;
		r.bytes = mOpt.sizeBytes;
		const PointerIpcAttrs at = queryPointerIpcAttrs(cudaDriver().cuPointerGetAttributes, mem.ptr);
		copyText(mRes.buffer, sizeof mRes.buffer, std::string(memKindName(kind)) + " buffer, legacy IPC " +
		         (at.result == CUDA_SUCCESS ? (at.legacyIpcCapable ? "yes" : "no") : "?") + ", handles " + handleTypeNames(at.allowedHandleTypes) +
		         (sender ? " (send)" : " (receive)"));
	} else {
		ok = allocLocal(r, false);
		copyText(mRes.buffer, sizeof mRes.buffer, std::string("host buffer (no GPU)") + (sender ? " (send)" : " (receive)"));
	}
	if (ok) ok = sender ? fillPattern(r, rank) : poison(r);
	if (allReady(ok)) {
		double t0 = MPI_Wtime();
		if (sender) sendFrom(r, partner);
		else receive(r, partner);
		mRes.transferSeconds = MPI_Wtime() - t0;
		mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier (after transfer)");
		if (!sender) verify(r, partner);
	}
	if (mDevice) freeGpuMemory(mem);
	else freeRegion(r);
}

/** What this rank does in a variant other than pool and vmm (the injected crash drawn for this trial included). */
struct IpcRun::Plan {
	int rank = 0;
	bool owner = false;  // ranks 0 and 2 allocate and export; 1 and 3 import
	int partner = 0;     // owner <-> importer, always on one node
	int peer = 0;        // message partner, across nodes
	bool mirror = false;  // send-from-import: importers send, owners receive
	bool crash = false, hang = false;  // --inject crash / hang (rank 1)
	InjectedCrash injected;  // crash-fraction: a real crash in one rank just before the transfer
	bool wrongTrial = false;  // wrong-fraction: the draw picks a trial and an owner to return wrong data; nothing crashes
};

IpcRun::Plan IpcRun::plan(int rank) const {
	const std::string& v = mOpt.variant;
	Plan p;
	p.rank = rank;
	p.injected = injectedCrash(mOpt);
	p.wrongTrial = mOpt.wrongFraction >= 0 && p.injected.crash;
	if (mOpt.wrongFraction >= 0) p.injected.crash = false;
	p.mirror = v == "send-from-import";
	p.crash = v == "crash-test" || mOpt.inject == "crash";
	p.hang = mOpt.inject == "hang";
	p.owner = rank == 0 || rank == 2;
	p.partner = p.owner ? rank + 1 : rank - 1;
	p.peer = rank == 0 ? 3 : rank == 1 ? 2 : rank == 2 ? 1 : 0;
	return p;
}

bool IpcRun::allReady(bool ok) {
	int mine = ok ? 1 : 0, all = 0;
	if (!mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce (set-up)")) all = 0;
	return all == 1;
}

// Owners allocate and export; importers import. Handles travel by MPI owner -> importer.
bool IpcRun::shareAllocation(const Plan& p, Region& owned, Region& imported) {
	char msg[72] = {0};  // [0] = ok flag, [8..72) = handle
	if (p.owner) {
		copyText(mRes.role, sizeof mRes.role, "owner");
		bool ok = exportRegion(owned, msg + 8);
		if (ok) ok = p.mirror ? fillPattern(owned, p.rank) : poison(owned);
		msg[0] = ok ? 1 : 0;
		if (!mpi(MPI_Send(msg, sizeof msg, MPI_BYTE, p.partner, 3, MPI_COMM_WORLD), "MPI_Send (IPC handle)")) ok = false;
		return ok;
	}
	copyText(mRes.role, sizeof mRes.role, "importer");
	if (!mpi(MPI_Recv(msg, sizeof msg, MPI_BYTE, p.partner, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv (IPC handle)")) return false;
	if (!msg[0]) return fail(kSetupError, "import", "the owner (rank " + std::to_string(p.partner) + ") could not export its allocation");
	return importRegion(msg + 8, imported);
}

// Local buffers: senders' source; bounce/host staging; mirror receivers' target.
bool IpcRun::allocLocalBuffer(const Plan& p, Region& local) {
	const std::string& v = mOpt.variant;
	if (!p.mirror && p.owner) return allocLocal(local, false) && fillPattern(local, p.rank);
	if (!p.mirror && v == "bounce") return allocLocal(local, false);
	if (!p.mirror && v == "host") return allocLocal(local, true);
	if (p.mirror && p.owner) return allocLocal(local, false) && poison(local);
	return true;
}

namespace {

void storeThroughBadAddress() {
	volatile uintptr_t bad = 0x10;
	*reinterpret_cast<volatile int*>(bad) = 1;  // a real SIGSEGV
}

}  // namespace

void IpcRun::crashIfDrawn(const Plan& p) {
	if (!p.injected.crash || p.rank != p.injected.rank) return;
	std::fprintf(stderr, "gpumpi repro: rank %d now %s (--inject %s seed=%llu trial=%llu draw=%.6f)\n", p.rank,
	             p.rank == 1 ? "stores through address 0x10" : "calls abort()", mOpt.inject.c_str(), mOpt.injectSeed, mOpt.trial, p.injected.draw);
	std::fflush(stderr);
	if (p.rank == 1) storeThroughBadAddress();
	std::abort();  // a real SIGABRT
}

// The variant's transfer: owners send from their own buffer to the importer across nodes, which receives into the
// import (direct) or its local buffer (bounce, host) and copies; mirrored (send-from-import), the other way round.
void IpcRun::transfer(const Plan& p, Region& imported, Region& local) {
	const std::string& v = mOpt.variant;
	if (p.mirror) {
		if (p.owner) {
			copyText(mRes.buffer, sizeof mRes.buffer, std::string("own ") + (mDevice ? "device" : "host") + " buffer (receive)");
			receive(local, p.peer);
		} else {
			copyText(mRes.buffer, sizeof mRes.buffer, "imported pointer (send)");
			sendFrom(imported, p.peer);
		}
		return;
	}
	if (p.owner) {
		copyText(mRes.buffer, sizeof mRes.buffer, std::string("own ") + (mDevice ? "device" : "host") + " buffer (send)");
		sendFrom(local, p.peer);
		return;
	}
	if (p.crash && p.rank == 1) {
		std::fprintf(stderr, "gpumpi repro: rank 1 now stores through address 0x10 (--inject crash)\n");
		std::fflush(stderr);
		storeThroughBadAddress();
	}
	if (p.hang && p.rank == 1) {
		std::fprintf(stderr, "gpumpi repro: rank 1 now sleeps forever (--inject hang, a deliberate fake hang)\n");
		std::fflush(stderr);
		for (;;) sleep(1);
	}
	if (v == "direct" || v == "crash-test") {
		copyText(mRes.buffer, sizeof mRes.buffer, "imported pointer (receive)");
		receive(imported, p.peer);
		return;
	}
	copyText(mRes.buffer, sizeof mRes.buffer, v == "bounce" ? "local device buffer, then copy into the import" : "pinned host buffer, then copy into the import");
	if (!mDevice) copyText(mRes.buffer, sizeof mRes.buffer, "local host buffer, then copy into the import");
	if (receive(local, p.peer)) copyInto(imported, local);
}

// After the transfer's barrier: owners verify in their own memory (or, mirrored, in the buffer they received into).
void IpcRun::verifyOwner(const Plan& p, Region& owned, Region& local) {
	if (!p.owner) return;
	if (p.wrongTrial && p.rank == p.injected.rank - 1) {
		std::fprintf(stderr, "gpumpi repro: rank %d now overwrites the received data before verifying it (--inject %s seed=%llu trial=%llu draw=%.6f)\n",
		             p.rank, mOpt.inject.c_str(), mOpt.injectSeed, mOpt.trial, p.injected.draw);
		std::fflush(stderr);
		poison(p.mirror ? local : owned);
	}
	if (p.mirror) verify(local, p.rank == 0 ? 2 : 0);  // rank 0 got rank 2's allocation via rank 3, and vice versa
	else verify(owned, p.rank == 0 ? 2 : 0);          // rank 0's allocation was written by rank 1 with rank 2's data
}

void IpcRun::run(int rank, int size) {
	if (mOpt.variant == "pool" || mOpt.variant == "vmm") { runAllocated(rank); return; }
	const Plan p = plan(rank);
	Region owned, imported, local;
	// 1. Allocations shared owner -> importer, local buffers; every rank ready, or nobody transfers.
	const bool ready = allReady(shareAllocation(p, owned, imported) && allocLocalBuffer(p, local));
	if (p.owner && !mShmName.empty()) {  // every importer has mapped it (or failed): remove the name now
		shm_unlink(mShmName.c_str());
		mShmName.clear();
	}
	if (ready) {
		// 2. The transfer (a fraction-injected crash happens just before it, in one rank).
		crashIfDrawn(p);
		double t0 = MPI_Wtime();
		transfer(p, imported, local);
		mRes.transferSeconds = MPI_Wtime() - t0;
		// 3. After a barrier, verify in the owner's memory (or the mirror receiver's buffer).
		mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier (after transfer)");
		verifyOwner(p, owned, local);
	}
	// 4. Importers unmap before owners free.
	freeRegion(imported);
	freeRegion(local);
	if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) {
		// keep going: the owner's memory is freed at exit in any case
	}
	freeRegion(owned);
	(void)size;
}

}  // namespace gpumpi::repro::ipc
