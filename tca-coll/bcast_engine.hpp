// bcast_engine.hpp - executes one rank's part of a persistent broadcast plan
// on the TCA device, epoch after epoch.  Both engines move data the same way,
// so ranks may mix them:
//   - a parent writes segment s into each child's buffer, then adds 1 to the
//     child's data counter (the child sees the data once the counter moves);
//   - every non-root rank, when started for epoch k, adds 1 to its parent's
//     ready counter: the parent writes epoch k only after all its children
//     said so, so it never overwrites a buffer a child still reads.
// OffloadEngine builds the whole descriptor program at construction (triggered
// descriptors wait on the counters); start() only kicks it.  ThreadEngine does
// the same steps in software on a shared executor thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "bcast_plan.hpp"
#include "tca.h"

namespace tca::coll {

struct Neighbour {
    int node = -1;         // device node id
    tcaHandle buffer{};    // its registered broadcast buffer
    int data_counter = -1; // its counter for "segments landed"
    int ready_counter = -1;
};

struct EngineSetup {
    const BcastPlan *plan = nullptr;
    int rank = 0;           // in the plan
    unsigned char *buffer = nullptr;
    tcaHandle buffer_handle{};
    int data_counter = -1, ready_counter = -1;  // this rank's counters
    uint64_t data_base = 0, ready_base = 0;     // their values before anyone knew them (counters only grow)
    Neighbour parent;                           // unused at the root
    std::vector<Neighbour> children;            // in plan order
    int channel = -1;                           // offload: the DMA channel this request owns
};

class BcastEngine {
public:
    virtual ~BcastEngine() = default;
    // Begin the next epoch (MPI_Start): local, never waits for other ranks.
    virtual tcaResult start() = 0;
    // Non-blocking: tcaSuccess when this rank's part of the epoch is done,
    // tcaErrorNotReady while not, another code on failure.
    virtual tcaResult test() = 0;
};

// Largest number of segments a chain program may have for this many children.
size_t offload_max_segments(size_t children);

tcaResult make_offload_engine(const EngineSetup &setup, std::unique_ptr<BcastEngine> *out);
tcaResult make_thread_engine(const EngineSetup &setup, std::unique_ptr<BcastEngine> *out);

}  // namespace tca::coll
