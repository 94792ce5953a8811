// gpumpi-guard internals (libgpumpi_guard.so, LD_PRELOAD or linked): PMPI wrappers that observe, and in fix mode
// repair, what a user's MPI program does with GPU buffers. One home per concern:
//   guardState.cc    the floor: process state, say(), communicator ranks, statistics, dangerous calls
//   guardLifecycle.cc  the roof: MPI_Init / MPI_Init_thread / MPI_Finalize / MPI_Comm_free: environment, MPI facts
//                    (pml, UCX, CUDA-aware), peer paths, STAGE agreed and started, reports at exit
//   guardAgree.cc    what the ranks learn of each other at MPI_Init (files, else MPI, else off)
//   guardReport.cc   the per-rank JSON report (contract: docs/guard.md "Report")
//   guardClassify.cc buffer classes with a range cache; CUDA interposition (IPC imports, frees, cuGetProcAddress)
//   guardP2p.cc      point-to-point, persistent, probe and the Wait/Test family; the fix-mode bounce buffers
//   guardColl.cc     collectives' buffers and the calls that pass through unobserved ("unsupported")
//   guardUcx.cc      UCX's memory-type cache: the seeding scan replayed at the program's first buffer, ranges it misses
//   guardStage.cc, guardStageRecv.cc  GPUMPI_GUARD_STAGE=1 (guardStage.hh); guardWrappers.gen.cc  the MPI_* entry points
// Includes go one way (test/unit/includeCycles.test.ts): this header is below every other file, guardStage.hh is on
// top of it, and guardState.cc uses nothing but this header.
// Nothing here aborts or throws into the application: a guard failure is a stderr line and pass-through.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <mutex>
#include <string>
#include <vector>

#define GUARD_API extern "C" __attribute__((visibility("default")))

