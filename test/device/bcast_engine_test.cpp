// bcast_engine_test.cpp - coll tca's broadcast engines on the loopback device,
// without MPI: N forked nodes build the same plan, swap buffer handles, and
// run many epochs back to back (no barrier between epochs: the ready/data
// counters must keep a fast root from overwriting a buffer a child still
// reads).  The root changes the data every epoch; every node checks it.
#include <memory>
#include <vector>

#include "bcast_engine.hpp"
#include "harness.hpp"

using namespace tca::coll;
using namespace tca::test;

namespace {

enum class Engine { Offload, Thread, Mixed };

int run_bcast(int node, Board &board, int n, int root, size_t bytes, Engine kind, int epochs) {
    PlanParams pp{root, bytes, 64 * 1024, 64 * 1024, 0};
    pp.max_segments = offload_max_segments(4);
    std::vector<int> nodes(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) nodes[static_cast<size_t>(i)] = i;
    const BcastPlan plan = plan_bcast(pp, nodes, n);
    std::vector<unsigned char> buf(bytes + 1);
    EngineSetup s;
    s.plan = &plan;
    s.rank = node;
    s.buffer = buf.data();
    s.data_counter = 10;
    s.ready_counter = 11;
    s.channel = 2;
    NODE_OK(tcaCreateHandle(&s.buffer_handle, buf.data(), bytes + 1, tcaMemoryCPU));
    board.publish(node, 1, s.buffer_handle);
    board.barrier();
    auto neighbour = [&](int r) { return Neighbour{r, board.get(r, 1), 10, 11}; };
    const RankRole &role = plan.roles[static_cast<size_t>(node)];
    if (role.parent >= 0) s.parent = neighbour(role.parent);
    for (int c : role.children) s.children.push_back(neighbour(c));
    std::unique_ptr<BcastEngine> engine;
    const bool offload = kind == Engine::Offload || (kind == Engine::Mixed && node % 2 == 0);
    NODE_OK(offload ? make_offload_engine(s, &engine) : make_thread_engine(s, &engine));
    for (int e = 0; e < epochs; ++e) {
        const uint32_t seed = static_cast<uint32_t>(e * 131 + root);
        if (node == root) fill_pattern(buf.data(), bytes, seed);
        NODE_OK(engine->start());
        tcaResult r;
        while ((r = engine->test()) == tcaErrorNotReady) {}
        NODE_OK(r);
        if (node != root && !check_pattern(buf.data(), bytes, seed)) {
            std::fprintf(stderr, "node %d: epoch %d wrong (n %d root %d bytes %zu)\n", node, e, n, root, bytes);
            return 1;
        }
    }
    board.barrier();  // nobody frees a buffer a parent may still write
    engine.reset();
    NODE_OK(tcaDestroyHandle(&s.buffer_handle));
    return 0;
}

void sweep(Engine kind) {
    for (int n : {2, 3, 5, 8})
        for (size_t bytes : {size_t{1}, size_t{1000}, size_t{65536 + 3}, size_t{(1 << 20) + 7}}) {
            const int root = n > 2 ? n / 2 : 1;
            const int epochs = bytes > 100000 ? 20 : 200;
            EXPECT_TRUE(run_nodes(n, [&](int node, Board &b) { return run_bcast(node, b, n, root, bytes, kind, epochs); }))
                << "n " << n << " bytes " << bytes;
        }
}

}  // namespace

TEST(BcastEngine, OffloadEveryShape) { sweep(Engine::Offload); }
TEST(BcastEngine, ThreadEveryShape) { sweep(Engine::Thread); }
TEST(BcastEngine, MixedEnginesInterOperate) {
    EXPECT_TRUE(run_nodes(5, [](int node, Board &b) { return run_bcast(node, b, 5, 0, 300000, Engine::Mixed, 50); }));
    EXPECT_TRUE(run_nodes(4, [](int node, Board &b) { return run_bcast(node, b, 4, 3, 100, Engine::Mixed, 500); }));
}
TEST(BcastEngine, EmptyMessage) {
    EXPECT_TRUE(run_nodes(3, [](int node, Board &b) { return run_bcast(node, b, 3, 0, 0, Engine::Offload, 5); }));
}
