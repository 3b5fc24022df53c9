/*
 * coll_bench.c - many large messages in flight at once, as applications and
 * the common benchmark suites make them (OSU's osu_alltoall, osu_allreduce,
 * osu_bcast, osu_mbw_mr):
 *   alltoall   MPI_Alltoall, BYTES to every rank (the size is per pair)
 *   allreduce  MPI_Allreduce of BYTES of doubles (sum)
 *   bcast      MPI_Bcast of BYTES from rank 0
 *   pairs      multi-pair stream: rank i of the first half sends windows of
 *              64 messages of BYTES to rank i + size/2, which acknowledges
 *              each window (aggregate bandwidth of all pairs)
 * Every collective is timed per call, averaged over iterations, the maximum
 * over ranks reported, and its data checked once per size (a wrong byte is
 * an error, exit 1).  Prints "RESULT <benchmark> <bytes> <value>" (us per
 * call; MB/s for pairs).
 * Usage: coll_bench [-s MIN-MAX] [-t SECONDS] benchmark...
 *   -s MIN-MAX   sizes in bytes, powers of 4 from MIN (default 16384-4194304)
 *   -t SECONDS   time budget per size and benchmark (default 0.2): the
 *                iterations are fitted to it after a first timed call, so a
 *                slow transport still ends (its time is what is measured)
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WINDOW = 64 };
static int rank, size;
static double budget = 0.2;

static void die(const char *what) {
    fprintf(stderr, "coll_bench: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n > 0 ? n : 1);
    if (p == NULL)
        die("out of memory");
    return p;
}

/* The byte rank `from` sends to rank `to` at offset i of a block. */
static unsigned char pattern(int from, int to, size_t i) {
    return (unsigned char) (from * 31 + to * 7 + i * 13 + (i >> 12));
}

/* Iterations that fit the budget, agreed by all ranks (the slowest decides). */
static int fit_iterations(double one_call) {
    double slowest = 0;
    MPI_Allreduce(&one_call, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int n = slowest > 0 ? (int) (budget / slowest) : 1000;
    return n < 2 ? 2 : n > 1000 ? 1000 : n;
}

static void report(const char *bench, size_t bytes, double mine) {
    double worst = 0;
    MPI_Reduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("RESULT %s %zu %.3f\n", bench, bytes, worst);
        fflush(stdout);
    }
}

static void alltoall(size_t bytes) {
    unsigned char *s = xmalloc(bytes * size), *r = xmalloc(bytes * size);
    for (int p = 0; p < size; p++)
        for (size_t i = 0; i < bytes; i++)
            s[p * bytes + i] = pattern(rank, p, i);
    memset(r, 0, bytes * size);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    MPI_Alltoall(s, (int) bytes, MPI_BYTE, r, (int) bytes, MPI_BYTE, MPI_COMM_WORLD);
    t = MPI_Wtime() - t;
    for (int p = 0; p < size; p++)
        for (size_t i = 0; i < bytes; i++)
            if (r[p * bytes + i] != pattern(p, rank, i))
                die("alltoall: wrong data");
    const int iters = fit_iterations(t);
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    for (int k = 0; k < iters; k++)
        MPI_Alltoall(s, (int) bytes, MPI_BYTE, r, (int) bytes, MPI_BYTE, MPI_COMM_WORLD);
    report("alltoall", bytes, (MPI_Wtime() - t) * 1e6 / iters);
    free(s);
    free(r);
}

