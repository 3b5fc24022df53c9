// rendezvous_choice_test.cpp - which rendezvous protocol a host message beyond
// the eager limit takes (tca-btl/rendezvous_choice.hpp), and the word that
// tells a peer we stream to it.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "peer_area.hpp"
#include "rendezvous_choice.hpp"

using namespace tca::btl;
using Announce = RendezvousChooser::Announce;

namespace {

tca_btl_rendezvous_t message(uint64_t size, int32_t in_flight, int32_t queued = 0,
                             int same_buffer = 0) {
    return {size, /*copy_max=*/UINT64_MAX, /*by_traffic=*/1, in_flight, queued, same_buffer};
}

}  // namespace

TEST(RendezvousChoice, ALoneMessageTakesTheRgetRendezvous) {
    RendezvousChooser c;
    for (int i = 0; i < 10; ++i) {
        const auto choice = c.choose(message(65536, 0), false);
        EXPECT_TRUE(choice.rdma);
        EXPECT_EQ(choice.announce, Announce::kNothing);  // never streamed: nothing to take back
    }
}

TEST(RendezvousChoice, AStreamOneWayGoesByCopyAndSaysSoOnce) {
    RendezvousChooser c;
    EXPECT_TRUE(c.choose(message(65536, 0), false).rdma);  // the window's first
    const auto second = c.choose(message(65536, 1), false);
    EXPECT_FALSE(second.rdma);
    EXPECT_EQ(second.announce, Announce::kStreaming);
    const auto third = c.choose(message(65536, 1), false);
    EXPECT_FALSE(third.rdma);
    EXPECT_EQ(third.announce, Announce::kNothing);  // told already
}

// osu_bw's shape: every message of the window from one buffer, whose data the
// previous single copy just read; up to what a cache holds.
TEST(RendezvousChoice, AStreamFromTheBufferJustSentTakesTheRgetRendezvous) {
    RendezvousChooser c;
    EXPECT_TRUE(c.choose(message(262144, 1, 0, /*same_buffer=*/1), false).rdma);
    EXPECT_TRUE(c.choose(message(RendezvousChooser::kCachedMax, 1, 0, 1), false).rdma);
    EXPECT_FALSE(c.choose(message(RendezvousChooser::kCachedMax + 1, 1, 0, 1), false).rdma);
    EXPECT_FALSE(c.choose(message(262144, 1, 0, /*same_buffer=*/0), false).rdma);
    // Small ones: three ring messages per message cost more than a second copy.
    EXPECT_FALSE(c.choose(message(RendezvousChooser::kCachedMin, 1, 0, 1), false).rdma);
    EXPECT_TRUE(c.choose(message(RendezvousChooser::kCachedMin + 1, 1, 0, 1), false).rdma);
}

TEST(RendezvousChoice, DescriptorsWaitingForTheRingMakeAStreamToo) {
    RendezvousChooser c;
    EXPECT_FALSE(c.choose(message(65536, 0, /*queued=*/3), false).rdma);
}

TEST(RendezvousChoice, AStreamBothWaysTakesTheRgetRendezvous) {
    RendezvousChooser c;
    const auto choice = c.choose(message(1 << 20, 2), /*peer_streams=*/true);
    EXPECT_TRUE(choice.rdma);
    EXPECT_EQ(choice.announce, Announce::kStreaming);  // the peer learns it too
}

TEST(RendezvousChoice, QuietOnlyAfterSeveralLoneMessagesInARow) {
    RendezvousChooser c;
    (void) c.choose(message(65536, 1), false);  // streaming now
    // A window's first message is lone every time: one lone message between
    // windows must not take the stream back.
    for (uint32_t i = 1; i < RendezvousChooser::kQuietAfter; ++i)
        EXPECT_EQ(c.choose(message(65536, 0), false).announce, Announce::kNothing);
    (void) c.choose(message(65536, 1), false);  // the next window: the run starts again
    for (uint32_t i = 1; i < RendezvousChooser::kQuietAfter; ++i)
        EXPECT_EQ(c.choose(message(65536, 0), false).announce, Announce::kNothing);
    EXPECT_EQ(c.choose(message(65536, 0), false).announce, Announce::kQuiet);
    EXPECT_EQ(c.choose(message(65536, 0), false).announce, Announce::kNothing);
}

TEST(RendezvousChoice, BeyondTheCopyLimitAlwaysByRdma) {
    RendezvousChooser c;
    tca_btl_rendezvous_t m = message(1 << 20, 5);
    m.copy_max = 96 * 1024;
    EXPECT_TRUE(c.choose(m, false).rdma);
}

TEST(RendezvousChoice, BySizeAloneEverythingUpToTheLimitByCopy) {
    RendezvousChooser c;
    tca_btl_rendezvous_t m = message(65536, 0);
    m.by_traffic = 0;
    m.copy_max = 96 * 1024;
    EXPECT_FALSE(c.choose(m, false).rdma);
    EXPECT_EQ(c.choose(m, false).announce, Announce::kNothing);
}

// The word lands in the peer's area, in our line of it, and nowhere else.
TEST(RendezvousChoice, TheStreamingWordReachesThePeerAlone) {
    const int nodes = 3;
    const AreaLayout layout(nodes, RingGeometry::for_payload(4, 100));
    std::vector<unsigned char> a(layout.bytes()), b(layout.bytes()), c(layout.bytes());
    PeerChannel a_to_b(a.data(), b.data(), layout, 0, 1, false);
    PeerChannel b_to_a(b.data(), a.data(), layout, 1, 0, false);
    PeerChannel c_to_b(c.data(), b.data(), layout, 2, 1, false);
    PeerChannel b_to_c(b.data(), c.data(), layout, 1, 2, false);
    EXPECT_FALSE(b_to_a.peer_streams());
    a_to_b.announce_streaming(true);
    EXPECT_TRUE(b_to_a.peer_streams());
    EXPECT_FALSE(b_to_c.peer_streams());  // c said nothing
    EXPECT_FALSE(a_to_b.peer_streams());  // b said nothing to a
    c_to_b.announce_streaming(true);
    a_to_b.announce_streaming(false);
    EXPECT_FALSE(b_to_a.peer_streams());
    EXPECT_TRUE(b_to_c.peer_streams());
}

// MPI_THREAD_MULTIPLE: threads sending to one peer at once announce each
// change once (the word is a store into the peer's memory per change).
TEST(RendezvousChoice, ThreadsAnnounceAChangeOnce) {
    RendezvousChooser c;
    std::atomic<int> streaming{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 1000; ++i)
                if (c.choose(message(65536, 1), false).announce == Announce::kStreaming)
                    streaming.fetch_add(1, std::memory_order_relaxed);
        });
    for (std::thread &t : threads)
        t.join();
    EXPECT_EQ(streaming.load(), 1);
}
