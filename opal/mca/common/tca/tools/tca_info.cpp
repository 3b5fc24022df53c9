// tca_info - like ucx_info: what the TCA device layer sees.  Run it alone (a
// one-node sub-cluster) or under mpirun / with TCA_JOB_KEY, TCA_NODE_ID and
// TCA_NUM_NODES to see the real sub-cluster.  -n N -s describe an N-node
// layout (with S links) without starting a device.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "device.hpp"
#include "gpu/cuda_runtime.hpp"
#include "loopback/env_settings.hpp"
#include "tca.h"
#include "tools/locality.hpp"

namespace {

void usage() {
    std::printf("usage: tca_info [-n NODES [-s]] [-h]\n"
                "  (no option)  initialise the device (loopback) and describe it\n"
                "  -n NODES     describe the model of an N-node sub-cluster without a device\n"
                "  -s           with -n: two rings joined by S links\n");
}

void print_topology(const tca::Topology &t, int self) {
    const tca::AddressMap &m = t.address_map();
    std::printf("# Sub-cluster\n");
    std::printf("#   nodes            : %d%s\n", t.num_nodes(), t.has_s_links() ? " (two rings joined by S links)" : "");
    std::printf("#   ring size        : %d\n", t.ring_size());
    if (self >= 0) std::printf("#   this node        : %d\n", self);
    std::printf("#   ring (E order)   :");
    for (int r = 0; r < (t.has_s_links() ? 2 : 1); ++r) {
        const int start = r * t.ring_size();
        int n = start;
        std::printf(" [");
        do {
            std::printf("%d%s", n, t.east_of(n) == start ? "" : " ");
            n = t.east_of(n);
        } while (n != start);
        std::printf("]");
    }
    std::printf("\n# Hops (row = from, column = to)\n#     ");
    const int show = t.num_nodes() > 16 ? 16 : t.num_nodes();
    for (int j = 0; j < show; ++j) std::printf("%3d", j);
    std::printf("\n");
    for (int i = 0; i < show; ++i) {
        std::printf("#  %2d ", i);
        for (int j = 0; j < show; ++j) std::printf("%3d", t.hops(i, j));
        std::printf("\n");
    }
    if (show < t.num_nodes()) std::printf("#   (first %d of %d nodes shown)\n", show, t.num_nodes());
    std::printf("# Global address space\n");
    std::printf("#   BAR              : 0x%llx, %llu GiB\n", static_cast<unsigned long long>(m.kBarBase),
                static_cast<unsigned long long>(m.kBarSize >> 30));
    std::printf("#   window per node  : %llu GiB (aligned, routing compares address bit %d and up)\n",
                static_cast<unsigned long long>(m.window_size() >> 30), m.window_shift());
    std::printf("#   regions          : host, gpu0, gpu1, internal, %llu GiB each\n",
                static_cast<unsigned long long>(m.region_size() >> 30));
    const int last = t.num_nodes() > 4 ? 3 : t.num_nodes();
    for (int n = 0; n < last; ++n)
        std::printf("#   node %-2d window   : 0x%llx - 0x%llx\n", n,
                    static_cast<unsigned long long>(m.window_base(n)),
                    static_cast<unsigned long long>(m.window_base(n) + m.window_size() - 1));
}

void print_limits() {
    std::printf("# DMA engine\n");
    std::printf("#   channels         : %d\n", TCA_NUM_DMA_CHANNELS);
    std::printf("#   chain length     : %d (host descriptor table), %d in register mode (no fetch)\n",
                TCA_MAX_DESCRIPTORS, TCA_MAX_REG_DESCRIPTORS);
    std::printf("#   descriptors      : contiguous, block-stride (width, height, pitches)\n");
    std::printf("#   notifications    : %d slots per source node, in-order after data\n", TCA_NOTIFY_SLOTS);
    std::printf("#   counters         : %d per node (offload: triggered descriptors, remote add)\n",
                TCA_NUM_COUNTERS);
    std::printf("#   access           : put only (remote reads are refused)\n");
}

// What the device layer owns and hands out (tcaQueryDevice): btl tca, coll
// tca and applications acquire from these pools.
void print_resources() {
    tcaDeviceAttr a{};
    if (tcaQueryDevice(&a) != tcaSuccess) return;
    std::printf("# Resources of this node (tcaQueryDevice; acquired through tca*Acquire)\n");
    std::printf("#   DMA channels     : %d free of %d\n", a.free_dma_channels, a.dma_channels);
    std::printf("#   counters         : %d free of %d\n", a.free_counters, a.counters);
    std::printf("#   notify slots     : %d free of %d, %d tags outstanding per (source, slot)\n", a.free_notify_slots,
                a.notify_slots, a.notify_depth);
    std::printf("#   registrations    : %d live of %d\n", a.registrations, a.max_registrations);
    std::printf("#   internal memory  : %llu of %llu KiB used\n", static_cast<unsigned long long>(a.internal_used >> 10),
                static_cast<unsigned long long>(a.internal_size >> 10));
    std::printf("#   nodes            : %d of at most %d\n", a.num_nodes, a.max_nodes);
}

void print_timing(const tca::TimingModel &tm) {
    std::printf("# Timing model (TCA_TIMING=%d; deadline based, calibrated to PEACH2's published figures)\n",
                tm.enabled ? 1 : 0);
    for (const tca::TimingModel::Parameter &p : tca::TimingModel::parameters())
        std::printf("#   %-31s: %8.0f %-4s  %s\n", p.variable, tm.*p.field, p.unit, p.meaning);
}

void print_locality() {
    const tca::tools::Locality l = tca::tools::query_locality();
    std::printf("# Locality (hwloc)\n");
    if (!l.error.empty()) {
        std::printf("#   error            : %s\n", l.error.c_str());
        return;
    }
    std::printf("#   host             : %s, %d cores, %d NUMA node(s)\n", l.hostname.c_str(), l.cores, l.numa_total);
    std::printf("#   bound to CPUs    : %s\n", l.binding.c_str());
    std::printf("#   NUMA node(s)     :");
    for (int n : l.numa_nodes) std::printf(" %d", n);
    std::printf("\n");
    if (l.gpus.empty()) std::printf("#   GPUs             : none found\n");
    for (const auto &g : l.gpus)
        std::printf("#   GPU              : %s %s NUMA %d%s\n", g.pci_bus_id.c_str(), g.name.c_str(), g.numa_node,
                    g.near ? " (nearest)" : "");
    auto &cuda = tca::gpu::CudaRuntime::instance();
    std::printf("#   CUDA             : %s\n",
                cuda.available() ? ("available, " + std::to_string(cuda.device_count()) + " device(s)").c_str()
                                 : cuda.unavailable_reason().c_str());
}

}  // namespace

