#include "progress_thread.hpp"

#include <algorithm>

#include "tca.h"

namespace tca::btl {

ProgressThread::ProgressThread(ProgressHooks hooks, std::chrono::microseconds check_interval,
                               std::chrono::microseconds max_check_interval, std::chrono::microseconds max_sleep)
    : hooks_(hooks), check_interval_(check_interval),
      max_check_interval_(std::max(check_interval, max_check_interval)), max_sleep_(max_sleep) {
    thread_ = std::thread([this] { run(); });
}

ProgressThread::~ProgressThread() {
    stop_.store(true, std::memory_order_release);
    // Wake it if it sleeps on the interrupt; the timed sleeps end by themselves.
    int node = 0;
    if (tcaGetNodeId(&node) == tcaSuccess) tcaInterruptRaise(node);
    if (thread_.joinable()) thread_.join();
}

bool ProgressThread::app_active(uint64_t *seen) const noexcept {
    const uint64_t now = app_calls_.load(std::memory_order_relaxed);
    if (now == *seen) return false;
    *seen = now;
    return true;
}

void ProgressThread::run() {
    uint64_t seen = app_calls_.load(std::memory_order_relaxed);
    auto interval = check_interval_;
    while (!stop_.load(std::memory_order_acquire)) {
        // The application drives progress: look again after an interval.
        uint32_t ev = 0;
        tcaInterruptCount(&ev);
        tcaInterruptWait(ev, interval.count());
        if (stop_.load(std::memory_order_acquire)) break;
        if (app_active(&seen)) {
            interval = std::min(interval * 2, max_check_interval_);
            continue;
        }
        drive(&seen);
        interval = check_interval_;
    }
}

void ProgressThread::drive(uint64_t *seen) {
    bool announced = false;
    while (!stop_.load(std::memory_order_acquire)) {
        uint32_t ev = 0;
        tcaInterruptCount(&ev);
        const int n = hooks_.poll(hooks_.ctx);
        driven_.fetch_add(1, std::memory_order_relaxed);
        if (app_active(seen)) break;  // the application is back in MPI
        if (n > 0) continue;
        if (!announced) {
            // Ask for doorbells, then look once more: a message sent before a
            // peer saw the request is found by this poll (fences pair up).
            hooks_.announce_sleep(hooks_.ctx, 1);
            std::atomic_thread_fence(std::memory_order_seq_cst);
            announced = true;
            continue;
        }
        tcaInterruptWait(ev, max_sleep_.count());
    }
    if (announced) hooks_.announce_sleep(hooks_.ctx, 0);
}

}  // namespace tca::btl
