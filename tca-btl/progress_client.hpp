// progress_client.hpp - btl tca's asynchronous progress, run by the TCA
// session's one progress thread (session/progress_engine.h) as a client.
//
// While the application itself calls into MPI (its progress counter moves),
// it only looks now and then: it must not compete for a core with a
// latency-bound rank.  The interval starts at `check_interval` and doubles,
// up to `max_check_interval`, each time the application was busy in MPI
// anyway; it drops back after it has had work.  Once the application has
// been away for a whole interval (computing), it drives progress itself: it
// polls while there is work and otherwise lets the thread sleep on the device
// interrupt, having asked its peers to raise it after each message
// (doorbell).  It never spins idle: only while answers to its own requests
// are due (an emulated get is answered within microseconds by the owner's
// put), for at most one check interval, it polls on instead of sleeping -
// a doorbell then would have to take the core back from the computing
// application, which the kernel may grant only when its slice ends.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "session/progress_engine.h"

namespace tca::btl {

struct ProgressHooks {
    int (*poll)(void *ctx);                     // one progress pass; events handled
    void (*announce_sleep)(void *ctx, int on);  // ask peers (1) or not (0) to raise our interrupt
    void *ctx;
    // After a pass that found nothing: are answers due from peers (gets,
    // small puts, atomics in flight)?  NULL: never.
    int (*awaiting)(void *ctx) = nullptr;
};

class ProgressClient {
public:
    using clock = std::chrono::steady_clock;

    // Joins the session's progress engine (throws std::bad_alloc when it cannot).
    ProgressClient(ProgressHooks hooks, std::chrono::microseconds check_interval,
                   std::chrono::microseconds max_check_interval,
                   std::chrono::microseconds max_sleep);
    // Leaves it (no pass of ours runs after), withdrawing a doorbell request.
    ~ProgressClient();
    ProgressClient(const ProgressClient &) = delete;
    ProgressClient &operator=(const ProgressClient &) = delete;

    // Called by the application's own progress calls: cheap, no fence.
    void note_app_progress() noexcept { app_calls_.fetch_add(1, std::memory_order_relaxed); }

    // For tests: progress passes it drove itself.
    uint64_t driven_polls() const noexcept { return driven_.load(std::memory_order_relaxed); }

private:
    static int pass_cb(void *self) { return static_cast<ProgressClient *>(self)->pass(); }
    static int64_t idle_cb(void *self) { return static_cast<ProgressClient *>(self)->idle_us_; }
    // Doorbells matter only while it drives; watching the application it
    // looks at its own times.
    static int listens_cb(void *self) {
        return static_cast<ProgressClient *>(self)->driving_ ? 1 : 0;
    }
    int pass();  // on the engine thread only, like everything below
    bool app_active() noexcept;
    void watch_from(clock::time_point now);

    const ProgressHooks hooks_;
    const std::chrono::microseconds check_interval_;
    const std::chrono::microseconds max_check_interval_;
    const std::chrono::microseconds max_sleep_;
    std::atomic<uint64_t> app_calls_{0};
    std::atomic<uint64_t> driven_{0};
    // The engine thread's state.
    bool driving_ = false;
    bool announced_ = false;
    bool lingering_ = false;  // polling on for answers due, until linger_until_
    clock::time_point linger_until_;
    uint64_t seen_ = 0;
    std::chrono::microseconds interval_;
    clock::time_point next_look_;
    int64_t idle_us_ = 0;
    tca_progress_client_t *client_ = nullptr;
};

}  // namespace tca::btl
