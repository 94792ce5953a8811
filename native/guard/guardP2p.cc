// Point-to-point (blocking, non-blocking, persistent, Sendrecv), the probe family and the Wait/Test family.
// Counts: one call = one message; "bytes" are count × type size as posted (a receive counts its posted size).
// Fix mode: a send from / receive into IPC-imported GPU memory, or pool / VMM memory to or from a same-host GPU peer
// under UCX cuda_ipc (poolVmmCannotExport), goes through a device bounce buffer this rank owns (cuMemAlloc memory);
// a non-blocking receive is copied into the import when Wait/Test completes it (the request -> pending table).
#include <cstdio>
#include <unistd.h>

#include <unordered_map>

#include "guardStage.hh"
#include "guardHandlers.gen.hh"
#include "guardState.hh"

namespace gpumpi::guard {
namespace {

/** What a request still needs at completion. */
struct Pending {
	bool persistent = false, send = false, active = true, anySource = false;
	MPI_Comm comm = MPI_COMM_NULL;
	const void* buf = nullptr;
	int count = 0;
	MPI_Datatype type = MPI_DATATYPE_NULL;
	int rank = MPI_PROC_NULL;  // in comm (persistent: for the per-Start counts)
	int peer = -1;             // world
	uint64_t bytes = 0;
	Cls cls = kNumCls;
	CallId call = C_Irecv;
	void* bounce = nullptr;    // active bounce buffer (fix mode)
	MPI_Aint lb = 0;
	size_t span = 0;
};
std::unordered_map<MPI_Request, Pending>& pend() {
	static auto* m = new std::unordered_map<MPI_Request, Pending>();
	return *m;
}
/** Entries whose completion has work to do (a bounce copy, an MPI_ANY_SOURCE source): while there are none, the
 *  Wait/Test family passes straight through (persistent requests alone, kept for their Start counts, cost nothing). */
size_t gNeedCompletion = 0;
bool needs(const Pending& p) { return p.bounce || p.anySource; }
void track(MPI_Request req, const Pending& p) {
	auto& m = pend();
	auto it = m.find(req);
	if (it != m.end()) {
		if (needs(it->second)) gNeedCompletion--;
		m.erase(it);
	}
	if (needs(p)) gNeedCompletion++;
	m.emplace(req, p);
}
void untrack(std::unordered_map<MPI_Request, Pending>::iterator it) {
	if (needs(it->second)) gNeedCompletion--;
	pend().erase(it);
}
std::unordered_map<MPI_Message, MPI_Comm>& messages() {
	static auto* m = new std::unordered_map<MPI_Message, MPI_Comm>();
	return *m;
}

struct Obs { uint64_t bytes = 0; int peer = -1; Cls cls = kNumCls; bool bounce = false; DangerKind danger = DangerKind::Count; };

/** The danger record observe() counted this call in (for markStaged when STAGE takes it). */
DangerRef dangerRef(const Obs& o, CallId call, void* ra) { return DangerRef{o.danger, call, o.peer, o.bytes, ra}; }

/** Counts one message of `call` (peer stats, class, danger). Caller holds Lock. */
Obs observe(CallId call, const void* buf, int count, MPI_Datatype type, int rank, MPI_Comm comm, bool send, void* ra) {
	State& g = st();
	Obs o;
	o.bytes = typeBytes(count, type);
	o.peer = worldRank(comm, rank);
	if (o.bytes > 0 && buf) {
		o.cls = classify(buf, o.bytes);
		bool fixable = g.mode == Mode::Fix && (o.cls == kIpcImport || poolVmmCannotExport(o.peer, o.cls));
		o.danger = checkDanger(call, o.peer, o.bytes, o.cls, buf, ra, fixable);
		o.bounce = fixable;
	}
	if (o.peer >= 0) addPeer(o.peer, send, o.bytes, o.cls);
	return o;
}

bool stageCls(Cls c) { return c == kDevice || c == kPool || c == kVmm; }

/** A send the STAGE transfer would take if it were a plain MPI_Send / MPI_Isend / MPI_Sendrecv to a staged peer. */
bool stageEligible(const Obs& o, int dest, MPI_Comm comm) {
	return stageOn() && stageCls(o.cls) && o.bytes >= st().stageMin && dest >= 0 && stagedPeer(worldRank(comm, dest));
}

/** Extent of `count` × `type` as [lb, lb + span) relative to the buffer; contiguous when the span is all data. */
void spanOf(int count, MPI_Datatype type, MPI_Aint* lb, size_t* span, bool* contiguous) {
	MPI_Aint tlb = 0, text = 0, elb = 0, ext = 0;
	PMPI_Type_get_true_extent(type, &tlb, &text);
	PMPI_Type_get_extent(type, &elb, &ext);
	*lb = tlb;
	*span = count > 0 ? size_t(text + MPI_Aint(count - 1) * ext) : 0;
	*contiguous = typeBytes(count, type) == *span;
}

/** A bounce buffer for the message; for receives of non-contiguous types it starts as a copy of the user's span. */
void* bounceFor(const void* buf, int count, MPI_Datatype type, bool send, MPI_Aint* lb, size_t* span) {
	bool contiguous = false;
	spanOf(count, type, lb, span, &contiguous);
	std::string why;
	void* b = bounceAcquire(*span, &why);
	if (!b) {
		say("fix: no bounce buffer (" + why + "): the call goes to MPI unchanged");
		return nullptr;
	}
	const char* src = static_cast<const char*>(buf) + *lb;
	if ((send || !contiguous) && !copyDevice(b, src, *span, &why)) {
		say("fix: copy into the bounce buffer failed (" + why + "): the call goes to MPI unchanged");
		bounceRelease(b);
		return nullptr;
	}
	return b;
}

void bounceBack(void* bounce, const void* buf, MPI_Aint lb, size_t span) {
	std::string why;
	if (!copyDevice(static_cast<char*>(const_cast<void*>(buf)) + lb, bounce, span, &why)) say("fix: copy from the bounce buffer failed: " + why);
	st().bounced++;
}

/** Completion of `req` (its handle before the call) with `status` (never IGNORE when an entry needs it). */
void complete(MPI_Request req, const MPI_Status* status) {
	auto& m = pend();
	auto it = m.find(req);
	if (it == m.end()) return;
	Pending& p = it->second;
	if (!p.active) return;
	if (p.anySource && status) {
		int peer = worldRank(p.comm, status->MPI_SOURCE);
		if (peer >= 0) addPeer(peer, false, p.bytes, p.cls);
	}
	if (p.bounce) {
		if (!p.send) bounceBack(p.bounce, p.buf, p.lb, p.span);
		if (!p.persistent) bounceRelease(p.bounce);
	}
	if (p.persistent) p.active = false;
	else untrack(it);
}

void untracked(MPI_Request* req);

/** Non-blocking send / receive, with the fix-mode bounce. */
int postNb(CallId call, bool send, const void* buf, int count, MPI_Datatype type, int rank, int tag, MPI_Comm comm, MPI_Request* req, void* ra,
           int (*sendFn)(const void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*)) {
	uint64_t t = nowNs();
	Obs o;
	Pending p;
	{
		Lock l;
		o = observe(call, buf, count, type, rank, comm, send, ra);
		if (o.bounce) p.bounce = bounceFor(buf, count, type, send, &p.lb, &p.span);
	}
	const void* use = p.bounce ? static_cast<const char*>(p.bounce) - p.lb : buf;
	if (stageOn() && !p.bounce && req) {
		int rc = -1;
		if (send && stageEligible(o, rank, comm)) {
			if (call != C_Isend) refuse(Refuse::Mode);
			else if (wantStage(buf, count, type, rank, comm, o.bytes, true)) rc = stagedIsend(buf, count, type, rank, tag, comm, req);
			if (rc == MPI_SUCCESS) markStaged(dangerRef(o, call, ra));
		} else if (!send && recvNeedsGuard(count, type, rank, tag, comm)) {
			rc = guardIrecv(const_cast<void*>(buf), count, type, rank, tag, comm, req, dangerRef(o, call, ra));
		}
		if (rc != -1) {
			Lock l;
			addCall(call, o.bytes, nowNs() - t);
			return rc;
		}
	}
	int rc = send ? sendFn(use, count, type, rank, tag, comm, req)
	              : PMPI_Irecv(const_cast<void*>(use), count, type, rank, tag, comm, req);
	Lock l;
	addCall(call, o.bytes, nowNs() - t);
	bool any = !send && rank == MPI_ANY_SOURCE;
	if (rc == MPI_SUCCESS && req && (p.bounce || any)) {
		p.send = send; p.anySource = any; p.comm = comm; p.buf = buf; p.bytes = o.bytes; p.cls = o.cls; p.call = call;
		track(*req, p);
	} else {
		if (p.bounce) bounceRelease(p.bounce);
		if (rc == MPI_SUCCESS) untracked(req);
	}
	return rc;
}

/** Blocking send (any mode) with the fix-mode bounce. */
int blockingSend(CallId call, const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, void* ra,
                 int (*fn)(const void*, int, MPI_Datatype, int, int, MPI_Comm)) {
	uint64_t t = nowNs();
	Obs o;
	void* bounce = nullptr;
	MPI_Aint lb = 0;
	size_t span = 0;
	{
		Lock l;
		o = observe(call, buf, count, type, dest, comm, true, ra);
		if (o.bounce) bounce = bounceFor(buf, count, type, true, &lb, &span);
	}
	const void* use = bounce ? static_cast<const char*>(bounce) - lb : buf;
	int rc;
	if (stageOn() && !bounce) {
		// staged (MPI_Send only), or, while the guard has transfers in flight, posted non-blocking and polled, so
		// that this rank's staged transfers keep moving while it waits (the peer may need them to reach our match)
		bool staged = false;
		MPI_Request r = MPI_REQUEST_NULL;
		if (stageEligible(o, dest, comm)) {
			if (call != C_Send) refuse(Refuse::Mode);
			else if (wantStage(buf, count, type, dest, comm, o.bytes, true)) staged = true;
		}
		if (staged) {
			rc = stagedIsend(buf, count, type, dest, tag, comm, &r);
			if (rc == MPI_SUCCESS) markStaged(dangerRef(o, call, ra));
		}
		else if (!stagePending()) rc = fn(use, count, type, dest, tag, comm);
		else {
			auto ifn = call == C_Ssend ? PMPI_Issend : call == C_Bsend ? PMPI_Ibsend : call == C_Rsend ? PMPI_Irsend : PMPI_Isend;
			rc = ifn(use, count, type, dest, tag, comm, &r);
		}
		if (rc == MPI_SUCCESS && r != MPI_REQUEST_NULL) rc = pollWait(&r, MPI_STATUS_IGNORE);
	} else {
		rc = fn(use, count, type, dest, tag, comm);
	}
	Lock l;
	if (bounce) { bounceRelease(bounce); st().bounced++; }
	addCall(call, o.bytes, nowNs() - t);
	return rc;
}

/** The Wait/Test family's view of the requests it is given: empty (no cost) while no request is tracked. */
struct Tracker {
	bool on = false;
	std::vector<MPI_Request> before;
	std::vector<MPI_Status> local;
	/** The statuses to hand to MPI: the caller's, or ours when an entry needs them and the caller passed IGNORE. */
	MPI_Status* prep(int n, const MPI_Request* reqs, MPI_Status* user, bool single) {
		{
			Lock l;
			on = gNeedCompletion > 0;
		}
		if (!on || n <= 0 || !reqs) return user;
		before.assign(reqs, reqs + n);
		if (single ? user == MPI_STATUS_IGNORE : user == MPI_STATUSES_IGNORE) {
			local.resize(size_t(single ? 1 : n));
			return local.data();
		}
		return user;
	}
	void done(int i, const MPI_Status* s) {
		if (on && i >= 0 && size_t(i) < before.size()) complete(before[size_t(i)], s);
	}
};

/** Drops a stale entry when MPI hands out a handle the table still holds (the old request was never completed). */
void untracked(MPI_Request* req) {
	if (!req || pend().empty()) return;
	auto it = pend().find(*req);
	if (it != pend().end()) untrack(it);
}

}  // namespace
}  // namespace gpumpi::guard

