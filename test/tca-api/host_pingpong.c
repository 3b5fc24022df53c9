/*
 * host_pingpong.c - DMA ping-pong between host buffers, in the style of the
 * published GPU ping-pong (B1), on tcaMemoryCPU: ranks pair up (0-1, 2-3, ...;
 * an odd last rank only joins the collectives), sizes 8 B .. 4 MiB, one chain
 * loaded once per size and started every iteration, each descriptor notifying
 * the peer and the sender itself.  Every received byte is checked.
 * Usage: host_pingpong [iterations]
 */
#include "mpi-help.h"
#include "tca-help.h"
#include "program_end.h"

#include <string.h>

#define WAIT_SLOT 0
#define WAIT_TAG 0x100
#define DMA_CH 0
#define MAX_SIZE (4u << 20)

/* The byte a sender puts at offset i of iteration it. */
static unsigned char pattern(size_t i, int it, int sender) {
    return (unsigned char) (i * 7u + (unsigned) it * 13u + (unsigned) sender * 101u + (i >> 8));
}

static void fill(unsigned char *p, size_t n, int it, int sender) {
    for (size_t i = 0; i < n; ++i)
        p[i] = pattern(i, it, sender);
}

static int check(const unsigned char *p, size_t n, int it, int sender, size_t size, int me) {
    for (size_t i = 0; i < n; ++i) {
        if (p[i] != pattern(i, it, sender)) {
            fprintf(stderr, "rank %d: %zu B, iteration %d: byte %zu is %u, expected %u\n", me, size,
                    it, i, p[i], pattern(i, it, sender));
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    int me, nprocs, peer, errors = 0, iters = argc > 1 ? atoi(argv[1]) : 20;
    const int flags = tcaDMAUseInternal | tcaDMAUseNotifyInternal | tcaDMANotify | tcaDMANotifySelf;

    MPI_SAFE_CALL(MPI_Init(&argc, &argv));
    MPI_SAFE_CALL(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    MPI_SAFE_CALL(MPI_Comm_size(MPI_COMM_WORLD, &nprocs));
    TCA_SAFE_CALL(tcaInit());
    if (0 == me)
        printf("libtca %s, %d ranks, %d iterations per size\n", TCA_LIB_VERSION, nprocs, iters);
    peer = (me % 2 == 0) ? me + 1 : me - 1;
    if (peer >= nprocs)
        peer = -1; /* odd last rank */

    for (size_t size = 8; size <= MAX_SIZE; size *= 2) {
        /* [0, size): what this rank sends; [size, 2 size): what it receives. */
        unsigned char *buf;
        tcaHandle *handles;
        tcaDesc *desc = NULL;
        int n = size > (256u << 10) ? (iters + 3) / 4 : iters;
        double t0, t1;

        TCA_SAFE_CALL(tcaMalloc((void **) &buf, 2 * size, tcaMemoryCPU));
        tcaCreateHandleList(&handles, nprocs, buf, 2 * size);
        if (peer >= 0) {
            desc = tcaDescNew();
            TCA_SAFE_CALL(tcaDescSetMemcpy(desc, &handles[peer], (off_t) size, &handles[me], 0,
                                           size, flags, WAIT_SLOT, WAIT_TAG));
            TCA_SAFE_CALL(tcaDescSet(desc, DMA_CH));
        }
        MPI_SAFE_CALL(MPI_Barrier(MPI_COMM_WORLD));
        t0 = MPI_Wtime();
        for (int it = 0; peer >= 0 && it < n; ++it) {
            if (me % 2 == 0) {
                fill(buf, size, it, me);
                TCA_SAFE_CALL(tcaStartDMADesc(DMA_CH));
                TCA_SAFE_CALL(
                    tcaWaitDMARecvDesc(&handles[me], WAIT_SLOT, WAIT_TAG)); /* my data landed */
                TCA_SAFE_CALL(
                    tcaWaitDMARecvDesc(&handles[peer], WAIT_SLOT, WAIT_TAG)); /* the reply */
                errors += check(buf + size, size, it, peer, size, me);
            } else {
                TCA_SAFE_CALL(tcaWaitDMARecvDesc(&handles[peer], WAIT_SLOT, WAIT_TAG));
                errors += check(buf + size, size, it, peer, size, me);
                fill(buf, size, it, me);
                TCA_SAFE_CALL(tcaStartDMADesc(DMA_CH));
                TCA_SAFE_CALL(tcaWaitDMARecvDesc(&handles[me], WAIT_SLOT, WAIT_TAG));
            }
        }
        t1 = MPI_Wtime();
        if (0 == me && peer >= 0)
            printf("%8zu B  %10.3f us one way\n", size, (t1 - t0) * 1e6 / n / 2);
        MPI_SAFE_CALL(MPI_Barrier(MPI_COMM_WORLD));
        if (desc)
            TCA_SAFE_CALL(tcaDescFree(desc));
        free(handles);
        TCA_SAFE_CALL(tcaFree(buf, tcaMemoryCPU));
    }

    return program_end(me, errors);
}
