// tca_info - like ucx_info: what the TCA device layer sees.  Run it alone (a
// one-node sub-cluster) or under mpirun / with TCA_JOB_KEY, TCA_NODE_ID and
// TCA_NUM_NODES to see the real sub-cluster.  -n N -s describe an N-node
// layout (with S links) without starting a device.  A user of libtca like any
// other: only the public API (tca.h; it links the shared library, which
// exports nothing else), plus hwloc for locality.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "tca.h"
#include "tools/locality.hpp"

namespace {

void usage() {
    std::printf("usage: tca_info [-n NODES [-s]] [-S] [-h]\n"
                "  (no option)  initialise the device (loopback) and describe it\n"
                "  -n NODES     describe the model of an N-node sub-cluster without a device\n"
                "  -s           with -n: two rings joined by S links\n"
                "  -S           only the settings: each one's value and where it came from\n");
}

// Every setting (tcaGetSettingInfo), its value and who gave it: "default" or
// its TCA_* variable here; in an MPI job an MCA parameter (opal_common_tca_*,
// btl_tca_*, coll_tca_*) wins over the variable.
void print_settings() {
    std::printf("# Settings (variable, MCA name, value, from where)\n");
    tcaSettingInfo info{};
    for (int i = 0; tcaGetSettingInfo(i, &info) == tcaSuccess; ++i) {
        char value[256] = "", given_by[400] = "";
        if (tcaGetSetting(info.variable, value, sizeof(value), given_by, sizeof(given_by)) !=
            tcaSuccess)
            continue;
        std::printf("#   %-31s %-36s %-10s %s\n", info.variable, info.name, value, given_by);
    }
}

// Hops between two nodes: of the running device, or of the model (-n).
struct Hops {
    const tcaTopologyAttr &t;
    bool model;
    int operator()(int from, int to) const {
        int h = -1;
        const tcaResult r = model ? tcaModelHopCount(t.num_nodes, t.s_links, from, to, &h)
                                  : tcaGetHopCount(from, to, &h);
        return r == tcaSuccess ? h : -1;
    }
};

void print_topology(const tcaTopologyAttr &t, int self, const Hops &hops) {
    std::printf("# Sub-cluster\n");
    std::printf("#   nodes            : %d%s\n", t.num_nodes,
                t.s_links ? " (two rings joined by S links)" : "");
    std::printf("#   ring size        : %d\n", t.ring_size);
    if (self >= 0)
        std::printf("#   this node        : %d\n", self);
    std::printf("#   ring (E order)   :");
    for (int start = 0; start < t.num_nodes;
         start += t.ring_size) {  // rings hold consecutive node ids
        std::printf(" [");
        for (int n = start; n < start + t.ring_size; ++n)
            std::printf("%d%s", n, n + 1 < start + t.ring_size ? " " : "");
        std::printf("]");
    }
    std::printf("\n# Hops (row = from, column = to)\n#     ");
    const int show = t.num_nodes > 16 ? 16 : t.num_nodes;
    for (int j = 0; j < show; ++j)
        std::printf("%3d", j);
    std::printf("\n");
    for (int i = 0; i < show; ++i) {
        std::printf("#  %2d ", i);
        for (int j = 0; j < show; ++j)
            std::printf("%3d", hops(i, j));
        std::printf("\n");
    }
    if (show < t.num_nodes)
        std::printf("#   (first %d of %d nodes shown)\n", show, t.num_nodes);
    std::printf("# Global address space\n");
    std::printf("#   BAR              : 0x%llx, %llu GiB\n",
                static_cast<unsigned long long>(t.bar_base),
                static_cast<unsigned long long>(t.bar_size >> 30));
    std::printf(
        "#   window per node  : %llu GiB (aligned, routing compares address bit %d and up)\n",
        static_cast<unsigned long long>(t.window_size >> 30), t.window_shift);
    std::printf("#   regions          : host, gpu0, gpu1, internal, %llu GiB each\n",
                static_cast<unsigned long long>(t.region_size >> 30));
    const int last = t.num_nodes > 4 ? 3 : t.num_nodes;
    for (int n = 0; n < last; ++n) {
        const uint64_t base = t.bar_base + static_cast<uint64_t>(n) * t.window_size;
        std::printf("#   node %-2d window   : 0x%llx - 0x%llx\n", n,
                    static_cast<unsigned long long>(base),
                    static_cast<unsigned long long>(base + t.window_size - 1));
    }
}

void print_limits() {
    std::printf("# DMA engine\n");
    std::printf("#   channels         : %d\n", TCA_NUM_DMA_CHANNELS);
    std::printf(
        "#   chain length     : %d (host descriptor table), %d in register mode (no fetch)\n",
        TCA_MAX_DESCRIPTORS, TCA_MAX_REG_DESCRIPTORS);
    std::printf("#   descriptors      : contiguous, block-stride (width, height, pitches)\n");
    std::printf("#   notifications    : %d slots per source node, in-order after data\n",
                TCA_NOTIFY_SLOTS);
    std::printf("#   counters         : %d per node (offload: triggered descriptors, remote add)\n",
                TCA_NUM_COUNTERS);
    std::printf("#   access           : put only (remote reads are refused)\n");
}

// What the device layer owns and hands out (tcaQueryDevice): btl tca, coll
// tca and applications acquire from these pools.
void print_resources() {
    tcaDeviceAttr a{};
    if (tcaQueryDevice(&a) != tcaSuccess)
        return;
    std::printf("# Resources of this node (tcaQueryDevice; acquired through tca*Acquire)\n");
    std::printf("#   DMA channels     : %d free of %d\n", a.free_dma_channels, a.dma_channels);
    std::printf("#   counters         : %d free of %d\n", a.free_counters, a.counters);
    std::printf("#   notify slots     : %d free of %d, %d tags outstanding per (source, slot)\n",
                a.free_notify_slots, a.notify_slots, a.notify_depth);
    std::printf("#   registrations    : %d live of %d\n", a.registrations, a.max_registrations);
    std::printf("#   internal memory  : %llu of %llu KiB used\n",
                static_cast<unsigned long long>(a.internal_used >> 10),
                static_cast<unsigned long long>(a.internal_size >> 10));
    std::printf("#   nodes            : %d of at most %d\n", a.num_nodes, a.max_nodes);
}

// The model's parameters in effect: the running device's, else the environment's
// (false after tcaTimingParameter refused a value; libtca printed which).
bool print_timing(int enabled) {
    static const char *const kModes[] = {
        "0: off, as fast as this host goes",
        "1: real time, every put and DMA delayed to PEACH2's modelled time",
        "virtual: virtual time, read with tcaWtime (MPI_Wtime through libtcawtime.so); "
        "predictions independent of this host's load"};
    std::printf("# Timing model (calibrated to PEACH2's published figures)\n");
    std::printf("#   mode                           : TCA_TIMING=%s\n",
                kModes[enabled >= 0 && enabled <= 2 ? enabled : 0]);
    const char *variable = nullptr, *unit = nullptr, *meaning = nullptr;
    double value = 0;
    for (int i = 0;; ++i) {
        const tcaResult r = tcaTimingParameter(i, &variable, &value, &unit, &meaning);
        if (r == tcaErrorInvalidValue && i > 0)
            return true;  // past the last
        if (r != tcaSuccess)
            return false;
        std::printf("#   %-31s: %8.6g %-4s  %s\n", variable, value, unit, meaning);
    }
}

void print_locality(const tcaBackendAttr *backend) {
    const tca::tools::Locality l = tca::tools::query_locality();
    std::printf("# Locality (hwloc)\n");
    if (!l.error.empty()) {
        std::printf("#   error            : %s\n", l.error.c_str());
        return;
    }
    std::printf("#   host             : %s, %d cores, %d NUMA node(s)\n", l.hostname.c_str(),
                l.cores, l.numa_total);
    std::printf("#   bound to CPUs    : %s\n", l.binding.c_str());
    std::printf("#   NUMA node(s)     :");
    for (int n : l.numa_nodes)
        std::printf(" %d", n);
    std::printf("\n");
    if (l.gpus.empty())
        std::printf("#   GPUs             : none found\n");
    for (const auto &g : l.gpus)
        std::printf("#   GPU              : %s %s NUMA %d%s\n", g.pci_bus_id.c_str(),
                    g.name.c_str(), g.numa_node, g.near ? " (nearest)" : "");
    if (backend == nullptr)
        return;  // -n: no device to ask
    if (backend->gpu_devices >= 0)
        std::printf("#   CUDA             : available, %d device(s)\n", backend->gpu_devices);
    else
        std::printf("#   CUDA             : %s\n", backend->gpu_status);
}

}  // namespace

