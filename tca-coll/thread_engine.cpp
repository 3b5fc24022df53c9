// thread_engine.cpp - the same broadcast steps as the offload program, done in
// software on the TCA session's progress thread for all requests of the process: it
// waits for the children's ready (credits, when staged) and for landed
// segments (counter updates raise the device interrupt, so it sleeps on
// that), writes each segment with PIO and adds to the child's data counter
// (tcaPioWriteCounterAdd: one message on the ucx device).  MPI_Test and
// MPI_Wait do the same work on the calling thread (test()).
// The comparison point for the offload engine, and the path for devices
// without triggered descriptors.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "bcast_engine.hpp"
#include "session/progress_engine.h"

namespace tca::coll {

namespace {

class ThreadEngine;

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// How long after the application's last help (MPI_Test, MPI_Wait) or
// MPI_Start the session's progress thread takes an epoch over
// (set_thread_takeover).
std::atomic<int64_t> takeover_ns{1'000'000};

// Advances every started ThreadEngine: on the thread that tests a request
// (help()), and as a client of the TCA session's one progress thread
// (session/progress_engine.h) once the application is away from MPI.  It
// exists while any engine does.  Counter updates raise the device
// interrupt, which ends the thread's sleep while it waits for them; while
// the application helps, the thread naps through them.  (At exit() without
// MPI_Finalize the session stops the thread before libtca's static teardown
// unmaps the device.)
class Executor {
public:
    static std::shared_ptr<Executor> get() {
        Registry &r = registry();
        std::lock_guard g(r.lock);
        auto e = r.current.lock();
        if (!e)
            r.current = e = std::shared_ptr<Executor>(new Executor());
        return e;
    }
    ~Executor() { leave(); }
    // MPI_Finalize: the session's progress thread stops calling us, also
    // where requests the application never freed keep their engines, and so
    // this executor, alive - Open MPI unloads coll tca's code next, and the
    // thread called into it (a SIGSEGV at exit).  A later get() starts anew.
    static void leave_session() {
        std::shared_ptr<Executor> e;
        {
            Registry &r = registry();
            std::lock_guard g(r.lock);
            e = r.current.lock();
            r.current.reset();
        }
        if (e)
            e->leave();
    }
    void add(ThreadEngine *e) {
        {
            std::lock_guard g(lock_);
            active_.push_back(e);
        }
        pending_.fetch_add(1, std::memory_order_seq_cst);
        // MPI_Start counts as help: the thread leaves the epoch to the
        // application for takeover_ns.  Doing it at once, it took the core of
        // the application thread that had just started it and was about to
        // compute (on a busy host the woken thread runs first).  The thread
        // naps no longer than that, so it needs waking only from its long
        // nap - not once per MPI_Start.
        helped_ns_.store(now_ns(), std::memory_order_seq_cst);
        if (long_nap_.load(std::memory_order_seq_cst))
            tca_progress_wake();
    }
    // A pass on the calling thread (MPI_Test, MPI_Wait): an application that
    // waits for its broadcast moves it itself, as libnbc does, instead of
    // waiting for the progress thread to be woken and scheduled - on a busy
    // or oversubscribed host that costs a time slice per hop.
    void help() {
        helped_ns_.store(now_ns(), std::memory_order_relaxed);
        tcaProgress(nullptr);  // devices whose messages land only when progressed (ucx)
        pass();
    }

private:
    // No pass of ours runs after this.
    void leave() {
        if (tca_progress_client_t *c = client_.exchange(nullptr, std::memory_order_acq_rel))
            tca_progress_leave(c);
    }
    Executor() {
        const tca_progress_hooks_t hooks{
            [](void *self) { return static_cast<Executor *>(self)->thread_pass(); },
            [](void *self) { return static_cast<Executor *>(self)->idle_us(); }, this,
            [](void *self) { return static_cast<Executor *>(self)->listens(); }};
        tca_progress_client_t *c = tca_progress_join(&hooks);
        if (c == nullptr)
            throw std::bad_alloc();
        client_.store(c, std::memory_order_release);
    }
    int pass();  // one thread at a time (pass_lock_): the progress thread or a helper
    // The progress thread's pass: none while the application helps (it
    // would only compete for the device and the core); it takes over once
    // the application has been away takeover_ns (computing between MPI_Start
    // and MPI_Wait).
    int thread_pass() { return helping_now() ? 0 : pass(); }
    // Waiting for counters it sleeps on the device interrupt (counter
    // updates raise it); otherwise it naps: through the help, or until an
    // add() wakes it.
    int64_t idle_us() {
        // Said before pending_ is read (add() does the reverse): either this
        // sees its engine, or it sees the long nap and wakes us.
        long_nap_.store(true, std::memory_order_seq_cst);
        const int64_t since = now_ns() - helped_ns_.load(std::memory_order_seq_cst);
        const int64_t window = takeover_ns.load(std::memory_order_relaxed);
        const bool long_nap = since >= window && pending_.load(std::memory_order_seq_cst) == 0;
        if (!long_nap)
            long_nap_.store(false, std::memory_order_seq_cst);
        if (since < window)
            return (window - since) / 1000 + 1;
        return long_nap ? 100000 : 1000;
    }
    int listens() const { return pending_.load(std::memory_order_relaxed) > 0 && !helping_now(); }
    bool helping_now() const {
        return now_ns() - helped_ns_.load(std::memory_order_relaxed) <
               takeover_ns.load(std::memory_order_relaxed);
    }

