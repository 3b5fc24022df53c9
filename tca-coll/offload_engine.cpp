// offload_engine.cpp - the broadcast as one triggered descriptor program per
// rank, built at init.  Per epoch k the device itself:
//   root:     waits until ready >= nchildren*(k+1), then writes every segment
//             to every child, adding 1 to the child's data counter each time;
//   interior: a gate descriptor waits for its children's ready, then segment
//             s is forwarded as soon as data >= s+1 + k*segments;
//   leaf:     no program; done when data >= segments*(k+1).
// MPI_Start only signals the parent and starts the channel.
#include <memory>

#include "bcast_engine.hpp"

namespace tca::coll {

size_t offload_max_segments(size_t children) {
    if (children == 0) return 1u << 30;
    return (TCA_MAX_DESCRIPTORS - 1) / children;  // one descriptor for the gate
}

namespace {

class OffloadEngine final : public BcastEngine {
public:
    explicit OffloadEngine(const EngineSetup &s) : s_(s) {}
    ~OffloadEngine() override {
        if (desc_) tcaDescFree(desc_);
        if (gate_) {
            tcaDestroyHandle(&gate_handle_);
            tcaFree(gate_, tcaMemoryCPU);
        }
    }

    tcaResult build() {
        const BcastPlan &p = *s_.plan;
        const bool root = p.roles[static_cast<size_t>(s_.rank)].parent < 0;
        const size_t nch = s_.children.size();
        if (nch == 0 || p.segments == 0) return tcaSuccess;  // leaf, or nothing to send
        if (p.segments > offload_max_segments(nch)) return tcaErrorTooManyDescriptors;
        desc_ = tcaDescNew();
        if (desc_ == nullptr) return tcaErrorNoMemory;
        tcaResult r = tcaSuccess;
        if (!root) {
            // The gate: a 1-byte copy inside our own scratch that waits for the children.
            if ((r = tcaMalloc(&gate_, 64, tcaMemoryCPU)) != tcaSuccess) return r;
            if ((r = tcaCreateHandle(&gate_handle_, gate_, 64, tcaMemoryCPU)) != tcaSuccess) return r;
            if ((r = tcaDescSetMemcpy(desc_, &gate_handle_, 32, &gate_handle_, 0, 1, tcaDMAUseInternal, 0, 0)) != tcaSuccess)
                return r;
            if ((r = tcaDescSetTrigger(desc_, s_.ready_counter, s_.ready_base + nch, nch)) != tcaSuccess) return r;
        }
        tcaHandle mine = s_.buffer_handle;
        for (size_t seg = 0; seg < p.segments; ++seg) {
            const off_t off = static_cast<off_t>(p.segment_offset(seg));
            for (size_t c = 0; c < nch; ++c) {
                Neighbour child = s_.children[c];
                if ((r = tcaDescSetMemcpy(desc_, &child.buffer, off, &mine, off, p.segment_length(seg),
                                          tcaDMAUseInternal, 0, 0)) != tcaSuccess)
                    return r;
                if ((r = tcaDescSetCounterAdd(desc_, child.data_counter, 1)) != tcaSuccess) return r;
                if (c == 0) {
                    if (root && seg == 0) r = tcaDescSetTrigger(desc_, s_.ready_counter, s_.ready_base + nch, nch);
                    else if (!root) r = tcaDescSetTrigger(desc_, s_.data_counter, s_.data_base + seg + 1, p.segments);
                    if (r != tcaSuccess) return r;
                }
            }
        }
        return tcaDescSet(desc_, s_.channel);
    }

    tcaResult start() override {
        ++epoch_;
        const bool root = s_.plan->roles[static_cast<size_t>(s_.rank)].parent < 0;
        if (!root && s_.plan->segments > 0) {
            const tcaResult r = tcaCounterAddRemote(s_.parent.node, s_.parent.ready_counter, 1);
            if (r != tcaSuccess) return r;
        }
        if (desc_) return tcaStartDMADesc(s_.channel);
        return tcaSuccess;
    }

    tcaResult test() override {
        // A rank that polls for completion lends its thread to the emulated
        // engine (on hardware a no-op): no wake-up of the engine thread per hop.
        tcaProgress(nullptr);
        if (desc_) {
            int done = 0;
            const tcaResult r = tcaTestDMAC(s_.channel, &done);
            if (r != tcaSuccess) return r;
            if (!done) return tcaErrorNotReady;
        }
        const bool root = s_.plan->roles[static_cast<size_t>(s_.rank)].parent < 0;
        if (!root && !desc_ && s_.plan->segments > 0) {  // a leaf: count the landed segments
            uint64_t landed = 0;
            const tcaResult r = tcaCounterRead(s_.data_counter, &landed);
            if (r != tcaSuccess) return r;
            if (landed - s_.data_base < s_.plan->segments * epoch_) return tcaErrorNotReady;
        }
        return tcaSuccess;
    }

private:
    EngineSetup s_;
    tcaDesc *desc_ = nullptr;
    void *gate_ = nullptr;
    tcaHandle gate_handle_{};
    uint64_t epoch_ = 0;
};

}  // namespace

tcaResult make_offload_engine(const EngineSetup &setup, std::unique_ptr<BcastEngine> *out) {
    if (setup.plan == nullptr || out == nullptr) return tcaErrorInvalidValue;
    if (!setup.children.empty() && (setup.channel < 0 || setup.channel >= TCA_NUM_DMA_CHANNELS))
        return tcaErrorInvalidChannel;
    auto e = std::make_unique<OffloadEngine>(setup);
    if (const tcaResult r = e->build(); r != tcaSuccess) return r;
    *out = std::move(e);
    return tcaSuccess;
}

}  // namespace tca::coll
