// notify_inbox.hpp - the notifications that arrived at this node, counted
// per (source node, slot, tag) until tcaWaitDMARecvDesc takes one: counts
// are not limited here (the loopback's slots hold TCA_NOTIFY_DEPTH).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

namespace tca::ucx {

class NotifyInbox {
public:
    void add(int src, int slot, int tag) {
        std::lock_guard g(lock_);
        ++counts_[std::make_tuple(src, slot, tag)];
    }
    // One notification of (src, slot, tag) taken, if one is there.
    bool take(int src, int slot, int tag) {
        std::lock_guard g(lock_);
        auto it = counts_.find(std::make_tuple(src, slot, tag));
        if (it == counts_.end())
            return false;
        if (--it->second == 0)
            counts_.erase(it);
        return true;
    }

private:
    std::mutex lock_;  // a leaf: nothing else is taken under it
    std::map<std::tuple<int, int, int>, uint64_t> counts_;
};

}  // namespace tca::ucx
