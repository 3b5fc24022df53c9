// ownership_test.cpp - what tcaChannelAcquire / tcaCounterAcquire /
// tcaSlotAcquire hand out belongs to its holder: the numbered calls refuse
// an acquired channel, counter or slot named by anyone else - by its plain
// number (as published programs name theirs) or by an id kept past its
// release - with tcaErrorNotAcquired, instead of replacing a loaded chain or
// adding into someone's counter; a released counter comes back at 0 and
// late adds for it are refused.
#include <functional>
#include <vector>

#include "harness.hpp"
#include "model/owned_id.hpp"

namespace tca::test {
namespace {

// One put of `n` bytes from `src` into `dst` on `channel`, optionally adding
// to a counter of the destination; the channel's completion result.
tcaResult put_on(int channel, tcaHandle dst, tcaHandle src, size_t n, int add_counter = -1) {
    tcaDesc *d = tcaDescNew();
    tcaResult r = tcaDescSetMemcpy(d, &dst, 0, &src, 0, n, 0, 0, 0);
    if (r == tcaSuccess && add_counter >= 0)
        r = tcaDescSetCounterAdd(d, add_counter, 1);
    if (r == tcaSuccess)
        r = tcaDescSet(d, channel);
    if (r == tcaSuccess)
        r = tcaStartDMADesc(channel);
    if (r == tcaSuccess)
        r = tcaWaitDMAC(channel);
    tcaDescFree(d);
    return r;
}

// Two nodes, each with a registered 4 KiB buffer (filled with node + 1);
// body(node, board, buf, mine, peer) runs on both, a barrier ends it.
using PairBody =
    std::function<int(int, Board &, std::vector<unsigned char> &, tcaHandle, tcaHandle)>;
::testing::AssertionResult on_two_nodes(const PairBody &body) {
    return run_nodes(2, [&](int node, Board &b) {
        std::vector<unsigned char> buf(4096, static_cast<unsigned char>(node + 1));
        tcaHandle mine;
        const tcaHandle peer =
            register_and_swap(node, b, buf.data(), buf.size(), tcaMemoryCPU, &mine);
        const int rc = body(node, b, buf, mine, peer);
        b.barrier();
        return rc;
    });
}

TEST(Ownership, AnAcquiredChannelServesOnlyItsHolder) {
    EXPECT_TRUE(on_two_nodes([](int node, Board &b, std::vector<unsigned char> &buf, tcaHandle mine,
                                tcaHandle peer) {
        if (node == 0) {
            int ch = -1;
            NODE_OK(tcaChannelAcquire(&ch));
            const int number = owned_index(ch);
            NODE_CHECK(ch != number);  // the id carries its owner
            // The holder's chain is loaded; nobody else's may replace or run it.
            tcaDesc *d = tcaDescNew();
            NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &mine, 0, 64, 0, 0, 0));
            NODE_OK(tcaDescSet(d, ch));
            NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaDescSet(d, number));
            NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaStartDMADesc(number));
            NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaWaitDMAC(number));
            int done = 0;
            NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaTestDMAC(number, &done));
            NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaAbortDMAC(number));
            NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaChannelRelease(number));
            NODE_OK(tcaStartDMADesc(ch));  // the holder's chain is intact
            NODE_OK(tcaWaitDMAC(ch));
            NODE_OK(tcaTestDMAC(ch, &done));
            NODE_CHECK(done == 1);
            NODE_OK(tcaChannelRelease(ch));
            // Released: the kept id is refused, the plain number works again.
            NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaDescSet(d, ch));
            NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaStartDMADesc(ch));
            NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaChannelRelease(ch));
            NODE_OK(put_on(number, peer, mine, 64));
            tcaDescFree(d);
        }
        b.barrier();
        if (node == 1)
            NODE_CHECK(buf[0] == 1 && buf[63] == 1 && buf[64] == 2);  // both puts landed, no more
        return 0;
    }));
}

