// notify_test.cpp - notifications strictly after data (stress), non-blocking
// tests, counters and triggered descriptors forming a 3-stage pipeline.
#include <string>
#include <atomic>
#include <cstring>
#include <vector>

#include "harness.hpp"

namespace tca::test {
namespace {

// Thousands of iterations; the receiver checks the whole payload the moment
// it sees the notification.  A notification that overtook its data fails.
int notify_after_data(int node, Board &board, bool via_pio, tcaMemoryType target) {
    const size_t size = via_pio ? 256 : 64 * 1024;
    const int iters = via_pio ? 20000 : 4000;
    const tcaMemoryType my_type = node == 1 ? target : tcaMemoryCPU;
    auto [buf, mine, peer] = exchange_buffers(node, board, size, my_type);
    tcaDesc *d = tcaDescNew();
    if (node == 0) {
        NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &mine, 0, size, tcaDMANotify, 1, 0));
        NODE_OK(tcaDescSet(d, 0));
    }
    auto *w = static_cast<uint64_t *>(buf);
    const size_t words = size / 8;
    for (int i = 1; i <= iters; ++i) {
        if (node == 0) {
            for (size_t k = 0; k < words; ++k)
                w[k] = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + k;
            if (via_pio) {
                NODE_OK(tcaPioWrite(&peer, 0, buf, size, tcaDMANotify, 1, 0));
            } else {
                NODE_OK(tcaStartDMADesc(0));
                NODE_OK(tcaWaitDMAC(0));
            }
            NODE_OK(tcaWaitDMARecvDesc(&peer, 2, 0));  // receiver checked: may overwrite
        } else {
            NODE_OK(tcaWaitDMARecvDesc(&peer, 1, 0));
            for (size_t k = 0; k < words; ++k)
                if (w[k] != static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + k) {
                    std::fprintf(stderr, "iteration %d word %zu: data not there when notified\n", i,
                                 k);
                    return 1;
                }
            NODE_OK(tcaPioWrite(&peer, 0, nullptr, 0, tcaDMANotify, 2, 0));
        }
    }
    tcaDescFree(d);
    return 0;
}

TEST(Notify, StrictlyAfterDmaDataStress) {
    EXPECT_TRUE(
        run_nodes(2, [](int n, Board &b) { return notify_after_data(n, b, false, tcaMemoryCPU); }));
}
TEST(Notify, StrictlyAfterPioDataStressInternal) {
    EXPECT_TRUE(run_nodes(
        2, [](int n, Board &b) { return notify_after_data(n, b, true, tcaMemoryInternal); }));
}
TEST(Notify, StrictlyAfterPioDataStressHost) {
    EXPECT_TRUE(
        run_nodes(2, [](int n, Board &b) { return notify_after_data(n, b, true, tcaMemoryCPU); }));
}

// Many notifications with different tags in flight: none lost, none merged,
// any order of waiting works.
TEST(Notify, ManyTagsNoneLost) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        char byte = 0;
        auto [p, mine, peer] = exchange_buffers(node, board, 64, tcaMemoryInternal);
        const int n = 500;
        if (node == 0) {
            for (int i = 0; i < n; ++i)
                NODE_OK(tcaPioWrite(&peer, 0, &byte, 1, tcaDMANotify, 9, i % 7));
        } else {
            // take all tag 6 first, then the rest in descending tag order
            for (int tag = 6; tag >= 0; --tag) {
                const int count = n / 7 + (tag < n % 7 ? 1 : 0);
                for (int i = 0; i < count; ++i)
                    NODE_OK(tcaWaitDMARecvDesc(&peer, 9, tag));
            }
            int flag = 1;
            for (int tag = 0; tag < 7; ++tag) {
                NODE_OK(tcaTestDMARecvDesc(&peer, 9, tag, &flag));
                NODE_CHECK(flag == 0);  // exactly n, not more
            }
        }
        return 0;
    }));
}

TEST(Notify, TestVariantsAreNonBlocking) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        auto [p, mine, peer] = exchange_buffers(node, board, 4096, tcaMemoryCPU);
        std::memset(p, 0x5a, 4096);
        int flag = 7;
        NODE_OK(tcaTestDMARecvDesc(&peer, 0, 1, &flag));
        NODE_CHECK(flag == 0);
        int done = 7;
        NODE_EXPECT_RESULT(tcaErrorInvalidChannel, tcaTestDMAC(4, &done));
        board.barrier();
        if (node == 0)
            NODE_OK(tcaPioWrite(&peer, 0, p, 16, tcaDMANotify, 0, 1));
        if (node == 1) {
            while (flag == 0)
                NODE_OK(tcaTestDMARecvDesc(&peer, 0, 1, &flag));
            NODE_CHECK(flag == 1);
        }
        NODE_OK(tcaFree(p, tcaMemoryCPU));
        return 0;
    }));
}

