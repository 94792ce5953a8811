#include "inspect.hh"

#include <mpi.h>  // C API only: CMake sets OMPI_SKIP_MPICXX / MPICH_SKIP_MPICXX for every target
#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <vector>

#include "inspectCuda.hh"
#include "inspectIpcMem.hh"
#include "json.hh"
#include "mapSys.hh"
#include "rankAffinity.hh"
#include "version.hh"

extern char** environ;

namespace gpumpi::engine {
namespace {

// PYTORCH_ (allocator config), JULIA_CUDA_ (CUDA.jl's pool), MPI4PY_ (mpi4py's thread level), CRAY_MPICH and
// LD_PRELOAD (Cray MPICH's GTL): what the ranks really got, for the framework / mpi4py / GTL rules.
const char* const kEnvPrefixes[] = {"OMPI_MCA_", "PMIX_MCA_", "OMPI_COMM_WORLD_", "UCX_", "CUDA_", "MPICH_",
                                    "MPIR_CVAR_", "I_MPI_", "MV2_", "FI_", "SLURM_", "PYTORCH_", "JULIA_CUDA_",
                                    "MPI4PY_", "CRAY_MPICH", "LD_PRELOAD", nullptr};

std::string mpiErrorText(int code) {
	char buf[MPI_MAX_ERROR_STRING + 1] = {};
	int len = 0;
	if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
	return std::string(buf, len > 0 && len <= MPI_MAX_ERROR_STRING ? static_cast<size_t>(len) : std::strlen(buf));
}

// Throws std::runtime_error naming the call when an MPI call fails (caught in runInspect).
void mpiCheck(int code, const char* call) {
	if (code != MPI_SUCCESS) throw std::runtime_error(std::string(call) + " failed: " + mpiErrorText(code));
}

std::string trimTrailing(std::string s) {
	while (!s.empty() && (s.back() == '\0' || s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) {
		s.pop_back();
	}
	return s;
}

struct MpiInfo {
	std::string libraryVersion;
	std::string standardVersion;
	const char* implementation = "unknown";
	int compileTime = -1;  // -1 = null (no such macro), 0/1
	int runTime = -1;      // -1 = null (no such query)
	std::string query;
	std::string error;     // a query that exists but failed
};

MpiInfo queryMpi() {
	MpiInfo m;
	char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {};
	int len = 0;
	mpiCheck(MPI_Get_library_version(lib, &len), "MPI_Get_library_version");
	if (len < 0 || len > MPI_MAX_LIBRARY_VERSION_STRING) len = static_cast<int>(std::strlen(lib));
	m.libraryVersion = trimTrailing(std::string(lib, static_cast<size_t>(len)));
	// Open MPI counts the terminating NUL in len; drop anything after an embedded NUL too.
	if (auto nul = m.libraryVersion.find('\0'); nul != std::string::npos) m.libraryVersion = trimTrailing(m.libraryVersion.substr(0, nul));
	int major = 0, minor = 0;
	mpiCheck(MPI_Get_version(&major, &minor), "MPI_Get_version");
	m.standardVersion = std::to_string(major) + "." + std::to_string(minor);
#if defined(OPEN_MPI)
	m.implementation = "openmpi";
#if defined(MPIX_CUDA_AWARE_SUPPORT)
	m.compileTime = MPIX_CUDA_AWARE_SUPPORT ? 1 : 0;
#endif
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
	m.runTime = MPIX_Query_cuda_support() ? 1 : 0;
	m.query = "MPIX_Query_cuda_support";
#endif
#elif defined(MPICH_VERSION)
	m.implementation = "mpich";
#if defined(MPIX_GPU_SUPPORT_CUDA)
	int supported = 0;
	int rc = MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported);
	m.query = "MPIX_GPU_query_support";
	if (rc == MPI_SUCCESS) m.runTime = supported ? 1 : 0;
	else m.error = "MPIX_GPU_query_support failed: " + mpiErrorText(rc);
#endif
#endif
	return m;
}

void writeTriState(JsonWriter& w, int v) {
	if (v < 0) w.null();
	else w.value(v != 0);
}

// Local rank via a shared-memory split, for launchers that set none of the env variables.
int sharedMemoryRank() {
	MPI_Comm node = MPI_COMM_NULL;
	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) return 0;
	int r = 0;
	if (MPI_Comm_rank(node, &r) != MPI_SUCCESS) r = 0;
	MPI_Comm_free(&node);
	return r;
}

// The id of one of this process's namespaces ("ipc:[4026531839]"), or "" with `err` set when it cannot be read.
std::string namespaceId(const char* kind, std::string& err) {
	const std::string path = std::string("/proc/self/ns/") + kind;
	char buf[128] = {};
	ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
	if (n <= 0) {
		if (!err.empty()) err += "; ";
		err += "readlink " + path + ": " + std::strerror(errno);
		return "";
	}
	return std::string(buf, static_cast<size_t>(n));
}

// Ranks on one host that must exchange CUDA IPC handles or shared memory need the same IPC and PID namespaces.
void writeNamespaces(JsonWriter& w) {
	std::string err;
	const std::string ipc = namespaceId("ipc", err);
	const std::string pid = namespaceId("pid", err);
	w.beginObject();
	w.key("ipc");
	if (ipc.empty()) w.null(); else w.value(ipc);
	w.key("pid");
	if (pid.empty()) w.null(); else w.value(pid);
	w.key("error").value(err);
	w.endObject();
}

// Where a CUDA MPS client of this rank would look for the control daemon: CUDA_MPS_PIPE_DIRECTORY or the default
// /tmp/nvidia-mps (https://docs.nvidia.com/deploy/mps/index.html), and whether its "control" pipe exists there.
void writeMps(JsonWriter& w) {
	const char* env = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
	const bool fromEnv = env && *env;
	const std::string dir = fromEnv ? env : "/tmp/nvidia-mps";
	struct stat st {};
	const std::string control = dir + "/control";
	const bool exists = stat(control.c_str(), &st) == 0;
	w.beginObject();
	w.key("pipe_directory").value(dir);
	w.key("pipe_directory_from").value(fromEnv ? "CUDA_MPS_PIPE_DIRECTORY" : "default");
	w.key("control_pipe_exists").value(exists);
	w.key("control_pipe_is_fifo").value(exists && S_ISFIFO(st.st_mode));
	w.endObject();
}

std::string rankJson(int rank, int localRank, const CudaReport& cuda, const IpcMemReport& ipcMem, const MpiInfo& mpi) {
	JsonWriter w;
	char host[256] = {};
	if (gethostname(host, sizeof host - 1) != 0) std::strncpy(host, "unknown", sizeof host - 1);
	w.beginObject();
	w.key("rank").value(rank);
	w.key("local_rank").value(localRank);
	w.key("host").value(host);
	w.key("pid").value(static_cast<long long>(getpid()));
	w.key("mpi").beginObject();
	w.key("library_version").value(mpi.libraryVersion);
	w.key("standard_version").value(mpi.standardVersion);
	w.key("implementation").value(mpi.implementation);
	w.key("cuda_aware").beginObject();
	w.key("compile_time");
	writeTriState(w, mpi.compileTime);
	w.key("run_time");
	writeTriState(w, mpi.runTime);
	w.key("query").value(mpi.query);
	w.endObject();
	w.endObject();
	w.key("cuda");
	writeCudaJson(w, cuda);
	w.key("namespaces");
	writeNamespaces(w);
	w.key("mps");
	writeMps(w);
	w.key("ipc_memory");
	writeIpcMemJson(w, ipcMem);
	// The rank's CPU binding against its GPU's NUMA node (issue 16 item 5); read after MPI_Init, when the launcher's
	// binding (mpirun --bind-to, srun --cpu-bind) is in place.
	w.key("affinity");
	const bool selected = cuda.selectedDevice >= 0 && cuda.selectedDevice < static_cast<int>(cuda.devices.size());
	gpumpi::map::writeAffinityJson(w, gpumpi::map::cpuAffinity(), selected ? cuda.devices[cuda.selectedDevice].pciBusId : "");
	w.key("env").beginObject();
	for (const auto& [k, v] : filteredEnvironment()) w.key(k).value(v);
	w.endObject();
	w.endObject();
	return w.str();
}

// Rank 0 receives every rank's JSON object (lengths, then bytes) and wraps them in the document.
std::string gatherDocument(const std::string& mine, int rank, int size) {
	if (mine.size() > static_cast<size_t>(INT_MAX)) throw std::runtime_error("rank record too large");
	int myLen = static_cast<int>(mine.size());
	std::vector<int> lens(rank == 0 ? size : 0), displs(rank == 0 ? size : 0);
	mpiCheck(MPI_Gather(&myLen, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
	long long total = 0;
	if (rank == 0) {
		for (int i = 0; i < size; ++i) {
			displs[i] = static_cast<int>(total);
			total += lens[i];
			if (total > INT_MAX) throw std::runtime_error("gathered records exceed 2 GiB");
		}
	}
	std::vector<char> all(rank == 0 ? static_cast<size_t>(total) + 1 : 1);
	mpiCheck(MPI_Gatherv(mine.data(), myLen, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD),
	         "MPI_Gatherv");
	if (rank != 0) return "";
	JsonWriter w;
	w.beginObject();
	w.key("schema").value("gpumpi.inspect/1");
	w.key("engine_version").value(GPUMPI_VERSION);
	w.key("world_size").value(size);
	w.key("ranks").beginArray();  // MPI_Gatherv places rank i's bytes at displs[i]: already sorted by rank
	for (int i = 0; i < size; ++i) w.raw(std::string(all.data() + displs[i], static_cast<size_t>(lens[i])));
	w.endArray();
	w.endObject();
	return w.str();
}

}  // namespace

const char* const* inspectEnvPrefixes() { return kEnvPrefixes; }

int localRankFromEnv() {
	static const char* const names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID",
	                                    "MV2_COMM_WORLD_LOCAL_RANK"};
	for (const char* name : names) {
		const char* v = std::getenv(name);
		if (!v || !*v) continue;
		errno = 0;
		char* end = nullptr;
		long n = std::strtol(v, &end, 10);
		if (errno == 0 && end && *end == '\0' && n >= 0 && n < INT_MAX) return static_cast<int>(n);
	}
	return -1;
}

std::map<std::string, std::string> filteredEnvironment() {
	std::map<std::string, std::string> out;
	for (char** e = environ; e && *e; ++e) {
		const char* entry = *e;
		const char* eq = std::strchr(entry, '=');
		if (!eq) continue;
		for (const char* const* p = kEnvPrefixes; *p; ++p) {
			if (std::strncmp(entry, *p, std::strlen(*p)) == 0) {
				out.emplace(std::string(entry, static_cast<size_t>(eq - entry)), std::string(eq + 1));
				break;
			}
		}
	}
	return out;
}

InspectOutcome runInspect() {
	InspectOutcome out;
	const int envLocalRank = localRankFromEnv();
	// CUDA first: a context must be current before MPI_Init (see inspectCuda.hh).
	CudaReport cuda = probeAndSelectCuda(envLocalRank < 0 ? 0 : envLocalRank);
	// Also before MPI_Init: the probe buffers are freed again before MPI installs its memory hooks (UCX UCM).
	const IpcMemReport ipcMem = probeIpcMemory(cuda.selectedDevice);
	int initialized = 0;
	try {
		mpiCheck(MPI_Init(nullptr, nullptr), "MPI_Init");
		initialized = 1;
		mpiCheck(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
		int rank = 0, size = 0;
		mpiCheck(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
		mpiCheck(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
		out.rank = rank;
		MpiInfo mpi = queryMpi();
		const int localRank = envLocalRank >= 0 ? envLocalRank : sharedMemoryRank();
		out.document = gatherDocument(rankJson(rank, localRank, cuda, ipcMem, mpi), rank, size);
		out.ok = true;
		if (!mpi.error.empty()) out.error = mpi.error;  // a warning: the document is still valid (run_time null)
	} catch (const std::exception& e) {
		out.error = e.what();
		out.ok = false;
		if (initialized) {
			// The other ranks may be waiting in MPI_Gather for this one: end the whole job rather than hang it.
			std::fprintf(stderr, "gpumpi inspect (rank %d): %s; aborting the job\n", out.rank, out.error.c_str());
			std::fflush(stderr);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	if (initialized) {
		int finalized = 0;
		MPI_Finalized(&finalized);
		if (!finalized) {
			int rc = MPI_Finalize();
			if (rc != MPI_SUCCESS && out.error.empty()) out.error = "MPI_Finalize failed: " + mpiErrorText(rc);
		}
	}
	releaseCuda(cuda);
	return out;
}

}  // namespace gpumpi::engine
