// node_set.cpp - start-up rendezvous through the segments themselves (no
// launcher needed), liveness and cleanup.
#include "loopback/node_set.hpp"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "base/env_settings.hpp"
#include "loopback/shm_scan.hpp"
#include "model/owned_id.hpp"

namespace tca::loopback {

Result NodeSet::create_own(uint64_t internal_size, bool stamps) {
    segments_.clear();
    segments_.resize(static_cast<size_t>(size()));
    unlinked_.assign(static_cast<size_t>(size()), 0);
    own_bounce_posted_ = nullptr;
    remove_stale_segments();  // the next start cleans what a killed job left
    const Result r = segments_[static_cast<size_t>(self())].create(info_.job_key, self(), size(),
                                                                   internal_size, stamps);
    if (r == tcaSuccess)
        own_bounce_posted_ = &own().header()->bounce_posted;
    return r;
}

void NodeSet::publish_ready() {
    own().header()->state.store(static_cast<uint32_t>(SegmentState::Ready),
                                std::memory_order_release);
}

Result NodeSet::attach_all() {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::nanoseconds(policy_.timeout_ns);
    own().header()->attached_mask.fetch_or(1ull << self(), std::memory_order_acq_rel);
    for (int n = 0; n < size(); ++n) {
        if (n == self())
            continue;
        auto &seg = segments_[static_cast<size_t>(n)];
        ShmDirStamp unseen;
        for (int spins = 0;; ++spins) {
            const Result r = seg.attach(info_.job_key, n, size(), &unseen);
            if (r == tcaSuccess)
                break;
            if (r != tcaErrorNotReady)
                return r;
            if (clock::now() >= deadline) {
                std::fprintf(stderr,
                             "tca: node %d: node %d of job '%s' did not start within the timeout\n",
                             self(), n, info_.job_key.c_str());
                return tcaErrorTimeout;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(spins < 100 ? 50 : 1000));
        }
        seg.view().header()->attached_mask.fetch_or(1ull << self(), std::memory_order_acq_rel);
    }
    return tcaSuccess;
}

void NodeSet::finalize(bool wait_for_peers) {
    if (segments_.empty() || !segments_[static_cast<size_t>(self())].mapped())
        return;
    SegmentHeader *h = own().header();
    // Wait (bounded) until every peer has mapped us, so a slow starter does not
    // find our name gone; dead or finished peers will never map us.
    const uint64_t all = size() >= 64 ? ~0ull : ((1ull << size()) - 1);
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::nanoseconds(policy_.timeout_ns);
    while (wait_for_peers && (h->attached_mask.load(std::memory_order_acquire) & all) != all &&
           clock::now() < deadline) {
        bool missing_live = false;
        for (int n = 0; n < size(); ++n)
            if (!(h->attached_mask.load(std::memory_order_acquire) & (1ull << n)) && n != self()) {
                auto &seg = segments_[static_cast<size_t>(n)];
                if (!seg.mapped() || !gone(n))
                    missing_live = true;
            }
        if (!missing_live)
            break;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    h->state.store(static_cast<uint32_t>(SegmentState::Finalized), std::memory_order_release);
    h->app_event.notify();
    unlink_segment(segments_[static_cast<size_t>(self())].name());  // with our arenas
}

Liveness NodeSet::liveness(int node) {
    auto &seg = segments_[static_cast<size_t>(node)];
    if (!seg.mapped())
        return Liveness::Dead;
    const Liveness l = check_liveness(seg.view().header());
    if (l == Liveness::Dead) {
        std::lock_guard g(cleanup_lock_);
        if (!unlinked_[static_cast<size_t>(node)]) {
            unlinked_[static_cast<size_t>(node)] = 1;
            unlink_segment(seg.name());  // and its shared-heap arenas
            std::fprintf(stderr, "tca: node %d: node %d (pid %d) died; removed its segment\n",
                         self(), node, static_cast<int>(seg.view().header()->pid));
        }
    }
    return l;
}

void NodeSet::note_unresponsive(int node, std::chrono::steady_clock::duration waited) {
    const auto s = std::chrono::duration_cast<std::chrono::seconds>(waited).count();
    std::fprintf(
        stderr,
        "tca: node %d: node %d (pid %d) is alive but has not answered for %lld s (stopped?); "
        "still waiting\n",
        self(), node, static_cast<int>(view(node).header()->pid), static_cast<long long>(s));
}

Result NodeSet::counter_add(int node, int id, uint64_t v, int64_t stamp) noexcept {
    const SegmentView s = view(node);
    std::atomic<uint64_t> &word = s.counter(owned_index(id));
    const uint32_t holder = owned_token(id);
    if (stamp != 0) {  // before the add's release: a reader of the count sees it
        std::atomic<int64_t> &at = s.counter_stamp(owned_index(id));
        int64_t seen = at.load(std::memory_order_relaxed);
        while (seen < stamp && !at.compare_exchange_weak(seen, stamp, std::memory_order_relaxed)) {
        }
    }
    uint64_t cur = word.load(std::memory_order_relaxed);
    do {
        if (counter_holder(cur) != holder)
            return tcaErrorNotAcquired;  // held by another, or released
        if (v > kCounterValueMask - counter_count(cur))
            return tcaErrorInvalidValue;  // past 2^48
    } while (!word.compare_exchange_weak(cur, cur + v, std::memory_order_acq_rel,
                                         std::memory_order_relaxed));
    // No engine wake-up: a counter can only release a triggered descriptor of
    // a running chain, and an engine with a running chain looks at its
    // triggers by itself (DmaEngine::run).  A wake per counter add would cost
    // a syscall and a context switch per hop.
    s.header()->app_event.notify();
    return tcaSuccess;
}

Result NodeSet::counter_read(int id, uint64_t *value) const noexcept {
    const uint64_t w = own().counter(owned_index(id)).load(std::memory_order_acquire);
    if (counter_holder(w) != owned_token(id))
        return tcaErrorNotAcquired;
    *value = counter_count(w);
    return tcaSuccess;
}

void NodeSet::counter_claim(int index, uint32_t holder) noexcept {
    own().counter(index).store(uint64_t{holder} << kCounterTokenShift, std::memory_order_release);
}

void NodeSet::slot_claim(int index, uint32_t holder) noexcept {
    own().header()->slot_holder[index].store(holder, std::memory_order_release);
}

Result NodeSet::slot_check(int node, int id) const noexcept {
    const uint32_t holder =
        view(node).header()->slot_holder[owned_index(id)].load(std::memory_order_acquire);
    return holder == 0 || holder == owned_token(id) ? tcaSuccess : tcaErrorNotAcquired;
}

}  // namespace tca::loopback
