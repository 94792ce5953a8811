// Requests, wire protocols and progress.
// Wire format (both ranks derive it from the pair's protocol, the byte count and the flags):
//   DIRECT: ceil(bytes / directPiece) MPI messages on the data communicator (one empty message for 0 bytes);
//   STAGED: the receiver first sends an 8-byte clear-to-send (its byte count) on the signal communicator; the
//           sender waits for it, answers with an 8-byte size header (header communicator; so a size mismatch is
//           seen on both sides and nobody waits forever), then sends ceil(bytes / chunk) MPI messages of host chunks.
//   SHM: see shmPath.cc.
// Why the handshake and the probing: staging slots are finite, while MPI lets the application post sends and
// receives in any order. A sender only takes slots for a transfer whose receiver is already waiting (CTS), and a
// staged receiver only takes a slot for a chunk that has already arrived (MPI_Improbe + MPI_Imrecv), so a slot is
// never held waiting on something the application has not posted yet: no deadlock from slot exhaustion.
// Local execution modes: Plain (the user's buffer goes to MPI piece by piece, at most kWindow in flight),
// Staged (device <-> host staging slot copies around the MPI chunk transfers, pipelined over the slots),
// Bounce (imported IPC memory: device-to-device copies through the device bounce slots, never the imported
// pointer to MPI), Shm. Ordering: per (peer, tag, direction) only the oldest request posts MPI operations, and
// each request posts its chunks in order, so MPI's in-order matching pairs the right chunks.
#include <sched.h>

#include <algorithm>
#include <cstring>

#include "internal.hh"

