/*
 * rma_bench.c - MPI one-sided latency and bandwidth, OSU style (osu_put_latency,
 * osu_get_bw, osu_acc_latency, osu_fop_latency, osu_cas_latency): rank 0 is
 * the origin of a passive-target epoch on rank 1 (MPI_Win_lock once, every
 * operation completed with MPI_Win_flush), rank 1 waits in a barrier.
 *   rma_bench [-w create|allocate] [-s FIRST:LAST] TEST...   (TEST: put_lat
 *   get_lat put_bw get_bw acc_lat fop_lat cas_lat, or "all")
 * -w allocate uses MPI_Win_allocate (Open MPI takes osc sm for it on one
 * host); create (default) MPI_Win_create on malloc'd memory.  Sizes go 8 B,
 * 32 B, ... (x4) to 4 MiB (accumulate to 32 KiB); -s FIRST:LAST measures
 * every power of two from FIRST to LAST bytes instead (OSU's sizes).  Prints
 * "RESULT <test> <bytes> <value>": us per operation for the latencies, MB/s
 * for the bandwidths (a window of 64 operations per flush).  Run on 2 ranks
 * by scripts/bench-rma.sh.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BYTES (4u << 20)
#define WINDOW 64

static int rank;
static size_t only_first, only_last; /* -s: every power of two in [first, last] */
static MPI_Win win;
static unsigned char *local;

static int iterations(size_t bytes, int window) {
    size_t n = (size_t) (64u << 20) / ((bytes ? bytes : 1) * (size_t) window);
    if (n > 2000)
        n = 2000;
    if (n < 20)
        n = 20;
    return (int) n;
}

/* Origin-side time per iteration of op(bytes) (us); the target waits. */
static double timed(void (*op)(size_t, int), size_t bytes, int window) {
    const int iters = iterations(bytes, window), warmup = iters / 10 + 2;
    double t = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        for (int i = 0; i < warmup; i++)
            op(bytes, window);
        const double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            op(bytes, window);
        t = (MPI_Wtime() - t0) / iters * 1e6;
        MPI_Win_unlock(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return t;
}

static void put_op(size_t bytes, int window) {
    for (int w = 0; w < window; w++)
        MPI_Put(local, (int) bytes, MPI_BYTE, 1, 0, (int) bytes, MPI_BYTE, win);
    MPI_Win_flush(1, win);
}
static void get_op(size_t bytes, int window) {
    for (int w = 0; w < window; w++)
        MPI_Get(local, (int) bytes, MPI_BYTE, 1, 0, (int) bytes, MPI_BYTE, win);
    MPI_Win_flush(1, win);
}
static void acc_op(size_t bytes, int window) {
    (void) window;
    MPI_Accumulate(local, (int) (bytes / sizeof(int)), MPI_INT, 1, 0, (int) (bytes / sizeof(int)),
                   MPI_INT, MPI_SUM, win);
    MPI_Win_flush(1, win);
}
static void fop_op(size_t bytes, int window) {
    (void) bytes;
    (void) window;
    long one = 1, old;
    MPI_Fetch_and_op(&one, &old, MPI_LONG, 1, 0, MPI_SUM, win);
    MPI_Win_flush(1, win);
}
static void cas_op(size_t bytes, int window) {
    (void) bytes;
    (void) window;
    long value = 1, compare = 0, old;
    MPI_Compare_and_swap(&value, &compare, &old, MPI_LONG, 1, 0, win);
    MPI_Win_flush(1, win);
}

static void sweep(const char *name, void (*op)(size_t, int), int window, size_t first, size_t last,
                  int bandwidth) {
    size_t factor = 4;
    if (only_last) {
        first = only_first;
        last = only_last < MAX_BYTES ? only_last : MAX_BYTES;
        factor = 2;
    }
    for (size_t bytes = first; bytes <= last; bytes *= factor) {
        const double us = timed(op, bytes, window);
        if (rank == 0) {
            if (bandwidth)
                printf("RESULT %s %zu %.1f\n", name, bytes, (double) bytes * window / us);
            else
                printf("RESULT %s %zu %.3f\n", name, bytes, us);
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv) {
    int size, allocate = 0, first = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "rma_bench: run on exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (; first + 1 < argc && argv[first][0] == '-'; first += 2) {
        if (!strcmp(argv[first], "-w"))
            allocate = !strcmp(argv[first + 1], "allocate");
        else if (!strcmp(argv[first], "-s") &&
                 2 == sscanf(argv[first + 1], "%zu:%zu", &only_first, &only_last) &&
                 only_first > 0 && only_first <= only_last)
            continue;
        else {
            if (rank == 0)
                fprintf(stderr, "rma_bench: unknown option %s %s\n", argv[first], argv[first + 1]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    local = malloc(MAX_BYTES);
    memset(local, 1, MAX_BYTES);
    unsigned char *base = NULL;
    if (allocate) {
        MPI_Win_allocate(MAX_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    } else {
        base = malloc(MAX_BYTES);
        MPI_Win_create(base, MAX_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    }
    memset(base, 0, MAX_BYTES);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int a = first; a < argc; a++) {
        const int all = !strcmp(argv[a], "all");
        if (all || !strcmp(argv[a], "put_lat"))
            sweep("put_lat", put_op, 1, 8, MAX_BYTES, 0);
        if (all || !strcmp(argv[a], "get_lat"))
            sweep("get_lat", get_op, 1, 8, MAX_BYTES, 0);
        if (all || !strcmp(argv[a], "put_bw"))
            sweep("put_bw", put_op, WINDOW, 8, MAX_BYTES, 1);
        if (all || !strcmp(argv[a], "get_bw"))
            sweep("get_bw", get_op, WINDOW, 8, MAX_BYTES, 1);
        if (all || !strcmp(argv[a], "acc_lat"))
            sweep("acc_lat", acc_op, 1, 8, 65536, 0);
        if (all || !strcmp(argv[a], "fop_lat"))
            sweep("fop_lat", fop_op, 1, 8, 8, 0);
        if (all || !strcmp(argv[a], "cas_lat"))
            sweep("cas_lat", cas_op, 1, 8, 8, 0);
    }
    MPI_Win_free(&win);
    if (!allocate)
        free(base);
    free(local);
    MPI_Finalize();
    return 0;
}
