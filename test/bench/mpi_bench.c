/*
 * mpi_bench.c - OSU-style point-to-point benchmarks between ranks 0 and 1:
 *   latency     one-way latency of a ping-pong (warm-up, then many iterations)
 *   latency8    the same, 8 B only (scripts/bench-device.sh: the reference of
 *               the device's published-style ping-pong)
 *   bw          bandwidth, window of 64 non-blocking sends, one ack per window
 *   bibw        bidirectional bandwidth, both sides post windows at once
 *   bw_one      bw in OSU's shape: every message of the window from one send
 *               buffer into one receive buffer (osu_bw, osu_mbw_mr), where bw
 *               sends each from its own slice of a large buffer (cold caches)
 *   bibw_one    bibw in OSU's shape (osu_bibw)
 *   plat        persistent latency: MPI_Send_init/MPI_Recv_init + MPI_Start
 *   overlap     receiver-side overlap: Irecv, compute (no MPI calls), Wait
 * Prints one "RESULT <benchmark> <bytes> <value>" line per measurement
 * (microseconds for latencies, MB/s for bandwidths, percent for overlap).
 * Usage: mpi_bench [-d host|cuda] [benchmark ...]   (default: latency bw bibw plat)
 * TCA_BENCH_ITER_DIVISOR=N divides the iteration counts by N (slow links).
 * -d cuda: the send and receive buffers are cudaMalloc'd (GPU to GPU through
 * the MPI library); without a GPU or a CUDA-aware Open MPI it prints
 * "SKIP: <why>" and exits 77.
 */
#include <mpi.h>

#include "../common/compute.h"
#include "../common/cuda_dl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t sizes[] = {1,     8,     64,     512,    4096,    16384,
                               32768, 65536, 131072, 262144, 1048576, 4194304};
enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]), WINDOW = 64 };
static int rank;
static char *sbuf, *rbuf;

/* GPU runs do a tenth of the iterations: each GPU copy costs ~150 us when
 * both ranks share one GPU (every copy switches the GPU between the two
 * processes' contexts), so the host counts took minutes per round. */
static int iteration_divisor = 1;
static int iterations(size_t n, int small, int large) {
    const int it = n <= 4096 ? small : n <= 65536 ? small / 5 : large;
    return it / iteration_divisor > 0 ? it / iteration_divisor : 1;
}

