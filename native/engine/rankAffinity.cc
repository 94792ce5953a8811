#include "rankAffinity.hh"

#include <algorithm>
#include <set>

#include "mapSys.hh"

namespace gpumpi::map {

void writeAffinityJson(JsonWriter& w, const std::vector<int>& cpus, const std::string& gpuBusId) {
	const std::vector<NumaNode> nodes = numaNodes();
	std::set<int> cpuNodes;
	for (const auto& n : nodes)
		for (int c : cpus)
			if (std::binary_search(n.cpus.begin(), n.cpus.end(), c)) { cpuNodes.insert(n.node); break; }
	std::string error;
	if (cpus.empty()) error = "sched_getaffinity gave no CPU";
	if (nodes.empty()) error += std::string(error.empty() ? "" : "; ") + "no NUMA node under " + sysfsRoot() + "/sys/devices/system/node";
	w.beginObject();
	w.key("cpu_list").value(cpuListText(cpus));
	w.key("cpu_numa_nodes").beginArray();
	for (int n : cpuNodes) w.value(n);
	w.endArray();
	w.key("numa_nodes").beginArray();
	for (const auto& n : nodes) w.beginObject().key("node").value(n.node).key("cpulist").value(n.cpulist).endObject();
	w.endArray();
	w.key("gpu");
	const std::string dev = pciDevicePath(gpuBusId);
	if (!dev.empty()) {
		w.beginObject().key("pci_bus_id").value(normalizeBusId(gpuBusId)).key("sysfs_path").value(dev);
		w.key("numa_node").value(pciNumaNode(gpuBusId)).key("local_cpulist").value(pciLocalCpulist(gpuBusId)).endObject();
	} else {
		w.null();
	}
	w.key("sysfs_root").value(sysfsRoot());
	w.key("error").value(error);
	w.endObject();
}

}  // namespace gpumpi::map
