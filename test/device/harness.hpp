// harness.hpp - runs a test body in N forked processes, each one node of a
// fresh loopback sub-cluster, with a shared board to swap handles and a barrier.
// Every node passes a final barrier after its body and before tcaFinalize, so
// no node tears its device down while a peer still writes to it.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tca.h"

namespace tca::test {

// Shared between the forked nodes (MAP_SHARED | MAP_ANONYMOUS, made before fork).
struct Board {
    static constexpr int kSlots = 64;
    tcaHandle handles[TCA_MAX_NODES][kSlots];
    std::atomic<int> barrier_count;
    std::atomic<int> barrier_generation;
    std::atomic<int> value[16];  // scratch for tests
    int num_nodes;
    // Final barrier: per node 0 = running, 1 = arrived, 2 = gone without
    // arriving (the parent marks a node that exited or was killed).
    std::atomic<int> end_state[TCA_MAX_NODES];

    void barrier();
    // Wait until every node has reached end_barrier or has gone.  run_nodes
    // calls it after the body and before tcaFinalize; a body that finalizes
    // itself (NodeOptions::init = false) calls it before its tcaFinalize.
    // A second call by the same node returns at once.
    void end_barrier(int node);
    void publish(int node, int slot, const tcaHandle &h) { handles[node][slot] = h; }
    tcaHandle &get(int node, int slot) { return handles[node][slot]; }
};

struct NodeOptions {
    int timeout_s = 120;   // kill the nodes after this
    bool init = true;      // call tcaInitWithParams before the body
    std::string env;       // "NAME=VALUE" pairs separated by ';' set in every node
    std::string job_key;   // default: unique per run
    int killed_node = -1;  // this node is expected to die by SIGKILL
};

using NodeBody = std::function<int(int node, Board &board)>;

// Fork n nodes, run body in each (return 0 = pass), tcaFinalize, collect.
::testing::AssertionResult run_nodes(int n, const NodeBody &body, const NodeOptions &opt = {});

// Register caller-owned memory, swap handles with node 1 - node through board
// slot 0; returns the peer's handle.  Fails the node on error.
tcaHandle register_and_swap(int node, Board &board, void *buf, size_t size, tcaMemoryType type,
                            tcaHandle *mine);

// Two nodes for the tests that stop node 1 (SIGSTOP): a registered host
// buffer of `size` zero bytes on each, the peer's handle, and node 1's pid
// (published through board.value[0]; a barrier ends the set-up).
struct StoppablePair {
    std::vector<unsigned char> buf;
    tcaHandle mine{}, peer{};
    pid_t target = 0;  // node 1's process
    StoppablePair(int node, Board &board, size_t size);
};
// The state letter of /proc/<pid>/stat ('T' = stopped, '?' = unreadable).
char process_state(pid_t pid);

// Stops a process (SIGSTOP, waiting until it is stopped) and resumes it when
// resume() is called, or after kWatchdog at the latest: code that waits for
// ever (the defect the stopped-target tests catch) then comes back late
// instead of hanging until the harness kills it.  20 s: twice the 10 s by
// which the tests' bounded waits (1 s timeouts) must have returned, so that
// "came back at the watchdog" is never the scheduler of a loaded machine.
class Stopper {
public:
    static constexpr double kWatchdog = 20.0;  // s
    explicit Stopper(pid_t target);
    ~Stopper() { resume(); }
    Stopper(const Stopper &) = delete;
    Stopper &operator=(const Stopper &) = delete;
    bool stopped() const { return stopped_; }
    void resume();

private:
    pid_t target_;
    bool stopped_ = false;
    std::atomic<bool> resume_{false};
    std::thread watchdog_;
};

// The usual start of a two-node test: tcaMalloc `size` bytes of `type`,
// register them, swap handles through board slot 0.  Fails the node on error.
struct PairBuffers {
    void *buf;
    tcaHandle mine;
    tcaHandle peer;  // the same buffer of node 1 - node
};
PairBuffers exchange_buffers(int node, Board &board, size_t size, tcaMemoryType type);

// A job key no other test uses.
std::string unique_job_key(const char *what);

// Fill / check a pattern that depends on (seed, offset), so a misplaced or
// stale byte is caught.
void fill_pattern(void *p, size_t n, uint32_t seed);
bool check_pattern(const void *p, size_t n, uint32_t seed, size_t *bad_at = nullptr);

// Segment files of this user whose name contains key, in /dev/shm.
int count_segments(const std::string &key);

// Notifications (slot, tag) from h's node there now, all consumed; never
// blocks.  In a node: a failing call ends the node.
int drain_count(tcaHandle *h, int slot, int tag);

}  // namespace tca::test

// In a node: report and fail the node (the process exits with 1).
#define NODE_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "node check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);   \
            std::fflush(stderr);                                                                   \
            std::_Exit(1);                                                                         \
        }                                                                                          \
    } while (0)

#define NODE_OK(expr)                                                                              \
    do {                                                                                           \
        const tcaResult node_r_ = (expr);                                                          \
        if (node_r_ != tcaSuccess) {                                                               \
            std::fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #expr,                   \
                         tcaGetErrorString(node_r_));                                              \
            std::fflush(stderr);                                                                   \
            std::_Exit(1);                                                                         \
        }                                                                                          \
    } while (0)

#define NODE_EXPECT_RESULT(expected, expr)                                                         \
    do {                                                                                           \
        const tcaResult node_r_ = (expr);                                                          \
        if (node_r_ != (expected)) {                                                               \
            std::fprintf(stderr, "%s:%d: %s -> %s, expected %s\n", __FILE__, __LINE__, #expr,      \
                         tcaGetErrorString(node_r_), tcaGetErrorString(expected));                 \
            std::fflush(stderr);                                                                   \
            std::_Exit(1);                                                                         \
        }                                                                                          \
    } while (0)