TEST(Counters, AddReadWait) {
    EXPECT_TRUE(run_nodes(1, [](int, Board &) {
        uint64_t v = 1;
        NODE_OK(tcaCounterRead(5, &v));
        NODE_CHECK(v == 0);
        NODE_OK(tcaCounterAdd(5, 3));
        NODE_OK(tcaCounterAdd(5, 4));
        NODE_OK(tcaCounterWait(5, 7));
        NODE_OK(tcaCounterRead(5, &v));
        NODE_CHECK(v == 7);
        NODE_EXPECT_RESULT(tcaErrorInvalidCounter, tcaCounterAdd(TCA_NUM_COUNTERS, 1));
        NODE_EXPECT_RESULT(tcaErrorInvalidCounter, tcaCounterRead(-1, &v));
        return 0;
    }));
}

// Remote counter adds ("ready for epoch k") and interrupts between 3 nodes:
// each node adds to every node's counter 9; everyone waits for the total.
TEST(Counters, RemoteAddAndInterrupts) {
    EXPECT_TRUE(run_nodes(3, [](int node, Board &board) {
        uint32_t before = 0;
        NODE_OK(tcaInterruptCount(&before));
        for (int to = 0; to < 3; ++to)
            NODE_OK(tcaCounterAddRemote(to, 9, uint64_t{1} << (8 * node)));
        NODE_OK(tcaCounterWait(9, 0x010101));
        uint64_t v = 0;
        NODE_OK(tcaCounterRead(9, &v));
        NODE_CHECK(v == 0x010101);
        uint32_t after = 0;
        NODE_OK(tcaInterruptCount(&after));
        NODE_CHECK(after != before);  // counter updates raise the interrupt
        NODE_OK(tcaInterruptRaise((node + 1) % 3));
        NODE_EXPECT_RESULT(tcaErrorInvalidNode, tcaCounterAddRemote(3, 9, 1));
        NODE_EXPECT_RESULT(tcaErrorInvalidCounter, tcaCounterAddRemote(0, TCA_NUM_COUNTERS, 1));
        NODE_EXPECT_RESULT(tcaErrorInvalidNode, tcaInterruptRaise(-1));
        // A count that is already stale returns at once, even with a long timeout.
        NODE_OK(tcaInterruptWait(after - 1, 10'000'000));
        char path[256];
        NODE_OK(tcaGetBackingPath(path, sizeof path));
        NODE_CHECK(std::string(path).find("/dev/shm/") == 0);
        // Nobody leaves before its neighbour raised its interrupt: a raise at
        // a node that has exited is tcaErrorPeerGone.
        board.barrier();
        return 0;
    }));
}

// The race a counter add must never lose: the waiter reads the interrupt
// count, finds no work, and sleeps on the count just as the add lands.  The
// producer skips the wake-up only when nobody listens, so every round here
// must wake well before the 5 s timeout.  Both sides vary their delays so
// that many adds land between the waiter's check and its sleep.
TEST(Counters, NoLostWakeUps) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &) {
        constexpr uint64_t kRounds = 3000;
        auto spin = [](uint64_t n) {
            for (volatile uint64_t k = 0; k < n; k = k + 1) {
            }
        };
        for (uint64_t i = 1; i <= kRounds; ++i) {
            if (node == 0) {
                uint64_t acked = 0;
                while (acked < i - 1)
                    NODE_OK(tcaCounterRead(12, &acked));
                spin((i % 7) * 300);
                NODE_OK(tcaCounterAddRemote(1, 11, 1));
                continue;
            }
            for (;;) {
                uint32_t seen = 0;
                NODE_OK(tcaInterruptCount(&seen));
                uint64_t v = 0;
                NODE_OK(tcaCounterRead(11, &v));
                if (v >= i)
                    break;
                spin((i % 5) * 600);  // "looking for other work"
                const tcaResult r = tcaInterruptWait(seen, 5'000'000);
                if (r == tcaErrorTimeout) {
                    std::fprintf(stderr, "round %llu: wake-up lost\n",
                                 static_cast<unsigned long long>(i));
                    return 1;
                }
                NODE_OK(r);
            }
            NODE_OK(tcaCounterAddRemote(0, 12, 1));
        }
        return 0;
    }));
}

