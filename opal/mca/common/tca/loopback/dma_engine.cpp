// dma_engine.cpp - chain execution.  Data first, then notifications and
// counter updates, so a notification is never seen before its data.
#include "loopback/dma_engine.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>

#include "loopback/byte_copy.hpp"
#include "model/owned_id.hpp"

namespace tca::loopback {

namespace {
// The timing model's delivery.  A transfer lands in pieces (whole rows of at
// most 16 KiB of host memory, 1 MiB where GPU memory is at either end); each
// piece should be fully visible at the modelled arrival of its last byte, so
// its copy starts as long before as the copies before it took (a running
// estimate per byte, one for each kind of copy) - but never before the
// modelled arrival of its first byte: no byte is visible early.  The caller's
// notification follows at the modelled end, whatever the copies took.
// A GPU copy is a CUDA copy and a stream wait, a fixed cost whatever its
// size: in 16 KiB pieces those costs alone took B1 from 32 KiB up far past
// its modelled time, so GPU pieces are large.
constexpr uint64_t kHostPiece = 16 * 1024;
constexpr uint64_t kGpuPiece = 1024 * 1024;
std::atomic<int64_t> g_copy_ps_per_byte[2] = {200, 200};  // [gpu]: 5 GB/s to start with

Result write_piece(RemoteWriter &w, const tcaHandle &dst, const RowCopy &part, bool gpu,
                   int64_t earliest, int64_t visible_at, const PutBound &bound) {
    std::atomic<int64_t> &estimate = g_copy_ps_per_byte[gpu ? 1 : 0];
    const uint64_t bytes = part.width * part.height;
    const int64_t lead =
        static_cast<int64_t>(bytes) * estimate.load(std::memory_order_relaxed) / 1000;
    spin_until_ns(std::max(earliest, visible_at - lead));
    const int64_t t0 = now_ns();
    const Result r = w.write(dst, part, bound);
    if (bytes >= 4096) {  // small copies say more about the call than the copy
        const int64_t ps =
            std::clamp<int64_t>((now_ns() - t0) * 1000 / static_cast<int64_t>(bytes), 20, 5000);
        const int64_t est = estimate.load(std::memory_order_relaxed);
        estimate.store((7 * est + ps) / 8, std::memory_order_relaxed);
    }
    return r;
}

Result paced_write(RemoteWriter &w, const tcaHandle &dst, const RowCopy &c, bool gpu,
                   ChainClock::Window win, const PutBound &bound) {
    const uint64_t piece = gpu ? kGpuPiece : kHostPiece;
    const uint64_t total = c.width * c.height;
    const double span = static_cast<double>(win.done_ns - win.first_byte_ns);
    auto arrived = [&](uint64_t bytes) {  // the modelled time the first `bytes` have landed
        return win.first_byte_ns +
               static_cast<int64_t>(span * static_cast<double>(bytes) / static_cast<double>(total));
    };
    if (total == 0) {
        if (Result r = write_piece(w, dst, c, gpu, win.first_byte_ns, win.first_byte_ns, bound);
            r != tcaSuccess)
            return r;
    } else if (c.height <= 1) {
        for (uint64_t at = 0; at < total; at += piece) {
            const uint64_t n = std::min(piece, total - at);
            const RowCopy part{c.src + at, n, c.dst_off + at, n, n, 1, c.src_on_gpu, c.streaming};
            if (Result r = write_piece(w, dst, part, gpu, arrived(at), arrived(at + n), bound);
                r != tcaSuccess)
                return r;
        }
    } else {
        const uint64_t rows = std::max<uint64_t>(1, piece / c.width);
        for (uint64_t row = 0; row < c.height; row += rows) {
            const uint64_t n = std::min(rows, c.height - row);
            const RowCopy part{c.src + row * c.src_pitch,
                               c.src_pitch,
                               c.dst_off + row * c.dst_pitch,
                               c.dst_pitch,
                               c.width,
                               n,
                               c.src_on_gpu,
                               c.streaming};
            if (Result r = write_piece(w, dst, part, gpu, arrived(row * c.width),
                                       arrived((row + n) * c.width), bound);
                r != tcaSuccess)
                return r;
        }
    }
    spin_until_ns(win.done_ns);
    return tcaSuccess;
}
}  // namespace

DmaEngine::DmaEngine(NodeSet &nodes, RemoteWriter &writer, NotificationSender &sender,
                     const Topology &topo, const TimingModel &timing, VirtualStamps &stamps,
                     SourceResolver resolve, uint64_t streaming_min)
    : nodes_(nodes), streaming_min_(streaming_min > 0 ? streaming_min : streaming_threshold()),
      writer_(writer), sender_(sender), topo_(topo), timing_(timing), stamps_(stamps),
      resolve_(std::move(resolve)) {}

void DmaEngine::start_clock(ChainClock &c, const Channel &ch, const Chain &chain,
                            int64_t vt_start) const noexcept {
    if (!timing_.enabled)
        return;
    if (stamps_.on())
        c.start(timing_, std::max(vt_start, ch.vt_done.load(std::memory_order_acquire)),
                !chain.register_mode);
    else
        c.start(timing_, now_ns(), !chain.register_mode);
}

DmaEngine::~DmaEngine() {
    stop_thread();
}

Result DmaEngine::start_thread() {
    std::promise<Result> locked;
    auto fut = locked.get_future();
    thread_ = std::thread([this, &locked] {
        // The engine thread holds the robust alive lock for the node's whole
        // life: if the process dies, peers see EOWNERDEAD.
        const int rc = pthread_mutex_lock(&nodes_.own().header()->alive_lock);
        if (rc == EOWNERDEAD)
            pthread_mutex_consistent(&nodes_.own().header()->alive_lock);
        locked.set_value(rc == 0 || rc == EOWNERDEAD ? tcaSuccess : tcaErrorSystem);
        run();
        pthread_mutex_unlock(&nodes_.own().header()->alive_lock);
    });
    return fut.get();
}

void DmaEngine::stop_thread() {
    if (!thread_.joinable())
        return;
    stop_.store(true, std::memory_order_release);
    interrupt_.fetch_add(1, std::memory_order_acq_rel);  // a bounce wait in the thread gives up
    nodes_.own().header()->engine_event.wake_all();
    thread_.join();
}

Result DmaEngine::load(int channel, std::span<const Descriptor> chain) {
    Channel &ch = channels_[static_cast<size_t>(channel)];
    std::lock_guard g(ch.app_lock);
    // Runs hold a chain until they complete (completed counts them in start
    // order, and is raised after the scanner's last look at the chain).
    const uint64_t completed = ch.completed.load(std::memory_order_acquire);
    Chain *c = nullptr;
    for (const auto &free : ch.chains)
        if (free->last_run <= completed) {
            c = free.get();
            break;
        }
    if (c == nullptr)
        c = ch.chains.emplace_back(std::make_unique<Chain>()).get();  // all in use by queued runs
    c->descs.assign(chain.begin(), chain.end());
    c->register_mode = chain.size() <= TCA_MAX_REG_DESCRIPTORS;
    uint64_t bytes = 0, total = 0;
    bool triggered = false;
    for (const Descriptor &d : chain) {
        bytes +=
            std::min<uint64_t>(d.bytes(), kInlineMaxBytes + 1);  // no overflow over 255 descriptors
        total += std::min<uint64_t>(d.bytes(), streaming_min_);
        triggered |= d.wait_counter >= 0;
    }
    c->run_inline = !triggered && bytes <= kInlineMaxBytes;
    c->streaming = total >= streaming_min_;
    ch.loaded = c;  // queued runs keep the chain they were started with
    ch.starts_since_load = 0;
    return tcaSuccess;
}

Result DmaEngine::start(int channel) {
    Channel &ch = channels_[static_cast<size_t>(channel)];
    std::lock_guard g(ch.app_lock);
    if (!ch.loaded)
        return tcaErrorEmptyChain;  // nothing was ever loaded here
    const uint64_t epoch = ch.starts_since_load++;
    // Idle: nothing queued, and no other starter (app_lock), so nothing can
    // overtake an inline run.  With the timing model on too: the model's
    // delays are then spun on the starting thread (a few us for a chain
    // short enough to run inline), because a queued run waits for the
    // engine thread's nap (up to 200 us) - a chain restarted while no thread
    // of ours waits in libtca (a broadcast's forwarding hop) would land that
    // late, and at 16 ranks such hops add up far beyond the model.
    const uint64_t number = ch.started.load(std::memory_order_relaxed) + 1;
    ch.loaded->last_run = number;
    const bool idle = number - 1 == ch.completed.load(std::memory_order_acquire);
    if (idle && ch.loaded->run_inline) {
        run_inline(ch, *ch.loaded, epoch);
        return tcaSuccess;
    }
    ch.queue.push(Run{ch.loaded, epoch, 0, stamps_.now_ns()});
    ch.started.store(number, std::memory_order_release);
    nodes_.own().header()->engine_event.notify();
    return tcaSuccess;
}

// Counted as a run (a wait of another thread waits for it) but never queued:
// the scanner finds the queue empty and leaves the channel alone.  A start
// does not wait on a peer: if the target's engine does not take a bounce
// copy within kInlinePatienceNs (stopped, or just slow), the rest of the run,
// from the descriptor that did not finish, goes to the queue.
void DmaEngine::run_inline(Channel &ch, const Chain &chain, uint64_t epoch) {
    const uint64_t number = ch.started.load(std::memory_order_relaxed) + 1;
    ch.started.store(number, std::memory_order_relaxed);
    const PutBound bound = PutBound::from_first_wait(
        std::min(kInlinePatienceNs, nodes_.policy().timeout_ns), &interrupt_);
    ChainClock clock;  // the model's clock starts with the start, as the hardware's chain does
    const int64_t vt_start = stamps_.now_ns();
    start_clock(clock, ch, chain, vt_start);
    Result r = tcaSuccess;
    size_t i = 0;
    for (; i < chain.descs.size() && r == tcaSuccess; ++i) {
        r = execute(chain.descs[i], &clock, bound);
        if (r == tcaErrorTimeout) {
            ch.queue.push(Run{&chain, epoch, i, vt_start});
            nodes_.own().header()->engine_event.notify();
            return;
        }
        if (r != tcaSuccess)
            report_failure(r, i);
    }
    if (r != tcaSuccess)
        record_error(ch, number, number, r);
    if (stamps_.on())
        ch.vt_done.store(std::max(ch.vt_done.load(std::memory_order_relaxed), clock.last_done_ns()),
                         std::memory_order_release);
    ch.completed.fetch_add(1, std::memory_order_release);
    nodes_.own().header()->app_event.notify();
}

void DmaEngine::record_error(Channel &ch, uint64_t first, uint64_t last, Result r) {
    std::lock_guard g(ch.error_lock);
    ch.errors.push_back(RunError{first, last, r});
    if (ch.errors.size() > kKeptErrors)
        ch.errors.pop_front();
    if (last > ch.errors_upto.load(std::memory_order_relaxed))
        ch.errors_upto.store(last, std::memory_order_release);
}

// The first error among runs (after, upto], or tcaSuccess.
Result DmaEngine::run_error(Channel &ch, uint64_t after, uint64_t upto) {
    std::lock_guard g(ch.error_lock);
    for (const RunError &e : ch.errors)
        if (e.last > after && e.first <= upto)
            return e.result;
    return tcaSuccess;
}

Result DmaEngine::wait(int channel, bool block) {
    Channel &ch = channels_[static_cast<size_t>(channel)];
    // Runs started later (by another thread) are not ours to wait for.
    const uint64_t target = ch.started.load(std::memory_order_acquire);
    // Errors of runs that a wait returned before this one began are said.
    const uint64_t reported = ch.reported.load(std::memory_order_acquire);
    auto done = [&] { return ch.completed.load(std::memory_order_acquire) >= target; };
    if (!done()) {
        if (!block)
            return tcaErrorNotReady;
        // Assisting is bounded by this wait's own timeout: a bounce copy to
        // a stopped target is given up (the run stays queued and is taken up
        // again), and the wait says tcaErrorTimeout.
        const PutBound bound = PutBound::within(nodes_.policy().timeout_ns, &interrupt_);
        // Drive the engine while we wait: no hand-off to a napping engine
        // thread.  As long as there is work (a long chain), keep at it past
        // the spin budget: the wait could only sleep until the engine thread
        // looked in.  With the timing model on this thread pays the model's
        // delays; they are deadlines from the chain's start, so who runs the
        // chain does not change when its data and notifications land.
        while (!done() && progress(bound) && std::chrono::steady_clock::now() < bound.deadline) {
        }
        // One timeout for the whole wait, the progressing above included.
        bool expired = false;
        auto driven = [&] {
            if (done() || (progress(bound), done()))
                return true;
            return expired = std::chrono::steady_clock::now() >= bound.deadline;
        };
        if (Result r = nodes_.wait_until(nodes_.own().header()->app_event, driven, -1);
            r != tcaSuccess)
            return r;
        if (expired && !done())
            return tcaErrorTimeout;
    }
    // Virtual time: the runs waited for completed then (or later ones did).
    stamps_.advance_to(ch.vt_done.load(std::memory_order_acquire));
    // Every waiter of a run sees its error (not only the first to look).
    // No error recorded past what was reported: nothing to say or to move
    // (errors of runs up to `target` are recorded before they complete).
    if (ch.errors_upto.load(std::memory_order_acquire) <= reported)
        return tcaSuccess;
    const Result r = run_error(ch, reported, target);
    uint64_t seen = ch.reported.load(std::memory_order_relaxed);
    while (seen < target &&
           !ch.reported.compare_exchange_weak(seen, target, std::memory_order_acq_rel)) {
    }
    return r;
}

void DmaEngine::abort(int channel) {
    Channel &ch = channels_[static_cast<size_t>(channel)];
    std::lock_guard g(ch.app_lock);
    // A descriptor waiting on a stopped peer's engine gives up (its run is
    // dropped here anyway), so the scan lock comes free.
    interrupt_.fetch_add(1, std::memory_order_acq_rel);
    std::unique_lock scanning(scan_lock_);  // no descriptor of it is executing now
    interrupt_.fetch_sub(1, std::memory_order_acq_rel);
    const size_t dropped = ch.queue.clear();
    if (dropped == 0)
        return;
    ch.next = 0;
    ch.charged = false;
    // The dropped runs complete, as aborted: their waiters are told.
    const uint64_t first = ch.completed.load(std::memory_order_relaxed) + 1;
    record_error(ch, first, first + dropped - 1, tcaErrorAborted);
    ch.completed.fetch_add(dropped, std::memory_order_release);
    nodes_.own().header()->app_event.notify();
}

void DmaEngine::report_failure(Result r, size_t index) const {
    std::fprintf(stderr, "tca: node %d: DMA descriptor %zu failed: %s\n", nodes_.self(), index,
                 result_message(r));
}

Result DmaEngine::execute(const Descriptor &d, ChainClock *clock, const PutBound &bound,
                          bool streaming) {
    const unsigned char *src = nullptr;
    bool on_gpu = false;
    if (Result r = resolve_(d.src, d.src_off, &src, &on_gpu); r != tcaSuccess)
        return r;
    // A run that overflows the cache streams, but not its small pieces: a
    // pipeline (a staged broadcast's 128 KiB segments, forwarded and copied
    // out by the next core while the engine writes the following one) reads
    // each piece at once, from the shared cache; streamed, every piece would
    // have to come back from memory, which made staged broadcasts slower.
    streaming = streaming && d.bytes() >= streaming_min_ / 4;
    const RowCopy copy{src,       d.height > 1 ? d.src_pitch : d.width,
                       d.dst_off, d.height > 1 ? d.dst_pitch : d.width,
                       d.width,   d.height,
                       on_gpu,    streaming};
    if (Result r = sender_.admit(nodes_, d.dst.node, d.flags, d.slot); r != tcaSuccess)
        return r;
    int64_t stamp = 0;  // virtual time: when it has landed
    if (!timing_.enabled) {
        if (Result r = writer_.write(d.dst, copy, bound); r != tcaSuccess)
            return r;
    } else {
        ChainClock own;
        if (clock == nullptr) {
            own.start(timing_, stamps_.on() ? stamps_.now_ns() : now_ns());
            clock = &own;
        }
        const DescriptorCost cost =
            DescriptorCost::of(d, topo_.hops(nodes_.self(), d.dst.node), clock->table_mode());
        if (stamps_.on()) {  // nothing waits: the stamps say when
            stamp = clock->next(timing_, cost).done_ns;
            if (!(d.flags & tcaDMANotify))
                stamps_.landing_unannounced(d.dst.node, stamp);
            if (Result r = writer_.write(d.dst, copy, bound); r != tcaSuccess)
                return r;
        } else if (Result r = paced_write(writer_, d.dst, copy, cost.gpu,
                                          clock->next(timing_, cost), bound);
                   r != tcaSuccess)
            return r;
    }
    if (Result r = sender_.post_all(nodes_, d.dst.node, d.flags, d.slot, d.tag, stamp);
        r != tcaSuccess)
        return r;
    if (d.add_counter >= 0)
        return nodes_.counter_add(d.dst.node, d.add_counter, d.add_value, stamp);
    return tcaSuccess;
}

void DmaEngine::finish_run(Channel &ch, Result r) {
    if (stamps_.on())
        ch.vt_done.store(
            std::max(ch.vt_done.load(std::memory_order_relaxed), ch.clock.last_done_ns()),
            std::memory_order_release);
    if (r != tcaSuccess)
        record_error(ch, ch.completed.load(std::memory_order_relaxed) + 1,
                     ch.completed.load(std::memory_order_relaxed) + 1, r);
    ch.next = 0;
    ch.charged = false;
    ch.queue.pop();
    ch.completed.fetch_add(1, std::memory_order_release);
    nodes_.own().header()->app_event.notify();
}

bool DmaEngine::step(Channel &ch, const PutBound &bound) {
    if (ch.started.load(std::memory_order_acquire) == ch.completed.load(std::memory_order_relaxed))
        return false;
    // The front stays put while we use it: only the scanner (or abort,
    // which excludes it) pops, and a push does not move it.
    const Run *run = ch.queue.front();
    if (run == nullptr)
        return false;  // an inline run on the starting thread
    const Chain &chain = *run->chain;
    if (!ch.charged) {
        // The model's clock starts when the chain is taken up: at once when
        // the starting thread waits (it drives the engine), after the run
        // before it when queued.
        start_clock(ch.clock, ch, chain, run->vt_start);
        ch.charged = true;
        ch.next = run->first;  // past what a start ran inline
    }
    if (ch.next == chain.descs.size()) {  // an empty chain
        finish_run(ch, tcaSuccess);
        return true;
    }
    const Descriptor &d = chain.descs[ch.next];
    if (d.wait_counter >= 0) {
        const uint64_t threshold = d.trigger_threshold(run->epoch);
        uint64_t now = 0;
        if (const Result r = nodes_.counter_read(d.wait_counter, &now); r != tcaSuccess) {
            report_failure(r, ch.next);  // the counter changed hands: this trigger can never fire
            finish_run(ch, r);
            return true;
        }
        if (now < threshold)
            return false;
        // Virtual time: a triggered descriptor issues once its trigger landed.
        if (stamps_.on())
            ch.clock.hold_until(nodes_.own()
                                    .counter_stamp(owned_index(d.wait_counter))
                                    .load(std::memory_order_relaxed));
    }
    if (const Result r = execute(d, &ch.clock, bound, chain.streaming); r != tcaSuccess) {
        // A bounce copy the target's engine did not take within the bound
        // (stopped target, stop or abort): not a failure of the run - the
        // descriptor runs again later (rewriting the same bytes).
        if (r == tcaErrorTimeout)
            return false;
        report_failure(r, ch.next);
        finish_run(ch, r);
        return true;
    }
    if (++ch.next == chain.descs.size())
        finish_run(ch, tcaSuccess);
    return true;
}

bool DmaEngine::progress() {
    // MPI progress calls in on every pass and there is usually nothing to
    // do: then no write to a shared line, no lock.
    if (!writer_.bounce_pending() && !chain_running())
        return false;
    return progress(PutBound::from_first_wait(nodes_.policy().timeout_ns, &interrupt_));
}

bool DmaEngine::progress(const PutBound &bound) {
    client_passes_.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock g(scan_lock_, std::try_to_lock);
    if (!g.owns_lock())
        return false;
    bool progress = writer_.service_bounce();
    // Run each channel on while its descriptors are ready (a hop of a
    // broadcast is several small descriptors in a row), but bounded: the
    // caller is inside MPI progress and has other work to look at.
    for (Channel &ch : channels_)
        for (int n = 0; n < kAssistBurst && step(ch, bound); ++n)
            progress = true;
    return progress;
}

bool DmaEngine::chain_running() const noexcept {
    for (const Channel &ch : channels_)
        if (ch.started.load(std::memory_order_acquire) !=
            ch.completed.load(std::memory_order_acquire))
            return true;
    return false;
}

// The engine thread never makes producers pay for a wake-up on the hot path.
// While a chain runs (its triggered descriptors wait on counters) or ran
// lately, the thread naps and looks in again: 20 us after it last found work,
// the nap doubling up to 200 us while it finds none.  If an application
// thread progressed the engine during the nap, the application is waiting and drives the
// chains itself: the thread does not even scan (a scanner preempted while it
// holds the scan lock would stall the progressing thread for a time slice when
// processes outnumber cores).  Counter adds therefore never wake it, and a
// start finds it napping (no syscall).  Only after 20 ms without chains does
// it sleep until a start or a bounce request kicks it.
void DmaEngine::run() {
    using clock = std::chrono::steady_clock;
    constexpr int64_t kNapMinNs = 20'000, kNapMaxNs = 200'000;
    constexpr auto kLinger = std::chrono::milliseconds(20);
    EventWord &ev = nodes_.own().header()->engine_event;
    // No deadline: the engine thread waits for a stopped target as long as
    // it lives (the hardware's channel would stall too), until a stop or an
    // abort interrupts it.
    const PutBound patient{std::chrono::steady_clock::time_point::max(), &interrupt_};
    auto scan = [&] {
        std::lock_guard g(scan_lock_);
        bool progress = writer_.service_bounce();
        for (Channel &ch : channels_)
            progress |= step(ch, patient);
        return progress;
    };
    int64_t nap = kNapMinNs;
    auto last_chain = clock::now();
    while (!stop_.load(std::memory_order_acquire)) {
        if (scan()) {
            nap = kNapMinNs;
            continue;
        }
        const auto now = clock::now();
        if (chain_running())
            last_chain = now;
        if (now - last_chain < kLinger) {
            uint64_t seen_passes = client_passes_.load(std::memory_order_relaxed);
            for (;;) {
                ev.nap(ev.seq.load(std::memory_order_acquire), nap);
                nap = std::min(2 * nap, kNapMaxNs);
                const uint64_t a = client_passes_.load(std::memory_order_relaxed);
                if (a == seen_passes || stop_.load(std::memory_order_acquire))
                    break;  // nobody helped: look ourselves
                seen_passes = a;
            }
            continue;
        }
        const uint32_t snap = ev.prepare();
        if (stop_.load(std::memory_order_acquire) || chain_running() || scan()) {
            ev.cancel();
            continue;
        }
        ev.wait(snap, 100'000'000);  // idle: sleep until kicked
        nap = kNapMinNs;
        last_chain = clock::now();
    }
}

}  // namespace tca::loopback
