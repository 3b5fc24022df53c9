// bounded_wait_test.cpp - every wait is bounded and every error reaches every
// waiter.  On the bounce path (single copy off: the target's engine copies
// each chunk) a put into a target stopped with SIGSTOP waits at most
// TCA_TIMEOUT_MS: tcaWaitDMAC and tcaPioWrite say tcaErrorTimeout, the DMA
// run stays queued and completes, data intact, once the target runs again;
// tcaFinalize does not wait for the stopped target.  A failed or aborted run
// is reported to every thread that waits for it.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "harness.hpp"

namespace tca::test {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

constexpr const char *kBounceEnv = "TCA_SINGLE_COPY=0;TCA_SHARED_HEAP=0;TCA_TIMEOUT_MS=1000";
constexpr double kTimeout = 1.0;  // s, as TCA_TIMEOUT_MS above
// A bounded wait has returned by then: 10x the timeout (it used to be 1.8 s,
// which the scheduler of a loaded machine can take from a wait that ended in
// time), half the Stopper's watchdog, at which the old code's waits ended.
constexpr double kLateAfter = 10 * kTimeout;
static_assert(kLateAfter < Stopper::kWatchdog, "the watchdog must come later");

// Until a waiter thread sleeps (state 'S' in /proc, as the Stopper reads a
// process's) at 10 looks in a row, 1 ms apart: it is inside its wait, which
// sleeps 10 ms at a time, not on its way there (a lock taken on the way
// would put it to sleep for a moment only).  Bounded (60 s): a thread that
// never gets there fails the test, not hangs it.
bool sleeps_soon(pid_t tid) {
    for (int i = 0, asleep = 0; i < 60000; ++i) {
        asleep = process_state(tid) == 'S' ? asleep + 1 : 0;
        if (asleep == 10)
            return true;
        usleep(1000);
    }
    return false;
}

// A DMA into a stopped target: tcaWaitDMAC says tcaErrorTimeout after about
// the timeout, and after SIGCONT the same run completes with its bytes.  A
// short chain (run inline by the start) and a long one (queued for the
// engine thread; several bounce chunks).  The old code waited (in the
// waiter's progress or the engine thread) for as long as the target lived.
TEST(BoundedWait, DmaWaitOnStoppedTargetTimesOutThenCompletes) {
    NodeOptions opt;
    opt.env = kBounceEnv;
    opt.timeout_s = 120;
    EXPECT_TRUE(run_nodes(
        2,
        [](int node, Board &board) {
            const size_t sizes[] = {4096, (1u << 20) + 5};
            const size_t n = sizes[1];
            std::vector<unsigned char> buf(n, 0);
            tcaHandle mine;
            tcaHandle peer = register_and_swap(node, board, buf.data(), n, tcaMemoryCPU, &mine);
            if (node == 1)
                board.value[0].store(static_cast<int>(getpid()));
            board.barrier();
            for (int round = 0; round < 2; ++round) {
                const size_t len = sizes[round];
                if (node == 0) {
                    const pid_t target = static_cast<pid_t>(board.value[0].load());
                    fill_pattern(buf.data(), len, 10 + round);
                    tcaDesc *d = tcaDescNew();
                    NODE_CHECK(d != nullptr);
                    NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &mine, 0, len, 0, 0, 0));
                    NODE_OK(tcaDescSet(d, 0));
                    Stopper stop(target);
                    NODE_CHECK(stop.stopped());
                    auto t0 = clock_type::now();
                    NODE_OK(tcaStartDMADesc(0));
                    const double start_s = seconds_since(t0);
                    t0 = clock_type::now();
                    const tcaResult r = tcaWaitDMAC(0);
                    const double waited = seconds_since(t0);
                    std::fprintf(stderr,
                                 "%zu bytes: start %.3f s; tcaWaitDMAC on a stopped target: %s "
                                 "after %.3f s\n",
                                 len, start_s, tcaGetErrorString(r), waited);
                    stop.resume();
                    // A start does not wait for the target (the old code waited
                    // as long as it was stopped: until the watchdog).
                    NODE_CHECK(start_s < kLateAfter);
                    NODE_EXPECT_RESULT(tcaErrorTimeout, r);
                    // Not before the timeout (load only makes it later), and
                    // long before the watchdog.
                    NODE_CHECK(waited >= 0.9 * kTimeout && waited < kLateAfter);
                    // The run went on: it completes once the target runs.
                    t0 = clock_type::now();
                    NODE_OK(tcaWaitDMAC(0));
                    std::fprintf(stderr, "%zu bytes: completed %.3f s after SIGCONT\n", len,
                                 seconds_since(t0));
                    NODE_OK(tcaDescFree(d));
                    board.value[1].store(round + 1);
                } else {
                    // Not a tca wait: it would time out across the stop.
                    while (board.value[1].load() < round + 1)
                        usleep(1000);
                    NODE_CHECK(check_pattern(buf.data(), len, 10 + round));
                }
                board.barrier();
            }
            return 0;
        },
        opt));
}

