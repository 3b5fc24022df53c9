// virtual_stamps.hpp - the loopback device's side of TCA_TIMING=virtual: the
// node's VirtualClock, the application thread's entries into and exits from
// the device, and the record of data that lands in a node's memory without
// a notification (virtual_clock.hpp has the rules).  Inactive (every call a
// no-op, clock() nullptr) unless the timing model runs in virtual time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "loopback/node_set.hpp"
#include "model/timing_model.hpp"
#include "model/virtual_clock.hpp"

namespace tca::loopback {

class VirtualStamps {
public:
    // Made on the thread that calls tcaInit: the application thread.
    VirtualStamps(NodeSet &nodes, const TimingModel &timing);
    // On tcaInit's thread (the application's), once the node's segment
    // exists: the clock starts, paused, at 0.
    void arm() noexcept;

    VirtualClock *clock() noexcept { return clock_.get(); }
    bool on() const noexcept { return clock_ != nullptr; }
    int64_t now_ns() const noexcept { return clock_ ? clock_->now_ns() : 0; }

    // The application thread enters / leaves the device (nested calls
    // count once); other threads' calls charge nothing.
    void enter() noexcept;
    void leave() noexcept;
    // tcaVirtualTimeHold: the application thread inside a library call whose
    // cost is modelled (an MPI call): nothing of its CPU time is charged,
    // and what lands while it is inside moves the clock (it waits for it).
    void hold(bool on) noexcept;
    // What landed unannounced since the last look moves the clock (any
    // thread: a library's progress thread answering a message).
    void consume_landings() noexcept;

    // Data is about to land at `stamp` in node's memory and no notification
    // tells it there: the node polls for it (its next entry charges only the
    // time it ran after the landing).  Called before the data is written, so
    // a node that saw the data sees the landing.
    void landing_unannounced(int node, int64_t stamp) noexcept;

    // A consumed arrival (a notification, a run, a counter).
    void advance_to(int64_t stamp) noexcept {
        if (clock_ && stamp > 0)
            clock_->advance_to(stamp);
    }

private:
    VirtualClock::Polled take_polled() noexcept;
    void leave_at_depth_zero() noexcept;

    NodeSet &nodes_;
    std::unique_ptr<VirtualClock> clock_;
    // Application thread only:
    long app_tid_ = -1;
    std::atomic<uint64_t> polled_seen_{0};  // landings looked at
};

}  // namespace tca::loopback