TEST(Ownership, AnAcquiredCounterCountsOnlyItsHoldersAdds) {
    EXPECT_TRUE(on_two_nodes(
        [](int node, Board &b, std::vector<unsigned char> &, tcaHandle mine, tcaHandle peer) {
            if (node == 1) {
                int c = -1;
                NODE_OK(tcaCounterAcquire(1, &c));
                b.value[0].store(c);
                uint64_t v = 7;
                NODE_OK(tcaCounterRead(c, &v));
                NODE_CHECK(v == 0);
                const int number = owned_index(c);
                NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaCounterAdd(number, 1));
                NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaCounterRead(number, &v));
                NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaCounterWait(number, 1));
                NODE_OK(tcaCounterAdd(c, 1));
            }
            b.barrier();
            if (node == 0) {
                const int c = b.value[0].load(), number = owned_index(c);
                // A peer that names the counter by number: refused, PIO or DMA.
                NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaCounterAddRemote(1, number, 100));
                NODE_EXPECT_RESULT(tcaErrorNotAcquired, put_on(0, peer, mine, 64, number));
                // The holder's id, handed over as coll tca hands its counters to a parent.
                NODE_OK(tcaCounterAddRemote(1, c, 10));
                NODE_OK(put_on(0, peer, mine, 64, c));
            }
            b.barrier();
            if (node == 1) {
                const int c = b.value[0].load();
                uint64_t v = 0;
                NODE_OK(tcaCounterRead(c, &v));
                NODE_CHECK(v == 12);  // 1 + 10 + 1: none of the refused adds
                NODE_OK(tcaCounterRelease(c, 1));
            }
            return 0;
        }));
}

// coll tca used to keep this convention itself: a released counter is clean,
// and an add that arrives late (a peer still holding the old id) cannot land
// in the next holder's count.
TEST(Ownership, AReleasedCounterComesBackCleanAndLateAddsAreRefused) {
    EXPECT_TRUE(on_two_nodes([](int node, Board &b, std::vector<unsigned char> &, tcaHandle mine,
                                tcaHandle peer) {
        if (node == 1) {
            int c = -1;
            NODE_OK(tcaCounterAcquire(1, &c));
            b.value[0].store(c);
        }
        b.barrier();
        if (node == 0)
            NODE_OK(tcaCounterAddRemote(1, b.value[0].load(), 5));
        b.barrier();
        if (node == 1) {
            const int old = b.value[0].load();
            NODE_OK(tcaCounterRelease(old, 1));
            int c = -1;
            NODE_OK(
                tcaCounterAcquire(1, &c));  // the same counter (highest free first), a new holder
            NODE_CHECK(owned_index(c) == owned_index(old) && c != old);
            b.value[1].store(c);
            uint64_t v = 9;
            NODE_OK(tcaCounterRead(c, &v));
            NODE_CHECK(v == 0);
        }
        b.barrier();
        if (node == 0) {  // late: the old id, by PIO and by a DMA descriptor
            NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaCounterAddRemote(1, b.value[0].load(), 5));
            NODE_EXPECT_RESULT(tcaErrorNotAcquired, put_on(0, peer, mine, 64, b.value[0].load()));
        }
        b.barrier();
        if (node == 1) {
            const int c = b.value[1].load();
            uint64_t v = 9;
            NODE_OK(tcaCounterRead(c, &v));
            NODE_CHECK(v == 0);
            NODE_OK(tcaCounterRelease(c, 1));
            // Released and held by nobody: the plain number is anybody's again.
            NODE_OK(tcaCounterAdd(owned_index(c), 3));
            NODE_OK(tcaCounterRead(owned_index(c), &v));
            NODE_CHECK(v == 3);
        }
        return 0;
    }));
}

// A triggered descriptor that waits on a counter somebody else holds can
// never fire: the chain fails at once instead of hanging its channel.
TEST(Ownership, ATriggerOnSomeoneElsesCounterFailsTheChain) {
    EXPECT_TRUE(on_two_nodes(
        [](int node, Board &, std::vector<unsigned char> &, tcaHandle mine, tcaHandle peer) {
            if (node == 0) {
                int c = -1;
                NODE_OK(tcaCounterAcquire(1, &c));
                tcaDesc *d = tcaDescNew();
                NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &mine, 0, 64, 0, 0, 0));
                NODE_OK(tcaDescSetTrigger(d, owned_index(c), 1, 0));
                NODE_OK(tcaDescSet(d, 0));
                NODE_OK(tcaStartDMADesc(0));
                NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaWaitDMAC(0));
                tcaDescFree(d);
                NODE_OK(tcaCounterRelease(c, 1));
            }
            return 0;
        }));
}