// tcaPioWrite (synchronous) into a stopped target says tcaErrorTimeout after
// about the timeout; once the target runs again the same write succeeds.
// The old code waited for as long as the target lived.
TEST(BoundedWait, PioWriteToStoppedTargetTimesOut) {
    NodeOptions opt;
    opt.env = kBounceEnv;
    opt.timeout_s = 120;
    EXPECT_TRUE(run_nodes(
        2,
        [](int node, Board &board) {
            const size_t n = (1u << 20) + 5;
            StoppablePair pair(node, board, n);
            auto &[buf, mine, peer, target] = pair;
            if (node == 0) {
                fill_pattern(buf.data(), n, 7);
                Stopper stop(target);
                NODE_CHECK(stop.stopped());
                auto t0 = clock_type::now();
                const tcaResult r = tcaPioWrite(&peer, 0, buf.data(), n, 0, 0, 0);
                const double waited = seconds_since(t0);
                std::fprintf(stderr, "tcaPioWrite to a stopped target: %s after %.3f s\n",
                             tcaGetErrorString(r), waited);
                stop.resume();
                NODE_EXPECT_RESULT(tcaErrorTimeout, r);
                NODE_CHECK(waited >= 0.9 * kTimeout && waited < kLateAfter);
                t0 = clock_type::now();
                NODE_OK(tcaPioWrite(&peer, 0, buf.data(), n, 0, 0, 0));
                std::fprintf(stderr, "tcaPioWrite after SIGCONT: %.3f s\n", seconds_since(t0));
                board.value[1].store(1);
            } else {
                while (board.value[1].load() == 0)
                    usleep(1000);
                NODE_CHECK(check_pattern(buf.data(), n, 7));
            }
            board.barrier();
            return 0;
        },
        opt));
}

// tcaFinalize with a DMA run still waiting for a stopped target returns at
// once: the engine thread gives the bounce copy up when told to stop.  The
// old code joined an engine thread that waited for as long as the target
// lived (until the watchdog).  Here the timeout is a minute, so a finalize
// that waited for it would come back at the watchdog too; the bound, 10 s,
// is what a loaded machine cannot take from a finalize that returns at once.
TEST(BoundedWait, FinalizeDoesNotWaitForAStoppedTarget) {
    NodeOptions opt;
    opt.env = "TCA_SINGLE_COPY=0;TCA_SHARED_HEAP=0;TCA_TIMEOUT_MS=60000";
    opt.timeout_s = 120;
    EXPECT_TRUE(run_nodes(
        2,
        [](int node, Board &board) {
            const size_t n = (1u << 20) + 5;
            StoppablePair pair(node, board, n);
            auto &[buf, mine, peer, target] = pair;
            if (node == 0) {
                tcaDesc *d = tcaDescNew();
                NODE_CHECK(d != nullptr);
                NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &mine, 0, n, 0, 0, 0));
                NODE_OK(tcaDescSet(d, 0));
                NODE_OK(tcaDescFree(d));
                Stopper stop(target);
                NODE_CHECK(stop.stopped());
                NODE_OK(tcaStartDMADesc(0));  // queued: the engine thread takes it up
                usleep(100 * 1000);
                const auto t0 = clock_type::now();
                const tcaResult r = tcaFinalize();
                const double took = seconds_since(t0);
                std::fprintf(stderr, "tcaFinalize with a stopped target: %s after %.3f s\n",
                             tcaGetErrorString(r), took);
                stop.resume();
                board.end_barrier(node);  // the harness's own tcaFinalize would find no node now
                std::_Exit(r == tcaSuccess && took < kLateAfter ? 0 : 1);
            }
            return 0;
        },
        opt));
}