// Offload: node 0 -> node 1 -> node 2, segment by segment.  Node 1's chain is
// made of triggered descriptors: segment s is forwarded as soon as it has
// landed (counter 0 reaches s+1 + epoch*S).  No CPU work on node 1 between
// its start and the end of the epoch; three epochs without re-arming.
TEST(Offload, TriggeredThreeStagePipeline) {
    EXPECT_TRUE(run_nodes(3, [](int node, Board &board) {
        const int segments = 8;
        const size_t seg = 64 * 1024 + 5;
        const size_t size = seg * segments;
        std::vector<unsigned char> buf(size);
        tcaHandle mine;
        NODE_OK(tcaCreateHandle(&mine, buf.data(), size, tcaMemoryCPU));
        board.publish(node, 0, mine);
        board.barrier();
        tcaDesc *d = tcaDescNew();
        if (node < 2) {
            tcaHandle next = board.get(node + 1, 0);
            for (int s = 0; s < segments; ++s) {
                const off_t off = static_cast<off_t>(seg) * s;
                NODE_OK(tcaDescSetMemcpy(d, &next, off, &mine, off, seg, 0, 0, 0));
                NODE_OK(tcaDescSetCounterAdd(d, 0, 1));
                if (node == 1)
                    NODE_OK(tcaDescSetTrigger(d, 0, static_cast<uint64_t>(s) + 1, segments));
            }
            NODE_OK(tcaDescSet(d, 0));
        }
        tcaHandle h0 = board.get(0, 0), h2 = board.get(2, 0);
        for (int epoch = 0; epoch < 3; ++epoch) {
            if (node == 1)
                NODE_OK(tcaStartDMADesc(0));  // armed: waits for segments to land
            board.barrier();
            if (node == 0) {
                fill_pattern(buf.data(), size, static_cast<uint32_t>(epoch + 50));
                NODE_OK(tcaStartDMADesc(0));
                NODE_OK(tcaWaitDMAC(0));
                NODE_OK(tcaWaitDMARecvDesc(&h2, 0, epoch));  // node 2 verified this epoch
            } else if (node == 1) {
                NODE_OK(tcaWaitDMAC(0));
                NODE_CHECK(check_pattern(buf.data(), size, static_cast<uint32_t>(epoch + 50)));
            } else {
                NODE_OK(tcaCounterWait(0, static_cast<uint64_t>(segments) * (epoch + 1)));
                NODE_CHECK(check_pattern(buf.data(), size, static_cast<uint32_t>(epoch + 50)));
                NODE_OK(tcaPioWrite(&h0, 0, nullptr, 0, tcaDMANotify, 0, epoch));
            }
            board.barrier();
        }
        tcaDescFree(d);
        return 0;
    }));
}

// Abort: a chain whose second descriptor waits for a counter that never moves
// is stopped and the run queued behind it dropped; the first descriptor's data
// is there, the second's is not, the runs count as completed - as aborted, said
// once by the next wait - and the chain stays loaded for the next start.
TEST(Offload, AbortStopsAWaitingChain) {
    EXPECT_TRUE(run_nodes(1, [](int, Board &) {
        std::vector<unsigned char> src(64, 7), dst(64, 0);
        tcaHandle hs, hd;
        NODE_OK(tcaCreateHandle(&hs, src.data(), src.size(), tcaMemoryCPU));
        NODE_OK(tcaCreateHandle(&hd, dst.data(), dst.size(), tcaMemoryCPU));
        tcaDesc *d = tcaDescNew();
        NODE_OK(tcaDescSetMemcpy(d, &hd, 0, &hs, 0, 32, 0, 0, 0));
        NODE_OK(tcaDescSetMemcpy(d, &hd, 32, &hs, 32, 32, 0, 0, 0));
        NODE_OK(tcaDescSetTrigger(d, 40, 1, 1));  // counter 40 stays 0
        NODE_OK(tcaDescSet(d, 1));
        NODE_OK(tcaStartDMADesc(1));
        while (dst[0] != 7)
            NODE_OK(tcaProgress(nullptr));
        int done = 1;
        NODE_OK(tcaTestDMAC(1, &done));
        NODE_CHECK(done == 0);        // parked on the trigger
        NODE_OK(tcaStartDMADesc(1));  // queued behind the parked run
        NODE_OK(tcaAbortDMAC(1));     // drops the queued run too
        NODE_EXPECT_RESULT(tcaErrorAborted, tcaTestDMAC(1, &done));
        NODE_CHECK(done == 1);
        NODE_OK(tcaTestDMAC(1, &done));  // said once
        NODE_CHECK(done == 1);
        NODE_CHECK(dst[32] == 0);  // the waiting descriptor never ran
        NODE_OK(tcaAbortDMAC(1));  // nothing running: a no-op
        // Still loaded: the next run (the third start) needs counter >= 1 + 2
        // (thresholds move per start, dropped ones included).
        NODE_OK(tcaStartDMADesc(1));
        NODE_OK(tcaCounterAdd(40, 2));
        NODE_OK(tcaTestDMAC(1, &done));
        NODE_CHECK(done == 0);
        NODE_OK(tcaCounterAdd(40, 1));
        NODE_OK(tcaWaitDMAC(1));
        NODE_CHECK(dst[32] == 7);
        NODE_EXPECT_RESULT(tcaErrorInvalidChannel, tcaAbortDMAC(TCA_NUM_DMA_CHANNELS));
        tcaDescFree(d);
        return 0;
    }));
}

}  // namespace
}  // namespace tca::test
