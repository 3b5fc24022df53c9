// bcast_plan_test.cpp - the persistent-broadcast planner of coll tca: every
// rank reached exactly once from the root, shapes by size, ring-ordered chains
// (one hop per link), segments covering the message exactly.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "bcast_plan.hpp"

using namespace tca::coll;

namespace {
int ring_hops(int a, int b, int n) {
    const int d = ((b - a) % n + n) % n;
    return std::min(d, n - d);
}
std::vector<int> identity(int n) {
    std::vector<int> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), 0);
    return v;
}
// Every rank but the root has one parent, reaches the root, and appears once
// among its parent's children.
void expect_spanning_tree(const BcastPlan &plan, int root) {
    const int n = static_cast<int>(plan.roles.size());
    std::multiset<int> as_child;
    for (int r = 0; r < n; ++r)
        for (int c : plan.roles[static_cast<size_t>(r)].children) {
            as_child.insert(c);
            EXPECT_EQ(plan.roles[static_cast<size_t>(c)].parent, r);
        }
    for (int r = 0; r < n; ++r) {
        if (r == root) {
            EXPECT_EQ(plan.roles[static_cast<size_t>(r)].parent, -1);
            EXPECT_EQ(as_child.count(r), 0u);
            continue;
        }
        EXPECT_EQ(as_child.count(r), 1u) << "rank " << r;
        int x = r, steps = 0;
        while (x != root && x >= 0 && steps <= n)
            x = plan.roles[static_cast<size_t>(x)].parent, ++steps;
        EXPECT_EQ(x, root) << "rank " << r << " does not reach the root";
    }
}
}  // namespace

TEST(BcastPlan, EveryRootEverySizeSpans) {
    for (int n = 1; n <= 17; ++n)
        for (int root = 0; root < n; ++root)
            for (size_t bytes : {size_t{0}, size_t{8}, size_t{1} << 20}) {
                const auto nodes = identity(n);
                const BcastPlan plan = plan_bcast({root, bytes, 64 * 1024, 64 * 1024}, nodes, n);
                ASSERT_EQ(plan.roles.size(), static_cast<size_t>(n));
                expect_spanning_tree(plan, root);
            }
}

TEST(BcastPlan, SmallIsBinomialLargeIsChain) {
    const auto nodes = identity(8);
    const BcastPlan small = plan_bcast({0, 1024, 64 * 1024, 64 * 1024}, nodes, 8);
    EXPECT_EQ(small.shape, Shape::BinomialTree);
    EXPECT_EQ(small.depth(), 3);  // log2(8)
    EXPECT_EQ(small.segments, 1u);
    EXPECT_EQ(small.roles[0].children,
              (std::vector<int>{4, 2, 1}));  // biggest subtree (farthest) first
    const BcastPlan large = plan_bcast({0, 4 << 20, 256 * 1024, 64 * 1024}, nodes, 8);
    EXPECT_EQ(large.shape, Shape::Chain);
    EXPECT_EQ(large.depth(), 7);
    EXPECT_EQ(large.segments, 16u);
}

// Staged broadcasts of up to kFlatMaxRanks ranks are flat: the root writes
// every child (in ring order), no leaf waits for a forwarding parent; more
// ranks, or a message too large to stage, keep the binomial tree.
TEST(BcastPlan, SmallStagedCommunicatorsAreFlat) {
    for (int n = 2; n <= kFlatMaxRanks; ++n)
        for (int root = 0; root < n; ++root) {
            const std::vector<int> nodes = identity(n);
            const BcastPlan plan = plan_bcast({root, 8, 65536, 65536, 0, 8192}, nodes, n);
            expect_spanning_tree(plan, root);
            EXPECT_EQ(plan.shape, Shape::FlatTree) << "n " << n;
            EXPECT_EQ(plan.depth(), 1);
            EXPECT_EQ(plan.roles[static_cast<size_t>(root)].children.size(),
                      static_cast<size_t>(n - 1));
            EXPECT_EQ(plan.roles[static_cast<size_t>(root)].children.front(),
                      (root + 1) % n);  // ring order
            EXPECT_GT(plan.slots, 0u);
        }
    const auto five = identity(kFlatMaxRanks + 1);
    EXPECT_EQ(plan_bcast({0, 8, 65536, 65536, 0, 8192}, five, kFlatMaxRanks + 1).shape,
              Shape::BinomialTree);
    const auto four = identity(kFlatMaxRanks);
    EXPECT_EQ(plan_bcast({0, 8193, 65536, 65536, 0, 8192}, four, kFlatMaxRanks).shape,
              Shape::BinomialTree);
    EXPECT_EQ(plan_bcast({0, 8, 65536, 65536, 0, 0}, four, kFlatMaxRanks).shape,
              Shape::BinomialTree);  // unstaged
}

