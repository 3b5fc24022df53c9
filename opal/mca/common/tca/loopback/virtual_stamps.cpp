// virtual_stamps.cpp - see virtual_stamps.hpp.
#include "loopback/virtual_stamps.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

namespace tca::loopback {

namespace {
long this_tid() noexcept {
    thread_local const long tid = syscall(SYS_gettid);
    return tid;
}
thread_local int g_depth = 0;  // the application thread's nesting in the device
thread_local int g_held = 0;   // ... of it in holds (tcaVirtualTimeHold)

// The CPU time one exit from the device and the next entry cost outside it
// when the program does nothing between them (the clock reads of pause and
// resume): the least of a few tries (a preempted one only adds).
int64_t exit_entry_overhead_ns() noexcept {
    int64_t least = INT64_MAX;
    for (int i = 0; i < 64; ++i) {
        VirtualClock probe;
        probe.pause(thread_cpu_ns(), monotonic_ns());
        probe.resume(thread_cpu_ns(), monotonic_ns());
        least = std::min(least, probe.now_ns());
    }
    return least;
}
}  // namespace

VirtualStamps::VirtualStamps(NodeSet &nodes, const TimingModel &timing) : nodes_(nodes) {
    if (timing.virtual_time)
        clock_ = std::make_unique<VirtualClock>(
            timing.cpu_factor, static_cast<int64_t>(timing.poll_reaction_ns),
            exit_entry_overhead_ns() + static_cast<int64_t>(timing.cpu_slack_ns));
}

void VirtualStamps::arm() noexcept {
    if (!clock_)
        return;
    app_tid_ = this_tid();  // tcaInit's thread: the application's
    // Whatever landed before we started is not something we polled for.
    polled_seen_.store(nodes_.own().header()->polled_count.load(std::memory_order_acquire),
                       std::memory_order_relaxed);
    leave_at_depth_zero();
}

void VirtualStamps::enter() noexcept {
    if (!clock_ || this_tid() != app_tid_)
        return;
    if (g_depth++ > 0) {
        // A call inside a held library call (btl tca sending from MPI): what
        // landed meanwhile was waited for, and what it sends follows it.
        consume_landings();
        return;
    }
    clock_->resume(thread_cpu_ns(), monotonic_ns(), take_polled());
}

void VirtualStamps::leave() noexcept {
    if (!clock_ || this_tid() != app_tid_ || g_depth == 0 || --g_depth > 0)
        return;
    leave_at_depth_zero();
}

void VirtualStamps::hold(bool on) noexcept {
    if (!clock_ || this_tid() != app_tid_)
        return;
    if (on) {
        enter();
        ++g_held;
        return;
    }
    if (g_held == 0)
        return;
    // The held call (an MPI receive) waited for what landed while it ran.
    if (--g_held == 0 && g_depth == 1)
        consume_landings();
    leave();
}

void VirtualStamps::consume_landings() noexcept {
    if (const VirtualClock::Polled p = take_polled(); p.any)
        clock_->advance_to(p.stamp);
}

void VirtualStamps::leave_at_depth_zero() noexcept {
    clock_->pause(thread_cpu_ns(), monotonic_ns());
}

VirtualClock::Polled VirtualStamps::take_polled() noexcept {
    SegmentHeader *h = nodes_.own().header();
    const uint64_t count = h->polled_count.load(std::memory_order_acquire);
    if (polled_seen_.exchange(count, std::memory_order_acq_rel) == count)
        return {};
    VirtualClock::Polled p;
    p.any = true;
    p.stamp = h->polled_stamp.load(std::memory_order_relaxed);
    p.wall_since_ns = monotonic_ns() - h->polled_wall_ns.load(std::memory_order_relaxed);
    return p;
}

void VirtualStamps::landing_unannounced(int node, int64_t stamp) noexcept {
    if (!clock_)
        return;
    SegmentHeader *h = nodes_.view(node).header();
    h->polled_wall_ns.store(monotonic_ns(), std::memory_order_relaxed);
    int64_t seen = h->polled_stamp.load(std::memory_order_relaxed);
    while (seen < stamp &&
           !h->polled_stamp.compare_exchange_weak(seen, stamp, std::memory_order_relaxed)) {
    }
    h->polled_count.fetch_add(1, std::memory_order_release);
}

}  // namespace tca::loopback
