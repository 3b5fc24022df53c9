// progress_engine.cpp - see progress_engine.h.
//
// A pass holds the client list's lock, so a leave from another thread waits
// for the pass that may be calling it; a leave from inside a poll (the
// engine thread itself) only marks the client, which the pass drops after.
// The thread starts with the first client and stops with the last (joined
// outside the list lock; a last client that leaves from inside its poll ends
// the thread itself, and the next join joins it).  An exit handler stops it at exit() too: a program
// may leave without MPI_Finalize, and libtca's static teardown (registered
// earlier, so run later) unmaps the device the thread sleeps on.
#include "session/progress_engine.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "tca.h"

struct tca_progress_client {
    tca_progress_hooks_t hooks;
    bool gone = false;  // left from inside a pass: dropped after it
};

namespace tca::session {
namespace {

class ProgressEngine {
public:
    static ProgressEngine &instance() {
        static ProgressEngine *e =
            new ProgressEngine;  // never destroyed: exit handlers may run after destructors
        return *e;
    }

    tca_progress_client *join(const tca_progress_hooks_t &hooks) {
        std::lock_guard life(life_lock_);
        if (exiting_)
            return nullptr;
        auto *c = new (std::nothrow) tca_progress_client{hooks};
        if (c == nullptr)
            return nullptr;
        try {
            std::lock_guard g(lock_);
            clients_.push_back(c);
        } catch (...) {
            delete c;
            return nullptr;
        }
        count_.fetch_add(1, std::memory_order_relaxed);
        // A thread whose last client left from inside a poll has ended by itself.
        if (thread_.joinable() && running_.load(std::memory_order_acquire) == 0)
            thread_.join();
        if (!thread_.joinable()) {
            stop_.store(false, std::memory_order_relaxed);
            running_.store(
                1, std::memory_order_relaxed);  // before it runs: it may end (and say so) at once
            try {
                thread_ = std::thread([this] { run(); });
            } catch (...) {
                running_.store(0, std::memory_order_relaxed);
                drop(c);
                return nullptr;
            }
            if (!at_exit_registered_)
                at_exit_registered_ = std::atexit(stop_at_exit) == 0;
        }
        wake();  // the new client's first pass comes at once
        return c;
    }

    void leave(tca_progress_client *c) {
        if (c == nullptr)
            return;
        if (std::this_thread::get_id() == thread_id_.load(std::memory_order_acquire)) {
            c->gone = true;  // inside a pass: the list lock is ours already
            return;
        }
        std::lock_guard life(life_lock_);
        if (drop(c))
            stop_thread();
    }

    static void wake() { instance().kick(); }
    int threads() const noexcept { return running_.load(std::memory_order_acquire); }
    int clients() const noexcept { return count_.load(std::memory_order_acquire); }

private:
    // A pass at least this often whatever the clients ask (they bound their
    // own sleeps: btl_tca_thread_sleep_us, the broadcast executor 100 ms).
    static constexpr int64_t kMaxSleepUs = 10000000;

    // A nap sleeps on kicks_ (FUTEX_WAIT with the count from before the
    // pass): a kick after that count ends it, one before it is seen then.
    // Otherwise the thread sleeps on (or is about to) the device interrupt.
    void kick() {
        kicks_.fetch_add(1, std::memory_order_seq_cst);
        if (napping_.load(std::memory_order_seq_cst)) {
            syscall(SYS_futex, reinterpret_cast<uint32_t *>(&kicks_), FUTEX_WAKE_PRIVATE, INT_MAX,
                    nullptr, nullptr, 0);
            return;
        }
        int node = 0;
        if (tcaGetNodeId(&node) == tcaSuccess)
            (void) tcaInterruptRaise(node);
    }
    void nap(uint32_t kicks_seen, int64_t us) {
        napping_.store(true, std::memory_order_seq_cst);
        const timespec ts{static_cast<time_t>(us / 1000000),
                          static_cast<long>(us % 1000000) * 1000};
        syscall(SYS_futex, reinterpret_cast<uint32_t *>(&kicks_), FUTEX_WAIT_PRIVATE, kicks_seen,
                &ts, nullptr, 0);
        napping_.store(false, std::memory_order_relaxed);
    }

