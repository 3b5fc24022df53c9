// Remote atomics (tca-btl/remote_atomics.hpp): every operation at both
// widths gives the old value and leaves the new one; requests off our host
// memory, outside the registration, misaligned or unknown are refused with
// the memory untouched; concurrent requests and the target's own CPU atomics
// on one word lose nothing; the origin's records answer once, to the peer
// asked.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "remote_atomics.hpp"

using tca::btl::PendingAtomics;
using tca::btl::run_atomic;

namespace {

constexpr int kSelf = 3;

tcaHandle handle_of(const void *p, size_t size, int node = kSelf) {
    tcaHandle h{};
    h.node = static_cast<uint16_t>(node);
    h.region = tcaMemoryCPU;
    h.addr = reinterpret_cast<uint64_t>(p);
    h.size = size;
    return h;
}

tca_btl_atomic_request_t request(const tcaHandle &h, const void *at, uint32_t op, uint32_t flags,
                                 uint64_t operand, uint64_t compare = 0) {
    tca_btl_atomic_request_t r{};
    r.cookie = 7;
    r.addr = reinterpret_cast<uint64_t>(at);
    r.operand = operand;
    r.compare = compare;
    r.reg_key = h.key;
    r.reg_index = h.reg_index;
    r.reg_node = h.node;
    r.reg_region = h.region;
    r.flags = static_cast<uint8_t>(flags);
    r.op = op;
    return r;
}

// It names the registration by its table slot and key; the target looks the
// live one up (tcaHandleOfKey) and runs it only there.
TEST(RemoteAtomics, ARequestIsOneCacheLineWithTheRingsHeaderWord) {
    EXPECT_LE(sizeof(tca_btl_atomic_request_t) + 8, 64u);
}

struct Case {
    uint32_t op;
    int64_t before, operand, after;
};

TEST(RemoteAtomics, EveryOperationGivesTheOldValueAndLeavesTheNew64) {
    const Case cases[] = {
        {TCA_BTL_ATOMIC_ADD, 40, 2, 42},
        {TCA_BTL_ATOMIC_ADD, std::numeric_limits<int64_t>::max(), 1,
         std::numeric_limits<int64_t>::min()},  // wraps, as the hardware would
        {TCA_BTL_ATOMIC_AND, 0b1100, 0b1010, 0b1000},
        {TCA_BTL_ATOMIC_OR, 0b1100, 0b1010, 0b1110},
        {TCA_BTL_ATOMIC_XOR, 0b1100, 0b1010, 0b0110},
        {TCA_BTL_ATOMIC_SWAP, 5, 9, 9},
        {TCA_BTL_ATOMIC_MIN, 5, -9, -9},  // signed
        {TCA_BTL_ATOMIC_MIN, 5, 9, 5},
        {TCA_BTL_ATOMIC_MAX, -5, 3, 3},
        {TCA_BTL_ATOMIC_MAX, 5, -3, 5},
    };
    alignas(8) int64_t word[2] = {0, 0};
    const tcaHandle h = handle_of(word, sizeof word);
    for (const Case &c : cases) {
        word[1] = c.before;
        uint64_t old = 0;
        ASSERT_TRUE(run_atomic(request(h, &word[1], c.op, 0, static_cast<uint64_t>(c.operand)), h,
                               kSelf, &old))
            << "op " << c.op;
        EXPECT_EQ(static_cast<int64_t>(old), c.before) << "op " << c.op;
        EXPECT_EQ(word[1], c.after) << "op " << c.op;
        EXPECT_EQ(word[0], 0);  // the neighbour untouched
    }
}

TEST(RemoteAtomics, ThirtyTwoBitOperationsTouchFourBytes) {
    const Case cases[] = {
        {TCA_BTL_ATOMIC_ADD, 40, 2, 42},
        {TCA_BTL_ATOMIC_ADD, -1, 1, 0},
        {TCA_BTL_ATOMIC_MIN, 5, -9, -9},
        {TCA_BTL_ATOMIC_MAX, -5, -3, -3},
        {TCA_BTL_ATOMIC_XOR, 0x0f0f, 0xffff, 0xf0f0},
        {TCA_BTL_ATOMIC_SWAP, 1, 2, 2},
    };
    alignas(8) int32_t word[3] = {0x11, 0, 0x22};
    const tcaHandle h = handle_of(word, sizeof word);
    for (const Case &c : cases) {
        word[1] = static_cast<int32_t>(c.before);
        uint64_t old = 0;
        ASSERT_TRUE(run_atomic(
            request(h, &word[1], c.op, TCA_BTL_ATOMIC_32BIT, static_cast<uint32_t>(c.operand)), h,
            kSelf, &old));
        EXPECT_EQ(static_cast<int32_t>(old), c.before) << "op " << c.op;
        EXPECT_EQ(old >> 32, 0u);  // the old value in the low half only
        EXPECT_EQ(word[1], c.after) << "op " << c.op;
        EXPECT_EQ(word[0], 0x11);
        EXPECT_EQ(word[2], 0x22);
    }
}

TEST(RemoteAtomics, CompareAndSwapStoresOnlyOnAMatch) {
    alignas(8) int64_t word = 7;
    const tcaHandle h = handle_of(&word, sizeof word);
    uint64_t old = 0;
    ASSERT_TRUE(run_atomic(request(h, &word, TCA_BTL_ATOMIC_CSWAP, 0, 100, 6), h, kSelf, &old));
    EXPECT_EQ(old, 7u);
    EXPECT_EQ(word, 7);
    ASSERT_TRUE(run_atomic(request(h, &word, TCA_BTL_ATOMIC_CSWAP, 0, 100, 7), h, kSelf, &old));
    EXPECT_EQ(old, 7u);
    EXPECT_EQ(word, 100);
    alignas(4) int32_t w32 = -1;
    const tcaHandle h32 = handle_of(&w32, sizeof w32);
    ASSERT_TRUE(
        run_atomic(request(h32, &w32, TCA_BTL_ATOMIC_CSWAP, TCA_BTL_ATOMIC_32BIT, 5, 0xffffffffu),
                   h32, kSelf, &old));
    EXPECT_EQ(old, 0xffffffffu);
    EXPECT_EQ(w32, 5);
}

TEST(RemoteAtomics, RequestsOffOurRegistrationsAreRefusedUntouched) {
    alignas(8) int64_t word[4] = {1, 2, 3, 4};
    const tcaHandle h = handle_of(&word[1], 16);  // word[1], word[2]
    const auto refused = [&](const tcaHandle &reg, tca_btl_atomic_request_t r, const char *why) {
        uint64_t old = 12345;
        EXPECT_FALSE(run_atomic(r, reg, kSelf, &old)) << why;
        EXPECT_EQ(old, 12345u) << why;
    };
    refused(h, request(h, &word[0], TCA_BTL_ATOMIC_ADD, 0, 1), "before the registration");
    refused(h, request(h, &word[3], TCA_BTL_ATOMIC_ADD, 0, 1), "after it");
    refused(h, request(h, reinterpret_cast<char *>(&word[2]) + 4, TCA_BTL_ATOMIC_ADD, 0, 1),
            "straddling its end (and misaligned)");
    refused(h,
            request(h, reinterpret_cast<char *>(&word[1]) + 2, TCA_BTL_ATOMIC_ADD,
                    TCA_BTL_ATOMIC_32BIT, 1),
            "misaligned 32-bit");
    refused(h, request(h, &word[1], 0, 0, 1), "operation 0");
    refused(h, request(h, &word[1], TCA_BTL_ATOMIC_OPS_END, 0, 1), "unknown operation");
    refused(h, request(h, &word[1], TCA_BTL_ATOMIC_ADD, 0x10, 1), "unknown flag");
    refused(handle_of(&word[1], 16, kSelf + 1),
            request(handle_of(&word[1], 16, kSelf + 1), &word[1], TCA_BTL_ATOMIC_ADD, 0, 1),
            "another node's registration");
    tcaHandle gpu = h;
    gpu.region = tcaMemoryGPU;
    refused(gpu, request(gpu, &word[1], TCA_BTL_ATOMIC_ADD, 0, 1), "GPU memory");
    tcaHandle internal = h;
    internal.region = tcaMemoryInternal;
    refused(internal, request(internal, &word[1], TCA_BTL_ATOMIC_ADD, 0, 1),
            "internal memory (an offset)");
    // The live registration the target found by slot and key must be the one
    // the request names (a late request for memory given back finds none).
    tcaHandle renewed = h;
    renewed.key = h.key + 2;
    refused(renewed, request(h, &word[1], TCA_BTL_ATOMIC_ADD, 0, 1), "another key");
    tcaHandle moved = h;
    moved.reg_index = h.reg_index + 1;
    refused(moved, request(h, &word[1], TCA_BTL_ATOMIC_ADD, 0, 1), "another table slot");
    EXPECT_EQ(word[0], 1);
    EXPECT_EQ(word[1], 2);
    EXPECT_EQ(word[2], 3);
    EXPECT_EQ(word[3], 4);
}

// Requests from several "progress threads" and the target's own CPU atomics
// on the same words: nothing lost, MIN/MAX see every candidate.
TEST(RemoteAtomics, ConcurrentRequestsAndTheTargetsOwnAtomicsLoseNothing) {
    constexpr int kThreads = 4, kEach = 20000;
    alignas(8) int64_t sum = 0, top = std::numeric_limits<int64_t>::min();
    alignas(8) int64_t words[2] = {0, 0};
    const tcaHandle h = handle_of(words, sizeof words);
    (void) h;
    const tcaHandle hs = handle_of(&sum, sizeof sum), ht = handle_of(&top, sizeof top);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            uint64_t old = 0;
            for (int i = 0; i < kEach; ++i) {
                ASSERT_TRUE(
                    run_atomic(request(hs, &sum, TCA_BTL_ATOMIC_ADD, 0, 3), hs, kSelf, &old));
                const int64_t candidate = static_cast<int64_t>(i) * kThreads + t - 5000;
                ASSERT_TRUE(run_atomic(
                    request(ht, &top, TCA_BTL_ATOMIC_MAX, 0, static_cast<uint64_t>(candidate)), ht,
                    kSelf, &old));
            }
        });
    std::atomic_ref<int64_t> own(sum);
    for (int i = 0; i < kEach; ++i)
        own.fetch_add(1, std::memory_order_relaxed);  // the target's CPU, at the same time
    for (auto &th : threads)
        th.join();
    EXPECT_EQ(sum, int64_t{kThreads} * kEach * 3 + kEach);
    EXPECT_EQ(top, int64_t{kEach - 1} * kThreads + (kThreads - 1) - 5000);
}

