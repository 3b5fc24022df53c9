// virtual_clock.cpp - the rules of virtual_clock.hpp.
#include "model/virtual_clock.hpp"

#include <time.h>

#include <algorithm>

namespace tca {

void VirtualClock::advance_to(int64_t stamp) noexcept {
    int64_t seen = ns_.load(std::memory_order_relaxed);
    while (seen < stamp && !ns_.compare_exchange_weak(seen, stamp, std::memory_order_acq_rel,
                                                      std::memory_order_relaxed)) {
    }
}

void VirtualClock::charge(int64_t ns) noexcept {
    if (ns > 0)
        ns_.fetch_add(ns, std::memory_order_acq_rel);
}

void VirtualClock::pause(int64_t cpu_ns, int64_t wall_ns) noexcept {
    paused_ = true;
    paused_cpu_ = cpu_ns;
    paused_wall_ = wall_ns;
    paused_clock_ = now_ns();
}

void VirtualClock::resume(int64_t cpu_ns, int64_t wall_ns, const Polled &polled) noexcept {
    if (!paused_)
        return;
    paused_ = false;
    const int64_t ran = std::max<int64_t>(0, cpu_ns - paused_cpu_ - overhead_ns_);
    auto scaled = [this](int64_t ns) {
        return static_cast<int64_t>(static_cast<double>(ns) * cpu_factor_);
    };
    if (polled.any && polled.stamp > paused_clock_) {
        // Polled for it: waiting costs nothing, the work after it does.
        const int64_t off_core = std::max<int64_t>(0, (wall_ns - paused_wall_) - ran);
        const int64_t after =
            std::clamp<int64_t>(polled.wall_since_ns - off_core - reaction_ns_, 0, ran);
        advance_to(polled.stamp + scaled(after));
        return;
    }
    // Other threads may have moved the clock meanwhile (a wait of the
    // progress thread): the computation follows whatever it consumed.
    charge(scaled(ran));
}

void VirtualClock::resume(int64_t cpu_ns, int64_t wall_ns) noexcept {
    resume(cpu_ns, wall_ns, Polled{});
}

namespace {
int64_t read_clock(clockid_t c) noexcept {
    timespec ts{};
    clock_gettime(c, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

int64_t thread_cpu_ns() noexcept {
    return read_clock(CLOCK_THREAD_CPUTIME_ID);
}

int64_t monotonic_ns() noexcept {
    return read_clock(CLOCK_MONOTONIC);
}

}  // namespace tca
