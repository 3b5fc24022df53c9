// timing_model.cpp - PEACH2 costs from the publications: 782 ns adjacent PIO,
// 200-300 ns per extra hop, 3.3 GB/s DMA, descriptor fetch only in table mode.
#include "model/timing_model.hpp"

#include <chrono>
#include <cstdlib>

namespace tca {

namespace {
double env_double(const char *name, double fallback) {
    const char *v = std::getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    char *end = nullptr;
    const double d = std::strtod(v, &end);
    return (end != v && d >= 0) ? d : fallback;
}
}  // namespace

TimingModel TimingModel::from_environment() {
    TimingModel m;
    const char *on = std::getenv("TCA_TIMING");
    m.enabled = on != nullptr && on[0] != '\0' && on[0] != '0';
    m.pio_latency_ns = env_double("TCA_PIO_LATENCY_NS", m.pio_latency_ns);
    m.hop_latency_ns = env_double("TCA_HOP_LATENCY_NS", m.hop_latency_ns);
    m.bandwidth_mb_s = env_double("TCA_LINK_BANDWIDTH_MBS", m.bandwidth_mb_s);
    m.desc_fetch_ns = env_double("TCA_DESC_FETCH_NS", m.desc_fetch_ns);
    m.chain_start_ns = env_double("TCA_CHAIN_START_NS", m.chain_start_ns);
    return m;
}

double TimingModel::pio_ns(int hops) const noexcept {
    if (!enabled || hops <= 0) return 0;
    return pio_latency_ns + (hops - 1) * hop_latency_ns;
}

double TimingModel::dma_ns(uint64_t bytes, int hops) const noexcept {
    if (!enabled) return 0;
    const double wire = bandwidth_mb_s > 0 ? static_cast<double>(bytes) * 1000.0 / bandwidth_mb_s : 0;
    return wire + (hops > 0 ? pio_latency_ns + (hops - 1) * hop_latency_ns : 0);
}

double TimingModel::chain_start_cost_ns(int descriptors, bool register_mode) const noexcept {
    if (!enabled) return 0;
    return chain_start_ns + (register_mode ? 0.0 : descriptors * desc_fetch_ns);
}

void spin_for_ns(double ns) noexcept {
    if (ns <= 0) return;
    using clock = std::chrono::steady_clock;
    const auto until = clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(ns));
    while (clock::now() < until) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

}  // namespace tca