    // Never destroyed: an engine may be released from a static destructor at exit.
    struct Registry {
        std::mutex lock;
        std::weak_ptr<Executor> current;
    };
    static Registry &registry() {
        static Registry *r = new Registry;
        return *r;
    }

    std::mutex lock_;
    std::vector<ThreadEngine *> active_;  // started, not yet taken up by a pass (under lock_)
    std::atomic<int64_t> helped_ns_{INT64_MIN / 2};  // the last help() or add() (now_ns)
    std::atomic<int> pending_{0};                    // engines added and not finished
    std::atomic<bool> long_nap_{false};              // the thread's last idle_us() was the long one
    std::mutex pass_lock_;              // tried, never waited for: a busy pass is progress already
    std::vector<ThreadEngine *> work_;  // under pass_lock_
    std::atomic<tca_progress_client_t *> client_{nullptr};
};

class ThreadEngine final : public BcastEngine {
public:
    explicit ThreadEngine(const EngineSetup &s)
        : s_(s), root_(s.plan->roles[static_cast<size_t>(s.rank)].parent < 0),
          credit_at_parent_(root_ ? -1 : credit_counter_at_parent(s)), exec_(Executor::get()) {}

    tcaResult start() override {
        ++epoch_;
        next_segment_ = 0;
        next_child_ = 0;
        children_ready_ = false;
        block_in_hand_ = false;
        error_.store(tcaSuccess, std::memory_order_relaxed);
        done_.store(false, std::memory_order_relaxed);
        if (!root_ && s_.plan->segments > 0 && s_.plan->slots == 0)
            if (const tcaResult r = tcaCounterAddRemote(s_.parent.node, s_.parent.ready_counter, 1);
                r != tcaSuccess)
                return r;
        exec_->add(this);  // the executor publishes our fields with its lock
        return tcaSuccess;
    }

    tcaResult test() override {
        if (!done_.load(std::memory_order_acquire)) {
            exec_->help();
            if (!done_.load(std::memory_order_acquire))
                return tcaErrorNotReady;
        }
        return error_.load(std::memory_order_relaxed);
    }

    uint64_t epochs() const override { return epoch_; }

    // Executor side: advance as far as possible; true when this epoch is done.
    bool advance() { return s_.plan->slots > 0 ? advance_staged() : advance_direct(); }

private:
    bool advance_direct() {
        const BcastPlan &p = *s_.plan;
        const size_t nch = s_.children.size();
        if (nch > 0 && !children_ready_) {
            if (!reached(s_.ready, nch * epoch_))
                return !ok();
            children_ready_ = true;
        }
        while (next_segment_ < p.segments) {
            if (!root_ && !reached(s_.data, (epoch_ - 1) * p.segments + next_segment_ + 1))
                return !ok();
            const size_t off = p.segment_offset(next_segment_),
                         len = p.segment_length(next_segment_);
            const unsigned char *src = nullptr;
            if (!s_.children.empty() && !check(readable(s_.buffer + off, len, &src)))
                return true;
            for (const Neighbour &c : s_.children) {
                tcaHandle dst = c.buffer;
                if (!check(tcaPioWriteCounterAdd(&dst, static_cast<off_t>(c.buffer_offset + off),
                                                 src, len, c.data_counter, 1)))
                    return true;
            }
            ++next_segment_;
        }
        return true;
    }