namespace gpumpi::guard {

enum class Mode { Off, Report, Warn, Fix };

/** Buffer classes, in the report's order ("bufferClasses" keys). */
enum Cls : uint8_t { kHost, kPinnedHost, kDevice, kManaged, kPool, kVmm, kIpcImport, kNumCls };
extern const char* const kClsNames[kNumCls];

/** Every intercepted call, in one table (names: kCallNames). */
enum CallId : int {
#define GUARD_CALL(id) C_##id,
#include "guardCalls.def"
#undef GUARD_CALL
	C_COUNT
};
extern const char* const kCallNames[C_COUNT];

struct CallStat { uint64_t count = 0, bytes = 0, ns = 0; };
struct PeerStat {
	uint64_t sendCalls = 0, recvCalls = 0, sentBytes = 0, recvBytes = 0, largest = 0;
	uint64_t cls[kNumCls] = {};
};
struct CollStat { uint64_t count = 0, bytes = 0; uint64_t cls[kNumCls] = {}; };

enum class DangerKind { IpcImportUcx, DeviceNotAware, PoolVmmLegacyIpc, HugeToHostStaged, UcxMemtypeMiss, Count };
struct Site { uintptr_t address = 0; std::string symbol, object; uintptr_t offset = 0; };
struct Danger {
	DangerKind kind = DangerKind::Count;
	CallId call = C_Send;
	int peer = -1;  // world rank, -1 none (collectives)
	uint64_t count = 0, bytes = 0;
	Site site;
	std::string detail;
	const char* action = "none";
};

/** The unsupported calls: passed through, counted. */
struct Unsupported { const char* call; uint64_t count = 0; };

/** Process-wide guard state (one per process, zero-initialised before main). */
struct State {
	Mode mode = Mode::Report;
	bool active = false;      // MPI_Init seen and mode != Off
	bool threaded = false;    // MPI_THREAD_MULTIPLE granted: take the lock
	bool finalized = false;
	bool written = false;
	bool stageAsked = false;   // GPUMPI_GUARD_STAGE=1 on this rank
	bool stageAgreed = false;  // every rank of MPI_COMM_WORLD asked for it (agreed at MPI_Init; guardStage.cc)
	int stageRanks = 0;        // ranks that asked (from the agreement; 0 before it)
	std::string offReason;     // why this rank's guard turned itself off at MPI_Init ("" = it did not; guardAgree.cc)
	uint64_t stageMin = 1048576;
	std::string dir = ".";
	int rank = -1, size = 0;
	MPI_Comm world = MPI_COMM_NULL;  // dup of MPI_COMM_WORLD for the guard's own collectives (STAGE, or Agreement::Mpi)
	const char* exchange = "none";   // how the ranks learnt each other's facts at MPI_Init: "files" | "mpi" (guardAgree.cc)
	std::string host;
	int pid = 0;
	double t0 = 0, t1 = 0;  // clockNs() in s at init / finalize
	uint64_t tick0 = 0, tick1 = 0;  // nowNs() at the same moments (ticks: see nowNs)
	// MPI facts
	std::string library;
	const char* cudaAware = "unknown";  // yes | no | unknown
	std::string pml;                    // "" = unknown
	int ucxCudaIpc = -1;                // 1 / 0 / -1 unknown or not UCX
	std::vector<std::string> peerPath;  // per world rank
	// statistics
	CallStat calls[C_COUNT];
	std::vector<PeerStat> peers;
	CollStat coll[C_COUNT];
	std::vector<Danger> dangers;
	std::vector<Unsupported> unsupported;
	uint64_t classifyQueries = 0, cacheHits = 0;
	uint64_t bounced = 0;
	std::mutex mu;
};
State& st();

/** "gpumpi-guard: rank R: LINE" on stderr, in one write(2) (a rank's line is not cut by another's); the guard's only
 *  way of speaking to the user. */
void say(const std::string& line);
/** `text` into `file` through FILE.tmp and a rename, so a reader never sees part of it (FILE.tmp removed on failure).
 *  False with *step ("create", "write" or "rename") and *why (strerror) set. Used for the reports and the init files. */
bool writeFileAtomically(const std::string& file, const std::string& text, const char** step, std::string* why);

/** Holds the state lock when the program runs with MPI_THREAD_MULTIPLE; otherwise nothing. */
class Lock {
public:
	Lock() : held_(st().threaded) { if (held_) st().mu.lock(); }
	~Lock() { if (held_) st().mu.unlock(); }
	Lock(const Lock&) = delete;
	Lock& operator=(const Lock&) = delete;
private:
	bool held_;
};

inline uint64_t clockNs() {
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
/** The per-call clock: the TSC on x86-64 (~10 ns a read where clock_gettime takes ~23), converted to ns in the
 *  report with the rate measured between MPI_Init and the report (State::tick0 / ns0); clock_gettime elsewhere. */
inline uint64_t nowNs() {
#if defined(__x86_64__)
	return __builtin_ia32_rdtsc();
#else
	return clockNs();
#endif
}

// guardState.cc
/** Bytes of `count` elements of `type` (MPI_Type_size; 0 for a bad type). */
uint64_t typeBytes(int count, MPI_Datatype type);
/** World rank of rank `r` of `comm` (the remote group for inter-communicators); -1 for PROC_NULL / ANY / unknown. */
int worldRank(MPI_Comm comm, int r);
void forgetComm(MPI_Comm comm);
/** Adds one observed call's count / bytes / time. */
inline void addCall(CallId c, uint64_t bytes, uint64_t ns) {
	CallStat& s = st().calls[c];
	s.count++;
	s.bytes += bytes;
	s.ns += ns;
}
void addPeer(int worldPeer, bool send, uint64_t bytes, Cls cls);
void addUnsupported(const char* call);
/** Records a dangerous combination (first site per kind + call + site; later ones add count / bytes). Warns in warn mode. */
void addDanger(DangerKind kind, CallId call, int peer, uint64_t bytes, void* returnAddress, const std::string& detail, const char* action);
/** Whether buffers of class `cls` to/from `peer` (world, -1 collective) in `call` are dangerous; records it. Returns the kind or Count. */
DangerKind checkDanger(CallId call, int peer, uint64_t bytes, Cls cls, const void* buf, void* returnAddress, bool fixed);
/** A pool / VMM buffer to or from a same-host GPU peer under pml ucx with cuda_ipc: UCX cannot export it (legacy IPC
 *  takes cuMemAlloc memory only) and falls back to a slow path; fix mode bounces it through a cuMemAlloc buffer. */
bool poolVmmCannotExport(int peer, Cls cls);
/** One recorded dangerous call, as checkDanger counted it: what markStaged needs to find its record again. */
struct DangerRef {
	DangerKind kind = DangerKind::Count;
	CallId call = C_Send;
	int peer = -1;
	uint64_t bytes = 0;
	void* returnAddress = nullptr;
};
/** STAGE took this call after all: moves it from its record (action "none" / "warned") to one with action "staged". */
void markStaged(const DangerRef& d);

// guardAgree.cc
/** One rank's facts at MPI_Init, as every rank learns them. */
struct RankFacts { std::string host; bool hasCuda = false; bool stageAsked = false; };
/** How the ranks learnt each other's facts: Files (no MPI transfer; *all filled), Mpi (every rank runs the guard but
 *  the files do not show it: exchange through the guard's own MPI collectives), Off (*why says why). *note: bad
 *  settings seen (a message, defaults). */
enum class Agreement { Files, Mpi, Off };
Agreement agreeAtInit(State& g, const RankFacts& me, std::vector<RankFacts>* all, std::string* why, std::string* note);
/** At MPI_Finalize or exit: removes this rank's init file (kept until then: a slower rank may still be reading it). */
void initFilesDone();

// guardReport.cc
void writeReport(bool finalized);
/** The report so far, marked "interim" (caller holds Lock): at each new danger, so a crash after it loses nothing. */
void writeInterimReport();
const char* dangerName(DangerKind k);

// guardClassify.cc
/** Class of the buffer [p, p+bytes); cached per allocation range. Caller holds Lock. */
Cls classify(const void* p, uint64_t bytes);
/** The IPC import range holding p, or false. */
bool ipcImportRange(const void* p, uintptr_t* base, size_t* size);
std::string cudaDetail(bool* available);
/** Device-to-device copy with the driver (fix mode); false on error (text in *why). */
bool copyDevice(void* dst, const void* src, size_t bytes, std::string* why);
/** A device buffer of at least `bytes` this rank owns (cached, grown); null with *why on error. */
void* bounceAcquire(size_t bytes, std::string* why);
void bounceRelease(void* p);
void bounceFreeAll();

// guardUcx.cc (pml ucx; the why is at the top of that file)
struct UcxMemtypeFacts {
	const char* state = "not used";  // "replayed" | "off (UCX_MEMTYPE_CACHE)" | why nothing was done | "not used" (no UCX pml)
	unsigned major = 0, minor = 0, release = 0;
	uint64_t replayedRegions = 0, missedRanges = 0, toldRanges = 0;
};
const UcxMemtypeFacts& ucxMemtypeFacts();
/** Once, at the program's first buffer (before its first transfer): replays UCX's seeding scan into its cache. */
void ucxFirstBuffer();
/** A device range the driver reported for the first time: recorded when UCX cannot know of it (fix: UCX is told). */
void ucxNewRange(uintptr_t start, uintptr_t end, Cls cls);
/** Whether p lies in a range UCX's memory-type cache will take for host memory. */
bool ucxMissed(const void* p);
/** The range holding p was freed. */
void ucxForget(uintptr_t p);

}  // namespace gpumpi::guard