int main(int argc, char **argv) {
    int model_nodes = 0;
    bool s_links = false;
    int opt;
    while ((opt = getopt(argc, argv, "n:sh")) != -1) {
        switch (opt) {
        case 'n': model_nodes = std::atoi(optarg); break;
        case 's': s_links = true; break;
        default: usage(); return opt == 'h' ? 0 : 2;
        }
    }
    std::printf("# TCA transport for Open MPI - device layer information\n");
    if (model_nodes > 0) {
        try {
            print_topology(tca::Topology(model_nodes, s_links), -1);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "tca_info: %s\n", e.what());
            return 2;
        }
        print_limits();
        tca::TimingModel timing;
        if (tca::loopback::timing_from_environment(&timing) != tcaSuccess) return 1;  // the line is out
        print_timing(timing);
        print_locality();
        return 0;
    }
    const tcaResult r = tcaInit();
    if (r != tcaSuccess) {
        std::fprintf(stderr, "tca_info: tcaInit failed: %s\n", tcaGetErrorString(r));
        return 1;
    }
    tca::Device *dev = tca::current_device();
    const tca::DeviceInfo info = dev->info();
    std::printf("# Backend\n");
    std::printf("#   device           : %s\n", info.backend.c_str());
    std::printf("#   job key          : %s (from %s)\n", info.job_key.c_str(), info.launch_source.c_str());
    std::printf("#   host-memory puts : %s\n", info.put_mechanism.c_str());
    std::printf("#   internal memory  : %llu KiB per node (TCA_INTERNAL_SIZE)\n",
                static_cast<unsigned long long>(info.internal_size >> 10));
    std::printf("#   waits            : spin %lld ns then sleep (TCA_SPIN_NS), timeout %lld ms (TCA_TIMEOUT_MS)\n",
                static_cast<long long>(info.spin_ns), static_cast<long long>(info.timeout_ns / 1000000));
    std::printf("#   GPU memory       : %s\n", tca::gpu::CudaRuntime::instance().compiled_in()
                                                   ? "CUDA IPC (built with CUDA)"
                                                   : "not built (configure --with-cuda)");
    print_topology(dev->topology(), dev->node_id());
    print_limits();
    print_resources();
    print_timing(dev->timing());
    print_locality();
    tcaFinalize();
    return 0;
}
