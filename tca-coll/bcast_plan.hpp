// bcast_plan.hpp - the shape of a persistent broadcast, decided once at
// bcast_init: who receives from whom, in which order children are served,
// and how the buffer is cut into pipeline segments.  Pure computation (no MPI,
// no device), identical on every rank given the same inputs.
//
// Small messages use a binomial tree (a flat one, the root writing every
// child, where staged at up to kFlatMaxRanks ranks); large ones a pipelined
// chain.  Messages
// up to staging_bytes are staged: each non-root keeps `slots` landing slots in
// device memory, so a parent may run up to `slots` segments ahead of a child
// instead of waiting every epoch for "child started" (a round trip per epoch,
// the price of writing straight into the child's buffer), and the child copies
// each segment out with its own core while its parent writes the next (where
// writing into another process's memory is dear, two copies on two cores beat
// one on a single core).  Both shapes are
// laid over the TCA ring: ranks are visited in ring order starting at the
// root's node, so a chain link is one hop and tree links stay short.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace tca::coll {

enum class Shape { FlatTree, BinomialTree, Chain };

// Staged broadcasts in communicators of up to this many ranks are flat, as
// libnbc's are up to 4 ranks: in a deeper tree a leaf's block waits for its
// forwarding parent to start its own epoch (with each rank timing its Start
// + Wait, the grandchild's wait stood out far above the root's children's),
// while the root's extra writes of a few bytes each cost next to nothing.
inline constexpr int kFlatMaxRanks = 4;

struct PlanParams {
    int root = 0;                        // communicator rank of the root
    size_t bytes = 0;                    // message size
    size_t segment_bytes = 64 * 1024;    // pipeline segment (chains)
    size_t chain_threshold = 64 * 1024;  // at or above: pipelined chain
    size_t max_segments = 0;             // 0: no limit; else segments grow to stay within it
    size_t staging_bytes = 0;            // at most this (and not empty): staged
    size_t staging_budget =
        2 * 1024 * 1024;  // a staged non-root's slots take at most this (but one slot at least)
    // Two ranks get a chain of segments too (from chain_threshold up): where
    // the device sends one large write as a synchronous rendezvous (the ucx
    // device above 256 KiB), segments in flight pipeline the link.
    bool pipeline_pairs = false;
};

// Landing slots of a staged plan: as many blocks (epochs, or segments of a
// chain) as fit every rank's 255-descriptor chain and the staging budget, at
// most kMaxStagingSlots.  More slots let a parent run further ahead, which
// paid for small broadcasts up to a few dozen slots and no further (a
// thread engine with many more did no better).
inline constexpr size_t kMaxStagingSlots = 48;
// Descriptors one block of a staged plan costs a rank at most (the offload
// engine's program: a gate, a write per child, "done"; a root with a staging
// area also copies into its own slot; non-roots also copy out and return a
// credit).
inline constexpr size_t staged_descriptors_per_block(size_t children, bool root) {
    return children + (root ? 3 : 4);
}

struct RankRole {
    int parent = -1;            // communicator rank; -1 at the root
    std::vector<int> children;  // served in this order
};

struct BcastPlan {
    Shape shape = Shape::BinomialTree;
    size_t bytes = 0;
    size_t segment_bytes = 0;  // every segment but possibly the last
    size_t segments = 0;       // 0 for an empty message
    // Staged plans: one run of a rank's program covers epochs_per_run epochs
    // of `segments` blocks each; block b of a run lands in slot b mod slots
    // (slots divides the blocks of a run, so every run uses the slots alike).
    // One-segment plans: epochs_per_run == slots; chains: 1 epoch per run.
    size_t slots = 0;        // landing slots per non-root (0: not staged)
    size_t slot_stride = 0;  // bytes between slots (cache-line aligned)
    size_t epochs_per_run = 0;
    // Staged plans: a child returns its credits in batches of this many
    // blocks (a multiple-of-it block sends them all), and what it still owes
    // when its request is freed (return_owed_credits).  One credit message
    // per block cost as much as the data message on the ucx device (each is
    // a message through UCX).  One-segment plans: the largest
    // divisor of `slots` up to a quarter of them, so a parent still runs
    // three quarters of its slots ahead; chains: 1 (their credits are few
    // next to their data).  Divides blocks_per_run().
    size_t credit_batch = 1;
    std::vector<RankRole> roles;  // by communicator rank

    size_t blocks_per_run() const noexcept { return epochs_per_run * segments; }
    // Does a child send its credits once block b (numbered across epochs) is out?
    bool credits_due_after(uint64_t b) const noexcept { return (b + 1) % credit_batch == 0; }
    size_t segment_offset(size_t s) const noexcept { return s * segment_bytes; }
    size_t segment_length(size_t s) const noexcept {
        return s + 1 < segments ? segment_bytes
                                : bytes - (segments ? (segments - 1) * segment_bytes : 0);
    }
    // Longest root-to-leaf path in links, and the sum of link hops under `hops`.
    int depth() const;
    int total_hops(const std::function<int(int, int)> &hops) const;
};

// node_of[r] is the device node of communicator rank r (all in one sub-cluster);
// ring_size the number of nodes on the ring.
BcastPlan plan_bcast(const PlanParams &p, std::span<const int> node_of, int ring_size);

// Staged plans: does this rank get a staging area of plan.slots slots?  Every
// non-root does (its parent writes there).  So does a root whose buffer is
// dear to read (GPU memory: each read is a synchronous GPU copy) and that
// feeds two children or more: either engine copies each block into the
// root's own slot once and forwards it from there, not from GPU memory once
// per child.
bool has_staging_area(const BcastPlan &plan, int rank, bool buffer_dear_to_read);

}  // namespace tca::coll