TEST(PendingAtomics, AnAnswerCompletesItsOperationOnceFromThePeerAsked) {
    PendingAtomics a(4);
    alignas(8) int64_t remote = 0;  // stands for the peer's memory: only its address is used
    const tcaHandle h = handle_of(&remote, sizeof remote, 1);
    const long mine = 42;
    tca_btl_atomic_request_t req;
    ASSERT_EQ(a.begin(1, &mine, sizeof mine, h, h.addr, TCA_BTL_ATOMIC_ADD, 0, 5, 0, &req),
              TCA_BTL_GET_OK);
    EXPECT_EQ(req.addr, h.addr);
    EXPECT_EQ(req.operand, 5u);
    EXPECT_EQ(req.reg_node, 1);
    EXPECT_EQ(a.pending(), 1);
    unsigned char owner[TCA_BTL_OWNER_BYTES];
    tca_btl_atomic_done_t done{req.cookie, 9, 0, 0};
    EXPECT_EQ(a.finish(done, 2, owner), TCA_BTL_GET_WRONG_PEER);  // answered by another node
    EXPECT_EQ(a.finish(done, 1, owner), TCA_BTL_GET_UNKNOWN);     // already answered
    ASSERT_EQ(a.begin(1, &mine, sizeof mine, h, h.addr, TCA_BTL_ATOMIC_ADD, 0, 5, 0, &req),
              TCA_BTL_GET_OK);
    done.cookie = req.cookie;
    ASSERT_EQ(a.finish(done, 1, owner), TCA_BTL_GET_OK);
    long back = 0;
    std::memcpy(&back, owner, sizeof back);
    EXPECT_EQ(back, 42);
    EXPECT_EQ(a.pending(), 0);
    done.cookie ^= uint64_t{1} << 40;  // forged
    EXPECT_EQ(a.finish(done, 1, owner), TCA_BTL_GET_UNKNOWN);
}