static void latency(int persistent, int only8) {
    for (int s = 0; s < NSIZES; s++) {
        if (only8 && sizes[s] != 8)
            continue;
        const size_t n = sizes[s];
        const int iters = iterations(n, 20000, n >= 1048576 ? 100 : 500), warm = iters / 10;
        MPI_Request req[2];
        const int peer = 1 - rank;
        if (persistent) {
            MPI_Send_init(sbuf, (int) n, MPI_CHAR, peer, 1, MPI_COMM_WORLD, &req[0]);
            MPI_Recv_init(rbuf, (int) n, MPI_CHAR, peer, 1, MPI_COMM_WORLD, &req[1]);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0;
        for (int i = 0; i < iters + warm; i++) {
            if (i == warm)
                t0 = MPI_Wtime();
            if (rank == 0) {
                if (persistent) {
                    MPI_Start(&req[0]);
                    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
                    MPI_Start(&req[1]);
                    MPI_Wait(&req[1], MPI_STATUS_IGNORE);
                } else {
                    MPI_Send(sbuf, (int) n, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                    MPI_Recv(rbuf, (int) n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                }
            } else {
                if (persistent) {
                    MPI_Start(&req[1]);
                    MPI_Wait(&req[1], MPI_STATUS_IGNORE);
                    MPI_Start(&req[0]);
                    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(rbuf, (int) n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(sbuf, (int) n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
                }
            }
        }
        const double us = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
        if (persistent) {
            MPI_Request_free(&req[0]);
            MPI_Request_free(&req[1]);
        }
        if (rank == 0)
            printf("RESULT %s %zu %.3f\n", persistent ? "plat" : "latency", n, us);
    }
}

/* one_buffer: OSU's shape (every message of the window in the same buffer). */
static void bandwidth(int bidirectional, int one_buffer) {
    MPI_Request req[2 * WINDOW];
    for (int s = 0; s < NSIZES; s++) {
        const size_t n = sizes[s];
        /* 2000 windows up to 4 KiB: 200 windows of 1-8 B took 1.5 ms, too short
         * a run to say a rate (one round to the next moved by 1.7x). */
        const int iters = iterations(n, 2000, n >= 1048576 ? 5 : 20), warm = iters / 10 + 1;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0;
        for (int i = 0; i < iters + warm; i++) {
            if (i == warm)
                t0 = MPI_Wtime();
            int nreq = 0;
            if (rank == 0 || bidirectional)
                for (int w = 0; w < WINDOW; w++)
                    MPI_Isend(sbuf + (one_buffer ? 0 : (size_t) w * n), (int) n, MPI_CHAR, 1 - rank,
                              2, MPI_COMM_WORLD, &req[nreq++]);
            if (rank == 1 || bidirectional)
                for (int w = 0; w < WINDOW; w++)
                    MPI_Irecv(rbuf + (one_buffer ? 0 : (size_t) w * n), (int) n, MPI_CHAR, 1 - rank,
                              2, MPI_COMM_WORLD, &req[nreq++]);
            MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
            char ack = 0;
            if (rank == 1)
                MPI_Send(&ack, 1, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
            else
                MPI_Recv(&ack, 1, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        const double secs = MPI_Wtime() - t0;
        const double mbs = (double) n * WINDOW * iters * (bidirectional ? 2 : 1) / secs / 1e6;
        if (rank == 0)
            printf("RESULT %s%s %zu %.1f\n", bidirectional ? "bibw" : "bw",
                   one_buffer ? "_one" : "", n, mbs);
    }
}

/* OSU-style: overlap = 1 - (t_total - t_compute) / t_pure, with the compute
 * time at least the pure transfer time - here at least 3 ms: a progress thread
 * that sleeps while the application is in MPI looks in at most every 1 ms, so
 * it needs up to 2 ms to notice that the application computes. */
static void overlap(void) {
    for (int s = 0; s < NSIZES; s++) {
        const size_t n = sizes[s];
        if (n < 65536)
            continue;
        const int iters = 20;
        double pure = 0, total = 0;
        for (int phase = 0; phase < 2; phase++) {
            double sum = 0, compute = 0;
            if (phase == 1)
                compute = pure > 3e-3 ? pure : 3e-3;
            for (int i = 0; i < iters + 2; i++) {
                MPI_Barrier(MPI_COMM_WORLD);
                if (rank == 0) {
                    MPI_Send(sbuf, (int) n, MPI_CHAR, 1, 4, MPI_COMM_WORLD);
                } else {
                    MPI_Request r;
                    const double t0 = compute_now();
                    MPI_Irecv(rbuf, (int) n, MPI_CHAR, 0, 4, MPI_COMM_WORLD, &r);
                    if (compute > 0)
                        compute_for(compute);
                    MPI_Wait(&r, MPI_STATUS_IGNORE);
                    if (i >= 2)
                        sum += compute_now() - t0;
                }
            }
            if (phase == 0)
                pure = sum / iters;
            else
                total = sum / iters;
            MPI_Bcast(&pure, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD);
            if (phase == 1 && rank == 1) {
                double ov = 100.0 * (1.0 - (total - compute) / pure);
                if (ov < 0)
                    ov = 0;
                if (ov > 100)
                    ov = 100;
                printf("RESULT overlap %zu %.1f\n", n, ov);
                fflush(stdout);
            }
        }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "mpi_bench: run on exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int gpu = 0, first = 1;
    if (argc > 2 && !strcmp(argv[1], "-d")) {
        gpu = !strcmp(argv[2], "cuda");
        if (!gpu && strcmp(argv[2], "host")) {
            if (rank == 0)
                fprintf(stderr, "mpi_bench: -d host or -d cuda\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        first = 3;
    }
    if (gpu) { /* both ranks decide alike, rank 0 says why */
        char why[240];
        int unusable = cuda_dl_open(why, sizeof why) != 0 || !cuda_dl_mpi_aware(why, sizeof why),
            any = 0;
        MPI_Allreduce(&unusable, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any) {
            if (unusable && rank == 0)
                printf("SKIP: %s\n", why);
            MPI_Finalize();
            return 77;
        }
        cuda_dl_pick_device();
        iteration_divisor = 10;
    }
    /* Slower links (scripts/bench-multihost.sh: TCP between namespace hosts)
     * divide the iteration counts further. */
    const char *div = getenv("TCA_BENCH_ITER_DIVISOR");
    if (div != NULL && atoi(div) > 0)
        iteration_divisor *= atoi(div);
    const size_t bytes = sizes[NSIZES - 1] * WINDOW;
    sbuf = gpu ? cuda_dl_malloc(bytes) : malloc(bytes);
    rbuf = gpu ? cuda_dl_malloc(bytes) : malloc(bytes);
    if (gpu) {
        cuda_dl_fill(sbuf, 1, bytes);
        cuda_dl_fill(rbuf, 0, bytes);
    } else {
        memset(sbuf, 1, bytes);
        memset(rbuf, 0, bytes);
    }
    const char *all[] = {"latency", "bw", "bibw", "plat"};
    const char **which = argc > first ? (const char **) argv + first : all;
    const int count = argc > first ? argc - first : 4;
    for (int i = 0; i < count; i++) {
        if (!strcmp(which[i], "latency"))
            latency(0, 0);
        else if (!strcmp(which[i], "latency8"))
            latency(0, 1);
        else if (!strcmp(which[i], "plat"))
            latency(1, 0);
        else if (!strcmp(which[i], "bw"))
            bandwidth(0, 0);
        else if (!strcmp(which[i], "bibw"))
            bandwidth(1, 0);
        else if (!strcmp(which[i], "bw_one"))
            bandwidth(0, 1);
        else if (!strcmp(which[i], "bibw_one"))
            bandwidth(1, 1);
        else if (!strcmp(which[i], "overlap"))
            overlap();
        else if (rank == 0)
            fprintf(stderr, "mpi_bench: unknown benchmark %s\n", which[i]);
        fflush(stdout);
    }
    if (gpu) {
        cuda_dl_free(sbuf);
        cuda_dl_free(rbuf);
    } else {
        free(sbuf);
        free(rbuf);
    }
    MPI_Finalize();
    return 0;
}
