#include "progress_client.hpp"

#include <algorithm>
#include <new>

namespace tca::btl {

ProgressClient::ProgressClient(ProgressHooks hooks, std::chrono::microseconds check_interval,
                               std::chrono::microseconds max_check_interval,
                               std::chrono::microseconds max_sleep)
    : hooks_(hooks), check_interval_(check_interval),
      max_check_interval_(std::max(check_interval, max_check_interval)), max_sleep_(max_sleep),
      interval_(check_interval) {
    seen_ = app_calls_.load(std::memory_order_relaxed);
    watch_from(clock::now());
    const tca_progress_hooks_t h{pass_cb, idle_cb, this, listens_cb};
    client_ = tca_progress_join(&h);
    if (client_ == nullptr)
        throw std::bad_alloc();
}

ProgressClient::~ProgressClient() {
    tca_progress_leave(client_);  // no pass of ours runs after this
    if (announced_)
        hooks_.announce_sleep(hooks_.ctx, 0);
}

bool ProgressClient::app_active() noexcept {
    const uint64_t now = app_calls_.load(std::memory_order_relaxed);
    if (now == seen_)
        return false;
    seen_ = now;
    return true;
}

void ProgressClient::watch_from(clock::time_point now) {
    driving_ = false;
    next_look_ = now + interval_;
    idle_us_ = interval_.count();
}

int ProgressClient::pass() {
    if (!driving_) {
        const auto now = clock::now();  // only here: a driving pass reads no clock
        // The application drives progress: look again once an interval passed
        // (the thread passes more often when other clients or raises wake it).
        if (now < next_look_) {
            idle_us_ =
                std::chrono::duration_cast<std::chrono::microseconds>(next_look_ - now).count() + 1;
            return 0;
        }
        if (app_active()) {
            interval_ = std::min(interval_ * 2, max_check_interval_);
            watch_from(now);
            return 0;
        }
        driving_ = true;
    }
    const int n = hooks_.poll(hooks_.ctx);
    driven_.fetch_add(1, std::memory_order_relaxed);
    if (app_active()) {  // the application is back in MPI
        if (announced_)
            hooks_.announce_sleep(hooks_.ctx, 0);
        announced_ = false;
        interval_ = check_interval_;
        watch_from(clock::now());
        return n;
    }
    if (n > 0) {
        lingering_ = false;
        return n;
    }
    if (hooks_.awaiting != nullptr && hooks_.awaiting(hooks_.ctx)) {
        const auto now = clock::now();
        if (!lingering_) {
            lingering_ = true;
            linger_until_ = now + check_interval_;
        }
        if (now < linger_until_)
            return 1;  // pass again at once: the answer is on its way
    }
    lingering_ = false;
    if (!announced_) {
        // Ask for doorbells, then look once more (pass again at once): a
        // message sent before a peer saw the request is found by that poll
        // (fences pair up).
        hooks_.announce_sleep(hooks_.ctx, 1);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        announced_ = true;
        return 1;
    }
    idle_us_ = max_sleep_.count();
    return 0;
}

}  // namespace tca::btl
