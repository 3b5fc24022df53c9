// resources.cpp - the allocator behind tcaChannelAcquire / tcaCounterAcquire /
// tcaSlotAcquire: a state per index under one lock (a few hundred entries,
// taken at init time of a request, never on a data path).
#include "model/resources.hpp"

#include <algorithm>

namespace tca {

ResourcePool::ResourcePool(int size, Result invalid_index)
    : invalid_index_(invalid_index), state_(static_cast<size_t>(size), Free),
      token_(std::make_unique<std::atomic<uint32_t>[]>(static_cast<size_t>(size))) {}

Result ResourcePool::acquire(int count, int *first, uint32_t *token) {
    if (first == nullptr || count < 1 || count > size())
        return tcaErrorInvalidValue;  // could never succeed
    *first = -1;
    std::lock_guard g(lock_);
    int run = 0;  // free indices found so far, scanning down
    for (int i = size() - 1; i >= 0; --i) {
        run = state_[static_cast<size_t>(i)] == Free ? run + 1 : 0;
        if (run == count) {
            // Tokens cycle through 1..kMaxOwnerToken: an id kept 32767
            // acquisitions past its release would pass again (ids are
            // not secrets; this catches mistakes, not forgery).
            last_token_ = last_token_ % kMaxOwnerToken + 1;
            std::fill_n(state_.begin() + i, count, Acquired);
            for (int j = i; j < i + count; ++j)
                token_[static_cast<size_t>(j)].store(last_token_, std::memory_order_release);
            *first = owned_id(i, last_token_);
            if (token != nullptr)
                *token = last_token_;
            return tcaSuccess;
        }
    }
    return tcaErrorNoResource;
}

Result ResourcePool::release(int first_id, int count) {
    if (count < 1)
        return tcaErrorInvalidValue;
    const int first = owned_index(first_id);
    const uint32_t token = owned_token(first_id);
    if (first_id < 0 || !valid(first, count))
        return invalid_index_;
    std::lock_guard g(lock_);
    for (int j = first; j < first + count; ++j)
        if (state_[static_cast<size_t>(j)] != Acquired ||
            token_[static_cast<size_t>(j)].load(std::memory_order_relaxed) != token)
            return tcaErrorNotAcquired;
    std::fill_n(state_.begin() + first, count, Free);
    for (int j = first; j < first + count; ++j)
        token_[static_cast<size_t>(j)].store(0, std::memory_order_release);
    return tcaSuccess;
}

Result ResourcePool::resolve(int id, int *index) const noexcept {
    const int idx = owned_index(id);
    if (id < 0 || idx >= size())
        return invalid_index_;
    if (token_[static_cast<size_t>(idx)].load(std::memory_order_acquire) != owned_token(id))
        return tcaErrorNotAcquired;
    *index = idx;
    return tcaSuccess;
}

void ResourcePool::note_direct_use(int idx) {
    if (!valid(idx, 1))
        return;
    std::lock_guard g(lock_);
    State &s = state_[static_cast<size_t>(idx)];
    if (s == Free)
        s = Direct;
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
