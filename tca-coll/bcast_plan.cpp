#include "bcast_plan.hpp"

#include <algorithm>
#include <numeric>

namespace tca::coll {

namespace {

constexpr size_t kMaxChainDescriptors = 255;  // TCA_MAX_DESCRIPTORS (the planner stays device-free)

// Communicator ranks in ring order, starting at the root: clockwise distance
// from the root's node, ties (several ranks on one node) by rank.
std::vector<int> ring_order(int root, std::span<const int> node_of, int ring_size) {
    std::vector<int> order(node_of.size());
    std::iota(order.begin(), order.end(), 0);
    const int base = node_of[static_cast<size_t>(root)];
    auto dist = [&](int r) {
        return r == root
                   ? -1
                   : ((node_of[static_cast<size_t>(r)] - base) % ring_size + ring_size) % ring_size;
    };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return dist(a) < dist(b); });
    return order;
}

// Binomial tree over ring positions by recursive halving: position v
// receives from v with its lowest set bit cleared, so every subtree is a
// contiguous stretch of the ring and the first link (the biggest subtree)
// spans half of it, the next a quarter...: n/2 + 2*(n/4) + ... hops, not
// the ~n/2 * log n of a tree in plain rank order.
template <class Link>
void binomial_tree(int n, Link link) {
    for (int v = 0; v < n; ++v) {
        int low = v == 0 ? 1 : (v & -v);
        if (v == 0)
            while (low < n)
                low <<= 1;
        for (int step = low >> 1; step > 0; step >>= 1)  // farthest child first
            if (v + step < n)
                link(v, v + step);
    }
}

// Staging, once the roles are known (they decide what a block costs).
void stage(BcastPlan &plan, const PlanParams &p) {
    if (p.bytes == 0 || p.bytes > p.staging_bytes)
        return;
    size_t costliest = 1;
    for (const RankRole &r : plan.roles)
        costliest =
            std::max(costliest, staged_descriptors_per_block(r.children.size(), r.parent < 0));
    const size_t blocks = kMaxChainDescriptors / costliest;
    auto stride = [](size_t bytes) { return (bytes + 63) / 64 * 64; };
    if (plan.segments == 1) {  // a run covers `slots` epochs, one slot each
        plan.slot_stride = stride(p.bytes);
        plan.slots = std::min(
            {kMaxStagingSlots, blocks, std::max<size_t>(1, p.staging_budget / plan.slot_stride)});
        plan.epochs_per_run = plan.slots;
        for (size_t b = plan.slots / 4; b > 1; --b)
            if (plan.slots % b == 0) {
                plan.credit_batch = b;
                break;
            }
        return;
    }
    // A chain: a run covers one epoch, so its segments must fit one program.
    if (plan.segments > blocks) {
        plan.segment_bytes = (p.bytes + blocks - 1) / blocks;
        plan.segments = p.bytes / plan.segment_bytes + (p.bytes % plan.segment_bytes != 0 ? 1 : 0);
    }
    plan.slot_stride = stride(plan.segment_bytes);
    plan.slots = 1;
    for (size_t k = std::min(kMaxStagingSlots, plan.segments); k > 1; --k)
        if (plan.segments % k == 0 && k * plan.slot_stride <= p.staging_budget) {
            plan.slots = k;
            break;
        }
    plan.epochs_per_run = 1;
}

}  // namespace

BcastPlan plan_bcast(const PlanParams &p, std::span<const int> node_of, int ring_size) {
    BcastPlan plan;
    const int n = static_cast<int>(node_of.size());
    plan.bytes = p.bytes;
    plan.roles.assign(static_cast<size_t>(n), RankRole{});
    // Two ranks are one link either way, and a direct write into the child's
    // buffer gains nothing from segments on the loopback; a staged one does
    // (the child copies segment s out while its parent writes s + 1), and so
    // does one on the ucx device (pipeline_pairs), where one large write is a
    // synchronous rendezvous and segments in flight keep the link busy.
    const bool staged = p.bytes > 0 && p.bytes <= p.staging_bytes;
    plan.shape = p.bytes >= p.chain_threshold && (n > 2 || staged || p.pipeline_pairs)
                     ? Shape::Chain
                 : staged && n <= kFlatMaxRanks ? Shape::FlatTree
                                                : Shape::BinomialTree;
    plan.segment_bytes = plan.shape == Shape::Chain ? std::max<size_t>(1, p.segment_bytes)
                                                    : std::max<size_t>(1, p.bytes);
    if (p.max_segments > 0)  // e.g. a descriptor chain holds at most 255 entries
        plan.segment_bytes =
            std::max(plan.segment_bytes, (p.bytes + p.max_segments - 1) / p.max_segments);
    // Not (bytes + seg - 1) / seg: with a huge segment that wraps to 0 segments
    // and the broadcast silently moves nothing.
    plan.segments = p.bytes / plan.segment_bytes + (p.bytes % plan.segment_bytes != 0 ? 1 : 0);
    if (n <= 1)
        return plan;

    const std::vector<int> order = ring_order(p.root, node_of, std::max(1, ring_size));
    auto link = [&](int parent_v, int child_v) {
        const int parent = order[static_cast<size_t>(parent_v)],
                  child = order[static_cast<size_t>(child_v)];
        plan.roles[static_cast<size_t>(child)].parent = parent;
        plan.roles[static_cast<size_t>(parent)].children.push_back(child);
    };
    if (plan.shape == Shape::Chain) {
        for (int v = 1; v < n; ++v)
            link(v - 1, v);
        stage(plan, p);
        return plan;
    }
    if (plan.shape == Shape::FlatTree) {
        for (int v = 1; v < n; ++v)
            link(0, v);  // in ring order from the root
        stage(plan, p);
        return plan;
    }
    binomial_tree(n, link);
    stage(plan, p);
    return plan;
}

int BcastPlan::depth() const {
    int deepest = 0;
    for (size_t r = 0; r < roles.size(); ++r) {
        int d = 0;
        for (int x = static_cast<int>(r);
             roles[static_cast<size_t>(x)].parent >= 0 && d <= static_cast<int>(roles.size());
             x = roles[static_cast<size_t>(x)].parent)
            ++d;
        deepest = std::max(deepest, d);
    }
    return deepest;
}

int BcastPlan::total_hops(const std::function<int(int, int)> &hops) const {
    int sum = 0;
    for (size_t r = 0; r < roles.size(); ++r)
        for (int c : roles[r].children)
            sum += hops(static_cast<int>(r), c);
    return sum;
}

bool has_staging_area(const BcastPlan &plan, int rank, bool buffer_dear_to_read) {
    if (plan.slots == 0)
        return false;
    const RankRole &role = plan.roles[static_cast<size_t>(rank)];
    return role.parent >= 0 || (buffer_dear_to_read && role.children.size() >= 2);
}

}  // namespace tca::coll
