// Path discovery: every rank gathers facts about itself (host, boot id, GPU bus id / UUID, MPI CUDA support,
// environment overrides, GPUDirect RDMA prerequisites), one MPI_Allgather shares them, one MPI_Alltoall shares
// which same-host GPUs each rank can reach peer-to-peer; then classify() is a pure, symmetric function of the pair,
// so both ranks of a pair derive the same path class, protocol and chunk size without further messages.
#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "internal.hh"

namespace gpumpi::lib {
namespace {

void copyStr(char* dst, size_t cap, const std::string& s) {
	std::snprintf(dst, cap, "%s", s.c_str());
}

std::string readLine(const char* path) {
	FILE* f = std::fopen(path, "r");
	if (!f) return "";
	char buf[256] = {0};
	if (!std::fgets(buf, sizeof buf, f)) buf[0] = 0;
	std::fclose(f);
	std::string s(buf);
	while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
	return s;
}

std::string env(const char* name) {
	const char* v = std::getenv(name);
	return v ? v : "";
}

bool hasToken(const std::string& list, const char* tok) {
	size_t start = 0;
	while (start <= list.size()) {
		size_t end = list.find(',', start);
		if (end == std::string::npos) end = list.size();
		std::string t = list.substr(start, end - start);
		if (!t.empty() && t[0] == '^') t.erase(0, 1);
		if (t == tok) return true;
		start = end + 1;
	}
	return false;
}

/** MPI CUDA support through whichever query the linked MPI exports (looked up at run time: any MPI works). */
int queryAware(std::string* why) {
	using GpuQuery = int (*)(int, int*);
	using CudaQuery = int (*)(void);
	if (auto q = reinterpret_cast<GpuQuery>(dlsym(RTLD_DEFAULT, "MPIX_GPU_query_support"))) {
		int ok = 0;
		if (q(0 /* MPIX_GPU_SUPPORT_CUDA */, &ok) == MPI_SUCCESS) {
			*why = ok ? "MPIX_GPU_query_support(CUDA) = 1" : "MPIX_GPU_query_support(CUDA) = 0";
			return ok ? 1 : 0;
		}
	}
	if (auto q = reinterpret_cast<CudaQuery>(dlsym(RTLD_DEFAULT, "MPIX_Query_cuda_support"))) {
		int ok = q();
		*why = ok ? "MPIX_Query_cuda_support() = 1" : "MPIX_Query_cuda_support() = 0";
		return ok ? 1 : 0;
	}
	*why = "MPI exports neither MPIX_GPU_query_support nor MPIX_Query_cuda_support";
	return -1;
}

/** Environment overrides that make MPI copy intra-host GPU data through host memory. */
bool ipcDisabled(std::string* why) {
	std::string pml = env("OMPI_MCA_pml");
	std::string btl = env("OMPI_MCA_btl");
	std::string smIpc = env("OMPI_MCA_btl_smcuda_use_cuda_ipc");
	bool ucxMaybe = pml.empty() || hasToken(pml, "ucx");
	bool ob1Maybe = pml.empty() || hasToken(pml, "ob1");
	if (ob1Maybe && (smIpc == "0" || smIpc == "false" || smIpc == "no")) {
		*why = "OMPI_MCA_btl_smcuda_use_cuda_ipc=" + smIpc + " (btl smcuda copies GPU data through host memory)";
		return true;
	}
	if (ob1Maybe && !btl.empty() && (btl[0] == '^' ? hasToken(btl, "smcuda") : !hasToken(btl, "smcuda"))) {
		if (!ucxMaybe || pml == "ob1") {
			*why = "OMPI_MCA_btl=" + btl + " leaves out smcuda (no CUDA IPC in ob1)";
			return true;
		}
	}
	std::string tls = env("UCX_TLS");
	if (ucxMaybe && !tls.empty()) {
		bool excl = tls[0] == '^';
		bool named = hasToken(tls, "cuda_ipc") || (!excl && (hasToken(tls, "all") || hasToken(tls, "cuda")));
		if (excl ? hasToken(tls, "cuda_ipc") : !named) {
			*why = "UCX_TLS=" + tls + " excludes cuda_ipc (UCX pipelines GPU data through host memory)";
			return true;
		}
	}
	return false;
}

bool noRdmaNet(std::string* why) {
	std::string tls = env("UCX_TLS");
	if (!tls.empty() && tls[0] != '^' && !hasToken(tls, "all") && !hasToken(tls, "rc") && !hasToken(tls, "rc_x") &&
	    !hasToken(tls, "dc") && !hasToken(tls, "dc_x") && !hasToken(tls, "ud") && !hasToken(tls, "ib")) {
		*why = "UCX_TLS=" + tls + " has no InfiniBand transport";
		return true;
	}
	std::string btl = env("OMPI_MCA_btl");
	std::string pml = env("OMPI_MCA_pml");
	if (pml == "ob1" && !btl.empty() && btl[0] != '^' && !hasToken(btl, "openib") && !hasToken(btl, "uct")) {
		*why = "pml ob1 with OMPI_MCA_btl=" + btl + " (no RDMA btl)";
		return true;
	}
	return false;
}

bool gdrPresent(std::string* why) {
	bool peermem = access("/sys/module/nvidia_peermem", F_OK) == 0 || access("/sys/module/nv_peer_mem", F_OK) == 0;
	int ib = 0;
	if (DIR* d = opendir("/sys/class/infiniband")) {
		while (dirent* e = readdir(d)) if (e->d_name[0] != '.') ++ib;
		closedir(d);
	}
	if (peermem && ib) { *why = "nvidia_peermem loaded, " + std::to_string(ib) + " IB device(s)"; return true; }
	*why = std::string(peermem ? "nvidia_peermem loaded" : "no nvidia_peermem module") + ", " +
	       (ib ? std::to_string(ib) + " IB device(s)" : "no /sys/class/infiniband devices");
	return false;
}

std::string who(int r) { return "rank " + std::to_string(r); }

/** Pure and symmetric in (a, b) apart from naming: both ranks get the same class, protocol and chunk. */
Peer classify(int ra, const Facts& a, int rb, const Facts& b, bool p2p) {
	Peer p;
	p.host = b.host;
	p.gpu = b.gpuBus;
	p.sameHost = !std::strcmp(a.host, b.host) && !std::strcmp(a.bootId, b.bootId);
	p.chunk = std::min(a.chunk, b.chunk);
	p.directPiece = std::min(a.directPiece, b.directPiece);
	p.aware = (a.mpiAware == 1 && b.mpiAware == 1) ? 1 : (a.mpiAware == 0 || b.mpiAware == 0) ? 0 : -1;
	bool shm = p.sameHost && a.shmOk && b.shmOk;
	int lo = std::min(ra, rb);
	const Facts& L = ra == lo ? a : b;
	const Facts& H = ra == lo ? b : a;
	int hi = std::max(ra, rb);
	auto staged = [&]() { return shm ? GPUMPI_PROTO_SHM : GPUMPI_PROTO_STAGED; };
	if (ra == rb) {
		p.path = GPUMPI_PATH_SELF;
		p.reason = "the peer is this rank";
		return p;
	}
	if (!a.hasCuda || !b.hasCuda) {
		p.path = GPUMPI_PATH_HOST_ONLY;
		p.proto = GPUMPI_PROTO_DIRECT;
		p.reason = !L.hasCuda ? who(lo) + " has no usable CUDA: " + L.noCudaWhy : who(hi) + " has no usable CUDA: " + H.noCudaWhy;
		if (!L.hasCuda && !H.hasCuda) p.reason = "no usable CUDA on either rank (" + std::string(L.noCudaWhy) + ")";
		// overrides still matter once GPUs are there: say so (and it lets CI check the override parsing)
		if (L.ipcOff || H.ipcOff) p.reason += "; with GPUs MPI would stage intra-host GPU data: " + std::string(L.ipcOff ? L.ipcOffWhy : H.ipcOffWhy);
		return p;
	}
	if (p.aware != 1) {
		p.path = GPUMPI_PATH_NOT_CUDA_AWARE;
		p.proto = staged();
		p.reason = who(lo) + ": " + L.awareWhy + "; " + who(hi) + ": " + H.awareWhy;
		return p;
	}
	if (p.sameHost) {
		if (a.ipcOff || b.ipcOff) {
			p.path = GPUMPI_PATH_STAGED_SAME_HOST;
			p.proto = staged();
			p.reason = L.ipcOff ? who(lo) + ": " + L.ipcOffWhy : who(hi) + ": " + H.ipcOffWhy;
			return p;
		}
		if (!std::memcmp(a.gpuUuid, b.gpuUuid, 16)) {
			p.path = GPUMPI_PATH_SAME_GPU;
			p.reason = std::string("same host, same GPU ") + a.gpuBus + ", MPI is CUDA-aware (CUDA IPC within the device)";
			return p;
		}
		if (p2p) {
			p.path = GPUMPI_PATH_PEER_TO_PEER;
			p.reason = std::string("same host, GPUs ") + L.gpuBus + " and " + H.gpuBus + " can access each other (cuDeviceCanAccessPeer)";
			return p;
		}
		p.path = GPUMPI_PATH_STAGED_SAME_HOST;
		p.proto = staged();
		p.reason = std::string("same host, GPUs ") + L.gpuBus + " and " + H.gpuBus +
		           " are not peer-accessible from both ranks (cuDeviceCanAccessPeer / not visible)";
		return p;
	}
	if (a.gdr && b.gdr && !a.noRdmaNet && !b.noRdmaNet) {
		p.path = GPUMPI_PATH_GPUDIRECT_RDMA;
		p.reason = "different hosts; both: " + std::string(L.netWhy);
		return p;
	}
	p.path = GPUMPI_PATH_STAGED_REMOTE;
	p.proto = GPUMPI_PROTO_STAGED;
	const Facts& why = (!L.gdr || L.noRdmaNet) ? L : H;
	p.reason = "different hosts; " + who(&why == &L ? lo : hi) + ": " + why.netWhy;
	return p;
}

void gatherSelf(Ctx* c) {
	Facts& f = c->self;
	std::memset(&f, 0, sizeof f);
	char host[64] = {0};
	if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
	copyStr(f.host, sizeof f.host, host);
	copyStr(f.bootId, sizeof f.bootId, readLine("/proc/sys/kernel/random/boot_id"));
	f.hasCuda = c->cuda ? 1 : 0;
	copyStr(f.noCudaWhy, sizeof f.noCudaWhy, c->noCudaWhy);
	if (c->cuda) {
		const CudaDriver& d = cudaDriver();
		char bus[32] = {0};
		if (d.cuDeviceGetPCIBusId && d.cuDeviceGetPCIBusId(bus, sizeof bus, c->dev) == CUDA_SUCCESS) copyStr(f.gpuBus, sizeof f.gpuBus, bus);
		if (d.cuDeviceGetUuid) d.cuDeviceGetUuid(reinterpret_cast<char*>(f.gpuUuid), c->dev);
	}
	std::string why;
	f.mpiAware = queryAware(&why);
	if (env("MPIR_CVAR_ENABLE_GPU") == "0") { f.mpiAware = 0; why = "MPIR_CVAR_ENABLE_GPU=0"; }
	copyStr(f.awareWhy, sizeof f.awareWhy, why);
	why.clear();
	f.ipcOff = ipcDisabled(&why) ? 1 : 0;
	copyStr(f.ipcOffWhy, sizeof f.ipcOffWhy, why);
	why.clear();
	f.gdr = gdrPresent(&why) ? 1 : 0;
	std::string net;
	f.noRdmaNet = noRdmaNet(&net) ? 1 : 0;
	copyStr(f.netWhy, sizeof f.netWhy, net.empty() ? why : why + "; " + net);
	std::string shmWhy;
	f.shmOk = (!(c->cfg.flags & GPUMPI_NO_SHM) && shmAvailable(&shmWhy)) ? 1 : 0;
	f.numBuffers = c->cfg.num_buffers;
	f.forceShm = (c->cfg.flags & GPUMPI_FORCE_SHM) ? 1 : 0;
	f.chunk = c->cfg.chunk_bytes;
	f.directPiece = c->cfg.direct_piece_bytes;
}

/** Which peers' GPUs this rank can reach peer-to-peer (same host only; by PCI bus id among visible devices). */
int localP2p(Ctx* c, const Facts& peer) {
	if (!c->cuda || !peer.hasCuda || !peer.gpuBus[0]) return 0;
	const CudaDriver& d = cudaDriver();
	int n = 0;
	if (d.cuDeviceGetCount(&n) != CUDA_SUCCESS) return 0;
	for (int i = 0; i < n; ++i) {
		CUdevice dv = 0;
		char bus[32] = {0};
		if (d.cuDeviceGet(&dv, i) != CUDA_SUCCESS || d.cuDeviceGetPCIBusId(bus, sizeof bus, dv) != CUDA_SUCCESS) continue;
		if (strcasecmp(bus, peer.gpuBus) != 0) continue;
		if (dv == c->dev) return 1;
		int ok = 0;
		return d.cuDeviceCanAccessPeer && d.cuDeviceCanAccessPeer(&ok, c->dev, dv) == CUDA_SUCCESS && ok ? 1 : 0;
	}
	return 0;
}

/** Tournament rounds: in round k, rank r pairs with (k - r) mod n; the lower rank pings. O(peers) tiny messages. */
void calibrate(Ctx* c) {
	for (int k = 0; k < c->size; ++k) {
		int p = ((k - c->rank) % c->size + c->size) % c->size;
		if (p == c->rank) continue;
		char b[8] = {0};
		double best = -1;
		for (int i = 0; i < 3; ++i) {
			double t0 = MPI_Wtime();
			int rc;
			if (c->rank < p) {
				rc = MPI_Send(b, 8, MPI_BYTE, p, 1, c->sigComm);
				if (rc == MPI_SUCCESS) rc = MPI_Recv(b, 8, MPI_BYTE, p, 1, c->sigComm, MPI_STATUS_IGNORE);
			} else {
				rc = MPI_Recv(b, 8, MPI_BYTE, p, 1, c->sigComm, MPI_STATUS_IGNORE);
				if (rc == MPI_SUCCESS) rc = MPI_Send(b, 8, MPI_BYTE, p, 1, c->sigComm);
			}
			double us = (MPI_Wtime() - t0) * 1e6;
			if (rc != MPI_SUCCESS) break;
			if (best < 0 || us < best) best = us;
		}
		c->peers[p].calibUs = best;
	}
}

}  // namespace

gpumpi_status discover(Ctx* c) {
	gatherSelf(c);
	std::vector<Facts> all(c->size);
	int rc = MPI_Allgather(&c->self, sizeof(Facts), MPI_BYTE, all.data(), sizeof(Facts), MPI_BYTE, c->comm);
	if (rc != MPI_SUCCESS) return fail(c, GPUMPI_ERR_MPI, "MPI_Allgather of path facts failed: %s", mpiErrorText(rc).c_str());
	std::vector<int> mine(c->size, 0), theirs(c->size, 0);
	for (int j = 0; j < c->size; ++j) {
		bool same = !std::strcmp(all[j].host, c->self.host) && !std::strcmp(all[j].bootId, c->self.bootId);
		mine[j] = (j != c->rank && same) ? localP2p(c, all[j]) : 0;
	}
	rc = MPI_Alltoall(mine.data(), 1, MPI_INT, theirs.data(), 1, MPI_INT, c->comm);
	if (rc != MPI_SUCCESS) return fail(c, GPUMPI_ERR_MPI, "MPI_Alltoall of peer access failed: %s", mpiErrorText(rc).c_str());
	c->peers.assign(c->size, Peer{});
	for (int j = 0; j < c->size; ++j) c->peers[j] = classify(c->rank, c->self, j, all[j], mine[j] && theirs[j]);
	if (c->cfg.flags & GPUMPI_CALIBRATE) calibrate(c);
	return GPUMPI_SUCCESS;
}

}  // namespace gpumpi::lib
