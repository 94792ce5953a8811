// libgpumpi internals: the context, staging slot pools, requests and the pieces that build them.
// One home per concern: discovery.cc (facts + path classes), slotPool.cc (staging memory + copy engines),
// pipeline.cc (requests, wire protocols, progress), shmPath.cc (shared segments), api.cc (C API + errors),
// cudaUtil.cc (utility API). Nothing here throws across the C boundary (api.cc catches).
#pragma once
#include <mpi.h>  // C bindings only: CMake sets OMPI_SKIP_MPICXX / MPICH_SKIP_MPICXX for every target

#include <algorithm>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "cudaDriver.hh"
#include "gpumpi.h"

struct gpumpi_request;

namespace gpumpi::lib {

/** Per-rank facts exchanged with one MPI_Allgather (plain bytes, fixed size). */
struct Facts {
	char host[64];
	char bootId[40];
	char gpuBus[32];
	unsigned char gpuUuid[16];
	int32_t hasCuda;
	int32_t mpiAware;   // 1 / 0 / -1 unknown
	int32_t ipcOff;     // an override makes MPI stage intra-host GPU traffic
	int32_t gdr;        // nvidia_peermem + IB devices present
	int32_t noRdmaNet;  // an override restricts MPI to TCP / no RDMA transport
	int32_t shmOk;
	int32_t numBuffers;
	int32_t forceShm;
	uint64_t chunk;
	uint64_t directPiece;
	char noCudaWhy[160];
	char ipcOffWhy[160];
	char netWhy[160];
	char awareWhy[160];
};

/** The pair's agreed view (both ranks compute the same). */
struct Peer {
	gpumpi_path_class path = GPUMPI_PATH_HOST_ONLY;
	gpumpi_protocol proto = GPUMPI_PROTO_DIRECT;
	bool sameHost = false;
	int aware = -1;
	size_t chunk = 0;
	size_t directPiece = 0;
	double calibUs = -1;
	std::string host, gpu, reason;
};

enum class CopyKind { HostMemcpy, D2H, H2D, D2D };

/** Which way a request moves data. */
enum class Dir {
	Send,  // this rank sends to the peer (gpumpi_isend*)
	Recv,  // this rank receives from the peer (gpumpi_irecv*)
};

/** Every flag gpumpi_config.flags takes. */
constexpr unsigned kConfigFlags = GPUMPI_FORCE_DIRECT | GPUMPI_FORCE_STAGED | GPUMPI_STAGE_HOST | GPUMPI_CALIBRATE | GPUMPI_NO_SHM | GPUMPI_FORCE_SHM;
/** The flags one gpumpi_isend_ex / gpumpi_irecv_ex call takes (the protocol choices); a subset of kConfigFlags. */
constexpr unsigned kCallFlags = GPUMPI_FORCE_DIRECT | GPUMPI_FORCE_STAGED | GPUMPI_STAGE_HOST | GPUMPI_FORCE_SHM;

/** Outcome of polling something in flight (an MPI request, a copy, the handshake). */
enum class Poll {
	Failed,   // it failed: the request is aborted (copyDone: the error text is on the context)
	Pending,  // not finished yet; poll again
	Done,     // finished (handshake: chunks may flow)
};

/** Who holds a slot of a SlotPool. */
enum class SlotUse {
	Free,  // nobody: acquire may hand it out
	Send,  // a send: its chunk is copied in, then sent from it
	Recv,  // a receive: its chunk is received into it, then copied out
};

/** A fixed set of equal-sized buffers (host staging, device bounce, or one shared segment's slots). */
struct SlotPool {
	struct Region { char* base; size_t bytes; bool ownedAlloc; bool pinnedByUs; bool device; char* pinBase; };
	std::vector<Region> regions;
	std::vector<char*> slots;
	std::vector<CUevent> events;  // one per slot (CUDA only)
	std::vector<SlotUse> inUse;   // one per slot
	size_t slotBytes = 0;
	int heldBySend = 0, heldByRecv = 0;  // slots held per direction
	/** Take a slot for direction dir; each direction keeps at most n-1 (deadlock freedom). -1 when none. */
	int acquire(Dir dir);
	void release(int slot);
	int busy() const { return heldBySend + heldByRecv; }
};

/**
 * Where one in-flight chunk of a Staged, Bounce or SHM request is (Plain chunks stay Unstaged).
 * Send: CopyingIn -> CopiedIn -> Sending. Receive: Receiving -> CopyingOut (-> Acking for SHM).
 */
enum class Stage {
	Unstaged,    // Plain: the user's buffer goes to MPI as it is; only the MPI request is tracked
	CopyingIn,   // send: the user's data is being copied into the slot
	CopiedIn,    // send: the slot is full; waits for its turn (chunks are posted to MPI in chunk order)
	Sending,     // send: the MPI send is in flight (SHM: the chunk signal, and the receive of the slot's ack)
	Receiving,   // receive: the MPI receive is in flight (SHM: the receive of the chunk signal)
	CopyingOut,  // receive: the slot is being copied into the user's buffer
	Acking,      // SHM receive: the ack that frees the sender's slot is in flight
};

/** State of one of the two 8-byte messages of the STAGED / SHM handshake (clear-to-send, size header). */
enum class Exchange {
	NotPosted,  // not posted yet
	InFlight,   // posted, not complete
	Done,       // complete
};

/** One in-flight chunk of a request. */
struct Op {
	size_t chunk = 0;
	int slot = -1;
	Stage stage = Stage::Unstaged;
	MPI_Request mreq = MPI_REQUEST_NULL;
	MPI_Request mreq2 = MPI_REQUEST_NULL;  // shm: the ack receive (sender side)
	size_t len = 0;
};

struct ShmLink;  // shmPath.cc

struct Ctx;
}  // namespace gpumpi::lib

