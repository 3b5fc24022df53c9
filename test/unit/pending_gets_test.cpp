// PendingGets and the owner's request check (tca-btl/pending_gets.hpp): the
// answer to a get names it by a checked cookie; ranges outside a
// registration, forged or repeated cookies and answers from the wrong peer
// are refused.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "pending_gets.hpp"

using tca::btl::PendingGets;

namespace {

tcaHandle handle(int node, uint64_t addr, uint64_t size) {
    tcaHandle h{};
    h.node = static_cast<uint16_t>(node);
    h.addr = addr;
    h.size = size;
    return h;
}

struct Owner {
    long id;
    char pad[40];
};

TEST(PendingGets, AnAnswerCompletesItsGetOnce) {
    PendingGets g(8);
    const tcaHandle src = handle(1, 0x10000, 4096), dst = handle(0, 0x20000, 4096);
    const Owner mine{42, {}};
    tca_btl_get_request_t req;
    ASSERT_EQ(g.begin(1, &mine, sizeof mine, src, 0x10100, dst, 0x20200, 512, &req),
              TCA_BTL_GET_OK);
    EXPECT_EQ(req.src_addr, 0x10100u);
    EXPECT_EQ(req.dst_addr, 0x20200u);
    EXPECT_EQ(req.size, 512u);
    EXPECT_EQ(g.pending(), 1);
    unsigned char out[TCA_BTL_OWNER_BYTES];
    const tca_btl_get_done_t done{req.cookie, 0, 0};
    ASSERT_EQ(g.finish(done, 1, out), TCA_BTL_GET_OK);
    Owner back;
    std::memcpy(&back, out, sizeof back);
    EXPECT_EQ(back.id, 42);
    EXPECT_EQ(g.pending(), 0);
    EXPECT_EQ(g.finish(done, 1, out), TCA_BTL_GET_UNKNOWN) << "a repeated answer names nothing";
}

TEST(PendingGets, RangesOutsideTheRegistrationsAreRefused) {
    PendingGets g(8);
    const tcaHandle src = handle(1, 0x10000, 4096), dst = handle(0, 0x20000, 4096);
    const Owner o{1, {}};
    tca_btl_get_request_t req;
    EXPECT_EQ(g.begin(1, &o, sizeof o, src, 0x10000 + 4000, dst, 0x20000, 200, &req),
              TCA_BTL_GET_BAD);
    EXPECT_EQ(g.begin(1, &o, sizeof o, src, 0x10000, dst, 0x20000 + 4000, 200, &req),
              TCA_BTL_GET_BAD);
    EXPECT_EQ(g.begin(1, &o, sizeof o, src, 0xffff, dst, 0x20000, 1, &req), TCA_BTL_GET_BAD);
    EXPECT_EQ(g.begin(1, &o, sizeof o, src, 0x10000, dst, 0x20000, UINT64_MAX, &req),
              TCA_BTL_GET_BAD);
    EXPECT_EQ(g.begin(2, &o, sizeof o, src, 0x10000, dst, 0x20000, 8, &req), TCA_BTL_GET_BAD)
        << "the source must be the asked peer's";
    EXPECT_EQ(g.pending(), 0);
}

TEST(PendingGets, FullUntilOneIsAnsweredOrCancelled) {
    PendingGets g(2);
    const tcaHandle src = handle(1, 0, 1 << 20), dst = handle(0, 0, 1 << 20);
    const Owner o{1, {}};
    tca_btl_get_request_t a, b, c;
    ASSERT_EQ(g.begin(1, &o, sizeof o, src, 0, dst, 0, 8, &a), TCA_BTL_GET_OK);
    ASSERT_EQ(g.begin(1, &o, sizeof o, src, 0, dst, 0, 8, &b), TCA_BTL_GET_OK);
    EXPECT_EQ(g.begin(1, &o, sizeof o, src, 0, dst, 0, 8, &c), TCA_BTL_GET_FULL);
    g.cancel(a.cookie);
    EXPECT_EQ(g.pending(), 1);
    unsigned char out[TCA_BTL_OWNER_BYTES];
    EXPECT_EQ(g.finish(tca_btl_get_done_t{a.cookie, 0, 0}, 1, out), TCA_BTL_GET_UNKNOWN)
        << "cancelled";
    EXPECT_EQ(g.begin(1, &o, sizeof o, src, 0, dst, 0, 8, &c), TCA_BTL_GET_OK);
}

TEST(PendingGets, ForgedCookiesAndOtherPeersAnswersFailTheGet) {
    PendingGets g(4);
    const tcaHandle src = handle(3, 0, 4096), dst = handle(0, 0, 4096);
    const Owner o{7, {}};
    tca_btl_get_request_t req;
    ASSERT_EQ(g.begin(3, &o, sizeof o, src, 0, dst, 0, 64, &req), TCA_BTL_GET_OK);
    unsigned char out[TCA_BTL_OWNER_BYTES];
    for (uint64_t forged :
         {req.cookie + 1, req.cookie ^ (uint64_t{1} << 32), ~uint64_t{0}, uint64_t{0x7fffffff}})
        EXPECT_EQ(g.finish(tca_btl_get_done_t{forged, 0, 0}, 3, out), TCA_BTL_GET_UNKNOWN);
    EXPECT_EQ(g.finish(tca_btl_get_done_t{req.cookie, 0, 0}, 2, out), TCA_BTL_GET_WRONG_PEER)
        << "node 2 answered a get asked of node 3";
    EXPECT_EQ(g.pending(), 0) << "the get is over (failed), not left hanging";
}

TEST(PendingGets, ThreadsBeginAndFinishConcurrently) {
    PendingGets g(64);
    const tcaHandle src = handle(1, 0, 1 << 20), dst = handle(0, 0, 1 << 20);
    std::atomic<long> mismatched{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (long i = 0; i < 20000; ++i) {
                const Owner o{t * 1000000L + i, {}};
                tca_btl_get_request_t req;
                if (g.begin(1, &o, sizeof o, src, 0, dst, 0, 8, &req) != TCA_BTL_GET_OK)
                    continue;
                unsigned char out[TCA_BTL_OWNER_BYTES];
                Owner back{};
                if (g.finish(tca_btl_get_done_t{req.cookie, 0, 0}, 1, out) != TCA_BTL_GET_OK) {
                    ++mismatched;
                    continue;
                }
                std::memcpy(&back, out, sizeof back);
                if (back.id != o.id)
                    ++mismatched;
            }
        });
    for (auto &th : threads)
        th.join();
    EXPECT_EQ(mismatched.load(), 0);
    EXPECT_EQ(g.pending(), 0);
}

