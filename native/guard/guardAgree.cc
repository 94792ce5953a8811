// What every rank of MPI_COMM_WORLD needs to know of the others at MPI_Init (their host, whether they have a GPU
// driver, whether they asked for STAGE), learnt WITHOUT an MPI transfer where that can be done, because the process's
// first MPI transfer is not neutral: libraries initialise lazily at it and what they see then sticks (UCX 1.13 builds
// its memory-type cache from /proc/self/maps at its first memory-type lookup; Open MPI 5.0.7's CUDA accelerator
// decides at its first check_addr whether memory pools are supported, and a failing cuDeviceGetCount, CUDA not yet
// initialised, switches that off for the rest of the run: accelerator_cuda.c, accelerator_cuda_check_mpool). A guard
// that sent first made programs that run without it abort (issue 31: pool memory under ob1, "Error in accelerator
// memcpy"; VMM / pool memory under pml ucx, cma "Bad address").
//   1. Every guard rank writes `$GPUMPI_GUARD_DIR/.gpumpi-guard-init.<job>.<rank>` (pid, host, GPU driver, STAGE
//      asked; written to a temporary name and renamed) and waits, bounded (GPUMPI_GUARD_INIT_WAIT seconds, default
//      10), until the files of all ranks are there, then reads them all (Agreement::Files) and writes
//      `.gpumpi-guard-done.<job>.<rank>`. A rank can reach MPI_Finalize before a slower one has read the files (MPICH
//      ranks that never communicate do not wait for each other: seen in test/engine/programLinks.test.ts), so the
//      files are removed only once every rank's done file is there, by whichever rank sees that at MPI_Finalize or
//      exit (the last one always does). <job> is the same for the ranks of one launch on one host: PMIx's namespace
//      (Open MPI), the Slurm job and step, else the pid and start time of the launcher process above this one
//      (mpiexec.hydra / hydra_pmi_proxy / orted / …).
//   2. GPUMPI_GUARD_EVERY_RANK=1 (exported by `gpumpi-doctor guard`, which preloads every rank) and the launcher's
//      environment saying the ranks span several hosts (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS,
//      SLURM_STEP_NUM_NODES: the same on every rank): no file, the guard exchanges through MPI at once
//      (Agreement::Mpi, its own PMPI_Comm_dup + Allgather: the limit in docs/guard.md).
//   3. Files not all there in time: this rank's file is removed (a slower rank does not count it), one stderr line
//      names the cause and the fix, and this rank's guard is off (pass-through): Agreement::Off. Off is safe whatever
//      the other ranks decided; a collective after an uncertain agreement is not: a rank without the guard (a mixed
//      launch: Open MPI MPMD `-x LD_PRELOAD=… ./a : ./a`, MPICH `-env`, GPUMPI_GUARD=off on some ranks) or one that
//      turned off would never join it. Neither a collective nor point-to-point on MPI_COMM_WORLD can find this out
//      safely (a pending collective cannot be abandoned and the program's own collectives would match it; the
//      program's wildcard receives would take a message).
// Residual risk: a rank that reaches this point more than the wait after another decides differently from it. MPI_Init
// of both MPIs ends with a fence of all ranks (the PMI/PMIx exchange), so the ranks arrive here together.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>

#include "guardState.hh"

