// GPUMPI_GUARD_STAGE=1, the receiving side: receives that may match a staged header go through a per-communicator
// queue of entries in posting order. Progress (inside every intercepted Wait/Test/blocking call) probes each waiting
// entry's envelope with PMPI_Improbe; a message found is given to the EARLIEST waiting entry it matches (MPI's rule:
// a message goes to the first posted receive that matches it), then received: a HDR-byte message with the job key
// is a staged header (the data follows through libgpumpi into the user's buffer), any other message is received by
// PMPI_Mrecv/Imrecv as it is. A later receive whose envelope overlaps a waiting entry waits in the queue too, so MPI
// never hands it a message an earlier receive should get. User probes answer with the real size of staged messages
// (the header is received into an "early" list that receives consume first). Non-blocking receives hand the program
// a generalized request (MPI_Grequest_start) completed by progress; cancelling one still waiting works.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <vector>

#include "cudaDriver.hh"
#include "guardStage.hh"
#include "guardState.hh"

namespace gpumpi::guard {
namespace {

enum class EState { Waiting, Data, Posted, Done };

struct Entry {
	void* buf = nullptr;
	int count = 0;
	MPI_Datatype type = MPI_DATATYPE_NULL;
	int source = MPI_ANY_SOURCE, tag = MPI_ANY_TAG;
	MPI_Comm comm = MPI_COMM_NULL;
	MPI_Request greq = MPI_REQUEST_NULL;  // the program's request (MPI_Irecv); NULL for a blocking receive
	EState state = EState::Waiting;
	DataRecv* data = nullptr;             // staged data in flight
	MPI_Request real = MPI_REQUEST_NULL;  // PMPI_Imrecv of a plain message into the user's buffer
	int rSource = MPI_ANY_SOURCE, rTag = MPI_ANY_TAG, err = MPI_SUCCESS;
	MPI_Count rBytes = 0;
	bool cancelled = false;
	uint64_t capacity = 0;
	bool contiguous = true;
	MPI_Aint lb = 0;
	char* drain = nullptr;  // staged data that does not fit (truncation, non-contiguous type): received here, then freed
	DangerRef danger;       // the danger record the receive was counted in (moved to "staged" when staged data lands)
};

/** A message a user probe took out of MPI (a HDR-byte one): receives match it before anything still in MPI. */
struct Early {
	MPI_Comm comm;
	int source, tag;
	unsigned char raw[kHdrBytes];
	bool staged;
	StageHdr hdr;
};

std::unordered_map<MPI_Comm, std::deque<Entry*>>& queues() {
	static auto* q = new std::unordered_map<MPI_Comm, std::deque<Entry*>>();
	return *q;
}
std::vector<Entry*>& inFlight() {
	static auto* v = new std::vector<Entry*>();
	return *v;
}
std::deque<Early>& early() {
	static auto* e = new std::deque<Early>();
	return *e;
}
size_t gWaiting = 0;

bool matches(int es, int et, int ms, int mt) { return (es == MPI_ANY_SOURCE || es == ms) && (et == MPI_ANY_TAG || et == mt); }
bool overlaps(int s1, int t1, int s2, int t2) {
	return (s1 == MPI_ANY_SOURCE || s2 == MPI_ANY_SOURCE || s1 == s2) && (t1 == MPI_ANY_TAG || t2 == MPI_ANY_TAG || t1 == t2);
}
bool isDevice(const void* p, uint64_t bytes) {
	if (!p || !bytes) return false;
	Cls c = classify(p, bytes);
	return c == kDevice || c == kPool || c == kVmm || c == kManaged || c == kIpcImport;
}

void finish(Entry* e) {
	e->state = EState::Done;
	if (e->source == MPI_ANY_SOURCE && !e->cancelled) addPeer(worldRank(e->comm, e->rSource), false, uint64_t(e->rBytes), kNumCls);
	if (e->greq != MPI_REQUEST_NULL) PMPI_Grequest_complete(e->greq);  // e is freed by freeFn once the program completes it
}

/** A plain HDR-byte message into the user's (buf, count, type), any memory, any layout: MPI_Unpack (the bytes of a
 *  homogeneous MPI_BYTE message are the packed form), through a host mirror of the span for device memory. */
void deliverRaw(Entry* e, const unsigned char* raw) {
	int tsize = 0;
	PMPI_Type_size(e->type, &tsize);
	if (e->capacity < uint64_t(kHdrBytes) || tsize <= 0) { e->err = MPI_ERR_TRUNCATE; e->rBytes = 0; return; }
	int elems = kHdrBytes / tsize;
	MPI_Aint tlb = 0, text = 0, elb = 0, ext = 0;
	PMPI_Type_get_true_extent(e->type, &tlb, &text);
	PMPI_Type_get_extent(e->type, &elb, &ext);
	size_t span = elems > 0 ? size_t(text + MPI_Aint(elems - 1) * ext) : 0;
	int pos = 0;
	if (isDevice(e->buf, e->capacity)) {
		const CudaDriver& d = cudaDriver();
		std::vector<char> mirror(span);
		char* dev = static_cast<char*>(e->buf) + tlb;
		if (span) d.cuMemcpyDtoH(mirror.data(), reinterpret_cast<CUdeviceptr>(dev), span);
		PMPI_Unpack(raw, kHdrBytes, &pos, mirror.data() - tlb, elems, e->type, e->comm);
		if (span) d.cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(dev), mirror.data(), span);
	} else {
		PMPI_Unpack(raw, kHdrBytes, &pos, e->buf, elems, e->type, e->comm);
	}
	e->rBytes = kHdrBytes;
}

/** Entry e gets the staged message described by h (its envelope in src / tag). */
void takeStaged(Entry* e, const StageHdr& h) {
	e->rBytes = MPI_Count(h.bytes);
	char* into = static_cast<char*>(e->buf) + e->lb;
	if (h.bytes > e->capacity || !e->contiguous) {
		e->drain = static_cast<char*>(std::malloc(h.bytes ? h.bytes : 1));
		into = e->drain;
	}
	std::string why;
	e->data = into ? stagedDataRecv(h, into, &why) : nullptr;
	if (!e->data) {
		say("GPUMPI_GUARD_STAGE: staged receive failed: " + (into ? why : std::string("no memory to drain it")));
		e->err = MPI_ERR_OTHER;
		std::free(e->drain);
		e->drain = nullptr;
		finish(e);
		return;
	}
	e->state = EState::Data;
	inFlight().push_back(e);
	markStaged(e->danger);  // no Lock: STAGE is off under MPI_THREAD_MULTIPLE
}

void takeEarly(Entry* e, const Early& m) {
	e->rSource = m.source;
	e->rTag = m.tag;
	if (m.staged) takeStaged(e, m.hdr);
	else { deliverRaw(e, m.raw); finish(e); }
}

/** Entry e gets the matched message msg (status st). */
void takeMessage(Entry* e, MPI_Message msg, const MPI_Status& s) {
	MPI_Count n = 0;
	PMPI_Get_elements_x(&s, MPI_BYTE, &n);
	e->rSource = s.MPI_SOURCE;
	e->rTag = s.MPI_TAG;
	if (n == kHdrBytes) {
		Early m{e->comm, s.MPI_SOURCE, s.MPI_TAG, {}, false, {}};
		PMPI_Mrecv(m.raw, kHdrBytes, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
		m.staged = stageDecode(m.raw, &m.hdr);
		takeEarly(e, m);
		return;
	}
	int rc = PMPI_Imrecv(e->buf, e->count, e->type, &msg, &e->real);
	if (rc != MPI_SUCCESS) { e->err = rc; finish(e); return; }
	e->state = EState::Posted;
	inFlight().push_back(e);
}

/** Removes and returns the earliest waiting entry of q that matches (src, tag), or null. */
Entry* takeFirst(std::deque<Entry*>& q, int src, int tag) {
	for (auto it = q.begin(); it != q.end(); ++it) {
		if (!matches((*it)->source, (*it)->tag, src, tag)) continue;
		Entry* e = *it;
		q.erase(it);
		gWaiting--;
		return e;
	}
	return nullptr;
}

void progressQueue(MPI_Comm comm, std::deque<Entry*>& q) {
	auto& ea = early();
	for (auto it = ea.begin(); it != ea.end() && !q.empty();) {
		Entry* e = it->comm == comm ? takeFirst(q, it->source, it->tag) : nullptr;
		if (!e) { ++it; continue; }
		Early m = *it;
		it = ea.erase(it);
		takeEarly(e, m);
	}
	for (bool again = true; again && !q.empty();) {
		again = false;
		for (Entry* w : q) {
			int flag = 0;
			MPI_Message msg = MPI_MESSAGE_NULL;
			MPI_Status s;
			if (PMPI_Improbe(w->source, w->tag, comm, &flag, &msg, &s) != MPI_SUCCESS || !flag) continue;
			Entry* e = takeFirst(q, s.MPI_SOURCE, s.MPI_TAG);  // w itself or an earlier entry that matches too
			takeMessage(e, msg, s);
			again = true;
			break;
		}
	}
}

void progressInFlight() {
	auto& v = inFlight();
	for (size_t i = 0; i < v.size();) {
		Entry* e = v[i];
		bool done = false;
		if (e->state == EState::Data) {
			std::string why;
			int r = stageDataDone(e->data, &why);
			if (r != 0) {
				e->data = nullptr;
				done = true;
				if (r < 0) { say("GPUMPI_GUARD_STAGE: staged receive failed: " + why); e->err = MPI_ERR_OTHER; }
				else if (e->drain) {
					if (!e->contiguous) {
						say("GPUMPI_GUARD_STAGE: a staged message was received with a non-contiguous datatype (not supported: docs/guard.md); MPI_ERR_TYPE");
						e->err = MPI_ERR_TYPE;
					} else {  // MPI's truncation: what fits, and MPI_ERR_TRUNCATE
						char* dst = static_cast<char*>(e->buf) + e->lb;
						if (isDevice(e->buf, e->capacity)) cudaDriver().cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(dst), e->drain, e->capacity);
						else std::memcpy(dst, e->drain, e->capacity);
						e->rBytes = MPI_Count(e->capacity);
						e->err = MPI_ERR_TRUNCATE;
					}
				}
				std::free(e->drain);
				e->drain = nullptr;
			}
		} else if (e->state == EState::Posted) {
			int flag = 0;
			MPI_Status s;
			int rc = PMPI_Test(&e->real, &flag, &s);
			if (rc != MPI_SUCCESS || flag) {
				done = true;
				e->err = rc;
				if (rc == MPI_SUCCESS) PMPI_Get_elements_x(&s, MPI_BYTE, &e->rBytes);
			}
		}
		if (done) {
			v.erase(v.begin() + long(i));
			finish(e);
			continue;
		}
		++i;
	}
}

int queryFn(void* extra, MPI_Status* status) {
	auto* e = static_cast<Entry*>(extra);
	PMPI_Status_set_elements_x(status, MPI_BYTE, e->cancelled ? 0 : e->rBytes);
	PMPI_Status_set_cancelled(status, e->cancelled ? 1 : 0);
	status->MPI_SOURCE = e->rSource;
	status->MPI_TAG = e->rTag;
	return e->err;
}
int freeFn(void* extra) { delete static_cast<Entry*>(extra); return MPI_SUCCESS; }
/** Cancel: an entry still waiting leaves its queue and completes cancelled; a matched one cannot be cancelled. */
int cancelFn(void* extra, int complete) {
	auto* e = static_cast<Entry*>(extra);
	if (complete || e->state != EState::Waiting) return MPI_SUCCESS;
	auto& q = queues()[e->comm];
	for (auto it = q.begin(); it != q.end(); ++it) {
		if (*it != e) continue;
		q.erase(it);
		gWaiting--;
		e->cancelled = true;
		e->state = EState::Done;
		PMPI_Grequest_complete(e->greq);
		break;
	}
	return MPI_SUCCESS;
}

Entry* newEntry(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm) {
	auto* e = new Entry();
	e->buf = buf; e->count = count; e->type = type; e->source = source; e->tag = tag; e->comm = comm;
	e->capacity = typeBytes(count, type);
	MPI_Aint tlb = 0, text = 0, elb = 0, ext = 0;
	PMPI_Type_get_true_extent(type, &tlb, &text);
	PMPI_Type_get_extent(type, &elb, &ext);
	e->lb = tlb;
	e->contiguous = count <= 0 || uint64_t(text + MPI_Aint(count - 1) * ext) == e->capacity;
	return e;
}

void fillStatus(const Entry* e, MPI_Status* status) {
	if (status == MPI_STATUS_IGNORE) return;
	PMPI_Status_set_elements_x(status, MPI_BYTE, e->rBytes);
	PMPI_Status_set_cancelled(status, 0);
	status->MPI_SOURCE = e->rSource;
	status->MPI_TAG = e->rTag;
	status->MPI_ERROR = e->err;
}

}  // namespace