// Waiting on an acquired slot takes its holder's id.
TEST(Ownership, AnAcquiredSlotIsWaitedOnByItsHolder) {
    EXPECT_TRUE(on_two_nodes([](int node, Board &b, std::vector<unsigned char> &, tcaHandle mine,
                                tcaHandle peer) {
        if (node == 1) {
            int s = -1;
            NODE_OK(tcaSlotAcquire(&s));
            b.value[0].store(s);
        }
        b.barrier();
        if (node == 0) {  // the sender names the receiver's slot by the id it was given
            tcaDesc *d = tcaDescNew();
            NODE_OK(
                tcaDescSetMemcpy(d, &peer, 0, &mine, 0, 64, tcaDMANotify, b.value[0].load(), 5));
            NODE_OK(tcaDescSet(d, 0));
            NODE_OK(tcaStartDMADesc(0));
            NODE_OK(tcaWaitDMAC(0));
            tcaDescFree(d);
        }
        b.barrier();
        if (node == 1) {
            const int s = b.value[0].load();
            int flag = 0;
            NODE_EXPECT_RESULT(tcaErrorNotAcquired,
                               tcaTestDMARecvDesc(&peer, owned_index(s), 5, &flag));
            NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaWaitDMARecvDesc(&peer, owned_index(s), 5));
            NODE_OK(tcaWaitDMARecvDesc(&peer, s, 5));
            NODE_OK(tcaSlotRelease(s));
        }
        return 0;
    }));
}

// The sender side: a slot held on the receiving node takes notifications only
// under its holder's id.  A PIO write or descriptor naming it by plain number
// is refused before it writes a byte; released, the plain number works again.
TEST(Ownership, AHeldSlotTakesNotificationsOnlyUnderItsHoldersId) {
    EXPECT_TRUE(on_two_nodes([](int node, Board &b, std::vector<unsigned char> &buf, tcaHandle mine,
                                tcaHandle peer) {
        if (node == 1) {
            int s = -1;
            NODE_OK(tcaSlotAcquire(&s));
            b.value[0].store(s);
        }
        b.barrier();
        const int id = b.value[0].load(), index = owned_index(id);
        if (node == 0) {
            const unsigned char fresh[64] = {0x5a};
            // PIO: refused, nothing written.
            NODE_EXPECT_RESULT(tcaErrorNotAcquired,
                               tcaPioWrite(&peer, 0, fresh, sizeof fresh, tcaDMANotify, index, 7));
            // A descriptor: its run fails at the wait, nothing written either.
            tcaDesc *d = tcaDescNew();
            NODE_OK(tcaDescSetMemcpy(d, &peer, 64, &mine, 0, 64, tcaDMANotify, index, 7));
            NODE_OK(tcaDescSet(d, 0));
            NODE_OK(tcaStartDMADesc(0));
            NODE_EXPECT_RESULT(tcaErrorNotAcquired, tcaWaitDMAC(0));
            tcaDescFree(d);
            // Self-notifications into our own slot are checked the same way.
            int own = -1;
            NODE_OK(tcaSlotAcquire(&own));
            NODE_EXPECT_RESULT(
                tcaErrorNotAcquired,
                tcaPioWrite(&peer, 0, fresh, sizeof fresh, tcaDMANotifySelf, owned_index(own), 7));
            NODE_OK(tcaSlotRelease(own));
        }
        b.barrier();
        if (node == 1) {  // the refused writes left our buffer alone, and no notification is there
            NODE_CHECK(buf[0] == 2 && buf[64] == 2);
            int flag = 1;
            NODE_OK(tcaTestDMARecvDesc(&peer, id, 7, &flag));
            NODE_CHECK(flag == 0);
        }
        b.barrier();
        if (node == 0) {  // under the holder's id
            const unsigned char fresh[64] = {0x5a};
            NODE_OK(tcaPioWrite(&peer, 0, fresh, sizeof fresh, tcaDMANotify, id, 7));
        }
        b.barrier();
        if (node == 1) {
            NODE_OK(tcaWaitDMARecvDesc(&peer, id, 7));
            NODE_CHECK(buf[0] == 0x5a);
            NODE_OK(tcaSlotRelease(id));
        }
        b.barrier();
        if (node == 0) {  // released: the plain number is anyone's again
            const unsigned char again[8] = {0x66};
            NODE_OK(tcaPioWrite(&peer, 128, again, sizeof again, tcaDMANotify, index, 8));
        }
        b.barrier();
        if (node == 1)
            NODE_OK(tcaWaitDMARecvDesc(&peer, index, 8));
        return 0;
    }));
}

}  // namespace
}  // namespace tca::test
