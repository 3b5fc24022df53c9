// notifications.hpp - "data landed" notifications (slot, tag).  A source posts
// into a ring in the receiver's segment after the data is visible; the
// receiver drains its own rings and counts tags, so any number of
// notifications with any tag order is kept (nothing is overwritten).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "loopback/node_set.hpp"

namespace tca::loopback {

// Producer side.  Only this process writes the rings (source = us) in the
// other nodes' segments, so a process-local lock orders our own threads.
class NotificationSender {
public:
    explicit NotificationSender(int num_nodes) : locks_(static_cast<size_t>(num_nodes)) {}
    // Post (slot, tag) from this node into node `target`'s ring.  Waits
    // (bounded) while the ring is full, i.e. the receiver has not consumed
    // kNotifyDepth of our earlier notifications on that slot; a failed wait
    // leaves the ring as it was.
    Result post(NodeSet &nodes, int target, int slot, int tag);

private:
    std::vector<std::mutex> locks_;
};

class NotificationInbox {
public:
    explicit NotificationInbox(int num_nodes)
        : queues_(static_cast<size_t>(num_nodes) * TCA_NOTIFY_SLOTS) {}

    // Consume one notification (slot, tag) sent by src_node.  block = false:
    // tcaErrorNotReady if none is there.  Once live() fails (the handle that
    // names the source is no longer registered) and nothing is queued, its
    // error: nobody will post any more.
    Result take(NodeSet &nodes, int src_node, int slot, int tag, bool block, const std::function<Result()> &live);

private:
    struct Queue {
        uint64_t cursor = 0;                          // next ring entry to read
        std::vector<std::pair<int, uint32_t>> tags;  // (tag, count) drained but not yet taken
    };
    bool try_take(NodeSet &nodes, int src_node, int slot, int tag);

    std::mutex lock_;
    std::vector<Queue> queues_;
};

}  // namespace tca::loopback
