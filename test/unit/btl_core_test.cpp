// btl_core_test.cpp - the btl tca protocol core without MPI: ring header
// encoding, credits and wrap-around, the doorbell handshake, a two-thread
// stress run (also built with ThreadSanitizer), and the progress thread's
// sleep/drive behaviour on a one-node loopback device.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "eager_ring.hpp"
#include "peer_area.hpp"
#include "progress_client.hpp"
#include "ring_poller.hpp"
#include "tca_btl_core.h"
#include "tca.h"

using namespace tca::btl;

namespace {

struct alignas(64) Words {
    std::atomic<uint64_t> consumed{0};
};

struct RingPair {
    explicit RingPair(uint32_t slots, uint32_t payload)
        : geo(RingGeometry::for_payload(slots, payload)), memory(geo.bytes()),
          writer(memory.data(), &credit.consumed, geo),
          reader(memory.data(), &credit.consumed, geo) {}
    RingGeometry geo;
    std::vector<unsigned char> memory;
    Words credit;
    RingWriter writer;
    RingReader reader;
};

// Commits a message of `size` bytes, each byte `fill`; false: no room.
bool put(RingWriter &w, uint8_t tag, uint32_t size, unsigned char fill) {
    unsigned char *p = w.reserve(size);
    if (p == nullptr)
        return false;
    std::memset(p, fill, size);
    return w.commit(tag, size) == tcaSuccess;
}

// Waits up to 5 s for cond() (generous: sanitizer builds run slowly).
template <typename Cond>
bool eventually(Cond &&cond) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!cond() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return cond();
}

}  // namespace

TEST(EagerRing, HeaderRoundTrip) {
    for (uint32_t low : {1u, 2u, 0xffffffffu})
        for (uint32_t size : {0u, 1u, 4096u, kMaxRingPayload}) {
            const MessageHeader h = decode_slot_header(encode_header(low, 0x41, size));
            EXPECT_EQ(h.seq, low);
            EXPECT_EQ(h.tag, 0x41);
            EXPECT_EQ(h.size, size);
            const MessageHeader r = decode_record_header(encode_header(low, 0x41, size));
            EXPECT_EQ(r.length, low);
            EXPECT_EQ(r.tag, 0x41);
            EXPECT_EQ(r.size, size);
        }
}

TEST(EagerRing, GeometryRoundsToCacheLines) {
    const RingGeometry g = RingGeometry::for_payload(64, 4096);
    EXPECT_EQ(g.stride % 64, 0u);
    EXPECT_GE(g.max_payload(), 4096u);
    EXPECT_EQ(g.bytes(), size_t{64} * g.stride + 64);
    EXPECT_TRUE(g.packed());
    EXPECT_FALSE(RingGeometry::for_payload(64, 4096, true).packed());
    EXPECT_EQ(RingGeometry::record_bytes(0), 64u);
    EXPECT_EQ(RingGeometry::record_bytes(56), 64u);
    EXPECT_EQ(RingGeometry::record_bytes(57), 128u);
    EXPECT_EQ(RingGeometry::record_bytes(g.max_payload()), g.stride);
}

// Slot indices are masked, so a ring has a power of two of slots; a peer with
// any other count is refused, not built with a ring that would skip slots.
TEST(EagerRing, SlotsAreAPowerOfTwo) {
    for (uint32_t s : {1u, 2u, 64u, 4096u})
        EXPECT_TRUE((RingGeometry{s, 64}.valid())) << s;
    for (uint32_t s : {0u, 3u, 48u, 100u})
        EXPECT_FALSE((RingGeometry{s, 64}.valid())) << s;
    const RingGeometry g = RingGeometry::for_payload(8, 100);
    for (uint64_t k = 0; k < 40; ++k)
        EXPECT_EQ(g.offset(k), (k % 8) * g.stride) << k;
    std::vector<unsigned char> a(tca_btl_area_bytes(2, 8, 64)), b(a.size());
    EXPECT_EQ(tca_btl_peer_new(a.data(), b.data(), nullptr, 2, 0, 1, 48, 64, 0, 0), nullptr);
    tca_btl_peer_t *p = tca_btl_peer_new(a.data(), b.data(), nullptr, 2, 0, 1, 8, 64, 0, 0);
    EXPECT_NE(p, nullptr);
    tca_btl_peer_free(p);
}

TEST(EagerRing, EmptyRingHasNothing) {
    RingPair p(8, 64);
    MessageHeader h;
    const unsigned char *data;
    EXPECT_FALSE(p.reader.peek(&h, &data));
}

// Messages lie one behind the other, each from a cache line's start
// (records of header + payload rounded to a line): a stream of small ones
// writes and reads consecutive lines, where slots one stride apart took a
// page each.
TEST(EagerRing, MessagesLieOneBehindTheOther) {
    RingPair p(8, 4096);
    unsigned char *first = p.writer.reserve(8);
    ASSERT_NE(first, nullptr);
    ASSERT_EQ(p.writer.commit(1, 8), tcaSuccess);
    unsigned char *second = p.writer.reserve(100);  // reserved larger, used smaller
    ASSERT_NE(second, nullptr);
    EXPECT_EQ(second, first + 64);
    ASSERT_EQ(p.writer.commit(2, 3), tcaSuccess);
    unsigned char *third = p.writer.reserve(200);
    EXPECT_EQ(third, second + 64) << "the unused part of a reservation is given back";
    ASSERT_EQ(p.writer.commit(3, 200), tcaSuccess);
    unsigned char *fourth = p.writer.reserve(8);
    EXPECT_EQ(fourth, third + 256);
    ASSERT_EQ(p.writer.commit(4, 8), tcaSuccess);
    MessageHeader h;
    const unsigned char *data;
    for (uint8_t tag : {1, 2, 3, 4}) {
        ASSERT_TRUE(p.reader.peek(&h, &data));
        EXPECT_EQ(h.tag, tag);
        p.reader.release(h);
    }
    EXPECT_FALSE(p.reader.peek(&h, &data));
}

