// tca_coll_core.cpp - the C entry points of coll tca's core: plan, buffer
// registration, counter and channel allocation, engine.  Counters 128..255
// and DMA channels 1..3 belong to coll tca (channel 0 is btl tca's).
#include "tca_coll_core.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "bcast_engine.hpp"
#include "device_area.hpp"

using namespace tca::coll;

namespace {

constexpr int kFirstCounter = 128;
constexpr int kFirstChannel = 1;

struct Resources {
    std::mutex lock;
    std::vector<bool> counter_used = std::vector<bool>(TCA_NUM_COUNTERS, false);
    bool channel_used[TCA_NUM_DMA_CHANNELS] = {};

    // n consecutive counters (a parent's credit counters are addressed as
    // first + child index); -1 if there is no such run free.
    int take_counters(int n) {
        std::lock_guard g(lock);
        for (int c = kFirstCounter; c + n <= TCA_NUM_COUNTERS; ++c) {
            int k = 0;
            while (k < n && !counter_used[static_cast<size_t>(c + k)]) ++k;
            if (k < n) {
                c += k;
                continue;
            }
            for (k = 0; k < n; ++k) counter_used[static_cast<size_t>(c + k)] = true;
            return c;
        }
        return -1;
    }
    void give_counters(int c, int n) {
        std::lock_guard g(lock);
        for (int k = 0; c >= 0 && k < n; ++k) counter_used[static_cast<size_t>(c + k)] = false;
    }
    int take_channel() {
        std::lock_guard g(lock);
        for (int c = kFirstChannel; c < TCA_NUM_DMA_CHANNELS; ++c)
            if (!channel_used[c]) {
                channel_used[c] = true;
                return c;
            }
        return -1;
    }
    void give_channel(int c) {
        std::lock_guard g(lock);
        if (c >= 0) channel_used[c] = false;
    }
};
Resources &resources() {
    static Resources r;
    return r;
}

}  // namespace

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
    int first_counter = -1, num_counters = 0;

    ~tca_coll_bcast() {
        engine.reset();
        if (registered) tcaDestroyHandle(&setup.buffer_handle);
        resources().give_counters(first_counter, num_counters);
        resources().give_channel(setup.channel);
    }
};

