// Where a rank may run against where its GPU sits (issue 16 item 5): the NUMA nodes of the CPUs in the rank's
// affinity mask, the host's nodes, and the GPU's PCI device numa_node / local_cpulist, all from sysfs (mapSys.hh).
// Written per rank by `gpumpi map` and `gpumpi inspect` as "affinity" (docs/map-schema.md, docs/engine-schema.md);
// extension/core/map/mapAffinity.ts draws the verdict. Never throws; what cannot be read is -1 / "" / empty.
#pragma once
#include <string>
#include <vector>

#include "json.hh"

namespace gpumpi::map {

/**
 * Append the "affinity" object (the writer must be positioned for a value): `cpus` is the rank's affinity mask
 * (cpuAffinity()), `gpuBusId` the PCI bus id of the GPU it uses as the CUDA driver gives it ("" for none).
 */
void writeAffinityJson(JsonWriter& w, const std::vector<int>& cpus, const std::string& gpuBusId);

}  // namespace gpumpi::map
