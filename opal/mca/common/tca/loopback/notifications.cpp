// notifications.cpp - ring protocol: entry = (seq+1) << 32 | tag, published
// with a release store; the receiver acquires it, so the data written before
// the post is visible when the notification is.
#include "loopback/notifications.hpp"

#include <algorithm>

namespace tca::loopback {

Result NotificationSender::post(NodeSet &nodes, int target, int slot, int tag) {
    const SegmentView dst = nodes.view(target);
    NotifyRing *ring = dst.ring(static_cast<uint32_t>(nodes.self()), static_cast<uint32_t>(slot));
    std::lock_guard g(locks_[static_cast<size_t>(target)]);
    const uint64_t ticket = ring->reserve.load(std::memory_order_relaxed);
    auto has_room = [&] { return ticket - ring->drained.load(std::memory_order_acquire) < kNotifyDepth; };
    if (!has_room()) {
        // The receiver bumps its app_event whenever it drains a ring.
        const Result r = nodes.wait_until(dst.header()->app_event, has_room, target);
        if (r != tcaSuccess) return r;
    }
    const uint64_t entry = ((ticket + 1) << 32) | static_cast<uint32_t>(tag);
    ring->entries[ticket % kNotifyDepth].store(entry, std::memory_order_release);
    ring->reserve.store(ticket + 1, std::memory_order_relaxed);
    dst.header()->app_event.notify();
    return tcaSuccess;
}

bool NotificationInbox::try_take(NodeSet &nodes, int src_node, int slot, int tag) {
    Queue &q = queues_[static_cast<size_t>(src_node) * TCA_NOTIFY_SLOTS + static_cast<size_t>(slot)];
    NotifyRing *ring = nodes.own().ring(static_cast<uint32_t>(src_node), static_cast<uint32_t>(slot));
    const uint64_t before = q.cursor;
    for (;;) {
        const uint64_t e = ring->entries[q.cursor % kNotifyDepth].load(std::memory_order_acquire);
        if ((e >> 32) != static_cast<uint32_t>(q.cursor + 1)) break;
        const int t = static_cast<int>(static_cast<uint32_t>(e));
        auto it = std::find_if(q.tags.begin(), q.tags.end(), [t](const auto &p) { return p.first == t; });
        if (it == q.tags.end()) q.tags.emplace_back(t, 1);
        else ++it->second;
        ++q.cursor;
    }
    if (q.cursor != before) {
        ring->drained.store(q.cursor, std::memory_order_release);
        // A producer may be waiting for room on our event word.
        nodes.own().header()->app_event.notify();
    }
    auto it = std::find_if(q.tags.begin(), q.tags.end(), [tag](const auto &p) { return p.first == tag; });
    if (it == q.tags.end()) return false;
    if (--it->second == 0) q.tags.erase(it);
    return true;
}

Result NotificationInbox::take(NodeSet &nodes, int src_node, int slot, int tag, bool block,
                               const std::function<Result()> &live) {
    auto attempt = [&] {
        std::lock_guard g(lock_);
        return try_take(nodes, src_node, slot, tag);
    };
    Result outcome = tcaErrorNotReady;
    auto settled = [&] {
        if (attempt()) {
            outcome = tcaSuccess;
            return true;
        }
        if (const Result r = live ? live() : tcaSuccess; r != tcaSuccess) {
            outcome = attempt() ? tcaSuccess : r;  // once more: a post before the change is visible now
            return true;
        }
        return false;
    };
    if (!block) {
        settled();
        return outcome;
    }
    const int watch = src_node == nodes.self() ? -1 : src_node;
    const Result r = nodes.wait_until(nodes.own().header()->app_event, settled, watch);
    return r == tcaSuccess ? outcome : r;
}

}  // namespace tca::loopback
