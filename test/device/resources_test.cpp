// resources_test.cpp - the device layer owns DMA channels, counters and
// notification slots: tcaQueryDevice reports them, acquire hands out only
// what nobody holds, exhaustion is tcaErrorNoResource, release gives back
// (once: a second release is tcaErrorNotAcquired), bad indices are errors.
// Acquire hands out ids (index | owner token << 16); owned_index() is the index.
#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "model/owned_id.hpp"

namespace tca::test {
namespace {

tcaDeviceAttr query() {
    tcaDeviceAttr a{};
    NODE_OK(tcaQueryDevice(&a));
    return a;
}

TEST(Resources, QueryReportsLimitsAndFreeCounts) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &b) {
        NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaQueryDevice(nullptr));
        const tcaDeviceAttr a = query();
        NODE_CHECK(a.node_id == node && a.num_nodes == 2 && a.max_nodes == TCA_MAX_NODES);
        NODE_CHECK(a.dma_channels == TCA_NUM_DMA_CHANNELS &&
                   a.free_dma_channels == TCA_NUM_DMA_CHANNELS);
        NODE_CHECK(a.counters == TCA_NUM_COUNTERS && a.free_counters == TCA_NUM_COUNTERS);
        NODE_CHECK(a.notify_slots == TCA_NOTIFY_SLOTS && a.free_notify_slots == TCA_NOTIFY_SLOTS);
        NODE_CHECK(a.max_descriptors == TCA_MAX_DESCRIPTORS &&
                   a.max_reg_descriptors == TCA_MAX_REG_DESCRIPTORS);
        NODE_CHECK(a.notify_depth > 0 && a.max_registrations > 0 && a.registrations == 0);
        NODE_CHECK(a.internal_size > 0 && a.internal_used == 0);
        // The counts follow allocations and registrations.
        void *p = nullptr;
        NODE_OK(tcaMalloc(&p, 4096, tcaMemoryInternal));
        tcaHandle h;
        NODE_OK(tcaCreateHandle(&h, p, 4096, tcaMemoryInternal));
        int ch = -1, first = -1, slot = -1;
        NODE_OK(tcaChannelAcquire(&ch));
        NODE_OK(tcaCounterAcquire(5, &first));
        NODE_OK(tcaSlotAcquire(&slot));
        const tcaDeviceAttr b2 = query();
        NODE_CHECK(b2.internal_used >= 4096 && b2.registrations == 1);
        NODE_CHECK(b2.free_dma_channels == TCA_NUM_DMA_CHANNELS - 1);
        NODE_CHECK(b2.free_counters == TCA_NUM_COUNTERS - 5);
        NODE_CHECK(b2.free_notify_slots == TCA_NOTIFY_SLOTS - 1);
        NODE_OK(tcaChannelRelease(ch));
        NODE_OK(tcaCounterRelease(first, 5));
        NODE_OK(tcaSlotRelease(slot));
        NODE_OK(tcaDestroyHandle(&h));
        NODE_OK(tcaFree(p, tcaMemoryInternal));
        const tcaDeviceAttr c = query();
        NODE_CHECK(c.free_dma_channels == TCA_NUM_DMA_CHANNELS &&
                   c.free_counters == TCA_NUM_COUNTERS && c.free_notify_slots == TCA_NOTIFY_SLOTS &&
                   c.registrations == 0);
        b.barrier();
        return 0;
    }));
}

TEST(Resources, ChannelsExhaustAndComeBack) {
    EXPECT_TRUE(run_nodes(1, [](int, Board &) {
        std::set<int> got;
        std::vector<int> ids;
        for (int i = 0; i < TCA_NUM_DMA_CHANNELS; ++i) {
            int ch = -1;
            NODE_OK(tcaChannelAcquire(&ch));
            NODE_CHECK(ch >= 0 && owned_index(ch) < TCA_NUM_DMA_CHANNELS);
            NODE_CHECK(got.insert(owned_index(ch)).second);  // never one somebody holds
            ids.push_back(ch);
        }
        int ch = 77;
        NODE_EXPECT_RESULT(tcaErrorNoResource, tcaChannelAcquire(&ch));
        NODE_CHECK(ch == -1);
        NODE_CHECK(query().free_dma_channels == 0);
        const int id2 =
            *std::find_if(ids.begin(), ids.end(), [](int id) { return owned_index(id) == 2; });
        NODE_EXPECT_RESULT(tcaErrorNotAcquired,
                           tcaChannelRelease(2));  // the plain number is not the holder
        NODE_OK(tcaChannelRelease(id2));
        NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaChannelRelease(id2));  // double release
        NODE_OK(tcaChannelAcquire(&ch));
        NODE_CHECK(owned_index(ch) == 2 && ch != id2);  // the same channel, a new owner
        std::replace(ids.begin(), ids.end(), id2, ch);
        for (int c : ids)
            NODE_OK(tcaChannelRelease(c));
        NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaChannelRelease(0));
        // Bad arguments.
        NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaChannelAcquire(nullptr));
        NODE_EXPECT_RESULT(tcaErrorInvalidChannel, tcaChannelRelease(-1));
        NODE_EXPECT_RESULT(tcaErrorInvalidChannel, tcaChannelRelease(TCA_NUM_DMA_CHANNELS));
        NODE_CHECK(query().free_dma_channels == TCA_NUM_DMA_CHANNELS);
        return 0;
    }));
}

