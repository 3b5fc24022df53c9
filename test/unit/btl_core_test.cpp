// btl_core_test.cpp - the btl tca protocol core without MPI: ring header
// encoding, credits and wrap-around, the doorbell handshake, a two-thread
// stress run (also built with ThreadSanitizer), and the progress thread's
// sleep/drive behaviour on a one-node loopback device.
#include <gtest/gtest.h>

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
          reader(memory.data(), &credit.consumed, geo, PeerChannel::credit_batch(geo)) {}
    RingGeometry geo;
    std::vector<unsigned char> memory;
    Words credit;
    RingWriter writer;
    RingReader reader;
};

}  // namespace

TEST(EagerRing, HeaderRoundTrip) {
    for (uint32_t seq : {1u, 2u, 0xffffffffu})
        for (uint32_t size : {0u, 1u, 4096u, kMaxRingPayload}) {
            const MessageHeader h = decode_header(encode_header(seq, 0x41, size));
            EXPECT_EQ(h.seq, seq);
            EXPECT_EQ(h.tag, 0x41);
            EXPECT_EQ(h.size, size);
        }
}

TEST(EagerRing, GeometryRoundsToCacheLines) {
    const RingGeometry g = RingGeometry::for_payload(64, 4096);
    EXPECT_EQ(g.stride % 64, 0u);
    EXPECT_GE(g.max_payload(), 4096u);
    EXPECT_EQ(g.bytes(), size_t{64} * g.stride);
}

// Ring indices are masked, so a ring has a power of two of slots; a peer with
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

TEST(EagerRing, FullRingRefusesUntilCreditsReturn) {
    RingPair p(8, 64);
    for (int i = 0; i < 8; ++i) {
        unsigned char *slot = p.writer.reserve();
        ASSERT_NE(slot, nullptr) << i;
        std::memset(slot, i, 10);
        p.writer.commit(static_cast<uint8_t>(i), 10);
    }
    EXPECT_EQ(p.writer.reserve(), nullptr);  // 8 in flight, none consumed
    MessageHeader h;
    const unsigned char *data;
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(p.reader.peek(&h, &data));
        EXPECT_EQ(h.tag, i);
        EXPECT_EQ(data[9], i);
        p.reader.release();
    }
    EXPECT_EQ(p.writer.reserve(), nullptr);  // credits travel in batches of half a ring
    ASSERT_TRUE(p.reader.peek(&h, &data));
    p.reader.release();  // the 4th: a batch
    EXPECT_EQ(p.credit.consumed.load(), 4u);
    EXPECT_NE(p.writer.reserve(), nullptr);
}

TEST(EagerRing, ManyLapsKeepOrderAndNeverReadStaleSlots) {
    RingPair p(4, 32);
    MessageHeader h;
    const unsigned char *data;
    for (uint32_t k = 0; k < 1000; ++k) {
        unsigned char *slot = p.writer.reserve();
        ASSERT_NE(slot, nullptr);
        std::memcpy(slot, &k, sizeof k);
        p.writer.commit(7, sizeof k);
        ASSERT_TRUE(p.reader.peek(&h, &data));
        uint32_t got;
        std::memcpy(&got, data, sizeof got);
        EXPECT_EQ(got, k);
        EXPECT_EQ(h.seq, k + 1);
        p.reader.release();
        EXPECT_FALSE(p.reader.peek(&h, &data)) << "the previous lap's header must not match";
    }
}

// prepare_src packs into a held slot; messages committed meanwhile wait
// behind it, in order, until it is published, and a held slot counts against
// the credits like a sent one.
TEST(EagerRing, HeldSlotKeepsItsPlaceInOrder) {
    RingPair p(4, 64);
    uint64_t held = 99;
    unsigned char *slot = p.writer.hold(&held);
    ASSERT_NE(slot, nullptr);
    EXPECT_EQ(held, 0u);
    unsigned char *next = p.writer.reserve();
    ASSERT_NE(next, nullptr);
    EXPECT_NE(next, slot);
    std::memcpy(next, "second", 6);
    ASSERT_EQ(p.writer.commit(2, 6), tcaSuccess);
    MessageHeader h;
    const unsigned char *data;
    EXPECT_FALSE(p.reader.peek(&h, &data)) << "the held slot comes first";
    std::memcpy(slot, "first", 5);
    p.writer.publish(held, 1, 5);
    EXPECT_EQ(p.writer.published(), 2u);
    ASSERT_TRUE(p.reader.peek(&h, &data));
    EXPECT_EQ(h.tag, 1);
    EXPECT_EQ(std::memcmp(data, "first", 5), 0);
    p.reader.release();
    ASSERT_TRUE(p.reader.peek(&h, &data));
    EXPECT_EQ(h.tag, 2);
    EXPECT_EQ(std::memcmp(data, "second", 6), 0);
    p.reader.release();
    // Both consumed (a credit batch: half the ring): four slots free, and
    // held ones take them as sent ones do.
    EXPECT_EQ(p.credit.consumed.load(), 2u);
    uint64_t a = 0, b = 0;
    ASSERT_NE(p.writer.hold(&a), nullptr);
    ASSERT_NE(p.writer.hold(&b), nullptr);
    EXPECT_EQ(a, 2u);
    EXPECT_EQ(b, 3u);
    ASSERT_NE(p.writer.reserve(), nullptr);
    ASSERT_EQ(p.writer.commit(3, 0), tcaSuccess);
    ASSERT_NE(p.writer.hold(&b), nullptr);
    EXPECT_EQ(p.writer.hold(&b), nullptr);
    EXPECT_EQ(p.writer.reserve(), nullptr);
}

