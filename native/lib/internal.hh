// libgpumpi internals: the context, staging slot pools, requests and the pieces that build them.
// One home per concern: discovery.cc (facts + path classes), slotPool.cc (staging memory + copy engines),
// pipeline.cc (requests, wire protocols, progress), shmPath.cc (shared segments), api.cc (C API + errors),
// cudaUtil.cc (utility API). Nothing here throws across the C boundary (api.cc catches).
#pragma once
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // C bindings only (Open MPI's C++ bindings would need libmpi_cxx)
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

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

/** A fixed set of equal-sized buffers (host staging, device bounce, or one shared segment's slots). */
struct SlotPool {
	struct Region { char* base; size_t bytes; bool ownedAlloc; bool pinnedByUs; bool device; char* pinBase; };
	std::vector<Region> regions;
	std::vector<char*> slots;
	std::vector<CUevent> events;  // one per slot (CUDA only)
	std::vector<int> inUse;       // 0 free, 1 send, 2 recv
	size_t slotBytes = 0;
	int held[3] = {0, 0, 0};
	/** Take a slot for direction dir (1 send, 2 recv); each direction keeps at most n-1 (deadlock freedom). */
	int acquire(int dir);
	void release(int slot);
	int busy() const { return held[1] + held[2]; }
};

/** One in-flight chunk of a request. */
struct Op {
	size_t chunk = 0;
	int slot = -1;
	int stage = 0;  // see pipeline.cc
	MPI_Request mreq = MPI_REQUEST_NULL;
	MPI_Request mreq2 = MPI_REQUEST_NULL;  // shm: the ack receive (sender side)
	size_t len = 0;
};

struct ShmLink;  // shmPath.cc

struct Ctx;
}  // namespace gpumpi::lib

struct gpumpi_request {
	gpumpi::lib::Ctx* ctx = nullptr;
	int dir = 1;  // 1 send, 2 recv
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
	int cts = 0;  // STAGED protocol clear-to-send handshake: 0 not yet, 1 in flight, 2 done
	MPI_Request ctsReq = MPI_REQUEST_NULL;
	uint64_t ctsBuf = 0;
	int hdr = 0;  // sender's size header (sender -> receiver after the CTS): 0 not yet, 1 in flight, 2 done
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

using Key = std::tuple<int, int, int>;  // peer, tag, dir

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
/** 1 done, 0 not yet, <0 error (set on c). */
int copyDone(Ctx* c, CopyKind k, CUevent ev);

// pipeline.cc
gpumpi_status post(Ctx* c, int dir, void* buf, size_t bytes, int peer, int tag, unsigned flags, gpumpi_request** out);
gpumpi_status progress(Ctx* c);
void freeRequest(gpumpi_request* r);
/** Completes r with st/text: settles its MPI requests (handshake included), frees its slots, leaves the order queue. */
void abortRequest(Ctx* c, gpumpi_request* r, gpumpi_status st, const std::string& text);

// shmPath.cc
gpumpi_status shmSetup(Ctx* c);
void shmTeardown(Ctx* c);
size_t shmBytes(Ctx* c);
bool shmHasLink(Ctx* c, int peer);
void shmAbort(Ctx* c, gpumpi_request* r);
bool shmAvailable(std::string* why);
/** Drive one SHM request; returns true when something changed. */
bool shmStep(Ctx* c, gpumpi_request* r);

}  // namespace gpumpi::lib
