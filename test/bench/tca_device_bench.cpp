// tca_device_bench.cpp - device benchmark of the TCA loopback (not a test):
//   1. PIO put + notification one-way latency, 8 B, into internal and host memory
//   2. raw PIO store latency through tcaPioMap (the floor: no library call per store)
//   3. published-style 8 B DMA ping-pong into tcaMalloc'd host memory: both
//      sides load a one-descriptor chain (data + notification) and use only
//      tcaStartDMADesc, tcaWaitDMAC and tcaWaitDMARecvDesc, as published TCA
//      programs do; and the same polling with tcaTestDMARecvDesc + tcaProgress
//   4. the physical limit of 1-3: a ping-pong of one flag word through a
//      page the two processes share (mmap before fork), no library at all:
//      each one-way trip is one cache-line transfer
//   5. DMA bandwidth node 0 -> node 1 host memory with a descriptor chain of
//      1 MiB descriptors (each copied as one memcpy by the loopback engine)
//   6. plain copies in one process of the same bytes: one memcpy, memcpy in
//      the engine's 1 MiB pieces, and a streaming (non-temporal) store copy,
//      the machine's copy limit for data that does not stay in cache; sizes
//      up to twice the last-level cache (at most 1 GiB)
// scripts/bench-device.sh puts 3 and 4 beside MPI 8 B ping-pongs over btl tca
// and vader.
//
// Forks two nodes of a fresh sub-cluster; they swap handles through pipes.
// Both are pinned, one CPU each (as mpirun --bind-to core pins MPI ranks),
// unless -P.  Node 0 measures and prints; node 1 mirrors every step.
//
// Usage: tca_device_bench [-r repeats] [-q] [-L] [-s bytes] [-P] [-h]
#include <emmintrin.h>
#include <sched.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <new>
#include <thread>
#include <vector>

#include "tca.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kNumNodes = 2;
constexpr auto kChildTimeout = 120s;
constexpr auto kFlagTimeout = 10s;    // raw PIO polling: give up on a dead peer
constexpr size_t kSmallBytes = 4096;  // ping-pong buffers (internal and host)
constexpr size_t kPayload = 8;
// tcaPioMap test: payload then flag in one cache line, away from the bytes
// the tcaPioWrite test uses at offset 0 of the same internal buffer.
constexpr size_t kRawPayloadOff = 128;
constexpr size_t kRawFlagOff = kRawPayloadOff + kPayload;
constexpr size_t kDmaSizes[] = {4u << 10, 64u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20};
constexpr size_t kMaxOutOfCacheBytes = 1u << 30;

// The sizes measured: kDmaSizes, then twice the last-level cache rounded up
// to a power of two (out of cache on any machine), when that is larger.
std::vector<size_t> dma_sizes() {
    std::vector<size_t> v(std::begin(kDmaSizes), std::end(kDmaSizes));
    const long llc = std::max(sysconf(_SC_LEVEL3_CACHE_SIZE), sysconf(_SC_LEVEL2_CACHE_SIZE));
    size_t out = 1;
    while (llc > 0 && out < 2 * static_cast<size_t>(llc))
        out <<= 1;
    if (llc > 0 && out > v.back() && out <= kMaxOutOfCacheBytes)
        v.push_back(out);
    return v;
}
// Published-style ping-pong: each node sends from offset 0 of its buffer to
// offset kPingDstOff of the peer's (the value arrives where it is checked).
constexpr size_t kPingDstOff = 64;
constexpr int kPingChannel = 1;
// Large transfers are split into 1 MiB descriptors, as a driver would; 16 MiB
// then takes 16 descriptors, which still fit the channel registers (no
// per-descriptor fetch from a host table).
constexpr size_t kDescChunk = 1u << 20;
// ... and larger pieces where 1 MiB ones would pass the chain limit.
size_t desc_chunk(size_t size) {
    size_t chunk = kDescChunk;
    while ((size + chunk - 1) / chunk > 255)
        chunk *= 2;  // TCA_MAX_DESCRIPTORS
    return chunk;
}
constexpr int kDmaChannel = 0;
constexpr int kTag = 0;

// One notification slot per phase, so a stray notification of one phase can
// never satisfy a wait of another.
enum Slot : int {
    kSlotPingInternal = 1,
    kSlotPingHost = 2,
    kSlotDmaData = 3,
    kSlotDmaDone = 4,
    kSlotDmaPing = 5
};

