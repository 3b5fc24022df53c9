// offload_engine.cpp - the broadcast as one triggered descriptor program per
// rank, built at init.
//
// Direct protocol, per epoch k the device itself:
//   root:     waits until ready >= nchildren*(k+1), then writes every segment
//             to every child, adding 1 to the child's data counter each time;
//   interior: a gate descriptor waits for its children's ready, then segment
//             s is forwarded as soon as data >= s+1 + k*segments;
//   leaf:     no program; done when data >= segments*(k+1).
// MPI_Start only signals the parent and starts the channel.
//
// Staged protocol: one run of the program covers E = plan.epochs_per_run
// epochs of S segments, one block of descriptors per segment; block b uses
// slot b mod K (one-segment plans: E = K; chains: E = 1, K divides S):
//   root:     (first segment of an epoch e) gate on go >= e+1; write the
//             segment into every child's slot (each write waits for that
//             child's credit >= b+1), from its own slot b mod K where it has
//             one (has_staging_area: a GPU buffer, read once per block);
//   non-root: gate on data >= b+1; forward the slot to every child likewise;
//             copy the slot into the buffer once go >= e+1; after every
//             plan.credit_batch-th block, add that many to our credit
//             counter at the parent (the rest when the request is freed);
//   both:     (last segment of an epoch) add 1 to done.
// Thresholds move by S*E (blocks) or E (epochs) per run.  MPI_Start adds 1 to
// go (a local store) and, every E epochs, starts the next run; completion is
// done >= k+1.
#include <memory>

#include "bcast_engine.hpp"

namespace tca::coll {

size_t offload_max_segments(size_t children) {
    if (children == 0)
        return 1u << 30;
    return (TCA_MAX_DESCRIPTORS - 1) / children;  // one descriptor for the gate
}

namespace {

// Scratch layout: credit writes from children land at 0; gates copy 16 -> 32.
constexpr off_t kCreditLanding = 0, kGateSource = 16, kGateTarget = 32;

class OffloadEngine final : public BcastEngine {
public:
    explicit OffloadEngine(const EngineSetup &s)
        : s_(s), root_(s.plan->roles[static_cast<size_t>(s.rank)].parent < 0) {}
    ~OffloadEngine() override {
        if (!desc_)
            return;
        // A staged run spans K epochs: its descriptors for epochs that will
        // never be started still wait on triggers.  Stop it before the
        // counters and memory they name go to another request.
        // The wait takes the dropped runs' tcaErrorAborted, which would
        // otherwise greet the channel's next user.
        if (loaded_ && tcaAbortDMAC(s_.channel) == tcaSuccess)
            (void) tcaWaitDMAC(s_.channel);
        tcaDescFree(desc_);
    }

    tcaResult build() {
        if (!offload_needs_channel(*s_.plan, s_.rank))
            return tcaSuccess;  // leaf of a direct plan, or empty
        desc_ = tcaDescNew();
        if (desc_ == nullptr)
            return tcaErrorNoMemory;
        tcaResult r = s_.plan->slots > 0 ? build_staged() : build_direct();
        if (r == tcaSuccess && (r = tcaDescSet(desc_, s_.channel)) == tcaSuccess)
            loaded_ = true;
        return r;
    }

    tcaResult start() override {
        ++epoch_;
        return s_.plan->slots > 0 ? start_staged() : start_direct();
    }

    tcaResult test() override {
        // A rank that polls for completion lends its thread to the emulated
        // engine (on hardware a no-op): no wake-up of the engine thread per hop.
        tcaProgress(nullptr);
        return s_.plan->slots > 0 ? test_staged() : test_direct();
    }

