// Intra-host shared-segment protocol (GPUMPI_PROTO_SHM, path class "host-staged, same host").
// At init every rank creates one outgoing segment per same-host SHM peer (POSIX shm_open + mmap, nbuf x chunk,
// pinned with cuMemHostRegister PORTABLE when CUDA is there); the peer maps it too, then the name is unlinked, so
// nothing is left in /dev/shm even after a crash past init. A chunk costs one D2H by the sender into a slot of its
// outgoing segment and one H2D by the receiver straight out of that slot; MPI carries only 16-byte signals
// (slot, length; on shmComm with the user's tag) and 8-byte slot acks (on ackComm, tag = slot). The STAGED
// clear-to-send handshake (pipeline.cc) runs first, so a sender only fills slots for a receiver that is waiting.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>

#include "internal.hh"

namespace gpumpi::lib {

struct ShmLink {
	int peer = -1;
	size_t slotBytes = 0;
	int nslots = 0;
	size_t segBytes = 0;
	char* out = nullptr;
	char* in = nullptr;
	bool outPinned = false, inPinned = false;
	std::string outName;
	std::vector<int> outFree;
	std::vector<CUevent> outEv, inEv;
	std::vector<uint64_t> sigOut;  // 2 words per outgoing slot
	std::vector<uint64_t> ackIn;   // 1 word per outgoing slot
	std::vector<uint64_t> ackOut;  // 1 word per incoming slot
};

namespace {

std::string segName(uint64_t key, int from, int to) {
	char b[96];
	std::snprintf(b, sizeof b, "/gpumpi-%016llx-%d-%d", static_cast<unsigned long long>(key), from, to);
	return b;
}

char* mapSeg(const std::string& name, size_t bytes, bool create, std::string* err) {
	int fd = shm_open(name.c_str(), create ? (O_RDWR | O_CREAT | O_EXCL) : O_RDWR, 0600);
	if (fd < 0) { *err = "shm_open(" + name + "): " + std::strerror(errno); return nullptr; }
	if (create && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
		*err = "ftruncate(" + name + "): " + std::strerror(errno);
		close(fd);
		shm_unlink(name.c_str());
		return nullptr;
	}
	void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) { *err = "mmap(" + name + "): " + std::strerror(errno); return nullptr; }
	return static_cast<char*>(p);
}

void pin(Ctx* c, char* p, size_t bytes, bool* pinned) {
	if (!c->cuda) return;
	CUresult r = cudaDriver().cuMemHostRegister(p, bytes, CU_MEMHOSTREGISTER_PORTABLE);
	*pinned = r == CUDA_SUCCESS;
	if (!*pinned)  // still correct, only slower: say so once per segment (the only message the library prints)
		std::fprintf(stderr, "libgpumpi: rank %d: cuMemHostRegister of a %zu-byte shared segment failed (%s); its copies are pageable (slower)\n",
		             c->rank, bytes, cudaErrorText(r).c_str());
}

}  // namespace

bool shmAvailable(std::string* why) {
	char name[64];
	std::snprintf(name, sizeof name, "/gpumpi-probe-%d", static_cast<int>(getpid()));
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0) { *why = std::string("shm_open: ") + std::strerror(errno); return false; }
	close(fd);
	shm_unlink(name);
	return true;
}