struct Options {
    int repeats = 5;
    bool quick = false;         // smoke-test sizes: fewer iterations
    bool pin = true;            // one CPU per node
    bool latency_only = false;  // skip the copy measurements (profiling the ping-pongs)
    size_t only_size = 0;       // > 0: the copy measurements at this size only

    int warmup() const { return quick ? 100 : 1000; }
    int latency_iters() const { return quick ? 2000 : 20000; }
    // About the same bytes per size, so every size takes similar time.
    int dma_iters(size_t size) const {
        const size_t budget = quick ? (16u << 20) : (256u << 20);
        const size_t cap = quick ? 2000 : 20000;
        return static_cast<int>(std::clamp<size_t>(budget / size, 4, cap));
    }
};

// ---- errors ----

[[noreturn]] void die(const char *what) {
    int node = -1;
    (void) tcaGetNodeId(&node);  // stays -1 before tcaInit
    std::fprintf(stderr, "tca_device_bench: node %d: %s\n", node, what);
    std::exit(1);
}

void check(tcaResult r, const char *call) {
    if (r == tcaSuccess)
        return;
    int node = -1;
    (void) tcaGetNodeId(&node);
    std::fprintf(stderr, "tca_device_bench: node %d: %s failed: %s\n", node, call,
                 tcaGetErrorString(r));
    std::exit(1);
}
#define TCA_CHECK(call) check((call), #call)

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// ---- the pipe pair between the two nodes ----

struct Link {
    int in = -1;   // read end: from the peer
    int out = -1;  // write end: to the peer
};

void write_all(int fd, const void *p, size_t n) {
    const auto *c = static_cast<const unsigned char *>(p);
    while (n > 0) {
        const ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            die("write to the peer's pipe failed");
        c += k;
        n -= static_cast<size_t>(k);
    }
}

void read_all(int fd, void *p, size_t n) {
    auto *c = static_cast<unsigned char *>(p);
    while (n > 0) {
        const ssize_t k = read(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k == 0)
            die("the peer closed its pipe (it exited?)");
        if (k < 0)
            die("read from the peer's pipe failed");
        c += k;
        n -= static_cast<size_t>(k);
    }
}

// Both nodes return only after both arrived.
void sync_peers(const Link &l, int node) {
    char b = 0;
    if (node == 0) {
        write_all(l.out, &b, 1);
        read_all(l.in, &b, 1);
    } else {
        read_all(l.in, &b, 1);
        write_all(l.out, &b, 1);
    }
}

// ---- per-node state ----

struct Handles {
    tcaHandle internal;    // PIO target (tcaMemoryInternal)
    tcaHandle host_small;  // PIO target (tcaMemoryCPU)
    tcaHandle host_big;    // DMA source on node 0, destination on node 1
    tcaHandle host_ping;   // published-style DMA ping-pong, both ways
};

struct Node {
    int id = 0;
    Options opt;
    Link link;
    unsigned char *internal = nullptr;
    unsigned char *host_small = nullptr;
    unsigned char *host_big = nullptr;
    unsigned char *host_ping = nullptr;
    Handles mine{};
    Handles peer{};
    unsigned char *peer_window = nullptr;  // tcaPioMap of peer.internal: stores only
    uint64_t seq = 0;                      // ping-pong value; both nodes advance it identically
    size_t max_dma = 0;                    // the largest size measured
};

// 4.'s page, made by the parent before fork: node i waits on flag i, each
// alone on its cache line.
struct alignas(128) FlagLine {
    std::atomic<uint64_t> value;
    char pad[128 - sizeof(std::atomic<uint64_t>)];
};
FlagLine *g_flags = nullptr;

unsigned char *alloc_registered(size_t size, tcaMemoryType type, tcaHandle *h) {
    void *p = nullptr;
    TCA_CHECK(tcaMalloc(&p, size, type));
    std::memset(p, 0, size);  // touch every page now, not inside a timed loop
    TCA_CHECK(tcaCreateHandle(h, p, size, type));
    return static_cast<unsigned char *>(p);
}

void setup(Node &n) {
    n.internal = alloc_registered(kSmallBytes, tcaMemoryInternal, &n.mine.internal);
    n.host_small = alloc_registered(kSmallBytes, tcaMemoryCPU, &n.mine.host_small);
    n.host_big = alloc_registered(n.max_dma, tcaMemoryCPU, &n.mine.host_big);
    n.host_ping = alloc_registered(kSmallBytes, tcaMemoryCPU, &n.mine.host_ping);
    // Handles are plain values: send the bytes.  The pipe buffer holds a
    // whole Handles, so both sides can write before they read.
    write_all(n.link.out, &n.mine, sizeof n.mine);
    read_all(n.link.in, &n.peer, sizeof n.peer);
    void *window = nullptr;
    TCA_CHECK(tcaPioMap(&n.peer.internal, &window));
    n.peer_window = static_cast<unsigned char *>(window);
}