TEST(EagerRing, FullRingRefusesUntilCreditsReturn) {
    RingPair p(8, 64);  // 8 records of 64 bytes of payload and more of smaller ones
    int sent = 0;
    while (put(p.writer, static_cast<uint8_t>(sent), 64, static_cast<unsigned char>(sent)))
        ++sent;
    EXPECT_GE(sent, 8);                        // the largest messages: at least `slots`
    EXPECT_EQ(p.writer.reserve(64), nullptr);  // full, nothing consumed
    MessageHeader h;
    const unsigned char *data;
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(p.reader.peek(&h, &data));
        EXPECT_EQ(h.tag, i);
        EXPECT_EQ(data[63], i);
        p.reader.release(h);
    }
    EXPECT_EQ(p.writer.reserve(64), nullptr);  // credits travel in batches of half a ring
    while (p.credit.consumed.load() == 0) {
        ASSERT_TRUE(p.reader.peek(&h, &data));
        p.reader.release(h);
    }
    EXPECT_GE(p.credit.consumed.load(), p.geo.bytes() / 2);
    EXPECT_NE(p.writer.reserve(64), nullptr);
}

// Laps of messages of changing sizes (pads at the ring's end included), every
// byte checked; from the second lap on the ring's old bytes are payloads of
// 0x41 bytes, which would decode as a header of tag 0x41 where a reader
// looked at stale memory.
TEST(EagerRing, ManyLapsKeepOrderAndNeverReadStaleBytes) {
    RingPair p(4, 256);
    MessageHeader h;
    const unsigned char *data;
    for (uint32_t k = 0; k < 5000; ++k) {
        const uint32_t size = 4 + (k * 37) % 250;
        unsigned char *slot = p.writer.reserve(size);
        ASSERT_NE(slot, nullptr) << k;
        std::memset(slot, 0x41, size);
        std::memcpy(slot, &k, sizeof k);
        ASSERT_EQ(p.writer.commit(7, size), tcaSuccess);
        ASSERT_TRUE(p.reader.peek(&h, &data)) << k;
        uint32_t got;
        std::memcpy(&got, data, sizeof got);
        EXPECT_EQ(got, k);
        EXPECT_EQ(h.size, size);
        p.reader.release(h);
        EXPECT_FALSE(p.reader.peek(&h, &data)) << "nothing but what was sent, at " << k;
    }
    EXPECT_GT(p.reader.consumed(), 4 * p.geo.bytes()) << "several laps";
}

// Held records published late, reservations used only in part, pads, laps:
// whatever the order of operations, the receiver gets every message in the
// order the ring space was taken, with its bytes, and never a stale header
// (payloads are 0x41 bytes, a plausible header).
TEST(EagerRing, RandomHoldsAndShrinkingCommitsLoseNothing) {
    RingPair p(4, 300);
    std::vector<std::pair<uint64_t, uint32_t>> held;  // (index, message number)
    std::vector<uint32_t> held_size;
    uint32_t taken = 0, next_expected = 0;
    unsigned seed = 12345;
    auto rnd = [&seed](unsigned n) {
        seed = seed * 1103515245u + 12345u;
        return (seed >> 16) % n;
    };
    auto fill = [](unsigned char *at, uint32_t number, uint32_t size) {
        std::memset(at, 0x41, size);
        std::memcpy(at, &number, sizeof number);
    };
    MessageHeader h;
    const unsigned char *data;
    for (int step = 0; step < 40000; ++step) {
        const unsigned op = rnd(4);
        if (op == 0 && held.size() < 3) {  // hold, publish later
            const uint32_t max = 4 + rnd(290);
            uint64_t index;
            unsigned char *at = p.writer.hold(max, &index);
            if (at == nullptr)
                continue;
            const uint32_t size = 4 + rnd(max - 3);
            fill(at, taken, size);
            held.emplace_back(index, taken++);
            held_size.push_back(size);
        } else if (op == 1) {  // reserve more than is sent
            const uint32_t max = 4 + rnd(290), size = 4 + rnd(max - 3);
            unsigned char *at = p.writer.reserve(max);
            if (at == nullptr)
                continue;
            fill(at, taken++, size);
            ASSERT_EQ(p.writer.commit(9, size), tcaSuccess);
        } else if (op == 2 && !held.empty()) {  // publish a held one, any of them
            const size_t k = rnd(static_cast<unsigned>(held.size()));
            p.writer.publish(held[k].first, 9, held_size[k]);
            held.erase(held.begin() + static_cast<long>(k));
            held_size.erase(held_size.begin() + static_cast<long>(k));
        } else {  // read what has arrived
            while (p.reader.peek(&h, &data)) {
                uint32_t number;
                std::memcpy(&number, data, sizeof number);
                ASSERT_EQ(number, next_expected) << "step " << step;
                ASSERT_EQ(h.tag, 9);
                for (uint32_t i = 4; i < h.size; ++i)
                    ASSERT_EQ(data[i], 0x41);
                ++next_expected;
                p.reader.release(h);
            }
        }
    }
    for (size_t k = 0; k < held.size(); ++k)
        p.writer.publish(held[k].first, 9, held_size[k]);
    while (p.reader.peek(&h, &data)) {
        uint32_t number;
        std::memcpy(&number, data, sizeof number);
        ASSERT_EQ(number, next_expected++);
        p.reader.release(h);
    }
    EXPECT_EQ(next_expected, taken);
    EXPECT_GT(p.reader.consumed(), 20 * p.geo.bytes()) << "many laps";
}