gpumpi_status shmSetup(Ctx* c) {
	c->shm.assign(c->size, nullptr);
	uint64_t key = 0;
	if (c->rank == 0) key = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}() ^ static_cast<uint64_t>(getpid());
	int rc = MPI_Bcast(&key, 1, MPI_UINT64_T, 0, c->comm);
	if (rc != MPI_SUCCESS) return fail(c, GPUMPI_ERR_MPI, "MPI_Bcast of the shm key: %s", mpiErrorText(rc).c_str());
	std::vector<int32_t> nb(c->size), force(c->size);
	rc = MPI_Allgather(&c->self.numBuffers, 1, MPI_INT32_T, nb.data(), 1, MPI_INT32_T, c->comm);
	if (rc == MPI_SUCCESS) rc = MPI_Allgather(&c->self.forceShm, 1, MPI_INT32_T, force.data(), 1, MPI_INT32_T, c->comm);
	if (rc != MPI_SUCCESS) return fail(c, GPUMPI_ERR_MPI, "MPI_Allgather for shm setup: %s", mpiErrorText(rc).c_str());
	std::string err;
	int localFail = 0;
	for (int j = 0; j < c->size; ++j) {
		const Peer& p = c->peers[j];
		bool want = j != c->rank && p.sameHost && (p.proto == GPUMPI_PROTO_SHM || (force[j] && c->self.forceShm && c->self.shmOk));
		if (!want) continue;
		auto* l = new ShmLink();
		l->peer = j;
		l->slotBytes = p.chunk;
		l->nslots = std::min(nb[j], c->self.numBuffers);
		l->segBytes = l->slotBytes * static_cast<size_t>(l->nslots);
		l->outName = segName(key, c->rank, j);
		c->shm[j] = l;
		l->out = mapSeg(l->outName, l->segBytes, true, &err);
		if (!l->out) { localFail = 1; break; }
		std::memset(l->out, 0, l->segBytes);  // populate now (init), never during a transfer
	}
	int anyFail = 0;
	MPI_Allreduce(&localFail, &anyFail, 1, MPI_INT, MPI_MAX, c->comm);
	for (int j = 0; j < c->size && !anyFail; ++j) {
		ShmLink* l = c->shm[j];
		if (!l) continue;
		l->in = mapSeg(segName(key, j, c->rank), l->segBytes, false, &err);
		if (!l->in) { localFail = 1; break; }
		for (size_t off = 0; off < l->segBytes; off += 4096) (void)*static_cast<volatile char*>(l->in + off);  // map pages at init
	}
	MPI_Allreduce(&localFail, &anyFail, 1, MPI_INT, MPI_MAX, c->comm);
	for (ShmLink* l : c->shm) if (l && l->out) shm_unlink(l->outName.c_str());
	if (anyFail) return fail(c, GPUMPI_ERR_UNSUPPORTED, "shared segments: %s", err.empty() ? "a peer failed to set them up" : err.c_str());
	const CudaDriver& d = cudaDriver();
	for (ShmLink* l : c->shm) {
		if (!l) continue;
		pin(c, l->out, l->segBytes, &l->outPinned);
		pin(c, l->in, l->segBytes, &l->inPinned);
		l->outFree.assign(l->nslots, 1);
		l->sigOut.assign(2 * l->nslots, 0);
		l->ackIn.assign(l->nslots, 0);
		l->ackOut.assign(l->nslots, 0);
		if (c->cuda) {
			l->outEv.assign(l->nslots, nullptr);
			l->inEv.assign(l->nslots, nullptr);
			for (int s = 0; s < l->nslots; ++s) {
				CUresult r = d.cuEventCreate(&l->outEv[s], CU_EVENT_DISABLE_TIMING);
				if (r == CUDA_SUCCESS) r = d.cuEventCreate(&l->inEv[s], CU_EVENT_DISABLE_TIMING);
				if (r != CUDA_SUCCESS) return cudaFail(c, r, "cuEventCreate for a shared-segment slot");
			}
		} else {
			l->outEv.assign(l->nslots, nullptr);
			l->inEv.assign(l->nslots, nullptr);
		}
	}
	return GPUMPI_SUCCESS;
}

void shmTeardown(Ctx* c) {
	const CudaDriver& d = cudaDriver();
	for (ShmLink*& l : c->shm) {
		if (!l) continue;
		for (CUevent e : l->outEv) if (e) d.cuEventDestroy(e);
		for (CUevent e : l->inEv) if (e) d.cuEventDestroy(e);
		if (l->outPinned) d.cuMemHostUnregister(l->out);
		if (l->inPinned) d.cuMemHostUnregister(l->in);
		if (l->out) munmap(l->out, l->segBytes);
		if (l->in) munmap(l->in, l->segBytes);
		delete l;
		l = nullptr;
	}
	c->shm.clear();
}

size_t shmBytes(Ctx* c) {
	size_t n = 0;
	for (ShmLink* l : c->shm) if (l) n += l->segBytes;  // outgoing segments (incoming ones are the peers')
	return n;
}

bool shmHasLink(Ctx* c, int peer) { return peer >= 0 && peer < static_cast<int>(c->shm.size()) && c->shm[peer]; }

