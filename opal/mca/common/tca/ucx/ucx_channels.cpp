// ucx_channels.cpp - DMA channels issued in software: a started run goes
// out on the starting thread up to its first trigger whose counter is short,
// the rest from whichever thread comes by once the counter moves (a wait,
// tcaProgress, the progress thread: pump_channels).  The bookkeeping of runs
// and triggers: channel_runs.hpp.
#include "ucx/ucx_device.hpp"

namespace tca::ucx {

Result UcxDevice::load_chain(int channel, std::span<const Descriptor> chain) {
    if (channel < 0 || channel >= TCA_NUM_DMA_CHANNELS)
        return tcaErrorInvalidChannel;
    if (chain.size() > TCA_MAX_DESCRIPTORS)
        return tcaErrorTooManyDescriptors;
    for (const Descriptor &desc : chain)
        if (Result r = validate(desc); r != tcaSuccess)
            return r;
    Channel &ch = channels_[channel];
    const ChannelHold g(ch);
    ch.runs.load(chain);
    return tcaSuccess;
}

// The sources of what a start issued are reusable when it returns.
// wait_channel flushes the endpoints written to, so a finished wait means
// visible at every target; programs that wait for notifications instead
// (most published ones) pay no round trip per start.  The first error of
// the runs not yet waited for is kept.
Result UcxDevice::start_channel(int channel) {
    if (channel < 0 || channel >= TCA_NUM_DMA_CHANNELS)
        return tcaErrorInvalidChannel;
    Channel &ch = channels_[channel];
    const ChannelHold g(ch);
    if (!ch.runs.loaded())
        return tcaErrorEmptyChain;
    ch.runs.start();
    pump(ch, true);
    return tcaSuccess;
}

// Waits for the runs started before (issuing what their triggers let go),
// then flushes, blocking or not, to its end (bounded by TCA_TIMEOUT_MS): one
// round trip per endpoint written since the last wait.
Result UcxDevice::wait_channel(int channel, bool block) {
    if (channel < 0 || channel >= TCA_NUM_DMA_CHANNELS)
        return tcaErrorInvalidChannel;
    Channel &ch = channels_[channel];
    return wait_for(
        [&]() -> Result {
            const ChannelHold g(ch);
            pump(ch);
            if (!ch.runs.idle())
                return tcaErrorNotReady;
            const Result flushed = flush(ch.unflushed, deadline());
            ch.unflushed.clear();
            const Result r = ch.runs.take_result();
            return r != tcaSuccess ? r : flushed;
        },
        block);
}

// Runs waiting on their triggers are dropped; what was issued stays.
Result UcxDevice::abort_channel(int channel) {
    if (channel < 0 || channel >= TCA_NUM_DMA_CHANNELS)
        return tcaErrorInvalidChannel;
    Channel &ch = channels_[channel];
    const ChannelHold g(ch);
    ch.runs.abort();
    note_waiting(ch);
    return tcaSuccess;
}

// Runs waiting for their triggers, from any thread's progress (the handlers
// of remote counter adds must not call UCX): each channel whose lock is
// free.  Not from a thread that holds a channel (it is issuing).
bool UcxDevice::pump_channels() {
    if (waiting_channels_.load(std::memory_order_acquire) == 0 || holding_channel > 0)
        return false;
    bool moved = false;
    for (Channel &ch : channels_) {
        const ChannelHold g(ch, std::try_to_lock);
        if (g.owns() && !ch.runs.idle())
            moved |= pump(ch);
    }
    return moved;
}

// Issues what the channel's runs may issue now (its lock held).  A run that
// ends is an event of the node, as a channel completion is on the loopback -
// but not the run a start has just issued whole on its own thread (every DMA
// put of btl tca would wake the session's sleeper).
bool UcxDevice::pump(Channel &ch, bool starting) {
    const size_t before = ch.runs.queued();
    const bool moved =
        ch.runs.pump([&](const Descriptor &desc,
                         ChannelRuns::RunState &run) { return issue(desc, run, &ch.unflushed); },
                     [&](int id, uint64_t *value) { return counter_now(id, value); });
    size_t ended = before - ch.runs.queued();
    if (starting && ch.runs.idle() && ended > 0)
        --ended;  // the started run is the last of the queue
    if (ended > 0)
        event();
    note_waiting(ch);
    return moved;
}

void UcxDevice::note_waiting(Channel &ch) {
    const bool waiting = !ch.runs.idle();
    if (waiting == ch.counted)
        return;
    ch.counted = waiting;
    waiting_channels_.fetch_add(waiting ? 1 : -1, std::memory_order_acq_rel);
}

// One descriptor of a run: its modelled time, its data, notifications, then
// its counter add at the destination (behind the data, as on the loopback).
Result UcxDevice::issue(const Descriptor &desc, ChannelRuns::RunState &run,
                        std::vector<int> *written) {
    if (timing_.enabled) {
        if (!run.clock_started)
            run.clock.start(timing_, now_ns(), run.table_mode);
        run.clock_started = true;
        const DescriptorCost cost =
            DescriptorCost::of(desc, topo_.hops(self_, desc.dst.node), run.table_mode);
        spin_until_ns(run.clock.next(timing_, cost).done_ns);
    }
    const bool remote_data = desc.dst.node != self_ && desc.bytes() > 0;
    const Deadline d = deadline();
    if (desc.add_counter >= 0 && remote_data && desc.height == 1 && desc.width <= kAmPioMax &&
        !desc.notifies()) {
        // One eager message behind a fence, the count added once the data is
        // in (as tcaPioWriteCounterAdd): as a row and a separate add, a
        // segment went by UCX's rendezvous, a round trip each that waits for
        // the target to be scheduled.
        unsigned char *src = nullptr;
        if (Result r = regs_.local(desc.src, &src); r != tcaSuccess)
            return r;
        note_written(desc.dst.node, written);
        run.wrote = true;
        return write(desc.dst, desc.dst_off, src + desc.src_off, desc.width, 1, 0, desc.width, true,
                     d, {.counter = desc.add_counter, .add = desc.add_value});
    }
    // Descriptor k's data lands before descriptor k+1's (published programs
    // poll a sequence number written after a packet): puts are unordered in
    // UCX (several lanes on a real fabric), so a fence between them.
    if (run.wrote && remote_data) {
        Endpoint *ep = nullptr;
        if (Result r = peers_.endpoint(desc.dst.node, &ep); r != tcaSuccess)
            return r;
        if (Result r = ep->fence(); r != tcaSuccess)
            return r;
    }
    if (Result r = run_descriptor(desc, d, written); r != tcaSuccess)
        return r;
    run.wrote |= remote_data;
    if (desc.add_counter >= 0)
        return counter_add_remote(desc.dst.node, desc.add_counter, desc.add_value);
    return tcaSuccess;
}

}  // namespace tca::ucx
