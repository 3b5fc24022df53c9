// run_queue.hpp - the started runs of one DMA channel, in start order: pushed
// by starting threads (one at a time: they hold the channel's app lock),
// taken by the scanner (one at a time: it holds the scan lock).  A fixed ring
// carries them without a lock or an allocation; only past kRing queued runs
// (a program starting faster than the engine runs) do they go to a locked
// overflow, which keeps the order: nothing enters the ring while the overflow
// holds runs, and the ring is emptied before the overflow is looked at.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>

namespace tca::loopback {

template <class T, size_t kRing = 64>
class RunQueue {
    static_assert(kRing > 0 && (kRing & (kRing - 1)) == 0, "a ring index is a mask");

public:
    // Producer (one at a time).
    void push(const T &run) {
        const uint64_t tail = tail_.load(std::memory_order_relaxed);
        if (overflow_size_.load(std::memory_order_acquire) == 0 &&
            tail - head_.load(std::memory_order_acquire) < kRing) {
            ring_[tail & (kRing - 1)] = run;
            tail_.store(tail + 1, std::memory_order_release);
            return;
        }
        std::lock_guard g(overflow_lock_);
        overflow_.push_back(run);  // may throw std::bad_alloc: the start fails, nothing queued
        overflow_size_.fetch_add(1, std::memory_order_release);
    }

    // Consumer (one at a time): the oldest run, or nullptr.  It stays where it
    // is, unchanged, until pop().
    T *front() {
        const uint64_t head = head_.load(std::memory_order_relaxed);
        if (head != tail_.load(std::memory_order_acquire))
            return from_ring(head);
        if (overflow_size_.load(std::memory_order_acquire) == 0)
            return nullptr;
        // Runs that filled the ring after our look at the tail came before
        // the overflow's first: the overflow count published them.
        if (head != tail_.load(std::memory_order_acquire))
            return from_ring(head);
        std::lock_guard g(overflow_lock_);
        front_in_overflow_ = true;
        return &overflow_.front();  // push_back does not move elements
    }

    // Consumer: drop the run front() returned.
    void pop() {
        if (!front_in_overflow_) {
            head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
            return;
        }
        std::lock_guard g(overflow_lock_);
        overflow_.pop_front();
        overflow_size_.fetch_sub(1, std::memory_order_release);
        front_in_overflow_ = false;
    }

    // With producers and the consumer both excluded: drop every run; how many.
    size_t clear() {
        std::lock_guard g(overflow_lock_);
        const uint64_t tail = tail_.load(std::memory_order_relaxed);
        const size_t dropped =
            static_cast<size_t>(tail - head_.load(std::memory_order_relaxed)) + overflow_.size();
        head_.store(tail, std::memory_order_release);
        overflow_.clear();
        overflow_size_.store(0, std::memory_order_release);
        front_in_overflow_ = false;
        return dropped;
    }

private:
    T *from_ring(uint64_t head) {
        front_in_overflow_ = false;
        return &ring_[head & (kRing - 1)];
    }

    std::array<T, kRing> ring_{};
    alignas(64) std::atomic<uint64_t> tail_{0};  // runs pushed into the ring (producer)
    alignas(64) std::atomic<uint64_t> head_{0};  // runs taken from it (consumer)
    bool front_in_overflow_ = false;             // consumer only
    std::atomic<size_t> overflow_size_{0};
    std::mutex overflow_lock_;
    std::deque<T> overflow_;
};

}  // namespace tca::loopback
