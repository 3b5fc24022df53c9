// shared_heap_test.cpp - tcaMalloc(tcaMemoryCPU) memory is shared: peers put
// into it by plain stores into their mapping of the owner's arena (no system
// call, no help from the owner), within the registration only; tcaFree ends
// its handles; arenas leave /dev/shm with their node (exit without
// tcaFinalize, kill -9); size 0 allocations and handles are valid.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"

namespace tca::test {
namespace {

// These tests are about the shared heap: on whatever the outer environment
// says (the bounce passes turn it off).
NodeOptions heap_on() {
    NodeOptions o;
    o.env = "TCA_SHARED_HEAP=1";
    return o;
}

// The state letter of /proc/<pid>/stat ('T' = stopped).
char state_of(pid_t pid) {
    char path[64], buf[512];
    std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
    FILE *f = std::fopen(path, "r");
    if (f == nullptr)
        return '?';
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char *p = std::strrchr(buf, ')');
    return p != nullptr && p[1] == ' ' ? p[2] : '?';
}

tcaDeviceAttr query() {
    tcaDeviceAttr a{};
    NODE_OK(tcaQueryDevice(&a));
    return a;
}

void dma(tcaHandle *dst, off_t dst_off, tcaHandle *src, off_t src_off, size_t n, int flags,
         int slot, int tag) {
    tcaDesc *d = tcaDescNew();
    NODE_CHECK(d != nullptr);
    NODE_OK(tcaDescSetMemcpy(d, dst, dst_off, src, src_off, n, flags, slot, tag));
    NODE_OK(tcaDescSet(d, 0));
    NODE_OK(tcaStartDMADesc(0));
    NODE_OK(tcaWaitDMAC(0));
    NODE_OK(tcaDescFree(d));
}

// Node 1 stops itself (SIGSTOP: no thread of it runs) after it published its
// tcaMalloc'd buffer; node 0 puts into it by PIO and by DMA, then wakes it.
// Single copy is off, so memory that was not shared would need node 1's
// engine thread (the bounce path) and node 0 would wait for ever: only plain
// stores into node 0's mapping of node 1's arena can complete.
TEST(SharedHeap, PeersPutByPlainStoresIntoAStoppedOwner) {
    NodeOptions opt;
    opt.env = "TCA_SINGLE_COPY=0;TCA_SHARED_HEAP=1";
    opt.timeout_s = 60;
    EXPECT_TRUE(run_nodes(
        2,
        [](int node, Board &board) {
            const size_t n = (1u << 20) + 4096;
            auto [buf, mine, peer] = exchange_buffers(node, board, n, tcaMemoryCPU);
            NODE_CHECK(query().heap_arenas >= 1);
            if (node == 1) {
                std::memset(buf, 0, n);
                board.value[0].store(static_cast<int>(getpid()));
                board.barrier();
                raise(SIGSTOP);  // node 0 sends SIGCONT once it has written
                NODE_OK(tcaWaitDMARecvDesc(&peer, 5, 1));
                NODE_OK(tcaWaitDMARecvDesc(&peer, 5, 2));
                NODE_CHECK(check_pattern(buf, 4096, 11));
                NODE_CHECK(check_pattern(static_cast<unsigned char *>(buf) + 4096, n - 4096, 12));
            } else {
                fill_pattern(buf, 4096, 11);
                fill_pattern(static_cast<unsigned char *>(buf) + 4096, n - 4096, 12);
                board.barrier();
                const pid_t owner = static_cast<pid_t>(board.value[0].load());
                for (int i = 0; i < 5000 && state_of(owner) != 'T'; ++i)
                    usleep(1000);
                NODE_CHECK(state_of(owner) == 'T');
                NODE_CHECK(query().peer_arenas_mapped == 0);
                NODE_OK(tcaPioWrite(&peer, 0, buf, 4096, tcaDMANotify, 5, 1));
                dma(&peer, 4096, &mine, 4096, n - 4096, tcaDMANotify, 5, 2);
                NODE_CHECK(state_of(owner) == 'T');  // it was never needed
                NODE_CHECK(query().peer_arenas_mapped >= 1);
                kill(owner, SIGCONT);
            }
            board.barrier();
            return 0;
        },
        opt));
}

// A handle of an interior pointer of a tcaMalloc'd block covers exactly its
// range: puts inside land at the right place, puts past it are refused, and
// a handle whose size was enlarged by hand is refused too.
TEST(SharedHeap, InteriorPointerHandlesAreExact) {
    EXPECT_TRUE(run_nodes(
        2,
        [](int node, Board &board) {
            const size_t n = 64 * 1024, off = 4096 + 64, len = 8192;
            void *buf = nullptr;
            NODE_OK(tcaMalloc(&buf, n, tcaMemoryCPU));
            auto *b = static_cast<unsigned char *>(buf);
            tcaHandle inner{}, whole{};
            NODE_OK(tcaCreateHandle(&inner, b + off, len, tcaMemoryCPU));
            NODE_OK(tcaCreateHandle(&whole, b, n, tcaMemoryCPU));
            board.publish(node, 1, inner);
            if (node == 1)
                std::memset(b, 0x5a, n);
            board.barrier();
            if (node == 0) {
                tcaHandle peer = board.get(1, 1);
                fill_pattern(b, len, 3);
                NODE_OK(tcaPioWrite(&peer, 0, b, 8, 0, 0, 0));
                NODE_OK(tcaPioWrite(&peer, len - 8, b + len - 8, 8, 0, 0, 0));
                NODE_EXPECT_RESULT(tcaErrorOutOfRange, tcaPioWrite(&peer, len - 7, b, 8, 0, 0, 0));
                tcaDesc *d = tcaDescNew();
                NODE_EXPECT_RESULT(tcaErrorOutOfRange,
                                   tcaDescSetMemcpy(d, &peer, 1, &whole, 0, len, 0, 0, 0));
                NODE_OK(tcaDescSetMemcpy(d, &peer, 8, &whole, 8, len - 16, tcaDMANotify, 6, 1));
                NODE_OK(tcaDescSet(d, 0));
                NODE_OK(tcaStartDMADesc(0));
                NODE_OK(tcaWaitDMAC(0));
                NODE_OK(tcaDescFree(d));
                tcaHandle bigger = peer;  // forged: the same registration, larger
                bigger.size = n;
                NODE_EXPECT_RESULT(tcaErrorInvalidHandle, tcaPioWrite(&bigger, len, b, 8, 0, 0, 0));
                tcaHandle moved = peer;  // forged: another base inside the block
                moved.addr -= off;
                NODE_EXPECT_RESULT(tcaErrorInvalidHandle, tcaPioWrite(&moved, 0, b, 8, 0, 0, 0));
                NODE_CHECK(query().peer_arenas_mapped >= 1);
            } else {
                tcaHandle from = board.get(0, 1);
                NODE_OK(tcaWaitDMARecvDesc(&from, 6, 1));
                NODE_CHECK(check_pattern(b + off, len, 3));
                for (size_t i = 0; i < n; ++i)
                    if (i < off || i >= off + len)
                        NODE_CHECK(b[i] == 0x5a);
            }
            board.barrier();
            NODE_OK(tcaFree(buf, tcaMemoryCPU));
            return 0;
        },
        heap_on()));
}

// tcaFree ends the registrations of the block (small blocks and blocks with
// an arena of their own): a peer's later put fails with
// tcaErrorNotRegistered, and the memory serves the next tcaMalloc, whose new
// handle peers can write again.
TEST(SharedHeap, FreeEndsRegistrationsAndTheMemoryIsReused) {
    EXPECT_TRUE(run_nodes(
        2,
        [](int node, Board &board) {
            for (const size_t n : {size_t(64) << 10, size_t(64) << 20}) {
                void *buf = nullptr;
                NODE_OK(tcaMalloc(&buf, n, tcaMemoryCPU));
                tcaHandle h{};
                NODE_OK(tcaCreateHandle(&h, buf, n, tcaMemoryCPU));
                board.publish(node, 2, h);
                board.barrier();
                tcaHandle peer = board.get(1 - node, 2);
                uint64_t v = 0x1111 + n;
                if (node == 0)
                    NODE_OK(tcaPioWrite(&peer, n - 8, &v, 8, tcaDMANotify, 7, 1));
                else
                    NODE_OK(tcaWaitDMARecvDesc(&peer, 7, 1));
                if (node == 1)
                    NODE_CHECK(std::memcmp(static_cast<char *>(buf) + n - 8, &v, 8) == 0);
                const int arenas_before = query().heap_arenas;
                board.barrier();
                if (node == 1)
                    NODE_OK(tcaFree(buf, tcaMemoryCPU));
                board.barrier();
                if (node == 0) {
                    NODE_EXPECT_RESULT(tcaErrorNotRegistered,
                                       tcaPioWrite(&peer, 0, &v, 8, 0, 0, 0));
                    tcaDesc *d = tcaDescNew();
                    NODE_EXPECT_RESULT(tcaErrorNotRegistered,
                                       tcaDescSetMemcpy(d, &peer, 0, &h, 0, 8, 0, 0, 0));
                    NODE_OK(tcaDescFree(d));
                } else if (n >= (size_t(64) << 20)) {
                    NODE_CHECK(query().heap_arenas ==
                               arenas_before - 1);  // its own arena went with it
                }
                // Reused: allocate again (the same address may come back) and write.
                void *again = nullptr;
                if (node == 1) {
                    NODE_OK(tcaMalloc(&again, n, tcaMemoryCPU));
                    NODE_OK(tcaCreateHandle(&h, again, n, tcaMemoryCPU));
                    board.publish(node, 3, h);
                }
                board.barrier();
                v = 0x2222 + n;
                if (node == 0) {
                    tcaHandle fresh = board.get(1, 3);
                    std::memcpy(buf, &v, 8);
                    dma(&fresh, static_cast<off_t>(n - 8), &h, 0, 8, tcaDMANotify, 7,
                        2);  // h: node 0's buffer
                    NODE_EXPECT_RESULT(tcaErrorNotRegistered,
                                       tcaPioWrite(&peer, 0, &v, 8, 0, 0, 0));
                } else {
                    NODE_OK(tcaWaitDMARecvDesc(&peer, 7, 2));
                    NODE_CHECK(std::memcmp(static_cast<char *>(again) + n - 8, &v, 8) == 0);
                    NODE_OK(tcaFree(again, tcaMemoryCPU));
                }
                board.barrier();
                if (node == 0)
                    NODE_OK(tcaFree(buf, tcaMemoryCPU));
            }
            return 0;
        },
        heap_on()));
}

// Published programs never call tcaFinalize: a node that returns from main
// (static destructors run) removes its arenas with its segment.
TEST(SharedHeap, ArenasGoneAfterExitWithoutFinalize) {
    NodeOptions opt = heap_on();
    opt.init = false;
    opt.job_key = unique_job_key("heapexit");
    const std::string key = opt.job_key;
    EXPECT_TRUE(run_nodes(
        2,
        [key](int node, Board &board) {
            tcaInitParams p{key.c_str(), node, 2};
            NODE_OK(tcaInitWithParams(&p));
            void *small = nullptr, *big = nullptr;
            NODE_OK(tcaMalloc(&small, 4096, tcaMemoryCPU));
            NODE_OK(tcaMalloc(&big, 80u << 20, tcaMemoryCPU));
            tcaHandle h{};
            NODE_OK(tcaCreateHandle(&h, small, 4096, tcaMemoryCPU));
            board.publish(node, 0, h);
            board.barrier();
            tcaHandle peer = board.get(1 - node, 0);
            NODE_OK(tcaPioWrite(&peer, 0, &node, sizeof node, 0, 0, 0));
            NODE_CHECK(query().heap_arenas == 2);
            NODE_CHECK(count_segments(key) >=
                       6);  // 2 segments, 4 arenas (until the first node leaves)
            board.end_barrier(node);
            std::exit(0);  // as a program's main returns: no tcaFinalize
            return 0;
        },
        opt));
    EXPECT_EQ(count_segments(key), 0);
}

// kill -9: nobody runs a destructor; a survivor that finds the node dead
// removes its segment and its arenas, and so does the next start.
TEST(SharedHeap, ArenasOfAKilledNodeAreSwept) {
    for (const bool survivor : {true, false}) {
        NodeOptions opt = heap_on();
        opt.job_key = unique_job_key("heapkill");
        opt.killed_node = 1;
        const std::string key = opt.job_key;
        EXPECT_TRUE(run_nodes(
            2,
            [key, survivor](int node, Board &board) {
                void *small = nullptr, *big = nullptr;
                NODE_OK(tcaMalloc(&small, 4096, tcaMemoryCPU));
                NODE_OK(tcaMalloc(&big, 64u << 20, tcaMemoryCPU));
                tcaHandle h{};
                NODE_OK(tcaCreateHandle(&h, small, 4096, tcaMemoryCPU));
                board.publish(node, 0, h);
                board.barrier();
                if (node == 1)
                    raise(SIGKILL);
                // Node 0 waits for a notification node 1 will never send: the
                // wait finds it dead (and removes its files), or node 0 leaves
                // first when the survivor does not look.
                tcaHandle peer = board.get(1, 0);
                if (survivor)
                    NODE_EXPECT_RESULT(tcaErrorPeerGone, tcaWaitDMARecvDesc(&peer, 1, 1));
                return 0;
            },
            opt));
        if (survivor) {
            EXPECT_EQ(count_segments(key), 0)
                << "the survivor should have removed the dead node's files";
        } else {
            // Every start sweeps this user's stale files, whatever their job:
            // a test running beside this one (make check -j) may have swept
            // them already.  Found: 1 run in 10 failed here that way.
            const int left = count_segments(key);
            EXPECT_TRUE(left == 0 || left >= 3) << left << " of the killed node's 3 files left";
            EXPECT_TRUE(run_nodes(1, [](int, Board &) { return 0; }));
            EXPECT_EQ(count_segments(key), 0) << "the next start should have removed them";
        }
    }
}

// Size 0 (programs with zero shadow widths): tcaMalloc gives distinct
// pointers that free as usual, tcaCreateHandle a handle of 0 bytes; 0-byte
// copies to it are no-ops that still notify, 1 byte is out of range.
TEST(SharedHeap, SizeZeroAllocationsAndHandles) {
    EXPECT_TRUE(run_nodes(
        2,
        [](int node, Board &board) {
            for (const tcaMemoryType t : {tcaMemoryCPU, tcaMemoryInternal}) {
                void *a = nullptr, *b = nullptr;
                NODE_OK(tcaMalloc(&a, 0, t));
                NODE_OK(tcaMalloc(&b, 0, t));
                NODE_CHECK(a != nullptr && b != nullptr && a != b);
                NODE_OK(tcaFree(b, t));
                NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaFree(b, t));
                tcaHandle zero{};
                NODE_OK(tcaCreateHandle(&zero, a, 0, t));
                NODE_CHECK(zero.size == 0);
                tcaHandle src{};
                void *s = nullptr;
                NODE_OK(tcaMalloc(&s, 64, t));
                NODE_OK(tcaCreateHandle(&src, s, 64, t));
                board.publish(node, 4, zero);
                board.barrier();
                tcaHandle peer = board.get(1 - node, 4);
                if (node == 0) {
                    NODE_OK(tcaPioWrite(&peer, 0, nullptr, 0, tcaDMANotify, 8, 1));
                    NODE_EXPECT_RESULT(tcaErrorOutOfRange, tcaPioWrite(&peer, 0, s, 1, 0, 0, 0));
                    tcaDesc *d = tcaDescNew();
                    NODE_EXPECT_RESULT(tcaErrorOutOfRange,
                                       tcaDescSetMemcpy(d, &peer, 0, &src, 0, 1, 0, 0, 0));
                    NODE_EXPECT_RESULT(tcaErrorOutOfRange,
                                       tcaDescSetMemcpy(d, &peer, 1, &src, 0, 0, 0, 0, 0));
                    NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &src, 0, 0, tcaDMANotify, 8, 2));
                    NODE_OK(tcaDescSetMemcpy(d, &src, 0, &zero, 0, 0, 0, 0,
                                             0));  // from a 0-byte handle
                    NODE_OK(tcaDescSet(d, 1));
                    NODE_OK(tcaStartDMADesc(1));
                    NODE_OK(tcaWaitDMAC(1));
                    NODE_OK(tcaDescFree(d));
                } else {
                    NODE_OK(tcaWaitDMARecvDesc(&peer, 8, 1));  // a 0-byte handle names its node
                    NODE_OK(tcaWaitDMARecvDesc(&peer, 8, 2));
                }
                board.barrier();
                NODE_OK(tcaDestroyHandle(&zero));
                NODE_OK(tcaDestroyHandle(&src));
                NODE_OK(tcaFree(a, t));
                NODE_OK(tcaFree(s, t));
            }
            return 0;
        },
        heap_on()));
}

}  // namespace
}  // namespace tca::test
