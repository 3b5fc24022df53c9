// harness.cpp - fork/wait with a deadline, so a hanging node fails the test
// instead of hanging the suite.
#include "harness.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <new>
#include <sstream>
#include <thread>
#include <vector>

namespace tca::test {

void Board::barrier() {
    const int gen = barrier_generation.load(std::memory_order_acquire);
    if (barrier_count.fetch_add(1, std::memory_order_acq_rel) + 1 == num_nodes) {
        barrier_count.store(0, std::memory_order_relaxed);
        barrier_generation.fetch_add(1, std::memory_order_release);
        return;
    }
    for (int spins = 0; barrier_generation.load(std::memory_order_acquire) == gen; ++spins) {
        if (spins < 1000)
            continue;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        // A node that has gone will never arrive: fail now, not at the deadline.
        for (int i = 0; i < num_nodes; ++i)
            if (end_state[i].load(std::memory_order_acquire) == 2 &&
                barrier_generation.load(std::memory_order_acquire) == gen) {
                std::fprintf(stderr, "node %d gone: a barrier cannot complete\n", i);
                std::_Exit(4);
            }
    }
}

void Board::end_barrier(int node) {
    int running = 0;
    if (!end_state[node].compare_exchange_strong(running, 1, std::memory_order_acq_rel))
        return;
    for (int spins = 0;; ++spins) {
        bool all = true;
        for (int i = 0; i < num_nodes; ++i)
            if (end_state[i].load(std::memory_order_acquire) == 0)
                all = false;
        if (all)
            return;
        if (spins > 1000)
            std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

StoppablePair::StoppablePair(int node, Board &board, size_t size) : buf(size, 0) {
    peer = register_and_swap(node, board, buf.data(), size, tcaMemoryCPU, &mine);
    if (node == 1)
        board.value[0].store(static_cast<int>(getpid()));
    board.barrier();
    target = static_cast<pid_t>(board.value[0].load());
}

// The state letter of /proc/<pid>/stat ('T' = stopped).
char process_state(pid_t pid) {
    char path[64], buf[512] = {};
    std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
    FILE *f = std::fopen(path, "r");
    if (f == nullptr)
        return '?';
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    const char *paren = std::strrchr(buf, ')');
    return paren != nullptr && paren + 2 < buf + n ? paren[2] : '?';
}

Stopper::Stopper(pid_t target) : target_(target) {
    stopped_ = kill(target_, SIGSTOP) == 0;
    // A stop takes effect asynchronously: go on only once it has.
    for (int i = 0; i < 5000 && process_state(target_) != 'T'; ++i)
        usleep(1000);
    stopped_ = stopped_ && process_state(target_) == 'T';
    watchdog_ = std::thread([this] {
        const auto t0 = std::chrono::steady_clock::now();
        while (!resume_.load() &&
               std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(kWatchdog))
            usleep(1000);
        kill(target_, SIGCONT);
    });
}

void Stopper::resume() {
    resume_.store(true);
    if (watchdog_.joinable())
        watchdog_.join();
}

tcaHandle register_and_swap(int node, Board &board, void *buf, size_t size, tcaMemoryType type,
                            tcaHandle *mine) {
    const tcaResult r = tcaCreateHandle(mine, buf, size, type);
    if (r != tcaSuccess) {
        std::fprintf(stderr, "node %d: registering a %zu-byte buffer: %s\n", node, size,
                     tcaGetErrorString(r));
        std::_Exit(1);
    }
    board.publish(node, 0, *mine);
    board.barrier();
    return board.get(1 - node, 0);
}

PairBuffers exchange_buffers(int node, Board &board, size_t size, tcaMemoryType type) {
    PairBuffers b{};
    const tcaResult r = tcaMalloc(&b.buf, size, type);
    if (r != tcaSuccess) {
        std::fprintf(stderr, "node %d: allocating a %zu-byte buffer: %s\n", node, size,
                     tcaGetErrorString(r));
        std::_Exit(1);
    }
    b.peer = register_and_swap(node, board, b.buf, size, type, &b.mine);
    return b;
}

std::string unique_job_key(const char *what) {
    static int counter = 0;
    return std::string("t.") + what + "." + std::to_string(getpid()) + "." +
           std::to_string(++counter);
}

void fill_pattern(void *p, size_t n, uint32_t seed) {
    auto *b = static_cast<unsigned char *>(p);
    for (size_t i = 0; i < n; ++i)
        b[i] = static_cast<unsigned char>((i * 131u + seed * 7919u + (i >> 8)) & 0xff);
}

bool check_pattern(const void *p, size_t n, uint32_t seed, size_t *bad_at) {
    const auto *b = static_cast<const unsigned char *>(p);
    for (size_t i = 0; i < n; ++i)
        if (b[i] != static_cast<unsigned char>((i * 131u + seed * 7919u + (i >> 8)) & 0xff)) {
            if (bad_at)
                *bad_at = i;
            return false;
        }
    return true;
}

int count_segments(const std::string &key) {
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    int n = 0;
    const std::string prefix = "tca-" + std::to_string(getuid()) + "-" + key + "-";
    while (dirent *e = readdir(d))
        if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
            ++n;
    closedir(d);
    return n;
}

namespace {
void apply_env(const std::string &env) {
    std::stringstream ss(env);
    std::string kv;
    while (std::getline(ss, kv, ';')) {
        const auto eq = kv.find('=');
        if (eq != std::string::npos)
            setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
    }
}
}  // namespace

::testing::AssertionResult run_nodes(int n, const NodeBody &body, const NodeOptions &opt) {
    void *mem =
        mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return ::testing::AssertionFailure() << "mmap failed";
    auto *board = new (mem) Board{};
    board->num_nodes = n;
    const std::string key = opt.job_key.empty() ? unique_job_key("job") : opt.job_key;
    std::fflush(stdout);
    std::fflush(stderr);
    std::vector<pid_t> pids;
    for (int node = 0; node < n; ++node) {
        const pid_t pid = fork();
        if (pid == 0) {
            setenv("TCA_TIMEOUT_MS", "20000", 0);
            apply_env(opt.env);
            if (opt.init) {
                tcaInitParams p{key.c_str(), node, n};
                const tcaResult r = tcaInitWithParams(&p);
                if (r != tcaSuccess) {
                    std::fprintf(stderr, "node %d: tcaInitWithParams: %s\n", node,
                                 tcaGetErrorString(r));
                    std::_Exit(2);
                }
            }
            int rc = body(node, *board);
            // Peers may still be writing to this node (a last remote counter
            // add, a put): tear down only once every node is done.
            board->end_barrier(node);
            if (opt.init && tcaFinalize() != tcaSuccess && rc == 0)
                rc = 3;
            std::fflush(stdout);
            std::fflush(stderr);
            std::_Exit(rc);
        }
        pids.push_back(pid);
    }
    std::ostringstream failures;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opt.timeout_s);
    size_t remaining = pids.size();
    std::vector<int> status(pids.size(), -1);
    while (remaining > 0) {
        for (size_t i = 0; i < pids.size(); ++i) {
            if (status[i] != -1)
                continue;
            int st = 0;
            if (waitpid(pids[i], &st, WNOHANG) == pids[i]) {
                status[i] = st;
                --remaining;
                // Gone before the final barrier (failed or killed): the
                // others must not wait for it there.
                int running = 0;
                board->end_state[i].compare_exchange_strong(running, 2, std::memory_order_acq_rel);
            }
        }
        if (remaining == 0)
            break;
        if (std::chrono::steady_clock::now() > deadline) {
            for (size_t i = 0; i < pids.size(); ++i)
                if (status[i] == -1) {
                    kill(pids[i], SIGKILL);
                    waitpid(pids[i], nullptr, 0);
                    failures << "node " << i << " hung (killed after " << opt.timeout_s << " s); ";
                    status[i] = 0x7f00;
                }
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    for (size_t i = 0; i < pids.size(); ++i) {
        const int st = status[i];
        if (st == 0x7f00)
            continue;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            continue;
        if (static_cast<int>(i) == opt.killed_node && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
            continue;
        if (WIFSIGNALED(st))
            failures << "node " << i << " killed by signal " << WTERMSIG(st) << "; ";
        else
            failures << "node " << i << " exited " << WEXITSTATUS(st) << "; ";
    }
    munmap(mem, sizeof(Board));
    const std::string f = failures.str();
    if (f.empty())
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << f;
}

int drain_count(tcaHandle *h, int slot, int tag) {
    int n = 0;
    for (int flag = 1;;) {
        NODE_OK(tcaTestDMARecvDesc(h, slot, tag, &flag));
        if (!flag)
            return n;
        ++n;
    }
}

}  // namespace tca::test