void teardown(Node &n) {
    TCA_CHECK(tcaDestroyHandle(&n.mine.internal));
    TCA_CHECK(tcaDestroyHandle(&n.mine.host_small));
    TCA_CHECK(tcaDestroyHandle(&n.mine.host_big));
    TCA_CHECK(tcaDestroyHandle(&n.mine.host_ping));
    TCA_CHECK(tcaFree(n.internal, tcaMemoryInternal));
    TCA_CHECK(tcaFree(n.host_small, tcaMemoryCPU));
    TCA_CHECK(tcaFree(n.host_big, tcaMemoryCPU));
    TCA_CHECK(tcaFree(n.host_ping, tcaMemoryCPU));
}

// ---- statistics ----

struct Stat {
    double min = 0;
    double median = 0;
};

Stat summarize(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    const double median = v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
    return {v.front(), median};
}

// ---- 1. PIO put + notification ping-pong ----

struct PingTarget {
    tcaHandle *peer;            // where our puts go
    const unsigned char *mine;  // where the peer's puts land
    int slot;
};

void put_value(const PingTarget &t, uint64_t v) {
    TCA_CHECK(tcaPioWrite(t.peer, 0, &v, sizeof v, tcaDMANotify, t.slot, kTag));
}

void take_value(const PingTarget &t, uint64_t v) {
    TCA_CHECK(tcaWaitDMARecvDesc(t.peer, t.slot, kTag));
    uint64_t got = 0;
    std::memcpy(&got, t.mine, sizeof got);
    if (got != v)
        die("PIO payload not there when its notification was");
}

// Returns the elapsed seconds of `iters` round trips.
double pio_notify_pingpong(Node &n, const PingTarget &t, int iters) {
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
        const uint64_t v = ++n.seq;
        if (n.id == 0) {
            put_value(t, v);
            take_value(t, v);
        } else {
            take_value(t, v);
            put_value(t, v);
        }
    }
    return seconds_since(t0);
}

// ---- 2. raw PIO stores through tcaPioMap ----

std::atomic_ref<uint64_t> flag_at(unsigned char *base) {
    return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t *>(base + kRawFlagOff));
}

void raw_put(unsigned char *window, uint64_t v) {
    std::memcpy(window + kRawPayloadOff, &v, sizeof v);
    flag_at(window).store(v, std::memory_order_release);  // payload before flag
}

// Polls the flag in our own internal memory.  Spins first (that is the floor
// being measured), then also yields: on a loaded 2-core host a pure spin can
// hold the CPU the peer needs for a whole time slice.
void raw_take(unsigned char *own, uint64_t v) {
    const auto flag = flag_at(own);
    const auto start = Clock::now();
    for (uint32_t spins = 1; flag.load(std::memory_order_acquire) != v; ++spins) {
        cpu_relax();
        if (spins % 1024 != 0)
            continue;
        const auto waited = Clock::now() - start;
        if (waited > 50us)
            sched_yield();
        if (waited > kFlagTimeout)
            die("timed out waiting for the peer's PIO store");
    }
    uint64_t got = 0;
    std::memcpy(&got, own + kRawPayloadOff, sizeof got);
    if (got != v)
        die("raw PIO payload not there when its flag was");
}

double raw_store_pingpong(Node &n, int iters) {
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
        const uint64_t v = ++n.seq;  // a fresh value: a flag left from before never matches
        if (n.id == 0) {
            raw_put(n.peer_window, v);
            raw_take(n.internal, v);
        } else {
            raw_take(n.internal, v);
            raw_put(n.peer_window, v);
        }
    }
    return seconds_since(t0);
}

// ---- 4. the floor: one flag word in a page shared without any library ----

void flag_wait(std::atomic<uint64_t> &flag, uint64_t v) {
    const auto start = Clock::now();
    for (uint32_t spins = 1; flag.load(std::memory_order_acquire) != v; ++spins) {
        cpu_relax();
        if (spins % 1024 != 0)
            continue;
        const auto waited = Clock::now() - start;
        if (waited > 50us)
            sched_yield();  // as raw_take: a loaded host
        if (waited > kFlagTimeout)
            die("timed out waiting for the peer's flag");
    }
}