// prepare_src packs into a held record; messages committed meanwhile wait
// behind it, in order, until it is published, and a held record takes ring
// space like a sent one.
TEST(EagerRing, HeldRecordKeepsItsPlaceInOrder) {
    RingPair p(4, 64);
    uint64_t held = 0;
    unsigned char *slot = p.writer.hold(64, &held);
    ASSERT_NE(slot, nullptr);
    unsigned char *next = p.writer.reserve(6);
    ASSERT_NE(next, nullptr);
    EXPECT_EQ(next, slot + 128) << "behind the whole held record (72 bytes: two lines)";
    std::memcpy(next, "second", 6);
    ASSERT_EQ(p.writer.commit(2, 6), tcaSuccess);
    MessageHeader h;
    const unsigned char *data;
    EXPECT_FALSE(p.reader.peek(&h, &data)) << "the held record comes first";
    std::memcpy(slot, "first", 5);
    p.writer.publish(held, 1, 5);
    EXPECT_EQ(p.writer.published(), 2u);
    EXPECT_EQ(p.writer.sent(), 2u);
    ASSERT_TRUE(p.reader.peek(&h, &data));
    EXPECT_EQ(h.tag, 1);
    EXPECT_EQ(h.size, 5u);
    EXPECT_EQ(std::memcmp(data, "first", 5), 0);
    p.reader.release(h);
    ASSERT_TRUE(p.reader.peek(&h, &data));
    EXPECT_EQ(h.tag, 2);
    EXPECT_EQ(std::memcmp(data, "second", 6), 0);
    p.reader.release(h);
    EXPECT_FALSE(p.reader.peek(&h, &data));
    // Held records take space: the ring (4 x 128 bytes and a line) holds
    // four of 64 bytes (two lines each) while nothing is consumed, and eight
    // of up to 56.
    RingPair q(4, 64);
    uint64_t index = 0;
    int held_count = 0;
    while (q.writer.hold(64, &index) != nullptr)
        ++held_count;
    EXPECT_EQ(held_count, 4);
    EXPECT_EQ(q.writer.reserve(0), nullptr);
    RingPair r(4, 64);
    held_count = 0;
    while (r.writer.hold(56, &index) != nullptr)
        ++held_count;
    EXPECT_EQ(held_count, 8);
}

// A record that does not fit before the ring's end leaves a pad there and
// starts the ring again; the reader skips the pad.
TEST(EagerRing, ARecordThatDoesNotFitBeforeTheEndStartsTheRingAgain) {
    RingPair p(2, 120);                        // 2 x 128 bytes and a line: 320
    ASSERT_TRUE(put(p.writer, 1, 100, 0xa1));  // 128 bytes
    ASSERT_TRUE(put(p.writer, 2, 100, 0xa2));  // up to 256, a line before the end
    MessageHeader h;
    const unsigned char *data;
    for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(p.reader.peek(&h, &data));
        p.reader.release(h);
    }
    p.reader.return_credits();
    unsigned char *third = p.writer.reserve(100);  // 128 bytes: a pad of 64, then at the start
    ASSERT_EQ(third, p.memory.data() + 8);
    std::memset(third, 0xa3, 100);
    ASSERT_EQ(p.writer.commit(3, 100), tcaSuccess);
    ASSERT_TRUE(p.reader.peek(&h, &data));
    EXPECT_EQ(h.tag, 3);
    EXPECT_EQ(data, third);
    EXPECT_EQ(data[99], 0xa3);
    p.reader.release(h);
    EXPECT_EQ(p.reader.consumed(), 256u + 64u + 128u);
}

// Whatever the sizes, a sender whose messages were all consumed finds room
// for the next one, even before the receiver returned credits (it does so
// every half ring): a record that must go to the ring's start leaves its pad
// first, on its own (waiting for room for both, a 2-slot ring hung).
TEST(EagerRing, ASenderWhoseMessagesWereConsumedAlwaysFindsRoom) {
    for (uint32_t slots : {2u, 4u, 8u}) {
        RingPair p(slots, 248);
        unsigned seed = 7;
        MessageHeader h;
        const unsigned char *data;
        for (int k = 0; k < 20000; ++k) {
            seed = seed * 1103515245u + 12345u;
            const uint32_t size = (seed >> 16) % 249;
            unsigned char *at = p.writer.reserve(size);
            if (at == nullptr) {  // a pad went out alone: the record follows at the start
                EXPECT_FALSE(p.reader.peek(&h, &data)) << "nothing but the pad";
                at = p.writer.reserve(size);
            }
            ASSERT_NE(at, nullptr)
                << slots << " slots, message " << k << " of " << size << " bytes";
            std::memset(at, 0x41, size);
            ASSERT_EQ(p.writer.commit(3, size), tcaSuccess);
            ASSERT_TRUE(p.reader.peek(&h, &data));
            ASSERT_EQ(h.size, size);
            p.reader.release(h);
        }
    }
}

