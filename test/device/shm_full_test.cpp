// shm_full_test.cpp - /dev/shm is world-writable, so anybody can fill it.  A
// start that cannot reserve its memory is refused with the sizes in the
// message; a job that started keeps working, with correct data, whatever
// fills /dev/shm afterwards (every page it will touch was reserved at start).
// These tests fill /dev/shm: they run only inside test/shm_full.sh, which
// gives them a private small tmpfs (TCA_TEST_PRIVATE_SHM=1), and skip elsewhere.
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "harness.hpp"

namespace tca::test {
namespace {

const char *const kFiller = "/dev/shm/filler-of-shm-full-test";

bool private_shm() {
    const char *v = std::getenv("TCA_TEST_PRIVATE_SHM");
    return v != nullptr && std::strcmp(v, "1") == 0;
}

uint64_t shm_free() {
    struct statvfs fs {};
    return statvfs("/dev/shm", &fs) == 0 ? static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize : 0;
}

// Take /dev/shm's free space down to about `leave` bytes (0: to the last page).
void fill_shm(uint64_t leave) {
    const int fd = open(kFiller, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    NODE_CHECK(fd >= 0);
    off_t size = 0;
    struct stat st {};
    if (fstat(fd, &st) == 0)
        size = st.st_size;
    const uint64_t avail = shm_free();
    for (uint64_t step = avail > leave ? avail - leave : 0; step >= 4096; step /= 2)
        while (shm_free() >= leave + step &&
               posix_fallocate(fd, size, static_cast<off_t>(step)) == 0)
            size += static_cast<off_t>(step);
    close(fd);
}

#define REQUIRE_PRIVATE_SHM()                                                                      \
    if (!private_shm())                                                                            \
    GTEST_SKIP() << "fills /dev/shm: runs only in test/shm_full.sh's private tmpfs"

// Both nodes find /dev/shm almost full at start: tcaInit says so, with what
// it needed and what there was, and leaves nothing behind.
TEST(ShmFull, StartIsRefusedWithTheSizes) {
    REQUIRE_PRIVATE_SHM();
    fill_shm(16 << 10);
    NodeOptions opt;
    opt.init = false;
    opt.job_key = unique_job_key("full");
    const std::string key = opt.job_key;
    EXPECT_TRUE(run_nodes(
        2,
        [&](int node, Board &) {
            tcaInitParams p{key.c_str(), node, 2};
            NODE_EXPECT_RESULT(tcaErrorNoMemory, tcaInitWithParams(&p));
            char detail[512];
            NODE_OK(tcaGetErrorDetail(detail, sizeof detail));
            std::fprintf(stderr, "node %d: detail: %s\n", node, detail);
            NODE_CHECK(std::strstr(detail, "cannot reserve") != nullptr);
            NODE_CHECK(std::strstr(detail, "/dev/shm has") != nullptr);
            return 0;
        },
        opt));
    unlink(kFiller);
    EXPECT_EQ(count_segments(key), 0);
}

// /dev/shm filled to the last page after start: PIO and DMA puts into
// internal memory, tcaMalloc'd and plain memory, notifications of new (slot,
// tag) pairs and remote counters all still work and deliver correct data; a
// new tcaMalloc still succeeds (private memory: the shared heap cannot grow)
// and can be used.  Every page touched after the fill
// is one the old code allocated at first touch (SIGBUS).
void filled_while_running(const char *env) {
    NodeOptions opt;
    opt.env = env;
    EXPECT_TRUE(run_nodes(
        2,
        [](int node, Board &board) {
            const size_t big = 3u << 20, small = 256u << 10;
            void *heap = nullptr, *internal = nullptr;
            NODE_OK(tcaMalloc(&heap, big, tcaMemoryCPU));
            NODE_OK(tcaMalloc(&internal, small, tcaMemoryInternal));
            std::vector<unsigned char> plain(big), src(big);
            tcaHandle h_heap, h_int, h_plain, h_src;
            NODE_OK(tcaCreateHandle(&h_heap, heap, big, tcaMemoryCPU));
            NODE_OK(tcaCreateHandle(&h_int, internal, small, tcaMemoryInternal));
            NODE_OK(tcaCreateHandle(&h_plain, plain.data(), big, tcaMemoryCPU));
            NODE_OK(tcaCreateHandle(&h_src, src.data(), big, tcaMemoryCPU));
            board.publish(node, 1, h_heap);
            board.publish(node, 2, h_int);
            board.publish(node, 3, h_plain);
            board.barrier();
            if (node == 0)
                fill_shm(0);
            board.barrier();
            if (node == 0)
                std::fprintf(stderr, "/dev/shm filled: %llu bytes free\n",
                             static_cast<unsigned long long>(shm_free()));
            void *more = nullptr;
            NODE_OK(tcaMalloc(&more, big, tcaMemoryCPU));
            std::memset(more, 0x5a, big);
            NODE_OK(tcaFree(more, tcaMemoryCPU));
            tcaHandle peer_heap = board.get(1 - node, 1), peer_int = board.get(1 - node, 2),
                      peer_plain = board.get(1 - node, 3);
            const int peer = 1 - node;
            for (int round = 0; round < 8; ++round) {
                const uint32_t seed = static_cast<uint32_t>(node * 1000 + round);
                fill_pattern(src.data(), big, seed);
                // PIO into the peer's internal memory: each round new pages and tags.
                const size_t chunk = small / 8, at = static_cast<size_t>(round) * chunk;
                NODE_OK(tcaPioWrite(&peer_int, static_cast<off_t>(at), src.data(), chunk,
                                    tcaDMANotify, round % TCA_NOTIFY_SLOTS, round));
                tcaDesc *d = tcaDescNew();
                NODE_CHECK(d != nullptr);
                NODE_OK(tcaDescSetMemcpy(d, &peer_heap, 0, &h_src, 0, big, tcaDMANotify, 1,
                                         100 + round));
                NODE_OK(tcaDescSetMemcpy(d, &peer_plain, 0, &h_src, 0, big, tcaDMANotify, 2,
                                         200 + round));
                NODE_OK(tcaDescSet(d, round % 4));
                NODE_OK(tcaStartDMADesc(round % 4));
                NODE_OK(tcaWaitDMAC(round % 4));
                NODE_OK(tcaDescFree(d));
                NODE_OK(tcaCounterAddRemote(peer, round % TCA_NUM_COUNTERS, 1));
                NODE_OK(tcaWaitDMARecvDesc(&peer_int, round % TCA_NOTIFY_SLOTS, round));
                NODE_OK(tcaWaitDMARecvDesc(&peer_heap, 1, 100 + round));
                NODE_OK(tcaWaitDMARecvDesc(&peer_plain, 2, 200 + round));
                NODE_OK(tcaCounterWait(round % TCA_NUM_COUNTERS,
                                       1 + static_cast<uint64_t>(round / TCA_NUM_COUNTERS)));
                const uint32_t peer_seed = static_cast<uint32_t>(peer * 1000 + round);
                NODE_CHECK(
                    check_pattern(static_cast<unsigned char *>(internal) + at, chunk, peer_seed));
                NODE_CHECK(check_pattern(heap, big, peer_seed));
                NODE_CHECK(check_pattern(plain.data(), big, peer_seed));
                board.barrier();  // the peer overwrites only after we checked
            }
            board.barrier();
            if (node == 0)
                unlink(kFiller);
            NODE_OK(tcaFree(internal, tcaMemoryInternal));
            NODE_OK(tcaFree(heap, tcaMemoryCPU));
            return 0;
        },
        opt));
}

TEST(ShmFull, FilledWhileRunningKeepsWorking) {
    REQUIRE_PRIVATE_SHM();
    filled_while_running("");
}

TEST(ShmFull, FilledWhileRunningKeepsWorkingOnTheBouncePath) {
    REQUIRE_PRIVATE_SHM();
    filled_while_running("TCA_SINGLE_COPY=0");
}

}  // namespace
}  // namespace tca::test