double shm_flag_pingpong(Node &n, int iters) {
    std::atomic<uint64_t> &mine = g_flags[n.id].value, &peer = g_flags[1 - n.id].value;
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
        const uint64_t v = ++n.seq;
        if (n.id == 0) {
            peer.store(v, std::memory_order_release);
            flag_wait(mine, v);
        } else {
            flag_wait(mine, v);
            peer.store(v, std::memory_order_release);
        }
    }
    return seconds_since(t0);
}

// ---- 3. published-style DMA ping-pong ----

// One descriptor, loaded once: 8 B from our buffer to the peer's, notifying it.
void load_ping_chain(Node &n) {
    tcaDesc *d = tcaDescNew();
    if (d == nullptr)
        die("tcaDescNew returned NULL");
    TCA_CHECK(tcaDescSetMemcpy(d, &n.peer.host_ping, kPingDstOff, &n.mine.host_ping, 0, kPayload,
                               tcaDMANotify, kSlotDmaPing, kTag));
    TCA_CHECK(tcaDescSet(d, kPingChannel));
    TCA_CHECK(tcaDescFree(d));  // the loaded chain is the channel's copy
}

void check_ping(const Node &n, uint64_t v) {
    uint64_t got = 0;
    std::memcpy(&got, n.host_ping + kPingDstOff, sizeof got);
    if (got != v)
        die("DMA payload not there when its notification was");
}

// Blocking calls only, as published programs: start, wait for our channel,
// wait for the peer's notification.
void dma_send_blocking(Node &n, uint64_t v) {
    std::memcpy(n.host_ping, &v, sizeof v);
    TCA_CHECK(tcaStartDMADesc(kPingChannel));
    TCA_CHECK(tcaWaitDMAC(kPingChannel));
}
void dma_recv_blocking(Node &n, uint64_t v) {
    TCA_CHECK(tcaWaitDMARecvDesc(&n.peer.host_ping, kSlotDmaPing, kTag));
    check_ping(n, v);
}

// The same, polling: tcaTest* and tcaProgress lend this thread to the engine.
void dma_send_polling(Node &n, uint64_t v) {
    std::memcpy(n.host_ping, &v, sizeof v);
    TCA_CHECK(tcaStartDMADesc(kPingChannel));
    for (int done = 0;;) {
        TCA_CHECK(tcaTestDMAC(kPingChannel, &done));
        if (done)
            break;
        TCA_CHECK(tcaProgress(nullptr));
    }
}
void dma_recv_polling(Node &n, uint64_t v) {
    for (int flag = 0;;) {
        TCA_CHECK(tcaTestDMARecvDesc(&n.peer.host_ping, kSlotDmaPing, kTag, &flag));
        if (flag)
            break;
        TCA_CHECK(tcaProgress(nullptr));
    }
    check_ping(n, v);
}

template <class Send, class Recv>
double dma_pingpong(Node &n, int iters, Send &&send, Recv &&recv) {
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
        const uint64_t v = ++n.seq;
        if (n.id == 0) {
            send(n, v);
            recv(n, v);
        } else {
            recv(n, v);
            send(n, v);
        }
    }
    return seconds_since(t0);
}

// Warm-up, then `repeats` timed runs of a ping-pong; one-way latency in us.
// (DMA round trips can cost tens of us where waits sleep: fewer of them.)
template <class PingPong>
Stat measure_latency(Node &n, PingPong &&run, int divide = 1) {
    sync_peers(n.link, n.id);
    run(n.opt.warmup() / divide);
    std::vector<double> us;
    const int iters = n.opt.latency_iters() / divide;
    for (int r = 0; r < n.opt.repeats; ++r)
        us.push_back(run(iters) / iters / 2 * 1e6);
    return summarize(us);
}

// ---- 3. DMA bandwidth ----

// Node 0: the whole buffer to node 1's host memory, notifying only after the
// last descriptor.
tcaDesc *build_chain(Node &n, size_t size) {
    tcaDesc *d = tcaDescNew();
    if (d == nullptr)
        die("tcaDescNew returned NULL");
    const size_t chunk = desc_chunk(size);
    for (size_t off = 0; off < size; off += chunk) {
        const size_t len = std::min(chunk, size - off);
        const bool last = off + len == size;
        TCA_CHECK(tcaDescSetMemcpy(d, &n.peer.host_big, static_cast<off_t>(off), &n.mine.host_big,
                                   static_cast<off_t>(off), len, last ? tcaDMANotify : 0,
                                   kSlotDmaData, kTag));
    }
    return d;
}

