// timing_model.cpp - PEACH2 costs, calibrated against the published figures
// (see timing_model.hpp; test/unit/model_test.cpp checks every point).
#include "model/timing_model.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "model/descriptor.hpp"

namespace tca {

namespace {
// What each unit may be set to: latencies up to a second, bandwidths from
// 1 MB/s to 1 PB/s, sizes up to 1 TB (every modelled time fits int64_t ns).
constexpr double kMaxNs = 1e9, kMinMBs = 1, kMaxMBs = 1e9, kMaxBytes = 1e12;
#define TCA_NS 0, kMaxNs
#define TCA_MBS kMinMBs, kMaxMBs
#define TCA_BYTES 0, kMaxBytes

constexpr TimingModel::Parameter kParameters[] = {
    {"TCA_PIO_LATENCY_NS", "ns", "PIO write one way, adjacent nodes", &TimingModel::pio_latency_ns,
     TCA_NS},
    {"TCA_HOP_LATENCY_NS", "ns", "each further ring hop (PIO and DMA)",
     &TimingModel::hop_latency_ns, TCA_NS},
    {"TCA_CHAIN_START_NS", "ns", "DMA start until the first descriptor issues",
     &TimingModel::chain_start_ns, TCA_NS},
    {"TCA_DMA_LATENCY_NS", "ns", "descriptor issue until its first byte landed",
     &TimingModel::dma_latency_ns, TCA_NS},
    {"TCA_DESC_NS", "ns", "gap between descriptors of a chain (none with tcaDMAPipeline)",
     &TimingModel::desc_gap_ns, TCA_NS},
    {"TCA_DESC_FETCH_NS", "ns", "per descriptor read from a host table (no tcaDMAUseInternal)",
     &TimingModel::desc_fetch_ns, TCA_NS},
    {"TCA_ROW_NS", "ns", "least time per row of a 2-D descriptor", &TimingModel::row_ns, TCA_NS},
    {"TCA_HOST_BANDWIDTH_MBS", "MB/s", "host memory to host memory",
     &TimingModel::host_bandwidth_mb_s, TCA_MBS},
    {"TCA_GPU_BANDWIDTH_MBS", "MB/s", "GPU memory at either end", &TimingModel::gpu_bandwidth_mb_s,
     TCA_MBS},
    {"TCA_GPU_SMALL_BYTES", "B", "GPU transfers up to this size stream at the small rate",
     &TimingModel::gpu_small_bytes, TCA_BYTES},
    {"TCA_GPU_SMALL_BANDWIDTH_MBS", "MB/s", "GPU small-transfer rate",
     &TimingModel::gpu_small_bandwidth_mb_s, TCA_MBS},
    {"TCA_GPU_LARGE_BYTES", "B", "GPU transfers above this size stream at the large rate",
     &TimingModel::gpu_large_bytes, TCA_BYTES},
    {"TCA_GPU_LARGE_BANDWIDTH_MBS", "MB/s", "GPU large-transfer rate",
     &TimingModel::gpu_large_bandwidth_mb_s, TCA_MBS},
    {"TCA_GPU_2D_BANDWIDTH_MBS", "MB/s", "GPU rows of a 2-D descriptor",
     &TimingModel::gpu_2d_bandwidth_mb_s, TCA_MBS},
    {"TCA_GPU_2D_LARGE_BANDWIDTH_MBS", "MB/s", "GPU rows of a 2-D descriptor above the large size",
     &TimingModel::gpu_2d_large_bandwidth_mb_s, TCA_MBS},
    {"TCA_PIO_HANDOFF_NS", "ns", "emulation's own PIO delivery cost, taken off the delay",
     &TimingModel::pio_handoff_ns, TCA_NS},
    {"TCA_DMA_HANDOFF_NS", "ns", "emulation's own DMA delivery cost, taken off the delay",
     &TimingModel::dma_handoff_ns, TCA_NS},
    {"TCA_CPU_FACTOR", "x",
     "virtual time: the program's CPU time between device calls is charged times this",
     &TimingModel::cpu_factor, 0, 1000},
    {"TCA_POLL_REACTION_NS", "ns",
     "virtual time: CPU time after polled data landed that counts as delivery, not computation",
     &TimingModel::poll_reaction_ns, TCA_NS},
    {"TCA_CPU_SLACK_NS", "ns",
     "virtual time: CPU time per interval between device calls taken as the emulation's own",
     &TimingModel::cpu_slack_ns, TCA_NS},
    {"TCA_MPI_SEND_NS", "ns", "virtual time: an MPI library's own cost to send one message",
     &TimingModel::mpi_send_ns, TCA_NS},
    {"TCA_MPI_RECV_NS", "ns", "virtual time: an MPI library's own cost to receive one message",
     &TimingModel::mpi_recv_ns, TCA_NS},
};
#undef TCA_NS
#undef TCA_MBS
#undef TCA_BYTES

double ns_for(double bytes, double mb_s) {
    return mb_s > 0 ? bytes * 1000.0 / mb_s : 0;
}
}  // namespace

std::span<const TimingModel::Parameter> TimingModel::parameters() {
    return kParameters;
}

double TimingModel::pio_ns(int hops) const noexcept {
    if (!enabled || hops <= 0)
        return 0;
    return pio_latency_ns + (hops - 1) * hop_latency_ns;
}

double TimingModel::pio_delay_ns(int hops) const noexcept {
    return std::max(0.0, pio_ns(hops) - pio_handoff_ns);
}

double TimingModel::transfer_ns(uint64_t width, uint64_t height, bool gpu) const noexcept {
    const double total = static_cast<double>(width) * static_cast<double>(height);
    if (height > 1) {  // row by row: each row a read request of its own
        const double rate = !gpu                      ? host_bandwidth_mb_s
                            : total > gpu_large_bytes ? gpu_2d_large_bandwidth_mb_s
                                                      : gpu_2d_bandwidth_mb_s;
        return static_cast<double>(height) *
               std::max(row_ns, ns_for(static_cast<double>(width), rate));
    }
    if (!gpu)
        return ns_for(total, host_bandwidth_mb_s);
    if (total <= gpu_small_bytes)
        return ns_for(total, gpu_small_bandwidth_mb_s);
    if (total > gpu_large_bytes)
        return ns_for(total, gpu_large_bandwidth_mb_s);
    return ns_for(total, gpu_bandwidth_mb_s);
}

DescriptorCost DescriptorCost::of(const Descriptor &d, int hops, bool table_mode) noexcept {
    return DescriptorCost{d.width,
                          d.height,
                          d.src.region == tcaMemoryGPU || d.dst.region == tcaMemoryGPU,
                          hops,
                          (d.flags & tcaDMAPipeline) != 0,
                          table_mode && !(d.flags & tcaDMAUseInternal)};
}

double TimingModel::one_way_dma_ns(uint64_t width, uint64_t height, bool gpu,
                                   int hops) const noexcept {
    return chain_start_ns + dma_latency_ns + std::max(0, hops - 1) * hop_latency_ns +
           transfer_ns(width, height, gpu);
}

double TimingModel::chain_ns(int n, uint64_t bytes_each, bool gpu, int hops, bool pipeline,
                             bool fetched) const noexcept {
    ChainClock c;
    TimingModel m = *this;
    m.enabled = true;
    m.dma_handoff_ns = 0;  // the hardware's time
    c.start(m, 0);
    int64_t done = 0;
    for (int i = 0; i < n; ++i)
        done = c.next(m, DescriptorCost{bytes_each, 1, gpu, hops, pipeline, fetched}).done_ns;
    return static_cast<double>(done);
}

void ChainClock::start(const TimingModel &m, int64_t now, bool table_mode) noexcept {
    table_mode_ = table_mode;
    if (!m.virtual_time)  // virtual time has no emulation cost to hide
        now -= static_cast<int64_t>(m.dma_handoff_ns);
    issue_ns_ = now + static_cast<int64_t>(m.chain_start_ns);
    last_done_ns_ = now;
    first_ = true;
}

// Descriptors issue one after the other (the next once the previous one's
// bytes have left); each lands a latency after it issued; data of a chain
// land in order.
ChainClock::Window ChainClock::next(const TimingModel &m, const DescriptorCost &d) noexcept {
    if (!first_ && !d.pipeline)
        issue_ns_ += static_cast<int64_t>(m.desc_gap_ns);
    if (d.fetched)
        issue_ns_ += static_cast<int64_t>(m.desc_fetch_ns);
    first_ = false;
    const auto xfer = static_cast<int64_t>(m.transfer_ns(d.width, d.height, d.gpu));
    const int64_t first_byte =
        issue_ns_ +
        static_cast<int64_t>(m.dma_latency_ns + std::max(0, d.hops - 1) * m.hop_latency_ns);
    const int64_t done = std::max(first_byte + xfer, last_done_ns_);
    issue_ns_ += xfer;
    last_done_ns_ = done;
    return {std::min(first_byte, done), done};
}

int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void spin_until_ns(int64_t deadline) noexcept {
    while (now_ns() < deadline) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

void spin_for_ns(double ns) noexcept {
    if (ns <= 0)
        return;
    spin_until_ns(now_ns() + static_cast<int64_t>(ns));
}

}  // namespace tca
