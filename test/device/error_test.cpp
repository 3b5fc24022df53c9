// error_test.cpp - every bad-input path of the API returns its own error code
// (and a message), never a crash or a hang.
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "harness.hpp"

namespace tca::test {
namespace {

TEST(Errors, NotInitialised) {
    NodeOptions opt;
    opt.init = false;
    EXPECT_TRUE(run_nodes(
        1,
        [](int, Board &) {
            void *p = nullptr;
            NODE_EXPECT_RESULT(tcaErrorNotInitialized, tcaMalloc(&p, 64, tcaMemoryCPU));
            NODE_EXPECT_RESULT(tcaErrorNotInitialized, tcaStartDMADesc(0));
            NODE_EXPECT_RESULT(tcaErrorNotInitialized, tcaFinalize());
            tcaInitParams bad{"x", 3, 2};
            NODE_EXPECT_RESULT(tcaErrorInvalidNode, tcaInitWithParams(&bad));
            const std::string key = unique_job_key("twice");
            tcaInitParams ok{key.c_str(), 0, 1};
            NODE_OK(tcaInitWithParams(&ok));
            tcaInitParams other{key.c_str(), 1, 2};  // another node: refused, the running one stays
            NODE_EXPECT_RESULT(tcaErrorAlreadyInitialized, tcaInitWithParams(&other));
            NODE_OK(tcaFinalize());
            NODE_EXPECT_RESULT(tcaErrorNotInitialized, tcaFinalize());
            return 0;
        },
        opt));
}

TEST(Errors, DescriptorValidation) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        std::vector<unsigned char> buf(4096);
        tcaHandle mine;
        tcaHandle peer =
            register_and_swap(node, board, buf.data(), buf.size(), tcaMemoryCPU, &mine);
        tcaDesc *d = tcaDescNew();
        // null / corrupt handles
        NODE_EXPECT_RESULT(tcaErrorInvalidHandle,
                           tcaDescSetMemcpy(d, nullptr, 0, &mine, 0, 8, 0, 0, 0));
        NODE_EXPECT_RESULT(tcaErrorInvalidHandle,
                           tcaDescSetMemcpy(d, &peer, 0, nullptr, 0, 8, 0, 0, 0));
        tcaHandle corrupt = peer;
        corrupt.magic ^= 1;
        NODE_EXPECT_RESULT(tcaErrorInvalidHandle,
                           tcaDescSetMemcpy(d, &corrupt, 0, &mine, 0, 8, 0, 0, 0));
        tcaHandle zero{};
        NODE_EXPECT_RESULT(tcaErrorInvalidHandle,
                           tcaDescSetMemcpy(d, &zero, 0, &mine, 0, 8, 0, 0, 0));
        tcaHandle far = peer;
        far.node = 40;
        NODE_EXPECT_RESULT(tcaErrorInvalidHandle,
                           tcaDescSetMemcpy(d, &far, 0, &mine, 0, 8, 0, 0, 0));
        // forged key: looks right, is not registered
        tcaHandle forged = peer;
        forged.key ^= 0x100;
        NODE_EXPECT_RESULT(tcaErrorNotRegistered,
                           tcaDescSetMemcpy(d, &forged, 0, &mine, 0, 8, 0, 0, 0));
        // ranges
        NODE_EXPECT_RESULT(tcaErrorOutOfRange,
                           tcaDescSetMemcpy(d, &peer, 4090, &mine, 0, 8, 0, 0, 0));
        NODE_EXPECT_RESULT(tcaErrorOutOfRange,
                           tcaDescSetMemcpy(d, &peer, 0, &mine, 1, 4096, 0, 0, 0));
        NODE_EXPECT_RESULT(tcaErrorOutOfRange,
                           tcaDescSetMemcpy(d, &peer, -1, &mine, 0, 8, 0, 0, 0));
        NODE_EXPECT_RESULT(tcaErrorOutOfRange, tcaDescSetMemcpy(d, &peer, 8, &mine, 0, SIZE_MAX - 4,
                                                                0, 0, 0));  // overflow
        NODE_EXPECT_RESULT(tcaErrorOutOfRange,
                           tcaDescSetMemcpy2D(d, &peer, 0, 1024, &mine, 0, 64, 64, 5, 0, 0, 0));
        NODE_EXPECT_RESULT(tcaErrorInvalidValue,
                           tcaDescSetMemcpy2D(d, &peer, 0, 32, &mine, 0, 64, 64, 2, 0, 0, 0));
        // put only: the source must be local
        NODE_EXPECT_RESULT(tcaErrorRemoteRead, tcaDescSetMemcpy(d, &mine, 0, &peer, 0, 8, 0, 0, 0));
        NODE_EXPECT_RESULT(tcaErrorRemoteRead,
                           tcaDescSetMemcpy2D(d, &mine, 0, 64, &peer, 0, 64, 8, 2, 0, 0, 0));
        // flags, slots, counters
        NODE_EXPECT_RESULT(tcaErrorInvalidValue,
                           tcaDescSetMemcpy(d, &peer, 0, &mine, 0, 8, 0x4000, 0, 0));
        NODE_EXPECT_RESULT(tcaErrorInvalidSlot,
                           tcaDescSetMemcpy(d, &peer, 0, &mine, 0, 8, tcaDMANotify, 64, 0));
        NODE_EXPECT_RESULT(tcaErrorInvalidSlot,
                           tcaDescSetMemcpy(d, &peer, 0, &mine, 0, 8, tcaDMANotify, -1, 0));
        NODE_EXPECT_RESULT(tcaErrorInvalidValue,
                           tcaDescSetTrigger(d, 0, 1, 0));  // no descriptor yet
        int len = -1;
        NODE_OK(tcaDescGetLength(d, &len));
        NODE_CHECK(len == 0);  // nothing invalid got in
        // 255 fit, the 256th does not
        for (int i = 0; i < TCA_MAX_DESCRIPTORS; ++i)
            NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &mine, 0, 8, 0, 0, 0));
        NODE_EXPECT_RESULT(tcaErrorTooManyDescriptors,
                           tcaDescSetMemcpy(d, &peer, 0, &mine, 0, 8, 0, 0, 0));
        NODE_EXPECT_RESULT(tcaErrorInvalidCounter, tcaDescSetTrigger(d, TCA_NUM_COUNTERS, 1, 0));
        NODE_EXPECT_RESULT(tcaErrorInvalidCounter, tcaDescSetCounterAdd(d, -2, 1));
        // channels
        NODE_EXPECT_RESULT(tcaErrorInvalidChannel, tcaDescSet(d, 4));
        NODE_EXPECT_RESULT(tcaErrorInvalidChannel, tcaDescSet(d, -1));
        NODE_EXPECT_RESULT(tcaErrorInvalidChannel, tcaStartDMADesc(TCA_NUM_DMA_CHANNELS));
        NODE_EXPECT_RESULT(tcaErrorInvalidChannel, tcaWaitDMAC(-1));
        NODE_EXPECT_RESULT(tcaErrorEmptyChain, tcaStartDMADesc(2));
        NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaDescFree(nullptr));
        // waits
        NODE_EXPECT_RESULT(tcaErrorInvalidSlot, tcaWaitDMARecvDesc(&peer, TCA_NOTIFY_SLOTS, 0));
        NODE_EXPECT_RESULT(tcaErrorInvalidHandle, tcaWaitDMARecvDesc(nullptr, 0, 0));
        NODE_EXPECT_RESULT(tcaErrorInvalidHandle, tcaWaitDMARecvDesc(&corrupt, 0, 0));
        // memory
        void *p = nullptr;
        NODE_EXPECT_RESULT(tcaErrorInvalidValue,
                           tcaMalloc(nullptr, 8, tcaMemoryCPU));  // (size 0 is valid)
        NODE_EXPECT_RESULT(tcaErrorInvalidValue,
                           tcaFree(buf.data(), tcaMemoryCPU));  // not from tcaMalloc
        NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaCreateHandle(&zero, nullptr, 8, tcaMemoryCPU));
        NODE_EXPECT_RESULT(tcaErrorOutOfRange,
                           tcaCreateHandle(&zero, buf.data(), 8, tcaMemoryInternal));
        NODE_EXPECT_RESULT(tcaErrorInvalidHandle, tcaDestroyHandle(&peer));  // only the owner may
        NODE_EXPECT_RESULT(tcaErrorNotSupported,
                           tcaPioMap(&peer, &p));  // host memory has no PIO window
        tcaDescFree(d);
        return 0;
    }));
}