// Light traffic keeps to the ring's first lines: a sender that finds every
// message consumed past 64 KiB starts the ring again (the lines stay in both
// cores' caches); credits come back every 32 messages, or half a ring.
TEST(EagerRing, AnEmptyRingStartsAgainPastItsFirstLines) {
    RingPair p(64, 32 * 1024);  // 2 MiB and a bit
    MessageHeader h;
    const unsigned char *data;
    unsigned char *lowest = nullptr, *highest = nullptr;
    for (int k = 0; k < 20000; ++k) {  // a ping-pong: each message consumed before the next
        unsigned char *at = p.writer.reserve(8);
        ASSERT_NE(at, nullptr);
        lowest = lowest == nullptr || at < lowest ? at : lowest;
        highest = highest == nullptr || at > highest ? at : highest;
        ASSERT_EQ(p.writer.commit(1, 8), tcaSuccess);
        ASSERT_TRUE(p.reader.peek(&h, &data));
        p.reader.release(h);
    }
    EXPECT_EQ(lowest, p.memory.data() + 8);
    EXPECT_LT(highest - lowest, 64 * 1024 + 32 * 64) << "20000 lines would have taken 1.2 MiB";
    EXPECT_GE(p.credit.consumed.load(), (20000u - 32u) * 64u) << "credits came back as it went";
}

// A ring written by PIO has one local copy of its slot: nothing is held there.
TEST(EagerRing, NoHeldSlotsWherePioWritesTheRing) {
    const AreaLayout layout(2, RingGeometry::for_payload(4, 64));
    std::vector<unsigned char> own(layout.bytes());
    tcaHandle nowhere{};
    PeerChannel ch(own.data(), RemoteArea::by_pio(nowhere), layout, 0, 1, false);
    uint64_t index = 0;
    EXPECT_EQ(ch.tx().hold(8, &index), nullptr);
    EXPECT_NE(ch.tx().reserve(8), nullptr);
}

// The traffic mark counts published messages, so a held slot published after
// a later message still changes it, and the receiver polls again.
TEST(PeerArea, PublishingAHeldSlotMarksTheRingAgain) {
    const AreaLayout layout(2, RingGeometry::for_payload(4, 64));
    std::vector<unsigned char> a(layout.bytes()), b(layout.bytes());
    PeerChannel a_to_b(a.data(), b.data(), layout, 0, 1, false, true);
    TrafficMarks marks(b.data(), layout, 2);
    uint64_t held = 0;
    ASSERT_NE(a_to_b.tx().hold(1, &held), nullptr);
    ASSERT_NE(a_to_b.tx().reserve(1), nullptr);
    ASSERT_EQ(a_to_b.commit(0x41, 1), tcaSuccess);
    EXPECT_EQ(marks.take(), 1u);
    EXPECT_EQ(marks.take(), 0u);
    ASSERT_EQ(a_to_b.publish(held, 0x41, 1), tcaSuccess);
    EXPECT_EQ(marks.take(), 1u);
}

TEST(PathReport, SaysUpToWhereOb1CopiesThroughTheRings) {
    tca_btl_path_t path{};
    path.eager_limit = 32 * 1024;
    path.copy_max = 96 * 1024;
    path.peers = 1;
    path.put_mechanism = "process_vm_writev (single copy)";
    char text[1024];
    ASSERT_GT(tca_btl_describe_path(&path, text, sizeof text), 0u);
    EXPECT_NE(std::strstr(
                  text,
                  "copy protocol through the rings (btl_tca_min_rdma_pipeline_size) up to 96 KiB, "
                  "larger ones by its rendezvous (RDMA put)"),
              nullptr)
        << text;
    path.copy_max = path.eager_limit;  // single copy pays: no copy protocol
    ASSERT_GT(tca_btl_describe_path(&path, text, sizeof text), 0u);
    EXPECT_NE(std::strstr(text, "larger ones by ob1's rendezvous (RDMA put) "
                                "(btl_tca_min_rdma_pipeline_size 32 KiB: no copy protocol)"),
              nullptr)
        << text;
    EXPECT_EQ(std::strstr(text, "copy protocol through"), nullptr) << text;
    path.copy_max = UINT64_MAX;
    ASSERT_GT(tca_btl_describe_path(&path, text, sizeof text), 0u);
    EXPECT_NE(std::strstr(text, "at every size (measured"), nullptr) << text;
    EXPECT_EQ(std::strstr(text, "rendezvous"), nullptr) << text;
}

// btl_tca_rendezvous_choice traffic: the line says which messages go which way.
TEST(PathReport, SaysWhichMessagesTheTrafficRuleSendsByRget) {
    tca_btl_path_t path{};
    path.eager_limit = 32 * 1024;
    path.copy_max = UINT64_MAX;
    path.get_for_host = 1;
    path.lone_by_rdma = 1;
    path.peers = 1;
    path.put_mechanism = "process_vm_writev (single copy)";
    char text[1024];
    ASSERT_GT(tca_btl_describe_path(&path, text, sizeof text), 0u);
    EXPECT_NE(std::strstr(text, "for the messages of a stream one way at every size; a lone "
                                "message, and the messages of streams both ways, by its RGET "
                                "rendezvous"),
              nullptr)
        << text;
    EXPECT_EQ(std::strstr(text, "measured: a copy into another process is dear"), nullptr) << text;
    path.copy_max = 96 * 1024;  // the user's limit
    ASSERT_GT(tca_btl_describe_path(&path, text, sizeof text), 0u);
    EXPECT_NE(std::strstr(text, "one way up to 96 KiB;"), nullptr) << text;
}

