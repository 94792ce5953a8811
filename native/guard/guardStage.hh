// GPUMPI_GUARD_STAGE=1: large device messages to host-staged peers through libgpumpi's persistent staging, with
// MPI's own matching (docs/guard.md "STAGE"). One home per side:
//   guardStage.cc      the context (MPI_Init), the header protocol, staged sends, progress, the report's counts
//   guardStageRecv.cc  receives that may match a header: the per-communicator queue, probes, grequests, cancel
// Every message, staged or not, is one MPI message on the user's envelope: a staged one is a HDR-byte header
// (job key, byte count, per-pair sequence, sender) whose data then moves with gpumpi_isend/irecv on the guard's
// world context, tag = the sequence. So matching, ordering and wildcards are MPI's.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "guardState.hh"

namespace gpumpi::guard {

/** Bytes of a header message (and of no other kind of message the guard inspects). */
constexpr int kHdrBytes = 64;

struct StageHdr {
	uint64_t key[2];   // the job key (rank 0's random 128 bits, broadcast at MPI_Init)
	uint64_t bytes;    // data bytes that follow through libgpumpi
	uint64_t seq;      // per (sender, receiver) sequence: the libgpumpi tag is seq mod the tag range
	int32_t src;       // sender's world rank
	int32_t magic;     // 'GSTG'
	uint64_t pad[3];
};
static_assert(sizeof(StageHdr) == kHdrBytes, "header is kHdrBytes");

/** Why a send that could have been staged was not (the report's "stageRefused"). */
enum class Refuse { Mode, Persistent, NonContiguous, Count };
const char* refuseName(Refuse r);

// guardStage.cc
/** After the agreement at MPI_Init: create the context, share the key, pick the staged peers. Collective. */
void stageStart();
/** At MPI_Finalize (collective): waits for nothing; frees the context when idle. */
void stageStop();
/** STAGE is active on this rank. */
bool stageOn();
/** Peer (world rank) whose device messages are staged. */
bool stagedPeer(int worldPeer);
/** Whether this send goes through the header protocol: STAGE on, device buffer >= min, staged peer, contiguous,
 *  intra-communicator. `refusable` sends (modes, persistent, Sendrecv) are counted as refused instead. */
bool wantStage(const void* buf, int count, MPI_Datatype type, int dest, MPI_Comm comm, uint64_t bytes, bool isDevice);
void refuse(Refuse r);
/** Staged Isend: header + data; *req a generalized request completed when both are. */
int stagedIsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req);
/** Staged data receive into buf (bytes of hdr), from hdr.src; the handle drives it (stageDataDone). */
struct DataRecv;
DataRecv* stagedDataRecv(const StageHdr& h, void* buf, std::string* err);
/** 1 done, 0 pending, -1 failed (text in *err). Frees d when it returns != 0. */
int stageDataDone(DataRecv* d, std::string* err);
/** Drives every staged transfer and deferred receive once; returns whether anything is in flight afterwards. */
bool stageProgress();
/** Something the guard must drive is in flight (then blocking calls poll instead of blocking in MPI). */
bool stagePending();
/** A header from a HDR-byte message, when it carries this job's key. */
bool stageDecode(const void* bytes, StageHdr* out);
void stageCountRecv(int worldPeer, uint64_t bytes);
/** The report's "stageDetail" object. */
std::string stageReportJson();

// guardStageRecv.cc
/** The receive wrappers' part: whether this receive must go through the guard's queue. */
bool recvNeedsGuard(int count, MPI_Datatype type, int source, int tag, MPI_Comm comm);
/** `danger`: the record the receive was counted in; a staged message landing in it moves it to action "staged". */
int guardIrecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* req, const DangerRef& danger = {});
int guardRecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status, const DangerRef& danger = {});
/** Drives the per-communicator queues once; returns whether an entry is still waiting. */
bool recvProgress();
bool recvPending();
/** User probes under STAGE (answer with the real size of staged messages). */
int guardIprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status);
int guardProbe(int source, int tag, MPI_Comm comm, MPI_Status* status);

/** Waits: poll loops of PMPI_Test* + stageProgress while the guard has work in flight; PMPI otherwise. */
int pollWait(MPI_Request* req, MPI_Status* status);
int pollWaitall(int n, MPI_Request* reqs, MPI_Status* statuses);
int pollWaitany(int n, MPI_Request* reqs, int* index, MPI_Status* status);
int pollWaitsome(int n, MPI_Request* reqs, int* outcount, int* indices, MPI_Status* statuses);

}  // namespace gpumpi::guard