static void allreduce(size_t bytes) {
    const size_t n = bytes / sizeof(double) > 0 ? bytes / sizeof(double) : 1;
    double *s = xmalloc(n * sizeof(double)), *r = xmalloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        s[i] = (double) ((rank + 1) * (i % 1000));
    double t = MPI_Wtime();
    MPI_Allreduce(s, r, (int) n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    t = MPI_Wtime() - t;
    const double ranks = (double) size * (size + 1) / 2;
    for (size_t i = 0; i < n; i++)
        if (r[i] != ranks * (double) (i % 1000))
            die("allreduce: wrong sum");
    const int iters = fit_iterations(t);
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    for (int k = 0; k < iters; k++)
        MPI_Allreduce(s, r, (int) n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    report("allreduce", n * sizeof(double), (MPI_Wtime() - t) * 1e6 / iters);
    free(s);
    free(r);
}

static void bcast(size_t bytes) {
    unsigned char *b = xmalloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        b[i] = rank == 0 ? pattern(0, 1, i) : 0;
    double t = MPI_Wtime();
    MPI_Bcast(b, (int) bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    t = MPI_Wtime() - t;
    for (size_t i = 0; i < bytes; i++)
        if (b[i] != pattern(0, 1, i))
            die("bcast: wrong data");
    const int iters = fit_iterations(t);
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    for (int k = 0; k < iters; k++)
        MPI_Bcast(b, (int) bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    report("bcast", bytes, (MPI_Wtime() - t) * 1e6 / iters);
    free(b);
}

/* One window of the multi-pair stream; returns the seconds it took. */
static double pair_window(unsigned char *buf, size_t bytes, int peer, int sender) {
    MPI_Request req[WINDOW];
    char ack = 0;
    const double t = MPI_Wtime();
    for (int w = 0; w < WINDOW; w++) {
        if (sender)
            MPI_Isend(buf, (int) bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &req[w]);
        else
            MPI_Irecv(buf + (size_t) w * bytes, (int) bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD,
                      &req[w]);
    }
    MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
    if (sender)
        MPI_Recv(&ack, 1, MPI_CHAR, peer, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Send(&ack, 1, MPI_CHAR, peer, 8, MPI_COMM_WORLD);
    return MPI_Wtime() - t;
}

static void pairs(size_t bytes) {
    const int half = size / 2;
    if (half == 0)
        die("pairs needs 2 ranks or more");
    const int active = rank < 2 * half, sender = rank < half;
    const int peer = sender ? rank + half : rank - half;
    unsigned char *buf = xmalloc(sender ? bytes : bytes * WINDOW);
    for (size_t i = 0; i < bytes; i++)
        buf[i] = pattern(rank, peer, i);
    double one = 0;
    if (active)
        one = pair_window(buf, bytes, peer, sender);
    if (active && !sender)
        for (int w = 0; w < WINDOW; w++)
            for (size_t i = 0; i < bytes; i++)
                if (buf[(size_t) w * bytes + i] != pattern(peer, rank, i))
                    die("pairs: wrong data");
    const int windows = fit_iterations(one);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t = MPI_Wtime();
    for (int k = 0; k < windows && active; k++)
        pair_window(buf, bytes, peer, sender);
    MPI_Barrier(MPI_COMM_WORLD);
    const double secs = MPI_Wtime() - t;
    /* all pairs' bytes over the time the slowest took */
    const double mbs = (double) half * windows * WINDOW * (double) bytes / secs / 1e6;
    if (rank == 0) {
        printf("RESULT pairs %zu %.1f\n", bytes, mbs);
        fflush(stdout);
    }
    free(buf);
}

int main(int argc, char **argv) {
    size_t lo = 16384, hi = 4194304;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first += 2) {
        if (first + 1 >= argc)
            die("an option without its value");
        if (!strcmp(argv[first], "-s")) {
            unsigned long long a = 0, b = 0;
            if (sscanf(argv[first + 1], "%llu-%llu", &a, &b) != 2 || a == 0 || b < a)
                die("-s MIN-MAX");
            lo = (size_t) a;
            hi = (size_t) b;
        } else if (!strcmp(argv[first], "-t")) {
            budget = atof(argv[first + 1]);
            if (!(budget > 0))
                die("-t SECONDS");
        } else {
            die("unknown option");
        }
    }
    if (first == argc)
        die("usage: coll_bench [-s MIN-MAX] [-t SECONDS] alltoall|allreduce|bcast|pairs...");
    for (int b = first; b < argc; b++) {
        for (size_t n = lo; n <= hi; n *= 4) {
            if (!strcmp(argv[b], "alltoall"))
                alltoall(n);
            else if (!strcmp(argv[b], "allreduce"))
                allreduce(n);
            else if (!strcmp(argv[b], "bcast"))
                bcast(n);
            else if (!strcmp(argv[b], "pairs"))
                pairs(n);
            else
                die("unknown benchmark");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
