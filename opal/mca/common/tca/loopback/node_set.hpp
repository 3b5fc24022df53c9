// node_set.hpp - this process's view of the sub-cluster: its own segment, the
// mapped segments of all peers, liveness, and the bounded wait every blocking
// call uses (spin briefly, then sleep on a futex, check the peer, time out).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "base/env_settings.hpp"
#include "loopback/launch_info.hpp"
#include "loopback/node_segment.hpp"
#include "model/result.hpp"

namespace tca::loopback {

// How long a put may wait for a peer's engine (the bounce path): until the
// deadline, and not once *cancel is non-zero (the DMA engine's stop or
// abort).  The default waits for ever (only the engine thread does).
// from_first_wait() starts the clock at the first over(), i.e. only once a
// put actually waits: almost every put never does, and a clock read costs
// about as much as a small put itself.  One bound belongs to one thread.
struct PutBound {
    using clock = std::chrono::steady_clock;
    mutable clock::time_point deadline = clock::time_point::max();
    const std::atomic<int> *cancel = nullptr;
    int64_t patience_ns = -1;  // >= 0: deadline not set yet, set by the first over()

    static PutBound within(int64_t ns, const std::atomic<int> *cancel = nullptr) {
        return {clock::now() + std::chrono::nanoseconds(ns), cancel};
    }
    static PutBound from_first_wait(int64_t ns, const std::atomic<int> *cancel = nullptr) {
        return {clock::time_point::max(), cancel, ns};
    }
    bool over() const noexcept {
        if (cancel != nullptr && cancel->load(std::memory_order_acquire) != 0)
            return true;
        if (deadline == clock::time_point::max()) {
            if (patience_ns >= 0)
                deadline = clock::now() + std::chrono::nanoseconds(patience_ns);
            return false;
        }
        return clock::now() >= deadline;
    }
};

class NodeSet {
public:
    NodeSet(LaunchInfo info, WaitPolicy policy) : info_(std::move(info)), policy_(policy) {}

    // Create our segment (state Creating); call publish_ready() once the
    // engine thread holds the alive lock, then attach_all().
    // stamps: with notification stamps (TCA_TIMING=virtual).
    Result create_own(uint64_t internal_size, bool stamps = false);
    void publish_ready();
    Result attach_all();
    // Wait (bounded, if wait_for_peers) until every live peer has mapped us,
    // mark Finalized and unlink our name.  Mappings stay until destruction.
    void finalize(bool wait_for_peers);

    int self() const noexcept { return info_.node_id; }
    int size() const noexcept { return info_.num_nodes; }
    const LaunchInfo &info() const noexcept { return info_; }
    const WaitPolicy &policy() const noexcept { return policy_; }
    SegmentView view(int node) const noexcept {
        return segments_[static_cast<size_t>(node)].view();
    }
    SegmentView own() const noexcept { return view(self()); }
    // Our segment's mask of posted bounce mailboxes, null before create_own:
    // MPI progress looks at it on every pass, so one load instead of the walk
    // through segments_ and the header (our mapping never moves once created).
    const std::atomic<uint64_t> *own_bounce_posted() const noexcept { return own_bounce_posted_; }
    // The shm name of a node's segment ("" before it is created or attached).
    const std::string &segment_name(int node) const noexcept {
        return segments_[static_cast<size_t>(node)].name();
    }

    // Alive or gone?  A node found dead gets its segment unlinked (cleanup by survivors).
    Liveness liveness(int node);
    bool gone(int node) {
        const Liveness l = liveness(node);
        return l == Liveness::Dead || l == Liveness::Finalized;
    }

    // Read-only check of the flags a peer leaves when it finished or was
    // found dead: cheap enough for every put (no write to the peer's lines).
    bool known_gone(int node) const noexcept {
        const SegmentHeader *h = view(node).header();
        return h->dead.load(std::memory_order_acquire) != 0 ||
               h->state.load(std::memory_order_acquire) ==
                   static_cast<uint32_t>(SegmentState::Finalized);
    }

    // Add to a node's counter and wake whoever waits on it there.
    // Counters by id (owned_id.hpp): an id whose token is not the counter's
    // holder's is refused (tcaErrorNotAcquired).  The add: atomic with that
    // check; past a 48-bit count, tcaErrorInvalidValue.
    // stamp: the add's virtual arrival (TCA_TIMING=virtual; 0 otherwise).
    Result counter_add(int node, int id, uint64_t v, int64_t stamp = 0) noexcept;
    Result counter_read(int id, uint64_t *value) const noexcept;
    // A new holder (token; 0: nobody) of one of our counters, the count reset to 0.
    void counter_claim(int index, uint32_t holder) noexcept;
    // A new holder (token; 0: nobody) of one of our notification slots.
    void slot_claim(int index, uint32_t holder) noexcept;
    // May a notification name slot `id` (index | token << 16) of `node`?
    // tcaErrorNotAcquired while someone else holds that slot there.
    Result slot_check(int node, int id) const noexcept;

    // Wait until ready() is true.  watch_node >= 0: fail with
    // tcaErrorPeerGone once that node is gone and ready() is still false.
    // Patience::WhilePeerLives: no timeout while watch_node lives (a note
    // every timeout period) - for waits on a peer's own work (the bounce
    // path), which bound themselves by a PutBound in ready(): the engine
    // thread waits for a stopped peer until a stop or abort interrupts it,
    // application threads until their own deadline.
    enum class Patience { Timeout, WhilePeerLives };
    template <class Ready>
    Result wait_until(EventWord &ev, Ready &&ready, int watch_node,
                      Patience patience = Patience::Timeout);

private:
    // Says once per wait period that a live node keeps us waiting.
    void note_unresponsive(int node, std::chrono::steady_clock::duration waited);

    LaunchInfo info_;
    WaitPolicy policy_;
    std::vector<MappedSegment> segments_;
    const std::atomic<uint64_t> *own_bounce_posted_ = nullptr;
    std::vector<uint8_t> unlinked_;
    std::mutex cleanup_lock_;
};

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

template <class Ready>
Result NodeSet::wait_until(EventWord &ev, Ready &&ready, int watch_node, Patience patience) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto spin_until = start + std::chrono::nanoseconds(policy_.spin_ns);
    do {
        if (ready())
            return tcaSuccess;
        cpu_relax();
    } while (clock::now() < spin_until);
    auto deadline = start + std::chrono::nanoseconds(policy_.timeout_ns);
    for (;;) {
        const uint32_t snap = ev.prepare();
        if (ready()) {
            ev.cancel();
            return tcaSuccess;
        }
        ev.wait(snap, 10'000'000);  // 10 ms: bounds how late a peer's death is noticed
        if (ready())
            return tcaSuccess;
        if (watch_node >= 0 && gone(watch_node))
            return ready() ? tcaSuccess : tcaErrorPeerGone;
        if (clock::now() >= deadline) {
            if (patience == Patience::Timeout || watch_node < 0)
                return tcaErrorTimeout;
            note_unresponsive(watch_node, clock::now() - start);
            deadline += std::chrono::nanoseconds(policy_.timeout_ns);
        }
    }
}

}  // namespace tca::loopback
