// btl_poll_bench.cpp - what one progress pass of btl tca costs a receiver, by
// the number of peers in its sub-cluster, when it looks at every peer's ring
// and when it reads its traffic line and polls only the marked rings
// (btl_tca_poll_all_max_peers chooses between them).  Not a test: it prints
// min / median ns per pass over repeats, for
//   idle: no message anywhere (what a waiting rank pays while it spins);
//   one:  one message from one peer per pass (a ping-pong among many peers),
//         sent and received in the same thread, so the sender's share (the
//         mark) is inside the figure.
// The areas are plain process memory laid out as the component lays them
// out; no device and no MPI.
//
// Usage: btl_poll_bench [-r repeats]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "peer_area.hpp"

using namespace tca::btl;

namespace {

using Clock = std::chrono::steady_clock;

struct SubCluster {
    SubCluster(int nodes, bool by_marks)
        : nodes(nodes), layout(nodes, RingGeometry::for_payload(64, 256)),
          area(size_t(nodes), std::vector<unsigned char>(layout.bytes())),
          marks(area[0].data(), layout, nodes) {
        for (int s = 1; s < nodes; ++s) {
            to_receiver.emplace_back(area[s].data(), area[0].data(), layout, s, 0, false, by_marks);
            from_sender.emplace_back(area[0].data(), area[s].data(), layout, 0, s, false, false);
        }
    }
    int nodes;
    AreaLayout layout;
    std::vector<std::vector<unsigned char>> area;
    std::vector<PeerChannel> to_receiver;  // index s-1: node s -> node 0
    std::vector<PeerChannel> from_sender;  // index s-1: node 0's view of node s's ring
    TrafficMarks marks;                    // node 0's traffic line
};

int drain(PeerChannel &ch) {
    MessageHeader h;
    const unsigned char *data;
    int got = 0;
    while (ch.rx().peek(&h, &data)) {
        ch.rx().release(h);
        ++got;
    }
    return got;
}

int pass_every_ring(SubCluster &c) {
    int got = 0;
    for (auto &ch : c.from_sender)
        got += drain(ch);
    return got;
}

int pass_marked_rings(SubCluster &c) {
    int got = 0;
    for (uint64_t todo = c.marks.take(); todo; todo &= todo - 1)
        got += drain(c.from_sender[size_t(__builtin_ctzll(todo)) - 1]);
    return got;
}

// ns per pass of one repeat; `send` puts one message from the last peer first.
double run(SubCluster &c, bool by_marks, bool send, long passes) {
    long received = 0;
    const auto t0 = Clock::now();
    for (long i = 0; i < passes; ++i) {
        if (send) {
            PeerChannel &ch = c.to_receiver.back();
            if (unsigned char *slot = ch.tx().reserve(sizeof(i)); slot != nullptr) {
                std::memcpy(slot, &i, sizeof(i));
                ch.commit(1, sizeof(i));
            }
        }
        received += by_marks ? pass_marked_rings(c) : pass_every_ring(c);
    }
    const double ns =
        std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / double(passes);
    if (send && received != passes)
        std::fprintf(stderr, "lost messages: %ld of %ld\n", passes - received, passes);
    return ns;
}

}  // namespace

int main(int argc, char **argv) {
    int repeats = 7;
    if (argc == 3 && std::strcmp(argv[1], "-r") == 0)
        repeats = std::max(1, std::atoi(argv[2]));
    constexpr long kPasses = 200000;
    std::printf("# btl tca progress pass, ns per pass (min / median of %d repeats of %ld passes)\n",
                repeats, kPasses);
    std::printf("%6s %-5s %21s %21s %8s\n", "peers", "load", "every ring", "marked rings", "ratio");
    for (int nodes : {2, 4, 8, 9, 16, 32, 64}) {
        for (bool send : {false, true}) {
            SubCluster every(nodes, false), marked(nodes, true);
            std::vector<double> a, b;
            for (int r = 0; r < repeats; ++r) {
                a.push_back(run(every, false, send, kPasses));
                b.push_back(run(marked, true, send, kPasses));
            }
            std::sort(a.begin(), a.end());
            std::sort(b.begin(), b.end());
            const double ma = a[a.size() / 2], mb = b[b.size() / 2];
            std::printf("%6d %-5s %9.1f / %9.1f %9.1f / %9.1f %8.2f\n", nodes - 1,
                        send ? "one" : "idle", a[0], ma, b[0], mb, mb / ma);
        }
    }
    return 0;
}
