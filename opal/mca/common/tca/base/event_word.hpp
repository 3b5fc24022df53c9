// event_word.hpp - a sequence word in shared memory that waiters sleep on with
// futex (process-shared: no FUTEX_PRIVATE_FLAG).  Producers look whether
// anyone listens before they touch the sequence word: a counter add in a
// broadcast hop must not pull a second cache line from the receiving process
// (a cross-core line transfer on every hop, a large share of a small one)
// when nobody sleeps there and nobody follows the count.  Listeners are
// sleepers (prepare() .. wait()/cancel()) and, for good, a node whose count
// someone follows (watch()).
#pragma once

#include "plugin_api.hpp"

#include <atomic>
#include <cstdint>

namespace tca {

struct TCA_PLUGIN_API alignas(64) EventWord {
    // Written on every notify while someone listens; its own line so that the
    // read-mostly listener words below stay shared in every producer's cache.
    std::atomic<uint32_t> seq{0};
    alignas(64) std::atomic<uint32_t> sleepers{0};
    std::atomic<uint32_t> watched{0};  // sticky: set by the first watch()

    // Producer side: call after publishing the state change.
    void notify() noexcept;

    // Consumer side: register before checking the condition...
    uint32_t prepare() noexcept {
        sleepers.fetch_add(1, std::memory_order_seq_cst);
        // Pairs with the fence in notify(): either the producer sees us, or we
        // see what it published before it looked.
        std::atomic_thread_fence(std::memory_order_seq_cst);
        return seq.load(std::memory_order_relaxed);
    }
    // ...sleep until seq != snapshot or timeout_ns passes, then leave.
    void wait(uint32_t snapshot, int64_t timeout_ns) noexcept;
    void cancel() noexcept { sleepers.fetch_sub(1, std::memory_order_seq_cst); }
    // prepare() .. wait() until seq is no longer `seen` (true) or timeout_ns
    // passed (false): the device interrupt's tcaInterruptWait.
    bool await_change(uint32_t seen, int64_t timeout_ns) noexcept;

    // For callers that snapshot the count now and sleep on it later (the
    // interrupt count): from here on every notify moves seq.
    uint32_t watch() noexcept {
        if (watched.load(std::memory_order_relaxed) == 0)
            watched.store(1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_seq_cst);  // as in prepare()
        return seq.load(std::memory_order_relaxed);
    }

    // A nap nobody pays to end: sleep up to timeout_ns (less if seq moves off
    // snapshot first) without counting as a sleeper, so notify() stays cheap.
    // Only wake_all() cuts it short.
    void nap(uint32_t snapshot, int64_t timeout_ns) noexcept;
    // Producer side for work that must not wait out a nap: always a syscall.
    void wake_all() noexcept;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

}  // namespace tca