    // Block g = (epoch_ - 1) * S + segment uses slot g mod K; credits were
    // pre-loaded with K.
    bool advance_staged() {
        const BcastPlan &p = *s_.plan;
        for (; next_segment_ < p.segments;
             ++next_segment_, next_child_ = 0, block_in_hand_ = false) {
            const uint64_t block = (epoch_ - 1) * p.segments + next_segment_;
            const off_t slot = static_cast<off_t>(block % p.slots * p.slot_stride);
            const size_t off = p.segment_offset(next_segment_),
                         len = p.segment_length(next_segment_);
            // Once per block, however often we come back for credits: a
            // non-root's block lands in its slot; a root with slots (a GPU
            // buffer feeding two children or more, has_staging_area) reads
            // it into its slot, as the offload engine does; any other root
            // writes from its buffer (a GPU one read into bounce_).
            if (!block_in_hand_) {
                if (!root_ && !reached(s_.data, block + 1))
                    return !ok();
                if (root_ && s_.staging != nullptr &&
                    !check(copy_out(s_.staging + slot, s_.buffer + off, len)))
                    return true;
                if (root_ && s_.staging == nullptr &&
                    !check(readable(s_.buffer + off, len, &root_src_)))
                    return true;
                block_in_hand_ = true;
            }
            const unsigned char *src = s_.staging != nullptr ? s_.staging + slot : root_src_;
            for (; next_child_ < s_.children.size(); ++next_child_) {
                if (!reached(s_.credits[next_child_], block + 1))
                    return !ok();
                tcaHandle dst = s_.children[next_child_].buffer;
                if (!check(tcaPioWriteCounterAdd(&dst, slot, src, len,
                                                 s_.children[next_child_].data_counter, 1)))
                    return true;
            }
            if (root_)
                continue;
            tcaHandle mine =
                s_.buffer_handle;  // PIO into our own buffer: also right for GPU memory
            if (!check(tcaPioWrite(&mine, static_cast<off_t>(s_.buffer_offset + off), src, len, 0,
                                   0, 0)))
                return true;
            if (p.credits_due_after(block) &&
                !check(tcaCounterAddRemote(s_.parent.node, credit_at_parent_, p.credit_batch)))
                return true;
        }
        return true;
    }

    // PIO reads its source with the CPU: a GPU buffer is copied out to host
    // memory first (the offload engine's descriptors read it directly; this
    // engine runs only where no DMA channel was free).
    tcaResult readable(const unsigned char *p, size_t len, const unsigned char **out) {
        *out = p;
        if (!s_.gpu.on_gpu || len == 0)
            return tcaSuccess;
        bounce_.resize(len);
        *out = bounce_.data();
        return copy_out(bounce_.data(), p, len);
    }

    // Into host memory we own: the root's slot or bounce_.
    tcaResult copy_out(unsigned char *dst, const unsigned char *src, size_t len) {
        if (s_.gpu.on_gpu)
            return len == 0 ? tcaSuccess : s_.gpu.copy_to_host(s_.gpu, dst, src, len);
        std::memcpy(dst, src, len);  // host memory (has_staging_area gives a host root no slots)
        return tcaSuccess;
    }

    // Has counter c moved by at least `by` since it was taken?  (False on error too.)
    bool reached(const Counter &c, uint64_t by) {
        uint64_t moved = 0;
        return check(counter_moved(c, &moved)) && moved >= by;
    }
    bool ok() const { return error_.load(std::memory_order_relaxed) == tcaSuccess; }

public:
    void finish() { done_.store(true, std::memory_order_release); }

private:
    bool check(tcaResult r) {
        if (r == tcaSuccess)
            return true;
        error_.store(r, std::memory_order_relaxed);
        return false;
    }

    EngineSetup s_;
    const bool root_;
    const int credit_at_parent_;  // staged: our credit counter at the parent
    std::shared_ptr<Executor> exec_;
    uint64_t epoch_ = 0;
    size_t next_segment_ = 0;
    size_t next_child_ = 0;
    bool children_ready_ = false;  // direct plans: this epoch's "ready" from every child is in
    bool block_in_hand_ = false;   // staged plans: block next_segment_ can be written from
    const unsigned char *root_src_ = nullptr;  // staged root without slots: where that block is
    std::vector<unsigned char> bounce_;        // GPU buffers: the bytes PIO writes
    std::atomic<tcaResult> error_{tcaSuccess};
    std::atomic<bool> done_{true};
};

int Executor::pass() {
    std::unique_lock busy(pass_lock_, std::try_to_lock);
    if (!busy.owns_lock())
        return 0;
    {
        std::lock_guard g(lock_);
        work_.insert(work_.end(), active_.begin(), active_.end());
        active_.clear();
    }
    int progressed = 0;
    for (auto it = work_.begin(); it != work_.end();) {
        if ((*it)->advance()) {
            pending_.fetch_sub(1, std::memory_order_relaxed);
            (*it)->finish();
            it = work_.erase(it);
            ++progressed;
        } else {
            ++it;
        }
    }
    return progressed;
}

}  // namespace

void leave_progress_thread() {
    Executor::leave_session();
}

void set_thread_takeover(std::chrono::nanoseconds after) {
    takeover_ns.store(std::max<int64_t>(after.count(), 1), std::memory_order_relaxed);
}

tcaResult make_thread_engine(const EngineSetup &setup, std::unique_ptr<BcastEngine> *out) {
    if (setup.plan == nullptr || out == nullptr)
        return tcaErrorInvalidValue;
    try {
        *out = std::make_unique<ThreadEngine>(setup);
    } catch (...) {
        return tcaErrorNoMemory;
    }
    return tcaSuccess;
}

}  // namespace tca::coll