struct gpumpi_request {
	gpumpi::lib::Ctx* ctx = nullptr;
	gpumpi::lib::Dir dir = gpumpi::lib::Dir::Send;
	int peer = 0, tag = 0;
	char* buf = nullptr;
	size_t bytes = 0;
	unsigned flags = 0;
	gpumpi_protocol proto = GPUMPI_PROTO_DIRECT;
	enum Mode { Plain, Staged, Bounce, Shm } mode = Plain;
	gpumpi::lib::CopyKind copy = gpumpi::lib::CopyKind::HostMemcpy;
	size_t piece = 0, nChunks = 0;
	size_t nextStart = 0;  // next chunk to start
	size_t nextMpi = 0;    // next chunk whose MPI op must be posted (in order)
	size_t nDone = 0;
	bool fullyPosted = false;
	gpumpi::lib::Exchange cts = gpumpi::lib::Exchange::NotPosted;  // clear-to-send, receiver -> sender (STAGED / SHM)
	MPI_Request ctsReq = MPI_REQUEST_NULL;
	uint64_t ctsBuf = 0;
	gpumpi::lib::Exchange hdr = gpumpi::lib::Exchange::NotPosted;  // size header, sender -> receiver after the CTS
	MPI_Request hdrReq = MPI_REQUEST_NULL;
	uint64_t hdrBuf = 0;
	std::vector<uint64_t> sigbuf;  // shm receiver: signal payloads, 2 words per in-flight chunk (stable addresses)
	bool done = false;
	bool queued = false;
	gpumpi_status err = GPUMPI_SUCCESS;
	std::string errText;
	std::vector<gpumpi::lib::Op> ops;  // in flight (bounded by the window / slot count)
};

