// event_word.cpp - futex wait/wake on a shared 32-bit word.
#include "loopback/event_word.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace tca::loopback {

namespace {
long futex(std::atomic<uint32_t> *addr, int op, uint32_t val, const timespec *ts) {
    return syscall(SYS_futex, reinterpret_cast<uint32_t *>(addr), op, val, ts, nullptr, 0);
}
}  // namespace

void EventWord::notify() noexcept {
    // Store-load ordering against prepare()/watch(): what the caller published
    // is visible to a listener that registers after we look.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_relaxed) == 0 && watched.load(std::memory_order_relaxed) == 0) return;
    seq.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) != 0) futex(&seq, FUTEX_WAKE, INT_MAX, nullptr);
}

void EventWord::wake_all() noexcept {
    seq.fetch_add(1, std::memory_order_seq_cst);
    futex(&seq, FUTEX_WAKE, INT_MAX, nullptr);
}

void EventWord::nap(uint32_t snapshot, int64_t timeout_ns) noexcept {
    timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
    futex(&seq, FUTEX_WAIT, snapshot, &ts);
}

void EventWord::wait(uint32_t snapshot, int64_t timeout_ns) noexcept {
    timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
    if (seq.load(std::memory_order_acquire) == snapshot) futex(&seq, FUTEX_WAIT, snapshot, &ts);
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace tca::loopback
