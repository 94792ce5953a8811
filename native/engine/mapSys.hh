// What `gpumpi map` reads about the place a rank runs: CPU binding, NICs and their NUMA nodes, the GPU (UUID, PCI bus
// id, NUMA node, peer access to the other GPUs of the host), the nvidia_peermem module. Linux /sys and the CUDA
// driver (through cudaDriver(), loaded by the caller). Never throws; missing files give empty / -1 values.
#pragma once
#include <string>
#include <vector>

#include "cudaDriver.hh"

namespace gpumpi::map {

/** One network interface (/sys/class/net) or RDMA device (/sys/class/infiniband). */
struct Nic {
	std::string name;
	std::string kind;    // "net" | "ib"
	int numaNode = -1;   // -1: not reported (virtual interface, or a machine without NUMA)
	bool isVirtual = false;  // net: no backing device (lo, bridges, veth)
	std::string state;   // net: operstate; ib: "" (ports not read)
};

/** Peer access from this rank's GPU to one GPU of the host. */
struct PeerAccess {
	int ordinal = -1;
	std::string pciBusId;
	bool canAccess = false;
};

/** The GPU this rank uses (valid when ordinal >= 0). */
struct GpuInfo {
	int ordinal = -1;
	std::string name, uuid, pciBusId;
	int numaNode = -1;
	std::vector<PeerAccess> peers;  // every other visible device
	std::string error;              // why a field is missing
};

/** CPUs this process may run on (sched_getaffinity), ascending. */
std::vector<int> cpuAffinity();
/** "0-3,8,10-11" */
std::string cpuListText(const std::vector<int>& cpus);
/** Network interfaces and RDMA devices. */
std::vector<Nic> listNics();
/** "0000:18:00.0" from "00000000:18:00.0" (lower case, 4-digit domain). */
std::string normalizeBusId(const std::string& busId);
/**
 * TESTS ONLY: GPUMPI_TEST_SYSFS_ROOT=<absolute dir> puts <dir> in front of the sysfs paths of the NUMA topology
 * (/sys/devices/system/node) and of the GPU's PCI device (/sys/bus/pci/devices), so that an engine test can pair a
 * fake sysfs tree with the fake CUDA driver (test/engine/affinityFake.test.ts). "" when unset or not an absolute
 * path without "..". Every document that used it says so (`affinity.sysfs_root`); NICs and modules are always real.
 */
const std::string& sysfsRoot();
/** "0-3,8,10-11" -> {0,1,2,3,8,10,11}; malformed parts are skipped, ascending and unique. */
std::vector<int> parseCpuList(const std::string& text);
/** One NUMA node of the host: <root>/sys/devices/system/node/node<N>/cpulist. */
struct NumaNode {
	int node = -1;
	std::string cpulist;
	std::vector<int> cpus;
};
/** The host's NUMA nodes, ascending (empty when the kernel exposes none). */
std::vector<NumaNode> numaNodes();
/** <root>/sys/bus/pci/devices/<normalized id>, or "" for an empty or unsafe id. */
std::string pciDevicePath(const std::string& busId);
/** <pci device>/numa_node, or -1. */
int pciNumaNode(const std::string& busId);
/** <pci device>/local_cpulist (the CPUs the kernel calls local to the device), or "" when unreadable. */
std::string pciLocalCpulist(const std::string& busId);
/** Whether nvidia_peermem (or the older nv_peer_mem) is loaded, and which. */
bool peermemLoaded(std::string& module);
/** GPU facts of device `ordinal` (driver already initialised). */
GpuInfo gpuInfo(int ordinal, int deviceCount);

}  // namespace gpumpi::map