using namespace gpumpi::guard;

// ---- blocking ----
int gpumpi::guard::on_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, void* ra) {
	return blockingSend(C_Send, buf, count, type, dest, tag, comm, ra, PMPI_Send);
}
int gpumpi::guard::on_Ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, void* ra) {
	return blockingSend(C_Ssend, buf, count, type, dest, tag, comm, ra, PMPI_Ssend);
}
int gpumpi::guard::on_Bsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, void* ra) {
	return blockingSend(C_Bsend, buf, count, type, dest, tag, comm, ra, PMPI_Bsend);
}
int gpumpi::guard::on_Rsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, void* ra) {
	return blockingSend(C_Rsend, buf, count, type, dest, tag, comm, ra, PMPI_Rsend);
}

int gpumpi::guard::on_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status, void* ra) {
	uint64_t t = nowNs();
	Obs o;
	void* bounce = nullptr;
	MPI_Aint lb = 0;
	size_t span = 0;
	bool any = source == MPI_ANY_SOURCE;
	{
		Lock l;
		o = observe(C_Recv, buf, count, type, source, comm, false, ra);
		if (o.bounce) bounce = bounceFor(buf, count, type, false, &lb, &span);
	}
	MPI_Status local;
	MPI_Status* s = any && status == MPI_STATUS_IGNORE ? &local : status;
	int rc;
	void* use = bounce ? static_cast<char*>(bounce) - lb : buf;
	if (stageOn() && !bounce && recvNeedsGuard(count, type, source, tag, comm)) rc = guardRecv(buf, count, type, source, tag, comm, s, dangerRef(o, C_Recv, ra));
	else if (stageOn() && stagePending()) {
		MPI_Request r = MPI_REQUEST_NULL;
		rc = PMPI_Irecv(use, count, type, source, tag, comm, &r);
		if (rc == MPI_SUCCESS) rc = pollWait(&r, s);
	} else {
		rc = PMPI_Recv(use, count, type, source, tag, comm, s);
	}
	Lock l;
	if (bounce) {
		if (rc == MPI_SUCCESS) bounceBack(bounce, buf, lb, span);
		bounceRelease(bounce);
	}
	if (any && rc == MPI_SUCCESS) addPeer(worldRank(comm, s->MPI_SOURCE), false, o.bytes, o.cls);
	addCall(C_Recv, o.bytes, nowNs() - t);
	return rc;
}

