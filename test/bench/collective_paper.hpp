// collective_paper.hpp - what the timing model computes, on paper, for the
// published-style 16-rank broadcast (B4, test/tca-api/bcast_tree.c) and
// allgather (B5, allgather_rd.c): the same formulas the device follows
// (ChainClock, the topology's hops), no emulation, no software cost.
// tca_model_bench prints these beside the emulated figures.
#pragma once

#include <cstddef>

#include "model/timing_model.hpp"
#include "model/topology.hpp"

namespace tca::bench {

// Binomial tree of `ranks` (a power of two): rank r forwards to r + m for
// every m below its lowest set bit, largest subtree first, one chain of
// descriptors (Notify | NotifySelf) started when its parent's data landed.
// What a rank measures: until its data landed (a leaf) or its chain's first
// descriptor notified it (a forwarding rank, the root); the figure is the
// largest of them, from a common start.
double b4_paper_ns(const TimingModel &m, const Topology &t, int ranks, size_t bytes);

// Recursive doubling over `ranks` (a power of two): step s sends the 2^s
// blocks gathered so far to rank ^ 2^s on channel s (step 0 first copies
// the rank's own block locally in the same chain); a rank starts step s + 1
// once its partner's step-s data landed.  The figure: the last rank's end.
double b5_paper_ns(const TimingModel &m, const Topology &t, int ranks, size_t block);

}  // namespace tca::bench
