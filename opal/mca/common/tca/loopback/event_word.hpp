// event_word.hpp - a sequence word in shared memory that waiters sleep on with
// futex (process-shared: no FUTEX_PRIVATE_FLAG).  Producers bump it after they
// publish; they make the futex call only when someone sleeps, so the hot path
// is one atomic increment.
#pragma once

#include <atomic>
#include <cstdint>

namespace tca::loopback {

struct alignas(64) EventWord {
    std::atomic<uint32_t> seq{0};
    std::atomic<uint32_t> sleepers{0};

    // Producer side: call after publishing the state change.
    void notify() noexcept;

    // Consumer side: snapshot before checking the condition...
    uint32_t prepare() noexcept {
        sleepers.fetch_add(1, std::memory_order_seq_cst);
        return seq.load(std::memory_order_seq_cst);
    }
    // ...sleep until seq != snapshot or timeout_ns passes, then leave.
    void wait(uint32_t snapshot, int64_t timeout_ns) noexcept;
    void cancel() noexcept { sleepers.fetch_sub(1, std::memory_order_seq_cst); }

    // A nap nobody pays to end: sleep up to timeout_ns (less if seq moves off
    // snapshot first) without counting as a sleeper, so notify() stays one
    // atomic increment.  Only wake_all() cuts it short.
    void nap(uint32_t snapshot, int64_t timeout_ns) noexcept;
    // Producer side for work that must not wait out a nap: always a syscall.
    void wake_all() noexcept;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

}  // namespace tca::loopback
