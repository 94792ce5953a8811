// Process state (the floor of the guard: every other file uses it, it uses none of them): the state itself, say(),
// communicator ranks, per-peer statistics and the dangerous calls. The lifecycle on top: guardLifecycle.cc.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "guardState.hh"

namespace gpumpi::guard {

const char* const kClsNames[kNumCls] = {"host", "pinned-host", "device", "managed", "pool", "vmm", "ipc-import"};
const char* const kCallNames[C_COUNT] = {
#define GUARD_CALL(id) "MPI_" #id,
#include "guardCalls.def"
#undef GUARD_CALL
};

State& st() {
	static State* s = new State();  // never destroyed: wrappers may run from other atexit handlers
	return *s;
}

void say(const std::string& line) {
	std::string s = "gpumpi-guard: rank " + std::to_string(st().rank) + ": " + line + "\n";
	ssize_t w = write(2, s.data(), s.size());
	(void)w;
}

bool writeFileAtomically(const std::string& file, const std::string& text, const char** step, std::string* why) {
	std::string tmp = file + ".tmp";
	int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) { *step = "create"; *why = std::strerror(errno); return false; }
	size_t off = 0;
	int e = 0;
	while (off < text.size() && e == 0) {
		ssize_t n = write(fd, text.data() + off, text.size() - off);
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) e = n < 0 ? errno : EIO;
		else off += size_t(n);
	}
	if (close(fd) != 0 && e == 0) e = errno;
	if (e != 0) { *step = "write"; *why = std::strerror(e); }
	else if (rename(tmp.c_str(), file.c_str()) != 0) { *step = "rename"; *why = std::strerror(errno); }
	else return true;
	unlink(tmp.c_str());
	return false;
}

namespace {

std::unordered_map<MPI_Comm, std::vector<int>>& commMap() {
	static auto* m = new std::unordered_map<MPI_Comm, std::vector<int>>();
	return *m;
}

}  // namespace

uint64_t typeBytes(int count, MPI_Datatype type) {
	if (count <= 0 || type == MPI_DATATYPE_NULL) return 0;
	int sz = 0;
	if (PMPI_Type_size(type, &sz) != MPI_SUCCESS || sz < 0) return 0;
	return uint64_t(count) * uint64_t(sz);
}

int worldRank(MPI_Comm comm, int r) {
	if (r < 0) return -1;  // MPI_PROC_NULL, MPI_ANY_SOURCE (both negative in Open MPI and MPICH)
	if (comm == MPI_COMM_WORLD) return r;
	auto& m = commMap();
	auto it = m.find(comm);
	if (it == m.end()) {
		std::vector<int> map;
		int inter = 0;
		PMPI_Comm_test_inter(comm, &inter);
		MPI_Group grp, wgrp;
		bool ok = (inter ? PMPI_Comm_remote_group(comm, &grp) : PMPI_Comm_group(comm, &grp)) == MPI_SUCCESS;
		if (ok && PMPI_Comm_group(MPI_COMM_WORLD, &wgrp) == MPI_SUCCESS) {
			int n = 0;
			PMPI_Group_size(grp, &n);
			std::vector<int> in(size_t(n > 0 ? n : 0));
			map.assign(in.size(), -1);
			for (int i = 0; i < n; ++i) in[size_t(i)] = i;
			if (n > 0) PMPI_Group_translate_ranks(grp, n, in.data(), wgrp, map.data());
			PMPI_Group_free(&wgrp);
		}
		if (ok) PMPI_Group_free(&grp);
		it = m.emplace(comm, std::move(map)).first;
	}
	const std::vector<int>& v = it->second;
	return size_t(r) < v.size() && v[size_t(r)] != MPI_UNDEFINED ? v[size_t(r)] : -1;
}

void forgetComm(MPI_Comm comm) { commMap().erase(comm); }

