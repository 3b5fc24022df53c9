// peer_arenas.hpp - this process's mappings of other nodes' shared-heap
// arenas (see shared_heap.hpp).  An arena is mapped on its first put and kept;
// a put then is a plain copy into the mapping.  A mapping whose arena the
// owner has replaced (its slot has a new serial) is dropped when noticed.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <vector>

#include "loopback/node_set.hpp"

namespace tca::loopback {

class PeerArenas {
public:
    explicit PeerArenas(NodeSet &nodes);
    ~PeerArenas();
    PeerArenas(const PeerArenas &) = delete;
    PeerArenas &operator=(const PeerArenas &) = delete;

    // Calls f(p) with p = the mapping of [offset, offset + len) of node's arena
    // in `slot`, held mapped until f returns.  tcaErrorNotRegistered if that
    // arena (slot, serial) is gone or the range is not inside it.
    template <class F>
    Result with(int node, uint32_t slot, uint64_t serial, uint64_t offset, uint64_t len, F &&f);

    uint64_t mapped() const noexcept;  // arenas mapped now (all nodes)

private:
    struct Mapping {
        uint64_t serial = 0;
        unsigned char *base = nullptr;
        uint64_t size = 0;
    };
    struct PerNode {
        mutable std::shared_mutex lock;  // shared while a copy uses a mapping
        std::array<Mapping, kMaxArenas> maps{};
    };
    Result map(int node, uint32_t slot, uint64_t serial);  // under the exclusive lock

    NodeSet &nodes_;
    std::vector<std::unique_ptr<PerNode>> per_node_;  // one per node, made up front
};

template <class F>
Result PeerArenas::with(int node, uint32_t slot, uint64_t serial, uint64_t offset, uint64_t len,
                        F &&f) {
    if (slot >= kMaxArenas || serial == 0)
        return tcaErrorNotRegistered;
    PerNode &pn = *per_node_[static_cast<size_t>(node)];
    for (int round = 0; round < 2; ++round) {
        {
            std::shared_lock g(pn.lock);
            const Mapping &m = pn.maps[slot];
            if (m.serial == serial) {
                if (offset > m.size || len > m.size - offset)
                    return tcaErrorNotRegistered;
                return f(m.base + offset);
            }
        }
        std::unique_lock g(pn.lock);
        if (pn.maps[slot].serial != serial)
            if (Result r = map(node, slot, serial); r != tcaSuccess)
                return r;
    }
    return tcaErrorNotRegistered;
}

}  // namespace tca::loopback