int gpumpi::guard::on_Sendrecv(const void* sbuf, int scount, MPI_Datatype stype, int dest, int stag, void* rbuf, int rcount, MPI_Datatype rtype,
                           int source, int rtag, MPI_Comm comm, MPI_Status* status, void* ra) {
	uint64_t t = nowNs();
	Obs so, ro;
	void *sb = nullptr, *rb = nullptr;
	MPI_Aint slb = 0, rlb = 0;
	size_t sspan = 0, rspan = 0;
	bool any = source == MPI_ANY_SOURCE;
	{
		Lock l;
		so = observe(C_Sendrecv, sbuf, scount, stype, dest, comm, true, ra);
		ro = observe(C_Sendrecv, rbuf, rcount, rtype, source, comm, false, ra);
		if (so.bounce) sb = bounceFor(sbuf, scount, stype, true, &slb, &sspan);
		if (ro.bounce) rb = bounceFor(rbuf, rcount, rtype, false, &rlb, &rspan);
	}
	MPI_Status local;
	MPI_Status* s = any && status == MPI_STATUS_IGNORE ? &local : status;
	int rc;
	bool sendStaged = !sb && stageEligible(so, dest, comm) && wantStage(sbuf, scount, stype, dest, comm, so.bytes, true);
	bool recvGuarded = !rb && stageOn() && recvNeedsGuard(rcount, rtype, source, rtag, comm);
	if (stageOn() && !sb && !rb && (sendStaged || recvGuarded || stagePending())) {
		// both halves non-blocking (staged / through the receive queue where they need it), completed together
		MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
		MPI_Status qs[2];
		rc = sendStaged ? stagedIsend(sbuf, scount, stype, dest, stag, comm, &q[0]) : PMPI_Isend(sbuf, scount, stype, dest, stag, comm, &q[0]);
		if (rc == MPI_SUCCESS && sendStaged) markStaged(dangerRef(so, C_Sendrecv, ra));
		if (rc == MPI_SUCCESS) rc = recvGuarded ? guardIrecv(rbuf, rcount, rtype, source, rtag, comm, &q[1], dangerRef(ro, C_Sendrecv, ra)) : PMPI_Irecv(rbuf, rcount, rtype, source, rtag, comm, &q[1]);
		if (rc == MPI_SUCCESS) rc = pollWaitall(2, q, qs);
		if (rc == MPI_ERR_IN_STATUS) rc = qs[0].MPI_ERROR != MPI_SUCCESS ? qs[0].MPI_ERROR : qs[1].MPI_ERROR;
		if (s != MPI_STATUS_IGNORE) *s = qs[1];
	} else {
		rc = PMPI_Sendrecv(sb ? static_cast<char*>(sb) - slb : sbuf, scount, stype, dest, stag, rb ? static_cast<char*>(rb) - rlb : rbuf, rcount,
		                   rtype, source, rtag, comm, s);
	}
	Lock l;
	if (sb) { bounceRelease(sb); st().bounced++; }
	if (rb) {
		if (rc == MPI_SUCCESS) bounceBack(rb, rbuf, rlb, rspan);
		bounceRelease(rb);
	}
	if (any && rc == MPI_SUCCESS) addPeer(worldRank(comm, s->MPI_SOURCE), false, ro.bytes, ro.cls);
	addCall(C_Sendrecv, so.bytes + ro.bytes, nowNs() - t);
	return rc;
}

