// liveness.cpp - see liveness.h.
#include "session/liveness.h"

#include <atomic>
#include <chrono>
#include <mutex>

#include "tca.h"

namespace {

std::atomic<uint64_t> dead_mask{0};
std::atomic<int64_t> next_sweep_ns{0};
std::mutex sweep_lock;  // one sweeper at a time; the others take what is known

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

extern "C" uint64_t tca_session_dead_nodes(int num_nodes) {
    const int64_t now = now_ns();
    if (now < next_sweep_ns.load(std::memory_order_acquire))
        return dead_mask.load(std::memory_order_acquire);
    std::unique_lock g(sweep_lock, std::try_to_lock);
    if (!g.owns_lock())
        return dead_mask.load(std::memory_order_acquire);
    next_sweep_ns.store(now + int64_t{TCA_LIVENESS_INTERVAL_MS} * 1'000'000,
                        std::memory_order_release);
    int self = -1;
    (void) tcaGetNodeId(&self);
    uint64_t dead = 0;
    for (int n = 0; n < num_nodes && n < 64; ++n) {
        int state = TCA_NODE_ALIVE;
        if (n != self && tcaNodeState(n, &state) == tcaSuccess && state == TCA_NODE_DEAD)
            dead |= uint64_t{1} << n;
    }
    return dead_mask.fetch_or(dead, std::memory_order_acq_rel) | dead;
}

extern "C" void tca_session_liveness_reset(void) {
    std::lock_guard g(sweep_lock);
    dead_mask.store(0, std::memory_order_release);
    next_sweep_ns.store(0, std::memory_order_release);
}
