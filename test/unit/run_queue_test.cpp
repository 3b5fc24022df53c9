// RunQueue (loopback/run_queue.hpp): a DMA channel's started runs, pushed by
// one starter at a time and taken by one scanner, in start order, through the
// ring and, past it, the overflow.  Also built under ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "loopback/run_queue.hpp"

using tca::loopback::RunQueue;

TEST(RunQueue, KeepsStartOrderThroughRingAndOverflow) {
    RunQueue<uint64_t, 4> q;
    EXPECT_EQ(q.front(), nullptr);
    for (uint64_t i = 1; i <= 10; ++i)
        q.push(i);  // 4 in the ring, 6 in the overflow
    for (uint64_t i = 1; i <= 3; ++i) {
        ASSERT_NE(q.front(), nullptr);
        EXPECT_EQ(*q.front(), i);
        q.pop();
    }
    q.push(11);  // the overflow holds runs: this one goes behind them, not into the freed ring slot
    for (uint64_t i = 4; i <= 11; ++i) {
        ASSERT_NE(q.front(), nullptr);
        EXPECT_EQ(*q.front(), i);
        q.pop();
    }
    EXPECT_EQ(q.front(), nullptr);
    q.push(12);  // the ring again
    EXPECT_EQ(*q.front(), 12u);
}

TEST(RunQueue, ClearDropsEverythingAndSaysHowMany) {
    RunQueue<uint64_t, 4> q;
    for (uint64_t i = 1; i <= 7; ++i)
        q.push(i);
    EXPECT_EQ(*q.front(), 1u);
    EXPECT_EQ(q.clear(), 7u);
    EXPECT_EQ(q.front(), nullptr);
    q.push(8);
    EXPECT_EQ(*q.front(), 8u);
    q.pop();
    EXPECT_EQ(q.clear(), 0u);
}

// A starter pushing in bursts that overrun the ring while the scanner takes
// runs: every run arrives once, in order, and a run is not changed while it
// is the front (the scanner reads it across calls).
TEST(RunQueue, OneStarterOneScannerLoseNothing) {
    constexpr uint64_t kRuns = 50000;
    struct Run {
        uint64_t number, check;
    };
    RunQueue<Run, 8> q;
    std::atomic<bool> failed{false};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::thread starter([&] {
        for (uint64_t i = 1; i <= kRuns && std::chrono::steady_clock::now() < deadline; ++i) {
            q.push(Run{i, ~i});
            if (i % 64 == 0)
                std::this_thread::yield();  // bursts: the scanner falls behind, then catches up
        }
    });
    uint64_t expected = 1;
    while (expected <= kRuns && !failed.load() && std::chrono::steady_clock::now() < deadline) {
        Run *r = q.front();
        if (r == nullptr) {
            std::this_thread::yield();
            continue;
        }
        const Run seen = *r;
        std::this_thread::yield();  // the front stays put while the starter pushes
        if (seen.number != expected || seen.check != ~expected || r->number != seen.number)
            failed = true;
        q.pop();
        ++expected;
    }
    starter.join();
    EXPECT_FALSE(failed.load()) << "run " << expected << " out of order or changed";
    EXPECT_EQ(expected, kRuns + 1) << "runs lost or the bound (60 s) was reached";
    EXPECT_EQ(q.front(), nullptr);
}
