// term_cleanup.cpp - see term_cleanup.hpp.  The handler only reads what
// arm_term_cleanup published before installing it, and calls only
// async-signal-safe functions (getpid, unlink via shm_unlink, sigaction,
// raise).
#include "term_cleanup.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace tca::loopback {
namespace {

char g_segment[256];
const ArenaSlot *g_arenas = nullptr;
std::atomic<pid_t> g_armed_pid{0};  // 0: disarmed
std::atomic<bool> g_installed{false};

void on_sigterm(int sig) {
    const int saved_errno = errno;
    if (g_armed_pid.load(std::memory_order_acquire) == getpid()) {
        for (uint32_t i = 0; i < kMaxArenas; ++i) {
            const ArenaSlot &s = g_arenas[i];
            // The owner writes the name before the serial (release); a slot
            // being rewritten right now can at worst name no file.
            if (s.serial.load(std::memory_order_acquire) == 0)
                continue;
            char name[sizeof s.name];
            std::memcpy(name, s.name, sizeof name);
            name[sizeof name - 1] = '\0';
            if (name[0] == '/')
                shm_unlink(name);
        }
        shm_unlink(g_segment);
    }
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    errno = saved_errno;
    raise(sig);  // pending until we return: the process ends by SIGTERM as it would have
}

}  // namespace

void arm_term_cleanup(const std::string &segment, const ArenaSlot *arenas) noexcept {
    if (segment.empty() || segment.size() >= sizeof g_segment || arenas == nullptr)
        return;
    g_armed_pid.store(0, std::memory_order_release);
    std::memcpy(g_segment, segment.c_str(), segment.size() + 1);
    g_arenas = arenas;
    g_armed_pid.store(getpid(), std::memory_order_release);
    if (g_installed.load(std::memory_order_acquire))
        return;
    struct sigaction old {};
    if (sigaction(SIGTERM, nullptr, &old) != 0 || old.sa_handler != SIG_DFL ||
        (old.sa_flags & SA_SIGINFO))
        return;
    struct sigaction sa {};
    sa.sa_handler = on_sigterm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGTERM, &sa, nullptr) == 0)
        g_installed.store(true, std::memory_order_release);
}

void disarm_term_cleanup() noexcept {
    g_armed_pid.store(0, std::memory_order_release);
}

}  // namespace tca::loopback
