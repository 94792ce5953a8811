// GPUMPI_GUARD_STAGE=1, the sending side and the shared machinery: the libgpumpi context over the guard's duplicate
// of MPI_COMM_WORLD (created once at MPI_Init, with its staging allocated once: the memory bound), the job key, the
// header protocol, staged Isend/Send, progress, and the report's "stageDetail" (docs/guard.md "STAGE").
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "cudaDriver.hh"
#include "gpumpi.h"
#include "guardStage.hh"
#include "guardState.hh"

namespace gpumpi::guard {
namespace {

constexpr int32_t kMagic = 0x47535447;  // 'GSTG'

struct PeerCount { uint64_t sent = 0, sentBytes = 0, recv = 0, recvBytes = 0; };

/** A staged send in flight: the header on the user's envelope, the data through libgpumpi. */
struct SendOp {
	MPI_Request hdrReq = MPI_REQUEST_NULL;
	gpumpi_request* data = nullptr;
	MPI_Request greq = MPI_REQUEST_NULL;
	StageHdr hdr{};
	int err = MPI_SUCCESS;
};

struct Stage {
	bool on = false;
	std::string off;  // why STAGE is off although agreed ("" when on or never asked)
	gpumpi_ctx* ctx = nullptr;
	uint64_t key[2] = {0, 0};
	uint64_t tagRange = 32768;
	size_t chunk = 16u << 20;
	int buffers = 4;
	void* hostStaging = nullptr;  // registered for STAGED-protocol (remote) peers; SHM segments are the library's
	std::vector<char> staged;     // per world peer
	std::vector<uint64_t> seq;    // next send sequence per world peer
	std::vector<PeerCount> counts;
	uint64_t refused[int(Refuse::Count)] = {};
	bool said[int(Refuse::Count)] = {};
	std::vector<SendOp*> sends;
};

}  // namespace

struct DataRecv { gpumpi_request* r = nullptr; int peer = -1; uint64_t bytes = 0; };

namespace {

Stage& S() {
	static Stage* s = new Stage();
	return *s;
}

/** The CUDA context current on this thread before a libgpumpi call is current again after it (the library makes
 *  its own current; the program's must not change under it). */
class KeepCuda {
public:
	KeepCuda() {
		const CudaDriver& d = cudaDriver();
		if (d.loaded && d.cuCtxGetCurrent) d.cuCtxGetCurrent(&prev_);
	}
	~KeepCuda() {
		const CudaDriver& d = cudaDriver();
		if (prev_ && d.cuCtxSetCurrent) d.cuCtxSetCurrent(prev_);
	}
	KeepCuda(const KeepCuda&) = delete;
	KeepCuda& operator=(const KeepCuda&) = delete;
private:
	CUcontext prev_ = nullptr;
};

/** A positive byte count / count from the environment; bad values: a message (rank 0) and the default. */
uint64_t envNumber(const char* name, uint64_t def, uint64_t lo, uint64_t hi) {
	const char* v = std::getenv(name);
	if (!v || !*v) return def;
	bool digits = true;
	for (const char* p = v; *p; ++p) digits = digits && *p >= '0' && *p <= '9';
	errno = 0;
	unsigned long long x = digits ? std::strtoull(v, nullptr, 10) : 0;
	if (!digits || errno == ERANGE || x < lo || x > hi) {
		say(std::string(name) + "='" + v + "' is not a number in " + std::to_string(lo) + ".." + std::to_string(hi) + ": ignored (" + std::to_string(def) + ")");
		return def;
	}
	return x;
}

int freeSend(void* extra) { delete static_cast<SendOp*>(extra); return MPI_SUCCESS; }
int cancelSend(void*, int) { return MPI_SUCCESS; }  // a staged send cannot be cancelled (MPI allows that)
int querySend(void* extra, MPI_Status* status) {
	auto* op = static_cast<SendOp*>(extra);
	PMPI_Status_set_elements_x(status, MPI_BYTE, 0);
	PMPI_Status_set_cancelled(status, 0);
	status->MPI_SOURCE = MPI_UNDEFINED;
	status->MPI_TAG = MPI_UNDEFINED;
	return op->err;
}

}  // namespace

const char* refuseName(Refuse r) {
	static const char* const names[] = {"send-mode", "persistent", "non-contiguous"};
	return names[int(r)];
}

bool stageOn() { return S().on; }
bool stagedPeer(int p) { return S().on && p >= 0 && size_t(p) < S().staged.size() && S().staged[size_t(p)]; }

void stageStart() {
	State& g = st();
	Stage& s = S();
	if (!g.stageAgreed) return;
	int threaded = g.threaded ? 1 : 0, any = 0;
	PMPI_Allreduce(&threaded, &any, 1, MPI_INT, MPI_MAX, g.world);
	s.chunk = envNumber("GPUMPI_GUARD_STAGE_CHUNK", 16u << 20, 4096, 1u << 30);
	s.buffers = int(envNumber("GPUMPI_GUARD_STAGE_BUFFERS", 4, 2, 64));
	if (any) {
		s.off = "a rank runs with MPI_THREAD_MULTIPLE (STAGE's progress is single-threaded)";
		if (g.rank == 0) say("GPUMPI_GUARD_STAGE=1: " + s.off + ": STAGE is off everywhere, messages go through MPI unchanged");
		return;
	}
	gpumpi_config cfg;
	gpumpi_config_default(&cfg);
	cfg.chunk_bytes = s.chunk;
	cfg.num_buffers = s.buffers;
	gpumpi_status rc;
	{
		KeepCuda keep;
		rc = gpumpi_init(g.world, &cfg, &s.ctx);
	}
	int ok = rc == GPUMPI_SUCCESS ? 1 : 0, all = 0;
	std::string why = rc == GPUMPI_SUCCESS ? "" : std::string(gpumpi_strerror(rc));
	if (rc == GPUMPI_SUCCESS) {
		int flag = 0;
		int* ub = nullptr;
		PMPI_Comm_get_attr(g.world, MPI_TAG_UB, &ub, &flag);
		s.tagRange = flag && ub && *ub > 0 ? uint64_t(*ub) + 1 : 32768;
		s.staged.assign(size_t(g.size), 0);
		bool needHost = false;
		for (int p = 0; p < g.size; ++p) {
			gpumpi_path_info info{};
			if (p == g.rank || gpumpi_path(s.ctx, p, &info) != GPUMPI_SUCCESS) continue;
			bool hostStaged = info.path == GPUMPI_PATH_STAGED_SAME_HOST || info.path == GPUMPI_PATH_STAGED_REMOTE || info.path == GPUMPI_PATH_NOT_CUDA_AWARE;
			s.staged[size_t(p)] = hostStaged && info.protocol != GPUMPI_PROTO_DIRECT ? 1 : 0;
			needHost = needHost || (s.staged[size_t(p)] && info.protocol == GPUMPI_PROTO_STAGED);
		}
		if (needHost) {  // the STAGED protocol's slots: num_buffers x chunk, once, pinned by the library
			size_t bytes = s.chunk * size_t(s.buffers);
			if (posix_memalign(&s.hostStaging, 4096, bytes) != 0) s.hostStaging = nullptr;
			KeepCuda keep;
			gpumpi_status r2 = s.hostStaging ? gpumpi_register_staging(s.ctx, s.hostStaging, bytes, GPUMPI_STAGING_PIN) : GPUMPI_ERR_NOMEM;
			if (r2 != GPUMPI_SUCCESS) { ok = 0; why = std::string("staging buffers: ") + gpumpi_strerror(r2) + " " + gpumpi_last_error(s.ctx); }
		}
	} else {
		why += std::string(" ") + gpumpi_last_error(nullptr);
	}
	PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, g.world);
	if (!all) {
		s.off = ok ? "another rank could not set up libgpumpi" : "libgpumpi: " + why;
		say("GPUMPI_GUARD_STAGE=1: " + s.off + ": STAGE is off everywhere, messages go through MPI unchanged");
		return;
	}
	if (g.rank == 0) {
		std::random_device rd;
		s.key[0] = (uint64_t(rd()) << 32) ^ rd() ^ uint64_t(getpid());
		s.key[1] = (uint64_t(rd()) << 32) ^ rd();
	}
	PMPI_Bcast(s.key, 2, MPI_UINT64_T, 0, g.world);
	s.seq.assign(size_t(g.size), 0);
	s.counts.assign(size_t(g.size), PeerCount{});
	s.on = true;
	int n = 0;
	for (char c : s.staged) n += c;
	if (g.rank == 0 && g.mode == Mode::Warn) say("GPUMPI_GUARD_STAGE=1: active (chunk " + std::to_string(s.chunk) + ", " + std::to_string(s.buffers) + " buffers)");
	(void)n;
}

