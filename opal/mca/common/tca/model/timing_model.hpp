// timing_model.hpp - optional delays that make the loopback behave like PEACH2
// hardware (hop latency, link bandwidth, descriptor fetch).  Off by default.
#pragma once

#include <cstdint>

namespace tca {

struct TimingModel {
    bool enabled = false;
    double pio_latency_ns = 782;      // adjacent-node PIO write (TCA_PIO_LATENCY_NS)
    double hop_latency_ns = 250;      // each extra hop (TCA_HOP_LATENCY_NS)
    double bandwidth_mb_s = 3300;     // DMA link bandwidth in MB/s (TCA_LINK_BANDWIDTH_MBS)
    double desc_fetch_ns = 150;       // fetching one descriptor from the host table (TCA_DESC_FETCH_NS)
    double chain_start_ns = 500;      // kicking a channel (TCA_CHAIN_START_NS)

    // Reads TCA_TIMING=1 and the variables above.
    static TimingModel from_environment();

    double pio_ns(int hops) const noexcept;
    double dma_ns(uint64_t bytes, int hops) const noexcept;
    double chain_start_cost_ns(int descriptors, bool register_mode) const noexcept;
};

// Busy-wait for ns nanoseconds (a sleep is far too coarse for 782 ns).
void spin_for_ns(double ns) noexcept;

}  // namespace tca