TEST(BcastPlan, ChainFollowsTheRingFromTheRoot) {
    // Communicator ranks live on scattered nodes; the chain must still step one hop at a time.
    const std::vector<int> nodes = {5, 2, 7, 0, 3, 6, 1, 4};
    for (int root = 0; root < 8; ++root) {
        const BcastPlan plan = plan_bcast({root, 1 << 20, 128 * 1024, 64 * 1024}, nodes, 8);
        ASSERT_EQ(plan.shape, Shape::Chain);
        expect_spanning_tree(plan, root);
        auto hops = [&](int a, int b) {
            return ring_hops(nodes[static_cast<size_t>(a)], nodes[static_cast<size_t>(b)], 8);
        };
        EXPECT_EQ(plan.total_hops(hops), 7) << "root " << root;  // n-1 links of one hop
    }
}

TEST(BcastPlan, RingOrderKeepsTreeLinksShort) {
    // However ranks are placed on the ring, the tree costs what it costs on
    // ring positions 0..7: one link of 4 hops, two of 2, four of 1.
    for (const std::vector<int> &placement :
         {std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7},
          std::vector<int>{3, 7, 1, 0, 6, 2, 5, 4}})
        for (int root = 0; root < 8; ++root) {
            const BcastPlan plan = plan_bcast({root, 8, 64 * 1024, 64 * 1024}, placement, 8);
            expect_spanning_tree(plan, root);
            auto hops = [&](int a, int b) {
                return ring_hops(placement[static_cast<size_t>(a)],
                                 placement[static_cast<size_t>(b)], 8);
            };
            EXPECT_EQ(plan.total_hops(hops), 1 * 4 + 2 * 2 + 4 * 1) << "root " << root;
            EXPECT_EQ(plan.depth(), 3);
        }
}

TEST(BcastPlan, SegmentsCoverTheMessageExactly) {
    const auto nodes = identity(4);
    for (size_t bytes :
         {size_t{65536}, size_t{65537}, size_t{131071}, size_t{1} << 22, size_t{3000001}}) {
        const BcastPlan plan = plan_bcast({1, bytes, 65536, 65536}, nodes, 4);
        size_t covered = 0;
        for (size_t s = 0; s < plan.segments; ++s) {
            EXPECT_EQ(plan.segment_offset(s), covered);
            EXPECT_GT(plan.segment_length(s), 0u);
            EXPECT_LE(plan.segment_length(s), 65536u);
            covered += plan.segment_length(s);
        }
        EXPECT_EQ(covered, bytes);
    }
    const BcastPlan empty = plan_bcast({0, 0, 65536, 65536}, nodes, 4);
    EXPECT_EQ(empty.segments, 0u);
}

TEST(BcastPlan, TwoRanksIsOneLink) {
    const auto nodes = identity(2);
    for (size_t bytes : {size_t{8}, size_t{1} << 24}) {
        const BcastPlan plan = plan_bcast({1, bytes, 65536, 65536}, nodes, 2);
        EXPECT_EQ(plan.roles[1].children, std::vector<int>{0});
        EXPECT_EQ(plan.roles[0].parent, 1);
        EXPECT_EQ(plan.segments,
                  1u);  // written straight into the child's buffer: nothing to pipeline
    }
    // Staged, the link is pipelined: the child copies a segment out while the parent writes the next.
    const BcastPlan staged =
        plan_bcast({1, size_t{4} << 20, 131072, 262144, 254, SIZE_MAX}, nodes, 2);
    EXPECT_EQ(staged.shape, Shape::Chain);
    EXPECT_EQ(staged.segments, 32u);
    EXPECT_EQ(staged.slots, 16u);
    // So is a direct one where the device sends a large write as one
    // rendezvous (the ucx device): from the chain threshold up.
    PlanParams pp{1, size_t{4} << 20, 61440, 262144};
    pp.pipeline_pairs = true;
    const BcastPlan piped = plan_bcast(pp, nodes, 2);
    EXPECT_EQ(piped.shape, Shape::Chain);
    EXPECT_EQ(piped.roles[1].children, std::vector<int>{0});
    EXPECT_EQ(piped.segments, 69u);  // 68 of 61440 bytes, the last 16384
    EXPECT_EQ(piped.segment_length(68), (size_t{4} << 20) - 68 * 61440);
    EXPECT_EQ(piped.slots, 0u);
    pp.bytes = 262143;
    EXPECT_EQ(plan_bcast(pp, nodes, 2).segments, 1u);
}

