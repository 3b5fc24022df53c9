// bounce_mailbox_test.cpp - white-box checks of the target side of the bounce
// path: the mailbox lies in shared memory that the writer (another process)
// can change at any time, so the server copies its fields once and uses only
// that copy, and refuses a length larger than the mailbox.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "loopback/node_set.hpp"
#include "loopback/remote_writer.hpp"
#include "loopback/segment_layout.hpp"

namespace tca::loopback {
namespace {

struct OneNode {
    NodeSet nodes;
    explicit OneNode(const char *what)
        : nodes(LaunchInfo{std::string("t.mbox.") + what + "." + std::to_string(getpid()), 0, 1, "test"},
                WaitPolicy{}) {}
    ~OneNode() { nodes.finalize(false); }
};

// A mailbox whose length passes the registration check (the destination
// holds it) but is larger than the mailbox's data area: the old server
// copied that many bytes, reading past the mailbox into the rest of the
// segment and handing them to the destination.
TEST(BounceMailbox, LengthLargerThanTheMailboxIsRefused) {
    OneNode n("oversize");
    ASSERT_EQ(n.nodes.create_own(64 * 1024), tcaSuccess);
    RemoteWriter writer(n.nodes, false);
    std::vector<unsigned char> dst(2 * kBounceSize, 0);
    RegistrationEntry &e = n.nodes.own().registrations()[3];
    e.base = reinterpret_cast<uint64_t>(dst.data());
    e.size = dst.size();
    e.region = tcaMemoryCPU;
    e.key.store(0x1234);
    BounceArea *b = n.nodes.own().bounce();
    std::memset(b->data, 0xab, kBounceSize);
    b->dst_addr = e.base;
    b->dst_key = 0x1234;
    b->dst_reg = 3;
    b->len = kBounceSize + 4096;
    b->request.store(b->done.load() + 1);
    EXPECT_TRUE(writer.service_bounce());
    EXPECT_EQ(b->status.load(), tcaErrorInvalidValue);
    EXPECT_EQ(dst[0], 0);
    EXPECT_EQ(dst[kBounceSize], 0);
    EXPECT_EQ(b->request.load(), b->done.load());  // served: the mailbox is idle again
    // The same mailbox with a length that fits is served.
    b->len = kBounceSize;
    b->request.store(b->done.load() + 1);
    EXPECT_TRUE(writer.service_bounce());
    EXPECT_EQ(b->status.load(), tcaSuccess);
    EXPECT_EQ(dst[0], 0xab);
    EXPECT_EQ(dst[kBounceSize - 1], 0xab);
    EXPECT_EQ(dst[kBounceSize], 0);
    EXPECT_EQ(b->request.load(), b->done.load());
}

}  // namespace
}  // namespace tca::loopback
