// session_core_test.cpp - the MPI-free part of the TCA session btl tca and
// coll tca share: where a process sits in its host's sub-clusters, and that
// the clients of one process share one device start (the first starts it,
// the last to leave stops it, a client that asks for another sub-cluster
// size is refused, a failed start leaves nobody joined).
#include <gtest/gtest.h>

#include <string>

#include "session/session_core.h"
#include "tca.h"

namespace {

int g_starts = 0;
tca_session_place_t g_started{};
int start_ok(const tca_session_place_t *p, void *) {
    ++g_starts;
    g_started = *p;
    return tcaSuccess;
}
int start_fails(const tca_session_place_t *, void *ctx) {
    ++g_starts;
    return *static_cast<int *>(ctx);
}

// Every test leaves the process's membership empty again.
struct SessionCore : ::testing::Test {
    void SetUp() override {
        ASSERT_EQ(tca_session_core_clients(), 0);
        g_starts = 0;
    }
    void TearDown() override {
        while (tca_session_core_clients() > 0)
            (void) tca_session_core_leave();
    }
    int join(int requested, int rank, int size, tca_session_start_fn start = start_ok,
             void *ctx = nullptr) {
        why[0] = '\0';
        return tca_session_core_join(requested, rank, size, start, ctx, &place, &device_result, why,
                                     sizeof why);
    }
    tca_session_place_t place{-1, -1, 0};
    int device_result = tcaSuccess;
    char why[512];
};

TEST(SessionPlace, ConsecutiveLocalRanksFormSubclusters) {
    // 7 processes in sub-clusters of 3: {0,1,2} {3,4,5} {6}
    const int expect[7][3] = {{0, 0, 3}, {0, 1, 3}, {0, 2, 3}, {1, 0, 3},
                              {1, 1, 3}, {1, 2, 3}, {2, 0, 1}};
    for (int r = 0; r < 7; ++r) {
        const tca_session_place_t p = tca_session_place(r, 7, 3);
        EXPECT_EQ(p.subcluster, expect[r][0]) << "rank " << r;
        EXPECT_EQ(p.node, expect[r][1]) << "rank " << r;
        EXPECT_EQ(p.num_nodes, expect[r][2]) << "rank " << r;
    }
}

TEST(SessionPlace, ZeroOrMoreThanTheHostMeansAllOfItAtMostTheNodeLimit) {
    for (const int size : {0, -1, 9, 100}) {
        const tca_session_place_t p = tca_session_place(5, 8, size);
        EXPECT_EQ(p.subcluster, 0);
        EXPECT_EQ(p.node, 5);
        EXPECT_EQ(p.num_nodes, 8);
    }
    const tca_session_place_t big = tca_session_place(TCA_MAX_NODES + 1, TCA_MAX_NODES + 10, 0);
    EXPECT_EQ(big.subcluster, 1);
    EXPECT_EQ(big.node, 1);
    EXPECT_EQ(big.num_nodes, 10);
}

TEST_F(SessionCore, TheFirstClientStartsTheDeviceTheLastStopsIt) {
    ASSERT_EQ(join(2, 3, 4), TCA_SESSION_STARTED);  // btl tca: sub-clusters of 2
    EXPECT_EQ(g_starts, 1);
    EXPECT_EQ(place.subcluster, 1);
    EXPECT_EQ(place.node, 1);
    EXPECT_EQ(place.num_nodes, 2);
    EXPECT_EQ(g_started.node, 1);
    tca_session_place_t first = place;
    ASSERT_EQ(join(-1, 3, 4), TCA_SESSION_JOINED);  // coll tca: whatever the session has
    ASSERT_EQ(join(2, 3, 4), TCA_SESSION_JOINED);   // the same size again
    EXPECT_EQ(g_starts, 1) << "one device start per process";
    EXPECT_EQ(place.node, first.node);
    EXPECT_EQ(tca_session_core_clients(), 3);
    EXPECT_EQ(tca_session_core_leave(), 0);
    EXPECT_EQ(tca_session_core_leave(), 0);
    EXPECT_EQ(tca_session_core_leave(), 1) << "the last client stops the device";
    EXPECT_EQ(tca_session_core_leave(), 0) << "nobody left: nothing to stop twice";
}

TEST_F(SessionCore, AClientAskingForAnotherSizeIsRefusedWithTheReason) {
    ASSERT_EQ(join(0, 1, 4), TCA_SESSION_STARTED);  // all 4 local ranks
    EXPECT_EQ(join(2, 1, 4), TCA_SESSION_CONFLICT);
    EXPECT_NE(std::string(why).find("sub-clusters of 4 processes"), std::string::npos) << why;
    EXPECT_NE(std::string(why).find("size of 2"), std::string::npos) << why;
    EXPECT_EQ(join(4, 1, 4), TCA_SESSION_JOINED) << "4 of 4 is what the session has";
    EXPECT_EQ(tca_session_core_clients(), 2);
}

TEST_F(SessionCore, AProcessAloneInItsSubclusterStartsNothing) {
    EXPECT_EQ(join(2, 4, 5), TCA_SESSION_ALONE);  // the last, partial sub-cluster {4}
    EXPECT_EQ(g_starts, 0);
    EXPECT_EQ(tca_session_core_clients(), 0);
}

TEST_F(SessionCore, AFailedStartLeavesNobodyJoinedAndTheNextClientTriesAgain) {
    int failure = tcaErrorNoMemory;
    EXPECT_EQ(join(0, 0, 2, start_fails, &failure), TCA_SESSION_START_FAILED);
    EXPECT_EQ(device_result, tcaErrorNoMemory);
    EXPECT_EQ(tca_session_core_clients(), 0);
    EXPECT_EQ(join(0, 0, 2), TCA_SESSION_STARTED);
    EXPECT_EQ(g_starts, 2);
}

}  // namespace
