// DescRegistry (desc_registry.hpp): the live tcaDesc objects.  A freed,
// forged or foreign pointer is refused without being read; a free waits for
// the calls inside and refuses the ones after it; freed addresses come back
// only after the quarantine.  Also built under ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "desc_registry.hpp"

using tca::DescRegistry;

namespace {
tcaResult touch(DescRegistry &r, tcaDesc *d) {
    return r.with(d, [](tcaDesc *live) {
        live->chain.emplace_back();
        return tcaSuccess;
    });
}
}  // namespace

TEST(DescRegistry, RefusesFreedForgedAndForeignPointers) {
    DescRegistry r;
    tcaDesc *d = r.create();
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(touch(r, d), tcaSuccess);
    tcaDesc *e = r.create();
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(touch(r, nullptr), tcaErrorInvalidValue);
    tcaDesc on_stack;
    EXPECT_EQ(touch(r, &on_stack), tcaErrorInvalidValue);  // foreign: never read
    auto *inside = reinterpret_cast<tcaDesc *>(reinterpret_cast<char *>(d) + 8);
    EXPECT_EQ(touch(r, inside), tcaErrorInvalidValue);  // not a descriptor's start
    EXPECT_FALSE(r.destroy(inside));
    EXPECT_FALSE(r.destroy(&on_stack));
    EXPECT_TRUE(r.destroy(d));
    EXPECT_EQ(touch(r, d), tcaErrorInvalidValue);  // freed
    EXPECT_FALSE(r.destroy(d));                    // a second free is an error
    EXPECT_EQ(touch(r, e), tcaSuccess);            // its neighbour is untouched
    EXPECT_TRUE(r.destroy(e));
}

TEST(DescRegistry, AFreedAddressComesBackOnlyAfterTheQuarantine) {
    DescRegistry r;
    tcaDesc *first = r.create();
    ASSERT_NE(first, nullptr);
    ASSERT_TRUE(r.destroy(first));
    std::set<tcaDesc *> seen;
    bool came_back = false;
    size_t made = 0;
    // Every create is freed at once: the quarantine fills, then the oldest
    // freed address, `first`, is the next one handed out.
    for (; made <= DescRegistry::kQuarantine + 1 && !came_back; ++made) {
        tcaDesc *d = r.create();
        ASSERT_NE(d, nullptr);
        came_back = d == first;
        ASSERT_TRUE(r.destroy(d));
    }
    EXPECT_TRUE(came_back);
    EXPECT_GE(made, DescRegistry::kQuarantine);  // not before that many other frees
}

TEST(DescRegistry, ManyChunksStayAddressable) {
    DescRegistry r;
    std::vector<tcaDesc *> all;
    for (size_t i = 0; i < 3 * DescRegistry::kChunkSlots + 5; ++i) {
        all.push_back(r.create());
        ASSERT_NE(all.back(), nullptr);
    }
    for (tcaDesc *d : all)
        EXPECT_EQ(touch(r, d), tcaSuccess);
    for (tcaDesc *d : all) {
        int n = 0;
        EXPECT_EQ(r.with(d,
                         [&](tcaDesc *live) {
                             return n = static_cast<int>(live->chain.size()), tcaSuccess;
                         }),
                  tcaSuccess);
        EXPECT_EQ(n, 1);  // each its own chain
        EXPECT_TRUE(r.destroy(d));
    }
}

// Users in other threads while one frees: every call either ran on the live
// descriptor (whole) or was refused; the free returns once those inside have
// left, and the chain it empties is never touched after.
TEST(DescRegistry, AFreeWaitsForCallsInsideAndRefusesLaterOnes) {
    DescRegistry r;
    for (int round = 0; round < 200; ++round) {
        tcaDesc *d = r.create();
        ASSERT_NE(d, nullptr);
        ASSERT_EQ(
            r.with(d,
                   [](tcaDesc *live) { return live->chain.emplace_back().width = 42, tcaSuccess; }),
            tcaSuccess);
        std::atomic<bool> freed{false};
        std::atomic<int> inside{0}, ran_after_free{0};
        std::vector<std::thread> users;
        for (int t = 0; t < 2; ++t)
            users.emplace_back([&] {
                // Calls until the free refuses them.
                // Readers only: concurrent calls that change one descriptor
                // are the caller's race, as with any object.
                while (r.with(d, [&](tcaDesc *live) {
                    const tca::Descriptor *first = live->chain.data();
                    inside.fetch_add(1, std::memory_order_acq_rel);
                    // Stay inside a while: a free that did not wait for us
                    // returns meanwhile (and empties the chain under us).
                    for (int k = 0; k < 2000; ++k)
                        if (freed.load(std::memory_order_acquire)) {
                            ran_after_free.fetch_add(1);
                            break;
                        }
                    if (live->chain.size() != 1 || live->chain.data() != first ||
                        first->width != 42)
                        ran_after_free.fetch_add(1);
                    return tcaSuccess;
                }) == tcaSuccess) {
                }
            });
        while (inside.load(std::memory_order_acquire) == 0) {  // the free meets a call inside
        }
        ASSERT_TRUE(r.destroy(d));
        freed.store(true, std::memory_order_release);
        for (auto &u : users)
            u.join();
        EXPECT_EQ(ran_after_free.load(), 0) << "round " << round;
        EXPECT_EQ(touch(r, d), tcaErrorInvalidValue);
    }
}