TEST(PeerArea, ChannelsOfTwoNodesMeet) {
    const int nodes = 3;
    const AreaLayout layout(nodes, RingGeometry::for_payload(4, 100));
    std::vector<unsigned char> a(layout.bytes()), b(layout.bytes());
    PeerChannel a_to_b(a.data(), b.data(), layout, 0, 2, true);
    PeerChannel b_to_a(b.data(), a.data(), layout, 2, 0, false);
    unsigned char *slot = a_to_b.tx().reserve(5);
    ASSERT_NE(slot, nullptr);
    std::memcpy(slot, "hello", 5);
    a_to_b.tx().commit(0x41, 5);
    MessageHeader h;
    const unsigned char *data;
    ASSERT_TRUE(b_to_a.rx().peek(&h, &data));
    EXPECT_EQ(std::memcmp(data, "hello", 5), 0);
    EXPECT_FALSE(a_to_b.rx().peek(&h, &data));  // nothing the other way
    // The doorbell: b's thread sleeps -> a must raise b's interrupt; a has no
    // thread -> b never raises a's.
    EXPECT_FALSE(a_to_b.wants_interrupt());
    b_to_a.announce_sleep(true);
    EXPECT_TRUE(a_to_b.wants_interrupt());
    b_to_a.announce_sleep(false);
    EXPECT_FALSE(a_to_b.wants_interrupt());
    a_to_b.announce_sleep(true);
    EXPECT_FALSE(b_to_a.wants_interrupt());
}

// The traffic line sits between the control words and the rings, for every
// sub-cluster size: no mark can land in a peer's words or a ring.
TEST(PeerArea, TrafficLineOverlapsNothing) {
    for (int nodes = 1; nodes <= kMaxPeers; ++nodes) {
        const AreaLayout l(nodes, RingGeometry::for_payload(4, 100));
        EXPECT_GE(l.traffic_offset(), l.words_offset(nodes - 1) + sizeof(PeerWords)) << nodes;
        EXPECT_GE(l.ring_offset(0), l.traffic_offset() + sizeof(TrafficLine)) << nodes;
        EXPECT_EQ(l.traffic_offset() % 64, 0u) << nodes;
    }
}

// Senders mark their ring only where the receiver polls by marks; a mark is
// taken once, and the C entry point reads the same line.
TEST(PeerArea, AMarkIsTakenOnceAndOnlyWhereAsked) {
    const int nodes = 4;
    const AreaLayout layout(nodes, RingGeometry::for_payload(4, 100));
    std::vector<std::vector<unsigned char>> area(nodes, std::vector<unsigned char>(layout.bytes()));
    PeerChannel n0_to_3(area[0].data(), area[3].data(), layout, 0, 3, false, true);
    PeerChannel n1_to_3(area[1].data(), area[3].data(), layout, 1, 3, false, true);
    PeerChannel n3_to_0(area[3].data(), area[0].data(), layout, 3, 0, false, false);
    TrafficMarks at3(area[3].data(), layout, nodes), at0(area[0].data(), layout, nodes);
    EXPECT_EQ(at3.take(), 0u);
    ASSERT_NE(n1_to_3.tx().reserve(0), nullptr);
    n1_to_3.commit(1, 0);
    ASSERT_NE(n0_to_3.tx().reserve(0), nullptr);
    n0_to_3.commit(1, 0);
    ASSERT_NE(n0_to_3.tx().reserve(0), nullptr);
    n0_to_3.commit(1, 0);
    EXPECT_EQ(at3.take(), 0b11u);
    EXPECT_EQ(at3.take(), 0u) << "a mark is taken once";
    ASSERT_NE(n1_to_3.tx().reserve(0), nullptr);
    n1_to_3.commit(1, 0);
    EXPECT_EQ(at3.take(), 0b10u);
    ASSERT_NE(n3_to_0.tx().reserve(0), nullptr);
    n3_to_0.commit(1, 0);
    EXPECT_EQ(at0.take(), 0u) << "node 0 polls every ring: no marks";
}

namespace {
// Nodes 0..n-1 with their areas; channels built on demand.
struct Areas {
    Areas(int nodes, uint32_t slots)
        : nodes(nodes), layout(nodes, RingGeometry::for_payload(slots, 64)),
          area(size_t(nodes), std::vector<unsigned char>(layout.bytes())) {}
    PeerChannel channel(int from, int to, bool to_polls_by_marks) {
        return PeerChannel(area[from].data(), area[to].data(), layout, from, to, false,
                           to_polls_by_marks);
    }
    int nodes;
    AreaLayout layout;
    std::vector<std::vector<unsigned char>> area;
};
// False (nothing sent) once *stop is set while the ring is full.
bool send(PeerChannel &ch, uint32_t value, const std::atomic<bool> *stop = nullptr) {
    unsigned char *slot;
    while ((slot = ch.tx().reserve(4)) == nullptr) {
        if (stop != nullptr && stop->load(std::memory_order_relaxed))
            return false;
        std::this_thread::yield();
    }
    std::memcpy(slot, &value, 4);
    ch.commit(7, 4);
    return true;
}
struct Deliveries {
    std::vector<std::pair<int, uint32_t>> got;  // (node, value)
    static void add(void *ctx, int node, uint8_t tag, const void *payload, uint32_t size) {
        uint32_t v = 0;
        if (tag == 7 && size == 4)
            std::memcpy(&v, payload, 4);
        static_cast<Deliveries *>(ctx)->got.emplace_back(node, v);
    }
};
}  // namespace