void addPeer(int p, bool send, uint64_t bytes, Cls cls) {
	State& g = st();
	if (p < 0 || size_t(p) >= g.peers.size()) return;
	PeerStat& s = g.peers[size_t(p)];
	if (send) { s.sendCalls++; s.sentBytes += bytes; } else { s.recvCalls++; s.recvBytes += bytes; }
	if (bytes > s.largest) s.largest = bytes;
	if (cls < kNumCls) s.cls[cls]++;
}

void addUnsupported(const char* call) {
	for (Unsupported& u : st().unsupported) {
		if (u.call == call) { u.count++; return; }
	}
	st().unsupported.push_back(Unsupported{call, 1});
}

namespace {

const char* kDangerNames[] = {"ipc-import-ucx-cuda-ipc", "device-buffer-mpi-not-cuda-aware", "pool-or-vmm-legacy-ipc", "huge-device-to-host-staged-peer", "ucx-memtype-cache-miss"};

Site resolve(void* ra) {
	Site s;
	s.address = reinterpret_cast<uintptr_t>(ra);
	Dl_info info{};
	if (ra && dladdr(ra, &info)) {
		if (info.dli_fname) s.object = info.dli_fname;
		if (info.dli_sname) {
			s.symbol = info.dli_sname;
			s.offset = s.address - reinterpret_cast<uintptr_t>(info.dli_saddr);
		} else {
			s.offset = s.address - reinterpret_cast<uintptr_t>(info.dli_fbase);
		}
	}
	return s;
}

std::string siteText(const Site& s) {
	char off[32];
	std::snprintf(off, sizeof off, "0x%zx", size_t(s.offset));
	std::string obj = s.object.empty() ? "?" : s.object.substr(s.object.rfind('/') == std::string::npos ? 0 : s.object.rfind('/') + 1);
	return obj + " " + (s.symbol.empty() ? std::string("") : s.symbol) + "+" + off;
}

}  // namespace

void addDanger(DangerKind kind, CallId call, int peer, uint64_t bytes, void* ra, const std::string& detail, const char* action) {
	State& g = st();
	uintptr_t a = reinterpret_cast<uintptr_t>(ra);
	if (g.mode == Mode::Warn && std::strcmp(action, "none") == 0) action = "warned";
	// one record per kind + call + site + peer + action: calls STAGE took (markStaged) are counted apart from the rest
	for (Danger& d : g.dangers) {
		if (d.kind == kind && d.call == call && d.site.address == a && d.peer == peer && std::strcmp(d.action, action) == 0) { d.count++; d.bytes += bytes; return; }
	}
	Danger d;
	d.kind = kind;
	d.call = call;
	d.peer = peer;
	d.count = 1;
	d.bytes = bytes;
	d.site = resolve(ra);
	d.detail = detail;
	d.action = action;
	if (std::strcmp(action, "warned") == 0) {
		bool seen = false;  // once per kind + site (any peer)
		for (const Danger& o : g.dangers) seen = seen || (o.kind == kind && o.site.address == a && o.call == call);
		if (!seen) say(std::string(kCallNames[call]) + ": " + kDangerNames[int(kind)] + " at " + siteText(d.site) + " — " + detail + (kind == DangerKind::IpcImportUcx ? "; set GPUMPI_GUARD=fix or see docs/guard.md" : "; see docs/guard.md"));
	}
	g.dangers.push_back(std::move(d));
	writeInterimReport();
}

void markStaged(const DangerRef& r) {
	if (r.kind == DangerKind::Count) return;
	State& g = st();
	uintptr_t a = reinterpret_cast<uintptr_t>(r.returnAddress);
	for (auto it = g.dangers.begin(); it != g.dangers.end(); ++it) {
		if (it->kind != r.kind || it->call != r.call || it->site.address != a || it->peer != r.peer || std::strcmp(it->action, "staged") == 0) continue;
		std::string detail = it->detail;
		it->bytes -= std::min(it->bytes, r.bytes);
		if (--it->count == 0) g.dangers.erase(it);
		addDanger(r.kind, r.call, r.peer, r.bytes, r.returnAddress, detail, "staged");  // addDanger keys its records on the action too
		return;
	}
}