    uint64_t epochs() const override { return epoch_; }

private:
    // ---- direct protocol ----
    tcaResult build_direct() {
        const BcastPlan &p = *s_.plan;
        const size_t nch = s_.children.size();
        if (p.segments > offload_max_segments(nch))
            return tcaErrorTooManyDescriptors;
        tcaResult r = tcaSuccess;
        if (!root_) {  // the gate: waits for the children's ready
            if ((r = gate(s_.ready.index, s_.ready.base + nch, nch)) != tcaSuccess)
                return r;
        }
        tcaHandle mine = s_.buffer_handle;
        for (size_t seg = 0; seg < p.segments; ++seg) {
            const off_t off = static_cast<off_t>(p.segment_offset(seg));
            for (size_t c = 0; c < nch; ++c) {
                Neighbour child = s_.children[c];
                if ((r = tcaDescSetMemcpy(
                         desc_, &child.buffer, off + static_cast<off_t>(child.buffer_offset), &mine,
                         off + static_cast<off_t>(s_.buffer_offset), p.segment_length(seg),
                         tcaDMAUseInternal, 0, 0)) != tcaSuccess)
                    return r;
                if ((r = tcaDescSetCounterAdd(desc_, child.data_counter, 1)) != tcaSuccess)
                    return r;
                if (c == 0) {
                    if (root_ && seg == 0)
                        r = tcaDescSetTrigger(desc_, s_.ready.index, s_.ready.base + nch, nch);
                    else if (!root_)
                        r = tcaDescSetTrigger(desc_, s_.data.index, s_.data.base + seg + 1,
                                              p.segments);
                    if (r != tcaSuccess)
                        return r;
                }
            }
        }
        return tcaSuccess;
    }

    tcaResult start_direct() {
        if (!root_ && s_.plan->segments > 0)
            if (const tcaResult r = tcaCounterAddRemote(s_.parent.node, s_.parent.ready_counter, 1);
                r != tcaSuccess)
                return r;
        return desc_ ? tcaStartDMADesc(s_.channel) : tcaSuccess;
    }

    tcaResult test_direct() {
        if (desc_)
            return channel_done();
        if (!root_ && s_.plan->segments > 0) {  // a leaf: count the landed segments
            uint64_t landed = 0;
            if (const tcaResult r = counter_moved(s_.data, &landed); r != tcaSuccess)
                return r;
            if (landed < s_.plan->segments * epoch_)
                return tcaErrorNotReady;
        }
        return tcaSuccess;
    }

    // ---- staged protocol ----
    // Block b of a run: segment b mod S of the run's epoch b / S, in slot
    // b mod K of the child.  Data and credit thresholds count blocks (B per
    // run), go and done count epochs (E per run).
    tcaResult build_staged() {
        const BcastPlan &p = *s_.plan;
        const uint64_t blocks = p.blocks_per_run(), epochs = p.epochs_per_run;
        tcaHandle mine = s_.buffer_handle, staging = s_.staging_handle, scratch = s_.scratch_handle;
        tcaResult r = tcaSuccess;
        for (uint64_t b = 0; b < blocks; ++b) {
            const uint64_t epoch = b / p.segments, seg = b % p.segments;
            const off_t slot = static_cast<off_t>(b % p.slots * p.slot_stride);
            const off_t at = static_cast<off_t>(s_.buffer_offset + p.segment_offset(seg));
            const size_t len = p.segment_length(seg);
            const bool last = seg + 1 == p.segments;
            if (root_ ? seg == 0 &&
                            (r = gate(s_.go.index, s_.go.base + epoch + 1, epochs)) != tcaSuccess
                      : (r = gate(s_.data.index, s_.data.base + b + 1, blocks)) != tcaSuccess)
                return r;
            // A root with a staging area reads its buffer once per block.  The
            // program runs in order, so the forwards of block b are done
            // before block b + K overwrites the slot.
            const bool from_slot = !root_ || s_.staging != nullptr;
            if (root_ && from_slot &&
                (r = tcaDescSetMemcpy(desc_, &staging, slot, &mine, at, len, tcaDMAUseInternal, 0,
                                      0)) != tcaSuccess)
                return r;
            for (size_t c = 0; c < s_.children.size(); ++c) {
                Neighbour child = s_.children[c];
                if ((r = tcaDescSetMemcpy(desc_, &child.buffer, slot, from_slot ? &staging : &mine,
                                          from_slot ? slot : at, len, tcaDMAUseInternal, 0, 0)) !=
                        tcaSuccess ||
                    (r = tcaDescSetCounterAdd(desc_, child.data_counter, 1)) != tcaSuccess ||
                    (r = tcaDescSetTrigger(desc_, s_.credits[c].index, s_.credits[c].base + b + 1,
                                           blocks)) != tcaSuccess)
                    return r;
            }
            // The epoch is done once its last block has gone (the root: its
            // buffer has been read; a child: its credits are sent, so a request
            // freed right after its last epoch owes its parent only what
            // return_owed_credits sends).  A child's copy-out lands in its own
            // memory: "done" rides on it where no credit follows.
            bool done_added = false;
            if (!root_) {
                Neighbour parent = s_.parent;
                const int credit = credit_counter_at_parent(s_);
                const bool credits_due = p.credits_due_after(b);
                if ((r = tcaDescSetMemcpy(desc_, &mine, at, &staging, slot, len, tcaDMAUseInternal,
                                          0, 0)) != tcaSuccess ||
                    (r = tcaDescSetTrigger(desc_, s_.go.index, s_.go.base + epoch + 1, epochs)) !=
                        tcaSuccess)
                    return r;
                if (last && !credits_due) {
                    if ((r = tcaDescSetCounterAdd(desc_, s_.done.index, 1)) != tcaSuccess)
                        return r;
                    done_added = true;
                }
                if (credits_due &&
                    ((r = tcaDescSetMemcpy(desc_, &parent.scratch, kCreditLanding, &scratch,
                                           kGateSource, 1, tcaDMAUseInternal, 0, 0)) !=
                         tcaSuccess ||
                     (r = tcaDescSetCounterAdd(desc_, credit, p.credit_batch)) != tcaSuccess))
                    return r;
            }
            if (last && !done_added &&
                ((r = gate(-1, 0, 0)) != tcaSuccess ||
                 (r = tcaDescSetCounterAdd(desc_, s_.done.index, 1)) != tcaSuccess))
                return r;
        }
        return tcaSuccess;
    }