// Two threads wait for the same run, which fails (its destination's
// registration is destroyed before its trigger releases it): both see the
// error.  The old code handed it to whichever waiter looked first and
// tcaSuccess to the other.
TEST(BoundedWait, EveryWaiterSeesTheRunsError) {
    EXPECT_TRUE(run_nodes(1, [](int, Board &) {
        std::vector<unsigned char> src(64, 7), dst(64, 0);
        tcaHandle hs, hd;
        NODE_OK(tcaCreateHandle(&hs, src.data(), src.size(), tcaMemoryCPU));
        NODE_OK(tcaCreateHandle(&hd, dst.data(), dst.size(), tcaMemoryCPU));
        tcaDesc *d = tcaDescNew();
        NODE_OK(tcaDescSetMemcpy(d, &hd, 0, &hs, 0, 64, 0, 0, 0));
        NODE_OK(tcaDescSetTrigger(d, 41, 1, 1));  // parks until counter 41 >= 1
        NODE_OK(tcaDescSet(d, 2));
        NODE_OK(tcaStartDMADesc(2));
        std::atomic<int> results[2] = {-1, -1};
        std::atomic<pid_t> tids[2] = {0, 0};
        std::vector<std::thread> waiters;
        for (int i = 0; i < 2; ++i)
            waiters.emplace_back([&results, &tids, i] {
                tids[i].store(static_cast<pid_t>(syscall(SYS_gettid)));
                results[i].store(tcaWaitDMAC(2));
            });
        // Both are waiting (a thread that came later would find the error
        // said already, by design): not a pause that a loaded machine may
        // outlast, their state.
        for (auto &tid : tids) {
            while (tid.load() == 0)
                usleep(1000);
            NODE_CHECK(sleeps_soon(tid.load()));
        }
        NODE_OK(tcaDestroyHandle(&hd));
        NODE_OK(tcaCounterAdd(41, 1));
        for (auto &t : waiters)
            t.join();
        for (auto &res : results)
            NODE_EXPECT_RESULT(tcaErrorNotRegistered, static_cast<tcaResult>(res.load()));
        NODE_OK(tcaWaitDMAC(2));  // said once to everyone waiting: not again
        tcaDescFree(d);
        return 0;
    }));
}

// Runs dropped by tcaAbortDMAC complete as aborted, and every thread
// waiting for them is told so.  The old code counted them as completed
// without an error.
TEST(BoundedWait, AbortedRunsAreReportedToEveryWaiter) {
    EXPECT_TRUE(run_nodes(1, [](int, Board &) {
        std::vector<unsigned char> src(64, 7), dst(64, 0);
        tcaHandle hs, hd;
        NODE_OK(tcaCreateHandle(&hs, src.data(), src.size(), tcaMemoryCPU));
        NODE_OK(tcaCreateHandle(&hd, dst.data(), dst.size(), tcaMemoryCPU));
        tcaDesc *d = tcaDescNew();
        NODE_OK(tcaDescSetMemcpy(d, &hd, 0, &hs, 0, 64, 0, 0, 0));
        NODE_OK(tcaDescSetTrigger(d, 42, 1, 1));  // counter 42 stays 0: parks
        NODE_OK(tcaDescSet(d, 3));
        NODE_OK(tcaStartDMADesc(3));
        NODE_OK(tcaStartDMADesc(3));  // queued behind it
        std::atomic<int> results[2] = {-1, -1};
        std::atomic<pid_t> tids[2] = {0, 0};
        std::vector<std::thread> waiters;
        for (int i = 0; i < 2; ++i)
            waiters.emplace_back([&results, &tids, i] {
                tids[i].store(static_cast<pid_t>(syscall(SYS_gettid)));
                results[i].store(tcaWaitDMAC(3));
            });
        for (auto &tid : tids) {  // both are waiting (as above)
            while (tid.load() == 0)
                usleep(1000);
            NODE_CHECK(sleeps_soon(tid.load()));
        }
        NODE_OK(tcaAbortDMAC(3));
        for (auto &t : waiters)
            t.join();
        for (auto &res : results)
            NODE_EXPECT_RESULT(tcaErrorAborted, static_cast<tcaResult>(res.load()));
        NODE_CHECK(dst[0] == 0);
        NODE_OK(tcaWaitDMAC(3));  // reported: a later wait is clean
        NODE_CHECK(std::strlen(tcaGetErrorString(tcaErrorAborted)) > 0);
        tcaDescFree(d);
        return 0;
    }));
}

}  // namespace
}  // namespace tca::test