extern "C" {

tca_coll_bcast_t *tca_coll_bcast_new(const tca_coll_bcast_params_t *p, tca_coll_peer_info_t *mine, tcaResult *err) {
    *err = tcaErrorInvalidValue;
    if (p == nullptr || mine == nullptr || p->size < 1 || p->rank < 0 || p->rank >= p->size || p->root < 0 ||
        p->root >= p->size)
        return nullptr;
    auto *b = new (std::nothrow) tca_coll_bcast;
    if (b == nullptr) {
        *err = tcaErrorNoMemory;
        return nullptr;
    }
    int ring = 0;
    tcaGetNumNodes(&ring);
    // Only chains have more than one segment, and a chain link has one child:
    // its program is one descriptor per segment (plus the gate).
    PlanParams pp{p->root, p->bytes, p->segment_bytes, p->chain_threshold, offload_max_segments(1), p->staging_bytes};
    b->plan = plan_bcast(pp, std::span<const int>(p->node_of, static_cast<size_t>(p->size)), ring > 0 ? ring : 1);

    b->wanted_engine = p->engine;
    EngineSetup &s = b->setup;
    s.plan = &b->plan;
    s.rank = p->rank;
    s.buffer = static_cast<unsigned char *>(p->buffer);
    const int nch = static_cast<int>(b->plan.roles[static_cast<size_t>(p->rank)].children.size());
    b->num_counters = kFixedCounters + nch;
    b->first_counter = resources().take_counters(b->num_counters);
    if (b->first_counter < 0) {
        b->num_counters = 0;
        *err = tcaErrorInvalidCounter;
        delete b;
        return nullptr;
    }
    const int c0 = b->first_counter;
    s.data.index = c0;
    s.ready.index = c0 + 1;
    s.go.index = c0 + 2;
    s.done.index = c0 + 3;
    for (int i = 0; i < nch; ++i) s.credits.push_back(Counter{c0 + kFixedCounters + i, 0});
    // Nobody else knows these counters yet, so nothing can be on its way to them.
    if ((*err = init_counters(s)) != tcaSuccess || (*err = b->scratch.allocate(kScratchBytes)) != tcaSuccess) {
        delete b;
        return nullptr;
    }
    s.scratch_handle = b->scratch.handle();
    if (b->plan.slots > 0 && b->plan.roles[static_cast<size_t>(p->rank)].parent >= 0) {
        if ((*err = b->staging.allocate(b->plan.slots * b->plan.slot_stride)) != tcaSuccess) {
            delete b;
            return nullptr;
        }
        s.staging = b->staging.data();
        s.staging_handle = b->staging.handle();
    }
    if (p->bytes > 0) {
        if ((*err = tcaCreateHandle(&s.buffer_handle, p->buffer, p->bytes, tcaMemoryCPU)) != tcaSuccess) {
            delete b;
            return nullptr;
        }
        b->registered = true;
    }
    int node = -1;
    tcaGetNodeId(&node);
    *mine = tca_coll_peer_info_t{b->plan.slots > 0 ? s.staging_handle : s.buffer_handle, s.scratch_handle, node,
                                 s.data.index, s.ready.index, nch > 0 ? s.credits[0].index : -1};
    *err = tcaSuccess;
    return b;
}

int tca_coll_bcast_parent(const tca_coll_bcast_t *b) { return b->plan.roles[static_cast<size_t>(b->setup.rank)].parent; }
int tca_coll_bcast_num_children(const tca_coll_bcast_t *b) {
    return static_cast<int>(b->plan.roles[static_cast<size_t>(b->setup.rank)].children.size());
}
int tca_coll_bcast_child(const tca_coll_bcast_t *b, int i) {
    return b->plan.roles[static_cast<size_t>(b->setup.rank)].children[static_cast<size_t>(i)];
}
int tca_coll_bcast_engine(const tca_coll_bcast_t *b) { return b->engine_kind; }

tcaResult tca_coll_bcast_connect(tca_coll_bcast_t *b, const tca_coll_peer_info_t *parent,
                                 const tca_coll_peer_info_t *children) {
    EngineSetup &s = b->setup;
    auto neighbour = [](const tca_coll_peer_info_t &i) {
        return Neighbour{i.node, i.buffer, i.scratch, i.data_counter, i.ready_counter, i.credit_counter};
    };
    if (tca_coll_bcast_parent(b) >= 0 && parent != nullptr) s.parent = neighbour(*parent);
    s.children.clear();
    for (int i = 0; i < tca_coll_bcast_num_children(b); ++i) s.children.push_back(neighbour(children[i]));
    if (b->wanted_engine == TCA_COLL_ENGINE_OFFLOAD) {
        const bool needs_channel = offload_needs_channel(b->plan, s.rank);
        if (needs_channel) s.channel = resources().take_channel();
        if (!needs_channel || s.channel >= 0) {
            const tcaResult r = make_offload_engine(s, &b->engine);
            if (r == tcaSuccess) {
                b->engine_kind = TCA_COLL_ENGINE_OFFLOAD;
                return tcaSuccess;
            }
            resources().give_channel(s.channel);
            s.channel = -1;
        }
    }
    const tcaResult r = make_thread_engine(s, &b->engine);  // also the fallback: same wire protocol
    if (r == tcaSuccess) b->engine_kind = TCA_COLL_ENGINE_THREAD;
    return r;
}

tcaResult tca_coll_bcast_start(tca_coll_bcast_t *b) { return b->engine ? b->engine->start() : tcaErrorNotReady; }
tcaResult tca_coll_bcast_test(tca_coll_bcast_t *b) { return b->engine ? b->engine->test() : tcaErrorNotReady; }
void tca_coll_bcast_free(tca_coll_bcast_t *b) {
    // Staged plans: children return credits after their epoch is done, so the
    // last ones may still be on their way; their engines send them without
    // help from MPI.  Wait for them (bounded); should one never come (a child
    // that never started its last epoch), keep the counters and scratch out
    // of reuse rather than let a late credit land in another request.
    const uint64_t epochs = b->engine ? b->engine->epochs() : 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!credits_settled(b->setup, epochs)) {
        tcaProgress(nullptr);
        if (std::chrono::steady_clock::now() > deadline) {
            b->first_counter = -1;
            b->scratch.abandon();
            break;
        }
        std::this_thread::yield();
    }
    delete b;
}

}  // extern "C"