// Node 0 runs the loaded chain `iters` times.  Node 1 consumes every
// notification (the ring keeps only 128 per slot before the sender stalls)
// and acknowledges the last with a PIO notification, so node 0's time covers
// the delivery of all the data.
double dma_stream(Node &n, int iters) {
    const auto t0 = Clock::now();
    if (n.id == 0) {
        for (int i = 0; i < iters; ++i) {
            TCA_CHECK(tcaStartDMADesc(kDmaChannel));
            TCA_CHECK(tcaWaitDMAC(kDmaChannel));
        }
        TCA_CHECK(tcaWaitDMARecvDesc(&n.peer.internal, kSlotDmaDone, kTag));
    } else {
        for (int i = 0; i < iters; ++i)
            TCA_CHECK(tcaWaitDMARecvDesc(&n.peer.host_big, kSlotDmaData, kTag));
        TCA_CHECK(tcaPioWrite(&n.peer.internal, 0, nullptr, 0, tcaDMANotify, kSlotDmaDone, kTag));
    }
    return seconds_since(t0);
}

// ---- 5. memcpy bandwidth ----

double memcpy_run(unsigned char *dst, const unsigned char *src, size_t size, int iters) {
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
        std::memcpy(dst, src, size);
        asm volatile("" ::: "memory");  // keep every copy: dst counts as read
    }
    return seconds_since(t0);
}

// The bytes in the engine's pieces (desc_chunk), one memcpy each.
double memcpy_chunked_run(unsigned char *dst, const unsigned char *src, size_t size, int iters) {
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
        const size_t chunk = desc_chunk(size);
        for (size_t off = 0; off < size; off += chunk)
            std::memcpy(dst + off, src + off, std::min(chunk, size - off));
        asm volatile("" ::: "memory");
    }
    return seconds_since(t0);
}

// Non-temporal 16-byte stores (SSE2, every x86-64): the copy that does not
// read the destination into the cache first.  Buffers are page aligned and
// sizes multiples of 4 KiB.
double stream_copy_run(unsigned char *dst, const unsigned char *src, size_t size, int iters) {
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
        auto *d = reinterpret_cast<__m128i *>(dst);
        const auto *s = reinterpret_cast<const __m128i *>(src);
        for (size_t k = 0; k < size / 16; k += 4) {
            const __m128i a = _mm_load_si128(s + k), b = _mm_load_si128(s + k + 1),
                          c = _mm_load_si128(s + k + 2), e = _mm_load_si128(s + k + 3);
            _mm_stream_si128(d + k, a);
            _mm_stream_si128(d + k + 1, b);
            _mm_stream_si128(d + k + 2, c);
            _mm_stream_si128(d + k + 3, e);
        }
        _mm_sfence();
    }
    return seconds_since(t0);
}

struct PlainCopies {
    std::vector<double> memcpy_s, chunked_s, stream_s;
};

// Elapsed seconds per repeat of the DMA stream and, on node 0, of the plain
// copies of the same bytes right before it (while node 1 sleeps in the
// pipe), so all see the same load on a shared host.  Node 1's numbers are
// meaningless.
void measure_dma(Node &n, size_t size, int iters, unsigned char *memcpy_dst,
                 std::vector<double> *dma_s, PlainCopies *plain) {
    tcaDesc *chain = nullptr;
    if (n.id == 0) {
        chain = build_chain(n, size);
        TCA_CHECK(tcaDescSet(chain, kDmaChannel));
        memcpy_run(memcpy_dst, n.host_big, size, 2);  // warm-up
        stream_copy_run(memcpy_dst, n.host_big, size, 1);
    }
    sync_peers(n.link, n.id);
    dma_stream(n, 2);  // warm-up
    for (int r = 0; r < n.opt.repeats; ++r) {
        if (n.id == 0) {
            plain->memcpy_s.push_back(memcpy_run(memcpy_dst, n.host_big, size, iters));
            plain->chunked_s.push_back(memcpy_chunked_run(memcpy_dst, n.host_big, size, iters));
            plain->stream_s.push_back(stream_copy_run(memcpy_dst, n.host_big, size, iters));
        }
        sync_peers(n.link, n.id);
        dma_s->push_back(dma_stream(n, iters));
    }
    if (chain != nullptr)
        TCA_CHECK(tcaDescFree(chain));
}

// ---- report (node 0) ----

struct LatencyRow {
    const char *name;
    Stat us;
};

struct BandwidthRow {
    size_t size;
    int iters;
    Stat dma_s;  // seconds for iters transfers
    Stat memcpy_s, chunked_s, stream_s;
};

