// resources.cpp - the allocator behind tcaChannelAcquire / tcaCounterAcquire /
// tcaSlotAcquire: a state per index under one lock (a few hundred entries,
// taken at init time of a request, never on a data path).
#include "model/resources.hpp"

#include <algorithm>

namespace tca {

ResourcePool::ResourcePool(int size, Result invalid_index)
    : invalid_index_(invalid_index), state_(static_cast<size_t>(size), Free) {}

Result ResourcePool::acquire(int count, int *first) {
    if (first == nullptr || count < 1 || count > size()) return tcaErrorInvalidValue;  // could never succeed
    *first = -1;
    std::lock_guard g(lock_);
    int run = 0;  // free indices found so far, scanning down
    for (int i = size() - 1; i >= 0; --i) {
        run = state_[static_cast<size_t>(i)] == Free ? run + 1 : 0;
        if (run == count) {
            std::fill_n(state_.begin() + i, count, Acquired);
            *first = i;
            return tcaSuccess;
        }
    }
    return tcaErrorNoResource;
}

Result ResourcePool::release(int first, int count) {
    if (count < 1) return tcaErrorInvalidValue;
    if (!valid(first, count)) return invalid_index_;
    std::lock_guard g(lock_);
    const auto begin = state_.begin() + first;
    if (!std::all_of(begin, begin + count, [](State s) { return s == Acquired; })) return tcaErrorNotAcquired;
    std::fill_n(begin, count, Free);
    return tcaSuccess;
}

void ResourcePool::note_direct_use(int idx) {
    if (!valid(idx, 1)) return;
    std::lock_guard g(lock_);
    State &s = state_[static_cast<size_t>(idx)];
    if (s == Free) s = Direct;
}

int ResourcePool::free_count() const {
    std::lock_guard g(lock_);
    return static_cast<int>(std::count(state_.begin(), state_.end(), Free));
}

ResourceTable::ResourceTable()
    : channels(TCA_NUM_DMA_CHANNELS, tcaErrorInvalidChannel),
      counters(TCA_NUM_COUNTERS, tcaErrorInvalidCounter),
      slots(TCA_NOTIFY_SLOTS, tcaErrorInvalidSlot) {}

}  // namespace tca
