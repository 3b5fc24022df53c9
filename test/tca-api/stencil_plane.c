/*
 * stencil_plane.c - five-process stencil plane exchange, in the style of the
 * published PEACH2 stencil benchmark (compat reference B3).
 *
 * Every rank holds an N x N x N array of doubles a[z][y][x] (tcaMalloc'd host
 * memory, handles from tcaCreateHandleList). Rank 0 sends its plane y = 1
 * (N rows of N doubles, row pitch N*N doubles) into the plane y = N - 1 of
 * ranks 2 and 4 by TCA - one 2-D descriptor each, one chain loaded once and
 * started every iteration - and the same plane packed to ranks 1 and 3 by MPI.
 *
 * What it reproduces, and relies on:
 * - both descriptors notify the receiver and rank 0 itself, but rank 0 waits
 *   for one self-notification per start: one is left over every iteration;
 * - rank 0 restarts without any acknowledgement from ranks 2 and 4, which
 *   wait once per iteration and may lag by a run or more: notifications are
 *   counted, never merged, and a restart while the previous run may still be
 *   going is queued behind it;
 * - one tcaWaitDMAC after the loop by all five ranks, including the four that
 *   never loaded the channel.
 * The plane's values do not change between iterations (the receivers cannot
 * know which run they see); each receiver checks the whole array after every
 * wait: the plane carries rank 0's values, every other byte is untouched.
 */
#include "mpi-help.h"
#include "tca-help.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DMA_CH 0
#define WAIT_TAG 0x100
#define DMA_FLAG (tcaDMAUseInternal | tcaDMAUseNotifyInternal | tcaDMANotify | tcaDMANotifySelf)
#define WARMUP 10
#define COUNT 40

static int me, nprocs;

/* Rank 0's value at (z, y, x) for edge length n; the others start with -rank. */
static double value(int n, int z, int y, int x) {
    return (double) n * 1e6 + (double) z * 1e4 + (double) y * 100.0 + (double) x;
}

/* Checks a receiver's whole array: plane y = n - 1 holds rank 0's plane y = 1. */
static void check(const double *a, int n, int it) {
    for (int z = 0; z < n; ++z)
        for (int y = 0; y < n; ++y)
            for (int x = 0; x < n; ++x) {
                double want = y == n - 1 ? value(n, z, 1, x) : -(double) me;
                double got = a[((size_t) z * n + y) * n + x];
                if (got != want) {
                    fprintf(stderr,
                            "stencil_plane: rank %d N %d iteration %d: a[%d][%d][%d] is %g, "
                            "expected %g\n",
                            me, n, it, z, y, x, got, want);
                    exit(EXIT_FAILURE);
                }
            }
}

int main(int argc, char **argv) {
    MPI_SAFE_CALL(MPI_Init(&argc, &argv));
    MPI_SAFE_CALL(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    MPI_SAFE_CALL(MPI_Comm_size(MPI_COMM_WORLD, &nprocs));
    if (5 != nprocs) {
        if (0 == me)
            fprintf(stderr, "stencil_plane: run with 5 processes\n");
        exit(EXIT_FAILURE);
    }
    TCA_SAFE_CALL(tcaInit());

    for (int n = 2; n <= 64; n *= 2) {
        size_t bytes = (size_t) n * n * n * sizeof(double);
        size_t pitch = (size_t) n * n * sizeof(double);
        double *a, *plane = malloc((size_t) n * n * sizeof(double));
        tcaHandle *handle;
        tcaDesc *desc = NULL;
        TCA_SAFE_CALL(tcaMalloc((void **) &a, bytes, tcaMemoryCPU));
        for (int z = 0; z < n; ++z)
            for (int y = 0; y < n; ++y)
                for (int x = 0; x < n; ++x)
                    a[((size_t) z * n + y) * n + x] = 0 == me ? value(n, z, y, x) : -(double) me;
        tcaCreateHandleList(&handle, nprocs, a, bytes);

        if (0 == me) {
            desc = tcaDescNew();
            for (int dst = 2; dst <= 4; dst += 2)
                TCA_SAFE_CALL(tcaDescSetMemcpy2D(
                    desc, &handle[dst], (off_t) (n - 1) * n * (off_t) sizeof(double), pitch,
                    &handle[0], (off_t) n * (off_t) sizeof(double), pitch,
                    (size_t) n * sizeof(double), (size_t) n, DMA_FLAG, 0, WAIT_TAG));
            TCA_SAFE_CALL(tcaDescSet(desc, DMA_CH));
        }
        MPI_SAFE_CALL(MPI_Barrier(MPI_COMM_WORLD));

        double t0 = 0.0;
        for (int it = 0; it < WARMUP + COUNT; ++it) {
            if (WARMUP == it)
                t0 = MPI_Wtime();
            if (0 == me) {
                TCA_SAFE_CALL(tcaStartDMADesc(DMA_CH));
                for (int z = 0; z < n; ++z)
                    memcpy(plane + (size_t) z * n, a + ((size_t) z * n + 1) * n,
                           n * sizeof(double));
                MPI_SAFE_CALL(MPI_Send(plane, n * n, MPI_DOUBLE, 1, it, MPI_COMM_WORLD));
                MPI_SAFE_CALL(MPI_Send(plane, n * n, MPI_DOUBLE, 3, it, MPI_COMM_WORLD));
                TCA_SAFE_CALL(tcaWaitDMARecvDesc(&handle[0], 0, WAIT_TAG)); /* one of two */
            } else if (1 == me % 2) {
                MPI_SAFE_CALL(
                    MPI_Recv(plane, n * n, MPI_DOUBLE, 0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                for (int z = 0; z < n; ++z)
                    memcpy(a + ((size_t) z * n + n - 1) * n, plane + (size_t) z * n,
                           n * sizeof(double));
                check(a, n, it);
            } else {
                TCA_SAFE_CALL(tcaWaitDMARecvDesc(&handle[0], 0, WAIT_TAG));
                check(a, n, it);
            }
        }
        double t = (MPI_Wtime() - t0) / COUNT / 2;
        TCA_SAFE_CALL(tcaWaitDMAC(DMA_CH));
        MPI_SAFE_CALL(MPI_Barrier(MPI_COMM_WORLD));
        if (0 != me)
            check(a, n, WARMUP + COUNT);
        if (0 == me)
            printf("stencil_plane: N %3d %10.3f us\n", n, t * 1e6);

        if (desc)
            TCA_SAFE_CALL(tcaDescFree(desc));
        free(handle);
        free(plane);
        TCA_SAFE_CALL(tcaFree(a, tcaMemoryCPU));
    }
    MPI_SAFE_CALL(MPI_Barrier(MPI_COMM_WORLD));
    if (0 == me)
        printf("stencil_plane: PASSED\n");
    MPI_Finalize();
    return 0;
}