// Staging: only small, non-empty tree plans; slots fit every rank's chain
// (root: children + 2 descriptors per slot, others children + 4; 255 in all),
// at most the cap; slots cache-line aligned and large enough for the message.
TEST(BcastPlan, SmallMessagesAreStagedWithinTheChainLimit) {
    for (int n : {2, 4, 8, 64, 256}) {
        const auto nodes = identity(n);
        for (size_t bytes : {size_t{1}, size_t{1000}, size_t{8192}}) {
            const BcastPlan plan = plan_bcast({0, bytes, 65536, 65536, 0, 8192}, nodes, n);
            expect_spanning_tree(plan, 0);
            ASSERT_GT(plan.slots, 0u) << "n " << n << " bytes " << bytes;
            EXPECT_LE(plan.slots, kMaxStagingSlots);
            for (const RankRole &r : plan.roles)
                EXPECT_LE(plan.slots * (r.children.size() + (r.parent < 0 ? 2 : 4)), 255u)
                    << "n " << n;
            EXPECT_GE(plan.slot_stride, bytes);
            EXPECT_EQ(plan.slot_stride % 64, 0u);
        }
    }
    const auto nodes = identity(4);
    EXPECT_EQ(plan_bcast({0, 8193, 65536, 65536, 0, 8192}, nodes, 4).slots,
              0u);  // above staging_bytes
    EXPECT_EQ(plan_bcast({0, 0, 65536, 65536, 0, 8192}, nodes, 4).slots, 0u);  // empty
    EXPECT_EQ(plan_bcast({0, 100, 65536, 65536, 0, 0}, nodes, 4).slots, 0u);   // staging off
    const BcastPlan one_segment_chain = plan_bcast({0, 4096, 65536, 2048, 0, 8192}, nodes, 4);
    EXPECT_EQ(one_segment_chain.shape, Shape::Chain);
    EXPECT_EQ(one_segment_chain.slots, kMaxStagingSlots);
    EXPECT_EQ(one_segment_chain.epochs_per_run, one_segment_chain.slots);  // one slot per epoch
}

// Staged chains (every size staged): a run is one epoch whose segments fit
// every rank's program (a chain link costs at most 5 descriptors per
// segment); the slots divide the segments (every run uses them alike), fit
// the budget unless one slot alone does not, and hold a whole segment.
TEST(BcastPlan, StagedChainsCutSegmentsThatFitOneRun) {
    for (int n : {3, 4, 8, 16})
        for (size_t bytes :
             {size_t{256} << 10, size_t{1} << 20, (size_t{4} << 20) + 3, size_t{64} << 20})
            for (size_t budget : {size_t{1}, size_t{256} << 10, size_t{2} << 20}) {
                PlanParams p{0, bytes, 64 * 1024, 256 * 1024, 254, SIZE_MAX, budget};
                const BcastPlan plan = plan_bcast(p, identity(n), n);
                SCOPED_TRACE("n " + std::to_string(n) + " bytes " + std::to_string(bytes) +
                             " budget " + std::to_string(budget));
                ASSERT_EQ(plan.shape, Shape::Chain);
                expect_spanning_tree(plan, 0);
                EXPECT_EQ(plan.epochs_per_run, 1u);
                EXPECT_LE(plan.segments * 5, 255u);
                EXPECT_GE(plan.segment_bytes, size_t{64} << 10);  // never smaller than asked
                EXPECT_EQ(plan.segment_offset(plan.segments - 1) +
                              plan.segment_length(plan.segments - 1),
                          bytes);
                ASSERT_GE(plan.slots, 1u);
                EXPECT_EQ(plan.segments % plan.slots, 0u);
                EXPECT_GE(plan.slot_stride, plan.segment_bytes);
                EXPECT_EQ(plan.slot_stride % 64, 0u);
                if (plan.slots > 1) {
                    EXPECT_LE(plan.slots * plan.slot_stride, budget);
                }
            }
    // 4 MiB in 64 KiB segments would be 64: cut into 51 at most; 16 slots of ~80 KiB fit 2 MiB.
    const BcastPlan four =
        plan_bcast({0, size_t{4} << 20, 65536, 262144, 254, SIZE_MAX}, identity(4), 4);
    EXPECT_LE(four.segments, 51u);
    EXPECT_GT(four.slots, 8u);
    // A one-segment tree of 1 MiB (flat: staged at 4 ranks): as many slots as 2 MiB holds.
    const BcastPlan tree =
        plan_bcast({0, size_t{1} << 20, size_t{1} << 20, SIZE_MAX, 0, SIZE_MAX}, identity(4), 4);
    EXPECT_EQ(tree.shape, Shape::FlatTree);
    EXPECT_EQ(tree.slots, 2u);
    EXPECT_EQ(tree.epochs_per_run, 2u);
}

