// channel_reuse_test.cpp - channels as published programs use them (compat
// 3.1, 3.8): restarted and reloaded without tcaWaitDMAC, right after and even
// before the notification of the last descriptor; empty chains; descriptors
// of a chain landing in order (a receiver polling memory, as R6 does).
#include <sched.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "harness.hpp"

namespace tca::test {
namespace {

constexpr int kTag = 0x100;  // the published programs' tag
constexpr int kFlags = tcaDMAUseInternal | tcaDMAUseNotifyInternal;

// B3/B4 style: a chain of two descriptors that both notify self; the sender
// restarts after one of the two self-notifications (before the last
// descriptor has run) or after all of them (right after the last one), never
// calling tcaWaitDMAC in the loop.  The receiver waits one notification per
// run and finds the run's data.  The old code refused these starts with
// tcaErrorChannelBusy.
TEST(ChannelReuse, RestartBeforeAndAfterLastNotification) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        constexpr size_t kBulk = 32 * 1024;
        constexpr int kRuns = 400;
        auto [buf, mine, peer] = exchange_buffers(node, board, kBulk + 64, tcaMemoryCPU);
        auto *bytes = static_cast<unsigned char *>(buf);
        if (node == 0) {
            fill_pattern(bytes, kBulk, 7);
            const uint64_t marker = 0x5eed;
            std::memcpy(bytes + kBulk, &marker, 8);
            tcaDesc *d = tcaDescNew();
            NODE_OK(
                tcaDescSetMemcpy(d, &peer, 0, &mine, 0, kBulk, kFlags | tcaDMANotifySelf, 0, kTag));
            NODE_OK(tcaDescSetMemcpy(d, &peer, kBulk, &mine, kBulk, 8,
                                     kFlags | tcaDMANotify | tcaDMANotifySelf, 0, kTag));
            NODE_OK(tcaDescSet(d, 0));
            int waited = 0;
            for (int run = 0; run < kRuns; ++run) {
                NODE_OK(tcaStartDMADesc(0));
                // Even runs: one self-notification (the first descriptor's);
                // odd runs: everything still owed, i.e. up to the last one.
                const int want = run % 2 == 0 ? waited + 1 : 2 * (run + 1);
                for (; waited < want; ++waited)
                    NODE_OK(tcaWaitDMARecvDesc(&mine, 0, kTag));
            }
            NODE_OK(tcaWaitDMAC(0));  // every queued run has completed: all notifications are there
            NODE_CHECK(drain_count(&mine, 0, kTag) == 2 * kRuns - waited);
            NODE_OK(tcaWaitDMAC(0));  // nothing left: returns at once
            tcaDescFree(d);
        } else {
            for (int run = 0; run < kRuns; ++run) {
                NODE_OK(tcaWaitDMARecvDesc(&peer, 0, kTag));
                size_t bad = 0;
                if (!check_pattern(bytes, kBulk, 7, &bad)) {
                    std::fprintf(stderr, "run %d: byte %zu of the first descriptor missing\n", run,
                                 bad);
                    return 1;
                }
            }
        }
        board.barrier();
        NODE_CHECK(node == 0 ||
                   drain_count(&peer, 0, kTag) == 0);  // one notification per run, not more
        return 0;
    }));
}

// B6a / R2 style: the channel is reloaded (and restarted) while earlier runs
// are still queued or running.  Each run writes a marker of its own to its
// own offset after a bulk copy; a reload must not change what a started run
// does, and runs complete in start order (the receiver finds run k's marker
// with the k-th notification), also those queued beyond the ring.
TEST(ChannelReuse, ReloadWhileRunningKeepsEachRunsChain) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        constexpr size_t kBulk =
            256 * 1024;  // above the inline limit: runs go to the engine and queue
        constexpr int kRuns =
            160;  // past the 64 queued runs of a channel's ring: into its overflow
        constexpr size_t kMarks = kBulk;
        auto [buf, mine, peer] = exchange_buffers(node, board, kBulk + kRuns * 8, tcaMemoryCPU);
        auto *bytes = static_cast<unsigned char *>(buf);
        auto marker = [](int k) { return 0xabc0000ull + static_cast<uint64_t>(k); };
        if (node == 0) {
            fill_pattern(bytes, kBulk, 3);
            for (int k = 0; k < kRuns; ++k) {
                const uint64_t m = marker(k);
                std::memcpy(bytes + kMarks + 8 * k, &m, 8);
            }
            for (int k = 0; k < kRuns; ++k) {
                tcaDesc *d = tcaDescNew();
                const off_t at = static_cast<off_t>(kMarks + 8 * k);
                NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &mine, 0, kBulk, kFlags, 0, 0));
                NODE_OK(tcaDescSetMemcpy(d, &peer, at, &mine, at, 8,
                                         kFlags | tcaDMANotify | tcaDMANotifySelf, 0, kTag));
                NODE_OK(tcaDescSet(
                    d, 0));  // while earlier runs are running (old code: tcaErrorChannelBusy)
                NODE_OK(tcaStartDMADesc(0));
                NODE_OK(tcaDescFree(d));  // allowed after the start: the run keeps its chain
            }
            NODE_OK(tcaWaitDMAC(0));
            NODE_CHECK(drain_count(&mine, 0, kTag) == kRuns);
        } else {
            const auto *marks = reinterpret_cast<const uint64_t *>(bytes + kMarks);
            for (int k = 0; k < kRuns; ++k) {
                NODE_OK(tcaWaitDMARecvDesc(&peer, 0, kTag));
                uint64_t got = 0;
                std::memcpy(&got, &marks[k], 8);
                if (got != marker(k)) {
                    std::fprintf(stderr, "notification %d: its run's marker is %#llx\n", k,
                                 static_cast<unsigned long long>(got));
                    return 1;
                }
            }
            NODE_CHECK(check_pattern(bytes, kBulk, 3));
        }
        board.barrier();
        return 0;
    }));
}