bool recvNeedsGuard(int count, MPI_Datatype type, int source, int tag, MPI_Comm comm) {
	if (!stageOn() || source == MPI_PROC_NULL) return false;
	int inter = 0;
	PMPI_Comm_test_inter(comm, &inter);
	if (inter) return false;
	if (typeBytes(count, type) >= uint64_t(kHdrBytes) && (source == MPI_ANY_SOURCE || stagedPeer(worldRank(comm, source)))) return true;
	auto it = queues().find(comm);
	if (it != queues().end()) for (const Entry* e : it->second) if (overlaps(e->source, e->tag, source, tag)) return true;
	for (const Early& m : early()) if (m.comm == comm && matches(source, tag, m.source, m.tag)) return true;
	return false;
}

int guardIrecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* req, const DangerRef& danger) {
	Entry* e = newEntry(buf, count, type, source, tag, comm);
	e->danger = danger;
	int rc = PMPI_Grequest_start(queryFn, freeFn, cancelFn, e, &e->greq);
	if (rc != MPI_SUCCESS) { delete e; return rc; }
	*req = e->greq;
	queues()[comm].push_back(e);
	gWaiting++;
	stageProgress();
	return MPI_SUCCESS;
}

int guardRecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status, const DangerRef& danger) {
	Entry* e = newEntry(buf, count, type, source, tag, comm);
	e->danger = danger;
	queues()[comm].push_back(e);
	gWaiting++;
	while (e->state != EState::Done) stageProgress();
	fillStatus(e, status);
	int err = e->err;
	delete e;
	if (err != MPI_SUCCESS) PMPI_Comm_call_errhandler(comm, err);  // as MPI: fatal by default, else the code
	return err;
}