void shmAbort(Ctx* c, gpumpi_request* r) {
	ShmLink* l = shmHasLink(c, r->peer) ? c->shm[r->peer] : nullptr;
	for (auto& op : r->ops) {
		for (MPI_Request* q : {&op.mreq, &op.mreq2}) {
			if (*q == MPI_REQUEST_NULL) continue;
			int flag = 0;
			MPI_Test(q, &flag, MPI_STATUS_IGNORE);
			if (!flag) { MPI_Cancel(q); MPI_Request_free(q); }
		}
		if (l && r->dir == Dir::Send && op.slot >= 0) l->outFree[op.slot] = 1;
	}
}

namespace {

// A failed request completes with its error and holds nothing: abortRequest also settles the clear-to-send and
// size-header requests (the receiver may see a chunk signal before the header), then shmAbort frees the slots.
bool bail(Ctx* c, gpumpi_request* r, gpumpi_status st, const std::string& text) {
	abortRequest(c, r, st, text);
	return true;
}

/**
 * Sender: chunk k is copied into a free slot of our outgoing segment (CopyingIn), then, in chunk order, its
 * 16-byte signal (slot, length) goes out while the receive of that slot's ack is posted (Sending); both done, the
 * slot is free again.
 */
bool shmSendStep(Ctx* c, gpumpi_request* r, ShmLink* l) {
	bool changed = false;
	for (size_t i = 0; i < r->ops.size();) {
		Op& op = r->ops[i];
		bool finished = false;
		if (op.stage == Stage::CopyingIn) {
			Poll d = copyDone(c, r->copy, l->outEv[op.slot]);
			if (d == Poll::Failed) return bail(c, r, GPUMPI_ERR_CUDA, c->lastError);
			if (d == Poll::Done) { op.stage = Stage::CopiedIn; changed = true; }
		} else if (op.stage == Stage::Sending) {
			int f1 = 0, f2 = 0;
			if (MPI_Test(&op.mreq, &f1, MPI_STATUS_IGNORE) != MPI_SUCCESS || MPI_Test(&op.mreq2, &f2, MPI_STATUS_IGNORE) != MPI_SUCCESS)
				return bail(c, r, GPUMPI_ERR_MPI, "shm signal/ack failed");
			finished = f1 && f2;
		}
		if (finished) {
			l->outFree[op.slot] = 1;
			r->ops.erase(r->ops.begin() + static_cast<long>(i));
			++r->nDone;
			changed = true;
		} else {
			++i;
		}
	}
	for (bool again = true; again;) {
		again = false;
		for (auto& op : r->ops) {
			if (op.stage != Stage::CopiedIn || op.chunk != r->nextMpi) continue;
			uint64_t* sig = &l->sigOut[2 * op.slot];
			sig[0] = static_cast<uint64_t>(op.slot);
			sig[1] = op.len;
			int rc = MPI_Isend(sig, 16, MPI_BYTE, r->peer, r->tag, c->shmComm, &op.mreq);
			if (rc == MPI_SUCCESS) rc = MPI_Irecv(&l->ackIn[op.slot], 8, MPI_BYTE, r->peer, op.slot, c->ackComm, &op.mreq2);
			if (rc != MPI_SUCCESS) return bail(c, r, GPUMPI_ERR_MPI, "shm signal: " + mpiErrorText(rc));
			op.stage = Stage::Sending;
			++r->nextMpi;
			again = changed = true;
		}
	}
	if (r->nextMpi == r->nChunks && !r->fullyPosted) { r->fullyPosted = true; dequeue(c, r); }
	while (r->nextStart < r->nChunks && isFront(c, r)) {
		int s = -1;
		for (int k = 0; k < l->nslots; ++k) if (l->outFree[k]) { s = k; break; }
		if (s < 0) break;
		Op op;
		op.chunk = r->nextStart;
		op.len = chunkLen(r, op.chunk);
		op.slot = s;
		op.stage = Stage::CopyingIn;
		l->outFree[s] = 0;
		if (startCopy(c, r->copy, l->out + static_cast<size_t>(s) * l->slotBytes, r->buf + op.chunk * r->piece, op.len, l->outEv[s]) != GPUMPI_SUCCESS) {
			l->outFree[s] = 1;
			return bail(c, r, GPUMPI_ERR_CUDA, c->lastError);
		}
		r->ops.push_back(op);
		++r->nextStart;
		changed = true;
	}
	return changed;
}

/**
 * Receiver: for each chunk (at most nslots ahead of the oldest unfinished one) a receive of its signal is posted
 * (Receiving); the signal names the sender's slot, which is copied into the user's buffer (CopyingOut); then the
 * 8-byte ack (tag = slot) gives the slot back to the sender (Acking).
 */
bool shmRecvStep(Ctx* c, gpumpi_request* r, ShmLink* l) {
	bool changed = false;
	if (r->sigbuf.empty()) r->sigbuf.assign(2 * static_cast<size_t>(l->nslots), 0);
	for (size_t i = 0; i < r->ops.size();) {
		Op& op = r->ops[i];
		bool finished = false;
		if (op.stage == Stage::Receiving) {
			int flag = 0;
			if (MPI_Test(&op.mreq, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return bail(c, r, GPUMPI_ERR_MPI, "shm signal receive failed");
			if (flag) {
				uint64_t* sig = &r->sigbuf[2 * (op.chunk % static_cast<size_t>(l->nslots))];
				if (sig[0] >= static_cast<uint64_t>(l->nslots) || sig[1] != op.len)
					return bail(c, r, GPUMPI_ERR_MISMATCH, "shm chunk " + std::to_string(op.chunk) + " from peer " + std::to_string(r->peer) + " has " +
					            std::to_string(sig[1]) + " bytes, expected " + std::to_string(op.len) + ": both sides must pass the same size and flags");
				op.slot = static_cast<int>(sig[0]);
				if (startCopy(c, r->copy, r->buf + op.chunk * r->piece, l->in + static_cast<size_t>(op.slot) * l->slotBytes, op.len, l->inEv[op.slot]) != GPUMPI_SUCCESS)
					return bail(c, r, GPUMPI_ERR_CUDA, c->lastError);
				op.stage = Stage::CopyingOut;
				changed = true;
			}
		}
		if (op.stage == Stage::CopyingOut) {
			Poll d = copyDone(c, r->copy, l->inEv[op.slot]);
			if (d == Poll::Failed) return bail(c, r, GPUMPI_ERR_CUDA, c->lastError);
			if (d == Poll::Done) {
				l->ackOut[op.slot] = static_cast<uint64_t>(op.slot);
				int rc = MPI_Isend(&l->ackOut[op.slot], 8, MPI_BYTE, r->peer, op.slot, c->ackComm, &op.mreq);
				if (rc != MPI_SUCCESS) return bail(c, r, GPUMPI_ERR_MPI, "shm ack: " + mpiErrorText(rc));
				op.stage = Stage::Acking;
				changed = true;
			}
		}
		if (op.stage == Stage::Acking) {
			int flag = 0;
			if (MPI_Test(&op.mreq, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return bail(c, r, GPUMPI_ERR_MPI, "shm ack send failed");
			finished = flag != 0;
		}
		if (finished) {
			r->ops.erase(r->ops.begin() + static_cast<long>(i));
			++r->nDone;
			changed = true;
		} else {
			++i;
		}
	}
	size_t oldest = r->nextStart;
	for (const auto& op : r->ops) oldest = std::min(oldest, op.chunk);
	while (!r->fullyPosted && isFront(c, r) && r->nextStart < oldest + static_cast<size_t>(l->nslots)) {
		Op op;
		op.chunk = r->nextStart;
		op.len = chunkLen(r, op.chunk);
		op.stage = Stage::Receiving;
		uint64_t* sig = &r->sigbuf[2 * (op.chunk % static_cast<size_t>(l->nslots))];
		int rc = MPI_Irecv(sig, 16, MPI_BYTE, r->peer, r->tag, c->shmComm, &op.mreq);
		if (rc != MPI_SUCCESS) return bail(c, r, GPUMPI_ERR_MPI, "shm signal receive: " + mpiErrorText(rc));
		r->ops.push_back(op);
		changed = true;
		if (++r->nextStart == r->nChunks) { r->fullyPosted = true; dequeue(c, r); }
	}
	return changed;
}

}  // namespace

bool shmStep(Ctx* c, gpumpi_request* r) {
	bool changed = false;
	Poll hs = handshake(c, r, &changed);
	if (hs == Poll::Failed) return true;
	if (hs == Poll::Pending) return changed;
	ShmLink* l = c->shm[r->peer];
	bool moved = r->dir == Dir::Send ? shmSendStep(c, r, l) : shmRecvStep(c, r, l);
	return moved || changed;
}

}  // namespace gpumpi::lib
