// settings_catalog.cpp - see settings_catalog.hpp.  The defaults come from
// the structures the readers fill, so a changed default shows everywhere.
#include "base/settings_catalog.hpp"

#include <cctype>
#include <cstdio>
#include <vector>

#include "base/env_settings.hpp"

namespace tca {

namespace {
std::string number(uint64_t n) {
    return std::to_string(n);
}

std::string real(double x) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.10g", x);
    return buf;
}

// TCA_PIO_LATENCY_NS -> timing_pio_latency_ns
std::string model_name(const char *variable) {
    std::string n = "timing_";
    for (const char *c = variable + 4; *c != '\0'; ++c)
        n += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
    return n;
}

std::vector<Setting> make_catalog() {
    const DeviceSettings d;
    const WaitPolicy &w = d.policy;
    std::vector<Setting> s = {
        {"TCA_DEVICE", "device", "auto",
         "TCA device the session starts: loopback (the processes of one host, over shared "
         "memory), ucx (PEACH2 emulated over UCX between hosts; needs the tca_ucx plugin), or "
         "auto (ucx where the job spans hosts and the plugin is built, else loopback)",
         4},
        {"TCA_SINGLE_COPY", "single_copy", "auto",
         "How puts reach another process's private host memory: 1 single copy by the kernel "
         "(process_vm_writev), 0 through a bounce buffer copied in by the target, auto: PIO "
         "writes the way node 0 measures cheaper at start-up, DMA by single copy (btl tca then "
         "picks its protocols to match)",
         4},
        {"TCA_SHARED_HEAP", "shared_heap", d.shared_heap ? "1" : "0",
         "1: tcaMalloc'd host memory is shared memory the other nodes map (their puts into it "
         "are plain stores); 0: private, written by single copy or the bounce path",
         5},
        {"TCA_INTERNAL_SIZE", "internal_size", format_size(kInternalSize.fallback),
         "Internal (PIO-mapped) memory per node, " + format_size(kInternalSize.min) + ".." +
             format_size(kInternalSize.max) +
             " bytes with an optional K, M or G: btl tca's rings come from it",
         5},
        {"TCA_STREAMING_MIN", "streaming_min", number(kStreamingMin.fallback),
         "Bytes in one DMA run from which its copies use non-temporal stores; 0: the "
         "last-level cache's size, at most 8M",
         6},
        {"TCA_S_LINKS", "s_links", d.s_links ? "1" : "0",
         "1: the nodes form two rings joined by S links (an even number of at least 4 nodes), "
         "as PEACH2 can be cabled",
         6},
        {"TCA_SPIN_NS", "spin_ns", number(static_cast<uint64_t>(w.spin_ns)),
         "Nanoseconds a blocking wait in the device polls before it sleeps (0..1000000000)", 5},
        {"TCA_TIMEOUT_MS", "timeout_ms", number(static_cast<uint64_t>(w.timeout_ns / 1000000)),
         "Milliseconds a blocking wait in the device (a peer's answer, a start-up meeting) "
         "waits before it fails with a timeout (1..86400000)",
         4},
        {"TCA_TAKEOVER_US", "takeover_us", "auto",
         "Microseconds after an application thread last drove the ucx device before its "
         "progress thread takes over (0..1000000); auto: " +
             number(static_cast<uint64_t>(w.takeover_ns / 1000)) +
             ", or 5000 in an Open MPI job that yields when idle (mpi_yield_when_idle)",
         5},
        {"TCA_UCX_DMA", "ucx_dma", "am",
         "How the ucx device moves DMA rows: am (UCX active messages) or put (ucp_put_nbx, for "
         "fabrics where puts are cheaper than UCX's rendezvous)",
         6},
        {"TCA_TIMING", "timing",
         d.timing.virtual_time ? "virtual"
         : d.timing.enabled    ? "1"
                               : "0",
         "1: every put and DMA takes PEACH2's modelled time (the timing_* settings, calibrated "
         "to PEACH2's published figures); virtual: the same figures in virtual time, read with "
         "tcaWtime (MPI_Wtime with tca-mpirun --virtual-time): every node's clock follows what "
         "it receives and its own CPU time, whatever the host's load; 0: as fast as this host goes",
         5},
    };
    for (const TimingModel::Parameter &p : TimingModel::parameters())
        s.push_back({p.variable, model_name(p.variable), real(d.timing.*p.field),
                     std::string("Timing model (with timing 1): ") + p.meaning + ", in " + p.unit +
                         " (" + real(p.min) + ".." + real(p.max) + ")",
                     9});
    return s;
}
}  // namespace

std::span<const Setting> settings_catalog() {
    static const std::vector<Setting> catalog = make_catalog();
    return catalog;
}

}  // namespace tca