// Children return credits in batches that divide a run (so every run ends on
// a batch) and leave a parent at least three quarters of its slots to run
// ahead; chains, whose credits are few next to their data, return each one.
TEST(BcastPlan, CreditsComeInBatchesThatDivideARun) {
    for (int n : {2, 3, 4, 8, 16})
        for (size_t bytes :
             {size_t{1}, size_t{1024}, size_t{8192}, size_t{300000}, size_t{4} << 20})
            for (size_t budget : {size_t{1}, size_t{64} << 10, size_t{2} << 20}) {
                const BcastPlan plan = plan_bcast(
                    {0, bytes, 64 * 1024, 256 * 1024, 254, SIZE_MAX, budget}, identity(n), n);
                SCOPED_TRACE("n " + std::to_string(n) + " bytes " + std::to_string(bytes) +
                             " budget " + std::to_string(budget));
                ASSERT_GT(plan.slots, 0u);
                ASSERT_GE(plan.credit_batch, 1u);
                EXPECT_EQ(plan.blocks_per_run() % plan.credit_batch, 0u);
                EXPECT_LE(plan.credit_batch * 4, std::max<size_t>(plan.slots, 4));
                if (plan.segments > 1) {
                    EXPECT_EQ(plan.credit_batch, 1u);
                }
                for (uint64_t b = 0; b < 3 * plan.blocks_per_run(); ++b)
                    EXPECT_EQ(plan.credits_due_after(b), (b + 1) % plan.credit_batch == 0);
            }
    // 1 KiB at np 4 (flat: the root's 3 writes make 6 descriptors a block): 42 slots, batches of 7.
    const BcastPlan small = plan_bcast({0, 1024, 65536, 262144, 254, SIZE_MAX}, identity(4), 4);
    EXPECT_EQ(small.slots, 42u);
    EXPECT_EQ(small.credit_batch, 7u);
    // 1 KiB at np 8 (binomial: the root's 3 children again): the same.
    const BcastPlan eight = plan_bcast({0, 1024, 65536, 262144, 254, SIZE_MAX}, identity(8), 8);
    EXPECT_EQ(eight.slots, 42u);
}

// coll_tca_segment_size=-1 reaches the planner as SIZE_MAX: the message must
// still be one whole segment, not zero segments (a broadcast that moved nothing).
TEST(BcastPlan, HugeSegmentSizeStillCoversTheMessage) {
    for (size_t seg : {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX / 2 + 1}) {
        PlanParams p;
        p.bytes = 9u << 20;
        p.segment_bytes = seg;
        p.chain_threshold = 1;
        const BcastPlan plan = plan_bcast(p, identity(4), 4);
        ASSERT_EQ(plan.shape, Shape::Chain);
        EXPECT_EQ(plan.segments, 1u) << seg;
        EXPECT_EQ(plan.segment_length(0), p.bytes) << seg;
    }
}

// Parents write into their children's staging areas; a root has one only
// where its buffer is dear to read (GPU memory) and feeds two children or
// more (it reads the buffer once per block, then forwards from its slots).
TEST(BcastPlan, StagingAreasForEveryChildAndForGpuRootsWithChildren) {
    const BcastPlan four = plan_bcast({0, 1024, 65536, 65536, 0, 8192}, identity(4), 4);
    ASSERT_GT(four.slots, 0u);
    ASSERT_GE(four.roles[0].children.size(), 2u);
    for (int r = 1; r < 4; ++r) {
        EXPECT_TRUE(has_staging_area(four, r, false));
        EXPECT_TRUE(has_staging_area(four, r, true));
    }
    EXPECT_FALSE(has_staging_area(four, 0, false));
    EXPECT_TRUE(has_staging_area(four, 0, true));
    const BcastPlan two =
        plan_bcast({0, 1024, 65536, 65536, 0, 8192}, identity(2), 2);  // one child
    EXPECT_FALSE(has_staging_area(two, 0, true));
    EXPECT_TRUE(has_staging_area(two, 1, false));
    const BcastPlan direct = plan_bcast({0, 8193, 65536, 65536, 0, 8192}, identity(4), 4);
    for (int r = 0; r < 4; ++r)
        EXPECT_FALSE(has_staging_area(direct, r, true));
}
