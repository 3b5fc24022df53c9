// tca_coll_core.cpp - the C entry points of coll tca's core: plan, buffer
// registration, counter and channel acquisition, engine.  Counters and DMA
// channels are acquired from the device layer (tcaCounterAcquire,
// tcaChannelAcquire), which also serves btl tca and the application: running
// out is an ordinary error the glue turns into a libnbc fallback.
#include "tca_coll_core.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "base/build_info.hpp"
#include "bcast_engine.hpp"
#include "device_area.hpp"
#include "session/liveness.h"

using namespace tca::coll;

// Counters of one request, taken as one run: data, ready, go, done, then one
// credit counter per child.
constexpr int kFixedCounters = 4;

struct tca_coll_bcast {
    BcastPlan plan;
    EngineSetup setup;
    DeviceArea staging, scratch;
    int wanted_engine = TCA_COLL_ENGINE_OFFLOAD;
    int engine_kind = -1;
    std::unique_ptr<BcastEngine> engine;
    bool registered = false;
    bool stages_all = false;  // every size staged (params.stage_all, host memory)
    int first_counter = -1, num_counters = 0;
    std::vector<int> nodes;  // device node of every communicator rank

    ~tca_coll_bcast() {
        engine.reset();  // stops a program still waiting on triggers before its channel goes
        if (registered)
            tcaDestroyHandle(&setup.buffer_handle);
        if (first_counter >= 0)
            tcaCounterRelease(first_counter, num_counters);
        if (setup.channel >= 0)
            tcaChannelRelease(setup.channel);
    }
};

