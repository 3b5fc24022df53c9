// notifications.cpp - count protocol: per (source, slot) a few words, one per
// tag with notifications outstanding (tag << 32 | claimed | count).  The
// sender adds to its tag's count by CAS with release after the data is
// written; the receiver compares the count with what it consumed using an
// acquire load, so the data is visible when the notification is, and frees
// the word once it consumed everything in it.  Only the receiver frees a word
// and only the sender adds, so neither sees a word change under it in any
// other way (no ABA).  Two threads of one sender may claim two words for one
// tag at once; the receiver takes from either.
#include "loopback/notifications.hpp"

#include <cstdio>

#include "model/owned_id.hpp"

namespace tca::loopback {

namespace {
constexpr uint64_t kClaimed = NotifyTable::kClaimed, kCountMask = NotifyTable::kCountMask;
uint64_t tag_bits(int tag) noexcept {
    return static_cast<uint64_t>(static_cast<uint32_t>(tag)) << 32;
}
bool holds(uint64_t word, int tag) noexcept {
    return word != 0 && (word & ~(kClaimed | kCountMask)) == tag_bits(tag);
}
uint64_t plus_one(uint64_t word) noexcept {
    return (word & ~kCountMask) | ((word + 1) & kCountMask);
}
// The stamp of the notification that follows `word`'s count in word i (a
// receiver not in virtual time keeps none).
void put_stamp(NotifyStamps *stamps, size_t i, uint64_t word, int64_t stamp) noexcept {
    if (stamp != 0 && stamps != nullptr)
        stamps->at[i][(word & kCountMask) % kStampRing].store(stamp, std::memory_order_relaxed);
}
}  // namespace

Result NotificationSender::post(NodeSet &nodes, int target, int slot, int tag, int64_t stamp) {
    const SegmentView dst = nodes.view(target);
    NotifyTable *table =
        dst.notify_table(static_cast<uint32_t>(nodes.self()), static_cast<uint32_t>(slot));
    NotifyStamps *stamps =
        dst.notify_stamps(static_cast<uint32_t>(nodes.self()), static_cast<uint32_t>(slot));
    for (;;) {
        std::atomic<uint64_t> *free_word = nullptr;
        bool raced = false;
        for (std::atomic<uint64_t> &w : table->words) {
            uint64_t seen = w.load(std::memory_order_relaxed);
            if (seen == 0) {
                if (free_word == nullptr)
                    free_word = &w;
                continue;
            }
            if (!holds(seen, tag))
                continue;
            // Our tag: add one, unless the receiver freed the word meanwhile.
            // The stamp goes first, under the number this post will have.
            const size_t i = static_cast<size_t>(&w - table->words);
            while (holds(seen, tag) &&
                   (put_stamp(stamps, i, seen, stamp),
                    !w.compare_exchange_weak(seen, plus_one(seen), std::memory_order_release,
                                             std::memory_order_relaxed))) {
            }
            if (holds(seen, tag)) {
                dst.header()->app_event.notify();
                return tcaSuccess;
            }
            raced = true;  // freed under us: look again
            break;
        }
        if (raced)
            continue;
        if (free_word == nullptr)
            break;
        uint64_t expected = 0;
        put_stamp(stamps, static_cast<size_t>(free_word - table->words), 0, stamp);
        if (free_word->compare_exchange_strong(expected, tag_bits(tag) | kClaimed | 1,
                                               std::memory_order_release,
                                               std::memory_order_relaxed)) {
            dst.header()->app_event.notify();
            return tcaSuccess;
        }
        // Another thread of ours claimed it: look again.
    }
    std::fprintf(
        stderr,
        "tca: node %d: notification (slot %d, tag %d) to node %d not posted: node %d already has "
        "notifications of TCA_NOTIFY_TAGS = %u other tags unconsumed on that slot there (the limit "
        "of "
        "tags outstanding per source and slot; counts per tag are not limited)\n",
        nodes.self(), slot, tag, target, nodes.self(), kNotifyTags);
    return tcaErrorNoResource;
}

Result NotificationSender::admit(const NodeSet &nodes, int dst_node, int flags, int slot_id) const {
    if (flags & tcaDMANotify)
        if (Result r = nodes.slot_check(dst_node, slot_id); r != tcaSuccess)
            return r;
    if (flags & tcaDMANotifySelf)
        if (Result r = nodes.slot_check(nodes.self(), slot_id); r != tcaSuccess)
            return r;
    return tcaSuccess;
}

Result NotificationSender::post_all(NodeSet &nodes, int dst_node, int flags, int slot_id, int tag,
                                    int64_t stamp) {
    const int slot = owned_index(slot_id);
    if (flags & tcaDMANotify)
        if (Result r = post(nodes, dst_node, slot, tag, stamp); r != tcaSuccess)
            return r;
    if (flags & tcaDMANotifySelf)
        if (Result r = post(nodes, nodes.self(), slot, tag, stamp); r != tcaSuccess)
            return r;
    return tcaSuccess;
}

bool NotificationInbox::try_take(NodeSet &nodes, int src_node, int slot, int tag, int64_t *stamp) {
    NotifyTable *table =
        nodes.own().notify_table(static_cast<uint32_t>(src_node), static_cast<uint32_t>(slot));
    const size_t base =
        (static_cast<size_t>(src_node) * TCA_NOTIFY_SLOTS + static_cast<size_t>(slot)) *
        kNotifyTags;
    for (uint32_t i = 0; i < kNotifyTags; ++i) {
        std::atomic<uint64_t> &w = table->words[i];
        const uint64_t seen = w.load(std::memory_order_acquire);
        if (!holds(seen, tag))
            continue;
        uint64_t &consumed = consumed_[base + i];
        if ((seen & kCountMask) == consumed)
            continue;
        if (stamp != nullptr)
            if (const NotifyStamps *st = nodes.own().notify_stamps(static_cast<uint32_t>(src_node),
                                                                   static_cast<uint32_t>(slot)))
                *stamp = st->at[i][consumed % kStampRing].load(std::memory_order_relaxed);
        consumed = (consumed + 1) & kCountMask;
        // All of it consumed: free the word, unless the sender added meanwhile.
        uint64_t expected = seen;
        if (consumed == (seen & kCountMask) &&
            w.compare_exchange_strong(expected, 0, std::memory_order_relaxed,
                                      std::memory_order_relaxed))
            consumed = 0;
        return true;
    }
    return false;
}

Result NotificationInbox::take(NodeSet &nodes, int src_node, int slot, int tag, bool block,
                               const std::function<Result()> &live,
                               const std::function<void()> &drive, int64_t *stamp) {
    auto attempt = [&] {
        std::lock_guard g(lock_);
        return try_take(nodes, src_node, slot, tag, stamp);
    };
    Result outcome = tcaErrorNotReady;
    auto settled = [&] {
        if (attempt()) {
            outcome = tcaSuccess;
            return true;
        }
        if (block && drive) {
            drive();
            if (attempt()) {
                outcome = tcaSuccess;
                return true;
            }
        }
        if (const Result r = live ? live() : tcaSuccess; r != tcaSuccess) {
            outcome =
                attempt() ? tcaSuccess : r;  // once more: a post before the change is visible now
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
