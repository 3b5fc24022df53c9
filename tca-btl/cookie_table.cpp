// cookie_table.cpp - see cookie_table.hpp.
#include "cookie_table.hpp"

#include <algorithm>

namespace tca::btl {

namespace {
constexpr uint64_t kLow = 0xffffffffull;
}

CookieTable::CookieTable(uint32_t capacity)
    : capacity_(std::clamp<uint32_t>(capacity, 1, kMaxCapacity)), entries_(new Entry[capacity_]) {
    for (uint32_t i = 0; i < capacity_; ++i)
        entries_[i].next_free.store(i + 1 < capacity_ ? i + 2 : 0, std::memory_order_relaxed);
    free_head_.store(1, std::memory_order_release);  // entry 0 first, tag 0
}

bool CookieTable::pop_free(uint32_t *index) noexcept {
    uint64_t head = free_head_.load(std::memory_order_acquire);
    for (;;) {
        const uint32_t first = static_cast<uint32_t>(head & kLow);
        if (first == 0)
            return false;
        // May read an entry another thread popped meanwhile: then the tag
        // moved and the CAS fails.
        const uint32_t next = entries_[first - 1].next_free.load(std::memory_order_relaxed);
        const uint64_t want = ((head >> 32) + 1) << 32 | next;
        if (free_head_.compare_exchange_weak(head, want, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
            *index = first - 1;
            return true;
        }
    }
}

void CookieTable::push_free(uint32_t index) noexcept {
    uint64_t head = free_head_.load(std::memory_order_relaxed);
    for (;;) {
        entries_[index].next_free.store(static_cast<uint32_t>(head & kLow),
                                        std::memory_order_relaxed);
        const uint64_t want = ((head >> 32) + 1) << 32 | (index + 1);
        if (free_head_.compare_exchange_weak(head, want, std::memory_order_release,
                                             std::memory_order_relaxed))
            return;
    }
}

bool CookieTable::publish(uint32_t i, void *value, uint64_t *cookie) noexcept {
    Entry &e = entries_[i];
    const uint64_t generation = e.state.load(std::memory_order_relaxed) >> 1;
    e.value.store(value, std::memory_order_relaxed);
    e.state.store(generation << 1 | 1, std::memory_order_release);
    *cookie = generation << 32 | i;
    return true;
}

// The entry `cookie` names, now free but not yet back on the free stack.
bool CookieTable::retire(uint64_t cookie, uint32_t *index, void **value) noexcept {
    const uint64_t i = cookie & kLow, generation = cookie >> 32;
    if (i >= capacity_ || generation >= (uint64_t{1} << 31))
        return false;
    Entry &e = entries_[i];
    uint64_t expected = generation << 1 | 1;
    // Once: the entry moves to the next generation, free.
    if (!e.state.compare_exchange_strong(expected, (generation + 1) % (uint64_t{1} << 31) << 1,
                                         std::memory_order_acq_rel, std::memory_order_relaxed))
        return false;
    *value = e.value.exchange(nullptr, std::memory_order_relaxed);
    *index = static_cast<uint32_t>(i);
    return true;
}

bool CookieTable::put(void *value, uint64_t *cookie) noexcept {
    uint32_t i = 0;
    return pop_free(&i) && publish(i, value, cookie);
}

void *CookieTable::take(uint64_t cookie) noexcept {
    uint32_t i = 0;
    void *v = nullptr;
    if (!retire(cookie, &i, &v))
        return nullptr;
    push_free(i);
    return v;
}

uint32_t CookieTable::in_use() const noexcept {
    uint32_t n = 0;
    for (uint32_t i = 0; i < capacity_; ++i)
        n += entries_[i].state.load(std::memory_order_acquire) & 1;
    return n;
}

}  // namespace tca::btl