extern "C" {

int tca_coll_core_optimized(void) {
    return tca::kBuiltOptimized ? 1 : 0;
}

tca_coll_bcast_t *tca_coll_bcast_new(const tca_coll_bcast_params_t *p, tca_coll_peer_info_t *mine,
                                     tcaResult *err) {
    *err = tcaErrorInvalidValue;
    if (p == nullptr || mine == nullptr || p->size < 1 || p->rank < 0 || p->rank >= p->size ||
        p->root < 0 || p->root >= p->size)
        return nullptr;
    auto *b = new (std::nothrow) tca_coll_bcast;
    if (b == nullptr) {
        *err = tcaErrorNoMemory;
        return nullptr;
    }
    // GPU memory is located first: it decides the segment size.
    if (p->detect_gpu && p->bytes > 0 &&
        (*err = locate_buffer(p->buffer, p->bytes, &b->setup.gpu)) != tcaSuccess) {
        delete b;
        return nullptr;
    }
    int ring = 0;
    tcaGetNumNodes(&ring);
    // Only chains have more than one segment, and a chain link has one child:
    // its program is one descriptor per segment (plus the gate).
    const size_t segment =
        b->setup.gpu.on_gpu || p->gpu_anywhere ? p->gpu_segment_bytes : p->segment_bytes;
    b->stages_all = p->stage_all && !b->setup.gpu.on_gpu && !p->gpu_anywhere;
    PlanParams pp{p->root,
                  p->bytes,
                  segment,
                  p->chain_threshold,
                  offload_max_segments(1),
                  b->stages_all ? SIZE_MAX : p->staging_bytes};
    pp.pipeline_pairs = p->pipeline_pairs != 0;
    b->plan = plan_bcast(pp, std::span<const int>(p->node_of, static_cast<size_t>(p->size)),
                         ring > 0 ? ring : 1);

    b->wanted_engine = p->engine;
    b->nodes.assign(p->node_of, p->node_of + p->size);
    EngineSetup &s = b->setup;
    s.plan = &b->plan;
    s.rank = p->rank;
    s.buffer = static_cast<unsigned char *>(p->buffer);
    const int nch = static_cast<int>(b->plan.roles[static_cast<size_t>(p->rank)].children.size());
    // One run: a parent's credit counters are addressed as first + child index.
    b->num_counters = kFixedCounters + nch;
    if ((*err = tcaCounterAcquire(b->num_counters, &b->first_counter)) != tcaSuccess) {
        b->first_counter = -1;
        delete b;
        return nullptr;
    }
    const int c0 = b->first_counter;
    s.data.index = c0;
    s.ready.index = c0 + 1;
    s.go.index = c0 + 2;
    s.done.index = c0 + 3;
    for (int i = 0; i < nch; ++i)
        s.credits.push_back(Counter{c0 + kFixedCounters + i, 0});
    // Nobody else knows these counters yet, so nothing can be on its way to them.
    if ((*err = init_counters(s)) != tcaSuccess ||
        (*err = b->scratch.allocate(kScratchBytes)) != tcaSuccess) {
        delete b;
        return nullptr;
    }
    s.scratch_handle = b->scratch.handle();
    if (has_staging_area(b->plan, p->rank, s.gpu.on_gpu)) {
        if ((*err = b->staging.allocate(b->plan.slots * b->plan.slot_stride)) != tcaSuccess) {
            delete b;
            return nullptr;
        }
        s.staging = b->staging.data();
        s.staging_handle = b->staging.handle();
    }
    if (p->bytes > 0) {
        // GPU memory: CUDA IPC exports whole allocations, so register the
        // allocation up to the buffer's end and address the buffer at its
        // offset (descriptors then move GPU to GPU; no host staging).
        s.buffer_offset = s.gpu.on_gpu ? s.gpu.offset : 0;
        void *start = s.gpu.on_gpu ? s.gpu.base : p->buffer;
        if ((*err = tcaCreateHandle(&s.buffer_handle, start, s.buffer_offset + p->bytes,
                                    s.gpu.on_gpu ? tcaMemoryGPU : tcaMemoryCPU)) != tcaSuccess) {
            delete b;
            return nullptr;
        }
        b->registered = true;
    }
    int node = -1;
    tcaGetNodeId(&node);
    const bool staged = b->plan.slots > 0;
    *mine = tca_coll_peer_info_t{staged ? s.staging_handle : s.buffer_handle,
                                 s.scratch_handle,
                                 node,
                                 s.data.index,
                                 s.ready.index,
                                 nch > 0 ? s.credits[0].index : -1,
                                 staged ? 0 : s.buffer_offset};
    *err = tcaSuccess;
    return b;
}

int tca_coll_bcast_parent(const tca_coll_bcast_t *b) {
    return b->plan.roles[static_cast<size_t>(b->setup.rank)].parent;
}
int tca_coll_bcast_num_children(const tca_coll_bcast_t *b) {
    return static_cast<int>(b->plan.roles[static_cast<size_t>(b->setup.rank)].children.size());
}
int tca_coll_bcast_child(const tca_coll_bcast_t *b, int i) {
    return b->plan.roles[static_cast<size_t>(b->setup.rank)].children[static_cast<size_t>(i)];
}
int tca_coll_bcast_engine(const tca_coll_bcast_t *b) {
    return b->engine_kind;
}
int tca_coll_bcast_on_gpu(const tca_coll_bcast_t *b) {
    return b->setup.gpu.on_gpu ? 1 : 0;
}
size_t tca_coll_bcast_segments(const tca_coll_bcast_t *b) {
    return b->plan.segments;
}
size_t tca_coll_bcast_segment_bytes(const tca_coll_bcast_t *b) {
    return b->plan.segment_bytes;
}
size_t tca_coll_bcast_slots(const tca_coll_bcast_t *b) {
    return b->plan.slots;
}
size_t tca_coll_bcast_slot_bytes(const tca_coll_bcast_t *b) {
    return b->plan.slots > 0 ? b->plan.slot_stride : 0;
}
int tca_coll_bcast_stages_all(const tca_coll_bcast_t *b) {
    return b->stages_all ? 1 : 0;
}

tcaResult tca_coll_bcast_connect(tca_coll_bcast_t *b, const tca_coll_peer_info_t *parent,
                                 const tca_coll_peer_info_t *children) {
    EngineSetup &s = b->setup;
    auto neighbour = [](const tca_coll_peer_info_t &i) {
        return Neighbour{i.node,          i.buffer,         i.scratch,      i.data_counter,
                         i.ready_counter, i.credit_counter, i.buffer_offset};
    };
    if (tca_coll_bcast_parent(b) >= 0 && parent != nullptr)
        s.parent = neighbour(*parent);
    s.children.clear();
    for (int i = 0; i < tca_coll_bcast_num_children(b); ++i)
        s.children.push_back(neighbour(children[i]));
    if (b->wanted_engine == TCA_COLL_ENGINE_OFFLOAD) {
        // No free channel (btl tca's DMA puts, other requests or the
        // application hold them all): this rank runs the thread engine,
        // which moves data the same way, so the other ranks need not know.
        const bool needs_channel = offload_needs_channel(b->plan, s.rank);
        if (needs_channel && tcaChannelAcquire(&s.channel) != tcaSuccess)
            s.channel = -1;
        if (!needs_channel || s.channel >= 0) {
            const tcaResult r = make_offload_engine(s, &b->engine);
            if (r == tcaSuccess) {
                b->engine_kind = TCA_COLL_ENGINE_OFFLOAD;
                return tcaSuccess;
            }
            b->engine.reset();
            if (s.channel >= 0)
                tcaChannelRelease(s.channel);
            s.channel = -1;
        }
    }
    const tcaResult r = make_thread_engine(s, &b->engine);  // also the fallback: same wire protocol
    if (r == tcaSuccess)
        b->engine_kind = TCA_COLL_ENGINE_THREAD;
    return r;
}

tcaResult tca_coll_bcast_start(tca_coll_bcast_t *b) {
    return b->engine ? b->engine->start() : tcaErrorNotReady;
}
// An epoch that does not finish may wait for a rank that died: the engines
// only watch counters, which a dead rank never moves (and mpirun does not
// always end the job: --enable-recovery, other launchers).  The session's
// liveness sweep (session/liveness.h, shared with btl tca) says which nodes
// died; one of the communicator's fails the request by name
// (tcaErrorPeerGone) - any rank, not only the neighbours: a dead grandparent
// starves us too.
static tcaResult check_ranks_alive(tca_coll_bcast_t *b) {
    const uint64_t dead = tca_session_dead_nodes(TCA_MAX_NODES);
    if (dead == 0)
        return tcaErrorNotReady;
    for (const int node : b->nodes)
        if (node >= 0 && node < 64 && (dead >> node & 1))
            return tcaErrorPeerGone;
    return tcaErrorNotReady;
}

tcaResult tca_coll_bcast_test(tca_coll_bcast_t *b) {
    if (!b->engine)
        return tcaErrorNotReady;
    const tcaResult r = b->engine->test();
    return r == tcaErrorNotReady ? check_ranks_alive(b) : r;
}
int tca_coll_bcast_settled(const tca_coll_bcast_t *b) {
    // Staged plans: children return credits after their epoch is done, so the
    // last ones may still be on their way (their engines send them without
    // help from MPI).  Until they are in, a late credit would land in
    // whichever request takes these counters and this scratch next.
    const uint64_t epochs = b->engine ? b->engine->epochs() : 0;
    return credits_settled(b->setup, epochs) ? 1 : 0;
}

void tca_coll_bcast_retire(tca_coll_bcast_t *b) {
    // A request that failed (a peer gone) owes nothing: its parent failed too.
    if (!b->engine || b->engine->test() != tcaSuccess)
        return;
    (void) return_owed_credits(b->setup, b->engine->epochs());
}

void tca_coll_finalize(void) {
    leave_progress_thread();
}

void tca_coll_set_thread_takeover_us(unsigned us) {
    set_thread_takeover(std::chrono::microseconds(us));
}

void tca_coll_bcast_free(tca_coll_bcast_t *b) {
    delete b;
}

}  // extern "C"
