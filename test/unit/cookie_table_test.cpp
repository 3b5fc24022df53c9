// cookie_table_test.cpp - the cookies btl tca's emulated get hands a peer and
// takes back: each names its value exactly once; forged, stale, repeated or
// out-of-range cookies name nothing; a full table refuses; and many threads
// putting and taking at once (the application's and the progress thread)
// never lose or duplicate an entry (also under ThreadSanitizer).
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "cookie_table.hpp"

namespace tca::btl {
namespace {

TEST(CookieTable, ACookieNamesItsValueOnce) {
    CookieTable t(4);
    int a = 1, b = 2;
    uint64_t ca = 0, cb = 0;
    ASSERT_TRUE(t.put(&a, &ca));
    ASSERT_TRUE(t.put(&b, &cb));
    EXPECT_NE(ca, cb);
    EXPECT_EQ(t.in_use(), 2u);
    EXPECT_EQ(t.take(cb), &b);
    EXPECT_EQ(t.take(cb), nullptr) << "answered twice";
    EXPECT_EQ(t.take(ca), &a);
    EXPECT_EQ(t.in_use(), 0u);
}

TEST(CookieTable, ForgedAndStaleCookiesNameNothing) {
    CookieTable t(4);
    int a = 1, b = 2;
    uint64_t c = 0;
    ASSERT_TRUE(t.put(&a, &c));
    EXPECT_EQ(t.take(c + (uint64_t{1} << 32)), nullptr) << "another generation";
    EXPECT_EQ(t.take(c ^ 1), nullptr) << "an entry nobody holds";
    EXPECT_EQ(t.take(uint64_t{1000}), nullptr) << "past the table";
    EXPECT_EQ(t.take(reinterpret_cast<uintptr_t>(&a)), nullptr) << "a pointer is not a cookie";
    EXPECT_EQ(t.take(~uint64_t{0}), nullptr);
    EXPECT_EQ(t.take(c), &a);
    // The entry comes back under a new generation: the old cookie stays dead.
    uint64_t again = 0;
    for (int i = 0; i < 4; ++i) {
        ASSERT_TRUE(t.put(&b, &again));
        if ((again & 0xffffffffu) == (c & 0xffffffffu))
            break;
        EXPECT_EQ(t.take(again), &b);
    }
    EXPECT_EQ(again & 0xffffffffu, c & 0xffffffffu);
    EXPECT_NE(again, c);
    EXPECT_EQ(t.take(c), nullptr);
    EXPECT_EQ(t.take(again), &b);
}

TEST(CookieTable, AFullTableRefusesUntilOneIsTaken) {
    CookieTable t(3);
    int v[4];
    uint64_t c[4];
    for (int i = 0; i < 3; ++i)
        ASSERT_TRUE(t.put(&v[i], &c[i]));
    EXPECT_FALSE(t.put(&v[3], &c[3]));
    EXPECT_EQ(t.take(c[1]), &v[1]);
    ASSERT_TRUE(t.put(&v[3], &c[3]));
    EXPECT_EQ(t.take(c[3]), &v[3]);
}

TEST(CookieTable, ThreadsPuttingAndTakingNeverLoseOrShareAnEntry) {
    constexpr int kThreads = 4, kRounds = 20000;
    CookieTable t(64);
    std::atomic<int> mismatches{0}, refused{0};
    std::vector<std::thread> threads;
    for (int k = 0; k < kThreads; ++k)
        threads.emplace_back([&, k] {
            std::vector<int> values(8);
            std::vector<uint64_t> cookies(8);
            for (int r = 0; r < kRounds; ++r) {
                const int n = 1 + (r + k) % 8;
                for (int i = 0; i < n; ++i)
                    if (!t.put(&values[static_cast<size_t>(i)], &cookies[static_cast<size_t>(i)])) {
                        refused.fetch_add(1);
                        cookies[static_cast<size_t>(i)] = ~uint64_t{0};
                    }
                for (int i = n - 1; i >= 0; --i) {
                    const uint64_t c = cookies[static_cast<size_t>(i)];
                    if (c == ~uint64_t{0})
                        continue;
                    if (t.take(c) != &values[static_cast<size_t>(i)])
                        mismatches.fetch_add(1);
                }
            }
        });
    for (std::thread &th : threads)
        th.join();
    EXPECT_EQ(mismatches.load(), 0);
    EXPECT_EQ(refused.load(), 0) << "4 threads hold at most 32 of 64 entries";
    EXPECT_EQ(t.in_use(), 0u);
}

}  // namespace
}  // namespace tca::btl