namespace gpumpi::lib {
namespace {

constexpr size_t kWindow = 16;
char gZero[1];

SlotPool& poolOf(Ctx* c, gpumpi_request* r) { return r->mode == gpumpi_request::Bounce ? c->bounce : c->host; }

}  // namespace

bool isFront(Ctx* c, gpumpi_request* r) {
	auto it = c->order.find(Key{r->peer, r->tag, r->dir});
	return it != c->order.end() && !it->second.empty() && it->second.front() == r;
}

void dequeue(Ctx* c, gpumpi_request* r) {
	if (!r->queued) return;
	auto it = c->order.find(Key{r->peer, r->tag, r->dir});
	if (it != c->order.end()) {
		auto& q = it->second;
		q.erase(std::remove(q.begin(), q.end(), r), q.end());
		if (q.empty()) c->order.erase(it);
	}
	r->queued = false;
}

void abortRequest(Ctx* c, gpumpi_request* r, gpumpi_status st, const std::string& text) {
	if (r->done) return;
	r->err = st;
	r->errText = text;
	if (r->hdrReq != MPI_REQUEST_NULL) {
		int flag = 0;
		MPI_Test(&r->hdrReq, &flag, MPI_STATUS_IGNORE);
		if (!flag && r->dir == Dir::Recv) { MPI_Cancel(&r->hdrReq); MPI_Wait(&r->hdrReq, MPI_STATUS_IGNORE); }
		else if (!flag) MPI_Wait(&r->hdrReq, MPI_STATUS_IGNORE);  // 8 bytes, eager: the receiver has it posted
	}
	if (r->ctsReq != MPI_REQUEST_NULL) {
		int flag = 0;
		MPI_Test(&r->ctsReq, &flag, MPI_STATUS_IGNORE);
		if (!flag && r->dir == Dir::Send) { MPI_Cancel(&r->ctsReq); MPI_Wait(&r->ctsReq, MPI_STATUS_IGNORE); }
		else if (!flag) MPI_Request_free(&r->ctsReq);
	}
	for (auto& op : r->ops) {
		if (r->mode == gpumpi_request::Shm) break;  // shmAbort below
		if (op.mreq != MPI_REQUEST_NULL) {
			int flag = 0;
			MPI_Test(&op.mreq, &flag, MPI_STATUS_IGNORE);
			if (!flag && r->dir == Dir::Recv) {
				MPI_Cancel(&op.mreq);
				MPI_Wait(&op.mreq, MPI_STATUS_IGNORE);
			} else if (!flag) {
				MPI_Request_free(&op.mreq);  // an unmatched send: MPI finishes it later; the slot memory stays valid
			}
		}
		if (op.slot >= 0 && r->mode != gpumpi_request::Shm) poolOf(c, r).release(op.slot);
	}
	if (r->mode == gpumpi_request::Shm) shmAbort(c, r);
	r->ops.clear();
	dequeue(c, r);
	r->done = true;
}

namespace {

/** The error of a received chunk of `count` bytes where op.len were expected. */
std::string chunkSizeMismatch(const gpumpi_request* r, const Op& op, int count) {
	return "chunk " + std::to_string(op.chunk) + " from peer " + std::to_string(r->peer) + " has " + std::to_string(count) + " bytes, expected " +
	       std::to_string(op.len) + ": both sides must pass the same size and flags";
}

/** Test one MPI op (Failed: the request is aborted). Checks the received length. */
Poll testOp(Ctx* c, gpumpi_request* r, Op& op) {
	int flag = 0;
	MPI_Status st;
	int rc = MPI_Test(&op.mreq, &flag, &st);
	if (rc != MPI_SUCCESS) {
		int cls = 0;
		MPI_Error_class(rc, &cls);
		if (cls == MPI_ERR_TRUNCATE || cls == MPI_ERR_IN_STATUS) {
			abortRequest(c, r, GPUMPI_ERR_MISMATCH, "peer " + std::to_string(r->peer) + " sent more than chunk " + std::to_string(op.chunk) +
			             " expects (" + std::to_string(op.len) + " bytes): both sides must pass the same size and flags");
		} else {
			abortRequest(c, r, GPUMPI_ERR_MPI, "MPI_Test failed: " + mpiErrorText(rc));
		}
		return Poll::Failed;
	}
	if (!flag) return Poll::Pending;
	if (r->dir == Dir::Recv) {
		int cnt = -1;
		MPI_Get_count(&st, MPI_BYTE, &cnt);
		if (cnt < 0 || static_cast<size_t>(cnt) != op.len) {
			abortRequest(c, r, GPUMPI_ERR_MISMATCH, chunkSizeMismatch(r, op, cnt));
			return Poll::Failed;
		}
	}
	return Poll::Done;
}

/** Post op's MPI send or receive of p; false when it failed (the request is aborted). */
bool postMpi(Ctx* c, gpumpi_request* r, Op& op, void* p) {
	int n = static_cast<int>(op.len);
	void* ptr = op.len ? p : gZero;
	int rc = r->dir == Dir::Send ? MPI_Isend(ptr, n, MPI_BYTE, r->peer, r->tag, c->comm, &op.mreq)
	                     : MPI_Irecv(ptr, n, MPI_BYTE, r->peer, r->tag, c->comm, &op.mreq);
	if (rc != MPI_SUCCESS) {
		abortRequest(c, r, GPUMPI_ERR_MPI, std::string(r->dir == Dir::Send ? "MPI_Isend" : "MPI_Irecv") + " failed: " + mpiErrorText(rc));
		return false;
	}
	return true;
}

bool stepPlain(Ctx* c, gpumpi_request* r) {
	bool changed = false;
	Poll hs = handshake(c, r, &changed);
	if (hs == Poll::Failed) return true;
	if (hs == Poll::Pending) return changed;
	for (size_t i = 0; i < r->ops.size();) {
		Poll t = testOp(c, r, r->ops[i]);
		if (t == Poll::Failed) return true;
		if (t == Poll::Done) {
			r->ops.erase(r->ops.begin() + static_cast<long>(i));
			++r->nDone;
			changed = true;
		} else {
			++i;
		}
	}
	while (!r->fullyPosted && r->ops.size() < kWindow && isFront(c, r)) {
		Op op;
		op.chunk = r->nextStart;
		op.len = chunkLen(r, op.chunk);
		if (!postMpi(c, r, op, r->buf + op.chunk * r->piece)) return true;
		r->ops.push_back(op);
		changed = true;
		if (++r->nextStart == r->nChunks) {
			r->fullyPosted = true;
			dequeue(c, r);
		}
	}
	return changed;
}

// Staged / Bounce chunks. Send: CopyingIn -> CopiedIn -> Sending (posted in chunk order). Receive: Receiving ->
// CopyingOut. Each step below returns false when it aborted the request.

/** One op of a Staged / Bounce request a step further: Done when its chunk is through (its slot can go). */
Poll advanceStagedOp(Ctx* c, gpumpi_request* r, SlotPool& pool, Op& op, bool* changed) {
	if (r->dir == Dir::Send) {
		if (op.stage == Stage::Sending) return testOp(c, r, op);
		if (op.stage != Stage::CopyingIn) return Poll::Pending;
		Poll d = copyDone(c, r->copy, pool.events[op.slot]);
		if (d == Poll::Failed) { abortRequest(c, r, GPUMPI_ERR_CUDA, c->lastError); return Poll::Failed; }
		if (d == Poll::Done) { op.stage = Stage::CopiedIn; *changed = true; }
		return Poll::Pending;
	}
	if (op.stage == Stage::Receiving) {
		Poll t = testOp(c, r, op);
		if (t == Poll::Failed) return t;
		if (t == Poll::Done) {
			if (startCopy(c, r->copy, r->buf + op.chunk * r->piece, pool.slots[op.slot], op.len, pool.events[op.slot]) != GPUMPI_SUCCESS) {
				abortRequest(c, r, GPUMPI_ERR_CUDA, c->lastError);
				return Poll::Failed;
			}
			op.stage = Stage::CopyingOut;
			*changed = true;
		}
	}
	if (op.stage != Stage::CopyingOut) return Poll::Pending;
	Poll d = copyDone(c, r->copy, pool.events[op.slot]);
	if (d == Poll::Failed) abortRequest(c, r, GPUMPI_ERR_CUDA, c->lastError);
	return d;
}

bool advanceStagedOps(Ctx* c, gpumpi_request* r, SlotPool& pool, bool* changed) {
	for (size_t i = 0; i < r->ops.size();) {
		Op& op = r->ops[i];
		Poll p = advanceStagedOp(c, r, pool, op, changed);
		if (p == Poll::Failed) return false;
		if (p == Poll::Done) {
			pool.release(op.slot);
			r->ops.erase(r->ops.begin() + static_cast<long>(i));
			++r->nDone;
			*changed = true;
		} else {
			++i;
		}
	}
	return true;
}

/** Send: the MPI sends of copied-in chunks, strictly in chunk order; after the last the request leaves its queue. */
bool postStagedSends(Ctx* c, gpumpi_request* r, SlotPool& pool, bool* changed) {
	bool again = true;
	while (again) {
		again = false;
		for (auto& op : r->ops) {
			if (op.stage == Stage::CopiedIn && op.chunk == r->nextMpi) {
				if (!postMpi(c, r, op, pool.slots[op.slot])) return false;
				op.stage = Stage::Sending;
				++r->nextMpi;
				again = *changed = true;
			}
		}
	}
	if (r->nextMpi == r->nChunks && !r->fullyPosted) {
		r->fullyPosted = true;
		dequeue(c, r);
	}
	return true;
}

/** Receive: op's chunk into its slot when it has arrived (MPI_Improbe + MPI_Imrecv); Pending: not yet, slot given back. */
Poll receiveArrivedChunk(Ctx* c, gpumpi_request* r, SlotPool& pool, Op& op) {
	MPI_Message msg = MPI_MESSAGE_NULL;
	MPI_Status st;
	int flag = 0;
	int rc = MPI_Improbe(r->peer, r->tag, c->comm, &flag, &msg, &st);
	if (rc != MPI_SUCCESS) { pool.release(op.slot); abortRequest(c, r, GPUMPI_ERR_MPI, "MPI_Improbe failed: " + mpiErrorText(rc)); return Poll::Failed; }
	if (!flag) { pool.release(op.slot); return Poll::Pending; }  // the chunk has not arrived: hold no slot for it
	int cnt = -1;
	MPI_Get_count(&st, MPI_BYTE, &cnt);
	if (cnt < 0 || static_cast<size_t>(cnt) != op.len) {
		MPI_Mrecv(nullptr, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE);  // consume it (truncation error ignored)
		pool.release(op.slot);
		abortRequest(c, r, GPUMPI_ERR_MISMATCH, chunkSizeMismatch(r, op, cnt));
		return Poll::Failed;
	}
	rc = MPI_Imrecv(pool.slots[op.slot], static_cast<int>(op.len), MPI_BYTE, &msg, &op.mreq);
	if (rc != MPI_SUCCESS) { pool.release(op.slot); abortRequest(c, r, GPUMPI_ERR_MPI, "MPI_Imrecv failed: " + mpiErrorText(rc)); return Poll::Failed; }
	return Poll::Done;
}

/** The next chunks while a slot is free and the request is first in its queue: a send copies its chunk into the slot,
 *  a receive takes a slot only for a chunk that has already arrived. */
bool startStagedChunks(Ctx* c, gpumpi_request* r, SlotPool& pool, bool* changed) {
	while (r->nextStart < r->nChunks && isFront(c, r)) {
		int s = pool.acquire(r->dir);
		if (s < 0) break;
		Op op;
		op.chunk = r->nextStart;
		op.len = chunkLen(r, op.chunk);
		op.slot = s;
		op.stage = r->dir == Dir::Send ? Stage::CopyingIn : Stage::Receiving;
		if (r->dir == Dir::Send) {
			if (startCopy(c, r->copy, pool.slots[s], r->buf + op.chunk * r->piece, op.len, pool.events[s]) != GPUMPI_SUCCESS) {
				pool.release(s);
				abortRequest(c, r, GPUMPI_ERR_CUDA, c->lastError);
				return false;
			}
		} else {
			Poll p = receiveArrivedChunk(c, r, pool, op);
			if (p == Poll::Failed) return false;
			if (p == Poll::Pending) break;
		}
		r->ops.push_back(op);
		*changed = true;
		if (++r->nextStart == r->nChunks && r->dir == Dir::Recv) {
			r->fullyPosted = true;
			dequeue(c, r);
		}
	}
	return true;
}

bool stepStaged(Ctx* c, gpumpi_request* r) {
	SlotPool& pool = poolOf(c, r);
	bool changed = false;
	Poll hs = handshake(c, r, &changed);
	if (hs == Poll::Failed) return true;
	if (hs == Poll::Pending) return changed;
	if (!advanceStagedOps(c, r, pool, &changed)) return true;
	if (r->dir == Dir::Send && !postStagedSends(c, r, pool, &changed)) return true;
	if (!startStagedChunks(c, r, pool, &changed)) return true;
	return changed;
}

bool step(Ctx* c, gpumpi_request* r) {
	if (r->done) return false;
	bool changed;
	switch (r->mode) {
		case gpumpi_request::Plain: changed = stepPlain(c, r); break;
		case gpumpi_request::Shm: changed = shmStep(c, r); break;
		default: changed = stepStaged(c, r); break;
	}
	if (!r->done && r->proto != GPUMPI_PROTO_DIRECT && (r->cts == Exchange::InFlight || r->hdr == Exchange::InFlight)) {
		bool hsChanged = false;
		if (handshake(c, r, &hsChanged) == Poll::Failed) return true;
	}
	bool ctsDone = r->proto == GPUMPI_PROTO_DIRECT || (r->cts == Exchange::Done && r->hdr == Exchange::Done);
	if (!r->done && ctsDone && r->fullyPosted && r->nDone == r->nChunks && r->ops.empty()) {
		r->done = true;
		changed = true;
	}
	return changed;
}

bool inIpcMap(Ctx* c, const void* p) {
	auto* q = static_cast<const char*>(p);
	for (const auto& m : c->ipc) if (q >= m.base && q < m.base + m.bytes) return true;
	return false;
}

}  // namespace

Poll handshake(Ctx* c, gpumpi_request* r, bool* changed) {
	if (r->proto == GPUMPI_PROTO_DIRECT) return Poll::Done;
	if (r->cts == Exchange::NotPosted) {
		if (!isFront(c, r)) return Poll::Pending;
		int rc;
		if (r->dir == Dir::Send) {
			rc = MPI_Irecv(&r->ctsBuf, 8, MPI_BYTE, r->peer, r->tag, c->sigComm, &r->ctsReq);
		} else {
			r->ctsBuf = r->bytes;
			rc = MPI_Isend(&r->ctsBuf, 8, MPI_BYTE, r->peer, r->tag, c->sigComm, &r->ctsReq);
			if (rc == MPI_SUCCESS) rc = MPI_Irecv(&r->hdrBuf, 8, MPI_BYTE, r->peer, r->tag, c->hdrComm, &r->hdrReq);
			r->hdr = Exchange::InFlight;
		}
		if (rc != MPI_SUCCESS) { abortRequest(c, r, GPUMPI_ERR_MPI, "clear-to-send: " + mpiErrorText(rc)); return Poll::Failed; }
		r->cts = Exchange::InFlight;
		*changed = true;
	}
	if (r->cts == Exchange::InFlight) {
		int flag = 0;
		int rc = MPI_Test(&r->ctsReq, &flag, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS) { abortRequest(c, r, GPUMPI_ERR_MPI, "clear-to-send: " + mpiErrorText(rc)); return Poll::Failed; }
		if (flag) {
			r->cts = Exchange::Done;
			*changed = true;
			if (r->dir == Dir::Send) {
				r->hdrBuf = r->bytes;
				int hrc = MPI_Isend(&r->hdrBuf, 8, MPI_BYTE, r->peer, r->tag, c->hdrComm, &r->hdrReq);
				if (hrc != MPI_SUCCESS) { abortRequest(c, r, GPUMPI_ERR_MPI, "size header: " + mpiErrorText(hrc)); return Poll::Failed; }
				r->hdr = Exchange::InFlight;
			}
			if (r->dir == Dir::Send && r->ctsBuf != r->bytes) {
				abortRequest(c, r, GPUMPI_ERR_MISMATCH, "peer " + std::to_string(r->peer) + " receives " + std::to_string(r->ctsBuf) + " bytes on tag " +
				             std::to_string(r->tag) + ", this send has " + std::to_string(r->bytes) + ": both sides must pass the same size and flags");
				return Poll::Failed;
			}
		}
	}
	if (r->hdr == Exchange::InFlight) {
		int flag = 0;
		int rc = MPI_Test(&r->hdrReq, &flag, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS) { abortRequest(c, r, GPUMPI_ERR_MPI, "size header: " + mpiErrorText(rc)); return Poll::Failed; }
		if (flag) {
			r->hdr = Exchange::Done;
			*changed = true;
			if (r->dir == Dir::Recv && r->hdrBuf != r->bytes) {
				abortRequest(c, r, GPUMPI_ERR_MISMATCH, "peer " + std::to_string(r->peer) + " sends " + std::to_string(r->hdrBuf) + " bytes on tag " +
				             std::to_string(r->tag) + ", this receive expects " + std::to_string(r->bytes) + ": both sides must pass the same size and flags");
				return Poll::Failed;
			}
		}
	}
	// the receiver may receive while its CTS is still in flight; the sender waits for it
	return r->dir == Dir::Recv || r->cts == Exchange::Done ? Poll::Done : Poll::Pending;
}

gpumpi_status progress(Ctx* c) {
	for (int pass = 0; pass < 8; ++pass) {
		bool changed = false;
		std::vector<gpumpi_request*> snapshot = c->active;
		for (gpumpi_request* r : snapshot) changed |= step(c, r);
		c->active.erase(std::remove_if(c->active.begin(), c->active.end(), [](gpumpi_request* r) { return r->done; }), c->active.end());
		if (!changed) break;
	}
	return GPUMPI_SUCCESS;
}

void freeRequest(gpumpi_request* r) { delete r; }

gpumpi_status post(Ctx* c, Dir dir, void* buf, size_t bytes, int peer, int tag, unsigned callFlags, gpumpi_request** out) {
	if (!out) return fail(c, GPUMPI_ERR_ARG, "request pointer is NULL");
	*out = nullptr;
	if (!buf && bytes) return fail(c, GPUMPI_ERR_ARG, "buffer is NULL but bytes = %zu", bytes);
	if (bytes > static_cast<size_t>(PTRDIFF_MAX)) return fail(c, GPUMPI_ERR_ARG, "size %zu overflows (negative size cast to size_t?)", bytes);
	if (peer < 0 || peer >= c->size) return fail(c, GPUMPI_ERR_PEER, "peer %d is out of range 0..%d (MPI_ANY_SOURCE / MPI_PROC_NULL are not supported)", peer, c->size - 1);
	if (tag < 0 || tag > c->tagUb) return fail(c, GPUMPI_ERR_TAG, "tag %d is out of range 0..%d (MPI_ANY_TAG is not supported)", tag, c->tagUb);
	if (callFlags & ~kCallFlags) return fail(c, GPUMPI_ERR_ARG, "unknown per-call flags 0x%x", callFlags & ~kCallFlags);
	unsigned flags = (c->cfg.flags & kCallFlags & ~GPUMPI_FORCE_SHM) | callFlags;  // config FORCE_SHM only sets up segments
	if ((flags & GPUMPI_FORCE_DIRECT) && (flags & (GPUMPI_FORCE_STAGED | GPUMPI_STAGE_HOST)))
		return fail(c, GPUMPI_ERR_ARG, "GPUMPI_FORCE_DIRECT conflicts with GPUMPI_FORCE_STAGED / GPUMPI_STAGE_HOST");
	if ((flags & GPUMPI_FORCE_SHM) && (flags & (GPUMPI_FORCE_DIRECT | GPUMPI_FORCE_STAGED)))
		return fail(c, GPUMPI_ERR_ARG, "GPUMPI_FORCE_SHM conflicts with GPUMPI_FORCE_DIRECT / GPUMPI_FORCE_STAGED");
	if (bytes && c->cuda) makeCurrent(c);
	bool device = bytes && gpumpi_is_device_ptr(buf);
	if (device && !c->cuda) return fail(c, GPUMPI_ERR_NO_CUDA, "buffer %p is device memory but this context has no CUDA (%s)", buf, c->noCudaWhy.c_str());
	bool imported = device && inIpcMap(c, buf);
	const Peer& p = c->peers[peer];
	gpumpi_protocol proto = p.proto;
	if (flags & GPUMPI_FORCE_SHM) proto = GPUMPI_PROTO_SHM;
	else if (flags & (GPUMPI_FORCE_STAGED | GPUMPI_STAGE_HOST)) proto = GPUMPI_PROTO_STAGED;
	else if (flags & GPUMPI_FORCE_DIRECT) proto = GPUMPI_PROTO_DIRECT;
	if (proto == GPUMPI_PROTO_SHM && !shmHasLink(c, peer))
		return fail(c, GPUMPI_ERR_UNSUPPORTED, "no shared segment with peer %d (%s; GPUMPI_FORCE_SHM needs it in the config of both ranks)", peer,
		            peer == c->rank ? "the peer is this rank" : p.sameHost ? "not set up at init" : "not on this host");

	auto* r = new gpumpi_request();
	r->ctx = c;
	r->dir = dir;
	r->peer = peer;
	r->tag = tag;
	r->buf = static_cast<char*>(buf);
	r->bytes = bytes;
	r->flags = flags;
	r->proto = proto;
	if (proto == GPUMPI_PROTO_DIRECT) {
		r->piece = p.directPiece;
		if (imported) {
			if (c->bounce.slots.size() < 2) { delete r; return fail(c, GPUMPI_ERR_INTERNAL, "no device bounce buffer for imported memory"); }
			r->mode = gpumpi_request::Bounce;
			r->copy = CopyKind::D2D;
		} else if (device && c->self.mpiAware != 1) {
			delete r;
			return fail(c, GPUMPI_ERR_UNSUPPORTED, "device buffer with the direct protocol, but this MPI is not CUDA-aware (%s); use staging",
			            c->self.awareWhy);
		}
	} else if (proto == GPUMPI_PROTO_STAGED) {
		r->piece = p.chunk;
		if (device || (flags & GPUMPI_STAGE_HOST)) {
			r->mode = gpumpi_request::Staged;
			r->copy = !device ? CopyKind::HostMemcpy : dir == Dir::Send ? CopyKind::D2H : CopyKind::H2D;
			if (c->host.slots.empty()) {
				delete r;
				return fail(c, GPUMPI_ERR_NO_STAGING, "peer %d needs the staging protocol but no staging buffer is registered "
				            "(gpumpi_register_staging or gpumpi_config.alloc_staging)", peer);
			}
			if (c->host.slots.size() < 2) {
				delete r;
				return fail(c, GPUMPI_ERR_STAGING, "staging needs at least 2 chunk-sized slots (have 1 of %zu bytes)", c->host.slotBytes);
			}
		}
	} else {
		r->piece = p.chunk;
		r->mode = gpumpi_request::Shm;
		r->copy = !device ? CopyKind::HostMemcpy : dir == Dir::Send ? CopyKind::D2H : CopyKind::H2D;
	}
	if (bytes == 0 && r->mode != gpumpi_request::Shm) r->mode = gpumpi_request::Plain;
	r->nChunks = bytes == 0 ? 1 : (bytes + r->piece - 1) / r->piece;
	c->order[Key{peer, tag, dir}].push_back(r);
	r->queued = true;
	c->active.push_back(r);
	step(c, r);
	*out = r;
	return GPUMPI_SUCCESS;
}

}  // namespace gpumpi::lib