// Empty chains (R1 with no shadowed neighbour) load, start and wait like any
// other, also queued behind a running chain.  The old code: tcaErrorEmptyChain.
TEST(ChannelReuse, EmptyChainsRunAndComplete) {
    EXPECT_TRUE(run_nodes(1, [](int, Board &) {
        tcaDesc *empty = tcaDescNew();
        NODE_OK(tcaDescSet(empty, 2));
        for (int i = 0; i < 3; ++i)
            NODE_OK(tcaStartDMADesc(2));
        NODE_OK(tcaWaitDMAC(2));
        int done = 0;
        NODE_OK(tcaTestDMAC(2, &done));
        NODE_CHECK(done == 1);
        NODE_OK(tcaWaitDMAC(3));  // never used: succeeds at once

        // Behind a parked triggered run: queued, completes after it.
        std::vector<unsigned char> a(64, 9), b(64, 0);
        tcaHandle ha, hb;
        NODE_OK(tcaCreateHandle(&ha, a.data(), a.size(), tcaMemoryCPU));
        NODE_OK(tcaCreateHandle(&hb, b.data(), b.size(), tcaMemoryCPU));
        tcaDesc *d = tcaDescNew();
        NODE_OK(tcaDescSetMemcpy(d, &hb, 0, &ha, 0, 64, kFlags, 0, 0));
        NODE_OK(tcaDescSetTrigger(d, 7, 1, 0));
        NODE_OK(tcaDescSet(d, 2));
        NODE_OK(tcaStartDMADesc(2));
        NODE_OK(tcaDescSet(empty, 2));
        NODE_OK(tcaStartDMADesc(2));
        NODE_OK(tcaTestDMAC(2, &done));
        NODE_CHECK(done == 0);
        NODE_OK(tcaCounterAdd(7, 1));
        NODE_OK(tcaWaitDMAC(2));
        NODE_CHECK(b[63] == 9);
        tcaDescFree(d);
        tcaDescFree(empty);
        return 0;
    }));
}

// R6: descriptor 1 writes a packet, descriptor 2 of the same chain a sequence
// number; the receiver polls the sequence number in its memory (no library
// call) and then reads the packet, which must be complete.  It acknowledges by
// a DMA of its own that the sender polls the same way.  Small chains run on
// the starting thread, large ones on the engine thread: both sizes.
int polled_packets(int node, Board &board, size_t packet) {
    constexpr int kPackets = 300;
    const size_t seq_at = packet, ack_at = packet + 64, size = packet + 128;
    auto [buf, mine, peer] = exchange_buffers(node, board, size, tcaMemoryCPU);
    auto *bytes = static_cast<unsigned char *>(buf);
    std::memset(bytes, 0, size);
    board.barrier();
    auto word = [&](size_t at) {
        return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t *>(bytes + at));
    };
    auto poll = [&](size_t at, uint64_t v) {
        // Yield now and then: on a loaded host the writer needs the CPU.
        for (unsigned spins = 1; word(at).load(std::memory_order_acquire) != v; ++spins)
            if (spins % 64 == 0)
                sched_yield();
    };
    tcaDesc *d = tcaDescNew();
    if (node == 0) {
        NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &mine, 0, packet, kFlags, 16,
                                 31));  // no notify flag: ignored
        NODE_OK(tcaDescSetMemcpy(d, &peer, static_cast<off_t>(seq_at), &mine,
                                 static_cast<off_t>(seq_at), 8, kFlags, 16, 31));
    } else {
        NODE_OK(tcaDescSetMemcpy(d, &peer, static_cast<off_t>(ack_at), &mine,
                                 static_cast<off_t>(ack_at), 8, kFlags, 0, 0));
    }
    NODE_OK(tcaDescSet(d, 0));
    for (uint64_t k = 1; k <= kPackets; ++k) {
        if (node == 0) {
            fill_pattern(bytes, packet, static_cast<uint32_t>(k));
            word(seq_at).store(k, std::memory_order_relaxed);
            NODE_OK(tcaStartDMADesc(0));
            poll(ack_at, k);  // the receiver has read packet k: we may overwrite it
        } else {
            poll(seq_at, k);
            size_t bad = 0;
            if (!check_pattern(bytes, packet, static_cast<uint32_t>(k), &bad)) {
                std::fprintf(stderr,
                             "packet %llu: byte %zu not there when its sequence number was\n",
                             static_cast<unsigned long long>(k), bad);
                return 1;
            }
            word(ack_at).store(k, std::memory_order_relaxed);
            NODE_OK(tcaStartDMADesc(0));
        }
    }
    NODE_OK(tcaWaitDMAC(0));
    tcaDescFree(d);
    board.barrier();
    return 0;
}

TEST(ChainOrder, PolledSequenceNumberAfterPacketSmall) {
    EXPECT_TRUE(run_nodes(2, [](int n, Board &b) { return polled_packets(n, b, 4096); }));
}
TEST(ChainOrder, PolledSequenceNumberAfterPacketLarge) {
    EXPECT_TRUE(run_nodes(2, [](int n, Board &b) { return polled_packets(n, b, 128 * 1024); }));
}

}  // namespace
}  // namespace tca::test