double gbps(size_t size, int iters, double seconds) {
    return static_cast<double>(size) * iters / seconds / 1e9;
}

std::string size_name(size_t size) {
    if (size >= (1u << 20))
        return std::to_string(size >> 20) + "MiB";
    return std::to_string(size >> 10) + "KiB";
}

void print_report(const Options &opt, const std::vector<LatencyRow> &lat,
                  const std::vector<BandwidthRow> &bw) {
    std::printf("# TCA device benchmark (loopback), %d nodes, %d repeats%s\n", kNumNodes,
                opt.repeats, opt.quick ? ", quick mode" : "");
    std::printf(
        "# latency: one-way = round trip / 2 in us, %d round trips per repeat after %d warm-up\n",
        opt.latency_iters(), opt.warmup());
    std::printf("# %-34s %10s %10s\n", "test", "min", "median");
    for (const LatencyRow &r : lat)
        std::printf("%-36s %10.3f %10.3f\n", r.name, r.us.min, r.us.median);
    std::printf("#\n");
    std::printf("# DMA node 0 -> node 1 host memory (chain of <= 1 MiB descriptors, notify on the "
                "last) vs plain\n");
    std::printf("# copies in one process: memcpy, memcpy in 1 MiB pieces (the engine's), streaming "
                "stores;\n");
    std::printf(
        "# GB/s = 1e9 B/s of medians over repeats; dma/best = DMA / the fastest plain copy\n");
    std::printf("# %-10s %7s %9s %9s %9s %9s %11s %9s\n", "size", "iters", "dma", "memcpy",
                "chunked", "stream", "dma/memcpy", "dma/best");
    for (const BandwidthRow &r : bw) {
        const double dma = gbps(r.size, r.iters, r.dma_s.median);
        const double mem = gbps(r.size, r.iters, r.memcpy_s.median);
        const double chunked = gbps(r.size, r.iters, r.chunked_s.median);
        const double stream = gbps(r.size, r.iters, r.stream_s.median);
        std::printf("%-12s %7d %9.2f %9.2f %9.2f %9.2f %11.3f %9.3f\n",
                    ("dma_" + size_name(r.size)).c_str(), r.iters, dma, mem, chunked, stream,
                    dma / mem, dma / std::max({mem, chunked, stream}));
    }
    std::printf("RESULT pio_put_notify_8B_us %.3f\n", lat.front().us.median);
    for (const LatencyRow &r : lat)
        if (std::strncmp(r.name, "dma_pingpong", 12) == 0)
            std::printf("RESULT %s %.3f %.3f\n", r.name, r.us.min, r.us.median);
    for (const LatencyRow &r : lat)
        if (std::strncmp(r.name, "shm_flag", 8) == 0)
            std::printf("RESULT %s %.3f %.3f\n", r.name, r.us.min, r.us.median);
    // dma_bw_<size> dma memcpy dma/memcpy chunked stream dma/best (GB/s of medians)
    for (const BandwidthRow &r : bw) {
        const double dma = gbps(r.size, r.iters, r.dma_s.median),
                     mem = gbps(r.size, r.iters, r.memcpy_s.median),
                     chunked = gbps(r.size, r.iters, r.chunked_s.median),
                     stream = gbps(r.size, r.iters, r.stream_s.median);
        std::printf("RESULT dma_bw_%s %.3f %.3f %.3f %.3f %.3f %.3f\n", size_name(r.size).c_str(),
                    dma, mem, dma / mem, chunked, stream, dma / std::max({mem, chunked, stream}));
    }
    std::fflush(stdout);
}

// ---- one node ----

