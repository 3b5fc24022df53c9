// hostile_input_test.cpp - every entry point of tca.h fed hostile values
// (negative, zero, huge, overflowing, freed or forged handles and
// descriptors, tampered handle bytes), one table row each: the call must
// return its named tcaResult - never crash, hang or succeed with wrong data.
// Also the environment variables libtca reads, and an unknown launcher.
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"

namespace tca::test {
namespace {

using Clock = std::chrono::steady_clock;

// Runs f with stderr going to a temporary file; returns what it printed.
std::string capture_stderr(const std::function<void()> &f) {
    std::fflush(stderr);
    FILE *tmp = std::tmpfile();
    if (tmp == nullptr) {
        f();
        return "";
    }
    const int saved = dup(2);
    dup2(fileno(tmp), 2);
    f();
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    std::string out;
    std::rewind(tmp);
    char buf[512];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), tmp)) > 0)
        out.append(buf, n);
    std::fclose(tmp);
    return out;
}

// One hostile call and the result it must give.
struct Row {
    const char *what;
    tcaResult expected;
    std::function<tcaResult()> call;
};

// Runs every row; prints each mismatch and each call that took over 5 s (a
// hang until the wait timeout counts as a failure, too).  Returns the number of bad rows.
int run_table(const std::vector<Row> &rows) {
    int bad = 0;
    for (const Row &row : rows) {
        const auto t0 = Clock::now();
        const tcaResult r = row.call();
        const auto took =
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
        if (r != row.expected) {
            std::fprintf(stderr, "FAIL %s: got %d (%s), expected %d (%s)\n", row.what, r,
                         tcaGetErrorString(r), row.expected, tcaGetErrorString(row.expected));
            ++bad;
        } else if (took > 5000) {
            std::fprintf(stderr,
                         "FAIL %s: right result but after %lld ms (waited for the timeout)\n",
                         row.what, static_cast<long long>(took));
            ++bad;
        }
    }
    return bad;
}

// Before tcaInit every device call says so; descriptor bookkeeping works without a device.
TEST(HostileInput, EveryEntryPointBeforeInit) {
    NodeOptions opt;
    opt.init = false;
    EXPECT_TRUE(run_nodes(
        1,
        [](int, Board &) {
            tcaHandle h{};
            void *p = nullptr;
            int i = 0;
            uint32_t u = 0;
            uint64_t v = 0;
            char path[64];
            const tcaResult NI = tcaErrorNotInitialized;
            tcaDesc *d = tcaDescNew();
            NODE_CHECK(d != nullptr);
            const std::vector<Row> rows = {
                {"tcaFinalize", NI, [] { return tcaFinalize(); }},
                {"tcaGetNodeId", NI, [&] { return tcaGetNodeId(&i); }},
                {"tcaGetNumNodes", NI, [&] { return tcaGetNumNodes(&i); }},
                {"tcaGetHopCount", NI, [&] { return tcaGetHopCount(0, 0, &i); }},
                {"tcaMalloc", NI, [&] { return tcaMalloc(&p, 64, tcaMemoryCPU); }},
                {"tcaFree", NI, [&] { return tcaFree(&i, tcaMemoryCPU); }},
                {"tcaCreateHandle", NI,
                 [&] { return tcaCreateHandle(&h, &i, sizeof(i), tcaMemoryCPU); }},
                {"tcaDestroyHandle", NI, [&] { return tcaDestroyHandle(&h); }},
                {"tcaDescSet", NI, [&] { return tcaDescSet(d, 0); }},
                {"tcaStartDMADesc", NI, [] { return tcaStartDMADesc(0); }},
                {"tcaWaitDMAC", NI, [] { return tcaWaitDMAC(0); }},
                {"tcaTestDMAC", NI, [&] { return tcaTestDMAC(0, &i); }},
                {"tcaAbortDMAC", NI, [] { return tcaAbortDMAC(0); }},
                {"tcaWaitDMARecvDesc", NI, [&] { return tcaWaitDMARecvDesc(&h, 0, 0); }},
                {"tcaTestDMARecvDesc", NI, [&] { return tcaTestDMARecvDesc(&h, 0, 0, &i); }},
                {"tcaPioWrite", NI, [&] { return tcaPioWrite(&h, 0, &i, 4, 0, 0, 0); }},
                {"tcaPioMap", NI, [&] { return tcaPioMap(&h, &p); }},
                {"tcaCounterRead", NI, [&] { return tcaCounterRead(0, &v); }},
                {"tcaCounterAdd", NI, [] { return tcaCounterAdd(0, 1); }},
                {"tcaCounterWait", NI, [] { return tcaCounterWait(0, 0); }},
                {"tcaCounterAddRemote", NI, [] { return tcaCounterAddRemote(0, 0, 1); }},
                {"tcaInterruptRaise", NI, [] { return tcaInterruptRaise(0); }},
                {"tcaInterruptCount", NI, [&] { return tcaInterruptCount(&u); }},
                {"tcaInterruptWait", NI, [] { return tcaInterruptWait(0, 0); }},
                {"tcaProgress", NI, [] { return tcaProgress(nullptr); }},
                {"tcaGetBackingPath", NI, [&] { return tcaGetBackingPath(path, sizeof(path)); }},
                {"tcaInitWithParams(NULL)", tcaErrorInvalidValue,
                 [] { return tcaInitWithParams(nullptr); }},
                {"tcaInitWithParams(node -2)", tcaErrorInvalidValue,
                 [] {
                     tcaInitParams p{"hostile", -2, 2};
                     return tcaInitWithParams(&p);
                 }},
                {"tcaInitWithParams(num_nodes -1)", tcaErrorInvalidValue,
                 [] {
                     tcaInitParams p{"hostile", 0, -1};
                     return tcaInitWithParams(&p);
                 }},
                {"tcaInitWithParams(num_nodes 65)", tcaErrorInvalidValue,
                 [] {
                     tcaInitParams p{"hostile", 0, TCA_MAX_NODES + 1};
                     return tcaInitWithParams(&p);
                 }},
                {"tcaInitWithParams(num_nodes INT_MAX)", tcaErrorInvalidValue,
                 [] {
                     tcaInitParams p{"hostile", 0, INT_MAX};
                     return tcaInitWithParams(&p);
                 }},
                {"tcaInitWithParams(node == num_nodes)", tcaErrorInvalidNode,
                 [] {
                     tcaInitParams p{"hostile", 2, 2};
                     return tcaInitWithParams(&p);
                 }},
                {"tcaInitWithParams(node INT_MAX)", tcaErrorInvalidNode,
                 [] {
                     tcaInitParams p{"hostile", INT_MAX, 2};
                     return tcaInitWithParams(&p);
                 }},
                {"tcaDescGetLength(new)", tcaSuccess, [&] { return tcaDescGetLength(d, &i); }},
                {"tcaDescFree", tcaSuccess, [&] { return tcaDescFree(d); }},
                {"tcaDescFree(freed)", tcaErrorInvalidValue, [&] { return tcaDescFree(d); }},
            };
            NODE_CHECK(run_table(rows) == 0);
            for (tcaResult r : {static_cast<tcaResult>(-1), static_cast<tcaResult>(999),
                                static_cast<tcaResult>(INT_MAX)})
                NODE_CHECK(std::strcmp(tcaGetErrorString(r), "unknown TCA result code") == 0);
            return 0;
        },
        opt));
}