void stageStop() {
	Stage& s = S();
	if (!s.ctx) return;
	while (stagePending()) stageProgress();  // MPI_Finalize: every request of the program is complete already
	KeepCuda keep;
	if (s.hostStaging) gpumpi_unregister_staging(s.ctx, s.hostStaging);
	gpumpi_finalize(&s.ctx);
	std::free(s.hostStaging);
	s.hostStaging = nullptr;
	s.on = false;
}

void refuse(Refuse r) {
	Stage& s = S();
	s.refused[int(r)]++;
	if (!s.said[int(r)] && st().mode == Mode::Warn) {
		s.said[int(r)] = true;
		say(std::string("GPUMPI_GUARD_STAGE: a device message to a host-staged peer goes through MPI unchanged (") + refuseName(r) + "; docs/guard.md)");
	}
}

bool wantStage(const void* buf, int count, MPI_Datatype type, int dest, MPI_Comm comm, uint64_t bytes, bool isDevice) {
	Stage& s = S();
	if (!s.on || !isDevice || bytes < st().stageMin || dest < 0 || !buf) return false;
	int inter = 0;
	PMPI_Comm_test_inter(comm, &inter);
	if (inter) return false;  // the receiver never probes there either
	if (!stagedPeer(worldRank(comm, dest))) return false;
	MPI_Aint lb = 0, ext = 0;
	PMPI_Type_get_true_extent(type, &lb, &ext);
	MPI_Aint elb = 0, eext = 0;
	PMPI_Type_get_extent(type, &elb, &eext);
	size_t span = count > 0 ? size_t(ext + MPI_Aint(count - 1) * eext) : 0;
	if (span != bytes) { refuse(Refuse::NonContiguous); return false; }
	return true;
}

int stagedIsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req) {
	Stage& s = S();
	State& g = st();
	int peer = worldRank(comm, dest);
	auto* op = new SendOp();
	op->hdr.key[0] = s.key[0];
	op->hdr.key[1] = s.key[1];
	op->hdr.bytes = typeBytes(count, type);
	op->hdr.seq = s.seq[size_t(peer)]++;
	op->hdr.src = g.rank;
	op->hdr.magic = kMagic;
	MPI_Aint lb = 0, ext = 0;
	PMPI_Type_get_true_extent(type, &lb, &ext);
	int rc = PMPI_Isend(&op->hdr, kHdrBytes, MPI_BYTE, dest, tag, comm, &op->hdrReq);
	if (rc != MPI_SUCCESS) { delete op; return rc; }
	gpumpi_status gs;
	{
		KeepCuda keep;
		gs = gpumpi_isend(s.ctx, static_cast<const char*>(buf) + lb, size_t(op->hdr.bytes), peer, int(op->hdr.seq % s.tagRange), &op->data);
	}
	if (gs != GPUMPI_SUCCESS) {
		// the header is out: the receiver waits for data that will not come; say why (the program is then wrong)
		say(std::string("GPUMPI_GUARD_STAGE: staged send failed after its header: ") + gpumpi_strerror(gs) + " " + gpumpi_last_error(s.ctx));
		op->err = MPI_ERR_OTHER;
	}
	PMPI_Grequest_start(querySend, freeSend, cancelSend, op, &op->greq);
	*req = op->greq;
	s.sends.push_back(op);
	s.counts[size_t(peer)].sent++;
	s.counts[size_t(peer)].sentBytes += op->hdr.bytes;
	return MPI_SUCCESS;
}

DataRecv* stagedDataRecv(const StageHdr& h, void* buf, std::string* err) {
	Stage& s = S();
	auto* d = new DataRecv();
	d->peer = h.src;
	d->bytes = h.bytes;
	KeepCuda keep;
	gpumpi_status gs = gpumpi_irecv(s.ctx, buf, size_t(h.bytes), h.src, int(h.seq % s.tagRange), &d->r);
	if (gs != GPUMPI_SUCCESS) {
		*err = std::string(gpumpi_strerror(gs)) + " " + gpumpi_last_error(s.ctx);
		delete d;
		return nullptr;
	}
	return d;
}

