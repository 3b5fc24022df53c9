// internal_heap.hpp - first-fit allocator for a node's internal memory (the
// PEACH2 on-board memory, here a part of the node's shm segment).
#pragma once

#include "plugin_api.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace tca {

class TCA_PLUGIN_API InternalHeap {
public:
    static constexpr uint64_t kAlign = 64;
    explicit InternalHeap(uint64_t size) : size_(size) { free_[0] = size; }

    std::optional<uint64_t> allocate(uint64_t bytes);  // offset, or nothing if full
    // Length of the freed allocation, or nothing if offset is not one.
    std::optional<uint64_t> release(uint64_t offset);
    // The heap's memory starts at `base`: the offset of [p, p + bytes) in it,
    // or nothing where that range is not inside.
    std::optional<uint64_t> offset_of(const unsigned char *base, const void *p,
                                      uint64_t bytes) const noexcept {
        const auto *c = static_cast<const unsigned char *>(p);
        if (c < base || bytes > size_ || static_cast<uint64_t>(c - base) > size_ - bytes)
            return std::nullopt;
        return static_cast<uint64_t>(c - base);
    }
    struct Span {
        uint64_t offset, length;
    };
    // The allocation that starts at p, if p is one (left allocated).
    std::optional<Span> span_at(const unsigned char *base, const void *p) const;
    // tcaMalloc of internal memory, the heap's memory starting at base: at
    // least one byte (size 0 too gets a distinct pointer); nullptr if full.
    void *allocate_at(unsigned char *base, uint64_t bytes) {
        const auto off = allocate(bytes > 0 ? bytes : 1);
        return off ? base + *off : nullptr;
    }
    // tcaFree of internal memory: the allocation that starts at p, if p is one.
    std::optional<Span> release_at(const unsigned char *base, const void *p) {
        const auto off = offset_of(base, p, 1);
        if (!off)
            return std::nullopt;
        const auto length = release(*off);
        if (!length)
            return std::nullopt;
        return Span{*off, *length};
    }
    uint64_t size() const noexcept { return size_; }
    uint64_t used() const;

private:
    uint64_t size_;
    mutable std::mutex lock_;
    std::map<uint64_t, uint64_t> free_;  // offset -> length
    std::map<uint64_t, uint64_t> used_;  // offset -> length
};

}  // namespace tca