// Through the C entry points: with few peers every added ring is polled; by
// marks, a ring whose sender did not mark is not looked at, and a sender that
// wrote before it was added is polled once it is.
TEST(RingPoller, EveryRingOrOnlyMarkedOnes) {
    Areas a(3, 4);
    PeerChannel n1_unmarked = a.channel(1, 0, false), n2_marked = a.channel(2, 0, true);
    // The receiver's side through the C API, as the glue makes it.
    tca_btl_peer_t *in1 =
        tca_btl_peer_new(a.area[0].data(), a.area[1].data(), nullptr, 3, 0, 1, 4, 64, 0, 0);
    tca_btl_peer_t *in2 =
        tca_btl_peer_new(a.area[0].data(), a.area[2].data(), nullptr, 3, 0, 2, 4, 64, 0, 0);
    ASSERT_NE(in1, nullptr);
    ASSERT_NE(in2, nullptr);
    send(n1_unmarked, 11);
    send(n2_marked, 22);
    {
        tca_btl_poller_t *every = tca_btl_poller_new(a.area[0].data(), 3, 0, 8, 4, 64, 0);
        ASSERT_NE(every, nullptr);
        tca_btl_poller_add(every, 1, in1);
        tca_btl_poller_add(every, 2, in2);
        Deliveries d;
        EXPECT_EQ(tca_btl_poller_poll(every, Deliveries::add, &d), 2);
        EXPECT_EQ(d.got, (std::vector<std::pair<int, uint32_t>>{{1, 11}, {2, 22}}));
        tca_btl_poller_free(every);
    }
    send(n1_unmarked, 12);
    send(n2_marked, 23);
    tca_btl_poller_t *marks = tca_btl_poller_new(a.area[0].data(), 3, 1, 8, 4, 64, 0);
    ASSERT_NE(marks, nullptr);
    tca_btl_poller_add(marks, 1, in1);
    Deliveries d;
    EXPECT_EQ(tca_btl_poller_poll(marks, Deliveries::add, &d), 0)
        << "node 2 marked but is not added yet";
    tca_btl_poller_add(marks, 2, in2);
    EXPECT_EQ(tca_btl_poller_poll(marks, Deliveries::add, &d), 1)
        << "polled again without a new mark";
    EXPECT_EQ(tca_btl_poller_poll(marks, Deliveries::add, &d), 0);
    EXPECT_EQ(d.got, (std::vector<std::pair<int, uint32_t>>{{2, 23}}))
        << "node 1's ring is never marked";
    tca_btl_poller_free(marks);
    EXPECT_EQ(tca_btl_poller_new(a.area[0].data(), kMaxPeers + 1, 1, 8, 4, 64, 0), nullptr);
    EXPECT_EQ(tca_btl_poller_new(a.area[0].data(), 3, 1, 0, 4, 64, 0), nullptr);
    EXPECT_EQ(tca_btl_poller_new(a.area[0].data(), 3, 1, 8, 3, 64, 0), nullptr)
        << "3 slots: not a power of two";
    tca_btl_peer_free(in1);
    tca_btl_peer_free(in2);
}

// A sender the receiver was never told about (Open MPI adds a process of
// another host on first use) is found by its first message, and once added
// its ring is drained; added nodes, and nodes that sent nothing, are not
// reported.
TEST(RingPoller, FindsTheFirstMessageOfASenderNotAdded) {
    Areas a(4, 4);
    tca_btl_poller_t *p = tca_btl_poller_new(a.area[0].data(), 4, 0, 8, 4, 64, 0);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(tca_btl_poller_unknown_senders(p), 0u);
    PeerChannel n1 = a.channel(1, 0, false), n3 = a.channel(3, 0, false);
    send(n3, 33);
    send(n3, 34);
    send(n1, 11);
    tca_btl_peer_t *in1 =
        tca_btl_peer_new(a.area[0].data(), a.area[1].data(), nullptr, 4, 0, 1, 4, 64, 0, 0);
    ASSERT_NE(in1, nullptr);
    tca_btl_poller_add(p, 1, in1);
    EXPECT_EQ(tca_btl_poller_unknown_senders(p), uint64_t{1} << 3)
        << "node 3 wrote before being added";
    Deliveries d;
    EXPECT_EQ(tca_btl_poller_poll(p, Deliveries::add, &d), 1);
    tca_btl_peer_t *in3 =
        tca_btl_peer_new(a.area[0].data(), a.area[3].data(), nullptr, 4, 0, 3, 4, 64, 0, 0);
    ASSERT_NE(in3, nullptr);
    tca_btl_poller_add(p, 3, in3);
    EXPECT_EQ(tca_btl_poller_unknown_senders(p), 0u);
    EXPECT_EQ(tca_btl_poller_poll(p, Deliveries::add, &d), 2);
    EXPECT_EQ(d.got, (std::vector<std::pair<int, uint32_t>>{{1, 11}, {3, 33}, {3, 34}}));
    tca_btl_poller_free(p);
    tca_btl_peer_free(in1);
    tca_btl_peer_free(in3);
}

// Three sender threads into one receiver that polls only marked rings, a
// batch of 2 per pass so rings are often left unfinished: every message
// arrives, in order per sender.  Built with TSan too.  Sized for a loaded
// machine (make check-stress: the threads get a core now and then), and
// bounded: at the deadline the senders stop too.
TEST(RingPoller, PollingByMarksLosesNothing) {
    const int nodes = 4, receiver = 3, senders = 3;
    constexpr uint32_t kMessages = 20000;
    Areas a(nodes, 16);
    std::vector<PeerChannel> out, in;
    for (int s = 0; s < senders; ++s) {
        out.push_back(a.channel(s, receiver, true));
        in.push_back(a.channel(receiver, s, false));
    }
    RingPoller poller(a.area[receiver].data(), nodes, true, 2);
    for (int s = 0; s < senders; ++s)
        poller.add(s, &in[size_t(s)]);
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int s = 0; s < senders; ++s)
        threads.emplace_back([&, s] {
            for (uint32_t k = 0; k < kMessages && send(out[size_t(s)], k, &stop); ++k) {
            }
        });
    std::vector<uint32_t> next(senders, 0);
    uint64_t bad = 0, idle_passes = 0;
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(60);  // a lost mark: fail, not hang
    while ((next[0] < kMessages || next[1] < kMessages || next[2] < kMessages) &&
           std::chrono::steady_clock::now() < give_up) {
        const int got = poller.poll([&](int s, const MessageHeader &h, const unsigned char *data) {
            uint32_t k;
            std::memcpy(&k, data, 4);
            bad += s >= senders || k != next[size_t(s)]++ || h.tag != 7;
        });
        if (got == 0 && ++idle_passes % 64 == 0)
            std::this_thread::yield();
    }
    stop.store(true, std::memory_order_relaxed);
    for (auto &t : threads)
        t.join();
    EXPECT_EQ(bad, 0u);
    for (int s = 0; s < senders; ++s)
        EXPECT_EQ(next[size_t(s)], kMessages) << "sender " << s;
}