TEST(Resources, CounterRunsExhaustAndComeBack) {
    EXPECT_TRUE(run_nodes(1, [](int, Board &) {
        // Runs of 6 (a broadcast's data, ready, go, done + 2 credits) until none fits.
        std::vector<int> runs;
        for (;;) {
            int first = -1;
            const tcaResult r = tcaCounterAcquire(6, &first);
            if (r == tcaErrorNoResource)
                break;
            NODE_OK(r);
            NODE_CHECK(first >= 0 && owned_index(first) + 6 <= TCA_NUM_COUNTERS);
            runs.push_back(first);
        }
        NODE_CHECK(runs.size() == TCA_NUM_COUNTERS / 6);
        std::vector<bool> seen(TCA_NUM_COUNTERS, false);  // runs never overlap
        for (int f : runs)
            for (int k = 0; k < 6; ++k) {
                NODE_CHECK(!seen[static_cast<size_t>(owned_index(f) + k)]);
                seen[static_cast<size_t>(owned_index(f) + k)] = true;
            }
        const int left =
            TCA_NUM_COUNTERS % 6;  // 4 single counters are left: a run of 4 fits, 5 does not
        int first = -1;
        NODE_EXPECT_RESULT(tcaErrorNoResource, tcaCounterAcquire(left + 1, &first));
        NODE_OK(tcaCounterAcquire(left, &first));
        NODE_CHECK(query().free_counters == 0);
        int none = 5;
        NODE_EXPECT_RESULT(tcaErrorNoResource, tcaCounterAcquire(1, &none));
        NODE_CHECK(none == -1);
        NODE_OK(tcaCounterRelease(first, left));
        // Release gives the run back; releasing it again, or a part of it, is an error.
        const int r0 = runs[runs.size() / 2];
        NODE_OK(tcaCounterRelease(r0, 6));
        NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaCounterRelease(r0, 6));
        NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaCounterRelease(r0 + 1, 1));
        // A range that is only partly held is refused whole: nothing is released.
        const int r1 = runs[runs.size() / 2 + 1];  // the run just below r0 (handed out top down)
        NODE_CHECK(owned_index(r1) + 6 == owned_index(r0));
        NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaCounterRelease(r1, 12));
        NODE_OK(tcaCounterRelease(r1, 6));  // still held after the refused release
        int again = -1;
        NODE_OK(tcaCounterAcquire(6, &again));
        NODE_CHECK(owned_index(again) == owned_index(r0));
        NODE_OK(tcaCounterAcquire(6, &again));
        NODE_CHECK(owned_index(again) == owned_index(r1));
        // Bad arguments.
        NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaCounterAcquire(0, &first));
        NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaCounterAcquire(-3, &first));
        NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaCounterAcquire(TCA_NUM_COUNTERS + 1, &first));
        NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaCounterAcquire(1, nullptr));
        NODE_EXPECT_RESULT(tcaErrorInvalidCounter, tcaCounterRelease(-1, 1));
        NODE_EXPECT_RESULT(tcaErrorInvalidCounter, tcaCounterRelease(TCA_NUM_COUNTERS, 1));
        NODE_EXPECT_RESULT(tcaErrorInvalidCounter, tcaCounterRelease(TCA_NUM_COUNTERS - 2, 3));
        NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaCounterRelease(0, 0));
        return 0;
    }));
}

TEST(Resources, SlotsExhaustAndComeBack) {
    EXPECT_TRUE(run_nodes(1, [](int, Board &) {
        std::set<int> got;
        int slot = -1, id17 = -1;
        for (int i = 0; i < TCA_NOTIFY_SLOTS; ++i) {
            NODE_OK(tcaSlotAcquire(&slot));
            NODE_CHECK(slot >= 0 && owned_index(slot) < TCA_NOTIFY_SLOTS &&
                       got.insert(owned_index(slot)).second);
            if (owned_index(slot) == 17)
                id17 = slot;
        }
        NODE_EXPECT_RESULT(tcaErrorNoResource, tcaSlotAcquire(&slot));
        NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaSlotRelease(17));  // not by its plain number
        NODE_OK(tcaSlotRelease(id17));
        NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaSlotRelease(id17));
        NODE_OK(tcaSlotAcquire(&slot));
        NODE_CHECK(owned_index(slot) == 17);
        NODE_EXPECT_RESULT(tcaErrorInvalidSlot, tcaSlotRelease(TCA_NOTIFY_SLOTS));
        NODE_EXPECT_RESULT(tcaErrorInvalidSlot, tcaSlotRelease(-1));
        NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaSlotAcquire(nullptr));
        return 0;
    }));
}

