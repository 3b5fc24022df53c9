// timing_test.cpp - the timing model delays delivery to the modelled times,
// measured from the start: no byte of a descriptor is visible before its
// modelled arrival (the device paces large transfers) and the notification
// not before the modelled end, however fast the real copy is.  Lower bounds
// only (steady_clock is one clock for all processes), so CPU load cannot
// make them fail.
#include <chrono>
#include <cstring>
#include <string>

#include <unistd.h>

#include "harness.hpp"

namespace tca::test {
namespace {

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

TEST(TimingModel, DataAndNotificationWaitForTheModelledTimes) {
    constexpr size_t kBytes = 4u << 20;
    constexpr int64_t kStartNs = 1'000'000, kLatencyNs = 3'000'000;
    constexpr double kMbPerS = 400;  // 4 MiB: 10.5 ms on the modelled link, a few ms to copy
    NodeOptions opt;
    opt.env = "TCA_TIMING=1;TCA_DMA_HANDOFF_NS=0;TCA_CHAIN_START_NS=1000000;TCA_DMA_LATENCY_NS="
              "3000000;TCA_HOST_BANDWIDTH_MBS=400";
    EXPECT_TRUE(run_nodes(
        2,
        [&](int node, Board &b) {
            PairBuffers p = exchange_buffers(node, b, kBytes, tcaMemoryCPU);
            // The start time crosses over in two 32-bit halves, then a flag.
            auto publish_start = [&](int64_t t) {
                b.value[0].store(static_cast<int>(t >> 32), std::memory_order_relaxed);
                b.value[1].store(static_cast<int>(t & 0xffffffff), std::memory_order_relaxed);
                b.value[2].store(1, std::memory_order_release);
            };
            auto start_time = [&] {
                while (b.value[2].load(std::memory_order_acquire) == 0) {
                }
                return (static_cast<int64_t>(b.value[0].load(std::memory_order_relaxed)) << 32) |
                       static_cast<int64_t>(
                           static_cast<uint32_t>(b.value[1].load(std::memory_order_relaxed)));
            };
            if (node == 0) {
                std::memset(p.buf, 0xab, kBytes);
                tcaDesc *d = tcaDescNew();
                NODE_CHECK(d != nullptr);
                NODE_OK(tcaDescSetMemcpy(d, &p.peer, 0, &p.mine, 0, kBytes,
                                         tcaDMAUseInternal | tcaDMAUseNotifyInternal | tcaDMANotify,
                                         2, 9));
                NODE_OK(tcaDescSet(d, 0));
                b.barrier();
                publish_start(now_ns());
                NODE_OK(tcaStartDMADesc(0));
                NODE_OK(tcaWaitDMAC(0));
                NODE_OK(tcaDescFree(d));
            } else {
                auto *dst = static_cast<volatile unsigned char *>(p.buf);
                b.barrier();
                while (dst[0] != 0xab) {
                }
                const int64_t first = now_ns();
                while (dst[kBytes - 1] != 0xab) {
                }
                const int64_t last = now_ns();
                NODE_OK(tcaWaitDMARecvDesc(&p.peer, 2, 9));
                const int64_t notified = now_ns();
                const int64_t t0 = start_time();
                const auto link_ns = [&](double bytes) {
                    return static_cast<int64_t>(bytes * 1000.0 / kMbPerS);
                };
                std::fprintf(stderr, "first byte +%.2f ms, last +%.2f ms, notification +%.2f ms\n",
                             (first - t0) / 1e6, (last - t0) / 1e6, (notified - t0) / 1e6);
                NODE_CHECK(first - t0 >= kStartNs + kLatencyNs);
                // the last 64 KiB piece may land with its first byte
                NODE_CHECK(last - t0 >= kStartNs + kLatencyNs + link_ns(kBytes - 64 * 1024));
                NODE_CHECK(notified - t0 >= kStartNs + kLatencyNs + link_ns(kBytes) - 1000);
            }
            b.barrier();
            return 0;
        },
        opt));
}

// With the model on, a short chain started on an idle channel runs on the
// starting thread: it has landed, at its modelled time, when
// tcaStartDMADesc returns.  It used to queue for the engine thread, whose
// naps (up to 200 us after a few ms without work) delayed it while no thread
// of the starter waited in libtca - as a broadcast's forwarding hop does,
// restarting its chain and moving on: at 16 ranks a broadcast took a
// millisecond against the model's 5 us.  A 2 ms modelled latency keeps a
// queued run from completing before the check right after the start.
TEST(TimingModel, ShortChainOnAnIdleChannelHasLandedWhenItsStartReturns) {
    constexpr int64_t kLatencyNs = 2'000'000;
    NodeOptions opt;
    opt.env = "TCA_TIMING=1;TCA_DMA_LATENCY_NS=2000000";
    EXPECT_TRUE(run_nodes(
        2,
        [&](int node, Board &b) {
            PairBuffers p = exchange_buffers(node, b, 64, tcaMemoryCPU);
            if (node == 0) {
                std::memset(p.buf, 0x5c, 8);
                tcaDesc *d = tcaDescNew();
                NODE_CHECK(d != nullptr);
                NODE_OK(tcaDescSetMemcpy(d, &p.peer, 0, &p.mine, 0, 8,
                                         tcaDMAUseInternal | tcaDMAUseNotifyInternal | tcaDMANotify,
                                         3, 5));
                NODE_OK(tcaDescSet(d, 0));
                for (int round = 0; round < 3; ++round) {
                    b.barrier();
                    usleep(3000);  // the engine thread has found nothing for a while: it naps
                    const int64_t t0 = now_ns();
                    NODE_OK(tcaStartDMADesc(0));
                    const int64_t returned = now_ns();
                    int done = 0;
                    NODE_OK(tcaTestDMAC(0, &done));
                    NODE_CHECK(done == 1);
                    NODE_CHECK(returned - t0 >=
                               kLatencyNs -
                                   400'000);  // the model's time was spent (less the handoff)
                    b.barrier();
                }
                NODE_OK(tcaWaitDMAC(0));
                NODE_OK(tcaDescFree(d));
            } else {
                for (int round = 0; round < 3; ++round) {
                    b.barrier();
                    NODE_OK(tcaWaitDMARecvDesc(&p.peer, 3, 5));
                    NODE_CHECK(static_cast<unsigned char *>(p.buf)[7] == 0x5c);
                    b.barrier();
                }
            }
            b.barrier();
            return 0;
        },
        opt));
}

// TCA_TIMING=off (no, false, 0) is off (it turned the model on while only a
// leading '0' was read as off): the device says so, and five runs of a chain
// modelled to take 2 s each (the longest start and latency the model takes)
// complete within 5 s, against 10 s with the model on - a margin no load can
// eat (the bound used to be half a second against one modelled second).
TEST(TimingModel, OffSpellingsTurnItOff) {
    for (const char *off : {"off", "no", "false", "OFF", "0"}) {
        NodeOptions opt;
        opt.env = std::string("TCA_TIMING=") + off +
                  ";TCA_CHAIN_START_NS=1000000000;TCA_DMA_LATENCY_NS=1000000000";
        EXPECT_TRUE(run_nodes(
            2,
            [&](int node, Board &b) {
                int enabled = -1;
                NODE_OK(tcaTimingEnabled(&enabled));
                NODE_CHECK(enabled == 0);
                PairBuffers p = exchange_buffers(node, b, 64, tcaMemoryCPU);
                if (node == 0) {
                    tcaDesc *d = tcaDescNew();
                    NODE_CHECK(d != nullptr);
                    NODE_OK(
                        tcaDescSetMemcpy(d, &p.peer, 0, &p.mine, 0, 64, tcaDMAUseInternal, 0, 0));
                    NODE_OK(tcaDescSet(d, 0));
                    const int64_t t0 = now_ns();
                    for (int run = 0; run < 5; ++run) {
                        NODE_OK(tcaStartDMADesc(0));
                        NODE_OK(tcaWaitDMAC(0));
                    }
                    const int64_t took = now_ns() - t0;
                    NODE_OK(tcaDescFree(d));
                    NODE_CHECK(took < 5'000'000'000);  // the model would take >= 10 s
                }
                b.barrier();
                return 0;
            },
            opt))
            << "TCA_TIMING=" << off;
    }
}

}  // namespace
}  // namespace tca::test
