// notifications.hpp - "data landed" notifications (slot, tag), counted per
// (source node, slot, tag) in the receiver's segment.  Posting never waits:
// any number of notifications is kept (none overwritten, none merged), and
// notifications nobody waits for hold up neither the sender nor other slots.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "loopback/node_set.hpp"

namespace tca::loopback {

// Producer side: the source node's threads claim tag entries by CAS, so no
// lock is needed.
class NotificationSender {
public:
    // Post (slot, tag) from this node to node `target`, after the data it
    // announces is visible (release).  tcaErrorNoResource, with a message,
    // when this node already used kNotifyTags other tags on that slot there.
    // stamp: its virtual arrival (TCA_TIMING=virtual; 0 otherwise).
    Result post(NodeSet &nodes, int target, int slot, int tag, int64_t stamp = 0);

    // For a write with `flags` (tcaDMANotify: to dst_node, tcaDMANotifySelf:
    // to us) naming slot id `slot_id` (index | holder token << 16): before the
    // data is written, whether every receiver takes it (tcaErrorNotAcquired
    // where someone else holds that slot there); after, post them all.
    Result admit(const NodeSet &nodes, int dst_node, int flags, int slot_id) const;
    Result post_all(NodeSet &nodes, int dst_node, int flags, int slot_id, int tag,
                    int64_t stamp = 0);
};

class NotificationInbox {
public:
    explicit NotificationInbox(int num_nodes)
        : consumed_(static_cast<size_t>(num_nodes) * TCA_NOTIFY_SLOTS * kNotifyTags, 0) {}

    // Consume one notification (slot, tag) sent by src_node.  block = false:
    // tcaErrorNotReady if none is there.  Once live() fails (the handle that
    // names the source is no longer registered) and nothing is there, its
    // error: nobody will post any more.  A blocking take calls drive()
    // between looks (the loopback device runs pending DMA on the waiter).
    // stamp (if given): the consumed notification's virtual arrival.
    Result take(NodeSet &nodes, int src_node, int slot, int tag, bool block,
                const std::function<Result()> &live, const std::function<void()> &drive = {},
                int64_t *stamp = nullptr);

private:
    bool try_take(NodeSet &nodes, int src_node, int slot, int tag, int64_t *stamp);

    std::mutex lock_;                 // consumers of this process
    std::vector<uint64_t> consumed_;  // per (source, slot, entry): notifications taken
};

}  // namespace tca::loopback
