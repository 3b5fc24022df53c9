// locality.cpp - hwloc 2.x: load the topology with PCI devices, intersect our
// binding with NUMA nodes, and walk NVIDIA PCI devices up to their NUMA node.
#include "tools/locality.hpp"

#include <hwloc.h>
#include <unistd.h>

#include <cstdio>

namespace tca::tools {

namespace {
int numa_of(hwloc_topology_t topo, hwloc_obj_t obj) {
    hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(topo, obj);
    if (a == nullptr || a->nodeset == nullptr)
        return -1;
    return hwloc_bitmap_first(a->nodeset);
}
}  // namespace

Locality query_locality() {
    Locality l;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    l.hostname = host;

    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) {
        l.error = "hwloc_topology_init failed";
        return l;
    }
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        l.error = "hwloc_topology_load failed";
        return l;
    }
    l.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    l.numa_total = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);

    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(topo, cpus, HWLOC_CPUBIND_PROCESS) != 0)
        hwloc_bitmap_copy(cpus, hwloc_topology_get_allowed_cpuset(topo));
    char *list = nullptr;
    hwloc_bitmap_list_asprintf(&list, cpus);
    l.binding = list ? list : "";
    free(list);

    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    hwloc_cpuset_to_nodeset(topo, cpus, nodes);
    for (int i = hwloc_bitmap_first(nodes); i >= 0; i = hwloc_bitmap_next(nodes, i))
        l.numa_nodes.push_back(i);

    for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci;
         pci = hwloc_get_next_pcidev(topo, pci)) {
        const unsigned cls = pci->attr->pcidev.class_id >> 8;  // 0x03 = display controller
        if (pci->attr->pcidev.vendor_id != 0x10de || cls != 0x03)
            continue;
        GpuLocation g;
        char bus[32];
        std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain,
                      pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
        g.pci_bus_id = bus;
        for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
            if (c->type == HWLOC_OBJ_OS_DEVICE && c->name)
                g.name = c->name;
        g.numa_node = numa_of(topo, pci);
        g.near = g.numa_node < 0 || hwloc_bitmap_isset(nodes, static_cast<unsigned>(g.numa_node));
        l.gpus.push_back(g);
    }
    hwloc_bitmap_free(nodes);
    hwloc_bitmap_free(cpus);
    hwloc_topology_destroy(topo);
    return l;
}

}  // namespace tca::tools