// A ring written by PIO has one local copy of its slot: nothing is held there.
TEST(EagerRing, NoHeldSlotsWherePioWritesTheRing) {
    const AreaLayout layout(2, RingGeometry::for_payload(4, 64));
    std::vector<unsigned char> own(layout.bytes());
    tcaHandle nowhere{};
    PeerChannel ch(own.data(), RemoteArea::by_pio(nowhere), layout, 0, 1, false);
    uint64_t index = 0;
    EXPECT_EQ(ch.tx().hold(&index), nullptr);
    EXPECT_NE(ch.tx().reserve(), nullptr);
}

// The traffic mark counts published messages, so a held slot published after
// a later message still changes it, and the receiver polls again.
TEST(PeerArea, PublishingAHeldSlotMarksTheRingAgain) {
    const AreaLayout layout(2, RingGeometry::for_payload(4, 64));
    std::vector<unsigned char> a(layout.bytes()), b(layout.bytes());
    PeerChannel a_to_b(a.data(), b.data(), layout, 0, 1, false, true);
    TrafficMarks marks(b.data(), layout, 2);
    uint64_t held = 0;
    ASSERT_NE(a_to_b.tx().hold(&held), nullptr);
    ASSERT_NE(a_to_b.tx().reserve(), nullptr);
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
    path.copy_max = UINT64_MAX;
    ASSERT_GT(tca_btl_describe_path(&path, text, sizeof text), 0u);
    EXPECT_NE(std::strstr(text, "at every size (measured"), nullptr) << text;
    EXPECT_EQ(std::strstr(text, "rendezvous"), nullptr) << text;
}

TEST(PeerArea, ChannelsOfTwoNodesMeet) {
    const int nodes = 3;
    const AreaLayout layout(nodes, RingGeometry::for_payload(4, 100));
    std::vector<unsigned char> a(layout.bytes()), b(layout.bytes());
    PeerChannel a_to_b(a.data(), b.data(), layout, 0, 2, true);
    PeerChannel b_to_a(b.data(), a.data(), layout, 2, 0, false);
    unsigned char *slot = a_to_b.tx().reserve();
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
    ASSERT_NE(n1_to_3.tx().reserve(), nullptr);
    n1_to_3.commit(1, 0);
    ASSERT_NE(n0_to_3.tx().reserve(), nullptr);
    n0_to_3.commit(1, 0);
    ASSERT_NE(n0_to_3.tx().reserve(), nullptr);
    n0_to_3.commit(1, 0);
    EXPECT_EQ(at3.take(), 0b11u);
    EXPECT_EQ(at3.take(), 0u) << "a mark is taken once";
    ASSERT_NE(n1_to_3.tx().reserve(), nullptr);
    n1_to_3.commit(1, 0);
    EXPECT_EQ(at3.take(), 0b10u);
    ASSERT_NE(n3_to_0.tx().reserve(), nullptr);
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
    while ((slot = ch.tx().reserve()) == nullptr) {
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
            while ((slot = p.writer.reserve()) == nullptr)
                std::this_thread::yield();
            const uint32_t size = 4 + k % 500;
            std::memcpy(slot, &k, 4);
            for (uint32_t i = 4; i < size; ++i)
                slot[i] = static_cast<unsigned char>(k + i);
            p.writer.commit(static_cast<uint8_t>(k), size);
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
        bad += got != k || h.size != 4 + k % 500 || h.tag != static_cast<uint8_t>(k);
        for (uint32_t i = 4; i < h.size; ++i)
            bad += data[i] != static_cast<unsigned char>(k + i);
        p.reader.release();
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
        auto eventually = [](auto &&cond) {  // generous: sanitizer builds run slowly
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
            while (!cond() && std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            return cond();
        };
        // The application calls MPI all the time: the thread stays out of the way.
        auto note_for = [&](std::chrono::milliseconds d) {
            const auto until = std::chrono::steady_clock::now() + d;
            while (std::chrono::steady_clock::now() < until)
                t.note_app_progress();
        };
        note_for(std::chrono::milliseconds(20));
        const int before = st.polls.load();
        note_for(std::chrono::milliseconds(50));
        // (At most a few: a descheduled main thread looks like one that computes.)
        EXPECT_LE(st.polls.load() - before, 5) << "it polls while the application progresses";
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
            if (unsigned char *slot = a_to_b.tx().reserve()) {
                const uint32_t size = 8 + static_cast<uint32_t>(sent) * 4;
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
        b_to_a.rx().release();
        ++received;
    }
    EXPECT_EQ(bad, 0);
    EXPECT_FALSE(b_to_a.wants_interrupt()) << "a peer without a thread is never rung";
    // A write the device refuses is reported and the message is not sent.
    ASSERT_EQ(tcaDestroyHandle(&handle[1]), tcaSuccess);
    ASSERT_NE(a_to_b.tx().reserve(), nullptr);
    const uint64_t before = a_to_b.tx().sent();
    EXPECT_NE(a_to_b.commit(1, 8), tcaSuccess);
    EXPECT_EQ(a_to_b.tx().sent(), before);
    EXPECT_EQ(tcaDestroyHandle(&handle[0]), tcaSuccess);
    for (void *m : mem)
        EXPECT_EQ(tcaFree(m, tcaMemoryInternal), tcaSuccess);
    EXPECT_EQ(tcaFinalize(), tcaSuccess);
}
