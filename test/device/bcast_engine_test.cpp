// bcast_engine_test.cpp - coll tca's broadcast engines on the loopback device,
// without MPI: N forked nodes build the same plan, swap buffer handles, and
// run many epochs back to back (no barrier between epochs: the ready/data
// counters, or the credits of staged plans, must keep a fast root from
// overwriting a buffer or slot a child still reads).  After the last epoch no
// counter may still move: the next request would take it over.  The root
// changes the data every epoch; every node checks it.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "bcast_engine.hpp"
#include "device_area.hpp"
#include "harness.hpp"
#include "tca_coll_core.h"

using namespace tca::coll;
using namespace tca::test;

namespace {

enum class Engine { Offload, Thread, Mixed };

// Counter indices of the test's single request (any free ones will do).
constexpr int kData = 10, kReady = 11, kGo = 12, kDone = 13, kCredits = 20;

// Reads of a buffer standing in for GPU memory (each node is a process).
std::atomic<uint64_t> gpu_reads{0};
tcaResult counted_copy(const GpuBuffer &, void *dst, const void *src, size_t n) {
    gpu_reads.fetch_add(1, std::memory_order_relaxed);
    std::memcpy(dst, src, n);
    return tcaSuccess;
}

// interior: every node's buffer sits at its own offset inside a larger
// registration (how a GPU buffer is registered: its CUDA allocation, the
// buffer at base + offset), so every write must add the target's offset.
size_t interior_offset(int node, bool interior) {
    return interior ? 24 + 40 * static_cast<size_t>(node) : 0;
}

// away: the application leaves each epoch to the progress thread (it computes
// between MPI_Start and MPI_Wait): the data must arrive before it tests.
// on_gpu: every node's buffer stands in for GPU memory, which the thread
// engine cannot read with the CPU: it reads it through GpuBuffer's copy,
// here a counted memcpy, once per block it sends from there (a root: into
// its slots where it has them, a staged root with two children or more,
// has_staging_area; a forwarding node of a direct plan; a staged non-root
// forwards from its slots and never reads its buffer).
int run_bcast(int node, Board &board, int n, int root, size_t bytes, Engine kind, int epochs,
              size_t staging = 0, bool interior = false, bool away = false,
              size_t staging_budget = 2u << 20, bool on_gpu = false) {
    PlanParams pp{root, bytes, 64 * 1024, 64 * 1024, 0, staging, staging_budget};
    pp.max_segments = offload_max_segments(4);
    std::vector<int> nodes(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
        nodes[static_cast<size_t>(i)] = i;
    const BcastPlan plan = plan_bcast(pp, nodes, n);
    if (staging >= bytes && bytes > 0 && n > 1 && plan.slots == 0)
        return 2;  // meant to be staged
    const RankRole &role = plan.roles[static_cast<size_t>(node)];
    const size_t at = interior_offset(node, interior);
    std::vector<unsigned char> whole(at + bytes + 1, 0xEE);
    unsigned char *buf_data = whole.data() + at;
    DeviceArea staging_area, scratch;
    EngineSetup s;
    s.plan = &plan;
    s.rank = node;
    s.buffer = buf_data;
    s.buffer_offset = at;
    s.data.index = kData;
    s.ready.index = kReady;
    s.go.index = kGo;
    s.done.index = kDone;
    for (size_t c = 0; c < role.children.size(); ++c)
        s.credits.push_back(Counter{kCredits + static_cast<int>(c), 0});
    s.channel = 2;
    if (on_gpu) {
        s.gpu.on_gpu = true;
        s.gpu.copy_to_host = counted_copy;
    }
    NODE_OK(init_counters(s));
    NODE_OK(scratch.allocate(kScratchBytes));
    s.scratch_handle = scratch.handle();
    NODE_OK(tcaCreateHandle(&s.buffer_handle, whole.data(), at + bytes + 1, tcaMemoryCPU));
    if (has_staging_area(plan, node, s.gpu.on_gpu)) {
        NODE_OK(staging_area.allocate(plan.slots * plan.slot_stride));
        s.staging = staging_area.data();
        s.staging_handle = staging_area.handle();
    }
    board.publish(node, 1, plan.slots > 0 ? s.staging_handle : s.buffer_handle);
    board.publish(node, 2, s.scratch_handle);
    board.barrier();
    auto neighbour = [&](int r) {
        return Neighbour{r,
                         board.get(r, 1),
                         board.get(r, 2),
                         kData,
                         kReady,
                         kCredits,
                         plan.slots > 0 ? 0 : interior_offset(r, interior)};
    };
    if (role.parent >= 0)
        s.parent = neighbour(role.parent);
    for (int c : role.children)
        s.children.push_back(neighbour(c));
    std::unique_ptr<BcastEngine> engine;
    const bool offload = kind == Engine::Offload || (kind == Engine::Mixed && node % 2 == 0);
    NODE_OK(offload ? make_offload_engine(s, &engine) : make_thread_engine(s, &engine));
    for (int e = 0; e < epochs; ++e) {
        const uint32_t seed = static_cast<uint32_t>(e * 131 + root);
        if (node == root)
            fill_pattern(buf_data, bytes, seed);
        NODE_OK(engine->start());
        if (away)
            board.barrier();  // every node has started (a data wait ends only after its own start)
        if (away && node != root) {  // no test(), which would do the work itself
            const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (!check_pattern(buf_data, bytes, seed) &&
                   std::chrono::steady_clock::now() < give_up)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            if (!check_pattern(buf_data, bytes, seed)) {
                std::fprintf(stderr,
                             "node %d: epoch %d did not arrive without test() (n %d bytes %zu)\n",
                             node, e, n, bytes);
                return 1;
            }
        }
        if (away)
            board.barrier();  // the root did not test() either meanwhile
        tcaResult r;
        while ((r = engine->test()) == tcaErrorNotReady) {
        }
        NODE_OK(r);
        if (node != root && !check_pattern(buf_data, bytes, seed)) {
            std::fprintf(stderr, "node %d: epoch %d wrong (n %d root %d bytes %zu)\n", node, e, n,
                         root, bytes);
            return 1;
        }
    }
    const uint64_t reads = gpu_reads.exchange(0),
                   blocks = static_cast<uint64_t>(epochs) * plan.segments;
    // (Reported at the end: the other nodes go on to the barriers below.)
    const uint64_t expected =
        role.children.empty() || (node != root && plan.slots > 0) ? 0 : blocks;
    const bool reads_wrong =
        on_gpu && !offload && reads != expected;  // offload: its descriptors read it
    if (reads_wrong)
        std::fprintf(
            stderr,
            "node %d: read its GPU buffer %llu times, not %llu (n %d bytes %zu slots %zu)\n", node,
            static_cast<unsigned long long>(reads), static_cast<unsigned long long>(expected), n,
            bytes, plan.slots);
    // Nothing outside the buffer was written (the bytes before it at its offset).
    for (size_t i = 0; i < at; ++i)
        if (whole[i] != 0xEE) {
            std::fprintf(stderr, "node %d: byte %zu before the interior buffer overwritten\n", node,
                         i);
            return 1;
        }
    // Staged: the children's credits came in whole batches (a child's epoch
    // is done once they are sent), the rest follows when they free the request.
    board.barrier();
    for (const Counter &c : s.credits) {
        if (plan.slots == 0)
            break;  // direct plans return no credits
        uint64_t moved = 0;
        NODE_OK(counter_moved(c, &moved));
        if (moved != plan.slots + blocks / plan.credit_batch * plan.credit_batch) {
            std::fprintf(
                stderr,
                "node %d: credits moved %llu after %llu blocks (slots %zu, batches of %zu)\n", node,
                static_cast<unsigned long long>(moved), static_cast<unsigned long long>(blocks),
                plan.slots, plan.credit_batch);
            return 1;
        }
    }
    board.barrier();  // every parent has looked
    NODE_OK(return_owed_credits(s, static_cast<uint64_t>(epochs)));
    board.barrier();  // nobody frees memory a parent may still write
    if (!credits_settled(s, static_cast<uint64_t>(epochs))) {
        std::fprintf(stderr, "node %d: credits missing after the last epoch\n", node);
        return 1;
    }
    engine.reset();  // a staged program stops mid-run here (epochs is no multiple of the slots)
    NODE_OK(tcaDestroyHandle(&s.buffer_handle));
    // The counters are free for the next request: nothing may still be on its way.
    board.barrier();
    for (int c : {kData, kReady, kGo, kDone}) {
        uint64_t before = 0, after = 0;
        NODE_OK(tcaCounterRead(c, &before));
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        NODE_OK(tcaCounterRead(c, &after));
        if (before != after) {
            std::fprintf(stderr, "node %d: counter %d moved after the request was freed\n", node,
                         c);
            return 1;
        }
    }
    return reads_wrong ? 1 : 0;
}

void sweep(Engine kind, size_t staging) {
    for (int n : {2, 3, 5, 8})
        for (size_t bytes : {size_t{1}, size_t{1000}, size_t{65536 + 3}, size_t{(1 << 20) + 7}}) {
            if (staging > 0 && bytes > staging)
                continue;
            const int root = n > 2 ? n / 2 : 1;
            const int epochs =
                bytes > 100000 ? 20 : 203;  // 203: runs of staged programs end mid-way
            EXPECT_TRUE(run_nodes(n,
                                  [&](int node, Board &b) {
                                      return run_bcast(node, b, n, root, bytes, kind, epochs,
                                                       staging);
                                  }))
                << "n " << n << " bytes " << bytes << " staging " << staging;
        }
}

}  // namespace

TEST(BcastEngine, OffloadEveryShape) {
    sweep(Engine::Offload, 0);
}
TEST(BcastEngine, ThreadEveryShape) {
    sweep(Engine::Thread, 0);
}
TEST(BcastEngine, OffloadStaged) {
    sweep(Engine::Offload, 4096);
}
TEST(BcastEngine, ThreadStaged) {
    sweep(Engine::Thread, 4096);
}
// Every size staged (where writing into another process is dear): chains in
// pipelined segments through slots, one-segment trees of up to 1 MiB.
TEST(BcastEngine, OffloadStagedEverySize) {
    sweep(Engine::Offload, SIZE_MAX);
}
TEST(BcastEngine, ThreadStagedEverySize) {
    sweep(Engine::Thread, SIZE_MAX);
}
// A staging budget of one slot: every segment waits for the child's credit
// of the one before (a chain of 5 segments), or every epoch for the last.
TEST(BcastEngine, StagedThroughOneSlot) {
    for (const Engine kind : {Engine::Offload, Engine::Thread, Engine::Mixed})
        for (size_t bytes : {size_t{5 * 65536 - 9}, size_t{1000}})
            EXPECT_TRUE(run_nodes(4,
                                  [&](int node, Board &b) {
                                      return run_bcast(node, b, 4, 1, bytes, kind, 23, SIZE_MAX,
                                                       false, false, 1);
                                  }))
                << "bytes " << bytes << " engine " << static_cast<int>(kind);
}
TEST(BcastEngine, MixedEnginesInterOperate) {
    EXPECT_TRUE(run_nodes(
        5, [](int node, Board &b) { return run_bcast(node, b, 5, 0, 300000, Engine::Mixed, 50); }));
    EXPECT_TRUE(run_nodes(
        4, [](int node, Board &b) { return run_bcast(node, b, 4, 3, 100, Engine::Mixed, 500); }));
    EXPECT_TRUE(run_nodes(8, [](int node, Board &b) {
        return run_bcast(node, b, 8, 5, 1024, Engine::Mixed, 501, 1024);
    }));
    EXPECT_TRUE(run_nodes(5, [](int node, Board &b) {
        return run_bcast(node, b, 5, 2, 300000, Engine::Mixed, 50, SIZE_MAX);  // a staged chain
    }));
}
// A buffer in the middle of its registration (GPU buffers: base + offset of
// the CUDA allocation), offsets differing between ranks: chains, trees and
// staged plans, both engines, np 2, 4, 5, 8 with pipelined segments.
TEST(BcastEngine, InteriorBuffers) {
    for (const Engine kind : {Engine::Offload, Engine::Thread})
        for (int n : {2, 4, 5, 8})
            for (size_t bytes : {size_t{100}, size_t{3 * 65536 + 5}}) {
                for (const size_t staging : {bytes < 1000 ? size_t{4096} : size_t{0}, SIZE_MAX})
                    EXPECT_TRUE(run_nodes(n,
                                          [&](int node, Board &b) {
                                              return run_bcast(node, b, n, n - 1, bytes, kind, 30,
                                                               staging, true);
                                          }))
                        << "n " << n << " bytes " << bytes << " engine " << static_cast<int>(kind)
                        << " staging " << staging;
            }
}

// MPI_Test and MPI_Wait do the thread engine's work on the calling thread
// (test()); an application away from MPI leaves it to the progress thread,
// which must take over once the help stops - also right after a test()
// (MPI_Start straight after MPI_Wait, then computing).
TEST(BcastEngine, ThreadEngineRunsWhileTheApplicationIsAway) {
    for (size_t bytes : {size_t{1000}, size_t{65536 + 3}})
        EXPECT_TRUE(run_nodes(3,
                              [&](int node, Board &b) {
                                  return run_bcast(node, b, 3, 0, bytes, Engine::Thread, 5, 4096,
                                                   false, true);
                              }))
            << "bytes " << bytes;
}

// The progress thread takes an epoch over only set_thread_takeover after the
// application last helped (MPI_Start counts): an application off its core
// for a moment must not find the thread competing with it (coll tca sets 5 ms
// where Open MPI yields when idle).  With 300 ms, three epochs left to the
// thread take at least 0.9 s (only this lower bound is checked: load can
// only slow a run); with 1 ms the same run must pass too.
TEST(BcastEngine, ThreadEngineTakesOverOnlyAfterItsTakeover) {
    for (const auto takeover : {std::chrono::milliseconds(300), std::chrono::milliseconds(1)})
        EXPECT_TRUE(run_nodes(
            3,
            [&](int node, Board &b) {
                set_thread_takeover(takeover);
                const auto start = std::chrono::steady_clock::now();
                const int r = run_bcast(node, b, 3, 0, 1000, Engine::Thread, 3, 4096, false, true);
                const auto took = std::chrono::steady_clock::now() - start;
                if (r == 0 && takeover.count() >= 300 && took < 3 * takeover) {
                    std::fprintf(
                        stderr, "node %d: 3 epochs without help in %lld ms, takeover %lld ms\n",
                        node,
                        static_cast<long long>(
                            std::chrono::duration_cast<std::chrono::milliseconds>(took).count()),
                        static_cast<long long>(takeover.count()));
                    return 1;
                }
                return r;
            }))
            << "takeover " << takeover.count() << " ms";
}

// GPU roots with two children or more read their buffer once per block,
// into their own slot (both engines; mixed: the odd nodes run the thread
// engine); here a host buffer stands in (the program is the same).  Interior
// buffers: the read into the slot must add the root's offset.
TEST(BcastEngine, RootWithStagingAreaForwardsFromItsSlots) {
    for (const Engine kind : {Engine::Offload, Engine::Thread, Engine::Mixed})
        for (int n : {3, 5, 8})
            for (size_t bytes : {size_t{1}, size_t{1000}, size_t{4096}})
                for (const bool interior : {false, true})
                    EXPECT_TRUE(run_nodes(n,
                                          [&](int node, Board &b) {
                                              return run_bcast(node, b, n, 0, bytes, kind, 203,
                                                               4096, interior, false, 2u << 20,
                                                               true);
                                          }))
                        << "n " << n << " bytes " << bytes << " engine " << static_cast<int>(kind)
                        << " interior " << interior;
}

// GPU buffers on the thread engine (where no DMA channel was free): a rank
// reads each block it sends from its buffer once, however often it comes
// back for its children's credits: a root with one child (no slots of its
// own: it writes from a bounce buffer) or several, one slot (a credit wait
// every block), chains, direct plans (every forwarding rank reads).
TEST(BcastEngine, ThreadEngineReadsGpuBuffersOncePerBlock) {
    struct Case {
        int n;
        size_t bytes, staging, budget;
    };
    for (const Case c :
         {Case{2, 1000, 4096, 2u << 20}, Case{2, 1000, 4096, 1}, Case{3, 1000, 4096, 1},
          Case{2, 5 * 65536 - 9, SIZE_MAX, 1}, Case{4, 5 * 65536 - 9, SIZE_MAX, 2u << 20},
          Case{2, 3 * 65536 + 5, 0, 2u << 20}, Case{5, 3 * 65536 + 5, 0, 2u << 20}})
        EXPECT_TRUE(run_nodes(c.n,
                              [&](int node, Board &b) {
                                  return run_bcast(node, b, c.n, 0, c.bytes, Engine::Thread, 23,
                                                   c.staging, c.n > 2, false, c.budget, true);
                              }))
            << "n " << c.n << " bytes " << c.bytes << " staging " << c.staging << " budget "
            << c.budget;
}

TEST(BcastEngine, EmptyMessage) {
    EXPECT_TRUE(run_nodes(
        3, [](int node, Board &b) { return run_bcast(node, b, 3, 0, 0, Engine::Offload, 5); }));
}

// A request of the core API, root 0, over `buf`, with the components' default
// segment size and chain threshold.
tca_coll_bcast_params_t core_params(const int *node_of, int size, int rank,
                                    std::vector<unsigned char> &buf, size_t staging_bytes,
                                    int engine) {
    tca_coll_bcast_params_t p{};
    p.node_of = node_of;
    p.size = size;
    p.rank = rank;
    p.root = 0;
    p.buffer = buf.data();
    p.bytes = buf.size();
    p.segment_bytes = 64 * 1024;
    p.chain_threshold = 256 * 1024;
    p.staging_bytes = staging_bytes;
    p.engine = engine;
    return p;
}

// The C core of coll tca takes its counters from the device layer, one run
// per request (4 + children), and gives them back on free: when an
// application or earlier requests hold them, a new request fails with the
// named error (the glue then lets libnbc run it on every rank), never with
// a clash.  Freed requests that never ran are settled at once.
TEST(BcastCore, CountersComeFromTheDeviceAndGoBack) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &b) {
        const int node_of[4] = {0, 1, 0, 1};
        std::vector<unsigned char> buf(1000);
        // rank 0 is the root with two children, rank 1 has one
        const tca_coll_bcast_params_t p =
            core_params(node_of, 4, node, buf, 8192, TCA_COLL_ENGINE_OFFLOAD);
        tcaDeviceAttr a{};
        NODE_OK(tcaQueryDevice(&a));
        const int free0 = a.free_counters;
        std::vector<tca_coll_bcast_t *> live;
        tcaResult err = tcaSuccess;
        for (;;) {
            tca_coll_peer_info_t mine;
            tca_coll_bcast_t *bc = tca_coll_bcast_new(&p, &mine, &err);
            if (bc == nullptr)
                break;
            NODE_CHECK(mine.data_counter >= 0 && mine.ready_counter == mine.data_counter + 1);
            live.push_back(bc);
        }
        NODE_EXPECT_RESULT(tcaErrorNoResource, err);
        const int per_request = 4 + tca_coll_bcast_num_children(live.front());
        NODE_CHECK(static_cast<int>(live.size()) == TCA_NUM_COUNTERS / per_request);
        NODE_OK(tcaQueryDevice(&a));
        NODE_CHECK(a.free_counters == free0 - static_cast<int>(live.size()) * per_request);
        for (tca_coll_bcast_t *bc : live) {
            NODE_CHECK(tca_coll_bcast_settled(bc) == 1);  // never ran: nothing can be on its way
            tca_coll_bcast_free(bc);
        }
        NODE_OK(tcaQueryDevice(&a));
        NODE_CHECK(a.free_counters == free0);
        // Counters an application holds are never handed to a request.
        int first = -1;
        NODE_OK(tcaCounterAcquire(TCA_NUM_COUNTERS - 3, &first));
        tca_coll_peer_info_t mine;
        NODE_CHECK(tca_coll_bcast_new(&p, &mine, &err) == nullptr);
        NODE_EXPECT_RESULT(tcaErrorNoResource, err);
        NODE_OK(tcaCounterRelease(first, TCA_NUM_COUNTERS - 3));
        b.barrier();
        return 0;
    }));
}