    tcaResult start_staged() {
        if (const tcaResult r = tcaCounterAdd(s_.go.index, 1); r != tcaSuccess)
            return r;
        if (!desc_ || (epoch_ - 1) % s_.plan->epochs_per_run != 0)
            return tcaSuccess;
        // A new run.  The last run's final descriptors (no triggers left) may
        // still be executing: the start queues behind them.
        return tcaStartDMADesc(s_.channel);
    }

    tcaResult test_staged() {
        uint64_t done = 0;
        if (const tcaResult r = counter_moved(s_.done, &done); r != tcaSuccess)
            return r;
        if (done >= epoch_)
            return tcaSuccess;
        // Not there yet: has the program failed?
        int finished = 0;
        const tcaResult r = tcaTestDMAC(s_.channel, &finished);
        return r == tcaSuccess ? tcaErrorNotReady : r;
    }

    tcaResult channel_done() {
        int done = 0;
        if (const tcaResult r = tcaTestDMAC(s_.channel, &done); r != tcaSuccess)
            return r;
        return done ? tcaSuccess : tcaErrorNotReady;
    }

    // A 1-byte copy inside our scratch: a descriptor that only waits (counter
    // >= 0), or only adds (counter < 0, the caller adds the counter update).
    tcaResult gate(int counter, uint64_t value, uint64_t step) {
        tcaHandle scratch = s_.scratch_handle;
        tcaResult r = tcaDescSetMemcpy(desc_, &scratch, kGateTarget, &scratch, kGateSource, 1,
                                       tcaDMAUseInternal, 0, 0);
        if (r == tcaSuccess && counter >= 0)
            r = tcaDescSetTrigger(desc_, counter, value, step);
        return r;
    }

    EngineSetup s_;
    const bool root_;
    tcaDesc *desc_ = nullptr;
    bool loaded_ = false;
    uint64_t epoch_ = 0;
};

}  // namespace

tcaResult make_offload_engine(const EngineSetup &setup, std::unique_ptr<BcastEngine> *out) {
    if (setup.plan == nullptr || out == nullptr)
        return tcaErrorInvalidValue;
    if (offload_needs_channel(*setup.plan, setup.rank) &&
        setup.channel < 0)  // an id of tcaChannelAcquire (libtca checks its holder on every use)
        return tcaErrorInvalidChannel;
    auto e = std::make_unique<OffloadEngine>(setup);
    if (const tcaResult r = e->build(); r != tcaSuccess)
        return r;
    *out = std::move(e);
    return tcaSuccess;
}

}  // namespace tca::coll