const char* dangerName(DangerKind k) { return kDangerNames[int(k)]; }

bool poolVmmCannotExport(int peer, Cls cls) {
	const State& g = st();
	if ((cls != kPool && cls != kVmm) || g.pml != "ucx" || g.ucxCudaIpc != 1) return false;
	return peer >= 0 && size_t(peer) < g.peerPath.size() && (g.peerPath[size_t(peer)] == "p2p" || g.peerPath[size_t(peer)] == "same-gpu");
}

DangerKind checkDanger(CallId call, int peer, uint64_t bytes, Cls cls, const void* buf, void* ra, bool fixed) {
	if (cls >= kNumCls || cls == kHost || cls == kPinnedHost) return DangerKind::Count;  // kNumCls: no buffer (0 bytes)
	State& g = st();
	char where[64];
	std::snprintf(where, sizeof where, "%p", buf);
	DangerKind missKind = DangerKind::Count;
	if (g.pml == "ucx" && ucxMissed(buf)) {
		const UcxMemtypeFacts& f = ucxMemtypeFacts();
		char d[420];
		std::snprintf(d, sizeof d, "%s buffer %s was mapped after UCX %u.%u.%u built its memory-type cache (at this rank's first transfer) "
			"through a call UCX does not hook: UCX takes it for host memory (cma process_vm_writev / memcpy on a GPU address: abort or wrong data)",
			kClsNames[cls], where, f.major, f.minor, f.release);
		addDanger(DangerKind::UcxMemtypeMiss, call, peer, bytes, ra, d, g.mode == Mode::Fix ? "told-ucx" : "none");
		missKind = DangerKind::UcxMemtypeMiss;
	}
	if (cls == kIpcImport && g.pml == "ucx") {
		uintptr_t base = 0;
		size_t size = 0;
		ipcImportRange(buf, &base, &size);
		char d[400];
		std::snprintf(d, sizeof d, "buffer %s lies in a range imported with cudaIpcOpenMemHandle at 0x%zx (%zu bytes); pml ucx, UCX_TLS %s cuda_ipc "
			"(UCX_TLS=^cuda_ipc is not a workaround: docs/device-results.md)", where, size_t(base), size, g.ucxCudaIpc == 1 ? "allows" : "excludes");
		addDanger(DangerKind::IpcImportUcx, call, peer, bytes, ra, d, fixed ? "bounced" : "none");
		return DangerKind::IpcImportUcx;
	}
	if (std::strcmp(g.cudaAware, "no") == 0) {
		addDanger(DangerKind::DeviceNotAware, call, peer, bytes, ra, std::string(kClsNames[cls]) + " buffer " + where + " but MPIX_Query_cuda_support() returned 0 at run time", "none");
		return DangerKind::DeviceNotAware;
	}
	if ((cls == kPool || cls == kVmm) && poolVmmCannotExport(peer, cls)) {
		addDanger(DangerKind::PoolVmmLegacyIpc, call, peer, bytes, ra, std::string(kClsNames[cls]) + " buffer " + where + " is not legacy-IPC capable; UCX cuda_ipc to a same-host peer cannot export it", fixed ? "bounced" : "none");
		return DangerKind::PoolVmmLegacyIpc;
	}
	bool staged = peer >= 0 && size_t(peer) < g.peerPath.size() && g.peerPath[size_t(peer)] == "host-staged";
	if (staged && bytes >= g.stageMin && g.pml == "ucx") {
		addDanger(DangerKind::HugeToHostStaged, call, peer, bytes, ra, std::to_string(bytes) + "-byte " + kClsNames[cls] + " message to a host-staged peer: UCX stages it through host memory it does not bound", "none");
		return DangerKind::HugeToHostStaged;
	}
	return missKind;
}

}  // namespace gpumpi::guard
