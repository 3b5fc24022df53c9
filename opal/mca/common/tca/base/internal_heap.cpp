// internal_heap.cpp - coalescing first fit; internal memory is small (MiBs) and
// allocated rarely (rings at start-up), so simplicity wins.
#include "base/internal_heap.hpp"

#include <iterator>

namespace tca {

std::optional<uint64_t> InternalHeap::allocate(uint64_t bytes) {
    if (bytes == 0 || bytes > size_)
        return std::nullopt;  // also keeps the rounding below from wrapping
    bytes = (bytes + kAlign - 1) / kAlign * kAlign;
    std::lock_guard g(lock_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->second < bytes)
            continue;
        const uint64_t off = it->first;
        const uint64_t rest = it->second - bytes;
        free_.erase(it);
        if (rest != 0)
            free_[off + bytes] = rest;
        used_[off] = bytes;
        return off;
    }
    return std::nullopt;
}

std::optional<InternalHeap::Span> InternalHeap::span_at(const unsigned char *base,
                                                        const void *p) const {
    const auto off = offset_of(base, p, 1);
    if (!off)
        return std::nullopt;
    std::lock_guard g(lock_);
    const auto it = used_.find(*off);
    if (it == used_.end())
        return std::nullopt;
    return Span{it->first, it->second};
}

std::optional<uint64_t> InternalHeap::release(uint64_t offset) {
    std::lock_guard g(lock_);
    auto u = used_.find(offset);
    if (u == used_.end())
        return std::nullopt;
    const uint64_t freed = u->second;
    uint64_t off = offset, len = u->second;
    used_.erase(u);
    auto next = free_.lower_bound(off);
    if (next != free_.end() && off + len == next->first) {
        len += next->second;
        next = free_.erase(next);
    }
    if (next != free_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == off) {
            prev->second += len;
            return freed;
        }
    }
    free_[off] = len;
    return freed;
}

uint64_t InternalHeap::used() const {
    std::lock_guard g(lock_);
    uint64_t n = 0;
    for (const auto &[off, len] : used_)
        n += len;
    return n;
}

}  // namespace tca