    // life_lock_ held.  True when it was the last client.
    bool drop(tca_progress_client *c) {
        std::lock_guard g(lock_);
        const auto it = std::find(clients_.begin(), clients_.end(), c);
        if (it != clients_.end()) {
            clients_.erase(it);
            count_.fetch_sub(1, std::memory_order_release);  // whoever sees it sees the client done
            delete c;
        }
        return clients_.empty();
    }

    // life_lock_ held.
    void stop_thread() {
        if (!thread_.joinable())
            return;
        stop_.store(true, std::memory_order_release);
        wake();
        thread_.join();
        running_.store(0, std::memory_order_release);
    }

    static void stop_at_exit() {
        ProgressEngine &e = instance();
        std::lock_guard life(e.life_lock_);
        e.exiting_ = true;
        e.stop_thread();
    }

    void run() {
        thread_id_.store(std::this_thread::get_id(), std::memory_order_release);
        while (!stop_.load(std::memory_order_acquire)) {
            uint32_t ev = 0;
            tcaInterruptCount(&ev);  // before the pass: a raise during it is not slept through
            const uint32_t kicks = kicks_.load(std::memory_order_seq_cst);  // so is a kick
            int handled = 0;
            int64_t sleep_us = kMaxSleepUs;
            bool listen = false;
            {
                std::lock_guard g(lock_);
                for (tca_progress_client *c : clients_) {
                    if (c->gone)
                        continue;
                    const int n = c->hooks.poll(c->hooks.ctx);
                    handled += std::max(n, 0);
                    if (n > 0 || c->gone)
                        continue;
                    if (c->hooks.idle_us != nullptr)
                        sleep_us = std::min(sleep_us, c->hooks.idle_us(c->hooks.ctx));
                    listen = listen || c->hooks.listens == nullptr ||
                             c->hooks.listens(c->hooks.ctx) != 0;
                }
                const auto gone = std::remove_if(
                    clients_.begin(), clients_.end(), [this](tca_progress_client *c) {
                        if (!c->gone)
                            return false;
                        count_.fetch_sub(
                            1, std::memory_order_release);  // whoever sees it sees the client done
                        delete c;
                        return true;
                    });
                clients_.erase(gone, clients_.end());
                if (clients_
                        .empty()) {  // the last left from inside its poll: end; the next join joins us
                    running_.store(0, std::memory_order_release);
                    break;
                }
            }
            if (handled > 0 || sleep_us <= 0)
                continue;
            if (stop_.load(std::memory_order_acquire))
                break;
            if (!listen) {
                nap(kicks, sleep_us);
                continue;
            }
            const tcaResult r = tcaInterruptWait(ev, sleep_us);
            // No device (a client left it down): sleep anyway, never spin.
            if (r != tcaSuccess && r != tcaErrorTimeout)
                std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
        }
        thread_id_.store(std::thread::id(), std::memory_order_release);
    }

    std::mutex life_lock_;  // join, leave from outside, stop: the thread's life
    std::mutex lock_;       // the client list; held through a pass
    std::vector<tca_progress_client *> clients_;
    std::thread thread_;
    std::atomic<std::thread::id> thread_id_{};
    std::atomic<bool> stop_{false};
    std::atomic<uint32_t> kicks_{0};  // tca_progress_wake calls (a nap's futex)
    std::atomic<bool> napping_{false};
    std::atomic<int> running_{0};
    std::atomic<int> count_{0};
    bool exiting_ = false;
    bool at_exit_registered_ = false;
};

}  // namespace
}  // namespace tca::session

using tca::session::ProgressEngine;

extern "C" {

tca_progress_client_t *tca_progress_join(const tca_progress_hooks_t *hooks) {
    if (hooks == nullptr || hooks->poll == nullptr)
        return nullptr;
    return ProgressEngine::instance().join(*hooks);
}
void tca_progress_leave(tca_progress_client_t *client) {
    ProgressEngine::instance().leave(client);
}
void tca_progress_wake(void) {
    ProgressEngine::wake();
}
int tca_progress_threads(void) {
    return ProgressEngine::instance().threads();
}
int tca_progress_clients(void) {
    return ProgressEngine::instance().clients();
}

}  // extern "C"
