// virtual_clock.hpp - one node's clock in virtual time (TCA_TIMING=virtual):
// what the program would read on PEACH2, whatever this host's load.
//
// The rules (docs/virtual-time.md), as in SimGrid/SMPI's online simulation:
//  - the program's own computation between two device calls is charged as
//    the application thread's CPU time, times cpu_factor (the target CPU
//    against this one); CPU time spent inside the device (waits, polls, the
//    emulation's copies and handoffs) is not charged;
//  - everything that lands carries a virtual arrival stamp (the model's
//    figures from the sender's clock); a wait that consumes a notification,
//    a channel completion or a counter moves the clock to at least its stamp
//    (advance_to), never further;
//  - data that lands without a notification is what a program polls for in
//    its own memory (PIO flags): it cannot say when it looked, so its next
//    device call takes the CPU time before the latest such landing as
//    polling and charges only what it ran after it (resume).
//
// Thread-safe: any thread may advance the clock or read it; only the
// application thread's CPU time is charged (the device decides who that is).
#pragma once

#include <atomic>
#include <cstdint>

#include "plugin_api.hpp"

namespace tca {

class TCA_PLUGIN_API VirtualClock {
public:
    // cpu_factor: the target CPU's time per CPU second here.  reaction_ns:
    // after data it polls for landed, the thread's first reaction_ns are the
    // emulation's delivery (the store reaching its core, its loop noticing
    // it, its way into the device), not its computation.  overhead_ns: the
    // CPU time one exit from and entry into the device cost outside it (the
    // clock reads, and a slack for this host's noise), taken off every
    // interval.
    explicit VirtualClock(double cpu_factor = 1.0, int64_t reaction_ns = 0,
                          int64_t overhead_ns = 0) noexcept
        : cpu_factor_(cpu_factor), reaction_ns_(reaction_ns), overhead_ns_(overhead_ns) {}

    int64_t now_ns() const noexcept { return ns_.load(std::memory_order_acquire); }
    double cpu_factor() const noexcept { return cpu_factor_; }

    // A consumed arrival: the clock becomes at least `stamp`.
    void advance_to(int64_t stamp) noexcept;
    // A modelled cost of the node's own (software per message): the clock moves by ns.
    void charge(int64_t ns) noexcept;

    // The application thread leaves the device having used `cpu_ns` of CPU
    // time so far (CLOCK_THREAD_CPUTIME_ID), at `wall_ns` (CLOCK_MONOTONIC).
    void pause(int64_t cpu_ns, int64_t wall_ns) noexcept;
    // It enters again at `cpu_ns`, `wall_ns`.  `polled`: data without a
    // notification landed in this node's memory since it left, the latest
    // at virtual time `stamp`, `wall_since_ns` ago.  If it landed later than
    // the clock stood when the thread left, the thread is taken to have
    // polled for it: the clock becomes stamp + what the thread ran after the
    // landing (times the factor) - the wall time since the landing less all
    // the time it spent off its core since it left (a wait for a core, a
    // sleep: taken as after the landing, so never charged) and less the
    // reaction; otherwise (or with no such landing) the whole interval's CPU
    // time is charged.  Either way less the overhead.
    struct Polled {
        bool any = false;
        int64_t stamp = 0;
        int64_t wall_since_ns = 0;
    };
    void resume(int64_t cpu_ns, int64_t wall_ns, const Polled &polled) noexcept;
    void resume(int64_t cpu_ns, int64_t wall_ns) noexcept;
    bool paused() const noexcept { return paused_; }

private:
    const double cpu_factor_;
    const int64_t reaction_ns_, overhead_ns_;
    std::atomic<int64_t> ns_{0};
    // Application thread only.
    bool paused_ = false;
    int64_t paused_cpu_ = 0;
    int64_t paused_wall_ = 0;
    int64_t paused_clock_ = 0;
};

// CPU time of the calling thread, and the monotonic wall clock, in ns.
TCA_PLUGIN_API int64_t thread_cpu_ns() noexcept;
TCA_PLUGIN_API int64_t monotonic_ns() noexcept;

}  // namespace tca
