// virtual_clock_test.cpp - the rules of virtual time (model/virtual_clock.hpp):
// waits advance the clock to what they consume and never further, polling
// costs nothing, computation is the CPU time between device calls (times
// the factor).
#include <gtest/gtest.h>

#include "model/virtual_clock.hpp"

namespace tca {
namespace {

TEST(VirtualClock, AWaitMovesTheClockToTheArrivalAndNeverBack) {
    VirtualClock c;
    c.advance_to(1500);
    EXPECT_EQ(c.now_ns(), 1500);
    c.advance_to(900);  // an arrival from the past changes nothing
    EXPECT_EQ(c.now_ns(), 1500);
    c.advance_to(2000);
    EXPECT_EQ(c.now_ns(), 2000);
}

TEST(VirtualClock, ComputationBetweenDeviceCallsIsItsCpuTimeTimesTheFactor) {
    VirtualClock c(0.5);
    c.pause(10'000, 0);
    c.resume(14'000, 9'000'000);  // 4 us of CPU outside the device, in 9 ms of wall time
    EXPECT_EQ(c.now_ns(), 2'000);
    // Time inside the device (between resume and pause) is not charged.
    c.pause(90'000, 10'000'000);
    c.resume(92'000, 10'002'000);
    EXPECT_EQ(c.now_ns(), 3'000);
}

TEST(VirtualClock, TheOverheadOfEachIntervalIsNeverCharged) {
    VirtualClock c(1.0, 0, 2'000);
    c.pause(0, 0);
    c.resume(1'500, 1'500);  // within the overhead: nothing
    EXPECT_EQ(c.now_ns(), 0);
    c.pause(10'000, 10'000);
    c.resume(60'000, 60'000);  // 50 us: all of it but the overhead
    EXPECT_EQ(c.now_ns(), 48'000);
}

TEST(VirtualClock, PollingForALandingCostsNothingButTheWorkAfterItDoes) {
    VirtualClock c;
    c.advance_to(1'000);
    c.pause(0, 0);
    // A second of CPU spent spinning on host memory (a slow peer), on the
    // core all along; the data's virtual arrival is 782 ns after we left; it
    // landed 40 ns before we came back.
    VirtualClock::Polled p{true, 1'782, 40};
    c.resume(1'000'000'000, 1'000'000'000, p);
    EXPECT_EQ(c.now_ns(), 1'822);
}

TEST(VirtualClock, TimeOffTheCoreWhilePollingIsNeverCharged) {
    VirtualClock c;
    c.pause(0, 0);
    // 3 ms spinning, then 4 ms waiting for a core (a loaded host) or asleep;
    // the data landed 2 ms before we came back.  What ran after it cannot
    // be told apart from the time off the core: nothing is charged.
    VirtualClock::Polled p{true, 900, 2'000'000};
    c.resume(3'000'000, 7'000'000, p);
    EXPECT_EQ(c.now_ns(), 900);
    // The same with 10 us of work after the landing and no time off it.
    c.pause(5'000'000, 7'100'000);
    VirtualClock::Polled q{true, 2'000, 10'000};
    c.resume(6'000'000, 8'100'000, q);
    EXPECT_EQ(c.now_ns(), 12'000);
}

TEST(VirtualClock, ALandingFromBeforeTheIntervalDidNotMakeAnyoneWait) {
    VirtualClock c;
    c.advance_to(5'000);
    c.pause(0, 0);
    VirtualClock::Polled p{true, 4'000, 10};  // landed in the virtual past
    c.resume(3'000, 3'000, p);
    EXPECT_EQ(c.now_ns(), 8'000);  // all of it was computation
}

TEST(VirtualClock, WorkAfterALandingIsAtMostTheWholeInterval) {
    VirtualClock c;
    c.pause(0, 1'000'000);
    VirtualClock::Polled p{true, 100, 1'000'000};  // "landed" before we left: a clock skew
    c.resume(500, 1'000'500, p);
    EXPECT_EQ(c.now_ns(), 600);
}

TEST(VirtualClock, ComputationFollowsWhatAnotherThreadConsumedMeanwhile) {
    VirtualClock c;
    c.pause(0, 0);
    c.advance_to(10'000);  // the progress thread took a notification
    c.resume(2'000, 2'000);
    EXPECT_EQ(c.now_ns(), 12'000);
}

TEST(VirtualClock, ModelledCostsAddAndAResumeWithoutAPauseChargesNothing) {
    VirtualClock c;
    c.charge(250);
    c.charge(-5);  // nothing negative
    EXPECT_EQ(c.now_ns(), 250);
    c.resume(1'000'000, 1'000'000);  // not paused: nothing to charge
    EXPECT_EQ(c.now_ns(), 250);
}

}  // namespace
}  // namespace tca
