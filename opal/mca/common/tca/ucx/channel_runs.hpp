// channel_runs.hpp - a DMA channel's started runs on a device that issues
// descriptors in software on whichever thread comes by (the ucx device: the
// starting thread, a waiting one, the progress thread), not on an engine of
// its own.  Runs go in order, each to its end; a triggered descriptor
// (tcaDescSetTrigger) holds its run, and the runs behind it, until its local
// counter reaches value + epoch * step, the epoch being the number of starts
// since the chain was loaded (tca.h).  Pure bookkeeping: the caller issues
// the descriptors and reads the counters, under its own lock of the channel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "model/descriptor.hpp"
#include "model/result.hpp"
#include "model/timing_model.hpp"

namespace tca::ucx {

class ChannelRuns {
public:
    // What a run keeps for the caller's issue function between descriptors.
    struct RunState {
        bool wrote = false;  // a descriptor of this run wrote to another node (the next one fences)
        bool clock_started = false;
        bool table_mode = false;  // the chain is longer than the registers hold (timing model)
        ChainClock clock;         // the timing model's clock of this run
    };

    // The chain later starts run; runs started before keep theirs, and epochs
    // count from 0 again.
    void load(std::span<const Descriptor> chain) {
        loaded_ = std::make_shared<const std::vector<Descriptor>>(chain.begin(), chain.end());
        starts_ = 0;
    }
    bool loaded() const noexcept { return loaded_ != nullptr; }
    // A run of the loaded chain, behind those started before.  The caller
    // checked loaded().
    void start() {
        RunState state;
        state.table_mode = loaded_->size() > TCA_MAX_REG_DESCRIPTORS;
        queue_.push_back(Run{loaded_, starts_++, 0, state});
    }
    bool idle() const noexcept { return queue_.empty(); }
    size_t queued() const noexcept { return queue_.size(); }

    // Issues every descriptor that may go now, in order: stops at a trigger
    // whose counter is short.  issue(const Descriptor &, RunState &) and
    // read_counter(int id, uint64_t *value) return a Result; an error ends
    // its run (the runs behind it go on) and is kept for take_result.
    // Returns whether anything was issued or ended.
    template <class Issue, class ReadCounter>
    bool pump(Issue &&issue, ReadCounter &&read_counter) {
        bool moved = false;
        while (!queue_.empty()) {
            Run &run = queue_.front();
            const std::vector<Descriptor> &chain = *run.chain;
            Result failed = tcaSuccess;
            while (run.next < chain.size()) {
                const Descriptor &d = chain[run.next];
                if (d.wait_counter >= 0) {
                    uint64_t now = 0;
                    // A counter that changed hands can never fire the trigger.
                    if ((failed = read_counter(d.wait_counter, &now)) != tcaSuccess)
                        break;
                    if (now < d.trigger_threshold(run.epoch))
                        return moved;
                }
                if ((failed = issue(d, run.state)) != tcaSuccess)
                    break;
                ++run.next;
                moved = true;
            }
            if (failed != tcaSuccess && result_ == tcaSuccess)
                result_ = failed;
            queue_.pop_front();
            moved = true;
        }
        return moved;
    }

    // tcaAbortDMAC: the runs not yet finished are dropped (their descriptors
    // not yet issued never are); they count as started, so later starts
    // number their epochs on.
    void abort() noexcept { queue_.clear(); }

    // The first error of the runs since the last call, then success again.
    Result take_result() noexcept {
        const Result r = result_;
        result_ = tcaSuccess;
        return r;
    }

private:
    struct Run {
        std::shared_ptr<const std::vector<Descriptor>> chain;
        uint64_t epoch = 0;
        size_t next = 0;  // the next descriptor to issue
        RunState state;
    };
    std::shared_ptr<const std::vector<Descriptor>> loaded_;
    uint64_t starts_ = 0;
    std::deque<Run> queue_;
    Result result_ = tcaSuccess;
};

}  // namespace tca::ucx