bool recvProgress() {
	if (gWaiting) for (auto& [comm, q] : queues()) if (!q.empty()) progressQueue(comm, q);
	if (!inFlight().empty()) progressInFlight();
	return recvPending();
}

bool recvPending() { return gWaiting > 0 || !inFlight().empty(); }

int guardIprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
	int inter = 0;
	if (source != MPI_PROC_NULL) PMPI_Comm_test_inter(comm, &inter);
	if (!stageOn() || source == MPI_PROC_NULL || inter) return PMPI_Iprobe(source, tag, comm, flag, status);
	stageProgress();
	MPI_Status local;
	MPI_Status* s = status == MPI_STATUS_IGNORE ? &local : status;
	for (;;) {
		for (const Early& m : early()) {
			if (m.comm != comm || !matches(source, tag, m.source, m.tag)) continue;
			*flag = 1;
			PMPI_Status_set_elements_x(s, MPI_BYTE, m.staged ? MPI_Count(m.hdr.bytes) : kHdrBytes);
			PMPI_Status_set_cancelled(s, 0);
			s->MPI_SOURCE = m.source;
			s->MPI_TAG = m.tag;
			return MPI_SUCCESS;
		}
		int rc = PMPI_Iprobe(source, tag, comm, flag, s);
		if (rc != MPI_SUCCESS || !*flag) return rc;
		bool waitingWantsIt = false;  // an earlier posted receive gets it first (as in MPI): let progress hand it over
		auto it = queues().find(comm);
		if (it != queues().end()) for (const Entry* e : it->second) waitingWantsIt = waitingWantsIt || matches(e->source, e->tag, s->MPI_SOURCE, s->MPI_TAG);
		if (waitingWantsIt) { recvProgress(); continue; }
		MPI_Count n = 0;
		PMPI_Get_elements_x(s, MPI_BYTE, &n);
		if (n != kHdrBytes) return MPI_SUCCESS;
		// a HDR-byte message: the same one (non-overtaking: the oldest from that source with that tag) is taken out
		// of MPI, so that the answer can carry a staged message's real size
		int f = 0;
		MPI_Message msg = MPI_MESSAGE_NULL;
		MPI_Status s2;
		if (PMPI_Improbe(s->MPI_SOURCE, s->MPI_TAG, comm, &f, &msg, &s2) != MPI_SUCCESS || !f) continue;
		Early m{comm, s2.MPI_SOURCE, s2.MPI_TAG, {}, false, {}};
		PMPI_Mrecv(m.raw, kHdrBytes, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
		m.staged = stageDecode(m.raw, &m.hdr);
		early().push_back(m);
	}
}