// Producer and consumer threads through one ring, sizes changing every
// message, every payload byte checked.  Built once more with TSan.
TEST(EagerRing, TwoThreadStress) {
    RingPair p(16, 512);
    constexpr uint32_t kMessages = 200000;
    std::thread producer([&] {
        for (uint32_t k = 0; k < kMessages; ++k) {
            unsigned char *slot;
            const uint32_t size = 4 + k % 500;
            while ((slot = p.writer.reserve(size)) == nullptr)
                std::this_thread::yield();
            std::memcpy(slot, &k, 4);
            for (uint32_t i = 4; i < size; ++i)
                slot[i] = static_cast<unsigned char>(k + i);
            p.writer.commit(static_cast<uint8_t>(k % 255), size);  // 255: the pad's tag
        }
    });
    uint64_t bad = 0;
    for (uint32_t k = 0; k < kMessages; ++k) {
        MessageHeader h;
        const unsigned char *data;
        while (!p.reader.peek(&h, &data))
            std::this_thread::yield();
        uint32_t got;
        std::memcpy(&got, data, 4);
        bad += got != k || h.size != 4 + k % 500 || h.tag != static_cast<uint8_t>(k % 255);
        for (uint32_t i = 4; i < h.size; ++i)
            bad += data[i] != static_cast<unsigned char>(k + i);
        p.reader.release(h);
    }
    producer.join();
    EXPECT_EQ(bad, 0u);
}

// The progress thread on a one-node device: it stays out of the way while
// the "application" progresses, drives progress when it stops, and sleeps
// (few polls) when there is nothing to do.
TEST(ProgressClient, SleepsWhileAppProgressesDrivesWhenItComputes) {
    const std::string key = "btlcore-" + std::to_string(getpid());
    const tcaInitParams params{key.c_str(), 0, 1};
    ASSERT_EQ(tcaInitWithParams(&params), tcaSuccess);
    struct State {
        std::atomic<int> polls{0};
        std::atomic<int> announced{-1};
        std::atomic<int> work{0};
    } st;
    ProgressHooks hooks{[](void *c) {
                            auto *s = static_cast<State *>(c);
                            s->polls.fetch_add(1);
                            int w = s->work.load();
                            while (w > 0 && !s->work.compare_exchange_weak(w, w - 1)) {
                            }
                            return w > 0 ? 1 : 0;
                        },
                        [](void *c, int on) { static_cast<State *>(c)->announced.store(on); }, &st};
    {
        ProgressClient t(hooks, std::chrono::microseconds(500), std::chrono::microseconds(4000),
                         std::chrono::microseconds(200000));
        // The application calls MPI all the time: the thread stays out of the way.
        auto note_for = [&](std::chrono::milliseconds d) {
            const auto until = std::chrono::steady_clock::now() + d;
            while (std::chrono::steady_clock::now() < until)
                t.note_app_progress();
        };
        note_for(std::chrono::milliseconds(20));
        const int before = st.polls.load();
        rusage r0{}, r1{};
        getrusage(RUSAGE_THREAD, &r0);
        note_for(std::chrono::milliseconds(50));
        getrusage(RUSAGE_THREAD, &r1);
        // A descheduled main thread looks like one that computes: each time it
        // is off its core the thread may poll twice before it backs off, so
        // the bound grows with this thread's context switches (a loaded
        // machine adds them; the fixed 5 before assumed an idle one), plus a
        // few for the hypervisor's, which no count shows.  A thread that does
        // not back off polls at every look (100 in 50 ms) or spins (thousands).
        const long switches = (r1.ru_nvcsw - r0.ru_nvcsw) + (r1.ru_nivcsw - r0.ru_nivcsw);
        EXPECT_LE(st.polls.load() - before, 10 + 2 * switches)
            << "it polls while the application progresses (" << switches << " context switches)";
        // The application computes: the thread takes over, does the work, then sleeps.
        st.work.store(100);
        EXPECT_TRUE(eventually([&] { return st.work.load() == 0; }));
        EXPECT_TRUE(eventually([&] { return st.announced.load() == 1; }))
            << "it asks its peers for doorbells before sleeping";
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const int polls = st.polls.load();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        EXPECT_LT(st.polls.load() - polls, 10)
            << "idle: it sleeps on the interrupt, it does not spin";
        // A raised interrupt (a doorbell) wakes it at once.
        st.work.store(1);
        int node = 0;
        tcaGetNodeId(&node);
        ASSERT_EQ(tcaInterruptRaise(node), tcaSuccess);
        EXPECT_TRUE(eventually([&] { return st.work.load() == 0; }));
        EXPECT_GT(t.driven_polls(), 0u);
    }
    EXPECT_EQ(st.announced.load(), 0) << "on exit it withdraws the doorbell request";
    EXPECT_EQ(tcaFinalize(), tcaSuccess);
}