namespace gpumpi::guard {
namespace {

std::string ownFile;  // this rank's init file while it exists
std::string ownDone;  // this rank's "done" file (it has read every rank's init file)
std::string gDir, gInitPrefix, gDonePrefix;
int gSize = 0;

std::string clean(const std::string& s) {
	std::string o;
	for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
	return o.substr(0, 96);
}

/** /proc/<pid>/stat: parent pid, command name, start time (clock ticks since boot). */
bool procStat(long pid, long* ppid, std::string* comm, unsigned long long* start) {
	std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
	std::string s;
	if (!std::getline(f, s)) return false;
	size_t l = s.find('('), r = s.rfind(')');
	if (l == std::string::npos || r == std::string::npos || r < l) return false;
	*comm = s.substr(l + 1, r - l - 1);
	// after ") ": state(3) ppid(4) ... starttime(22)
	const char* p = s.c_str() + r + 2;
	int field = 3;
	char* end = nullptr;
	while (*p && field < 22) {
		if (field == 4) *ppid = std::strtol(p, &end, 10);
		while (*p && *p != ' ') ++p;
		while (*p == ' ') ++p;
		++field;
	}
	*start = std::strtoull(p, &end, 10);
	return true;
}

std::string jobKey() {
	const char* ns = std::getenv("PMIX_NAMESPACE");
	if (ns && *ns) return "pmix-" + clean(ns);
	const char* job = std::getenv("SLURM_JOB_ID");
	const char* step = std::getenv("SLURM_STEP_ID");
	if (job && *job) return "slurm-" + clean(job) + "." + clean(step ? step : "");
	static const std::set<std::string> launchers = {"hydra_pmi_proxy", "mpiexec.hydra", "mpiexec", "mpirun", "mpiexec.mpich",
		"mpirun.mpich", "orted", "prted", "prterun", "mpirun.openmpi", "mpiexec.openmpi", "slurmstepd"};
	char host[256] = {0};
	gethostname(host, sizeof host - 1);
	long pid = long(getppid()), first = pid;
	unsigned long long firstStart = 0;
	for (int depth = 0; depth < 16 && pid > 1; ++depth) {
		long ppid = 0;
		std::string comm;
		unsigned long long start = 0;
		if (!procStat(pid, &ppid, &comm, &start)) break;
		if (depth == 0) firstStart = start;
		if (launchers.count(comm)) return "pid-" + clean(host) + "-" + std::to_string(pid) + "-" + std::to_string(start);
		pid = ppid;
	}
	return "pid-" + clean(host) + "-" + std::to_string(first) + "-" + std::to_string(firstStart);
}

/** Distinct ranks below `size` whose init file for `key` is in `dir`. */
int countFiles(const std::string& dir, const std::string& prefix, int size) {
	DIR* d = opendir(dir.c_str());
	if (!d) return 0;
	std::set<long> seen;
	while (dirent* e = readdir(d)) {
		if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
		const char* num = e->d_name + prefix.size();
		char* end = nullptr;
		long r = std::strtol(num, &end, 10);
		if (end != num && *end == '\0' && r >= 0 && r < size) seen.insert(r);
	}
	closedir(d);
	return int(seen.size());
}

double waitSeconds(std::string* bad) {
	const char* v = std::getenv("GPUMPI_GUARD_INIT_WAIT");
	if (!v || !*v) return 10;
	char* end = nullptr;
	errno = 0;
	double s = std::strtod(v, &end);
	if (end == v || *end != '\0' || errno == ERANGE || !(s >= 0 && s <= 3600)) {
		*bad = std::string("GPUMPI_GUARD_INIT_WAIT='") + v + "' is not a number of seconds in 0..3600: ignored (10)";
		return 10;
	}
	return s;
}


/** 1 when the launcher's environment says every rank is on this host, 0 when it says they span several, -1 unknown. */
int oneHost(int size) {
	for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
		const char* v = std::getenv(name);
		char* end = nullptr;
		long n = v && *v ? std::strtol(v, &end, 10) : -1;
		if (v && *v && end && *end == '\0' && n > 0) return n == size ? 1 : 0;
	}
	const char* nodes = std::getenv("SLURM_STEP_NUM_NODES");
	if (nodes && *nodes) return std::strcmp(nodes, "1") == 0 ? 1 : 0;
	return -1;
}

std::string factsLine(const RankFacts& f) {
	return std::to_string(getpid()) + "\t" + clean(f.host) + "\t" + (f.hasCuda ? "1" : "0") + "\t" + (f.stageAsked ? "1" : "0") + "\n";
}

/** The facts in one rank's file; false while it cannot be read whole. */
bool readFacts(const std::string& file, RankFacts* f) {
	std::ifstream in(file);
	std::string line;
	if (!std::getline(in, line)) return false;
	size_t a = line.find('\t'), b = a == std::string::npos ? a : line.find('\t', a + 1), c = b == std::string::npos ? b : line.find('\t', b + 1);
	if (c == std::string::npos) return false;
	f->host = line.substr(a + 1, b - a - 1);
	f->hasCuda = line.substr(b + 1, c - b - 1) == "1";
	f->stageAsked = line.substr(c + 1) == "1";
	return true;
}

}  // namespace