// A busy channel queues a second start and takes a new chain for later
// starts (compat 3.1); the trigger releases the first run, then the rest follow.
TEST(Errors, BusyChannelQueues) {
    EXPECT_TRUE(run_nodes(1, [](int, Board &) {
        std::vector<unsigned char> a(64, 1), b(64), c(64);
        tcaHandle ha, hb, hc;
        NODE_OK(tcaCreateHandle(&ha, a.data(), 64, tcaMemoryCPU));
        NODE_OK(tcaCreateHandle(&hb, b.data(), 64, tcaMemoryCPU));
        NODE_OK(tcaCreateHandle(&hc, c.data(), 64, tcaMemoryCPU));
        tcaDesc *d = tcaDescNew(), *e = tcaDescNew();
        NODE_OK(tcaDescSetMemcpy(d, &hb, 0, &ha, 0, 64, 0, 0, 0));
        NODE_OK(tcaDescSetTrigger(d, 1, 1, 0));
        NODE_OK(tcaDescSetMemcpy(e, &hc, 0, &ha, 0, 64, 0, 0, 0));
        NODE_OK(tcaDescSet(d, 0));
        NODE_OK(tcaStartDMADesc(0));
        NODE_OK(tcaStartDMADesc(0));  // queued (the old code: tcaErrorChannelBusy)
        NODE_OK(tcaDescSet(e, 0));
        NODE_OK(tcaStartDMADesc(0));  // runs e, after both runs of d
        int done = 1;
        NODE_OK(tcaTestDMAC(0, &done));
        NODE_CHECK(done == 0);
        NODE_CHECK(b[0] == 0 && c[0] == 0);  // nothing overtook the parked run
        NODE_OK(tcaCounterAdd(1, 1));
        NODE_OK(tcaWaitDMAC(0));
        NODE_CHECK(b[63] == 1 && c[63] == 1);
        tcaDescFree(d);
        tcaDescFree(e);
        return 0;
    }));
}