// ---- non-blocking ----
int gpumpi::guard::on_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req, void* ra) {
	return postNb(C_Isend, true, buf, count, type, dest, tag, comm, req, ra, PMPI_Isend);
}
int gpumpi::guard::on_Issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req, void* ra) {
	return postNb(C_Issend, true, buf, count, type, dest, tag, comm, req, ra, PMPI_Issend);
}
int gpumpi::guard::on_Ibsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req, void* ra) {
	return postNb(C_Ibsend, true, buf, count, type, dest, tag, comm, req, ra, PMPI_Ibsend);
}
int gpumpi::guard::on_Irsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req, void* ra) {
	return postNb(C_Irsend, true, buf, count, type, dest, tag, comm, req, ra, PMPI_Irsend);
}
int gpumpi::guard::on_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* req, void* ra) {
	return postNb(C_Irecv, false, buf, count, type, source, tag, comm, req, ra, nullptr);
}

// ---- persistent: Send_init / Recv_init count one call each (0 bytes); every Start counts the message ----
namespace {
int initPersistent(CallId call, bool send, const void* buf, int count, MPI_Datatype type, int rank, int tag, MPI_Comm comm, MPI_Request* req, void* ra) {
	uint64_t t = nowNs();
	Pending p;
	p.persistent = true; p.send = send; p.active = false; p.comm = comm; p.buf = buf; p.count = count; p.type = type; p.rank = rank;
	p.call = call;
	{
		Lock l;
		p.bytes = typeBytes(count, type);
		p.peer = worldRank(comm, rank);
		p.anySource = !send && rank == MPI_ANY_SOURCE;
		if (p.bytes > 0 && buf) p.cls = classify(buf, p.bytes);
		if (send && stageOn() && stageCls(p.cls) && p.bytes >= st().stageMin && stagedPeer(p.peer)) refuse(Refuse::Persistent);
		if (st().mode == Mode::Fix && p.cls == kIpcImport) {
			// the request is built on a bounce buffer of its own, held until MPI_Request_free
			bool contiguous = false;
			spanOf(count, type, &p.lb, &p.span, &contiguous);
			std::string why;
			p.bounce = bounceAcquire(p.span, &why);
			if (!p.bounce) say("fix: no bounce buffer for a persistent request (" + why + "): it goes to MPI unchanged");
		}
	}
	const void* use = p.bounce ? static_cast<const char*>(p.bounce) - p.lb : buf;
	int rc = send ? PMPI_Send_init(use, count, type, rank, tag, comm, req) : PMPI_Recv_init(const_cast<void*>(use), count, type, rank, tag, comm, req);
	Lock l;
	addCall(call, 0, nowNs() - t);
	if (rc == MPI_SUCCESS && req) track(*req, p);
	else if (p.bounce) bounceRelease(p.bounce);
	return rc;
}

/** One Start of a persistent request: its message counted, the send-side bounce filled. */
void started(MPI_Request req, void* ra, uint64_t* bytes) {
	auto it = pend().find(req);
	if (it == pend().end() || !it->second.persistent) return;
	Pending& p = it->second;
	p.active = true;
	*bytes += p.bytes;
	checkDanger(C_Start, p.peer, p.bytes, p.cls, p.buf, ra, p.bounce != nullptr);
	if (p.peer >= 0) addPeer(p.peer, p.send, p.bytes, p.cls);
	if (p.bounce && p.send) {
		std::string why;
		if (!copyDevice(p.bounce, static_cast<const char*>(p.buf) + p.lb, p.span, &why)) say("fix: copy into the bounce buffer failed: " + why);
		st().bounced++;
	}
	// a receive with bounce and non-contiguous type keeps the user's holes: refresh the bounce from the user span
	bool contiguous = true;
	if (p.bounce && !p.send) {
		MPI_Aint lb;
		size_t span;
		spanOf(p.count, p.type, &lb, &span, &contiguous);
		std::string why;
		if (!contiguous) copyDevice(p.bounce, static_cast<const char*>(p.buf) + p.lb, p.span, &why);
	}
}
}  // namespace

