// DmaPuts (tca-btl/dma_puts.hpp) on a one-node loopback device: puts complete
// with their data and their owner bytes, wait in order behind a busy channel,
// step aside when no channel is free, and a warm queue allocates nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <unistd.h>
#include <vector>

#include "dma_puts.hpp"
#include "tca.h"

using tca::btl::DmaPuts;
using tca::btl::PutFifo;

#ifndef __SANITIZE_THREAD__
// Allocations made by this thread while `counting` (the sanitizer builds keep their own allocator).
namespace {
thread_local bool counting = false;
thread_local long allocations = 0;
}  // namespace
// (malloc and free on purpose: GCC cannot see that they pair here.)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void *operator new(size_t n) {
    if (counting)
        ++allocations;
    if (void *p = std::malloc(n ? n : 1))
        return p;
    throw std::bad_alloc();
}
void operator delete(void *p) noexcept {
    std::free(p);
}
void operator delete(void *p, size_t) noexcept {
    std::free(p);
}
#endif

namespace {

class OneNode : public ::testing::Test {
protected:
    void SetUp() override {
        key_ = "dmaputs-" + std::to_string(getpid());
        const tcaInitParams params{key_.c_str(), 0, 1};
        ASSERT_EQ(tcaInitWithParams(&params), tcaSuccess);
        ASSERT_EQ(tcaMalloc(&src_, kBytes, tcaMemoryCPU), tcaSuccess);
        ASSERT_EQ(tcaMalloc(&dst_, kBytes, tcaMemoryCPU), tcaSuccess);
        ASSERT_EQ(tcaCreateHandle(&hsrc_, src_, kBytes, tcaMemoryCPU), tcaSuccess);
        ASSERT_EQ(tcaCreateHandle(&hdst_, dst_, kBytes, tcaMemoryCPU), tcaSuccess);
    }
    void TearDown() override {
        tcaDestroyHandle(&hsrc_);
        tcaDestroyHandle(&hdst_);
        tcaFree(src_, tcaMemoryCPU);
        tcaFree(dst_, tcaMemoryCPU);
        EXPECT_EQ(tcaFinalize(), tcaSuccess);
    }
    tca_btl_dma_put_t put(uint64_t off, uint64_t size, int tag) const {
        tca_btl_dma_put_t p{};
        p.dst = hdst_;
        p.src = hsrc_;
        p.dst_off = p.src_off = off;
        p.size = size;
        std::memcpy(p.owner, &tag, sizeof tag);
        return p;
    }
    struct Seen {
        std::vector<int> tags;
        int failures = 0;
    };
    static void record(void *ctx, const tca_btl_dma_put_t *p, tcaResult r) {
        auto *s = static_cast<Seen *>(ctx);
        int tag = 0;
        std::memcpy(&tag, p->owner, sizeof tag);
        s->tags.push_back(tag);
        if (r != tcaSuccess)
            ++s->failures;
    }
    static constexpr size_t kBytes = 8 << 20;
    std::string key_;
    void *src_ = nullptr, *dst_ = nullptr;
    tcaHandle hsrc_{}, hdst_{};
};

TEST(PutFifo, KeepsOrderWhileItGrowsAndWraps) {
    PutFifo f;
    tca_btl_dma_put_t p{};
    uint64_t next_in = 0, next_out = 0;
    for (int round = 0; round < 50; ++round) {
        for (int i = 0; i < round; ++i) {
            p.size = next_in++;
            f.push(p);
        }
        for (int i = 0; i < round / 2 + 1 && !f.empty(); ++i)
            ASSERT_EQ(f.pop().size, next_out++);
    }
    while (!f.empty())
        ASSERT_EQ(f.pop().size, next_out++);
    EXPECT_EQ(next_in, next_out);
}

TEST_F(OneNode, PutsLandInOrderBehindOneChannelWithTheirOwners) {
    // 1 MiB each: over the inline limit, so they queue behind the engine.
    constexpr int kPuts = 8;
    constexpr uint64_t kSize = 1 << 20;
    for (size_t i = 0; i < kBytes; ++i)
        static_cast<unsigned char *>(src_)[i] = static_cast<unsigned char>(i * 7 + 1);
    std::memset(dst_, 0, kBytes);
    Seen seen;
    {
        DmaPuts q(1, nullptr, nullptr);
        tcaResult err = tcaSuccess;
        int queued = 0;
        for (int i = 0; i < kPuts; ++i) {
            const int how = q.submit(put(i * kSize, kSize, i), &err);
            ASSERT_TRUE(how == TCA_BTL_PUT_STARTED || how == TCA_BTL_PUT_QUEUED)
                << how << " " << err;
            queued += how == TCA_BTL_PUT_QUEUED;
        }
        EXPECT_GT(queued, 0) << "one channel: the later puts wait";
        EXPECT_EQ(q.channels_held(), 1);
        EXPECT_EQ(q.busy(), kPuts);
        while (q.busy() > 0)
            q.progress(record, &seen);
    }
    ASSERT_EQ(seen.tags.size(), size_t{kPuts});
    for (int i = 0; i < kPuts; ++i)
        EXPECT_EQ(seen.tags[static_cast<size_t>(i)], i) << "in submission order";
    EXPECT_EQ(seen.failures, 0);
    EXPECT_EQ(std::memcmp(src_, dst_, kPuts * kSize), 0) << "every byte landed before its callback";
}

TEST_F(OneNode, UsesUpToItsChannelsAndReleasesThem) {
    Seen seen;
    {
        DmaPuts q(3, nullptr, nullptr);
        tcaResult err = tcaSuccess;
        for (int i = 0; i < 6; ++i)
            q.submit(put(static_cast<uint64_t>(i) << 20, 1 << 20, i), &err);
        EXPECT_LE(q.channels_held(), 3);
        EXPECT_GE(q.channels_held(), 1);
        while (q.busy() > 0)
            q.progress(record, &seen);
    }
    EXPECT_EQ(seen.tags.size(), 6u);
    // All four are free again.
    int ids[TCA_NUM_DMA_CHANNELS];
    for (int &id : ids)
        EXPECT_EQ(tcaChannelAcquire(&id), tcaSuccess);
    for (int id : ids)
        EXPECT_EQ(tcaChannelRelease(id), tcaSuccess);
}

TEST_F(OneNode, NoChannelFreeIsNotAnErrorAndIsLoggedOnce) {
    int ids[TCA_NUM_DMA_CHANNELS];
    for (int &id : ids)
        ASSERT_EQ(tcaChannelAcquire(&id), tcaSuccess);  // coll tca or a TCA program holds them
    int logged = 0;
    {
        DmaPuts q(
            2, [](void *c, const char *) { ++*static_cast<int *>(c); }, &logged);
        tcaResult err = tcaSuccess;
        EXPECT_EQ(q.submit(put(0, 4096, 1), &err), TCA_BTL_PUT_NO_CHANNEL);
        EXPECT_EQ(q.submit(put(0, 4096, 2), &err), TCA_BTL_PUT_NO_CHANNEL);
        EXPECT_EQ(q.busy(), 0);
        EXPECT_EQ(logged, 1);
        ASSERT_EQ(tcaChannelRelease(ids[0]), tcaSuccess);
        EXPECT_EQ(q.submit(put(0, 4096, 3), &err), TCA_BTL_PUT_STARTED) << "a channel came free";
        Seen seen;
        while (q.busy() > 0)
            q.progress(record, &seen);
        EXPECT_EQ(seen.tags, std::vector<int>{3});
    }
    for (int i = 1; i < TCA_NUM_DMA_CHANNELS; ++i)
        EXPECT_EQ(tcaChannelRelease(ids[i]), tcaSuccess);
}

TEST_F(OneNode, AFailedPutIsHandedBackWithItsError) {
    DmaPuts q(1, nullptr, nullptr);
    tcaResult err = tcaSuccess;
    tca_btl_dma_put_t bad = put(kBytes - 100, 4096, 9);  // runs past the destination registration
    EXPECT_EQ(q.submit(bad, &err), TCA_BTL_PUT_FAILED);
    EXPECT_NE(err, tcaSuccess);
    EXPECT_EQ(q.busy(), 0);
    Seen seen;
    EXPECT_EQ(q.submit(put(0, 4096, 1), &err), TCA_BTL_PUT_STARTED)
        << "the channel is usable after a refusal";
    while (q.busy() > 0)
        q.progress(record, &seen);
    EXPECT_EQ(seen.tags, std::vector<int>{1});
    EXPECT_EQ(seen.failures, 0);
}

#ifndef __SANITIZE_THREAD__
TEST_F(OneNode, AWarmQueueAllocatesNothingPerPut) {
    DmaPuts q(1, nullptr, nullptr);
    Seen seen;
    seen.tags.reserve(1000);
    tcaResult err = tcaSuccess;
    auto one = [&](int i) {
        ASSERT_NE(q.submit(put(0, 16384, i), &err), TCA_BTL_PUT_FAILED);
        while (q.busy() > 0)
            q.progress(record, &seen);
    };
    for (int i = 0; i < 10; ++i)
        one(i);  // acquires the channel, makes its descriptor
    counting = true;
    for (int i = 0; i < 500; ++i)
        one(i);
    counting = false;
    EXPECT_EQ(allocations, 0) << "allocations on the putting thread over 500 warm puts";
    EXPECT_EQ(seen.failures, 0);
}
#endif

}  // namespace