// Destroyed registrations: a put into them fails, at validation and at run time.
TEST(Errors, StaleHandleAfterDestroyOrFree) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        auto [p, mine, peer] = exchange_buffers(node, board, 8192, tcaMemoryCPU);
        tcaDesc *d = tcaDescNew();
        if (node == 0)
            NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &mine, 0, 8192, 0, 0, 0));
        if (node == 0)
            NODE_OK(tcaDescSet(d, 0));
        board.barrier();
        if (node == 1)
            NODE_OK(tcaFree(p, tcaMemoryCPU));  // frees and invalidates the handle
        board.barrier();
        if (node == 0) {
            NODE_OK(tcaStartDMADesc(0));
            NODE_EXPECT_RESULT(tcaErrorNotRegistered, tcaWaitDMAC(0));
            NODE_EXPECT_RESULT(tcaErrorNotRegistered, tcaPioWrite(&peer, 0, p, 8, 0, 0, 0));
            NODE_EXPECT_RESULT(tcaErrorNotRegistered,
                               tcaDescSetMemcpy(d, &peer, 0, &mine, 0, 8, 0, 0, 0));
            NODE_OK(tcaDestroyHandle(&mine));
            NODE_EXPECT_RESULT(tcaErrorNotRegistered, tcaDestroyHandle(&mine));
            NODE_OK(tcaFree(p, tcaMemoryCPU));
        }
        board.barrier();
        tcaDescFree(d);
        return 0;
    }));
}

// tcaFree of internal memory invalidates every handle inside it, not only
// the one at its start.
TEST(Errors, FreeingInternalMemoryInvalidatesInnerHandles) {
    EXPECT_TRUE(run_nodes(1, [](int, Board &) {
        void *p = nullptr;
        NODE_OK(tcaMalloc(&p, 4096, tcaMemoryInternal));
        tcaHandle inner;
        NODE_OK(tcaCreateHandle(&inner, static_cast<char *>(p) + 64, 64, tcaMemoryInternal));
        NODE_OK(tcaFree(p, tcaMemoryInternal));
        char x[8] = {};
        NODE_EXPECT_RESULT(tcaErrorNotRegistered, tcaPioWrite(&inner, 0, x, 8, 0, 0, 0));
        NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaFree(p, tcaMemoryInternal));
        return 0;
    }));
}