int gpumpi::guard::on_Send_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req, void* ra) {
	return initPersistent(C_Send_init, true, buf, count, type, dest, tag, comm, req, ra);
}
int gpumpi::guard::on_Recv_init(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* req, void* ra) {
	return initPersistent(C_Recv_init, false, buf, count, type, source, tag, comm, req, ra);
}
int gpumpi::guard::on_Start(MPI_Request* req, void* ra) {
	uint64_t t = nowNs(), bytes = 0;
	{
		Lock l;
		if (req) started(*req, ra, &bytes);
	}
	int rc = PMPI_Start(req);
	Lock l;
	addCall(C_Start, bytes, nowNs() - t);
	return rc;
}
int gpumpi::guard::on_Startall(int n, MPI_Request* reqs, void* ra) {
	uint64_t t = nowNs(), bytes = 0;
	{
		Lock l;
		for (int i = 0; reqs && i < n; ++i) started(reqs[i], ra, &bytes);
	}
	int rc = PMPI_Startall(n, reqs);
	Lock l;
	addCall(C_Startall, bytes, nowNs() - t);
	return rc;
}
int gpumpi::guard::on_Request_free(MPI_Request* req, void* ra) {
	uint64_t t = nowNs();
	{
		Lock l;
		auto it = req ? pend().find(*req) : pend().end();
		if (it != pend().end()) {
			if (it->second.bounce && !it->second.persistent && !it->second.send) say("fix: MPI_Request_free on a bounced receive: its data is not copied into the IPC import");
			if (it->second.bounce && (it->second.persistent || it->second.send)) bounceRelease(it->second.bounce);
			untrack(it);
		}
	}
	int rc = PMPI_Request_free(req);
	Lock l;
	addCall(C_Request_free, 0, nowNs() - t);
	return rc;
}

