// The guard's lifecycle, on top of every other file: MPI_Init / MPI_Init_thread (the environment, the MPI's facts,
// the agreement with the other ranks, peer paths, STAGE), MPI_Finalize, MPI_Comm_free, and the reports at exit.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "guardStage.hh"
#include "guardState.hh"

namespace gpumpi::guard {
namespace {

/** GPUMPI_GUARD as a mode: unset or empty is report; a value that is none of report, warn, fix, off is off, with
 *  *bad set to it (MPI_Init says so; *bad stays empty otherwise). */
Mode envMode(std::string* bad) {
	const char* m = std::getenv("GPUMPI_GUARD");
	std::string v = m ? m : "";
	bad->clear();
	if (v.empty() || v == "report") return Mode::Report;
	if (v == "warn") return Mode::Warn;
	if (v == "fix") return Mode::Fix;
	if (v != "off") *bad = v;
	return Mode::Off;
}

/** GPUMPI_GUARD_DIR, where the reports go (default: the working directory). */
void envDir(State& g) {
	const char* d = std::getenv("GPUMPI_GUARD_DIR");
	if (d && *d) g.dir = d;
}

/** Environment (after PMPI_Init, so messages carry the rank). Bad values: a message, the default. */
void readEnv(State& g) {
	std::string bad;
	g.mode = envMode(&bad);
	if (!bad.empty()) say("GPUMPI_GUARD='" + bad + "' is not one of report, warn, fix, off: the guard is off (calls pass through)");
	const char* s = std::getenv("GPUMPI_GUARD_STAGE");
	std::string sv = s ? s : "";
	if (sv == "1") {
		g.stageAsked = true;  // agreed with the other ranks in stageAgree()
	} else if (!sv.empty() && sv != "0") {
		say("GPUMPI_GUARD_STAGE='" + sv + "' is not 0 or 1: ignored (0)");
	}
	const char* n = std::getenv("GPUMPI_GUARD_STAGE_MIN");
	if (n && *n) {
		bool digits = true;
		for (const char* p = n; *p; ++p) digits = digits && *p >= '0' && *p <= '9';
		errno = 0;
		unsigned long long x = digits ? std::strtoull(n, nullptr, 10) : 0;
		if (!digits || errno == ERANGE || x == 0) {
			say(std::string("GPUMPI_GUARD_STAGE_MIN='") + n + "' is not a positive number of bytes: ignored (1048576)");
		} else {
			g.stageMin = x;
		}
	}
	envDir(g);
}

bool hasToken(const std::string& list, const char* tok) {
	size_t i = 0;
	while (i <= list.size()) {
		size_t j = list.find(',', i);
		if (j == std::string::npos) j = list.size();
		if (list.compare(i, j - i, tok) == 0) return true;
		i = j + 1;
	}
	return false;
}

/** The pml Open MPI loaded (the only mca_pml_*.so left mapped after selection), or "". */
std::string mappedPml() {
	std::ifstream maps("/proc/self/maps");
	std::set<std::string> found;
	std::string line;
	while (std::getline(maps, line)) {
		size_t i = line.find("/mca_pml_");
		if (i == std::string::npos) continue;
		size_t b = i + 9, e = line.find(".so", b);
		if (e != std::string::npos) found.insert(line.substr(b, e - b));
	}
	return found.size() == 1 ? *found.begin() : "";
}

/**
 * The MPI_T control variable `name` as a string, or "". Called after MPI_Init: the tool interface is initialised with
 * the thread level the program already has, never a lower one. Open MPI's MPI_T_init_thread sets the MPI library's
 * own thread level from its argument (ompi_mpi_thread_level, ompi/runtime/ompi_mpi_init.c at v4.1.4 and v5.0.7): asked
 * with MPI_THREAD_SINGLE it turned a program's MPI_THREAD_MULTIPLE into SINGLE (MPI_Query_thread said so, and Open MPI
 * dropped its own locking), seen with mpi4py under the guard on Open MPI 4.1.4 and 5.0.7.
 */
std::string cvarString(const char* name) {
	int level = MPI_THREAD_SINGLE, provided = 0;
	if (PMPI_Query_thread(&level) != MPI_SUCCESS) return "";
	if (PMPI_T_init_thread(level, &provided) != MPI_SUCCESS) return "";
	std::string out;
	int idx = -1;
	if (PMPI_T_cvar_get_index(name, &idx) == MPI_SUCCESS && idx >= 0) {
		char nm[256], desc[1024];
		int nlen = sizeof nm, dlen = sizeof desc, verb = 0, bind = 0, scope = 0;
		MPI_Datatype type;
		MPI_T_enum en;
		if (PMPI_T_cvar_get_info(idx, nm, &nlen, &verb, &type, &en, desc, &dlen, &bind, &scope) == MPI_SUCCESS && type == MPI_CHAR && bind == MPI_T_BIND_NO_OBJECT) {
			MPI_T_cvar_handle h;
			int count = 0;
			if (PMPI_T_cvar_handle_alloc(idx, nullptr, &h, &count) == MPI_SUCCESS) {
				std::vector<char> buf(size_t(count > 0 ? count : 1) + 1, 0);
				if (count > 0 && PMPI_T_cvar_read(h, buf.data()) == MPI_SUCCESS) out = buf.data();
				PMPI_T_cvar_handle_free(&h);
			}
		}
	}
	PMPI_T_finalize();
	return out;
}

void mpiFacts(State& g) {
	char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
	int len = 0;
	if (PMPI_Get_library_version(lib, &len) == MPI_SUCCESS) {
		// one line: Open MPI's first line; MPICH's "MPICH Version:" and "MPICH Device:" lines
		std::string all = std::string(lib, size_t(len > 0 ? len : 0)).c_str(), out, line;
		size_t i = 0;
		while (i < all.size()) {
			size_t j = all.find('\n', i);
			if (j == std::string::npos) j = all.size();
			line = all.substr(i, j - i);
			for (char& c : line) if (c == '\t') c = ' ';
			if (out.empty() || line.rfind("MPICH Device:", 0) == 0) out += (out.empty() ? "" : ", ") + line;
			if (line.rfind("MPICH", 0) != 0) break;
			i = j + 1;
		}
		while (!out.empty() && out.back() == ' ') out.pop_back();
		g.library = out;
	}
	using QueryFn = int (*)();
	if (auto q = reinterpret_cast<QueryFn>(dlsym(RTLD_DEFAULT, "MPIX_Query_cuda_support"))) g.cudaAware = q() ? "yes" : "no";
	bool openmpi = g.library.find("Open MPI") != std::string::npos;
	const char* envPml = std::getenv("OMPI_MCA_pml");
	if (envPml && *envPml && envPml[0] != '^' && !std::strchr(envPml, ',')) g.pml = envPml;
	if (g.pml.empty() && openmpi) {
		std::string cv = cvarString("pml");
		if (!cv.empty() && cv[0] != '^' && cv.find(',') == std::string::npos) g.pml = cv;
	}
	if (g.pml.empty() && openmpi) g.pml = mappedPml();
	if (g.pml.empty() && g.library.find("ch4:ucx") != std::string::npos) g.pml = "ucx";  // MPICH's UCX netmod
	if (g.pml == "ucx") {
		const char* t = std::getenv("UCX_TLS");
		std::string tls = t ? t : "";
		if (tls.empty() || tls == "all") g.ucxCudaIpc = 1;
		else if (tls[0] == '^') g.ucxCudaIpc = (hasToken(tls.substr(1), "cuda_ipc") || hasToken(tls.substr(1), "cuda")) ? 0 : 1;
		else g.ucxCudaIpc = (hasToken(tls, "cuda_ipc") || hasToken(tls, "cuda")) ? 1 : 0;
	}
}

/** This rank's facts for the others: its host, whether a GPU driver is here, whether it asked for STAGE. */
RankFacts localFacts(State& g) {
	RankFacts f;
	char name[MPI_MAX_PROCESSOR_NAME] = {0};
	int len = 0;
	PMPI_Get_processor_name(name, &len);
	f.host = std::string(name).substr(0, 63);
	void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	f.hasCuda = h || access("/dev/nvidiactl", F_OK) == 0;
	if (h) dlclose(h);
	f.stageAsked = g.stageAsked;
	return f;
}

/** Agreement::Mpi: every rank's facts through PMPI_Allgather on the guard's dup (the process's first MPI transfer). */
bool exchangeByMpi(State& g, const RankFacts& me, std::vector<RankFacts>* all) {
	struct Wire { char host[64]; int32_t hasCuda, stageAsked; };
	Wire w{};
	std::snprintf(w.host, sizeof w.host, "%s", me.host.c_str());
	w.hasCuda = me.hasCuda ? 1 : 0;
	w.stageAsked = me.stageAsked ? 1 : 0;
	std::vector<Wire> got(size_t(g.size));
	if (PMPI_Allgather(&w, sizeof w, MPI_BYTE, got.data(), sizeof w, MPI_BYTE, g.world) != MPI_SUCCESS) return false;
	all->clear();
	for (const Wire& x : got) all->push_back(RankFacts{std::string(x.host, strnlen(x.host, sizeof x.host)), x.hasCuda != 0, x.stageAsked != 0});
	return true;
}

/** Each peer's path from the ranks' facts: another host -> network; no GPU driver on either side -> host-only;
 *  itself -> same-gpu; same host with GPUs -> host-staged when UCX is kept off cuda_ipc, else p2p. */
void peerPaths(State& g, const std::vector<RankFacts>& all) {
	g.peerPath.assign(size_t(g.size), "unknown");
	if (all.size() != size_t(g.size)) return;
	const RankFacts& me = all[size_t(g.rank)];
	for (int r = 0; r < g.size; ++r) {
		const RankFacts& p = all[size_t(r)];
		std::string& out = g.peerPath[size_t(r)];
		if (p.host != me.host) out = "network";
		else if (!p.hasCuda || !me.hasCuda) out = "host-only";
		else if (r == g.rank) out = "same-gpu";
		else if (g.ucxCudaIpc == 0) out = "host-staged";
		else out = "p2p";  // same host with GPUs; same-gpu pairs are not told apart at MPI_Init (no context yet)
	}
}

bool gInitSeen = false;  // the guard's MPI_Init / MPI_Init_thread ran (in any mode)

/** A loaded Fortran binding library whose entry points call PMPI_* directly (Open MPI's mpif-h, use-mpi and
 *  use-mpi-f08, under ompi/mpi/fortran in its source), or "". MPICH's Fortran bindings call the C MPI_* functions: seen. */
std::string directFortranBindings() {
	std::string found;
	dl_iterate_phdr([](dl_phdr_info* info, size_t, void* data) -> int {
		const char* full = info->dlpi_name ? info->dlpi_name : "";
		const char* base = std::strrchr(full, '/') ? std::strrchr(full, '/') + 1 : full;
		if (std::strncmp(base, "libmpi_mpifh.so", 15) == 0 || std::strncmp(base, "libmpi_usempi", 13) == 0) {
			*static_cast<std::string*>(data) = base;
			return 1;
		}
		return 0;
	}, &found);
	return found;
}

long envRank(std::initializer_list<const char*> names) {
	for (const char* n : names) {
		const char* v = std::getenv(n);
		char* end = nullptr;
		long x = v && *v ? std::strtol(v, &end, 10) : -1;
		if (v && *v && end && *end == '\0' && x >= 0) return x;
	}
	return -1;
}

/** At exit of a process that initialised MPI without passing the guard's MPI_Init (a Fortran program under Open
 *  MPI: mpi_init_ calls PMPI_Init): nothing was observed, and the report says so instead of being absent. */
void bypassCheck() {
	State& g = st();
	if (gInitSeen) return;
	int init = 0, fin = 0;
	if (PMPI_Initialized(&init) != MPI_SUCCESS) return;
	PMPI_Finalized(&fin);
	if (!init && !fin) return;
	std::string bad;
	if (envMode(&bad) == Mode::Off && bad.empty()) return;  // GPUMPI_GUARD=off: nothing at all
	long rank = envRank({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"});
	long size = envRank({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"});
	if (rank < 0 || size <= rank) return;
	g.rank = int(rank);
	g.size = int(size);
	envDir(g);
	char host[256] = {0};
	gethostname(host, sizeof host - 1);
	g.host = std::string(host).substr(0, 63);
	g.pid = int(getpid());
	g.t0 = g.t1 = double(clockNs()) * 1e-9;
	g.tick0 = g.tick1 = nowNs();
	char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
	int len = 0;
	if (PMPI_Get_library_version(lib, &len) == MPI_SUCCESS) g.library = std::string(lib, size_t(len > 0 ? len : 0)).substr(0, std::string(lib).find('\n'));
	std::string f = directFortranBindings();
	g.offReason = "MPI was initialised without the guard's MPI_Init: the program's MPI calls do not reach the guard's C entry points" +
		(f.empty() ? std::string(", nothing was observed") : ". " + f + " is loaded: Open MPI's Fortran bindings call PMPI_* directly, so this Fortran program's calls were not observed");
	g.mode = Mode::Off;
	writeReport(fin != 0);  // no stderr line: the program's output stays its own (the report and the CLI say it)
}

__attribute__((constructor)) void registerBypassCheck() { std::atexit(bypassCheck); }

void atExit() {
	State& g = st();
	if ((g.active || !g.offReason.empty()) && !g.written) writeReport(false);
	initFilesDone();
}

/** STAGE needs both sides of every staged message in STAGE mode: every rank knows from the same facts how many
 *  asked. Not all asking: off everywhere, one message from rank 0. Agreed: stageStart() (guardStage.cc) sets up the
 *  transfer on the guard's dup of MPI_COMM_WORLD (made here when the facts came from the files). */
void stageAgree(State& g, const std::vector<RankFacts>& all) {
	int asked = 0;
	for (const RankFacts& f : all) asked += f.stageAsked ? 1 : 0;
	g.stageRanks = asked;
	g.stageAgreed = asked == g.size && g.size > 0;
	if (g.rank == 0 && asked > 0 && !g.stageAgreed) {
		say("GPUMPI_GUARD_STAGE=1 is set on " + std::to_string(asked) + " of " + std::to_string(g.size) +
			" ranks: STAGE needs every rank, so it is off everywhere (messages go through MPI unchanged)");
	}
	if (g.stageAgreed && g.world == MPI_COMM_NULL && PMPI_Comm_dup(MPI_COMM_WORLD, &g.world) != MPI_SUCCESS) {
		g.stageAgreed = false;
		say("GPUMPI_GUARD_STAGE=1: cannot duplicate MPI_COMM_WORLD: STAGE is off");
	}
}

void start(State& g) {
	PMPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &g.size);
	readEnv(g);
	if (g.mode == Mode::Off) return;
	g.pid = int(getpid());
	g.t0 = double(clockNs()) * 1e-9;
	g.tick0 = nowNs();
	RankFacts me = localFacts(g);
	g.host = me.host;
	std::string why, note;
	std::vector<RankFacts> all;
	Agreement how = agreeAtInit(g, me, &all, &why, &note);
	if (!note.empty()) say(note);
	if (how == Agreement::Off) {
		// no collective: the other ranks may not have the guard. Pass-through, and a report that says why.
		say(why);
		g.offReason = why;
		g.mode = Mode::Off;
		mpiFacts(g);
		std::atexit(atExit);
		return;
	}
	if (how == Agreement::Mpi) {
		// every rank runs the guard on several hosts (the launcher's environment says so): the guard's own exchange
		// is then the process's first MPI transfer (docs/guard.md, "Limits")
		if (PMPI_Comm_dup(MPI_COMM_WORLD, &g.world) != MPI_SUCCESS) {
			initFilesDone();
			say("cannot duplicate MPI_COMM_WORLD: the guard is off");
			g.mode = Mode::Off;
			return;
		}
		if (!exchangeByMpi(g, me, &all)) all.clear();
	}
	g.exchange = how == Agreement::Files ? "files" : "mpi";
	mpiFacts(g);
	peerPaths(g, all);
	stageAgree(g, all);
	stageStart();
	g.peers.assign(size_t(g.size), PeerStat{});
	g.active = true;
	std::atexit(atExit);
}

}  // namespace
}  // namespace gpumpi::guard

using namespace gpumpi::guard;

GUARD_API int MPI_Init(int* argc, char*** argv) {
	gInitSeen = true;
	int rc = PMPI_Init(argc, argv);
	if (rc == MPI_SUCCESS) start(st());
	return rc;
}

GUARD_API int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
	gInitSeen = true;
	int rc = PMPI_Init_thread(argc, argv, required, provided);
	if (rc == MPI_SUCCESS) {
		st().threaded = provided && *provided == MPI_THREAD_MULTIPLE;
		start(st());
	}
	return rc;
}

GUARD_API int MPI_Finalize(void) {
	State& g = st();
	if (g.active) {
		g.t1 = double(clockNs()) * 1e-9;
		g.tick1 = nowNs();
		g.finalized = true;
		writeReport(true);
		initFilesDone();
		stageStop();
		bounceFreeAll();
		if (g.world != MPI_COMM_NULL) PMPI_Comm_free(&g.world);
		g.active = false;
	} else if (!g.offReason.empty() && !g.written) {
		g.t1 = double(clockNs()) * 1e-9;
		g.tick1 = nowNs();
		g.finalized = true;
		writeReport(true);  // the off report: mode "off", "off": the reason
	}
	return PMPI_Finalize();
}

GUARD_API int MPI_Comm_free(MPI_Comm* comm) {
	if (st().active && comm) {
		Lock l;
		forgetComm(*comm);
	}
	return PMPI_Comm_free(comm);
}