int run_node(int id, const Options &opt, const std::string &job_key, Link link) {
    const tcaInitParams params{job_key.c_str(), id, kNumNodes};
    TCA_CHECK(tcaInitWithParams(&params));
    Node n;
    n.id = id;
    n.opt = opt;
    n.link = link;
    const std::vector<size_t> sizes = dma_sizes();
    n.max_dma = sizes.back();
    setup(n);

    std::vector<LatencyRow> lat;
    const PingTarget internal{&n.peer.internal, n.internal, kSlotPingInternal};
    const PingTarget host{&n.peer.host_small, n.host_small, kSlotPingHost};
    lat.push_back({"pio_put_notify_8B_internal_us",
                   measure_latency(n, [&](int k) { return pio_notify_pingpong(n, internal, k); })});
    lat.push_back({"pio_put_notify_8B_host_us",
                   measure_latency(n, [&](int k) { return pio_notify_pingpong(n, host, k); })});
    lat.push_back({"pio_map_store_8B_internal_us",
                   measure_latency(n, [&](int k) { return raw_store_pingpong(n, k); })});
    lat.push_back({"shm_flag_pingpong_8B_us",
                   measure_latency(n, [&](int k) { return shm_flag_pingpong(n, k); })});
    load_ping_chain(n);
    lat.push_back(
        {"dma_pingpong_8B_blocking_us",
         measure_latency(
             n, [&](int k) { return dma_pingpong(n, k, dma_send_blocking, dma_recv_blocking); },
             4)});
    lat.push_back(
        {"dma_pingpong_8B_polling_us",
         measure_latency(
             n, [&](int k) { return dma_pingpong(n, k, dma_send_polling, dma_recv_polling); }, 4)});

    // memcpy on node 0 only: plain private memory, as an application has.
    unsigned char *dst = nullptr;
    if (id == 0) {
        dst = static_cast<unsigned char *>(std::aligned_alloc(4096, n.max_dma));
        if (dst == nullptr)
            die("out of memory for the memcpy buffer");
        std::memset(dst, 0, n.max_dma);
    }
    std::vector<BandwidthRow> bw;
    for (const size_t size : opt.latency_only ? std::vector<size_t>{} : sizes) {
        if (opt.only_size != 0 && size != opt.only_size)
            continue;
        const int iters = opt.dma_iters(size);
        std::vector<double> dma_s;
        PlainCopies plain;
        measure_dma(n, size, iters, dst, &dma_s, &plain);
        if (id == 0)
            bw.push_back({size, iters, summarize(dma_s), summarize(plain.memcpy_s),
                          summarize(plain.chunked_s), summarize(plain.stream_s)});
    }
    std::free(dst);
    sync_peers(n.link, n.id);  // the peer is done with our memory after this

    if (id == 0)
        print_report(opt, lat, bw);
    teardown(n);
    TCA_CHECK(tcaFinalize());
    return 0;
}

// ---- the parent ----

void usage(FILE *f, const char *prog) {
    std::fprintf(
        f,
        "usage: %s [-r repeats] [-q] [-L] [-s bytes] [-P] [-h]\n"
        "  -r N  repeat every measurement N times (default 5); min and median are printed\n"
        "  -q    quick mode: fewer iterations (smoke test)\n"
        "  -L    latency only: skip the DMA copy measurements\n"
        "  -s N  the DMA copy measurements at N bytes only (one of the sizes measured)\n"
        "  -P    do not pin the two nodes to one CPU each\n"
        "  -h    this help\n",
        prog);
}

// Returns false (after printing why) when the options are bad.
bool parse_options(int argc, char **argv, Options *opt, bool *help) {
    *help = false;
    for (int c; (c = getopt(argc, argv, "r:qLs:Ph")) != -1;) {
        switch (c) {
        case 'r': {
            char *end = nullptr;
            const long v = std::strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || v < 1 || v > 1000) {
                std::fprintf(stderr, "%s: -r wants a number from 1 to 1000\n", argv[0]);
                return false;
            }
            opt->repeats = static_cast<int>(v);
            break;
        }
        case 'q':
            opt->quick = true;
            break;
        case 'L':
            opt->latency_only = true;
            break;
        case 's': {
            char *end = nullptr;
            const unsigned long long v = std::strtoull(optarg, &end, 10);
            const std::vector<size_t> sizes = dma_sizes();
            if (end == optarg || *end != '\0' ||
                std::find(sizes.begin(), sizes.end(), v) == sizes.end()) {
                std::fprintf(stderr, "%s: -s wants one of the measured sizes in bytes:", argv[0]);
                for (const size_t z : sizes)
                    std::fprintf(stderr, " %zu", z);
                std::fprintf(stderr, "\n");
                return false;
            }
            opt->only_size = static_cast<size_t>(v);
            break;
        }
        case 'P':
            opt->pin = false;
            break;
        case 'h':
            *help = true;
            return true;
        default:
            return false;
        }
    }
    if (optind != argc) {
        std::fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
        return false;
    }
    return true;
}

void kill_children(const pid_t (&pids)[kNumNodes]) {
    for (const pid_t p : pids)
        if (p > 0)
            kill(p, SIGKILL);
}