// ---- probe family ----
int gpumpi::guard::on_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status, void* ra) {
	uint64_t t = nowNs();
	int rc = stageOn() ? guardProbe(source, tag, comm, status) : PMPI_Probe(source, tag, comm, status);
	Lock l;
	addCall(C_Probe, 0, nowNs() - t);
	return rc;
}
int gpumpi::guard::on_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status, void* ra) {
	uint64_t t = nowNs();
	int rc = stageOn() ? guardIprobe(source, tag, comm, flag, status) : PMPI_Iprobe(source, tag, comm, flag, status);
	Lock l;
	addCall(C_Iprobe, 0, nowNs() - t);
	return rc;
}
int gpumpi::guard::on_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* msg, MPI_Status* status, void* ra) {
	uint64_t t = nowNs();
	if (stageOn()) stageProgress();  // earlier posted receives take their messages first
	int rc = PMPI_Mprobe(source, tag, comm, msg, status);
	Lock l;
	if (rc == MPI_SUCCESS && msg && *msg != MPI_MESSAGE_NULL && *msg != MPI_MESSAGE_NO_PROC) messages()[*msg] = comm;
	addCall(C_Mprobe, 0, nowNs() - t);
	return rc;
}
int gpumpi::guard::on_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* msg, MPI_Status* status, void* ra) {
	uint64_t t = nowNs();
	if (stageOn()) stageProgress();
	int rc = PMPI_Improbe(source, tag, comm, flag, msg, status);
	Lock l;
	if (rc == MPI_SUCCESS && flag && *flag && msg && *msg != MPI_MESSAGE_NULL && *msg != MPI_MESSAGE_NO_PROC) messages()[*msg] = comm;
	addCall(C_Improbe, 0, nowNs() - t);
	return rc;
}
int gpumpi::guard::on_Mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* msg, MPI_Status* status, void* ra) {
	uint64_t t = nowNs(), bytes = 0;
	MPI_Comm comm = MPI_COMM_NULL;
	Cls cls = kNumCls;
	{
		Lock l;
		auto it = msg ? messages().find(*msg) : messages().end();
		if (it != messages().end()) { comm = it->second; messages().erase(it); }
		bytes = typeBytes(count, type);
		if (bytes > 0 && buf) {
			cls = classify(buf, bytes);
			checkDanger(C_Mrecv, -1, bytes, cls, buf, ra, false);
		}
	}
	MPI_Status local;
	MPI_Status* s = status == MPI_STATUS_IGNORE ? &local : status;
	int rc = PMPI_Mrecv(buf, count, type, msg, s);
	Lock l;
	if (rc == MPI_SUCCESS && comm != MPI_COMM_NULL) addPeer(worldRank(comm, s->MPI_SOURCE), false, bytes, cls);
	addCall(C_Mrecv, bytes, nowNs() - t);
	return rc;
}
int gpumpi::guard::on_Imrecv(void* buf, int count, MPI_Datatype type, MPI_Message* msg, MPI_Request* req, void* ra) {
	uint64_t t = nowNs(), bytes = 0;
	Pending p;
	{
		Lock l;
		auto it = msg ? messages().find(*msg) : messages().end();
		if (it != messages().end()) { p.comm = it->second; messages().erase(it); }
		bytes = typeBytes(count, type);
		if (bytes > 0 && buf) p.cls = classify(buf, bytes);
	}
	int rc = PMPI_Imrecv(buf, count, type, msg, req);
	Lock l;
	if (rc == MPI_SUCCESS && req && p.comm != MPI_COMM_NULL) {
		p.anySource = true;  // the source comes with the completion status
		p.bytes = bytes;
		p.buf = buf;
		track(*req, p);
	}
	addCall(C_Imrecv, bytes, nowNs() - t);
	return rc;
}

