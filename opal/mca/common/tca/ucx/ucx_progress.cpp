// ucx_progress.cpp - who drives the worker and what waits on it: the
// progress thread (asleep on the worker's events, napping while an
// application thread drives it), progress passes (UCX, then the key
// requests and revokes handlers queued, then runs waiting for triggers),
// and what the application waits for: notifications, counters, interrupts,
// node states.
#include <sched.h>

#include "ucx/ucx_device.hpp"

namespace tca::ucx {

void UcxDevice::yield_core() noexcept {
    sched_yield();
}

// While a thread of the application waits in libtca it progresses the
// worker itself: then this one naps instead of competing for the worker's
// lock and the core.
void UcxDevice::progress_thread_body() {
    while (!stop_.load(std::memory_order_acquire)) {
        // While a client drives the worker, until it may have stopped: each
        // wake-up would take a busy core for nothing.
        if (const int64_t left = driven_for(); left > 0)
            std::this_thread::sleep_for(std::chrono::nanoseconds(std::max<int64_t>(left, 200'000)));
        else if (waiters_.load(std::memory_order_acquire) > 0 || worker_->waiters() > 0)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        else if (!progress_worker())
            worker_->sleep_for_events(50);
    }
}

bool UcxDevice::progress_worker() {
    bool did = worker_->progress();
    // Every wait spins through here: look at the queues only when a handler
    // said they hold something.
    if (remote_keys_.queued()) {
        std::unique_lock serving(serve_lock_, std::try_to_lock);
        if (serving.owns_lock())
            while (const auto s = remote_keys_.next_to_serve()) {
                if (s->is_request)
                    answer_key_request(s->request);
                else
                    forget_key(s->revoke);
                did = true;
            }
    }
    return pump_channels() || did;
}

// tcaProgress: a client (btl tca's progress, on every MPI progress pass)
// drives the worker; while it keeps doing so the progress thread naps.
bool UcxDevice::progress() {
    mark_driven();
    return progress_worker();
}

Result UcxDevice::set_progress_takeover(int64_t ns) {
    takeover_ns_.store(ns, std::memory_order_relaxed);
    return tcaSuccess;
}

void UcxDevice::mark_driven() noexcept {
    driven_ns_.store(now_ns(), std::memory_order_relaxed);
}

int64_t UcxDevice::driven_for() const noexcept {
    return takeover_ns_.load(std::memory_order_relaxed) -
           (now_ns() - driven_ns_.load(std::memory_order_relaxed));
}

uint32_t UcxDevice::interrupt_count() noexcept {
    if (!driven())
        progress_worker();
    return events_.seq.load(std::memory_order_acquire);
}

// Sleeps, as on the loopback: the worker is progressed meanwhile by the
// progress thread, or by the application thread that drives it.  Spinning
// here took a core from that thread, and while a thread drives the worker no
// other touches it here: UCX's worker lock is a spin lock, and a holder
// preempted on a busy host leaves the driving thread spinning out its slice.
Result UcxDevice::interrupt_wait(uint32_t seen, int64_t timeout_ns) {
    if (!driven())
        progress_worker();
    return events_.await_change(seen, timeout_ns) ? tcaSuccess : tcaErrorTimeout;
}

Result UcxDevice::take_notification(const tcaHandle &h, int slot, int tag, bool block) {
    if (Result r = check_handle(&h, n_); r != tcaSuccess)
        return r;
    if (slot < 0 || slot >= TCA_NOTIFY_SLOTS)
        return tcaErrorInvalidSlot;
    const int src = h.node;
    return wait_for(
        [&]() -> Result {
            if (inbox_.take(src, slot, tag))
                return tcaSuccess;
            // A peer that failed, or finished (its goodbye came after its last
            // notification, on the same endpoint), will post nothing more.
            if (src != self_ && !peers_.may_write(src))
                return tcaErrorPeerGone;
            return tcaErrorNotReady;
        },
        block);
}

void UcxDevice::deliver_local(int slot, int tag) {
    inbox_.add(self_, slot, tag);
    event();
}

bool UcxDevice::counter_id_valid(int id) noexcept {
    return id >= 0 && owned_index(id) < TCA_NUM_COUNTERS;
}

Result UcxDevice::counter_read(int id, uint64_t *value) {
    if (!counter_id_valid(id))
        return tcaErrorInvalidCounter;
    if (value == nullptr)
        return tcaErrorInvalidValue;
    progress_worker();
    return counter_now(id, value);
}

Result UcxDevice::counter_now(int id, uint64_t *value) const noexcept {
    if (counter_holder_[owned_index(id)].load(std::memory_order_acquire) != owned_token(id))
        return tcaErrorNotAcquired;
    *value = counters_[owned_index(id)].load(std::memory_order_acquire);
    return tcaSuccess;
}

// A local add kicks the triggered descriptors waiting for it at once.
Result UcxDevice::counter_add(int id, uint64_t add) {
    if (!counter_id_valid(id))
        return tcaErrorInvalidCounter;
    const Result r = add_local_counter(id, add);
    if (r == tcaSuccess)
        pump_channels();
    return r;
}

Result UcxDevice::counter_wait(int id, uint64_t value) {
    if (!counter_id_valid(id))
        return tcaErrorInvalidCounter;
    return wait_for(
        [&]() -> Result {
            uint64_t now = 0;
            if (Result r = counter_read(id, &now); r != tcaSuccess)
                return r;
            return now >= value ? tcaSuccess : tcaErrorNotReady;
        },
        true);
}

Result UcxDevice::counter_add_remote(int node, int id, uint64_t add) {
    if (node < 0 || node >= n_)
        return tcaErrorInvalidNode;
    if (!counter_id_valid(id))
        return tcaErrorInvalidCounter;
    if (node == self_)
        return add_local_counter(id, add);
    Endpoint *ep = nullptr;
    if (Result r = peers_.endpoint(node, &ep); r != tcaSuccess)
        return r;
    // After this thread's earlier PIO writes, as on the loopback (coll tca's
    // thread engine writes a segment, then counts it at the child).
    if (Result r = ep->fence(); r != tcaSuccess)
        return r;
    const CounterAddMsg m{self_, id, add};
    return ep->am_send(kAmCounterAdd, &m, sizeof m, deadline());
}

Result UcxDevice::add_local_counter(int id, uint64_t add) {
    const int idx = owned_index(id);
    if (counter_holder_[idx].load(std::memory_order_acquire) != owned_token(id))
        return tcaErrorNotAcquired;
    uint64_t cur = counters_[idx].load(std::memory_order_relaxed);
    do {
        if (add > kCounterMax - cur)
            return tcaErrorInvalidValue;
    } while (!counters_[idx].compare_exchange_weak(cur, cur + add, std::memory_order_acq_rel));
    event();
    return tcaSuccess;
}

void UcxDevice::counter_claim(int index, uint32_t holder) {
    counters_[index].store(0, std::memory_order_relaxed);
    counter_holder_[index].store(holder, std::memory_order_release);
}

void UcxDevice::slot_claim(int index, uint32_t holder) {
    slot_holder_[index].store(holder, std::memory_order_release);
}

// A notification into a slot held by someone else of this process is
// refused, as on the loopback: named by its plain number or another id.
bool UcxDevice::slot_admits(int id) const noexcept {
    const uint32_t holder = slot_holder_[owned_index(id)].load(std::memory_order_acquire);
    return holder == 0 || holder == owned_token(id);
}

Result UcxDevice::interrupt_raise(int node) {
    if (node < 0 || node >= n_)
        return tcaErrorInvalidNode;
    if (node == self_) {
        event();
        return tcaSuccess;
    }
    if (peers_.failed(node))
        return tcaErrorPeerGone;
    Endpoint *ep = nullptr;
    if (Result r = peers_.endpoint(node, &ep); r != tcaSuccess)
        return r;
    const NodeMsg m{self_};
    return ep->am_send(kAmInterrupt, &m, sizeof m, deadline());
}

Result UcxDevice::node_state(int node, int *state) {
    if (node < 0 || node >= n_)
        return tcaErrorInvalidNode;
    progress_worker();
    if (node == self_)
        *state = TCA_NODE_ALIVE;
    else if (peers_.finished(node))
        *state = TCA_NODE_FINISHED;
    else if (peers_.failed(node))
        *state = TCA_NODE_DEAD;
    else
        *state = TCA_NODE_ALIVE;
    return tcaSuccess;
}

}  // namespace tca::ucx
