// resources.hpp - who holds which DMA channel, counter and notification slot
// of this node.  The device layer is their one owner: btl tca, coll tca and
// applications acquire and release through it (tcaChannelAcquire, ...), so no
// two users of one process ever share one by convention or by accident.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "model/result.hpp"

namespace tca {

// Indices 0..size-1 of one kind.  An index is free, acquired, or used
// directly: loaded or started without being acquired (published programs
// name channel numbers); such an index is never handed out afterwards.
class ResourcePool {
public:
    // invalid_index: the error for an index outside 0..size-1.
    ResourcePool(int size, Result invalid_index);

    // A run of `count` consecutive free indices, the highest free run first:
    // published-style programs hardcode low numbers (channel 0, counter 0),
    // so the components keep clear of them as long as there is room.
    Result acquire(int count, int *first);
    // Gives back a run acquired earlier.  Every index must be held, or
    // nothing is released (tcaErrorNotAcquired): a double release is caught.
    Result release(int first, int count);
    // Marks a free index as used without acquisition (no-op otherwise).
    void note_direct_use(int idx);

    int size() const noexcept { return static_cast<int>(state_.size()); }
    int free_count() const;

private:
    enum State : uint8_t { Free = 0, Acquired = 1, Direct = 2 };
    bool valid(int first, int count) const noexcept {
        return first >= 0 && count >= 1 && count <= size() && first <= size() - count;
    }

    const Result invalid_index_;
    mutable std::mutex lock_;
    std::vector<State> state_;
};

// Every pool of one node.
struct ResourceTable {
    ResourceTable();
    ResourcePool channels;
    ResourcePool counters;
    ResourcePool slots;
};

}  // namespace tca
