// event_word.cpp - futex wait/wake on a shared 32-bit word.
#include "base/event_word.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <climits>

namespace tca {

namespace {
long futex(std::atomic<uint32_t> *addr, int op, uint32_t val, const timespec *ts) {
    return syscall(SYS_futex, reinterpret_cast<uint32_t *>(addr), op, val, ts, nullptr, 0);
}
}  // namespace

void EventWord::notify() noexcept {
    // Store-load ordering against prepare()/watch(): what the caller published
    // is visible to a listener that registers after we look.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_relaxed) == 0 &&
        watched.load(std::memory_order_relaxed) == 0)
        return;
    seq.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) != 0)
        futex(&seq, FUTEX_WAKE, INT_MAX, nullptr);
}

void EventWord::wake_all() noexcept {
    seq.fetch_add(1, std::memory_order_seq_cst);
    futex(&seq, FUTEX_WAKE, INT_MAX, nullptr);
}

void EventWord::nap(uint32_t snapshot, int64_t timeout_ns) noexcept {
    timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
                static_cast<long>(timeout_ns % 1'000'000'000)};
    futex(&seq, FUTEX_WAIT, snapshot, &ts);
}

bool EventWord::await_change(uint32_t seen, int64_t timeout_ns) noexcept {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::nanoseconds(timeout_ns);
    for (;;) {
        if (prepare() != seen) {
            cancel();
            return true;
        }
        const int64_t left =
            std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - clock::now()).count();
        if (left <= 0) {
            cancel();
            return false;
        }
        // Leaves the sleeper count itself.  It may return early: a producer
        // that bumped the count before `seen` was read can deliver its
        // wake-up only now.  That is no timeout: sleep on.
        wait(seen, left);
    }
}

void EventWord::wait(uint32_t snapshot, int64_t timeout_ns) noexcept {
    timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
                static_cast<long>(timeout_ns % 1'000'000'000)};
    if (seq.load(std::memory_order_acquire) == snapshot)
        futex(&seq, FUTEX_WAIT, snapshot, &ts);
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace tca