Agreement agreeAtInit(State& g, const RankFacts& me, std::vector<RankFacts>* all, std::string* why, std::string* note) {
	if (g.size <= 1) {
		all->assign(1, me);
		return Agreement::Files;
	}
	const char* everyEnv = std::getenv("GPUMPI_GUARD_EVERY_RANK");
	bool every = everyEnv && std::strcmp(everyEnv, "1") == 0;
	if (everyEnv && *everyEnv && !every && std::strcmp(everyEnv, "0") != 0) *note = std::string("GPUMPI_GUARD_EVERY_RANK='") + everyEnv + "' is not 0 or 1: ignored (0)";
	if (every && oneHost(g.size) == 0) return Agreement::Mpi;  // from the launcher's environment: the same on every rank
	std::string bad;
	double wait = waitSeconds(&bad);
	if (!bad.empty()) *note += (note->empty() ? "" : "; ") + bad;
	std::string key = jobKey();
	gDir = g.dir;
	gSize = g.size;
	gInitPrefix = ".gpumpi-guard-init." + key + ".";
	gDonePrefix = ".gpumpi-guard-done." + key + ".";
	ownFile = g.dir + "/" + gInitPrefix + std::to_string(g.rank);
	const char* step = "";
	std::string err;
	if (!writeFileAtomically(ownFile, factsLine(me), &step, &err)) {
		*why = "cannot write " + ownFile + " (" + err + ") to learn whether every rank runs the guard and the other ranks' hosts; the guard is off";
		ownFile.clear();
		return Agreement::Off;
	}
	uint64_t t0 = clockNs(), limit = uint64_t(wait * 1e9);
	useconds_t nap = 200;
	int n = 0;
	for (;;) {
		n = countFiles(g.dir, gInitPrefix, g.size);
		if (n >= g.size) break;
		if (clockNs() - t0 >= limit) break;
		usleep(nap);
		if (nap < 50000) nap *= 2;
	}
	if (n >= g.size) {
		all->assign(size_t(g.size), RankFacts{});
		bool whole = true;
		for (int r = 0; r < g.size && whole; ++r) whole = readFacts(g.dir + "/" + gInitPrefix + std::to_string(r), &(*all)[size_t(r)]);
		if (whole) {
			// read: this rank no longer needs the files. They go once every rank has said so (initFilesDone)
			std::string done = g.dir + "/" + gDonePrefix + std::to_string(g.rank);
			if (writeFileAtomically(done, "read\n", &step, &err)) ownDone = done;
			return Agreement::Files;
		}
		*why = "an init file in " + g.dir + " cannot be read as facts (a guard of another version on some ranks?); the guard is off";
		return Agreement::Off;  // never a collective on an uncertain agreement: off is safe whatever the others decide
	}
	unlink(ownFile.c_str());  // a slower rank must not count it: it turns off as well
	ownFile.clear();
	char secs[32];
	std::snprintf(secs, sizeof secs, "%g", wait);
	*why = "only " + std::to_string(n) + " of " + std::to_string(g.size) + " ranks showed the guard in " + g.dir + " within " + secs +
		" s (GPUMPI_GUARD_INIT_WAIT): some ranks run without LD_PRELOAD=libgpumpi_guard.so (a mixed launch), or on hosts that do not share this "
		"directory; the guard's own collectives would wait for ever, so this rank's guard is off (calls pass through). Fix: preload the guard on every "
		"rank (Open MPI -x LD_PRELOAD=…, MPICH -genv LD_PRELOAD …) and set GPUMPI_GUARD_EVERY_RANK=1, or run `gpumpi-doctor guard -- <your mpirun …>`";
	return Agreement::Off;
}

void initFilesDone() {
	// A rank may finish (MPI_Finalize, exit) before a slower one has read the init files: nothing is removed until
	// every rank's "done" file says it has read them; then whoever sees that removes the job's files (the last rank
	// to finish always does). Only the ranks' own names of this job are touched.
	if (gSize <= 1 || gInitPrefix.empty() || ownDone.empty()) return;
	if (countFiles(gDir, gDonePrefix, gSize) < gSize) return;
	for (int r = 0; r < gSize; ++r) {
		unlink((gDir + "/" + gInitPrefix + std::to_string(r)).c_str());
		unlink((gDir + "/" + gDonePrefix + std::to_string(r)).c_str());
	}
	ownFile.clear();
	ownDone.clear();
}

}  // namespace gpumpi::guard
