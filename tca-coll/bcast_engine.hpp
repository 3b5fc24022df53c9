// bcast_engine.hpp - executes one rank's part of a persistent broadcast plan
// on the TCA device, epoch after epoch.  Both engines move data the same way,
// so ranks may mix them.  Two wire protocols, chosen by the plan:
//
// Direct (plan.slots == 0: large messages, chains):
//   - a parent writes segment s into each child's buffer, then adds 1 to the
//     child's data counter (the child sees the data once the counter moves);
//   - every non-root rank, when started for epoch k, adds 1 to its parent's
//     ready counter: the parent writes epoch k only after all its children
//     said so, so it never overwrites a buffer a child still reads.
//
// Staged (plan.slots = K > 0: small messages, or every size where writing
// into another process is dear):
//   - blocks are numbered across epochs (epoch k, segment s: k * S + s); a
//     parent writes block g into slot g mod K of the child's staging area
//     (device memory) and adds 1 to the child's data counter;
//   - a child forwards the slot to its own children, copies it into its
//     buffer once it is started for that epoch, then returns the slot as a
//     credit: it adds to its credit counter at the parent (one counter per
//     child, pre-loaded with K) in batches of plan.credit_batch blocks, and
//     what it still owes once its request is freed.  A parent runs up to
//     K blocks ahead and never waits a round trip per epoch, and the
//     child's copy-out overlaps the parent's next write.
//
// OffloadEngine builds the whole descriptor program at construction (triggered
// descriptors wait on the counters); start() only kicks it.  ThreadEngine does
// the same steps in software: on the thread that tests a request, and as a
// client of the TCA session's one progress thread (session/progress_engine.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "bcast_plan.hpp"
#include "gpu_buffer.hpp"
#include "tca.h"

namespace tca::coll {

// A device counter and its value when this request took it (counters only
// grow; thresholds are relative to the base).
struct Counter {
    int index = -1;
    uint64_t base = 0;
};

// How far c has moved since it was taken, in *moved.
tcaResult counter_moved(const Counter &c, uint64_t *moved);

struct Neighbour {
    int node = -1;        // device node id
    tcaHandle buffer{};   // where a parent writes: its staging area (staged) or its buffer (direct)
    tcaHandle scratch{};  // a few bytes of its memory that credit descriptors write into
    int data_counter = -1;    // its counter for "segments landed"
    int ready_counter = -1;   // direct: its counter for "my children started"
    int credit_counter = -1;  // staged: the first of its per-child credit counters
    uint64_t buffer_offset =
        0;  // direct: where its buffer starts inside `buffer` (GPU: base + offset)
};

// Bytes of scratch memory every rank provides (credit landing byte, gate bytes).
inline constexpr size_t kScratchBytes = 64;

struct EngineSetup {
    const BcastPlan *plan = nullptr;
    int rank = 0;  // in the plan
    unsigned char *buffer = nullptr;
    tcaHandle buffer_handle{};
    // The buffer inside its registration: 0 for host memory; a GPU buffer is
    // registered as its whole CUDA allocation (IPC handles name allocations).
    uint64_t buffer_offset = 0;
    GpuBuffer gpu;  // gpu.on_gpu: the CPU cannot read `buffer` (the thread engine copies out first)
    unsigned char *staging =
        nullptr;  // plan.slots slots, plan.slot_stride apart, where has_staging_area
    tcaHandle staging_handle{};
    tcaHandle scratch_handle{};       // kScratchBytes
    Counter data, ready;              // this rank's counters, both protocols
    Counter go, done;                 // staged: "started epoch k", "finished epoch k" (local)
    std::vector<Counter> credits;     // staged: one per child, consecutive indices, plan order
    Neighbour parent;                 // unused at the root
    std::vector<Neighbour> children;  // in plan order
    int channel = -1;                 // offload: the DMA channel this request owns
};

// Takes the current values of the setup's counters as their bases and loads
// each child's credit counter with plan.slots.  Call before anyone else knows
// the counters (at init): counters only grow, so nothing is lost.
tcaResult init_counters(EngineSetup &s);

// Where this rank sits among its parent's children (its credit counter there
// is parent.credit_counter + this).
int index_at_parent(const BcastPlan &plan, int rank);
// Staged plans, a non-root: the index of its credit counter at its parent.
int credit_counter_at_parent(const EngineSetup &s);

class BcastEngine {
public:
    virtual ~BcastEngine() = default;
    // Begin the next epoch (MPI_Start): local, never waits for other ranks.
    virtual tcaResult start() = 0;
    // Non-blocking: tcaSuccess when this rank's part of the epoch is done,
    // tcaErrorNotReady while not, another code on failure.
    virtual tcaResult test() = 0;
    // Epochs started so far.
    virtual uint64_t epochs() const = 0;
};

// Staged plans: has every child returned the credit of every epoch so far?
// Until then a child may still write into our scratch and counters, so a
// request must not give them back before.  (Children return the last
// credits of a batch when they free their request: return_owed_credits.)
bool credits_settled(const EngineSetup &s, uint64_t epochs);

// Staged plans, a child whose request is freed after `epochs` epochs, each
// one done: sends its parent the credits of a batch it has not completed.
tcaResult return_owed_credits(const EngineSetup &s, uint64_t epochs);

// Largest number of segments a chain program may have for this many children.
size_t offload_max_segments(size_t children);
// Does this rank need a DMA channel under the offload engine?
bool offload_needs_channel(const BcastPlan &plan, int rank);

tcaResult make_offload_engine(const EngineSetup &setup, std::unique_ptr<BcastEngine> *out);
tcaResult make_thread_engine(const EngineSetup &setup, std::unique_ptr<BcastEngine> *out);
// MPI_Finalize: thread engines no longer run on the session's progress thread
// (requests never freed keep theirs; the code that runs them is unloaded next).
void leave_progress_thread();
// How long the application may be away from MPI (since its last MPI_Test,
// MPI_Wait or MPI_Start of a broadcast) before the session's progress thread
// does a thread engine's work for it; 1 ms unless set.  Sooner, the thread
// competes with an application that is only off its core for a moment (on
// an oversubscribed host, a whole time slice after each yield).
void set_thread_takeover(std::chrono::nanoseconds after);

}  // namespace tca::coll