namespace {

// A rank that dies in the middle of a persistent broadcast (SIGKILL: no
// finalize, nothing in the counters) must not leave the others waiting for
// ever where the launcher does not end the job: the request fails with
// tcaErrorPeerGone within about a second, whichever engine runs it.
void dead_root(int engine) {
    NodeOptions opt;
    opt.killed_node = 0;
    EXPECT_TRUE(run_nodes(
        2,
        [engine](int node, Board &b) {
            const int node_of[2] = {0, 1};
            std::vector<unsigned char> buf(1000, static_cast<unsigned char>(node));
            const tca_coll_bcast_params_t p = core_params(node_of, 2, node, buf, 0, engine);
            tcaResult err = tcaSuccess;
            tca_coll_peer_info_t mine{};
            tca_coll_bcast_t *bc = tca_coll_bcast_new(&p, &mine, &err);
            NODE_CHECK(bc != nullptr);
            // Swap the peer infos through the board: handles in slots 10/11,
            // the numbers in value[] (node * 5 + field).
            b.publish(node, 10, mine.buffer);
            b.publish(node, 11, mine.scratch);
            const int fields[5] = {mine.node, mine.data_counter, mine.ready_counter,
                                   mine.credit_counter, static_cast<int>(mine.buffer_offset)};
            for (int i = 0; i < 5; ++i)
                b.value[node * 5 + i].store(fields[i]);
            b.barrier();
            const int peer = 1 - node;
            tca_coll_peer_info_t other{b.get(peer, 10),
                                       b.get(peer, 11),
                                       b.value[peer * 5].load(),
                                       b.value[peer * 5 + 1].load(),
                                       b.value[peer * 5 + 2].load(),
                                       b.value[peer * 5 + 3].load(),
                                       static_cast<uint64_t>(b.value[peer * 5 + 4].load())};
            NODE_OK(node == 0 ? tca_coll_bcast_connect(bc, nullptr, &other)
                              : tca_coll_bcast_connect(bc, &other, nullptr));
            b.barrier();
            if (node == 0)
                raise(SIGKILL);  // the root dies before its first epoch
            NODE_OK(tca_coll_bcast_start(bc));
            const auto t0 = std::chrono::steady_clock::now();
            tcaResult r = tcaErrorNotReady;
            while ((r = tca_coll_bcast_test(bc)) == tcaErrorNotReady &&
                   std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            const double waited =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            std::fprintf(stderr, "node 1: broadcast from a dead root: %s after %.2f s\n",
                         tcaGetErrorString(r), waited);
            NODE_EXPECT_RESULT(tcaErrorPeerGone, r);
            NODE_CHECK(waited < 5);
            tca_coll_bcast_free(bc);
            return 0;
        },
        opt));
}

TEST(BcastCore, DeadRootFailsTheOffloadRequestByName) {
    dead_root(TCA_COLL_ENGINE_OFFLOAD);
}
TEST(BcastCore, DeadRootFailsTheThreadRequestByName) {
    dead_root(TCA_COLL_ENGINE_THREAD);
}

}  // namespace
