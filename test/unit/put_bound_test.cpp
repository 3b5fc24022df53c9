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

TEST(PutBound, WithinCountsFromItsCreation) {
    const PutBound b = PutBound::within(kPatienceNs);
    std::this_thread::sleep_for(30ms);
    EXPECT_TRUE(b.over());
}

TEST(PutBound, FromFirstWaitCountsFromTheFirstLook) {
    const PutBound b = PutBound::from_first_wait(kPatienceNs);
    std::this_thread::sleep_for(30ms);  // longer than the patience, before anyone waits
    EXPECT_FALSE(b.over());             // the first look starts the clock
    EXPECT_FALSE(b.over());
    std::this_thread::sleep_for(30ms);
    EXPECT_TRUE(b.over());
    EXPECT_TRUE(b.over());
}

TEST(PutBound, ACancelEndsEitherAtOnce) {
    std::atomic<int> cancel{0};
    const PutBound lazy = PutBound::from_first_wait(kPatienceNs, &cancel);
    const PutBound eager = PutBound::within(kPatienceNs, &cancel);
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