int main(int argc, char **argv) {
    int model_nodes = 0;
    bool s_links = false, settings_only = false;
    int opt;
    while ((opt = getopt(argc, argv, "n:sSh")) != -1) {
        switch (opt) {
        case 'S':
            settings_only = true;
            break;
        case 'n':
            model_nodes = std::atoi(optarg);
            break;
        case 's':
            s_links = true;
            break;
        default:
            usage();
            return opt == 'h' ? 0 : 2;
        }
    }
    std::printf("# TCA transport for Open MPI - device layer information\n");
    if (settings_only) {
        print_settings();
        return 0;
    }
    if (model_nodes > 0) {
        tcaTopologyAttr t{};
        if (tcaQueryModelTopology(model_nodes, s_links ? 1 : 0, &t) != tcaSuccess) {
            std::fprintf(stderr,
                         "tca_info: no such sub-cluster: %d nodes%s (1..%d; S links need an even "
                         "count >= 4)\n",
                         model_nodes, s_links ? " with S links" : "", TCA_MAX_NODES);
            return 2;
        }
        print_topology(t, -1, Hops{t, true});
        print_limits();
        int timing = 0;
        if (tcaTimingEnabled(&timing) != tcaSuccess || !print_timing(timing))
            return 1;  // the line naming the bad value is out
        print_locality(nullptr);
        print_settings();
        return 0;
    }
    const tcaResult r = tcaInit();
    if (r != tcaSuccess) {
        std::fprintf(stderr, "tca_info: tcaInit failed: %s\n", tcaGetErrorString(r));
        return 1;
    }
    tcaBackendAttr b{};
    tcaTopologyAttr t{};
    tcaDeviceAttr d{};
    if (tcaQueryBackend(&b) != tcaSuccess || tcaQueryTopology(&t) != tcaSuccess ||
        tcaQueryDevice(&d) != tcaSuccess) {
        std::fprintf(stderr, "tca_info: the device did not describe itself\n");
        tcaFinalize();
        return 1;
    }
    std::printf("# Backend\n");
    std::printf("#   device           : %s\n", b.backend);
    std::printf("#   built            : %s\n",
                b.optimized
                    ? "optimized"
                    : "WITHOUT optimization (no -O: the data path runs several times slower)");
    std::printf("#   job key          : %s (from %s)\n", b.job_key, b.launch_source);
    std::printf("#   host-memory puts : %s\n", b.put_mechanism);
    std::printf("#   internal memory  : %llu KiB per node (TCA_INTERNAL_SIZE)\n",
                static_cast<unsigned long long>(d.internal_size >> 10));
    std::printf("#   waits            : spin %lld ns then sleep (TCA_SPIN_NS), timeout %lld ms "
                "(TCA_TIMEOUT_MS)\n",
                static_cast<long long>(b.spin_ns), static_cast<long long>(b.timeout_ns / 1000000));
    if (b.takeover_us >= 0)
        std::printf(
            "#   progress thread  : takes over %d us after the last wait (TCA_TAKEOVER_US)\n",
            b.takeover_us);
    std::printf("#   GPU memory       : %s\n", b.gpu_built ? "CUDA IPC (built with CUDA)"
                                               : std::strcmp(b.backend, "loopback") == 0
                                                   ? "not built (configure --with-cuda)"
                                                   : "not served by this device");
    print_topology(t, d.node_id, Hops{t, false});
    print_limits();
    print_resources();
    int timing = 0;
    if (tcaTimingEnabled(&timing) == tcaSuccess)
        print_timing(timing);
    print_locality(&b);
    print_settings();
    tcaFinalize();
    return 0;
}
