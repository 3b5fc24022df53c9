// channel_runs_test.cpp - the ucx device's bookkeeping of a channel's started
// runs (ucx/channel_runs.hpp): order, triggers per epoch, errors, abort, a
// load while runs wait.  Descriptors are told apart by their tag; issuing one
// records the tag.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "ucx/channel_runs.hpp"

namespace {

using tca::Descriptor;
using tca::Result;
using tca::ucx::ChannelRuns;

Descriptor desc(int tag, int wait_counter = -1, uint64_t value = 0, uint64_t step = 0) {
    Descriptor d;
    d.tag = tag;
    d.wait_counter = wait_counter;
    d.wait_value = value;
    d.wait_step = step;
    return d;
}

struct Fixture {
    ChannelRuns runs;
    std::map<int, uint64_t> counters;
    std::vector<int> issued;
    std::map<int, Result> fails;  // tag -> error its issue returns
    bool pump() {
        return runs.pump(
            [&](const Descriptor &d, ChannelRuns::RunState &) {
                issued.push_back(d.tag);
                auto it = fails.find(d.tag);
                return it == fails.end() ? tcaSuccess : it->second;
            },
            [&](int id, uint64_t *v) -> Result {
                if (id == 99)
                    return tcaErrorNotAcquired;
                *v = counters[id];
                return tcaSuccess;
            });
    }
};

TEST(ChannelRuns, UntriggeredRunsIssueAtOnceInOrder) {
    Fixture f;
    const Descriptor chain[] = {desc(1), desc(2), desc(3)};
    f.runs.load(chain);
    f.runs.start();
    f.runs.start();
    EXPECT_TRUE(f.pump());
    EXPECT_EQ(f.issued, (std::vector<int>{1, 2, 3, 1, 2, 3}));
    EXPECT_TRUE(f.runs.idle());
    EXPECT_EQ(f.runs.take_result(), tcaSuccess);
}

TEST(ChannelRuns, ATriggerHoldsItsRunAndThoseBehindEpochByEpoch) {
    Fixture f;
    const Descriptor chain[] = {desc(1), desc(2, 5, 10, 3), desc(3)};
    f.runs.load(chain);
    f.runs.start();  // epoch 0: counter 5 >= 10
    f.runs.start();  // epoch 1: >= 13
    EXPECT_TRUE(f.pump());
    EXPECT_EQ(f.issued, (std::vector<int>{1}));
    EXPECT_FALSE(f.pump());
    f.counters[5] = 12;
    EXPECT_TRUE(f.pump());
    EXPECT_EQ(f.issued, (std::vector<int>{1, 2, 3, 1}));  // the second run waits for 13
    EXPECT_EQ(f.runs.queued(), 1u);
    f.counters[5] = 13;
    EXPECT_TRUE(f.pump());
    EXPECT_EQ(f.issued, (std::vector<int>{1, 2, 3, 1, 2, 3}));
    EXPECT_TRUE(f.runs.idle());
}

TEST(ChannelRuns, AnErrorEndsItsRunOnlyAndIsReportedOnce) {
    Fixture f;
    const Descriptor chain[] = {desc(1), desc(2), desc(3)};
    f.runs.load(chain);
    f.fails[2] = tcaErrorNotRegistered;
    f.runs.start();
    f.runs.start();
    f.pump();
    EXPECT_EQ(f.issued, (std::vector<int>{1, 2, 1, 2}));  // 3 never issued after its run failed
    EXPECT_EQ(f.runs.take_result(), tcaErrorNotRegistered);
    EXPECT_EQ(f.runs.take_result(), tcaSuccess);
}

TEST(ChannelRuns, ATriggerCounterThatChangedHandsFailsTheRun) {
    Fixture f;
    const Descriptor chain[] = {desc(1, 99, 0, 0), desc(2)};
    f.runs.load(chain);
    f.runs.start();
    EXPECT_TRUE(f.pump());
    EXPECT_TRUE(f.issued.empty());
    EXPECT_TRUE(f.runs.idle());
    EXPECT_EQ(f.runs.take_result(), tcaErrorNotAcquired);
}

TEST(ChannelRuns, AbortDropsWaitingRunsAndEpochsCountOn) {
    Fixture f;
    const Descriptor chain[] = {desc(1, 5, 1, 1)};
    f.runs.load(chain);
    f.runs.start();  // epoch 0
    f.runs.start();  // epoch 1
    f.pump();
    f.runs.abort();
    EXPECT_TRUE(f.runs.idle());
    f.counters[5] = 2;
    f.runs.start();  // epoch 2: needs 3
    EXPECT_FALSE(f.pump());
    EXPECT_TRUE(f.issued.empty());
    f.counters[5] = 3;
    EXPECT_TRUE(f.pump());
    EXPECT_EQ(f.issued, (std::vector<int>{1}));
}

TEST(ChannelRuns, ALoadLeavesStartedRunsTheirChainAndRestartsEpochs) {
    Fixture f;
    const Descriptor first[] = {desc(1, 5, 1, 1)};
    const Descriptor second[] = {desc(7, 5, 1, 1)};
    f.runs.load(first);
    f.runs.start();
    f.runs.start();  // epoch 1 of the first chain: needs 2
    f.runs.load(second);
    f.runs.start();  // epoch 0 of the second: needs 1
    f.counters[5] = 2;
    f.pump();
    EXPECT_EQ(f.issued, (std::vector<int>{1, 1, 7}));
}

}  // namespace