int guardProbe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
	for (;;) {
		int flag = 0;
		int rc = guardIprobe(source, tag, comm, &flag, status);
		if (rc != MPI_SUCCESS || flag) return rc;
		stageProgress();
	}
}

int pollWait(MPI_Request* req, MPI_Status* status) {
	for (;;) {
		if (!stagePending()) return PMPI_Wait(req, status);
		int flag = 0;
		int rc = PMPI_Test(req, &flag, status);
		if (rc != MPI_SUCCESS || flag) return rc;
		stageProgress();
	}
}

int pollWaitall(int n, MPI_Request* reqs, MPI_Status* statuses) {
	if (!stagePending()) return PMPI_Waitall(n, reqs, statuses);
	for (;;) {  // never back to PMPI_Waitall: it would overwrite the statuses of requests completed here
		int flag = 0;
		int rc = PMPI_Testall(n, reqs, &flag, statuses);
		if (rc != MPI_SUCCESS || flag) return rc;
		stageProgress();
	}
}

int pollWaitany(int n, MPI_Request* reqs, int* index, MPI_Status* status) {
	for (;;) {
		if (!stagePending()) return PMPI_Waitany(n, reqs, index, status);
		int flag = 0;
		int rc = PMPI_Testany(n, reqs, index, &flag, status);
		if (rc != MPI_SUCCESS || flag) return rc;
		stageProgress();
	}
}

int pollWaitsome(int n, MPI_Request* reqs, int* outcount, int* indices, MPI_Status* statuses) {
	for (;;) {
		if (!stagePending()) return PMPI_Waitsome(n, reqs, outcount, indices, statuses);
		int rc = PMPI_Testsome(n, reqs, outcount, indices, statuses);
		if (rc != MPI_SUCCESS || *outcount != 0) return rc;
		stageProgress();
	}
}

}  // namespace gpumpi::guard
