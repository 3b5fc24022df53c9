// cookie_table.hpp - what a peer may send back to name one of our pending
// operations: a cookie (entry index | generation << 32) checked against a
// fixed table, never a pointer.  An emulated get sends its cookie with the
// request and the data owner returns it with GET_DONE; a cookie that was not
// handed out, was already answered, or is forged names nothing (take() gives
// nullptr) instead of a pointer into our memory.  Lock-free and allocation
// free once built: free entries form a stack with an ABA tag in its head.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace tca::btl {

class CookieTable {
public:
    static constexpr uint32_t kMaxCapacity = 1u << 24;

    explicit CookieTable(uint32_t capacity);

    // A cookie that names `value` until take(); false while every entry is in use.
    bool put(void *value, uint64_t *cookie) noexcept;
    // The value `cookie` names, once; nullptr for anything else.
    void *take(uint64_t cookie) noexcept;
    // put()/take() for callers that keep their record beside the table, by
    // index: fill(index) runs before the cookie is valid, read(index) after
    // it was taken and before the entry can be handed out again, so each
    // has the record at `index` to itself.
    template <class Fill>
    bool claim(uint64_t *cookie, Fill &&fill) noexcept;
    template <class Read>
    bool release(uint64_t cookie, Read &&read) noexcept;
    uint32_t capacity() const noexcept { return capacity_; }
    // Entries held now: a scan (for tests and reports, not the message path).
    uint32_t in_use() const noexcept;

private:
    // state: generation << 1 | in_use.  A take needs the generation the put gave out.
    struct Entry {
        std::atomic<uint64_t> state{0};
        std::atomic<void *> value{nullptr};
        std::atomic<uint32_t> next_free{0};  // index + 1 of the next free entry, 0: none
    };
    bool pop_free(uint32_t *index) noexcept;
    void push_free(uint32_t index) noexcept;
    bool publish(uint32_t index, void *value, uint64_t *cookie) noexcept;
    bool retire(uint64_t cookie, uint32_t *index, void **value) noexcept;

    const uint32_t capacity_;
    std::unique_ptr<Entry[]> entries_;
    std::atomic<uint64_t> free_head_{0};  // index + 1 of the first free entry | ABA tag << 32
};

template <class Fill>
bool CookieTable::claim(uint64_t *cookie, Fill &&fill) noexcept {
    uint32_t i = 0;
    if (!pop_free(&i))
        return false;
    fill(i);
    return publish(i, this, cookie);  // the value is only a mark: the record is the caller's, at i
}

template <class Read>
bool CookieTable::release(uint64_t cookie, Read &&read) noexcept {
    uint32_t i = 0;
    void *v = nullptr;
    if (!retire(cookie, &i, &v))
        return false;
    read(i);
    push_free(i);
    return true;
}

}  // namespace tca::btl