TEST(GetRequest, TheOwnerServesOnlyItsOwnRegistrationsIntoTheAsker) {
    tca_btl_get_request_t req{};
    req.src = handle(2, 0x1000, 4096);
    req.dst = handle(5, 0x8000, 4096);
    req.src_addr = 0x1000;
    req.dst_addr = 0x8000;
    req.size = 4096;
    EXPECT_TRUE(tca_btl_get_request_servable(&req, 2, 5));
    EXPECT_FALSE(tca_btl_get_request_servable(&req, 3, 5)) << "not our registration";
    EXPECT_FALSE(tca_btl_get_request_servable(&req, 2, 4)) << "into a third node's memory";
    req.size = 4097;
    EXPECT_FALSE(tca_btl_get_request_servable(&req, 2, 5)) << "past the end";
    req.size = 16;
    req.src_addr = 0xff0;
    EXPECT_FALSE(tca_btl_get_request_servable(&req, 2, 5)) << "before the start";
    req.src_addr = 0x1000;
    req.dst_addr = 0x8000 + 4090;
    EXPECT_FALSE(tca_btl_get_request_servable(&req, 2, 5)) << "past the destination's end";
}

}  // namespace

namespace {

// A small get names the owner's registration by table slot and key; the
// owner serves it only inside the live registration it found by them.
TEST(PendingGets, ASmallGetIsServedInsideTheLiveRegistrationItNames) {
    tca::btl::PendingGets g(4);
    tcaHandle src = handle(2, 0x10000, 4096), dst = handle(5, 0x90000, 4096);
    src.region = dst.region = tcaMemoryCPU;
    src.key = 0x1234567;
    src.reg_index = 17;
    const long owner = 1;
    tca_btl_get_small_t req;
    ASSERT_EQ(g.begin_small(2, &owner, sizeof owner, src, 0x10100, dst, 0x90000, 64, &req),
              TCA_BTL_GET_OK);
    EXPECT_EQ(req.reg_key, src.key);
    EXPECT_EQ(req.reg_index, 17u);
    EXPECT_TRUE(tca_btl_get_small_servable(&req, &src, 2));
    EXPECT_FALSE(tca_btl_get_small_servable(&req, nullptr, 2)) << "no live registration";
    EXPECT_FALSE(tca_btl_get_small_servable(&req, &src, 3)) << "not ours";
    tcaHandle renewed = src;
    renewed.key += 2;
    EXPECT_FALSE(tca_btl_get_small_servable(&req, &renewed, 2)) << "a newer registration";
    tcaHandle shrunk = src;
    shrunk.size = 0x100;
    EXPECT_FALSE(tca_btl_get_small_servable(&req, &shrunk, 2)) << "outside the live one";
}

}  // namespace