// ---- Wait / Test ----
int gpumpi::guard::on_Wait(MPI_Request* req, MPI_Status* status, void* ra) {
	uint64_t t = nowNs();
	Tracker tr;
	MPI_Status* s = tr.prep(1, req, status, true);
	int rc = stageOn() ? pollWait(req, s) : PMPI_Wait(req, s);
	Lock l;
	if (rc == MPI_SUCCESS) tr.done(0, s);
	addCall(C_Wait, 0, nowNs() - t);
	return rc;
}
int gpumpi::guard::on_Test(MPI_Request* req, int* flag, MPI_Status* status, void* ra) {
	uint64_t t = nowNs();
	Tracker tr;
	MPI_Status* s = tr.prep(1, req, status, true);
	if (stageOn()) stageProgress();
	int rc = PMPI_Test(req, flag, s);
	Lock l;
	if (rc == MPI_SUCCESS && flag && *flag) tr.done(0, s);
	addCall(C_Test, 0, nowNs() - t);
	return rc;
}
namespace {
void doneAll(Tracker& tr, int rc, int n, const MPI_Status* s) {
	if (!tr.on || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS)) return;
	for (int i = 0; i < n; ++i) {
		if (rc == MPI_ERR_IN_STATUS && s[i].MPI_ERROR == MPI_ERR_PENDING) continue;
		tr.done(i, &s[i]);
	}
}
void doneSome(Tracker& tr, int rc, int outcount, const int* idx, const MPI_Status* s) {
	if (!tr.on || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) || outcount == MPI_UNDEFINED) return;
	for (int k = 0; k < outcount; ++k) tr.done(idx[k], &s[k]);
}
}  // namespace
int gpumpi::guard::on_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[], void* ra) {
	uint64_t t = nowNs();
	Tracker tr;
	MPI_Status* s = tr.prep(n, reqs, statuses, false);
	int rc = stageOn() ? pollWaitall(n, reqs, s) : PMPI_Waitall(n, reqs, s);
	Lock l;
	doneAll(tr, rc, n, s);
	addCall(C_Waitall, 0, nowNs() - t);
	return rc;
}
int gpumpi::guard::on_Testall(int n, MPI_Request reqs[], int* flag, MPI_Status statuses[], void* ra) {
	uint64_t t = nowNs();
	Tracker tr;
	MPI_Status* s = tr.prep(n, reqs, statuses, false);
	if (stageOn()) stageProgress();
	int rc = PMPI_Testall(n, reqs, flag, s);
	Lock l;
	if (flag && *flag) doneAll(tr, rc, n, s);
	addCall(C_Testall, 0, nowNs() - t);
	return rc;
}
int gpumpi::guard::on_Waitany(int n, MPI_Request reqs[], int* index, MPI_Status* status, void* ra) {
	uint64_t t = nowNs();
	Tracker tr;
	MPI_Status* s = tr.prep(n, reqs, status, true);
	int rc = stageOn() ? pollWaitany(n, reqs, index, s) : PMPI_Waitany(n, reqs, index, s);
	Lock l;
	if (rc == MPI_SUCCESS && index && *index != MPI_UNDEFINED) tr.done(*index, s);
	addCall(C_Waitany, 0, nowNs() - t);
	return rc;
}
int gpumpi::guard::on_Testany(int n, MPI_Request reqs[], int* index, int* flag, MPI_Status* status, void* ra) {
	uint64_t t = nowNs();
	Tracker tr;
	MPI_Status* s = tr.prep(n, reqs, status, true);
	if (stageOn()) stageProgress();
	int rc = PMPI_Testany(n, reqs, index, flag, s);
	Lock l;
	if (rc == MPI_SUCCESS && flag && *flag && index && *index != MPI_UNDEFINED) tr.done(*index, s);
	addCall(C_Testany, 0, nowNs() - t);
	return rc;
}
int gpumpi::guard::on_Waitsome(int n, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[], void* ra) {
	uint64_t t = nowNs();
	Tracker tr;
	MPI_Status* s = tr.prep(n, reqs, statuses, false);
	int rc = stageOn() ? pollWaitsome(n, reqs, outcount, indices, s) : PMPI_Waitsome(n, reqs, outcount, indices, s);
	Lock l;
	if (outcount) doneSome(tr, rc, *outcount, indices, s);
	addCall(C_Waitsome, 0, nowNs() - t);
	return rc;
}
int gpumpi::guard::on_Testsome(int n, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[], void* ra) {
	uint64_t t = nowNs();
	Tracker tr;
	MPI_Status* s = tr.prep(n, reqs, statuses, false);
	if (stageOn()) stageProgress();
	int rc = PMPI_Testsome(n, reqs, outcount, indices, s);
	Lock l;
	if (outcount) doneSome(tr, rc, *outcount, indices, s);
	addCall(C_Testsome, 0, nowNs() - t);
	return rc;
}
