// locality.hpp - where this process runs (hwloc): NUMA node, CPU binding and
// the GPUs attached closest to it.
#pragma once

#include <string>
#include <vector>

namespace tca::tools {

struct GpuLocation {
    std::string pci_bus_id;  // domain:bus:dev.fn
    std::string name;        // hwloc's name / os device, if known
    int numa_node = -1;
    bool near = false;  // attached under the NUMA node(s) we are bound to
};

struct Locality {
    std::string hostname;
    std::string binding;  // cpuset list, e.g. "0-1"
    std::vector<int> numa_nodes;
    int numa_total = 0;
    int cores = 0;
    std::vector<GpuLocation> gpus;
    std::string error;  // non-empty when hwloc failed
};

Locality query_locality();

}  // namespace tca::tools