// Notifications nobody consumes never hold the sender up (compat 3.2): far
// more than the old ring depth of 128, with a short timeout, all posted at
// once and all there for the receiver afterwards.  5 s, not less: the same
// timeout bounds the start-up rendezvous of the two nodes, which a loaded
// machine may stretch past a fraction of a second (300 ms here before); a
// sender held up waits for good (the receiver is at a barrier), so any
// timeout catches it.
TEST(Errors, UnconsumedNotificationsNeverTimeOut) {
    NodeOptions opt;
    opt.env = "TCA_TIMEOUT_MS=5000";
    EXPECT_TRUE(run_nodes(
        2,
        [](int node, Board &board) {
            auto [p, mine, peer] = exchange_buffers(node, board, 64, tcaMemoryInternal);
            constexpr int kPosts = 5000;
            if (node == 0)
                for (int i = 0; i < kPosts; ++i)
                    NODE_OK(tcaPioWrite(&peer, 0, nullptr, 0, tcaDMANotify, 1, 5));
            board.barrier();
            if (node == 1) {
                for (int i = 0; i < kPosts; ++i)
                    NODE_OK(tcaWaitDMARecvDesc(&peer, 1, 5));
                int flag = 1;
                NODE_OK(tcaTestDMARecvDesc(&peer, 1, 5, &flag));
                NODE_CHECK(flag == 0);
            }
            board.barrier();
            return 0;
        },
        opt));
}

// Each code has a distinct, non-empty message.
TEST(Errors, DistinctMessages) {
    std::set<std::string> seen;
    for (int r = 0; r < tcaErrorResultCount; ++r) {
        const std::string m = tcaGetErrorString(static_cast<tcaResult>(r));
        EXPECT_FALSE(m.empty());
        EXPECT_TRUE(seen.insert(m).second) << "duplicate message: " << m;
    }
    EXPECT_STREQ(tcaGetErrorString(static_cast<tcaResult>(999)), "unknown TCA result code");
}

// Two live processes claiming the same node of the same job.
TEST(Errors, JobKeyInUse) {
    const std::string key = unique_job_key("conflict");
    NodeOptions opt;
    opt.init = false;
    EXPECT_TRUE(run_nodes(
        2,
        [key](int node, Board &board) {
            tcaInitParams p{key.c_str(), 0, 1};
            if (node == 0) {
                NODE_OK(tcaInitWithParams(&p));
                board.barrier();
                board.barrier();
                NODE_OK(tcaFinalize());
            } else {
                board.barrier();
                NODE_EXPECT_RESULT(tcaErrorJobConflict, tcaInitWithParams(&p));
                board.barrier();
            }
            return 0;
        },
        opt));
}

// A peer that exits: puts to it and waits on it end with tcaErrorPeerGone,
// quickly, not after the timeout.
TEST(Errors, PeerExitedAndPeerKilled) {
    for (bool killed : {false, true}) {
        NodeOptions opt;
        opt.init = false;
        opt.killed_node = killed ? 2 : -1;
        const std::string key = unique_job_key(killed ? "killed" : "exited");
        EXPECT_TRUE(run_nodes(
            3,
            [key, killed](int node, Board &board) {
                tcaInitParams p{key.c_str(), node, 3};
                NODE_OK(tcaInitWithParams(&p));
                void *buf = nullptr;
                NODE_OK(tcaMalloc(&buf, 4096, tcaMemoryCPU));
                tcaHandle mine;
                NODE_OK(tcaCreateHandle(&mine, buf, 4096, tcaMemoryCPU));
                board.publish(node, 0, mine);
                board.barrier();
                if (node == 2) {
                    if (killed)
                        raise(SIGKILL);
                    NODE_OK(tcaFinalize());
                    board.value[0].store(1);
                    return 0;
                }
                tcaHandle gone = board.get(2, 0);
                if (!killed)
                    while (board.value[0].load() == 0)
                        usleep(100);
                const auto t0 = std::chrono::steady_clock::now();
                NODE_EXPECT_RESULT(tcaErrorPeerGone, tcaWaitDMARecvDesc(&gone, 0, 0));
                const auto waited = std::chrono::steady_clock::now() - t0;
                NODE_CHECK(waited < std::chrono::seconds(5));  // detected, not timed out (20 s)
                char x[8] = {};
                NODE_EXPECT_RESULT(tcaErrorPeerGone, tcaPioWrite(&gone, 0, x, 8, 0, 0, 0));
                board.end_barrier(node);  // node 2 arrives after its own early tcaFinalize
                NODE_OK(tcaFinalize());
                return 0;
            },
            opt))
            << (killed ? "killed" : "exited");
        EXPECT_EQ(count_segments(key), 0) << "segments left behind";
    }
}

}  // namespace
}  // namespace tca::test
