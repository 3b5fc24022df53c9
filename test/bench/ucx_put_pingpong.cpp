// ucx_put_pingpong.cpp - the raw UCX reference of the ucx device: a
// ping-pong of puts between ranks 0 and 1, each message one
// put_last_word_after into the peer's mapped buffer (the body, a fence, the
// last word = the iteration number), the receiver progressing its worker
// until the word arrives.  This is the lower bound a TCA ping-pong over UCX
// can reach (issue goal: within 1.5x of it), measured across hosts by
// scripts/bench-multihost.sh.  MPI only exchanges worker addresses and keys.
// Prints "RESULT ucxput <bytes> <one-way us>" per size; the last message of
// every size is checked byte by byte (exit 1 on a wrong byte).
// Usage: tca_ucx_put_pingpong [DIVISOR]   (iteration counts divided by DIVISOR)
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ucx/ucp_transport.hpp"

using namespace tca;
using namespace tca::ucx;

namespace {

std::vector<std::byte> swap_with(int peer, const std::vector<std::byte> &mine) {
    uint64_t n = mine.size(), m = 0;
    MPI_Sendrecv(&n, 1, MPI_UINT64_T, peer, 0, &m, 1, MPI_UINT64_T, peer, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    std::vector<std::byte> theirs(m);
    MPI_Sendrecv(mine.data(), static_cast<int>(n), MPI_BYTE, peer, 1, theirs.data(),
                 static_cast<int>(m), MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return theirs;
}

uint64_t pattern(uint64_t size, uint64_t i) {
    return size << 40 ^ i * 0x9E3779B97F4A7C15ull;
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            std::fprintf(stderr, "ucx_put_pingpong: run with 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int peer = 1 - rank;
    const int divisor = argc > 1 && std::atoi(argv[1]) > 0 ? std::atoi(argv[1]) : 1;
    std::unique_ptr<Context> ctx;
    std::unique_ptr<Worker> worker;
    std::string why;
    if (Context::create(&ctx, &why) != tcaSuccess ||
        Worker::create(*ctx, &worker, &why) != tcaSuccess) {
        std::fprintf(stderr, "ucx_put_pingpong: UCX does not start: %s\n", why.c_str());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    std::unique_ptr<Endpoint> ep;
    if (Endpoint::create(*worker, swap_with(peer, worker->address()), true, &ep) != tcaSuccess) {
        std::fprintf(stderr, "ucx_put_pingpong: no endpoint to rank %d\n", peer);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const size_t sizes[] = {8, 64, 512, 4096, 16384, 65536, 262144, 1048576, 4194304};
    const size_t max = sizes[sizeof sizes / sizeof sizes[0] - 1];
    std::vector<uint64_t> inbox(max / 8, 0), outbox(max / 8, 0);
    std::unique_ptr<MemoryMap> map;
    if (MemoryMap::create(*ctx, inbox.data(), max, &map) != tcaSuccess)
        MPI_Abort(MPI_COMM_WORLD, 1);
    const uint64_t my_base = map->base();
    std::vector<std::byte> base_blob(sizeof my_base);
    std::memcpy(base_blob.data(), &my_base, sizeof my_base);
    uint64_t peer_base = 0;
    std::memcpy(&peer_base, swap_with(peer, base_blob).data(), sizeof peer_base);
    std::unique_ptr<RemoteKey> key;
    if (RemoteKey::create(*ep, swap_with(peer, map->packed_key()), &key) != tcaSuccess)
        MPI_Abort(MPI_COMM_WORLD, 1);

    int bad = 0;
    uint64_t seq = 0;  // the last word of every message: never repeats
    for (size_t n : sizes) {
        const int iters = std::max(1, (n <= 4096 ? 2000 : n <= 65536 ? 500 : 50) / divisor);
        const int warmup = iters / 10;
        const size_t words = n / 8;
        volatile uint64_t *last = &inbox[words - 1];
        auto send = [&](int i) {
            for (size_t w = 0; w + 1 < words; ++w)
                outbox[w] = pattern(n, w) + static_cast<uint64_t>(i);
            outbox[words - 1] = ++seq;
            return ep->put_last_word_after(outbox.data(), n, peer_base, *key,
                                           std::chrono::steady_clock::now() +
                                               std::chrono::seconds(30));
        };
        auto receive = [&]() {
            ++seq;
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
            while (*last != seq) {
                worker->progress();
                if (std::chrono::steady_clock::now() > until)
                    return false;
            }
            return true;
        };
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0;
        for (int i = 0; i < warmup + iters; ++i) {
            if (i == warmup)
                t0 = MPI_Wtime();
            if (rank == 0) {
                if (send(i) != tcaSuccess || !receive()) {
                    bad = 1;
                    break;
                }
            } else {
                if (!receive() || send(i) != tcaSuccess) {
                    bad = 1;
                    break;
                }
            }
        }
        const double us = (MPI_Wtime() - t0) * 1e6 / iters / 2;
        // The last message this rank received: every word of the peer's last iteration.
        const uint64_t i_last = static_cast<uint64_t>(warmup + iters - 1);
        for (size_t w = 0; w + 1 < words && !bad; ++w)
            if (inbox[w] != pattern(n, w) + i_last) {
                std::fprintf(stderr, "rank %d, %zu B: word %zu is %llx\n", rank, n, w,
                             (unsigned long long) inbox[w]);
                bad = 1;
            }
        if (rank == 0 && !bad)
            std::printf("RESULT ucxput %zu %.3f\n", n, us);
        std::fflush(stdout);
        int any = 0;
        MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any)
            break;
        bad = 0;
    }
    // Both sides done writing: flush while the peer still progresses.
    (void) ep->flush(std::chrono::steady_clock::now() + std::chrono::seconds(10));
    MPI_Request r;
    MPI_Ibarrier(MPI_COMM_WORLD, &r);
    for (int done = 0; !done;) {
        worker->progress();
        MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    key.reset();
    ep.reset();
    map.reset();
    worker.reset();
    ctx.reset();
    if (rank == 0)
        std::printf(any ? "ucx_put_pingpong: FAILED\n" : "ucx_put_pingpong: passed\n");
    MPI_Finalize();
    return any ? 1 : 0;
}