// Published programs name channel numbers without acquiring them: that keeps
// working, and such a channel is never handed to somebody else afterwards.
// Acquire starts from the top, away from the low numbers they use.
TEST(Resources, NumberedChannelsStillWorkAndAreNotHandedOut) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &b) {
        std::vector<unsigned char> buf(4096);
        tcaHandle mine;
        tcaHandle peer = register_and_swap(node, b, buf.data(), buf.size(), tcaMemoryCPU, &mine);
        int first = -1;
        NODE_OK(tcaChannelAcquire(&first));
        NODE_CHECK(owned_index(first) == TCA_NUM_DMA_CHANNELS - 1);
        NODE_OK(tcaChannelRelease(first));
        tcaDesc *d = tcaDescNew();
        NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &mine, 0, 64, 0, 0, 0));
        NODE_OK(tcaDescSet(d, 0));  // channel 0, never acquired
        NODE_OK(tcaStartDMADesc(0));
        NODE_OK(tcaWaitDMAC(0));
        NODE_CHECK(query().free_dma_channels == TCA_NUM_DMA_CHANNELS - 1);
        std::set<int> got;
        int ch = -1;
        std::vector<int> ids;
        while (tcaChannelAcquire(&ch) == tcaSuccess) {
            got.insert(owned_index(ch));
            ids.push_back(ch);
        }
        NODE_CHECK(got.size() == TCA_NUM_DMA_CHANNELS - 1 && !got.count(0));
        NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaChannelRelease(0));  // used, but not acquired
        NODE_OK(tcaStartDMADesc(0));  // still the program's: the chain is intact
        NODE_OK(tcaWaitDMAC(0));
        for (int c : ids)
            NODE_OK(tcaChannelRelease(c));
        tcaDescFree(d);
        b.barrier();
        return 0;
    }));
}

// Pools are per node (process) and thread-safe: concurrent acquirers never
// get the same counter.
TEST(Resources, ConcurrentAcquireNeverSharesACounter) {
    EXPECT_TRUE(run_nodes(1, [](int, Board &) {
        constexpr int kThreads = 8, kRun = 3;
        std::vector<std::vector<int>> got(kThreads);
        std::atomic<int> go{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([&, t] {
                while (go.load(std::memory_order_acquire) == 0) {
                }
                for (int i = 0; i < 200; ++i) {
                    int first = -1;
                    if (tcaCounterAcquire(kRun, &first) != tcaSuccess)
                        continue;
                    got[static_cast<size_t>(t)].push_back(first);
                    if (i % 2 == 0) {  // give half of them back at once
                        if (tcaCounterRelease(first, kRun) != tcaSuccess)
                            std::_Exit(3);
                        got[static_cast<size_t>(t)].pop_back();
                    }
                }
            });
        go.store(1, std::memory_order_release);
        for (auto &th : threads)
            th.join();
        std::vector<bool> held(TCA_NUM_COUNTERS, false);
        int total = 0;
        for (const auto &v : got)
            for (int f : v) {
                for (int k = 0; k < kRun; ++k) {
                    NODE_CHECK(!held[static_cast<size_t>(owned_index(f) + k)]);
                    held[static_cast<size_t>(owned_index(f) + k)] = true;
                }
                ++total;
            }
        NODE_CHECK(query().free_counters == TCA_NUM_COUNTERS - total * kRun);
        return 0;
    }));
}

TEST(Resources, NeedAnInitialisedDevice) {
    NodeOptions opt;
    opt.init = false;
    EXPECT_TRUE(run_nodes(
        1,
        [](int, Board &) {
            int x = -1;
            tcaDeviceAttr a{};
            NODE_EXPECT_RESULT(tcaErrorNotInitialized, tcaQueryDevice(&a));
            NODE_EXPECT_RESULT(tcaErrorNotInitialized, tcaChannelAcquire(&x));
            NODE_EXPECT_RESULT(tcaErrorNotInitialized, tcaCounterAcquire(1, &x));
            NODE_EXPECT_RESULT(tcaErrorNotInitialized, tcaSlotAcquire(&x));
            NODE_EXPECT_RESULT(tcaErrorNotInitialized, tcaChannelRelease(0));
            NODE_EXPECT_RESULT(tcaErrorNotInitialized, tcaCounterRelease(0, 1));
            NODE_EXPECT_RESULT(tcaErrorNotInitialized, tcaSlotRelease(0));
            return 0;
        },
        opt));
}

}  // namespace
}  // namespace tca::test
