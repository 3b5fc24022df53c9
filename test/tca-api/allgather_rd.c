/*
 * allgather_rd.c - recursive-doubling allgather with one DMA channel per
 * step, in the style of the published PEACH2 allgather benchmark (compat
 * reference B5).
 *
 * What it reproduces, and relies on:
 * - power-of-two process counts (2, 4, 8: channels 0 .. log2(P) - 1);
 * - channel 0's chain is a local copy of the rank's own block from its send
 *   buffer into its receive buffer (Notify + NotifySelf: two notifications
 *   to itself) followed by the step-0 exchange; channel 0 is loaded after its
 *   first descriptor and again after its second, as the benchmark does;
 * - channel i (i >= 1) sends the 2^i blocks gathered so far to rank
 *   me ^ 2^i; its data includes blocks received in step i - 1, so a
 *   notification must imply that the data is visible to the DMA engine too;
 *   it also includes the rank's own block, put there by channel 0's local
 *   copy: like the benchmark, the program relies on that copy having run by
 *   then, though the self-notification it waited may be a leftover one;
 * - per step one self-notification and the partner's notification are
 *   waited: two self-notifications per iteration are never consumed;
 * - chains loaded once per size and restarted every iteration without
 *   tcaWaitDMAC, MPI_Barrier between iterations; handles made with
 *   tcaCreateHandle and exchanged as raw bytes with MPI_Allgather.
 * Every rank checks the whole gathered buffer in every iteration.
 */
#include <mpi.h>
#include "tca-help.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_TAG 0x100
#define DMA_FLAG (tcaDMAUseInternal | tcaDMAUseNotifyInternal | tcaDMANotify | tcaDMANotifySelf)
#define WARMUP 5
#define TIMES 20
#define IS_POW_2(x) (((x) & ((x) -1)) == 0)

static int me, nprocs;

/* Byte i of rank r's block in iteration it. */
static uint8_t pattern(int r, size_t i, int it) {
    return (uint8_t) ((unsigned) r * 31u + i * 7u + (unsigned) it * 13u + 1u);
}

/* Checks rank r's block in rbuf; 0 if every byte is right. */
static int check(const uint8_t *rbuf, int r, size_t block, int it) {
    for (size_t i = 0; i < block; ++i) {
        uint8_t got = rbuf[(size_t) r * block + i];
        if (got != pattern(r, i, it)) {
            fprintf(
                stderr,
                "allgather_rd: rank %d block %zu iteration %d: byte %zu of rank %d's block is %u, "
                "expected %u\n",
                me, block, it, i, r, got, pattern(r, i, it));
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (!IS_POW_2(nprocs) || nprocs < 2) {
        if (0 == me)
            fprintf(stderr, "allgather_rd: the process count must be a power of two >= 2\n");
        exit(EXIT_FAILURE);
    }
    TCA_SAFE_CALL(tcaInit());

    int steps = 0;
    while ((1 << steps) < nprocs)
        ++steps;

    for (size_t block = 16; block <= 65536; block *= 4) {
        uint8_t *sbuf, *rbuf;
        tcaHandle sh, rh, *rhs = malloc(sizeof(tcaHandle) * nprocs);
        tcaDesc *desc[8];
        TCA_SAFE_CALL(tcaMalloc((void **) &sbuf, block, tcaMemoryCPU));
        TCA_SAFE_CALL(tcaMalloc((void **) &rbuf, block * nprocs, tcaMemoryCPU));
        memset(rbuf, 0, block * nprocs);
        TCA_SAFE_CALL(tcaCreateHandle(&sh, sbuf, block, tcaMemoryCPU));
        TCA_SAFE_CALL(tcaCreateHandle(&rh, rbuf, block * nprocs, tcaMemoryCPU));
        MPI_Allgather(&rh, sizeof(tcaHandle), MPI_BYTE, rhs, sizeof(tcaHandle), MPI_BYTE,
                      MPI_COMM_WORLD);

        for (int s = 0; s < steps; ++s) {
            int partner = me ^ (1 << s);
            off_t off = (off_t) ((me >> s) << s) * (off_t) block; /* my group's blocks so far */
            desc[s] = tcaDescNew();
            if (0 == s) {
                TCA_SAFE_CALL(tcaDescSetMemcpy(desc[s], &rhs[me], (off_t) me * (off_t) block, &sh,
                                               0, block, DMA_FLAG, 0, WAIT_TAG));
                TCA_SAFE_CALL(tcaDescSet(desc[s], s));
            }
            TCA_SAFE_CALL(tcaDescSetMemcpy(desc[s], &rhs[partner], off, &rhs[me], off, block << s,
                                           DMA_FLAG, 0, WAIT_TAG));
            TCA_SAFE_CALL(tcaDescSet(desc[s], s));
        }
        MPI_Barrier(MPI_COMM_WORLD);

        double total = 0.0;
        for (int it = 0; it < WARMUP + TIMES; ++it) {
            for (size_t i = 0; i < block; ++i)
                sbuf[i] = pattern(me, i, it);
            double t0 = MPI_Wtime();
            for (int s = 0; s < steps; ++s) {
                TCA_SAFE_CALL(tcaStartDMADesc(s));
                TCA_SAFE_CALL(tcaWaitDMARecvDesc(&rhs[me], 0, WAIT_TAG));
                TCA_SAFE_CALL(tcaWaitDMARecvDesc(&rhs[me ^ (1 << s)], 0, WAIT_TAG));
            }
            double t = MPI_Wtime() - t0;
            /* The blocks of the others arrived with their notifications. */
            for (int r = 0; r < nprocs; ++r)
                if (r != me && check(rbuf, r, block, it))
                    exit(EXIT_FAILURE);
            MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            /* My own block: the self-notifications waited above may be left
             * over from the previous iteration, so the local copy is known
             * done only now - my step-0 partner has waited for the exchange
             * that follows it in the chain. Nobody else writes this block. */
            if (check(rbuf, me, block, it))
                exit(EXIT_FAILURE);
            if (it >= WARMUP)
                total += t;
        }
        if (0 == me)
            printf("allgather_rd: %d ranks %6zu bytes/rank %10.3f us\n", nprocs, block,
                   total / TIMES * 1e6);

        for (int s = 0; s < steps; ++s)
            TCA_SAFE_CALL(tcaDescFree(desc[s]));
        MPI_Barrier(MPI_COMM_WORLD); /* nobody writes into rbuf any more */
        TCA_SAFE_CALL(tcaFree(rbuf, tcaMemoryCPU));
        TCA_SAFE_CALL(tcaFree(sbuf, tcaMemoryCPU));
        free(rhs);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me)
        printf("allgather_rd: PASSED\n");
    MPI_Finalize();
    return 0;
}
