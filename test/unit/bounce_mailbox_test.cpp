// bounce_mailbox_test.cpp - white-box checks of the target side of the bounce
// path: the mailbox lies in shared memory that the writer (another process)
// can change at any time, so the server copies its fields once and uses only
// that copy, and never reads past the mailbox's ring.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "loopback/node_set.hpp"
#include "loopback/remote_writer.hpp"
#include "loopback/segment_layout.hpp"

namespace tca::loopback {
namespace {

// Node 0 of a sub-cluster of `nodes` (only its own segment exists: the
// server needs no other).
struct OwnNode {
    NodeSet nodes;
    OwnNode(const char *what, int num_nodes)
        : nodes(LaunchInfo{std::string("t.mbox.") + what + "." + std::to_string(getpid()), 0,
                           num_nodes, "test"},
                WaitPolicy{}) {}
    ~OwnNode() { nodes.finalize(false); }
};

// The mailbox of source node `src` with a registered destination of 2 rings
// and a ring of 0xab (+ src).
struct Mailbox {
    OwnNode n;
    const bool created;  // before the writer: it serves our own segment
    RemoteWriter writer;
    std::vector<unsigned char> dst = std::vector<unsigned char>(2 * kBounceSize + 4096, 0);
    BounceArea *b = nullptr;
    const uint32_t src;
    explicit Mailbox(const char *what, int num_nodes = 1, uint32_t source = 0)
        : n(what, num_nodes), created(n.nodes.create_own(64 * 1024) == tcaSuccess),
          writer(n.nodes, CopyPath::Bounce), src(source) {
        RegistrationEntry &e = n.nodes.own().registrations()[3];
        e.base = reinterpret_cast<uint64_t>(dst.data());
        e.size = dst.size();
        e.region = tcaMemoryCPU;
        e.key.store(0x1234);
        b = n.nodes.own().bounce(src);
        std::memset(b->data, 0xab + static_cast<int>(src), kBounceSize);
    }
    uint64_t post(uint64_t len, uint64_t filled) {
        return post_in(b, reinterpret_cast<uint64_t>(dst.data()), src, len, filled);
    }
    // As a writer would: fields, request, then the posted bit.
    uint64_t post_in(BounceArea *box, uint64_t addr, uint32_t from, uint64_t len, uint64_t filled) {
        box->dst_addr = addr;
        box->dst_key = 0x1234;
        box->dst_reg = 3;
        box->len = len;
        box->filled.store(filled);
        box->drained.store(0);
        box->cancelled.store(0);
        const uint64_t seq = box->done.load() + 1;
        box->request.store(seq);
        n.nodes.own().header()->bounce_posted.fetch_or(uint64_t{1} << from);
        return seq;
    }
    bool idle() const { return b->request.load() == b->done.load(); }
};

// The writer streams a row through the mailbox as a ring and says how far it
// got in `filled`, which lies in memory it can change at will: the server
// copies at most the request's length, and only from the ring (a writer that
// claims more than the ring holds gets the ring's bytes again, never what
// lies past it in the segment).
TEST(BounceMailbox, TheServerReadsOnlyTheRingAndOnlyTheLength) {
    Mailbox m("ring");
    ASSERT_TRUE(m.created);
    const uint64_t len = kBounceSize + 4096;
    m.post(len, UINT64_MAX);  // a lying `filled`: beyond the length and beyond the ring
    EXPECT_TRUE(m.writer.service_bounce());
    EXPECT_EQ(m.b->status.load(), tcaSuccess);
    EXPECT_TRUE(m.idle());
    EXPECT_EQ(m.dst[0], 0xab);
    EXPECT_EQ(m.dst[kBounceSize - 1], 0xab);
    EXPECT_EQ(m.dst[kBounceSize], 0xab);  // from the ring's start again
    EXPECT_EQ(m.dst[len - 1], 0xab);
    EXPECT_EQ(m.dst[len], 0);  // past the length: untouched
}

// The server copies out behind the writer: what is filled so far, reported
// as drained, and ends the request only when all of it is out.
TEST(BounceMailbox, TheServerCopiesOutBehindTheWriter) {
    Mailbox m("stream");
    ASSERT_TRUE(m.created);
    m.post(3 * 4096, 4096);
    EXPECT_TRUE(m.writer.service_bounce());
    EXPECT_EQ(m.b->drained.load(), 4096u);
    EXPECT_EQ(m.dst[4095], 0xab);
    EXPECT_EQ(m.dst[4096], 0);
    EXPECT_FALSE(m.idle());
    EXPECT_FALSE(m.writer.service_bounce());  // nothing new: no progress
    m.b->filled.store(3 * 4096);
    EXPECT_TRUE(m.writer.service_bounce());
    EXPECT_TRUE(m.idle());
    EXPECT_EQ(m.b->status.load(), tcaSuccess);
    EXPECT_EQ(m.dst[3 * 4096 - 1], 0xab);
    EXPECT_EQ(m.dst[3 * 4096], 0);
}

// A writer that gives up (its bound ran out) ends the request either way:
// claimed and half copied, or never claimed; the mailbox is idle after.
TEST(BounceMailbox, AWriterThatGivesUpEndsItsRequest) {
    Mailbox m("cancel");
    ASSERT_TRUE(m.created);
    m.post(3 * 4096, 4096);
    EXPECT_TRUE(m.writer.service_bounce());  // claimed, 4 KiB out
    m.b->cancelled.store(1);
    EXPECT_TRUE(m.writer.service_bounce());
    EXPECT_TRUE(m.idle());
    EXPECT_EQ(m.b->status.load(), tcaErrorTimeout);
    EXPECT_EQ(m.dst[4096], 0);
    // Never claimed: marked cancelled in the request word, ended unread.
    std::fill(m.dst.begin(), m.dst.end(), 0);
    const uint64_t seq = m.post(4096, 4096);
    m.b->request.store(seq | (1ull << 62));
    EXPECT_TRUE(m.writer.service_bounce());
    EXPECT_TRUE(m.idle());
    EXPECT_EQ(m.b->done.load(), seq);
    EXPECT_EQ(m.b->status.load(), tcaErrorTimeout);
    EXPECT_EQ(m.dst[0], 0);
}

// Every source node has a mailbox of its own: two writers stream into one
// target at once, and one pass of the server copies out what each has put in
// so far (neither waits for the other's whole row); a mailbox that goes idle
// leaves the posted mask, one still busy stays in it.
TEST(BounceMailbox, TheServerDrainsEverySendersMailboxInTurn) {
    Mailbox m("two", 3, 1);
    ASSERT_TRUE(m.created);
    BounceArea *other = m.n.nodes.own().bounce(2);
    std::memset(other->data, 0xcd, kBounceSize);
    ASSERT_NE(other, m.b);
    const uint64_t half = m.dst.size() / 2;
    m.post_in(m.b, reinterpret_cast<uint64_t>(m.dst.data()), 1, 3 * 4096, 4096);
    m.post_in(other, reinterpret_cast<uint64_t>(m.dst.data()) + half, 2, 2 * 4096, 2 * 4096);
    std::atomic<uint64_t> &posted = m.n.nodes.own().header()->bounce_posted;
    EXPECT_EQ(posted.load(), 0b110u);
    EXPECT_TRUE(m.writer.bounce_pending());
    EXPECT_TRUE(m.writer.service_bounce());
    EXPECT_EQ(m.b->drained.load(), 4096u);  // node 1's first piece out...
    EXPECT_EQ(m.dst[4095], 0xab + 1);
    EXPECT_EQ(m.dst[4096], 0);
    EXPECT_EQ(other->status.load(), tcaSuccess);  // ...and node 2's whole row in the same pass
    EXPECT_EQ(other->request.load(), other->done.load());
    EXPECT_EQ(m.dst[half], 0xcd);
    EXPECT_EQ(m.dst[half + 2 * 4096 - 1], 0xcd);
    EXPECT_EQ(posted.load(), 0b010u);  // node 2's mailbox is idle again
    m.b->filled.store(3 * 4096);
    EXPECT_TRUE(m.writer.service_bounce());
    EXPECT_TRUE(m.idle());
    EXPECT_EQ(posted.load(), 0u);
    EXPECT_FALSE(m.writer.bounce_pending());
    EXPECT_EQ(m.dst[3 * 4096 - 1], 0xab + 1);
    EXPECT_EQ(m.dst[3 * 4096], 0);
}

}  // namespace
}  // namespace tca::loopback
