/*
 * ucx_device_test.c - the ucx device (TCA_DEVICE=ucx) through the TCA API,
 * under mpirun (its nodes meet through PMIx; MPI only synchronises and
 * swaps handles).  Every rank checks:
 *   - it runs on the ucx device, and its node id and count are its MPI rank and size;
 *   - a PIO write with a notification lands whole before the notification,
 *     every size 8 B .. 1 MiB, from every rank to every other;
 *   - a 2-D (block-stride) descriptor chain with notifications, data checked;
 *   - one-row DMA descriptors 5 B .. 2 MiB, and PIO writes up to 2 MiB whose
 *     last word the reader polls (no notification): the rest is there first;
 *   - counters: remote adds from every peer, waited for;
 *   - interrupts raised by every peer are counted, and a counter add moves
 *     the count too (a waiter in tcaInterruptWait wakes for it);
 *   - triggered descriptors (the offload extension): a started run waits
 *     for its local counter, epoch after epoch (threshold value + k * step),
 *     fired by a local add, by a peer's remote add while this rank waits in
 *     libtca, and by one while it is away from libtca (the progress thread
 *     issues it); the data lands before the descriptor's counter add at the
 *     target (one message with it, or after a block-stride row); tcaTestDMAC
 *     says not done while a run waits, tcaAbortDMAC
 *     drops it (nothing lands), and a run whose trigger counter changed
 *     hands fails;
 *   - what the device does not model is refused by name, not faked:
 *     tcaPioMap, GPU memory;
 *   - bad handles: a forged key, a destroyed registration (the owner answers
 *     "not registered"), also one whose key the writer had cached (the
 *     owner's destroy revokes it), a range past the end;
 *   - slots held (tcaSlotAcquire): a peer's notification naming the slot by
 *     its plain number is refused at the target and never counted, one
 *     naming it by the holder's id is; our own by number is refused at once;
 *   - node state: peers alive while running, FINISHED once they finalized;
 *   - with TCA_TIMING=1 (the script's third run, latencies of milliseconds):
 *     a PIO write and a chain's start spend at least their modelled time
 *     before they return (the device issues them on the calling thread), and
 *     the data still lands whole.
 * Prints "ucx_device_test: PASSED" on rank 0.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tca.h"

static int rank, size, failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__);                    \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            ++failures;                                                                            \
        }                                                                                          \
    } while (0)
#define OK(call)                                                                                   \
    do {                                                                                           \
        tcaResult r_ = (call);                                                                     \
        CHECK(tcaSuccess == r_, "%s -> %s", #call, tcaGetErrorString(r_));                         \
    } while (0)

static unsigned char pattern(size_t i, int from, int round) {
    return (unsigned char) (i * 31 + from * 7 + round);
}

/* Everyone's handle of a registration of `bytes` at buf. */
static tcaHandle *share(void *buf, size_t bytes, tcaMemoryType type) {
    tcaHandle mine, *all = malloc(sizeof(tcaHandle) * (size_t) size);
    OK(tcaCreateHandle(&mine, buf, bytes, type));
    MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
    return all;
}

static void identity(void) {
    tcaBackendAttr b;
    int id = -1, n = -1;
    OK(tcaQueryBackend(&b));
    CHECK(0 == strcmp(b.backend, "ucx"), "backend is '%s', not ucx", b.backend);
    CHECK(NULL != strstr(b.put_mechanism, "UCX"), "put mechanism '%s'", b.put_mechanism);
    CHECK(0 == b.gpu_built, "the ucx device says GPU memory is possible (it refuses it)");
    OK(tcaGetNodeId(&id));
    OK(tcaGetNumNodes(&n));
    CHECK(id == rank && n == size, "node %d of %d, MPI rank %d of %d", id, n, rank, size);
}

/* The progress thread's takeover: TCA_TAKEOVER_US's 1000 us at the start
 * (where the environment does not set it), then what tcaSetProgressTakeover
 * says; out-of-range values refused and the setting kept. */
static void progress_takeover(void) {
    tcaBackendAttr b;
    OK(tcaQueryBackend(&b));
    if (NULL == getenv("TCA_TAKEOVER_US"))
        CHECK(1000 == b.takeover_us, "takeover %d us at the start", b.takeover_us);
    const int start = b.takeover_us;
    OK(tcaSetProgressTakeover(5000));
    OK(tcaQueryBackend(&b));
    CHECK(5000 == b.takeover_us, "takeover %d us after setting 5000", b.takeover_us);
    CHECK(tcaErrorInvalidValue == tcaSetProgressTakeover(1000001), "1000001 us accepted");
    CHECK(tcaErrorInvalidValue == tcaSetProgressTakeover(-1), "-1 us accepted");
    OK(tcaSetProgressTakeover(0));
    OK(tcaQueryBackend(&b));
    CHECK(0 == b.takeover_us, "takeover %d us after setting 0 (and two refused values)",
          b.takeover_us);
    OK(tcaSetProgressTakeover(start));
}

