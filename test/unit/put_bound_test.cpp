// put_bound_test.cpp - the bound of a put that may wait for a peer's engine:
// within() counts from its creation, from_first_wait() from the first time
// the put looks whether it is over (most puts never wait, and never read the
// clock), and a cancel ends either at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "loopback/node_set.hpp"

namespace tca::loopback {
namespace {

using namespace std::chrono_literals;
constexpr int64_t kPatienceNs = 20'000'000;  // 20 ms
// Where a bound must not be over yet and nothing has to run out: so long that
// no descheduling of this thread between two calls can use it up.
constexpr int64_t kLongNs = 600'000'000'000;  // 10 min

TEST(PutBound, WithinCountsFromItsCreation) {
    const PutBound b = PutBound::within(kPatienceNs);
    std::this_thread::sleep_for(30ms);
    EXPECT_TRUE(b.over());
}

// The second look says "not over" only if it comes within the patience of
// the first, which a loaded machine may not grant this thread: an attempt
// where the two looks were further apart (by the test's own clock, read
// around them) proves nothing and is made again with a new bound.
TEST(PutBound, FromFirstWaitCountsFromTheFirstLook) {
    int judged = 0;
    for (int attempt = 0; attempt < 20 && judged == 0; ++attempt) {
        const PutBound b = PutBound::from_first_wait(kPatienceNs);
        std::this_thread::sleep_for(30ms);  // longer than the patience, before anyone waits
        const auto t0 = PutBound::clock::now();
        EXPECT_FALSE(b.over());  // the first look starts the clock
        const bool second = b.over();
        if (PutBound::clock::now() - t0 >= std::chrono::nanoseconds(kPatienceNs))
            continue;
        judged = 1;
        EXPECT_FALSE(second);
        std::this_thread::sleep_for(30ms);
        EXPECT_TRUE(b.over());
        EXPECT_TRUE(b.over());
    }
    EXPECT_EQ(judged, 1) << "no two looks 20 ms apart at most in 20 attempts";
}

TEST(PutBound, ACancelEndsEitherAtOnce) {
    std::atomic<int> cancel{0};
    const PutBound lazy = PutBound::from_first_wait(kLongNs, &cancel);
    const PutBound eager = PutBound::within(kLongNs, &cancel);
    EXPECT_FALSE(lazy.over());
    EXPECT_FALSE(eager.over());
    cancel.store(1);
    EXPECT_TRUE(lazy.over());
    EXPECT_TRUE(eager.over());
}

TEST(PutBound, TheDefaultNeverEnds) {
    const PutBound b{};
    EXPECT_FALSE(b.over());
    std::this_thread::sleep_for(5ms);
    EXPECT_FALSE(b.over());
}

}  // namespace
}  // namespace tca::loopback
