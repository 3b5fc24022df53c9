/*
 * ring_poll.c - one-sided messages through per-peer DMA ring buffers read by
 * a polling thread, in the style of a PGAS compiler runtime's TCA post/wait
 * (compat reference R6).
 *
 * Every rank owns one tcaMalloc'd host region (registered with
 * tcaCreateHandle, handles exchanged as raw bytes with MPI_Allgather) holding
 * a ring of RING packets per peer, one sequence word per peer, one
 * acknowledgement word per peer and its staging buffers. To post packet n to
 * peer p, the main thread builds one chain on channel 0:
 *   descriptor 1: the packet into p's ring slot n % RING (no notify flag; the
 *                 slot and tag are passed all the same),
 *   descriptor 2: n + 1 into p's sequence word for this rank (NotifySelf),
 * loads and starts it, waits for the self-notification and then tcaWaitDMAC.
 * A polling thread spins on its sequence words; a new value means the packet
 * is there (descriptors of a chain execute in order, data before the next
 * descriptor's data). It checks the packet and acknowledges it with a chain
 * writing its consumed count into the sender's ack word (Notify + NotifySelf),
 * waiting for its self-notification and tcaWaitDMAC. Channel 0 is shared by
 * both threads, serialised by the program's own mutex. The sender waits for
 * an ack notification only while the peer's ring is full, re-checking the ack
 * word after every wait: most ack notifications are never waited (there are
 * more than a notification ring of 128 would hold). tcaDestroyHandle at
 * shutdown, no finalize call.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include "tca-help.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PKT 256     /* packet bytes */
#define RING 64     /* packets per peer ring */
#define PACKETS 160 /* packets to every peer */
#define LINE 64
#define PKT_TAG 31
#define ACK_TAG 32
#define ACK_SLOT 24
#define PKT_SLOT(p) (16 + (p) % 8)
#define DMA_BASE (tcaDMAUseInternal | tcaDMAUseNotifyInternal)

static int me, nprocs;
static uint8_t *mem;  /* my region */
static tcaHandle *hs; /* everybody's region, by rank */
static pthread_mutex_t chan0 = PTHREAD_MUTEX_INITIALIZER;

/* Offsets inside every rank's region. */
static off_t ring_off(int src, int n) {
    return ((off_t) src * RING + n % RING) * PKT;
}
static off_t seq_off(int src) {
    return (off_t) nprocs * RING * PKT + (off_t) src * LINE;
}
static off_t ack_off(int dst) {
    return seq_off(nprocs) + (off_t) dst * LINE;
}
static off_t txp_off(void) {
    return ack_off(nprocs);
}
static off_t txs_off(void) {
    return txp_off() + PKT;
}
static off_t txa_off(void) {
    return txs_off() + LINE;
}
static size_t region_bytes(void) {
    return (size_t) (txa_off() + LINE);
}

static uint64_t *word(off_t off) {
    return (uint64_t *) (void *) (mem + off);
}

static uint8_t pattern(int src, int dst, int n, int i) {
    return (uint8_t) (src * 29 + dst * 17 + n * 13 + i * 7 + 1);
}

/* Loads and runs a one- or two-descriptor chain on channel 0, waiting for its
 * self-notification (slot, tag) and the channel. Caller holds chan0. */
static void run_chain(tcaDesc *desc, int slot, int tag) {
    TCA_SAFE_CALL(tcaDescSet(desc, 0));
    TCA_SAFE_CALL(tcaStartDMADesc(0));
    TCA_SAFE_CALL(tcaWaitDMARecvDesc(&hs[me], slot, tag));
    TCA_SAFE_CALL(tcaWaitDMAC(0));
    TCA_SAFE_CALL(tcaDescFree(desc));
}

static void post(int p, int n) {
    /* Peer's ring full: wait for an ack notification, then look again. */
    while ((uint64_t) n - __atomic_load_n(word(ack_off(p)), __ATOMIC_ACQUIRE) >= RING)
        TCA_SAFE_CALL(tcaWaitDMARecvDesc(&hs[p], ACK_SLOT, ACK_TAG));
    pthread_mutex_lock(&chan0);
    for (int i = 0; i < PKT; ++i)
        mem[txp_off() + i] = pattern(me, p, n, i);
    *word(txs_off()) = (uint64_t) n + 1;
    tcaDesc *desc = tcaDescNew();
    TCA_SAFE_CALL(tcaDescSetMemcpy(desc, &hs[p], ring_off(me, n), &hs[me], txp_off(), PKT, DMA_BASE,
                                   PKT_SLOT(p), PKT_TAG));
    TCA_SAFE_CALL(tcaDescSetMemcpy(desc, &hs[p], seq_off(me), &hs[me], txs_off(), sizeof(uint64_t),
                                   DMA_BASE | tcaDMANotifySelf, PKT_SLOT(p), PKT_TAG));
    run_chain(desc, PKT_SLOT(p), PKT_TAG);
    pthread_mutex_unlock(&chan0);
}

