#include "mapSys.hh"

#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace gpumpi::map {
namespace {

std::string readFirstLine(const std::string& path) {
	std::ifstream f(path);
	std::string line;
	if (!f || !std::getline(f, line)) return "";
	while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
	return line;
}

int readInt(const std::string& path) {
	std::string s = readFirstLine(path);
	if (s.empty()) return -1;
	char* end = nullptr;
	long v = std::strtol(s.c_str(), &end, 10);
	if (!end || *end) return -1;
	return v < -1 || v > 1 << 20 ? -1 : static_cast<int>(v);
}

bool exists(const std::string& path) {
	struct stat st;
	return stat(path.c_str(), &st) == 0;
}

std::vector<std::string> listDir(const std::string& dir) {
	std::vector<std::string> out;
	DIR* d = opendir(dir.c_str());
	if (!d) return out;
	while (dirent* e = readdir(d)) {
		std::string n = e->d_name;
		if (n != "." && n != "..") out.push_back(n);
	}
	closedir(d);
	std::sort(out.begin(), out.end());
	return out;
}

}  // namespace

std::vector<int> cpuAffinity() {
	std::vector<int> out;
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set)) out.push_back(c);
	return out;
}

std::string cpuListText(const std::vector<int>& cpus) {
	std::string out;
	for (size_t i = 0; i < cpus.size();) {
		size_t j = i;
		while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) j++;
		if (!out.empty()) out += ',';
		out += std::to_string(cpus[i]);
		if (j > i) out += '-' + std::to_string(cpus[j]);
		i = j + 1;
	}
	return out;
}

std::vector<Nic> listNics() {
	std::vector<Nic> out;
	for (const auto& n : listDir("/sys/class/net")) {
		Nic nic;
		nic.name = n;
		nic.kind = "net";
		const std::string base = "/sys/class/net/" + n;
		nic.isVirtual = !exists(base + "/device");
		nic.numaNode = nic.isVirtual ? -1 : readInt(base + "/device/numa_node");
		nic.state = readFirstLine(base + "/operstate");
		out.push_back(nic);
	}
	for (const auto& n : listDir("/sys/class/infiniband")) {
		Nic nic;
		nic.name = n;
		nic.kind = "ib";
		nic.numaNode = readInt("/sys/class/infiniband/" + n + "/device/numa_node");
		out.push_back(nic);
	}
	return out;
}

std::string normalizeBusId(const std::string& busId) {
	std::string s;
	for (char c : busId) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
	size_t colon = s.find(':');
	if (colon != std::string::npos && colon > 4) s = s.substr(colon - 4);
	return s;
}

const std::string& sysfsRoot() {
	static const std::string root = [] {
		const char* v = std::getenv("GPUMPI_TEST_SYSFS_ROOT");
		std::string r = v ? v : "";
		if (r.empty() || r[0] != '/' || r.find("..") != std::string::npos) return std::string();
		while (r.size() > 1 && r.back() == '/') r.pop_back();
		return r;
	}();
	return root;
}

std::vector<int> parseCpuList(const std::string& text) {
	std::vector<int> out;
	size_t start = 0;
	while (start <= text.size()) {
		size_t comma = text.find(',', start);
		const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
		int a = -1, b = -1;
		char extra = 0;
		const int n = std::sscanf(part.c_str(), "%d-%d%c", &a, &b, &extra);
		if (n == 1) b = a;
		if ((n == 1 || n == 2) && a >= 0 && b >= a && b - a < (1 << 16) && b < (1 << 20))
			for (int c = a; c <= b; c++) out.push_back(c);
		if (comma == std::string::npos) break;
		start = comma + 1;
	}
	std::sort(out.begin(), out.end());
	out.erase(std::unique(out.begin(), out.end()), out.end());
	return out;
}

std::vector<NumaNode> numaNodes() {
	std::vector<NumaNode> out;
	const std::string dir = sysfsRoot() + "/sys/devices/system/node";
	for (const auto& n : listDir(dir)) {
		if (n.size() < 5 || n.compare(0, 4, "node") != 0 || n.find_first_not_of("0123456789", 4) != std::string::npos) continue;
		NumaNode node;
		node.node = std::atoi(n.c_str() + 4);
		node.cpulist = readFirstLine(dir + "/" + n + "/cpulist");
		node.cpus = parseCpuList(node.cpulist);
		out.push_back(node);
	}
	std::sort(out.begin(), out.end(), [](const NumaNode& a, const NumaNode& b) { return a.node < b.node; });
	return out;
}

std::string pciDevicePath(const std::string& busId) {
	if (busId.empty() || busId.find('/') != std::string::npos || busId.find("..") != std::string::npos) return "";
	return sysfsRoot() + "/sys/bus/pci/devices/" + normalizeBusId(busId);
}

int pciNumaNode(const std::string& busId) {
	const std::string dev = pciDevicePath(busId);
	return dev.empty() ? -1 : readInt(dev + "/numa_node");
}

std::string pciLocalCpulist(const std::string& busId) {
	const std::string dev = pciDevicePath(busId);
	return dev.empty() ? "" : readFirstLine(dev + "/local_cpulist");
}

bool peermemLoaded(std::string& module) {
	for (const char* m : {"nvidia_peermem", "nv_peer_mem"}) {
		if (exists(std::string("/sys/module/") + m)) {
			module = m;
			return true;
		}
	}
	module.clear();
	return false;
}

GpuInfo gpuInfo(int ordinal, int deviceCount) {
	GpuInfo g;
	const CudaDriver& d = cudaDriver();
	CUdevice dev = 0;
	CUresult r = d.cuDeviceGet(&dev, ordinal);
	if (r != CUDA_SUCCESS) {
		g.error = "cuDeviceGet: " + cudaErrorText(r);
		return g;
	}
	g.ordinal = ordinal;
	char buf[256] = {0};
	if (d.cuDeviceGetName && d.cuDeviceGetName(buf, sizeof buf - 1, dev) == CUDA_SUCCESS) g.name = buf;
	char bus[64] = {0};
	if (d.cuDeviceGetPCIBusId && d.cuDeviceGetPCIBusId(bus, sizeof bus - 1, dev) == CUDA_SUCCESS) g.pciBusId = normalizeBusId(bus);
	unsigned char u[16] = {0};
	if (d.cuDeviceGetUuid && d.cuDeviceGetUuid(reinterpret_cast<char*>(u), dev) == CUDA_SUCCESS) {
		char t[64];
		std::snprintf(t, sizeof t, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
		              u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
		g.uuid = t;
	} else {
		g.error = "cuDeviceGetUuid failed or missing";
	}
	g.numaNode = pciNumaNode(g.pciBusId);
	for (int k = 0; k < deviceCount; k++) {
		if (k == ordinal) continue;
		PeerAccess p;
		p.ordinal = k;
		CUdevice other = 0;
		if (d.cuDeviceGet(&other, k) != CUDA_SUCCESS) continue;
		char ob[64] = {0};
		if (d.cuDeviceGetPCIBusId && d.cuDeviceGetPCIBusId(ob, sizeof ob - 1, other) == CUDA_SUCCESS) p.pciBusId = normalizeBusId(ob);
		int can = 0;
		if (d.cuDeviceCanAccessPeer && d.cuDeviceCanAccessPeer(&can, dev, other) == CUDA_SUCCESS) p.canAccess = can != 0;
		g.peers.push_back(p);
	}
	return g;
}

}  // namespace gpumpi::map