namespace gpumpi::lib {

using Key = std::tuple<int, int, Dir>;  // peer, tag, direction

struct IpcMap { char* base; size_t bytes; CUdeviceptr opened; };

struct Ctx {
	MPI_Comm comm = MPI_COMM_NULL;    // data (dup of the user's)
	MPI_Comm sigComm = MPI_COMM_NULL; // clear-to-send handshakes, calibration
	MPI_Comm shmComm = MPI_COMM_NULL; // shm chunk signals (tag = user tag)
	MPI_Comm ackComm = MPI_COMM_NULL; // shm slot acks (tag = slot)
	MPI_Comm hdrComm = MPI_COMM_NULL; // size headers, sender -> receiver (tag = user tag)
	int rank = 0, size = 0, tagUb = 32767;
	gpumpi_config cfg{};
	bool cuda = false;
	std::string noCudaWhy;
	CUdevice dev = 0;
	CUcontext cuctx = nullptr;
	CUstream sD2H = nullptr, sH2D = nullptr, sD2D = nullptr;
	Facts self{};
	std::vector<Peer> peers;
	SlotPool host;    // staging (registered / allocated)
	SlotPool bounce;  // device bounce for imported memory
	std::vector<IpcMap> ipc;
	std::vector<ShmLink*> shm;  // per peer (null when not used); owned, freed by shmTeardown
	std::vector<gpumpi_request*> active;
	std::map<Key, std::deque<gpumpi_request*>> order;
	std::string lastError;
	int inApi = 0;
};

// api.cc
gpumpi_status fail(Ctx* c, gpumpi_status st, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
gpumpi_status cudaFail(Ctx* c, CUresult r, const char* what);
bool makeCurrent(Ctx* c);
std::string mpiErrorText(int code);

// discovery.cc
gpumpi_status discover(Ctx* c);

// slotPool.cc
gpumpi_status poolAddRegion(Ctx* c, SlotPool& p, char* base, size_t bytes, bool owned, bool pinnedByUs, bool device, char* pinBase = nullptr);
gpumpi_status poolRemoveRegion(Ctx* c, SlotPool& p, char* base);
void poolDestroy(Ctx* c, SlotPool& p);
/** Start a copy for slot (records the slot's event); HostMemcpy completes at once. */
gpumpi_status startCopy(Ctx* c, CopyKind k, void* dst, const void* src, size_t n, CUevent ev);
/** Whether the copy recorded on ev has finished; Failed sets the error on c. */
Poll copyDone(Ctx* c, CopyKind k, CUevent ev);

// pipeline.cc
gpumpi_status post(Ctx* c, Dir dir, void* buf, size_t bytes, int peer, int tag, unsigned flags, gpumpi_request** out);
gpumpi_status progress(Ctx* c);
void freeRequest(gpumpi_request* r);
/** Completes r with st/text: settles its MPI requests (handshake included), frees its slots, leaves the order queue. */
void abortRequest(Ctx* c, gpumpi_request* r, gpumpi_status st, const std::string& text);
/** Whether r is the oldest request of its (peer, tag, direction): only that one posts MPI operations. */
bool isFront(Ctx* c, gpumpi_request* r);
/** Takes r out of its order queue (once all its MPI operations are posted, or when it is aborted). */
void dequeue(Ctx* c, gpumpi_request* r);
/** Bytes of chunk k of r (the last one may be short; 0 for a 0-byte request). */
inline size_t chunkLen(const gpumpi_request* r, size_t k) { return r->bytes == 0 ? 0 : std::min(r->piece, r->bytes - k * r->piece); }
/**
 * The STAGED / SHM handshake (clear-to-send from the receiver, size header from the sender); a no-op for DIRECT.
 * Done when chunks may flow (the receiver at once, the sender once the CTS arrived), Pending not yet, Failed aborted.
 * Sets *changed when it moved.
 */
Poll handshake(Ctx* c, gpumpi_request* r, bool* changed);

// shmPath.cc
gpumpi_status shmSetup(Ctx* c);
void shmTeardown(Ctx* c);
size_t shmBytes(Ctx* c);
bool shmHasLink(Ctx* c, int peer);
void shmAbort(Ctx* c, gpumpi_request* r);
bool shmAvailable(std::string* why);
/** Drive one SHM request (after the handshake); returns true when something changed. */
bool shmStep(Ctx* c, gpumpi_request* r);

}  // namespace gpumpi::lib