static void *poller(void *arg) {
    (void) arg;
    int *consumed = calloc(nprocs, sizeof(int));
    int left = (nprocs - 1) * PACKETS;
    while (left > 0) {
        int any = 0;
        for (int src = 0; src < nprocs; ++src) {
            if (src == me)
                continue;
            uint64_t seq = __atomic_load_n(word(seq_off(src)), __ATOMIC_ACQUIRE);
            if (seq <= (uint64_t) consumed[src])
                continue;
            int n = consumed[src];
            const uint8_t *pkt = mem + ring_off(src, n);
            for (int i = 0; i < PKT; ++i) {
                if (pkt[i] != pattern(src, me, n, i)) {
                    fprintf(stderr,
                            "ring_poll: rank %d: packet %d from rank %d (sequence word %llu): byte "
                            "%d is %u, "
                            "expected %u\n",
                            me, n, src, (unsigned long long) seq, i, pkt[i],
                            pattern(src, me, n, i));
                    exit(EXIT_FAILURE);
                }
            }
            consumed[src] = n + 1;
            --left;
            any = 1;
            pthread_mutex_lock(&chan0);
            *word(txa_off()) = (uint64_t) n + 1;
            tcaDesc *desc = tcaDescNew();
            TCA_SAFE_CALL(
                tcaDescSetMemcpy(desc, &hs[src], ack_off(me), &hs[me], txa_off(), sizeof(uint64_t),
                                 DMA_BASE | tcaDMANotify | tcaDMANotifySelf, ACK_SLOT, ACK_TAG));
            run_chain(desc, ACK_SLOT, ACK_TAG);
            pthread_mutex_unlock(&chan0);
        }
        if (!any)
            sched_yield();
    }
    free(consumed);
    return NULL;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    TCA_SAFE_CALL(tcaInit());

    tcaHandle mine;
    hs = malloc(sizeof(tcaHandle) * nprocs);
    TCA_SAFE_CALL(tcaMalloc((void **) &mem, region_bytes(), tcaMemoryCPU));
    memset(mem, 0, region_bytes());
    TCA_SAFE_CALL(tcaCreateHandle(&mine, mem, region_bytes(), tcaMemoryCPU));
    MPI_Allgather(&mine, sizeof(tcaHandle), MPI_BYTE, hs, sizeof(tcaHandle), MPI_BYTE,
                  MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);

    double t0 = MPI_Wtime();
    pthread_t thread;
    if (0 != pthread_create(&thread, NULL, poller, NULL)) {
        fprintf(stderr, "ring_poll: pthread_create failed\n");
        exit(EXIT_FAILURE);
    }
    for (int n = 0; n < PACKETS; ++n)
        for (int k = 1; k < nprocs; ++k)
            post((me + k) % nprocs, n);
    pthread_join(thread, NULL);
    double t = MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD); /* every poller is done: no more DMA into anybody's region */

    for (int p = 0; p < nprocs; ++p) {
        if (p == me)
            continue;
        uint64_t seq = *word(seq_off(p)), ack = *word(ack_off(p));
        if (PACKETS != seq || PACKETS != ack) {
            fprintf(stderr,
                    "ring_poll: rank %d: peer %d: sequence word %llu, ack word %llu, expected %d\n",
                    me, p, (unsigned long long) seq, (unsigned long long) ack, PACKETS);
            exit(EXIT_FAILURE);
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (0 == me)
        printf("ring_poll: %d ranks, %d packets of %d bytes to every peer, %.3f us per packet\n",
               nprocs, PACKETS, PKT, t / (PACKETS * (nprocs > 1 ? nprocs - 1 : 1)) * 1e6);

    TCA_SAFE_CALL(tcaDestroyHandle(&mine));
    TCA_SAFE_CALL(tcaFree(mem, tcaMemoryCPU));
    free(hs);
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me)
        printf("ring_poll: PASSED\n");
    MPI_Finalize();
    return 0;
}
