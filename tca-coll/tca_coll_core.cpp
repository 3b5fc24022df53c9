// tca_coll_core.cpp - the C entry points of coll tca's core: plan, buffer
// registration, counter and channel allocation, engine.  Counters 128..255
// and DMA channels 1..3 belong to coll tca (channel 0 is btl tca's).
#include "tca_coll_core.h"

#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "bcast_engine.hpp"

using namespace tca::coll;

namespace {

constexpr int kFirstCounter = 128;
constexpr int kFirstChannel = 1;

struct Resources {
    std::mutex lock;
    std::vector<bool> counter_used = std::vector<bool>(TCA_NUM_COUNTERS, false);
    bool channel_used[TCA_NUM_DMA_CHANNELS] = {};

    int take_counter() {
        std::lock_guard g(lock);
        for (int c = kFirstCounter; c < TCA_NUM_COUNTERS; ++c)
            if (!counter_used[static_cast<size_t>(c)]) {
                counter_used[static_cast<size_t>(c)] = true;
                return c;
            }
        return -1;
    }
    void give_counter(int c) {
        std::lock_guard g(lock);
        if (c >= 0) counter_used[static_cast<size_t>(c)] = false;
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

struct tca_coll_bcast {
    BcastPlan plan;
    EngineSetup setup;
    int wanted_engine = TCA_COLL_ENGINE_OFFLOAD;
    int engine_kind = -1;
    std::unique_ptr<BcastEngine> engine;
    bool registered = false;

    ~tca_coll_bcast() {
        engine.reset();
        if (registered) tcaDestroyHandle(&setup.buffer_handle);
        resources().give_counter(setup.data_counter);
        resources().give_counter(setup.ready_counter);
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
    PlanParams pp{p->root, p->bytes, p->segment_bytes, p->chain_threshold, offload_max_segments(1)};
    b->plan = plan_bcast(pp, std::span<const int>(p->node_of, static_cast<size_t>(p->size)), ring > 0 ? ring : 1);

    b->wanted_engine = p->engine;
    EngineSetup &s = b->setup;
    s.plan = &b->plan;
    s.rank = p->rank;
    s.buffer = static_cast<unsigned char *>(p->buffer);
    s.data_counter = resources().take_counter();
    s.ready_counter = resources().take_counter();
    if (s.data_counter < 0 || s.ready_counter < 0) {
        *err = tcaErrorInvalidCounter;
        delete b;
        return nullptr;
    }
    // Counters only grow: remember where this request starts.  Nobody else
    // knows these counters yet, so nothing can be on its way to them.
    if (tcaCounterRead(s.data_counter, &s.data_base) != tcaSuccess ||
        tcaCounterRead(s.ready_counter, &s.ready_base) != tcaSuccess) {
        *err = tcaErrorNotInitialized;
        delete b;
        return nullptr;
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
    *mine = tca_coll_peer_info_t{s.buffer_handle, node, s.data_counter, s.ready_counter, 0};
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
    if (tca_coll_bcast_parent(b) >= 0 && parent != nullptr)
        s.parent = Neighbour{parent->node, parent->buffer, parent->data_counter, parent->ready_counter};
    s.children.clear();
    for (int i = 0; i < tca_coll_bcast_num_children(b); ++i)
        s.children.push_back(Neighbour{children[i].node, children[i].buffer, children[i].data_counter,
                                       children[i].ready_counter});
    if (b->wanted_engine == TCA_COLL_ENGINE_OFFLOAD) {
        if (!s.children.empty()) s.channel = resources().take_channel();
        if (s.children.empty() || s.channel >= 0) {
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
void tca_coll_bcast_free(tca_coll_bcast_t *b) { delete b; }

}  // extern "C"
