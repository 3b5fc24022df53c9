// notify_streams_test.cpp - notifications nobody waits for (compat 3.2):
// counted per (source, slot, tag) without holding up the sender, its other
// channels or other slots; a clear error at the tag limit.  The old code
// stalled the sender's engine after 128 unconsumed notifications on one
// (source, slot) until the wait timed out (TCA_TIMEOUT_MS, short here).
#include <cstring>
#include <vector>

#include "harness.hpp"

namespace tca::test {
namespace {

constexpr int kTag = 0x100;
constexpr int kFlags = tcaDMAUseInternal | tcaDMAUseNotifyInternal;
const char *const kShortTimeout = "TCA_TIMEOUT_MS=5000";

// Node 0 starts a stream of 10000 runs on channel 0 that notify node 1 and
// itself on slot 5; nobody waits for them.  Meanwhile a ping-pong on slot 0
// (channel 1 on both sides) keeps going.  At the end every stream
// notification is there, exactly once.
TEST(NotifyStreams, NeverWaitedStreamDoesNotStallOtherSlots) {
    NodeOptions opt;
    opt.env = kShortTimeout;
    EXPECT_TRUE(run_nodes(
        2,
        [](int node, Board &board) {
            constexpr int kRuns = 10000;
            auto [buf, mine, peer] = exchange_buffers(node, board, 4096, tcaMemoryCPU);
            tcaDesc *stream = tcaDescNew(), *ping = tcaDescNew();
            NODE_OK(tcaDescSetMemcpy(ping, &peer, 0, &mine, 64, 8, kFlags | tcaDMANotify, 0, kTag));
            NODE_OK(tcaDescSet(ping, 1));
            if (node == 0) {
                NODE_OK(tcaDescSetMemcpy(stream, &peer, 128, &mine, 128, 8,
                                         kFlags | tcaDMANotify | tcaDMANotifySelf, 5, kTag));
                NODE_OK(tcaDescSet(stream, 0));
            }
            for (int i = 0; i < kRuns; ++i) {
                if (node == 0) {
                    NODE_OK(tcaStartDMADesc(0));
                    NODE_OK(tcaStartDMADesc(1));
                    NODE_OK(tcaWaitDMARecvDesc(&peer, 0, kTag));
                } else {
                    NODE_OK(tcaWaitDMARecvDesc(&peer, 0, kTag));
                    NODE_OK(tcaStartDMADesc(1));
                }
            }
            NODE_OK(tcaWaitDMAC(0));
            NODE_OK(tcaWaitDMAC(1));
            board.barrier();  // node 0's stream has been posted completely
            if (node == 0)
                NODE_CHECK(drain_count(&mine, 5, kTag) == kRuns);
            if (node == 1)
                NODE_CHECK(drain_count(&peer, 5, kTag) == kRuns);
            NODE_CHECK(drain_count(&peer, 0, kTag) == 0);
            tcaDescFree(stream);
            tcaDescFree(ping);
            board.barrier();
            return 0;
        },
        opt));
}

// B5 at 8 ranks, recursive doubling with one channel per step, chains loaded
// once and restarted every iteration without tcaWaitDMAC; each descriptor
// notifies the partner and itself, and the self-notifications are never
// waited.  Every rank checks the gathered data of every iteration.
TEST(NotifyStreams, AllgatherNeverWaitingSelfNotifications) {
    NodeOptions opt;
    opt.env = kShortTimeout;
    opt.timeout_s = 300;
    EXPECT_TRUE(run_nodes(
        8,
        [](int node, Board &board) {
            constexpr int kNodes = 8, kSteps = 3, kIters = 150;
            constexpr size_t kBlock = 256;
            void *p = nullptr;
            NODE_OK(tcaMalloc(&p, kBlock * kNodes, tcaMemoryCPU));
            auto *bytes = static_cast<unsigned char *>(p);
            tcaHandle mine;
            NODE_OK(tcaCreateHandle(&mine, p, kBlock * kNodes, tcaMemoryCPU));
            board.publish(node, 1, mine);
            board.barrier();
            tcaDesc *steps[kSteps];
            for (int s = 0; s < kSteps; ++s) {
                const int partner = node ^ (1 << s);
                const off_t off = static_cast<off_t>(((node >> s) << s) * kBlock);
                steps[s] = tcaDescNew();
                NODE_OK(tcaDescSetMemcpy(steps[s], &board.get(partner, 1), off, &mine, off,
                                         kBlock << s, kFlags | tcaDMANotify | tcaDMANotifySelf, 0,
                                         kTag));
                NODE_OK(tcaDescSet(steps[s], s));
            }
            auto seed = [](int iter, int owner) {
                return static_cast<uint32_t>(iter * 64 + owner);
            };
            for (int iter = 0; iter < kIters; ++iter) {
                fill_pattern(bytes + node * kBlock, kBlock, seed(iter, node));
                for (int s = 0; s < kSteps; ++s) {
                    NODE_OK(tcaStartDMADesc(s));
                    NODE_OK(tcaWaitDMARecvDesc(&board.get(node ^ (1 << s), 1), 0, kTag));
                }
                for (int owner = 0; owner < kNodes; ++owner)
                    if (!check_pattern(bytes + owner * kBlock, kBlock, seed(iter, owner))) {
                        std::fprintf(stderr, "iteration %d: block of node %d wrong\n", iter, owner);
                        return 1;
                    }
                board
                    .barrier();  // partners have read our blocks: the next iteration may rewrite them
            }
            for (int s = 0; s < kSteps; ++s)
                NODE_OK(tcaWaitDMAC(s));
            NODE_CHECK(drain_count(&mine, 0, kTag) == kIters * kSteps);  // all counted, none merged
            for (tcaDesc *d : steps)
                tcaDescFree(d);
            board.barrier();
            return 0;
        },
        opt));
}

// Tags are counted per (source, slot): TCA_NOTIFY_TAGS tags with notifications
// outstanding work on one slot, one more is refused with tcaErrorNoResource
// (PIO at once, DMA at the channel wait); other slots are unaffected, and once
// consumed the tags no longer count.
TEST(NotifyStreams, TagLimitIsAnErrorNotAStall) {
    EXPECT_TRUE(run_nodes(1, [](int, Board &) {
        void *p = nullptr;
        NODE_OK(tcaMalloc(&p, 64, tcaMemoryInternal));
        tcaHandle h;
        NODE_OK(tcaCreateHandle(&h, p, 64, tcaMemoryInternal));
        const char byte = 1;
        for (int tag = 0; tag < TCA_NOTIFY_TAGS; ++tag)
            for (int i = 0; i < 3; ++i)
                NODE_OK(tcaPioWrite(&h, 0, &byte, 1, tcaDMANotifySelf, 7, 1000 + tag));
        NODE_EXPECT_RESULT(tcaErrorNoResource,
                           tcaPioWrite(&h, 0, &byte, 1, tcaDMANotifySelf, 7, 5));
        tcaDesc *d = tcaDescNew();
        NODE_OK(tcaDescSetMemcpy(d, &h, 8, &h, 0, 4, tcaDMANotifySelf, 7, 6));
        NODE_OK(tcaDescSet(d, 0));
        NODE_OK(tcaStartDMADesc(0));
        NODE_EXPECT_RESULT(tcaErrorNoResource, tcaWaitDMAC(0));
        NODE_OK(tcaWaitDMAC(0));  // reported once
        for (int tag = TCA_NOTIFY_TAGS; tag-- > 0;)
            NODE_CHECK(drain_count(&h, 7, 1000 + tag) == 3);
        NODE_OK(tcaPioWrite(&h, 0, &byte, 1, tcaDMANotifySelf, 8, 5));  // another slot: fine
        NODE_OK(tcaWaitDMARecvDesc(&h, 8, 5));
        NODE_OK(
            tcaPioWrite(&h, 0, &byte, 1, tcaDMANotifySelf, 7, 5));  // all consumed: tags free again
        NODE_OK(tcaWaitDMARecvDesc(&h, 7, 5));
        tcaDeviceAttr a{};
        NODE_OK(tcaQueryDevice(&a));
        NODE_CHECK(a.notify_depth == TCA_NOTIFY_TAGS);
        tcaDescFree(d);
        return 0;
    }));
}

}  // namespace
}  // namespace tca::test