/* Every rank writes a block of every size into every other rank's slice. */
static void pio_all_to_all(void) {
    const size_t max = 1u << 20;
    unsigned char *buf, *src = malloc(max);
    OK(tcaMalloc((void **) &buf, max * (size_t) size, tcaMemoryCPU));
    tcaHandle *h = share(buf, max * (size_t) size, tcaMemoryCPU);
    int round = 0;
    for (size_t bytes = 8; bytes <= max; bytes *= 4, ++round) {
        MPI_Barrier(MPI_COMM_WORLD);
        for (size_t i = 0; i < bytes; ++i)
            src[i] = pattern(i, rank, round);
        for (int to = 0; to < size; ++to)
            if (to != rank)
                OK(tcaPioWrite(&h[to], (off_t) (max * (size_t) rank), src, bytes, tcaDMANotify, 1,
                               round));
        for (int from = 0; from < size; ++from) {
            if (from == rank)
                continue;
            OK(tcaWaitDMARecvDesc(&h[from], 1, round));
            const unsigned char *got = buf + max * (size_t) from;
            size_t bad = 0;
            for (size_t i = 0; i < bytes; ++i)
                bad += got[i] != pattern(i, from, round);
            CHECK(0 == bad, "%zu B from %d: %zu bytes wrong when the notification came", bytes,
                  from, bad);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(h);
    free(src);
    OK(tcaFree(buf, tcaMemoryCPU));
}

/* A 2-D chain to the next rank: rows of 100 B, pitches 128 (src) and 256 (dst). */
static void block_stride_chain(void) {
    enum { ROWS = 64, WIDTH = 100, SP = 128, DP = 256 };
    unsigned char *src, *dst;
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    OK(tcaMalloc((void **) &src, SP * ROWS, tcaMemoryCPU));
    OK(tcaMalloc((void **) &dst, DP * ROWS, tcaMemoryCPU));
    memset(dst, 0, DP * ROWS);
    for (size_t i = 0; i < SP * ROWS; ++i)
        src[i] = pattern(i, rank, 99);
    tcaHandle *hs = share(src, SP * ROWS, tcaMemoryCPU), *hd = share(dst, DP * ROWS, tcaMemoryCPU);
    tcaDesc *d = tcaDescNew();
    OK(tcaDescSetMemcpy2D(d, &hd[next], 0, DP, &hs[rank], 0, SP, WIDTH, ROWS / 2, tcaDMANotify, 2,
                          7));
    OK(tcaDescSetMemcpy2D(d, &hd[next], DP * (ROWS / 2), DP, &hs[rank], SP * (ROWS / 2), SP, WIDTH,
                          ROWS / 2, tcaDMANotify | tcaDMANotifySelf, 2, 8));
    OK(tcaDescSet(d, 0));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(tcaStartDMADesc(0));
    OK(tcaWaitDMAC(0));
    OK(tcaWaitDMARecvDesc(&hs[rank], 2, 8)); /* NotifySelf: ours landed */
    OK(tcaWaitDMARecvDesc(&hd[prev], 2, 7));
    OK(tcaWaitDMARecvDesc(&hd[prev], 2, 8));
    size_t bad = 0;
    for (int r = 0; r < ROWS; ++r)
        for (int c = 0; c < DP; ++c) {
            const unsigned char want = c < WIDTH ? pattern((size_t) (r * SP + c), prev, 99) : 0;
            bad += dst[r * DP + c] != want;
        }
    CHECK(0 == bad, "block-stride from %d: %zu bytes wrong", prev, bad);
    MPI_Barrier(MPI_COMM_WORLD);
    OK(tcaDescFree(d));
    free(hs);
    free(hd);
    OK(tcaFree(src, tcaMemoryCPU));
    OK(tcaFree(dst, tcaMemoryCPU));
}

/* One-row DMA descriptors of 5 B .. 2 MiB to the next rank, notified, the
 * data checked when the notification comes (rows travel as active messages
 * with data: eager, or by rendezvous into the registration, by size).  Then
 * PIO writes of 128 KiB .. 2 MiB with no notification, whose last 8-byte
 * word is a sequence number the reader polls: once it sees the word, the
 * rest is there (tca.h's PIO promise, kept for writes too large for one
 * active message: the body first, the word after it). */
static void dma_rows_and_last_word(void) {
    const size_t max = 2u << 20;
    unsigned char *src, *dst;
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    OK(tcaMalloc((void **) &src, max, tcaMemoryCPU));
    OK(tcaMalloc((void **) &dst, max, tcaMemoryCPU));
    tcaHandle *hs = share(src, max, tcaMemoryCPU), *hd = share(dst, max, tcaMemoryCPU);
    int round = 0;
    for (size_t bytes = 8; bytes <= max; bytes *= 4, ++round) {
        const size_t n = bytes - (round % 2 ? 3 : 0); /* odd sizes too */
        for (size_t i = 0; i < n; ++i)
            src[i] = pattern(i, rank, round + 40);
        memset(dst, 0, n);
        MPI_Barrier(MPI_COMM_WORLD);
        tcaDesc *d = tcaDescNew();
        OK(tcaDescSetMemcpy(d, &hd[next], 0, &hs[rank], 0, n, tcaDMANotify, 3, round));
        OK(tcaDescSet(d, 1));
        OK(tcaStartDMADesc(1));
        OK(tcaWaitDMAC(1));
        OK(tcaWaitDMARecvDesc(&hd[prev], 3, round));
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i)
            bad += dst[i] != pattern(i, prev, round + 40);
        CHECK(0 == bad, "a %zu B DMA row from %d: %zu bytes wrong when the notification came", n,
              prev, bad);
        tcaDescFree(d);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    uint64_t seq = 0;
    for (size_t bytes = 128u << 10; bytes <= max; bytes *= 4) {
        ++seq;
        for (size_t i = 0; i < bytes - 8; ++i)
            src[i] = pattern(i, rank, (int) seq);
        memcpy(src + bytes - 8, &seq, 8);
        memset(dst, 0, bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        OK(tcaPioWrite(&hd[next], 0, src, bytes, 0, 0, 0));
        const uint64_t *word = (const uint64_t *) (dst + bytes - 8);
        const time_t give_up = time(NULL) + 30;
        while (__atomic_load_n(word, __ATOMIC_ACQUIRE) != seq && time(NULL) < give_up) {
        }
        CHECK(__atomic_load_n(word, __ATOMIC_ACQUIRE) == seq,
              "the last word of a %zu B PIO write from %d never came", bytes, prev);
        size_t bad = 0;
        for (size_t i = 0; i < bytes - 8; ++i)
            bad += dst[i] != pattern(i, prev, (int) seq);
        CHECK(0 == bad, "a %zu B PIO write from %d: %zu bytes wrong when its last word was seen",
              bytes, prev, bad);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(hs);
    free(hd);
    OK(tcaFree(src, tcaMemoryCPU));
    OK(tcaFree(dst, tcaMemoryCPU));
}

static void counters_and_interrupts(void) {
    uint32_t seen = 0, now = 0;
    OK(tcaInterruptCount(&seen));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int to = 0; to < size; ++to)
        if (to != rank) {
            OK(tcaCounterAddRemote(to, 5, (uint64_t) to + 1));
            OK(tcaInterruptRaise(to));
        }
    OK(tcaCounterWait(5, (uint64_t) (rank + 1) * (uint64_t) (size - 1)));
    uint64_t v = 0;
    OK(tcaCounterRead(5, &v));
    CHECK(v == (uint64_t) (rank + 1) * (uint64_t) (size - 1), "counter 5 is %llu",
          (unsigned long long) v);
    for (int spins = 0; spins < 1000; ++spins) {
        OK(tcaInterruptCount(&now));
        if (now - seen >= (uint32_t) (size - 1))
            break;
        (void) tcaInterruptWait(now, 10000);
    }
    CHECK(now - seen >= (uint32_t) (size - 1), "%u interrupts counted, %d raised", now - seen,
          size - 1);
    MPI_Barrier(MPI_COMM_WORLD);
    /* A counter add alone moves the count too (as on the loopback: every
     * event of the node), so a thread asleep in tcaInterruptWait - coll tca's
     * engine - wakes for its counters. */
    OK(tcaInterruptCount(&seen));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(tcaCounterAddRemote((rank + 1) % size, 5, 1));
    const int r = tcaInterruptWait(seen, 10 * 1000 * 1000);
    CHECK(tcaSuccess == r, "no event for a counter add from node %d: %s", (rank + size - 1) % size,
          tcaGetErrorString(r));
    OK(tcaCounterWait(5, (uint64_t) (rank + 1) * (uint64_t) (size - 1) + 1));
    MPI_Barrier(MPI_COMM_WORLD);
}

/* tcaPioWriteCounterAdd: whoever sees the counter move sees the data - one
 * message up to 256 KiB (the counter added after the copy at the target), a
 * write and a separate add above, and the same to ourselves. */
static void writes_with_counter_adds(void) {
    const size_t max = (256u << 10) + 8;
    unsigned char *src = NULL, *dst = NULL;
    OK(tcaMalloc((void **) &src, max, tcaMemoryCPU));
    OK(tcaMalloc((void **) &dst, max, tcaMemoryCPU));
    tcaHandle *hd = share(dst, max, tcaMemoryCPU);
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    const size_t sizes[] = {1, 1000, 256u << 10, max};
    uint64_t base = 0;
    OK(tcaCounterRead(6, &base));
    for (int to_self = 0; to_self < 2; ++to_self)
        for (int k = 0; k < 4; ++k) {
            const size_t bytes = sizes[k];
            const int round = 40 + to_self * 4 + k, from = to_self ? rank : prev;
            for (size_t i = 0; i < bytes; ++i)
                src[i] = pattern(i, rank, round);
            memset(dst, 0, max);
            MPI_Barrier(MPI_COMM_WORLD);
            OK(tcaPioWriteCounterAdd(&hd[to_self ? rank : next], 0, src, bytes, 6, 1));
            OK(tcaCounterWait(6, ++base));
            size_t bad = 0;
            for (size_t i = 0; i < bytes; ++i)
                bad += dst[i] != pattern(i, from, round);
            CHECK(
                0 == bad,
                "a %zu B write with a counter add from %d: %zu bytes wrong when the counter moved",
                bytes, from, bad);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    CHECK(tcaErrorInvalidCounter ==
              tcaPioWriteCounterAdd(&hd[next], 0, src, 8, TCA_NUM_COUNTERS, 1),
          "a counter past the last was accepted");
    CHECK(tcaErrorOutOfRange == tcaPioWriteCounterAdd(&hd[next], (off_t) max - 4, src, 8, 6, 1),
          "a write past the end was accepted");
    uint64_t after = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    OK(tcaCounterRead(6, &after));
    CHECK(after == base, "a refused write moved the counter to %llu", (unsigned long long) after);
    MPI_Barrier(MPI_COMM_WORLD);
    free(hd);
    OK(tcaFree(src, tcaMemoryCPU));
    OK(tcaFree(dst, tcaMemoryCPU));
}

/* Each rank's chain on channel 2 writes to the next rank: a 100 KiB row (the
 * bulk path) and a 64 B one, the first waiting for local counter 9 to reach
 * 1 + epoch, the last adding 1 to counter 10 at the next rank once its data
 * is there.  Epoch 0 is fired by a local add, epoch 1 by the next rank's
 * remote add while we wait in libtca, epoch 2 by one while we stay outside
 * libtca until the previous rank's data is here (our progress thread issues
 * the run). */
static void triggered_chains(void) {
    const size_t big = 100u << 10, bytes = big + 64;
    unsigned char *src = NULL, *dst = NULL;
    OK(tcaMalloc((void **) &src, bytes, tcaMemoryCPU));
    OK(tcaMalloc((void **) &dst, bytes, tcaMemoryCPU));
    tcaHandle *hs = share(src, bytes, tcaMemoryCPU), *hd = share(dst, bytes, tcaMemoryCPU);
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size, trigger = 9, arrived = 10,
              ch = 2;
    uint64_t t0 = 0, a0 = 0, v = 0;
    OK(tcaCounterRead(trigger, &t0));
    OK(tcaCounterRead(arrived, &a0));
    tcaDesc *d = tcaDescNew();
    OK(tcaDescSetMemcpy(d, &hd[next], 0, &hs[rank], 0, big, 0, 0, 0));
    OK(tcaDescSetTrigger(d, trigger, t0 + 1, 1));
    OK(tcaDescSetMemcpy(d, &hd[next], (off_t) big, &hs[rank], (off_t) big, 64, 0, 0, 0));
    OK(tcaDescSetCounterAdd(d, arrived, 1));
    OK(tcaDescSet(d, ch));
    for (int epoch = 0; epoch < 3; ++epoch) {
        const int round = 60 + epoch;
        for (size_t i = 0; i < bytes; ++i)
            src[i] = pattern(i, rank, round);
        MPI_Barrier(MPI_COMM_WORLD);
        OK(tcaStartDMADesc(ch));
        int done = 1;
        OK(tcaTestDMAC(ch, &done));
        CHECK(0 == done, "epoch %d: the run is done before its trigger", epoch);
        MPI_Barrier(MPI_COMM_WORLD);
        /* Nobody fired yet: nothing arrived here. */
        for (int i = 0; i < 100; ++i)
            (void) tcaProgress(NULL);
        OK(tcaCounterRead(arrived, &v));
        CHECK(v == a0 + (uint64_t) epoch, "epoch %d: counter %d is %llu before any trigger", epoch,
              arrived, (unsigned long long) v);
        MPI_Barrier(MPI_COMM_WORLD);
        if (epoch == 0) {
            OK(tcaCounterAdd(trigger, 1));
        } else {
            OK(tcaCounterAddRemote(prev, trigger, 1));
            if (epoch == 2) {
                /* Away from libtca (no call into it, here or at the sender,
                 * which waits the same way) until the data is here: only
                 * the sender's progress thread can have issued its run.
                 * Looked for in our memory every millisecond, for up to a
                 * minute (it was a single look after 300 ms, which a loaded
                 * machine's scheduler could outlast); without the thread
                 * it never comes. */
                const struct timespec tick = {0, 1000 * 1000};
                const volatile unsigned char *seen = dst;
                size_t missing = bytes;
                for (int ms = 0; ms < 60000 && missing > 0; ++ms) {
                    nanosleep(&tick, NULL);
                    /* a cheap look first (the rows' last bytes), then all */
                    if (seen[big - 1] != pattern(big - 1, prev, round) ||
                        seen[bytes - 1] != pattern(bytes - 1, prev, round))
                        continue;
                    missing = 0;
                    for (size_t i = 0; i < bytes; ++i)
                        missing += seen[i] != pattern(i, prev, round);
                }
                CHECK(0 == missing,
                      "epoch 2: the data did not arrive while its sender was away from libtca "
                      "(%zu of %zu bytes missing after a minute)",
                      missing, bytes);
            }
        }
        OK(tcaCounterWait(arrived, a0 + (uint64_t) epoch + 1));
        size_t bad = 0;
        for (size_t i = 0; i < bytes; ++i)
            bad += dst[i] != pattern(i, prev, round);
        CHECK(0 == bad, "epoch %d: %zu bytes wrong when counter %d moved", epoch, bad, arrived);
        OK(tcaWaitDMAC(ch));
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* A counter add behind a block-stride row (a separate message after the
     * data, not one with it): the rows are there when the counter moves. */
    tcaDesc *strided = tcaDescNew();
    for (size_t i = 0; i < bytes; ++i)
        src[i] = pattern(i, rank, 70);
    memset(dst, 0, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    OK(tcaDescSetMemcpy2D(strided, &hd[next], 0, 4096, &hs[rank], 0, 4096, 1000, 3, 0, 0, 0));
    OK(tcaDescSetCounterAdd(strided, arrived, 1));
    OK(tcaDescSet(strided, 3));
    OK(tcaStartDMADesc(3));
    OK(tcaCounterWait(arrived, a0 + 4));
    size_t wrong = 0;
    for (size_t row = 0; row < 3; ++row)
        for (size_t i = 0; i < 1000; ++i)
            wrong += dst[row * 4096 + i] != pattern(row * 4096 + i, prev, 70);
    CHECK(0 == wrong,
          "a block-stride row with a counter add: %zu bytes wrong when the counter moved", wrong);
    OK(tcaWaitDMAC(3));
    tcaDescFree(strided);
    a0 += 1;
    MPI_Barrier(MPI_COMM_WORLD);
    /* Aborted while waiting: the run never issues, the channel is done. */
    memset(dst, 0, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    OK(tcaStartDMADesc(ch));
    OK(tcaAbortDMAC(ch));
    int done = 0;
    OK(tcaTestDMAC(ch, &done));
    CHECK(1 == done, "an aborted run still waits");
    OK(tcaCounterAdd(trigger, 1));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 100; ++i)
        (void) tcaProgress(NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    OK(tcaCounterRead(arrived, &v));
    CHECK(v == a0 + 3, "an aborted run added to counter %d (%llu)", arrived,
          (unsigned long long) v);
    size_t written = 0;
    for (size_t i = 0; i < bytes; ++i)
        written += dst[i] != 0;
    CHECK(0 == written, "an aborted run wrote %zu bytes", written);
    /* A trigger counter held by someone else: the run fails, by name. */
    int held = -1;
    OK(tcaCounterAcquire(1, &held));
    tcaDesc *bad_trigger = tcaDescNew();
    OK(tcaDescSetMemcpy(bad_trigger, &hd[next], 0, &hs[rank], 0, 64, 0, 0, 0));
    OK(tcaDescSetTrigger(bad_trigger, held & 0xffff, 0, 0));
    OK(tcaDescSet(bad_trigger, ch));
    OK(tcaStartDMADesc(ch));
    const int r = tcaWaitDMAC(ch);
    CHECK(tcaErrorNotAcquired == r, "a trigger on a held counter named by its number: %s",
          tcaGetErrorString(r));
    OK(tcaCounterRelease(held, 1));
    MPI_Barrier(MPI_COMM_WORLD);
    tcaDescFree(bad_trigger);
    tcaDescFree(d);
    free(hs);
    free(hd);
    OK(tcaFree(src, tcaMemoryCPU));
    OK(tcaFree(dst, tcaMemoryCPU));
}

static void refusals_and_bad_handles(void) {
    void *p = NULL;
    unsigned char *buf, small[16] = {0};
    CHECK(tcaErrorNotSupported == tcaMalloc(&p, 4096, tcaMemoryGPU), "GPU memory was not refused");
    OK(tcaMalloc((void **) &buf, 4096, tcaMemoryCPU));
    tcaHandle *h = share(buf, 4096, tcaMemoryCPU);
    const int peer = (rank + 1) % size;
    void *mapped = NULL;
    CHECK(tcaErrorNotSupported == tcaPioMap(&h[peer], &mapped),
          "tcaPioMap across hosts was not refused");
    tcaHandle forged = h[peer];
    forged.key ^= 2;
    CHECK(tcaErrorNotRegistered == tcaPioWrite(&forged, 0, small, 16, 0, 0, 0),
          "a forged key was accepted");
    CHECK(tcaErrorOutOfRange == tcaPioWrite(&h[peer], 4090, small, 16, 0, 0, 0),
          "a write past the end");
    tcaHandle widened = h[peer], widened_own = h[rank];
    widened.size = widened_own.size = 1u
                                      << 20; /* the range altered: no reach past the registration */
    CHECK(tcaErrorNotRegistered == tcaPioWrite(&widened, 8192, small, 16, 0, 0, 0),
          "a widened handle was accepted");
    CHECK(tcaErrorNotRegistered == tcaPioWrite(&widened_own, 8192, small, 16, 0, 0, 0),
          "a widened handle of our own was accepted");
    /* The same after the genuine handle's key was fetched and cached. */
    unsigned char *buf2;
    OK(tcaMalloc((void **) &buf2, 4096, tcaMemoryCPU));
    tcaHandle *h2 = share(buf2, 4096, tcaMemoryCPU);
    OK(tcaPioWrite(&h2[peer], 0, small, 16, 0, 0, 0));
    tcaHandle widened2 = h2[peer];
    widened2.size = 1u << 20;
    CHECK(tcaErrorNotRegistered == tcaPioWrite(&widened2, 8192, small, 16, 0, 0, 0),
          "a widened handle was accepted once the key was cached");
    /* Destroyed after the peer cached its key: tcaDestroyHandle revokes the
     * key, so a later write by the peer is refused and our memory stays as it is. */
    MPI_Barrier(MPI_COMM_WORLD);
    memset(buf2, 0x11, 4096);
    OK(tcaDestroyHandle(&h2[rank]));
    MPI_Barrier(MPI_COMM_WORLD);
    unsigned char late[16];
    memset(late, 0xee, sizeof(late));
    CHECK(tcaErrorNotRegistered == tcaPioWrite(&h2[peer], 0, late, 16, 0, 0, 0),
          "a write into a registration destroyed after its key was cached was accepted");
    /* A notified write into a live registration after it: the notification
     * follows a fence, so once it is here a late write that was let through
     * would have landed too. */
    OK(tcaPioWrite(&h[peer], 0, small, 8, tcaDMANotify, 2, 77));
    OK(tcaWaitDMARecvDesc(&h[(rank + size - 1) % size], 2, 77));
    int untouched = 1;
    for (int i = 0; i < 4096; ++i)
        untouched &= 0x11 == buf2[i];
    CHECK(untouched, "our memory was written after its registration was destroyed");
    free(h2);
    OK(tcaFree(buf2, tcaMemoryCPU));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(tcaDestroyHandle(
        &h[rank])); /* our registration ends: peers that never wrote it are refused */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(tcaErrorNotRegistered == tcaPioWrite(&h[peer], 0, small, 16, 0, 0, 0),
          "a write into a destroyed registration was accepted");
    MPI_Barrier(MPI_COMM_WORLD);
    free(h);
    OK(tcaFree(buf, tcaMemoryCPU));
}

/* tcaFree of registered memory revokes its keys as tcaDestroyHandle does:
 * the next rank caches the key with a block-stride row (which goes by
 * ucp_put_nbx with that key), we free the memory and allocate the same size
 * again (often at the same address); a row with the old handle then fails
 * by name, and the new buffer is untouched. */
static void free_revokes_keys(void) {
    enum { ROWS = 4, WIDTH = 256, PITCH = 512, BYTES = ROWS * PITCH };
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    unsigned char *mine, *src;
    OK(tcaMalloc((void **) &mine, BYTES, tcaMemoryCPU));
    OK(tcaMalloc((void **) &src, BYTES, tcaMemoryCPU));
    for (int i = 0; i < BYTES; ++i)
        src[i] = pattern((size_t) i, rank, 21);
    tcaHandle *hm = share(mine, BYTES, tcaMemoryCPU), *hs = share(src, BYTES, tcaMemoryCPU);
    tcaDesc *d = tcaDescNew();
    OK(tcaDescSetMemcpy2D(d, &hm[next], 0, PITCH, &hs[rank], 0, PITCH, WIDTH, ROWS, 0, 0, 0));
    OK(tcaDescSet(d, 1));
    OK(tcaStartDMADesc(1)); /* the key of next's memory is cached here now */
    OK(tcaWaitDMAC(1));
    MPI_Barrier(MPI_COMM_WORLD);
    const void *old = mine;
    OK(tcaFree(mine, tcaMemoryCPU)); /* prev's cached key of it is revoked */
    OK(tcaMalloc((void **) &mine, BYTES, tcaMemoryCPU));
    memset(mine, 0x5a, BYTES);
    const int same = old == (const void *) mine;
    MPI_Barrier(MPI_COMM_WORLD);
    OK(tcaStartDMADesc(1)); /* the old handle of next's freed memory */
    const tcaResult r = tcaWaitDMAC(1);
    CHECK(tcaErrorNotRegistered == r,
          "a row with the handle of freed memory: %s, not a named refusal", tcaGetErrorString(r));
    MPI_Barrier(MPI_COMM_WORLD);
    int untouched = 1;
    for (int i = 0; i < BYTES; ++i)
        untouched &= 0x5a == mine[i];
    CHECK(
        untouched,
        "memory allocated after tcaFree (%s address) was written through the old handle by node %d",
        same ? "the same" : "another", prev);
    OK(tcaDescFree(d));
    free(hm);
    free(hs);
    OK(tcaFree(mine, tcaMemoryCPU));
    OK(tcaFree(src, tcaMemoryCPU));
    MPI_Barrier(MPI_COMM_WORLD);
}

static void held_slots(void) {
    int mine = -1, flag = -1;
    OK(tcaSlotAcquire(&mine));
    int *ids = malloc(sizeof(int) * (size_t) size);
    MPI_Allgather(&mine, 1, MPI_INT, ids, 1, MPI_INT, MPI_COMM_WORLD);
    unsigned char *buf, src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    OK(tcaMalloc((void **) &buf, 64, tcaMemoryCPU));
    tcaHandle *h = share(buf, 64, tcaMemoryCPU);
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    const int plain_next = ids[next] & 0xffff; /* index | token << 16: the index alone */
    MPI_Barrier(MPI_COMM_WORLD);
    OK(tcaPioWrite(&h[next], 0, src, 8, tcaDMANotify, plain_next, 1)); /* refused there */
    OK(tcaPioWrite(&h[next], 8, src, 8, tcaDMANotify, ids[next], 2));  /* the holder's id */
    CHECK(tcaErrorNotAcquired == tcaPioWrite(&h[rank], 16, src, 8, tcaDMANotify, mine & 0xffff, 3),
          "a notification into our own held slot by its plain number was not refused");
    OK(tcaWaitDMARecvDesc(&h[prev], mine, 2));
    /* The refused one went first, behind the same fence: had it been counted, it would be here. */
    OK(tcaTestDMARecvDesc(&h[prev], mine, 1, &flag));
    CHECK(0 == flag, "a notification naming our held slot by its plain number was counted");
    MPI_Barrier(MPI_COMM_WORLD);
    /* The same through one-row DMA descriptors, whose notification travels in
     * the row's own message: counted after the data, by the holder's id only. */
    memset(buf, 0, 64);
    MPI_Barrier(MPI_COMM_WORLD);
    tcaDesc *plain = tcaDescNew(), *named = tcaDescNew();
    OK(tcaDescSetMemcpy(plain, &h[next], 32, &h[rank], 56, 8, tcaDMANotify, plain_next, 4));
    OK(tcaDescSetMemcpy(named, &h[next], 40, &h[rank], 48, 8, tcaDMANotify, ids[next], 5));
    memcpy(buf + 48, src, 8);
    memset(buf + 56, 0x5a, 8);
    OK(tcaDescSet(plain, 2));
    OK(tcaStartDMADesc(2));
    OK(tcaDescSet(named, 2));
    OK(tcaStartDMADesc(2));
    OK(tcaWaitDMAC(2));
    OK(tcaWaitDMARecvDesc(&h[prev], mine, 5));
    CHECK(0 == memcmp(buf + 40, src, 8),
          "a DMA row's data was not there when its notification was counted");
    OK(tcaTestDMARecvDesc(&h[prev], mine, 4, &flag));
    CHECK(0 == flag,
          "a DMA row's notification naming our held slot by its plain number was counted");
    tcaDescFree(plain);
    tcaDescFree(named);
    MPI_Barrier(MPI_COMM_WORLD);
    OK(tcaSlotRelease(mine));
    free(ids);
    free(h);
    OK(tcaFree(buf, tcaMemoryCPU));
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The model's value of TCA_<name> (the script sets them); 0 if unset. */
static double model_ns(const char *name) {
    const char *v = getenv(name);
    return v != NULL ? strtod(v, NULL) : 0.0;
}
static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec * 1e9 + (double) t.tv_nsec;
}

/* TCA_TIMING=1: modelled time spent in the calls that issue the puts. */
static void timing_model(void) {
    const char *on = getenv("TCA_TIMING");
    if (on == NULL || strcmp(on, "1") != 0)
        return;
    const double pio = model_ns("TCA_PIO_LATENCY_NS"), start = model_ns("TCA_CHAIN_START_NS"),
                 dma = model_ns("TCA_DMA_LATENCY_NS");
    CHECK(pio >= 1e6 && dma >= 1e6,
          "the script sets latencies of milliseconds (PIO %.0f, DMA %.0f ns)", pio, dma);
    unsigned char *buf;
    OK(tcaMalloc((void **) &buf, 8192, tcaMemoryCPU));
    for (int i = 0; i < 4096; ++i)
        buf[i] = pattern((size_t) i, rank, 55);
    tcaHandle *h = share(buf, 8192, tcaMemoryCPU);
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_ns();
    OK(tcaPioWrite(&h[next], 4096, buf, 64, tcaDMANotify, 3, 1));
    const double pio_took = now_ns() - t0;
    CHECK(pio_took >= pio, "a PIO write took %.0f ns, the model %.0f", pio_took, pio);
    OK(tcaWaitDMARecvDesc(&h[prev], 3, 1));
    tcaDesc *d = tcaDescNew();
    OK(tcaDescSetMemcpy(d, &h[next], 4096 + 64, &h[rank], 64, 1024, tcaDMANotify, 3, 2));
    OK(tcaDescSetMemcpy(d, &h[next], 4096 + 2048, &h[rank], 2048, 1024, tcaDMANotify, 3, 3));
    OK(tcaDescSet(d, 0));
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now_ns();
    OK(tcaStartDMADesc(0));
    const double dma_took = now_ns() - t0;
    /* Two descriptors: the second issues after the first's transfer, so its
     * end is later still; the first alone is start + latency. */
    CHECK(dma_took >= start + dma,
          "a two-descriptor chain's start took %.0f ns, the model at least %.0f", dma_took,
          start + dma);
    OK(tcaWaitDMAC(0));
    OK(tcaWaitDMARecvDesc(&h[prev], 3, 2));
    OK(tcaWaitDMARecvDesc(&h[prev], 3, 3));
    size_t bad = 0;
    for (int i = 0; i < 64; ++i)
        bad += buf[4096 + i] != pattern((size_t) i, prev, 55);
    for (int i = 64; i < 64 + 1024; ++i)
        bad += buf[4096 + i] != pattern((size_t) i, prev, 55);
    for (int i = 2048; i < 2048 + 1024; ++i)
        bad += buf[4096 + i] != pattern((size_t) i, prev, 55);
    CHECK(0 == bad, "timing model: %zu bytes from %d wrong", bad, prev);
    if (rank == 0)
        printf(
            "timing model: PIO write %.2f ms (model %.2f), chain start %.2f ms (model >= %.2f)\n",
            pio_took / 1e6, pio / 1e6, dma_took / 1e6, (start + dma) / 1e6);
    MPI_Barrier(MPI_COMM_WORLD);
    OK(tcaDescFree(d));
    free(h);
    OK(tcaFree(buf, tcaMemoryCPU));
}

static void node_states(void) {
    int state = -1;
    for (int n = 0; n < size; ++n) {
        OK(tcaNodeState(n, &state));
        CHECK(TCA_NODE_ALIVE == state, "node %d is %d while everyone runs", n, state);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(tcaInit());
    identity();
    progress_takeover();
    pio_all_to_all();
    block_stride_chain();
    dma_rows_and_last_word();
    counters_and_interrupts();
    writes_with_counter_adds();
    triggered_chains();
    refusals_and_bad_handles();
    free_revokes_keys();
    held_slots();
    timing_model();
    node_states();
    MPI_Barrier(MPI_COMM_WORLD);
    /* The last rank finalizes first; the others then see it FINISHED, not dead. */
    if (rank == size - 1)
        OK(tcaFinalize());
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != size - 1) {
        int state = -1;
        for (int spins = 0; spins < 2000 && state != TCA_NODE_FINISHED; ++spins) {
            OK(tcaNodeState(size - 1, &state));
            if (state != TCA_NODE_FINISHED)
                (void) tcaInterruptWait(0, 1000);
        }
        CHECK(TCA_NODE_FINISHED == state, "node %d is %d after its tcaFinalize", size - 1, state);
        OK(tcaFinalize());
    }
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank)
        printf("ucx_device_test: %s (%d failures)\n", failures ? "FAILED" : "PASSED", failures);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return failures ? 1 : 0;
}