// Reaps both nodes.  One failing node takes the other down (it would only wait
// for its peer until the library's timeout); so does the overall timeout.
bool wait_children(pid_t (&pids)[kNumNodes]) {
    bool ok = true;
    bool killed = false;
    int left = kNumNodes;
    const auto deadline = Clock::now() + kChildTimeout;
    while (left > 0) {
        int status = 0;
        const pid_t p = waitpid(-1, &status, WNOHANG);
        if (p < 0) {
            if (errno == EINTR)
                continue;
            std::perror("waitpid");
            return false;
        }
        if (p == 0) {
            if (!killed && Clock::now() > deadline) {
                std::fprintf(stderr,
                             "tca_device_bench: nodes still running after %lld s: killing them\n",
                             static_cast<long long>(kChildTimeout.count()));
                kill_children(pids);
                killed = true;
                ok = false;
            }
            std::this_thread::sleep_for(10ms);
            continue;
        }
        const auto it = std::find(std::begin(pids), std::end(pids), p);
        if (it == std::end(pids))
            continue;
        const int node = static_cast<int>(it - std::begin(pids));
        *it = -1;
        --left;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            continue;
        if (!killed) {
            if (WIFEXITED(status))
                std::fprintf(stderr, "tca_device_bench: node %d exited with %d\n", node,
                             WEXITSTATUS(status));
            else
                std::fprintf(stderr, "tca_device_bench: node %d killed by signal %d\n", node,
                             WTERMSIG(status));
            kill_children(pids);
            killed = true;
        }
        ok = false;
    }
    return ok;
}

}  // namespace

int main(int argc, char **argv) {
    Options opt;
    bool help = false;
    if (!parse_options(argc, argv, &opt, &help)) {
        usage(stderr, argv[0]);
        return 2;
    }
    if (help) {
        usage(stdout, argv[0]);
        return 0;
    }
    const std::string job_key = "bench." + std::to_string(getpid());
    int to_node1[2], to_node0[2];  // one pipe per direction
    if (pipe(to_node1) != 0 || pipe(to_node0) != 0) {
        std::perror("pipe");
        return 1;
    }
    const Link links[kNumNodes] = {{to_node0[0], to_node1[1]}, {to_node1[0], to_node0[1]}};
    void *page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
        std::perror("mmap");
        return 1;
    }
    g_flags = new (page) FlagLine[kNumNodes]{};
    // The first two CPUs this process may use, one per node.
    int cpus[kNumNodes] = {-1, -1};
    cpu_set_t allowed;
    if (opt.pin && sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int c = 0, k = 0; c < CPU_SETSIZE && k < kNumNodes; ++c)
            if (CPU_ISSET(c, &allowed))
                cpus[k++] = c;
    if (cpus[1] >= 0)
        std::printf("# nodes pinned to CPUs %d and %d\n", cpus[0], cpus[1]);
    else
        std::printf("# nodes not pinned\n");
    // The receiver of a put polls for up to 1 ms before it sleeps (unless the
    // user set TCA_SPIN_NS).  Measured on a 2-vCPU VM: with the default 20 us
    // the receiver of each 1 MiB put is asleep when it lands, and waking it
    // (futex, an IPI into an idle CPU) costs the sender about 14 us a put;
    // polling for ever instead slows a 1 GiB copy by a third (the poller
    // shares the core).  Either is a figure of the host, not of the copy.
    setenv("TCA_SPIN_NS", "1000000", 0);
    std::printf("# waits spin TCA_SPIN_NS = %s ns before they sleep\n", std::getenv("TCA_SPIN_NS"));
    std::fflush(nullptr);  // nothing buffered may be written twice by the children
    pid_t pids[kNumNodes] = {-1, -1};
    for (int node = 0; node < kNumNodes; ++node) {
        pids[node] = fork();
        if (pids[node] < 0) {
            std::perror("fork");
            kill_children(pids);
            return 1;
        }
        if (pids[node] == 0) {
            // Keep only this node's ends: a peer's exit must show as EOF.
            for (const int fd : {to_node1[0], to_node1[1], to_node0[0], to_node0[1]})
                if (fd != links[node].in && fd != links[node].out)
                    close(fd);
            if (cpus[1] >= 0) {
                cpu_set_t one;
                CPU_ZERO(&one);
                CPU_SET(cpus[node], &one);
                if (sched_setaffinity(0, sizeof one, &one) != 0)
                    std::perror("sched_setaffinity");
            }
            std::exit(run_node(node, opt, job_key, links[node]));
        }
    }
    for (const int fd : {to_node1[0], to_node1[1], to_node0[0], to_node0[1]})
        close(fd);
    return wait_children(pids) ? 0 : 1;
}