TEST(PendingAtomics, BadOperationsAreRefusedBeforeTheyGoOutAndAFullTableWaits) {
    PendingAtomics a(2);
    alignas(8) int64_t remote[2] = {0, 0};
    const tcaHandle h = handle_of(remote, sizeof remote, 1);
    const int mine = 1;
    tca_btl_atomic_request_t req;
    EXPECT_EQ(a.begin(2, &mine, sizeof mine, h, h.addr, TCA_BTL_ATOMIC_ADD, 0, 1, 0, &req),
              TCA_BTL_GET_BAD);  // the registration is not the peer's
    EXPECT_EQ(a.begin(1, &mine, sizeof mine, h, h.addr + 16, TCA_BTL_ATOMIC_ADD, 0, 1, 0, &req),
              TCA_BTL_GET_BAD);  // past its end
    EXPECT_EQ(a.begin(1, &mine, sizeof mine, h, h.addr + 4, TCA_BTL_ATOMIC_ADD, 0, 1, 0, &req),
              TCA_BTL_GET_BAD);  // misaligned
    EXPECT_EQ(
        a.begin(1, &mine, TCA_BTL_OWNER_BYTES + 1, h, h.addr, TCA_BTL_ATOMIC_ADD, 0, 1, 0, &req),
        TCA_BTL_GET_BAD);
    uint64_t cookies[2];
    for (uint64_t &c : cookies) {
        ASSERT_EQ(a.begin(1, &mine, sizeof mine, h, h.addr, TCA_BTL_ATOMIC_SWAP, 0, 1, 0, &req),
                  TCA_BTL_GET_OK);
        c = req.cookie;
    }
    EXPECT_EQ(a.begin(1, &mine, sizeof mine, h, h.addr, TCA_BTL_ATOMIC_SWAP, 0, 1, 0, &req),
              TCA_BTL_GET_FULL);
    a.cancel(cookies[0]);
    EXPECT_EQ(a.begin(1, &mine, sizeof mine, h, h.addr, TCA_BTL_ATOMIC_SWAP, 0, 1, 0, &req),
              TCA_BTL_GET_OK);
    EXPECT_EQ(a.pending(), 2);
}

}  // namespace
