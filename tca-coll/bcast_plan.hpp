// bcast_plan.hpp - the shape of a persistent broadcast, decided once at
// bcast_init: who receives from whom, in which order children are served,
// and how the buffer is cut into pipeline segments.  Pure computation (no MPI,
// no device), identical on every rank given the same inputs.
//
// Small messages use a binomial tree; large ones a pipelined chain.  Both are
// laid over the TCA ring: ranks are visited in ring order starting at the
// root's node, so a chain link is one hop and tree links stay short.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace tca::coll {

enum class Shape { BinomialTree, Chain };

struct PlanParams {
    int root = 0;                          // communicator rank of the root
    size_t bytes = 0;                      // message size
    size_t segment_bytes = 64 * 1024;      // pipeline segment (chains)
    size_t chain_threshold = 64 * 1024;    // at or above: pipelined chain
    size_t max_segments = 0;               // 0: no limit; else segments grow to stay within it
};

struct RankRole {
    int parent = -1;            // communicator rank; -1 at the root
    std::vector<int> children;  // served in this order
};

struct BcastPlan {
    Shape shape = Shape::BinomialTree;
    size_t bytes = 0;
    size_t segment_bytes = 0;  // every segment but possibly the last
    size_t segments = 0;       // 0 for an empty message
    std::vector<RankRole> roles;  // by communicator rank

    size_t segment_offset(size_t s) const noexcept { return s * segment_bytes; }
    size_t segment_length(size_t s) const noexcept {
        return s + 1 < segments ? segment_bytes : bytes - (segments ? (segments - 1) * segment_bytes : 0);
    }
    // Longest root-to-leaf path in links, and the sum of link hops under `hops`.
    int depth() const;
    int total_hops(const std::function<int(int, int)> &hops) const;
};

// node_of[r] is the device node of communicator rank r (all in one sub-cluster);
// ring_size the number of nodes on the ring.
BcastPlan plan_bcast(const PlanParams &p, std::span<const int> node_of, int ring_size);

}  // namespace tca::coll
