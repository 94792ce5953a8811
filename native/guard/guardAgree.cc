// Whether every rank of MPI_COMM_WORLD runs the guard, known before the guard's first collective (its
// PMPI_Comm_dup at MPI_Init). A rank without the guard never joins the guard's collectives, so a guard rank that
// entered one would wait for ever (a mixed launch: Open MPI MPMD `-x LD_PRELOAD=… ./a : ./a`, MPICH `-env`). A
// collective cannot be used to find out (a pending one cannot be abandoned, and the program's own collectives would
// match it), nor can point-to-point on MPI_COMM_WORLD (the program's wildcard receives would take it). So:
//   1. GPUMPI_GUARD_EVERY_RANK=1 (exported by `gpumpi-doctor guard`, which preloads every rank): agreed, no wait.
//   2. Otherwise every guard rank writes `$GPUMPI_GUARD_DIR/.gpumpi-guard-init.<job>.<rank>` and waits, bounded
//      (GPUMPI_GUARD_INIT_WAIT seconds, default 10), until the files of all ranks are there. <job> is the same for
//      the ranks of one launch on one host: PMIx's namespace (Open MPI), the Slurm job and step, else the pid and
//      start time of the launcher process above this one (mpiexec.hydra / hydra_pmi_proxy / orted / …). Ranks on
//      other hosts are seen only through a directory every host shares and a PMIx or Slurm key.
//   3. Not all there in time: this rank's file is removed (so a slower guard rank does not count it), one stderr
//      line names the cause and the fix, and this rank's guard is off (pass-through) with the reason in its report.
// Residual risk: a guard rank that reaches this point more than the wait after another decides differently from it.
// MPI_Init of both MPIs ends with a fence of all ranks (the PMI/PMIx exchange), so the ranks arrive here together.
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

}  // namespace

bool everyRankGuarded(State& g, std::string* why, std::string* note) {
	if (g.size <= 1) return true;
	const char* every = std::getenv("GPUMPI_GUARD_EVERY_RANK");
	if (every && std::strcmp(every, "1") == 0) return true;
	if (every && *every && std::strcmp(every, "0") != 0) *note = std::string("GPUMPI_GUARD_EVERY_RANK='") + every + "' is not 0 or 1: ignored (0)";
	std::string bad;
	double wait = waitSeconds(&bad);
	if (!bad.empty()) *note += (note->empty() ? "" : "; ") + bad;
	std::string prefix = ".gpumpi-guard-init." + jobKey() + ".";
	ownFile = g.dir + "/" + prefix + std::to_string(g.rank);
	int fd = open(ownFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		*why = "cannot write " + ownFile + " (" + std::strerror(errno) + ") to learn whether every rank runs the guard";
		ownFile.clear();
		return false;
	}
	std::string pid = std::to_string(getpid()) + "\n";
	ssize_t w = write(fd, pid.data(), pid.size());
	(void)w;
	close(fd);
	uint64_t t0 = clockNs(), limit = uint64_t(wait * 1e9);
	useconds_t nap = 1000;
	int n = 0;
	for (;;) {
		n = countFiles(g.dir, prefix, g.size);
		if (n >= g.size) return true;
		if (clockNs() - t0 >= limit) break;
		usleep(nap);
		if (nap < 50000) nap *= 2;
	}
	unlink(ownFile.c_str());
	ownFile.clear();
	char secs[32];
	std::snprintf(secs, sizeof secs, "%g", wait);
	*why = "only " + std::to_string(n) + " of " + std::to_string(g.size) + " ranks showed the guard in " + g.dir + " within " + secs +
		" s (GPUMPI_GUARD_INIT_WAIT): some ranks run without LD_PRELOAD=libgpumpi_guard.so (a mixed launch), or on hosts that do not share this "
		"directory; the guard's own collectives would wait for ever, so this rank's guard is off (calls pass through). Fix: preload the guard on every "
		"rank (Open MPI -x LD_PRELOAD=…, MPICH -genv LD_PRELOAD …) and set GPUMPI_GUARD_EVERY_RANK=1, or run `gpumpi-doctor guard -- <your mpirun …>`";
	return false;
}

void agreementDone() {
	if (!ownFile.empty()) unlink(ownFile.c_str());
	ownFile.clear();
}

}  // namespace gpumpi::guard