int stageDataDone(DataRecv* d, std::string* err) {
	Stage& s = S();
	int done = 0;
	gpumpi_status gs;
	{
		KeepCuda keep;
		gs = gpumpi_test(s.ctx, &d->r, &done);
	}
	if (gs != GPUMPI_SUCCESS) {
		*err = std::string(gpumpi_strerror(gs)) + " " + gpumpi_last_error(s.ctx);
		delete d;
		return -1;
	}
	if (!done) return 0;
	stageCountRecv(d->peer, d->bytes);
	delete d;
	return 1;
}

void stageCountRecv(int p, uint64_t bytes) {
	Stage& s = S();
	if (p < 0 || size_t(p) >= s.counts.size()) return;
	s.counts[size_t(p)].recv++;
	s.counts[size_t(p)].recvBytes += bytes;
}

bool stageDecode(const void* bytes, StageHdr* out) {
	Stage& s = S();
	std::memcpy(out, bytes, sizeof *out);
	return s.on && out->key[0] == s.key[0] && out->key[1] == s.key[1] && out->magic == kMagic && out->src >= 0 && out->src < st().size;
}

bool stageProgress() {
	Stage& s = S();
	if (!s.on) return false;
	for (size_t i = 0; i < s.sends.size();) {
		SendOp* op = s.sends[i];
		if (op->hdrReq != MPI_REQUEST_NULL) {
			int f = 0;
			PMPI_Test(&op->hdrReq, &f, MPI_STATUS_IGNORE);
		}
		if (op->data) {
			int done = 0;
			KeepCuda keep;
			gpumpi_status gs = gpumpi_test(s.ctx, &op->data, &done);
			if (gs != GPUMPI_SUCCESS) {
				say(std::string("GPUMPI_GUARD_STAGE: staged send failed: ") + gpumpi_strerror(gs) + " " + gpumpi_last_error(s.ctx));
				op->data = nullptr;
				op->err = MPI_ERR_OTHER;
			}
		}
		if (op->hdrReq == MPI_REQUEST_NULL && !op->data) {
			s.sends.erase(s.sends.begin() + long(i));
			PMPI_Grequest_complete(op->greq);  // op is freed by freeSend when the program completes the request
			continue;
		}
		++i;
	}
	recvProgress();
	return stagePending();
}

bool stagePending() { return S().on && (!S().sends.empty() || recvPending()); }

std::string stageReportJson() {
	Stage& s = S();
	State& g = st();
	std::string o = "{\"chunk\":" + std::to_string(s.chunk) + ",\"buffers\":" + std::to_string(s.buffers);
	o += ",\"stagingBytes\":" + std::to_string(s.ctx ? gpumpi_staging_bytes(s.ctx) : 0);
	o += ",\"off\":";
	if (s.off.empty()) o += "null";
	else {
		o += "\"";
		for (char c : s.off) o += (c == '"' || c == '\\') ? '\'' : c;
		o += "\"";
	}
	o += ",\"stagedPeers\":[";
	bool first = true;
	for (size_t p = 0; p < s.staged.size(); ++p) {
		if (!s.staged[p]) continue;
		o += (first ? "" : ",") + std::to_string(p);
		first = false;
	}
	o += "],\"peers\":[";
	first = true;
	for (size_t p = 0; p < s.counts.size(); ++p) {
		const PeerCount& c = s.counts[p];
		if (!c.sent && !c.recv) continue;
		o += std::string(first ? "" : ",") + "{\"peer\":" + std::to_string(p) + ",\"sentMessages\":" + std::to_string(c.sent) + ",\"sentBytes\":" +
		     std::to_string(c.sentBytes) + ",\"recvMessages\":" + std::to_string(c.recv) + ",\"recvBytes\":" + std::to_string(c.recvBytes) + "}";
		first = false;
	}
	o += "],\"refused\":{";
	for (int r = 0; r < int(Refuse::Count); ++r) o += std::string(r ? "," : "") + "\"" + refuseName(Refuse(r)) + "\":" + std::to_string(s.refused[r]);
	o += "}}";
	(void)g;
	return o;
}

}  // namespace gpumpi::guard
