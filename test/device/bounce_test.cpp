// bounce_test.cpp - the bounce path (single copy refused): data integrity
// when every thread of a node serves its mailbox at once, and patience with a
// peer that is stopped rather than dead: a bounded wait, then success.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <chrono>
#include <thread>
#include <vector>

#include "harness.hpp"

namespace tca::test {
namespace {

// Both nodes write into each other at the same time, PIO from the
// application thread and DMA from the engine thread in turns, while a third
// thread lends itself to the device.  A node's mailbox is then served by its
// engine thread, its application thread (while its own write waits) and the
// lending thread.  A server that read the request number before it held the
// service lock copied the writer's next chunk to the previous chunk's address
// (seen as one 256 KiB chunk holding the next chunk's data).
TEST(Bounce, BothWaysWithEveryThreadServing) {
    NodeOptions opt;
    opt.env = "TCA_SINGLE_COPY=0";
    EXPECT_TRUE(run_nodes(
        2,
        [](int node, Board &board) {
            const size_t n = (1u << 20) + 4099;  // 5 chunks, the last one partial
            const int rounds = 200;
            std::vector<unsigned char> out(n), in(n);
            tcaHandle out_h, in_h;
            NODE_OK(tcaCreateHandle(&out_h, out.data(), n, tcaMemoryCPU));
            NODE_OK(tcaCreateHandle(&in_h, in.data(), n, tcaMemoryCPU));
            board.publish(node, 1, in_h);
            board.barrier();
            tcaHandle peer_in = board.get(1 - node, 1);
            std::atomic<bool> running{true};
            // More threads than cores: a server is often preempted mid-service.
            std::vector<std::thread> lenders;
            for (int i = 0; i < 2; ++i)
                lenders.emplace_back([&] {
                    while (running.load(std::memory_order_relaxed))
                        tcaProgress(nullptr);
                });
            tcaDesc *d = tcaDescNew();
            NODE_CHECK(d != nullptr);
            for (int r = 0; r < rounds; ++r) {
                const uint32_t my_seed = static_cast<uint32_t>(node * 100000 + r);
                const uint32_t peer_seed = static_cast<uint32_t>((1 - node) * 100000 + r);
                fill_pattern(out.data(), n, my_seed);
                if (r % 2 == 0) {
                    NODE_OK(tcaPioWrite(&peer_in, 0, out.data(), n, tcaDMANotify, 1, r));
                } else {
                    NODE_OK(tcaDescFree(d));
                    d = tcaDescNew();
                    NODE_CHECK(d != nullptr);
                    NODE_OK(tcaDescSetMemcpy(d, &peer_in, 0, &out_h, 0, n, tcaDMANotify, 1, r));
                    NODE_OK(tcaDescSet(d, 0));
                    NODE_OK(tcaStartDMADesc(0));
                    NODE_OK(tcaWaitDMAC(0));
                }
                NODE_OK(tcaWaitDMARecvDesc(&peer_in, 1, r));
                size_t bad = 0;
                if (!check_pattern(in.data(), n, peer_seed, &bad)) {
                    std::fprintf(stderr, "node %d round %d: byte %zu of %zu wrong (chunk %zu)\n",
                                 node, r, bad, n, bad / (256 * 1024));
                    std::_Exit(1);
                }
                board.barrier();  // the peer may overwrite `in` only after we checked it
            }
            running.store(false);
            for (auto &t : lenders)
                t.join();
            NODE_OK(tcaDescFree(d));
            board.barrier();
            return 0;
        },
        opt));
}

// Node 0 writes into node 1 while node 1 is stopped (SIGSTOP; resumed once
// the write returned, or by the Stopper's watchdog at twenty times the wait
// timeout).  The write gives up after the timeout (it used to wait
// for as long as the peer lived, which made every put to a stopped or wedged
// peer hang its caller, tcaFinalize included): tcaErrorTimeout, and the same
// write succeeds once the peer runs again.  test/device/bounded_wait_test.cpp
// has the DMA and finalize cases.
TEST(Bounce, StoppedPeerTimesOutThenWriteSucceeds) {
    NodeOptions opt;
    opt.env = "TCA_SINGLE_COPY=0;TCA_TIMEOUT_MS=1000";
    opt.timeout_s = 120;
    EXPECT_TRUE(run_nodes(
        2,
        [](int node, Board &board) {
            const size_t n = (1u << 20) + 5;
            StoppablePair pair(node, board, n);
            auto &[buf, mine, peer, target] = pair;
            if (node == 0) {
                fill_pattern(buf.data(), n, 5);
                Stopper stop(target);
                NODE_CHECK(stop.stopped());
                const auto t0 = std::chrono::steady_clock::now();
                const tcaResult r = tcaPioWrite(&peer, 0, buf.data(), n, 0, 0, 0);
                const double waited =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                stop.resume();
                const tcaResult again = tcaPioWrite(&peer, 0, buf.data(), n, 0, 0, 0);
                board.value[1].store(again == tcaSuccess ? 1
                                                         : 2);  // node 1 waits for this either way
                std::fprintf(stderr, "write to a stopped peer: %s after %.1f s\n",
                             tcaGetErrorString(r), waited);
                NODE_EXPECT_RESULT(tcaErrorTimeout, r);
                // Not before the timeout (load only makes it later), and long
                // before the watchdog: 10x the timeout, which a loaded machine
                // cannot take from a write that gave up in time (2.5 s could).
                NODE_CHECK(waited > 0.9 && waited < 10.0);
                NODE_OK(again);
            } else {
                // Not a tca wait: those would time out across the stop by design.
                while (board.value[1].load() == 0)
                    usleep(1000);
                NODE_CHECK(board.value[1].load() == 1 && check_pattern(buf.data(), n, 5));
            }
            board.barrier();
            return 0;
        },
        opt));
}

}  // namespace
}  // namespace tca::test
