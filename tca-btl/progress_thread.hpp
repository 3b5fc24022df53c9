// progress_thread.hpp - the asynchronous progress thread of btl tca.
//
// While the application itself calls into MPI (its progress counter moves),
// the thread only wakes now and then to look: it must not compete for a core
// with a latency-bound rank.  The interval starts at `check_interval` and
// doubles, up to `max_check_interval`, each time the application was busy in
// MPI anyway; it drops back after the thread has had work.  Once the application has been away
// for a whole interval (computing), the thread drives progress itself: it
// polls while there is work and otherwise sleeps on the device interrupt,
// having asked its peers to raise it after each message (doorbell).  It never
// spins idle.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace tca::btl {

struct ProgressHooks {
    int (*poll)(void *ctx);                    // one progress pass; events handled
    void (*announce_sleep)(void *ctx, int on);  // ask peers (1) or not (0) to raise our interrupt
    void *ctx;
};

class ProgressThread {
public:
    ProgressThread(ProgressHooks hooks, std::chrono::microseconds check_interval,
                   std::chrono::microseconds max_check_interval, std::chrono::microseconds max_sleep);
    ~ProgressThread();
    ProgressThread(const ProgressThread &) = delete;
    ProgressThread &operator=(const ProgressThread &) = delete;

    // Called by the application's own progress calls: cheap, no fence.
    void note_app_progress() noexcept { app_calls_.fetch_add(1, std::memory_order_relaxed); }

    // For tests: progress passes the thread drove itself.
    uint64_t driven_polls() const noexcept { return driven_.load(std::memory_order_relaxed); }

private:
    void run();
    bool app_active(uint64_t *seen) const noexcept;
    void drive(uint64_t *seen);

    ProgressHooks hooks_;
    std::chrono::microseconds check_interval_;
    std::chrono::microseconds max_check_interval_;
    std::chrono::microseconds max_sleep_;
    std::atomic<uint64_t> app_calls_{0};
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> driven_{0};
    std::thread thread_;
};

}  // namespace tca::btl