// While answers to its own requests are due (a get in flight), the thread
// polls on for one check interval instead of sleeping, then sleeps all the
// same; with none due it asks for doorbells after the first empty pass.
TEST(ProgressClient, PollsOnWhileAnswersAreDueForOneIntervalAtMost) {
    const std::string key = "btllinger-" + std::to_string(getpid());
    const tcaInitParams params{key.c_str(), 0, 1};
    ASSERT_EQ(tcaInitWithParams(&params), tcaSuccess);
    struct State {
        std::atomic<int> polls{0};
        std::atomic<int> polls_at_announce{-1};
        std::atomic<int> work{0};
        std::atomic<int> awaiting{0};
    } st;
    ProgressHooks hooks{[](void *c) {
                            auto *s = static_cast<State *>(c);
                            s->polls.fetch_add(1);
                            return s->work.exchange(0);
                        },
                        [](void *c, int on) {
                            auto *s = static_cast<State *>(c);
                            if (on)
                                s->polls_at_announce.store(s->polls.load());
                        },
                        &st, [](void *c) { return static_cast<State *>(c)->awaiting.load(); }};
    for (int awaiting : {0, 1}) {
        st.polls.store(0);
        st.polls_at_announce.store(-1);
        st.awaiting.store(awaiting);
        st.work.store(1);  // the application never calls: the thread drives at once
        const auto t0 = std::chrono::steady_clock::now();
        ProgressClient t(hooks, std::chrono::milliseconds(30), std::chrono::milliseconds(30),
                         std::chrono::seconds(10));
        ASSERT_TRUE(eventually([&] { return st.polls_at_announce.load() >= 0; }))
            << "awaiting " << awaiting << ": it never asked for doorbells (spins for ever)";
        const auto waited = std::chrono::steady_clock::now() - t0;
        if (awaiting) {
            // One interval to notice the application is away, one of polling on.
            EXPECT_GE(waited, std::chrono::milliseconds(55));
            EXPECT_GE(st.polls_at_announce.load(), 10) << "it slept while an answer was due";
        } else {
            // The pass with the work, one empty pass, then the request.
            EXPECT_LE(st.polls_at_announce.load(), 3) << "it polled on with nothing due";
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        const int polls = st.polls.load();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        EXPECT_LT(st.polls.load() - polls, 5) << "after the interval it sleeps, answer or not";
    }
    EXPECT_EQ(tcaFinalize(), tcaSuccess);
}

// A peer whose area the device cannot map (the ucx device) is written by
// PIO: the slot's local copy goes out as payload, then header word; credits
// come back as a PIO write; a peer with a progress thread gets its interrupt
// after every message, since no doorbell request can be seen in time.  Here
// on a one-node loopback device, both areas being that node's memory.
TEST(PioPeer, RingsOverPioWritesDeliverInOrderAndReturnCredits) {
    const std::string key = "btlpio-" + std::to_string(getpid());
    const tcaInitParams params{key.c_str(), 0, 1};
    ASSERT_EQ(tcaInitWithParams(&params), tcaSuccess);
    const AreaLayout layout(2, RingGeometry::for_payload(4, 200));
    void *mem[2] = {};
    tcaHandle handle[2];
    for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(tcaMalloc(&mem[i], layout.bytes(), tcaMemoryInternal), tcaSuccess);
        std::memset(mem[i], 0, layout.bytes());
        ASSERT_EQ(tcaCreateHandle(&handle[i], mem[i], layout.bytes(), tcaMemoryInternal),
                  tcaSuccess);
    }
    auto *a = static_cast<unsigned char *>(mem[0]), *b = static_cast<unsigned char *>(mem[1]);
    // "Node 0" lives in a, "node 1" in b; each writes the other only by PIO.
    PeerChannel a_to_b(a, RemoteArea::by_pio(handle[1]), layout, 0, 1, true);
    PeerChannel b_to_a(b, RemoteArea::by_pio(handle[0]), layout, 1, 0, false);
    const int messages = 4 * 10 + 3;  // ten laps and a bit: credits must come back by PIO
    int sent = 0, received = 0, bad = 0;
    while (received < messages) {
        if (sent < messages) {
            const uint32_t size = 8 + static_cast<uint32_t>(sent) * 4;
            if (unsigned char *slot = a_to_b.tx().reserve(size)) {
                for (uint32_t i = 0; i < size; ++i)
                    slot[i] = static_cast<unsigned char>(sent + i);
                ASSERT_EQ(a_to_b.commit(static_cast<uint8_t>(sent), size), tcaSuccess);
                EXPECT_TRUE(a_to_b.wants_interrupt())
                    << "a PIO peer with a thread is rung after every message";
                ++sent;
                continue;
            }
        }
        MessageHeader h;
        const unsigned char *data;
        ASSERT_TRUE(b_to_a.rx().peek(&h, &data))
            << "the ring is full, yet nothing arrived (message " << received << ")";
        bad += h.tag != static_cast<uint8_t>(received) ||
               h.size != 8 + static_cast<uint32_t>(received) * 4;
        for (uint32_t i = 0; i < h.size; ++i)
            bad += data[i] != static_cast<unsigned char>(received + i);
        b_to_a.rx().release(h);
        ++received;
    }
    EXPECT_EQ(bad, 0);
    EXPECT_FALSE(b_to_a.wants_interrupt()) << "a peer without a thread is never rung";
    // A write the device refuses is reported and the message is not sent.
    ASSERT_EQ(tcaDestroyHandle(&handle[1]), tcaSuccess);
    ASSERT_NE(a_to_b.tx().reserve(0), nullptr);
    const uint64_t before = a_to_b.tx().sent();
    EXPECT_NE(a_to_b.commit(1, 8), tcaSuccess);
    EXPECT_EQ(a_to_b.tx().sent(), before);
    EXPECT_EQ(tcaDestroyHandle(&handle[0]), tcaSuccess);
    for (void *m : mem)
        EXPECT_EQ(tcaFree(m, tcaMemoryInternal), tcaSuccess);
    EXPECT_EQ(tcaFinalize(), tcaSuccess);
}
