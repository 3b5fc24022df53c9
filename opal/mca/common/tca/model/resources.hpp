// resources.hpp - who holds which DMA channel, counter and notification slot
// of this node.  The device layer is their one owner: btl tca, coll tca and
// applications acquire and release through it (tcaChannelAcquire, ...), so no
// two users of one process ever share one by convention or by accident.
#pragma once

#include "plugin_api.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "model/owned_id.hpp"
#include "model/result.hpp"

namespace tca {

// Indices 0..size-1 of one kind.  An index is free, acquired, or used
// directly: loaded or started without being acquired (published programs
// name channel numbers); such an index is never handed out afterwards.
// Acquired indices carry their owner's token (owned_id.hpp): only the id
// with that token uses or releases them.
class TCA_PLUGIN_API ResourcePool {
public:
    // invalid_index: the error for an index outside 0..size-1.
    ResourcePool(int size, Result invalid_index);

    // A run of `count` consecutive free indices, the highest free run first:
    // published-style programs hardcode low numbers (channel 0, counter 0),
    // so the components keep clear of them as long as there is room.
    // *first is the owned id of the first; *token (may be null) its token.
    Result acquire(int count, int *first, uint32_t *token = nullptr);
    // Gives back a run acquired earlier, by its owned id.  Every index must be
    // held with that token, or nothing is released (tcaErrorNotAcquired): a
    // double release, or a release by anyone but the holder, is caught.
    Result release(int first, int count);
    // The index an id names, if the caller may use it: the holder's id of an
    // acquired index, or a plain number of one nobody holds.  Lock-free.
    Result resolve(int id, int *index) const noexcept;
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
    std::unique_ptr<std::atomic<uint32_t>[]>
        token_;  // per index: its holder's token, 0 if not acquired
    uint32_t last_token_ = 0;
};

// Every pool of one node.
struct TCA_PLUGIN_API ResourceTable {
    ResourceTable();
    ResourcePool channels;
    ResourcePool counters;
    ResourcePool slots;
};

}  // namespace tca