int table_node(int node, Board &board, const std::string &key);

// The table over an initialised 3-node sub-cluster: node 0 calls, node 1 is
// a live peer (with one handle it destroyed), node 2 has finalised (gone).
TEST(HostileInput, EveryEntryPointTable) {
    NodeOptions opt;
    opt.init = false;
    const std::string key = unique_job_key("hostile");
    EXPECT_TRUE(run_nodes(
        3, [key](int node, Board &board) { return table_node(node, board, key); }, opt));
}

int table_node(int node, Board &board, const std::string &key) {
    tcaInitParams params{key.c_str(), node, 3};
    NODE_OK(tcaInitWithParams(&params));
    void *cpu_buf = nullptr, *int_buf = nullptr, *victim_buf = nullptr;
    NODE_OK(tcaMalloc(&cpu_buf, 4096, tcaMemoryCPU));
    NODE_OK(tcaMalloc(&int_buf, 4096, tcaMemoryInternal));
    NODE_OK(tcaMalloc(&victim_buf, 4096, tcaMemoryCPU));
    tcaHandle cpu, internal, victim;
    NODE_OK(tcaCreateHandle(&cpu, cpu_buf, 4096, tcaMemoryCPU));
    NODE_OK(tcaCreateHandle(&internal, int_buf, 4096, tcaMemoryInternal));
    NODE_OK(tcaCreateHandle(&victim, victim_buf, 4096, tcaMemoryCPU));
    board.publish(node, 0, cpu);
    board.publish(node, 1, internal);
    board.publish(node, 2, victim);
    board.barrier();
    if (node == 2) {  // gone: finalised, its segments stay mapped by the others
        NODE_OK(tcaFinalize());
        board.value[0].store(1);
        return 0;
    }
    if (node == 1) {
        NODE_OK(tcaDestroyHandle(&victim));  // node 0 holds a copy: a stale handle
        board.value[1].store(1);
        // until node 0 is done with our handles (bounded: node 0 may have failed)
        for (int waited = 0; board.value[2].load() == 0 && waited < 60 * 5000; ++waited)
            usleep(200);
        NODE_OK(tcaFinalize());
        return 0;
    }
    while (board.value[0].load() == 0 || board.value[1].load() == 0)
        usleep(200);

    const tcaHandle peer = board.get(1, 0), peer_destroyed = board.get(1, 2);
    tcaHandle own_destroyed = victim;
    NODE_OK(tcaDestroyHandle(&victim));
    tcaHandle forged = peer;
    forged.key ^= 0x1000;
    tcaHandle zero{};
    tcaHandle region_cpu_as_internal = cpu;  // the one tampered byte of the issue
    region_cpu_as_internal.region = tcaMemoryInternal;
    tcaHandle region_out_of_enum = internal;
    region_out_of_enum.region = 0xff;
    tcaHandle node_out_of_range = peer;
    node_out_of_range.node = 0xffff;
    tcaHandle reg_index_huge = peer;
    reg_index_huge.reg_index = 0xffffffffu;
    tcaHandle size_grown = peer;
    size_grown.size = UINT64_MAX;

    tcaDesc *d = tcaDescNew();
    tcaDesc *freed = tcaDescNew();
    NODE_CHECK(d != nullptr && freed != nullptr);
    NODE_OK(tcaDescFree(freed));
    alignas(64) unsigned char fake_desc[256] = {};
    auto *forged_desc = reinterpret_cast<tcaDesc *>(fake_desc);
    tcaDesc *empty = tcaDescNew();

    void *p = nullptr;
    void *freed_host = nullptr;
    NODE_OK(tcaMalloc(&freed_host, 64, tcaMemoryCPU));
    NODE_OK(tcaFree(freed_host, tcaMemoryCPU));
    int i = 0;
    uint32_t count = 0;
    uint64_t v = 0;
    char src[4096] = {};
    char path[256];
    tcaHandle out{};
    const auto huge = static_cast<off_t>(LLONG_MAX);
    const auto bad_type = static_cast<tcaMemoryType>(7);
    const auto neg_type = static_cast<tcaMemoryType>(-1);
    using R = tcaResult;
    const R IV = tcaErrorInvalidValue, IH = tcaErrorInvalidHandle, OR = tcaErrorOutOfRange,
            NR = tcaErrorNotRegistered, PG = tcaErrorPeerGone, IN = tcaErrorInvalidNode,
            IC = tcaErrorInvalidChannel, ICo = tcaErrorInvalidCounter, IS = tcaErrorInvalidSlot,
            NM = tcaErrorNoMemory, OK = tcaSuccess;

    const std::vector<Row> rows = {
        // ---- lifetime and queries
        {"tcaGetNodeId(NULL)", IV, [&] { return tcaGetNodeId(nullptr); }},
        {"tcaGetNumNodes(NULL)", IV, [&] { return tcaGetNumNodes(nullptr); }},
        {"tcaGetHopCount(-1, 0)", IN, [&] { return tcaGetHopCount(-1, 0, &i); }},
        {"tcaGetHopCount(0, 3)", IN, [&] { return tcaGetHopCount(0, 3, &i); }},
        {"tcaGetHopCount(INT_MIN, INT_MAX)", IN,
         [&] { return tcaGetHopCount(INT_MIN, INT_MAX, &i); }},
        {"tcaGetHopCount(NULL)", IV, [&] { return tcaGetHopCount(0, 1, nullptr); }},
        // ---- memory
        {"tcaMalloc(NULL)", IV, [&] { return tcaMalloc(nullptr, 64, tcaMemoryCPU); }},
        {"tcaMalloc(SIZE_MAX) wraps", NM, [&] { return tcaMalloc(&p, SIZE_MAX, tcaMemoryCPU); }},
        {"tcaMalloc(SIZE_MAX - 4094) wraps", NM,
         [&] { return tcaMalloc(&p, SIZE_MAX - 4094, tcaMemoryCPU); }},
        {"tcaMalloc(internal SIZE_MAX)", NM,
         [&] { return tcaMalloc(&p, SIZE_MAX, tcaMemoryInternal); }},
        {"tcaMalloc(internal SIZE_MAX - 62)", NM,
         [&] { return tcaMalloc(&p, SIZE_MAX - 62, tcaMemoryInternal); }},
        {"tcaMalloc(type 7)", IV, [&] { return tcaMalloc(&p, 64, bad_type); }},
        {"tcaMalloc(type -1)", IV, [&] { return tcaMalloc(&p, 64, neg_type); }},
        {"tcaFree(NULL)", IV, [&] { return tcaFree(nullptr, tcaMemoryCPU); }},
        {"tcaFree(not from tcaMalloc)", IV, [&] { return tcaFree(src, tcaMemoryCPU); }},
        {"tcaFree(freed)", IV, [&] { return tcaFree(freed_host, tcaMemoryCPU); }},
        {"tcaFree(type 7)", IV, [&] { return tcaFree(cpu_buf, bad_type); }},
        {"tcaFree(inside internal)", IV,
         [&] { return tcaFree(static_cast<char *>(int_buf) + 64, tcaMemoryInternal); }},
        {"tcaCreateHandle(NULL handle)", IH,
         [&] { return tcaCreateHandle(nullptr, src, 64, tcaMemoryCPU); }},
        {"tcaCreateHandle(NULL addr)", IV,
         [&] { return tcaCreateHandle(&out, nullptr, 64, tcaMemoryCPU); }},
        {"tcaCreateHandle(size 0, NULL addr)", IV,
         [&] { return tcaCreateHandle(&out, nullptr, 0, tcaMemoryCPU); }},
        {"tcaCreateHandle(SIZE_MAX) wraps", OR,
         [&] { return tcaCreateHandle(&out, src, SIZE_MAX, tcaMemoryCPU); }},
        {"tcaCreateHandle(top of address space)", OR,
         [&] {
             return tcaCreateHandle(&out, reinterpret_cast<void *>(UINTPTR_MAX - 4095), 8192,
                                    tcaMemoryCPU);
         }},
        {"tcaCreateHandle(internal, too long)", OR,
         [&] { return tcaCreateHandle(&out, int_buf, SIZE_MAX, tcaMemoryInternal); }},
        {"tcaCreateHandle(internal, not internal)", OR,
         [&] { return tcaCreateHandle(&out, src, 64, tcaMemoryInternal); }},
        {"tcaCreateHandle(type 7)", IV, [&] { return tcaCreateHandle(&out, src, 64, bad_type); }},
        {"tcaDestroyHandle(NULL)", IH, [&] { return tcaDestroyHandle(nullptr); }},
        {"tcaDestroyHandle(zeroed)", IH, [&] { return tcaDestroyHandle(&zero); }},
        {"tcaDestroyHandle(twice)", NR, [&] { return tcaDestroyHandle(&own_destroyed); }},
        {"tcaDestroyHandle(peer's)", IH, [&] { return tcaDestroyHandle(&board.get(1, 0)); }},
        {"tcaDestroyHandle(region tampered)", IH,
         [&] { return tcaDestroyHandle(&region_cpu_as_internal); }},
        // ---- descriptors
        {"tcaDescFree(NULL)", IV, [&] { return tcaDescFree(nullptr); }},
        {"tcaDescFree(freed)", IV, [&] { return tcaDescFree(freed); }},
        {"tcaDescFree(forged)", IV, [&] { return tcaDescFree(forged_desc); }},
        {"tcaDescSetMemcpy(freed desc)", IV,
         [&] { return tcaDescSetMemcpy(freed, &board.get(1, 0), 0, &cpu, 0, 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy(forged desc)", IV,
         [&] { return tcaDescSetMemcpy(forged_desc, &board.get(1, 0), 0, &cpu, 0, 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy2D(freed desc)", IV,
         [&] {
             return tcaDescSetMemcpy2D(freed, &board.get(1, 0), 0, 8, &cpu, 0, 8, 8, 2, 0, 0, 0);
         }},
        {"tcaDescSetTrigger(freed desc)", IV, [&] { return tcaDescSetTrigger(freed, 0, 1, 0); }},
        {"tcaDescSetCounterAdd(freed desc)", IV, [&] { return tcaDescSetCounterAdd(freed, 0, 1); }},
        {"tcaDescGetLength(freed desc)", IV, [&] { return tcaDescGetLength(freed, &i); }},
        {"tcaDescClear(NULL)", IV, [&] { return tcaDescClear(nullptr); }},
        {"tcaDescClear(freed desc)", IV, [&] { return tcaDescClear(freed); }},
        {"tcaDescClear(forged desc)", IV, [&] { return tcaDescClear(forged_desc); }},
        {"tcaDescGetLength(NULL count)", IV, [&] { return tcaDescGetLength(d, nullptr); }},
        {"tcaDescSet(freed desc)", IV, [&] { return tcaDescSet(freed, 0); }},
        {"tcaDescSet(forged desc)", IV, [&] { return tcaDescSet(forged_desc, 0); }},
        {"tcaDescSetMemcpy(NULL dst)", IH,
         [&] { return tcaDescSetMemcpy(d, nullptr, 0, &cpu, 0, 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy(zeroed dst)", IH,
         [&] { return tcaDescSetMemcpy(d, &zero, 0, &cpu, 0, 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy(dst node 65535)", IH,
         [&] { return tcaDescSetMemcpy(d, &node_out_of_range, 0, &cpu, 0, 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy(dst reg_index huge)", IH,
         [&] { return tcaDescSetMemcpy(d, &reg_index_huge, 0, &cpu, 0, 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy(dst size tampered)", IH,
         [&] { return tcaDescSetMemcpy(d, &size_grown, 8192, &cpu, 0, 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy(dst region 0xff)", IH,
         [&] { return tcaDescSetMemcpy(d, &region_out_of_enum, 0, &cpu, 0, 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy(src region tampered)", IH,
         [&] {
             return tcaDescSetMemcpy(d, &board.get(1, 0), 0, &region_cpu_as_internal, 0, 8, 0, 0,
                                     0);
         }},
        {"tcaDescSetMemcpy(forged key)", NR,
         [&] { return tcaDescSetMemcpy(d, &forged, 0, &cpu, 0, 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy(destroyed dst)", NR,
         [&] { return tcaDescSetMemcpy(d, &board.get(1, 2), 0, &cpu, 0, 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy(destroyed src)", NR,
         [&] { return tcaDescSetMemcpy(d, &board.get(1, 0), 0, &own_destroyed, 0, 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy(dst_off -1)", OR,
         [&] { return tcaDescSetMemcpy(d, &board.get(1, 0), -1, &cpu, 0, 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy(src_off LLONG_MIN)", OR,
         [&] {
             return tcaDescSetMemcpy(d, &board.get(1, 0), 0, &cpu, static_cast<off_t>(LLONG_MIN), 8,
                                     0, 0, 0);
         }},
        {"tcaDescSetMemcpy(dst_off LLONG_MAX)", OR,
         [&] { return tcaDescSetMemcpy(d, &board.get(1, 0), huge, &cpu, 0, 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy(size SIZE_MAX)", OR,
         [&] { return tcaDescSetMemcpy(d, &board.get(1, 0), 0, &cpu, 0, SIZE_MAX, 0, 0, 0); }},
        {"tcaDescSetMemcpy(off + size wraps)", OR,
         [&] { return tcaDescSetMemcpy(d, &board.get(1, 0), 16, &cpu, 0, SIZE_MAX - 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy(flags -1)", IV,
         [&] { return tcaDescSetMemcpy(d, &board.get(1, 0), 0, &cpu, 0, 8, -1, 0, 0); }},
        {"tcaDescSetMemcpy(notify slot -1)", IS,
         [&] { return tcaDescSetMemcpy(d, &board.get(1, 0), 0, &cpu, 0, 8, tcaDMANotify, -1, 0); }},
        {"tcaDescSetMemcpy(notify slot INT_MAX)", IS,
         [&] {
             return tcaDescSetMemcpy(d, &board.get(1, 0), 0, &cpu, 0, 8, tcaDMANotify, INT_MAX, 0);
         }},
        {"tcaDescSetMemcpy(remote source)", tcaErrorRemoteRead,
         [&] { return tcaDescSetMemcpy(d, &cpu, 0, &board.get(1, 0), 0, 8, 0, 0, 0); }},
        {"tcaDescSetMemcpy2D(pitch < width)", IV,
         [&] {
             return tcaDescSetMemcpy2D(d, &board.get(1, 0), 0, 8, &cpu, 0, 64, 64, 2, 0, 0, 0);
         }},
        {"tcaDescSetMemcpy2D(height SIZE_MAX)", OR,
         [&] {
             return tcaDescSetMemcpy2D(d, &board.get(1, 0), 0, 64, &cpu, 0, 64, 64, SIZE_MAX, 0, 0,
                                       0);
         }},
        {"tcaDescSetMemcpy2D(pitch * height wraps)", OR,
         [&] {
             return tcaDescSetMemcpy2D(d, &board.get(1, 0), 0, SIZE_MAX / 2, &cpu, 0, 64, 64, 3, 0,
                                       0, 0);
         }},
        {"tcaDescSetMemcpy2D(width SIZE_MAX)", OR,
         [&] {
             return tcaDescSetMemcpy2D(d, &board.get(1, 0), 0, SIZE_MAX, &cpu, 0, SIZE_MAX,
                                       SIZE_MAX, 1, 0, 0, 0);
         }},
        {"tcaDescSetMemcpy2D(dst_off -1)", OR,
         [&] {
             return tcaDescSetMemcpy2D(d, &board.get(1, 0), -1, 64, &cpu, 0, 64, 8, 2, 0, 0, 0);
         }},
        {"tcaDescGetLength(nothing invalid got in)", OK,
         [&] {
             const tcaResult r = tcaDescGetLength(d, &i);
             return r == tcaSuccess && i != 0 ? tcaErrorInvalidValue : r;
         }},
        {"tcaDescSetTrigger(empty chain)", IV, [&] { return tcaDescSetTrigger(d, 0, 1, 0); }},
        {"tcaDescSetCounterAdd(empty chain)", IV, [&] { return tcaDescSetCounterAdd(d, 0, 1); }},
        {"tcaDescSetMemcpy(valid)", OK,
         [&] { return tcaDescSetMemcpy(d, &board.get(1, 0), 0, &cpu, 0, 8, 0, 0, 0); }},
        {"tcaDescSetTrigger(counter -2)", ICo, [&] { return tcaDescSetTrigger(d, -2, 1, 0); }},
        {"tcaDescSetTrigger(counter 256)", ICo,
         [&] { return tcaDescSetTrigger(d, TCA_NUM_COUNTERS, 1, 0); }},
        {"tcaDescSetTrigger(counter INT_MIN)", ICo,
         [&] { return tcaDescSetTrigger(d, INT_MIN, 1, 0); }},
        {"tcaDescSetCounterAdd(counter -2)", ICo, [&] { return tcaDescSetCounterAdd(d, -2, 1); }},
        {"tcaDescSetCounterAdd(counter INT_MAX)", ICo,
         [&] { return tcaDescSetCounterAdd(d, INT_MAX, 1); }},
        {"tcaDescSet(channel -1)", IC, [&] { return tcaDescSet(d, -1); }},
        {"tcaDescSet(channel 4)", IC, [&] { return tcaDescSet(d, TCA_NUM_DMA_CHANNELS); }},
        {"tcaDescSet(channel INT_MAX)", IC, [&] { return tcaDescSet(d, INT_MAX); }},
        {"tcaDescSet(empty chain)", OK,
         [&] { return tcaDescSet(empty, 0); }},  // a run that completes at once
        {"tcaStartDMADesc(-1)", IC, [] { return tcaStartDMADesc(-1); }},
        {"tcaStartDMADesc(INT_MIN)", IC, [] { return tcaStartDMADesc(INT_MIN); }},
        {"tcaStartDMADesc(nothing loaded)", tcaErrorEmptyChain, [] { return tcaStartDMADesc(3); }},
        {"tcaWaitDMAC(4)", IC, [] { return tcaWaitDMAC(TCA_NUM_DMA_CHANNELS); }},
        {"tcaTestDMAC(NULL)", IV, [] { return tcaTestDMAC(0, nullptr); }},
        {"tcaTestDMAC(99)", IC, [&] { return tcaTestDMAC(99, &i); }},
        {"tcaAbortDMAC(-1)", IC, [] { return tcaAbortDMAC(-1); }},
        // ---- notifications
        {"tcaWaitDMARecvDesc(NULL)", IH, [] { return tcaWaitDMARecvDesc(nullptr, 0, 0); }},
        {"tcaWaitDMARecvDesc(zeroed)", IH, [&] { return tcaWaitDMARecvDesc(&zero, 0, 0); }},
        {"tcaWaitDMARecvDesc(slot -1)", IS,
         [&] { return tcaWaitDMARecvDesc(&board.get(1, 0), -1, 0); }},
        {"tcaWaitDMARecvDesc(slot 64)", IS,
         [&] { return tcaWaitDMARecvDesc(&board.get(1, 0), TCA_NOTIFY_SLOTS, 0); }},
        {"tcaWaitDMARecvDesc(peer destroyed)", NR,
         [&] { return tcaWaitDMARecvDesc(&board.get(1, 2), 0, 0); }},
        {"tcaWaitDMARecvDesc(own destroyed)", NR,
         [&] { return tcaWaitDMARecvDesc(&own_destroyed, 0, 0); }},
        {"tcaWaitDMARecvDesc(forged key)", NR, [&] { return tcaWaitDMARecvDesc(&forged, 0, 0); }},
        {"tcaWaitDMARecvDesc(region tampered)", IH,
         [&] { return tcaWaitDMARecvDesc(&region_cpu_as_internal, 0, 0); }},
        {"tcaWaitDMARecvDesc(node gone)", PG,
         [&] { return tcaWaitDMARecvDesc(&board.get(2, 0), 0, 0); }},
        {"tcaTestDMARecvDesc(NULL flag)", IV,
         [&] { return tcaTestDMARecvDesc(&board.get(1, 0), 0, 0, nullptr); }},
        {"tcaTestDMARecvDesc(peer destroyed)", NR,
         [&] { return tcaTestDMARecvDesc(&board.get(1, 2), 0, 0, &i); }},
        {"tcaTestDMARecvDesc(slot INT_MIN)", IS,
         [&] { return tcaTestDMARecvDesc(&board.get(1, 0), INT_MIN, 0, &i); }},
        // ---- PIO
        {"tcaPioWrite(NULL)", IH, [&] { return tcaPioWrite(nullptr, 0, src, 8, 0, 0, 0); }},
        {"tcaPioWrite(off -1)", OR,
         [&] { return tcaPioWrite(&board.get(1, 1), -1, src, 8, 0, 0, 0); }},
        {"tcaPioWrite(off LLONG_MAX)", OR,
         [&] { return tcaPioWrite(&board.get(1, 1), huge, src, 8, 0, 0, 0); }},
        {"tcaPioWrite(size > window)", OR,
         [&] { return tcaPioWrite(&board.get(1, 1), 0, src, 4097, 0, 0, 0); }},
        {"tcaPioWrite(size SIZE_MAX)", OR,
         [&] { return tcaPioWrite(&board.get(1, 1), 8, src, SIZE_MAX, 0, 0, 0); }},
        {"tcaPioWrite(NULL src)", IV,
         [&] { return tcaPioWrite(&board.get(1, 1), 0, nullptr, 8, 0, 0, 0); }},
        {"tcaPioWrite(flags -1)", IV,
         [&] { return tcaPioWrite(&board.get(1, 1), 0, src, 8, -1, 0, 0); }},
        {"tcaPioWrite(notify slot 64)", IS,
         [&] {
             return tcaPioWrite(&board.get(1, 1), 0, src, 8, tcaDMANotify, TCA_NOTIFY_SLOTS, 0);
         }},
        {"tcaPioWrite(destroyed)", NR,
         [&] { return tcaPioWrite(&board.get(1, 2), 0, src, 8, 0, 0, 0); }},
        {"tcaPioWrite(forged key)", NR, [&] { return tcaPioWrite(&forged, 0, src, 8, 0, 0, 0); }},
        {"tcaPioWrite(region tampered)", IH,
         [&] { return tcaPioWrite(&region_cpu_as_internal, 0, src, 8, 0, 0, 0); }},
        {"tcaPioWrite(node gone)", PG,
         [&] { return tcaPioWrite(&board.get(2, 0), 0, src, 8, 0, 0, 0); }},
        {"tcaPioMap(NULL)", IH, [&] { return tcaPioMap(nullptr, &p); }},
        {"tcaPioMap(NULL addr)", IV, [&] { return tcaPioMap(&board.get(1, 1), nullptr); }},
        {"tcaPioMap(host memory)", tcaErrorNotSupported,
         [&] { return tcaPioMap(&board.get(1, 0), &p); }},
        {"tcaPioMap(region tampered)", IH, [&] { return tcaPioMap(&region_cpu_as_internal, &p); }},
        {"tcaPioMap(destroyed)", NR,
         [&] {
             tcaHandle h = peer_destroyed;
             h.region = tcaMemoryInternal;
             return tcaPioMap(&h, &p);
         }},
        {"tcaPioMap(node gone)", PG, [&] { return tcaPioMap(&board.get(2, 1), &p); }},
        // ---- counters
        {"tcaCounterRead(-1)", ICo, [&] { return tcaCounterRead(-1, &v); }},
        {"tcaCounterRead(256)", ICo, [&] { return tcaCounterRead(TCA_NUM_COUNTERS, &v); }},
        {"tcaCounterRead(NULL)", IV, [] { return tcaCounterRead(0, nullptr); }},
        {"tcaCounterAdd(INT_MIN)", ICo, [] { return tcaCounterAdd(INT_MIN, 1); }},
        {"tcaCounterWait(-1)", ICo, [] { return tcaCounterWait(-1, 0); }},
        {"tcaCounterWait(INT_MAX)", ICo, [] { return tcaCounterWait(INT_MAX, 0); }},
        {"tcaCounterAddRemote(node -1)", IN, [] { return tcaCounterAddRemote(-1, 0, 1); }},
        {"tcaCounterAddRemote(node 3)", IN, [] { return tcaCounterAddRemote(3, 0, 1); }},
        {"tcaCounterAddRemote(counter 256)", ICo,
         [] { return tcaCounterAddRemote(1, TCA_NUM_COUNTERS, 1); }},
        {"tcaCounterAddRemote(node gone)", PG, [] { return tcaCounterAddRemote(2, 0, 1); }},
        // ---- interrupts, progress, housekeeping
        {"tcaInterruptRaise(-1)", IN, [] { return tcaInterruptRaise(-1); }},
        {"tcaInterruptRaise(INT_MAX)", IN, [] { return tcaInterruptRaise(INT_MAX); }},
        {"tcaInterruptRaise(node gone)", PG, [] { return tcaInterruptRaise(2); }},
        {"tcaInterruptRaise(live peer)", OK, [] { return tcaInterruptRaise(1); }},
        {"tcaInterruptCount(NULL)", IV, [] { return tcaInterruptCount(nullptr); }},
        {"tcaInterruptWait(-1)", IV, [] { return tcaInterruptWait(0, -1); }},
        {"tcaInterruptWait(INT64_MIN)", IV, [] { return tcaInterruptWait(0, INT64_MIN); }},
        {"tcaInterruptWait(INT64_MAX, count moved)", OK,
         [&] {
             NODE_OK(tcaInterruptCount(&count));
             return tcaInterruptWait(count - 1, INT64_MAX);
         }},
        {"tcaInterruptWait(INT64_MAX) until raised", OK,
         [&] {
             NODE_OK(tcaInterruptCount(&count));
             std::thread raiser([] {
                 std::this_thread::sleep_for(std::chrono::milliseconds(100));
                 int self = 0;
                 tcaGetNodeId(&self);
                 tcaInterruptRaise(self);
             });
             const tcaResult r = tcaInterruptWait(count, INT64_MAX);  // "forever", not an overflow
             raiser.join();
             return r;
         }},
        {"tcaProgress(NULL)", OK, [] { return tcaProgress(nullptr); }},
        {"tcaGetBackingPath(NULL)", IV, [] { return tcaGetBackingPath(nullptr, 64); }},
        {"tcaGetBackingPath(len 0)", IV, [&] { return tcaGetBackingPath(path, 0); }},
        {"tcaGetBackingPath(len 1)", IV, [&] { return tcaGetBackingPath(path, 1); }},
    };
    int bad = run_table(rows);

    // Every single byte of an internal-memory handle tampered with: tcaPioMap
    // either refuses it or maps exactly the registered window (ignored
    // fields), never a wild pointer; the other calls never crash.
    void *good = nullptr;
    NODE_OK(tcaPioMap(&internal, &good));
    for (size_t byte = 0; byte < sizeof(tcaHandle); ++byte) {
        for (unsigned char x : {0x01, 0x80, 0xff}) {
            tcaHandle t = internal;
            reinterpret_cast<unsigned char *>(&t)[byte] ^= x;
            void *m = nullptr;
            const tcaResult r = tcaPioMap(&t, &m);
            if (r == tcaSuccess && m != good) {
                std::fprintf(stderr, "FAIL tcaPioMap with byte %zu ^ 0x%02x: mapped %p, not %p\n",
                             byte, x, m, good);
                ++bad;
            }
            (void) tcaPioWrite(&t, 0, src, 8, 0, 0, 0);
            int flag = 0;
            (void) tcaTestDMARecvDesc(&t, 0, 0, &flag);
            (void) tcaDescSetMemcpy(d, &board.get(1, 1), 0, &t, 0, 8, 0, 0, 0);
        }
    }

    board.value[2].store(1);  // node 1 may go
    NODE_OK(tcaDescFree(d));
    NODE_OK(tcaDescFree(empty));
    NODE_CHECK(bad == 0);
    NODE_OK(tcaFinalize());
    return 0;
}

// Zero-byte copies - 1-D size 0, 2-D height 0 or width 0 - are accepted
// no-ops alike, inside a chain that also moves real data.
TEST(HostileInput, ZeroSizeCopiesAreNoOps) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        auto [buf, mine, peer] = exchange_buffers(node, board, 4096, tcaMemoryCPU);
        if (node == 1)
            std::memset(buf, 0, 4096);
        else
            fill_pattern(buf, 4096, 7);
        board.barrier();  // node 1's buffer is cleared before anything lands
        if (node == 0) {
            tcaDesc *d = tcaDescNew();
            NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &mine, 0, 0, 0, 0, 0));
            NODE_OK(tcaDescSetMemcpy2D(d, &peer, 0, 64, &mine, 0, 64, 64, 0, 0, 0, 0));
            NODE_OK(tcaDescSetMemcpy2D(d, &peer, 0, 64, &mine, 0, 64, 0, 16, 0, 0, 0));
            NODE_OK(tcaDescSetMemcpy2D(d, &peer, 4096, 0, &mine, 4096, 0, 0, 0, 0, 0,
                                       0));  // at the very end
            NODE_EXPECT_RESULT(tcaErrorOutOfRange,
                               tcaDescSetMemcpy2D(d, &peer, 4097, 64, &mine, 0, 64, 0, 1, 0, 0, 0));
            NODE_OK(tcaDescSetMemcpy(d, &peer, 1024, &mine, 1024, 1024, tcaDMANotify, 3, 9));
            int len = 0;
            NODE_OK(tcaDescGetLength(d, &len));
            NODE_CHECK(len == 5);
            NODE_OK(tcaDescSet(d, 0));
            NODE_OK(tcaStartDMADesc(0));
            NODE_OK(tcaWaitDMAC(0));
            NODE_OK(tcaDescFree(d));
        } else {
            NODE_OK(tcaWaitDMARecvDesc(&peer, 3, 9));
            std::vector<unsigned char> expect(4096, 0);
            fill_pattern(expect.data(), 4096, 7);
            const auto *b = static_cast<const unsigned char *>(buf);
            for (size_t i = 0; i < 4096; ++i)
                NODE_CHECK(b[i] == ((i >= 1024 && i < 2048) ? expect[i] : 0));
        }
        board.barrier();
        return 0;
    }));
}

// libtca's environment variables: one parser with units, a range per
// variable, and a message naming the variable - never a silent fallback.
struct EnvCase {
    const char *var;
    const char *value;
    bool valid;
    size_t internal_alloc;  // valid: this much internal memory must then be allocatable
};

TEST(HostileInput, EnvironmentVariables) {
    const EnvCase cases[] = {
        {"TCA_INTERNAL_SIZE", "-1", false, 0},
        {"TCA_INTERNAL_SIZE", "9223372036854775808", false, 0},
        {"TCA_INTERNAL_SIZE", "18446744073709551616", false, 0},
        {"TCA_INTERNAL_SIZE", "17179869184T", false, 0},  // overflows once scaled
        {"TCA_INTERNAL_SIZE", "10G", false, 0},           // above the 1G maximum
        {"TCA_INTERNAL_SIZE", "1000", false, 0},          // below the 64K minimum
        {"TCA_INTERNAL_SIZE", "abc", false, 0},
        {"TCA_INTERNAL_SIZE", "12abc", false, 0},
        {"TCA_INTERNAL_SIZE", "0x100000", false, 0},
        {"TCA_INTERNAL_SIZE", "", false, 0},
        {"TCA_INTERNAL_SIZE", "10M", true, 9u << 20},
        {"TCA_INTERNAL_SIZE", "1g", true, 600u << 20},  // was read as 1 byte
        {"TCA_INTERNAL_SIZE", "12MB", true, 11u << 20},
        {"TCA_INTERNAL_SIZE", "65536", true, 32768},
        {"TCA_SPIN_NS", "-1", false, 0},
        {"TCA_SPIN_NS", "5k", false, 0},  // a count: no units
        {"TCA_SPIN_NS", "2000000000", false, 0},
        {"TCA_SPIN_NS", "0", true, 64},
        {"TCA_TIMEOUT_MS", "0", false, 0},
        {"TCA_TIMEOUT_MS", "-5", false, 0},
        {"TCA_TIMEOUT_MS", "1e3", false, 0},
        {"TCA_TIMEOUT_MS", "99999999999999999999", false, 0},
        {"TCA_TIMEOUT_MS", "1500", true, 64},
        {"TCA_SHARED_HEAP", "2", false, 0},
        {"TCA_SHARED_HEAP", "no", true, 64},  // a boolean like every other
        {"TCA_SHARED_HEAP", "0", true, 64},
        {"TCA_SHARED_HEAP", "", false, 0},
        // Booleans: 0/1, on/off, yes/no, true/false; nothing else (was: the first character)
        {"TCA_TIMING", "bogus", false, 0},
        {"TCA_TIMING", "2", false, 0},
        {"TCA_TIMING", "", false, 0},
        {"TCA_TIMING", "off", true, 64},
        {"TCA_S_LINKS", "1x", false, 0},
        {"TCA_S_LINKS", "yes", true, 64},
        {"TCA_SINGLE_COPY", "0junk", false, 0},
        {"TCA_SINGLE_COPY", "nope", false, 0},
        {"TCA_SINGLE_COPY", "false", true, 64},
        // The timing model's reals (was: junk fell back, inf and nan were taken)
        {"TCA_HOST_BANDWIDTH_MBS", "inf", false, 0},
        {"TCA_HOST_BANDWIDTH_MBS", "nan", false, 0},
        {"TCA_HOST_BANDWIDTH_MBS", "abc", false, 0},
        {"TCA_HOST_BANDWIDTH_MBS", "1e400", false, 0},
        {"TCA_LINK_BANDWIDTH_MBS", "-5", false, 0},
        {"TCA_LINK_BANDWIDTH_MBS", "inf", false, 0},
        {"TCA_PIO_LATENCY_NS", "1e300", false, 0},
        {"TCA_DMA_HANDOFF_NS", "12abc", false, 0},
        {"TCA_GPU_LARGE_BYTES", "nan", false, 0},
        {"TCA_PIO_LATENCY_NS", "800.5", true, 64},
    };
    for (const EnvCase &c : cases) {
        NodeOptions opt;
        opt.init = false;
        opt.env = std::string(c.var) + "=" + c.value;
        EXPECT_TRUE(run_nodes(
            1,
            [&c](int, Board &) {
                const std::string key = unique_job_key("env");
                tcaInitParams p{key.c_str(), 0, 1};
                tcaResult r = tcaSuccess;
                const std::string err = capture_stderr([&] { r = tcaInitWithParams(&p); });
                if (!c.valid) {
                    NODE_EXPECT_RESULT(tcaErrorInvalidValue, r);
                    NODE_CHECK(err.find(std::string(c.var) + "='" + c.value + "'") !=
                               std::string::npos);
                    NODE_CHECK(err.find("allowed") != std::string::npos);
                    return 0;
                }
                NODE_OK(r);
                void *mem = nullptr;
                NODE_OK(tcaMalloc(&mem, c.internal_alloc, tcaMemoryInternal));
                NODE_OK(tcaFree(mem, tcaMemoryInternal));
                NODE_OK(tcaFinalize());
                return 0;
            },
            opt))
            << c.var << "=" << c.value;
    }
}

// Started by a launcher that sets none of the variables tca reads: a clear
// error at tcaInit naming what to set, not a "stale handle" later.
TEST(HostileInput, UnrecognisedLauncher) {
    struct {
        const char *env;
        tcaResult expected;
    } cases[] = {
        {"PMI_SIZE=2;PMI_RANK=1", tcaErrorNotSupported},
        {"MPI_LOCALNRANKS=4;MPI_LOCALRANKID=0", tcaErrorNotSupported},
        {"SLURM_STEP_NUM_TASKS=8;SLURM_PROCID=3", tcaErrorNotSupported},
        {"PMIX_RANK=1", tcaErrorNotSupported},
        {"PMI_SIZE=1;PMI_RANK=0", tcaSuccess},  // one process: its own one-node sub-cluster
        {"PMI_SIZE=2;PMI_RANK=1;TCA_NODE_ID=0;TCA_NUM_NODES=1", tcaSuccess},  // told explicitly
    };
    for (const auto &c : cases) {
        NodeOptions opt;
        opt.init = false;
        opt.env = c.env;
        EXPECT_TRUE(run_nodes(
            1,
            [&c](int, Board &) {
                for (const char *v :
                     {"TCA_JOB_KEY", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
                      "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid"})
                    unsetenv(v);
                if (std::strstr(c.env, "TCA_NODE_ID") == nullptr) {
                    unsetenv("TCA_NODE_ID");
                    unsetenv("TCA_NUM_NODES");
                }
                tcaResult r = tcaSuccess;
                const std::string err = capture_stderr([&] { r = tcaInit(); });
                NODE_EXPECT_RESULT(c.expected, r);
                if (c.expected != tcaSuccess) {
                    NODE_CHECK(err.find("launcher") != std::string::npos);
                    NODE_CHECK(err.find("TCA_NODE_ID") != std::string::npos);
                } else {
                    NODE_OK(tcaFinalize());
                }
                return 0;
            },
            opt))
            << c.env;
    }
}

}  // namespace
}  // namespace tca::test
