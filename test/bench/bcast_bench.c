/*
 * bcast_bench.c - broadcast benchmark for coll tca.
 *   bcast_bench persistent   MPI_Bcast_init once (4.1: MPIX_), then Start+Wait (whichever
 *                            coll serves it: tca offload/thread or libnbc)
 *   bcast_bench blocking     MPI_Bcast (coll tuned)
 * For 8 B - 4 MiB: time per broadcast in a loop (max over ranks, us), and
 * "bcast_avg": each rank's own call time with a barrier between iterations,
 * averaged over ranks (as OSU times it).
 * Persistent mode also reports bcast_init and MPI_Start costs (1 KiB, root)
 * and overlap (compute between Start and Wait, >= 64 KiB).
 * Lines: "RESULT <metric> <bytes> <value>".
 * bcast_bench [-d host|cuda] persistent|blocking; -d cuda: a cudaMalloc'd
 * buffer (coll tca moves it GPU to GPU); without a GPU or a CUDA-aware Open
 * MPI: "SKIP: <why>", exit 77.
 */
#include <mpi.h>

#include "../common/compute.h"
#include "../common/cuda_dl.h"
#include "../common/bcast_init.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t sizes[] = {8, 64, 1024, 8192, 65536, 524288, 1048576, 4194304};
enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]) };
static int rank;

static double max_over_ranks(double v) {
    double m;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* The way the common benchmark suites time a broadcast (OSU's osu_bcast and
 * osu_bcast_persistent): each rank times its own call (Start + Wait), a
 * barrier between iterations, the average over ranks.  A root that only
 * posts its sends, or leaves that find the data already there, count as
 * fast here, where the loop above counts the slowest rank's pace. */
static double avg_per_call(int persistent, MPI_Request *req, char *buf, size_t n, int iters,
                           int warm) {
    double mine = 0, sum = 0;
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < iters + warm; i++) {
        const double a = MPI_Wtime();
        if (persistent) {
            MPI_Start(req);
            MPI_Wait(req, MPI_STATUS_IGNORE);
        } else {
            MPI_Bcast(buf, (int) n, MPI_BYTE, 0, MPI_COMM_WORLD);
        }
        if (i >= warm)
            mine += MPI_Wtime() - a;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    mine = mine * 1e6 / iters;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum / size;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int gpu = 0;
    if (argc > 2 && !strcmp(argv[1], "-d")) {
        gpu = !strcmp(argv[2], "cuda");
        argc -= 2;
        argv += 2;
    }
    const int persistent = argc > 1 && !strcmp(argv[1], "persistent");
    if (gpu) { /* every rank decides alike, rank 0 says why */
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
    }
    char *buf = gpu ? cuda_dl_malloc(sizes[NSIZES - 1]) : malloc(sizes[NSIZES - 1]);
    if (gpu)
        cuda_dl_fill(buf, 1, sizes[NSIZES - 1]);
    else
        memset(buf, 1, sizes[NSIZES - 1]);
    for (int s = 0; s < NSIZES; s++) {
        const size_t n = sizes[s];
        const int iters = n <= 8192 ? 2000 : n <= 65536 ? 500 : 40, warm = iters / 10 + 1;
        MPI_Request req = MPI_REQUEST_NULL;
        if (persistent)
            BCAST_INIT(buf, (int) n, MPI_BYTE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < iters + warm; i++) {
            if (i == warm) {
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = MPI_Wtime();
            }
            if (persistent) {
                MPI_Start(&req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            } else {
                MPI_Bcast(buf, (int) n, MPI_BYTE, 0, MPI_COMM_WORLD);
            }
        }
        const double us = max_over_ranks((MPI_Wtime() - t0) * 1e6 / iters);
        if (rank == 0)
            printf("RESULT bcast %zu %.3f\n", n, us);
        const double avg =
            avg_per_call(persistent, &req, buf, n, n <= 65536 ? iters / 2 : iters, warm);
        if (rank == 0)
            printf("RESULT bcast_avg %zu %.3f\n", n, avg);
        if (persistent && n >= 65536) {
            /* overlap: compute >= max(t, 3 ms) between Start and Wait, OSU's formula */
            const double pure = us * 1e-6, compute = pure > 3e-3 ? pure : 3e-3;
            double total = 0;
            for (int i = 0; i < 10; i++) {
                MPI_Barrier(MPI_COMM_WORLD);
                const double a = compute_now();
                MPI_Start(&req);
                compute_for(compute);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                total += compute_now() - a;
            }
            total = max_over_ranks(total / 10);
            double ov = 100.0 * (1.0 - (total - compute) / pure);
            if (ov < 0)
                ov = 0;
            if (ov > 100)
                ov = 100;
            if (rank == 0)
                printf("RESULT overlap %zu %.1f\n", n, ov);
        }
        if (persistent)
            MPI_Request_free(&req);
        fflush(stdout);
    }
    if (persistent) { /* init and start costs at 1 KiB */
        const int reps = 50;
        double init = 0, start = 0;
        for (int i = 0; i < reps; i++) {
            MPI_Request req;
            MPI_Barrier(MPI_COMM_WORLD);
            double a = MPI_Wtime();
            BCAST_INIT(buf, 1024, MPI_BYTE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
            init += MPI_Wtime() - a;
            for (int k = 0; k < 3;
                 k++) { /* the first start may finish the exchange: time later ones */
                MPI_Barrier(MPI_COMM_WORLD);
                a = MPI_Wtime();
                MPI_Start(&req);
                if (k == 2)
                    start += MPI_Wtime() - a;
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
            MPI_Request_free(&req);
        }
        if (rank == 0)
            printf("RESULT init_us 1024 %.3f\nRESULT start_us 1024 %.3f\n", init / reps * 1e6,
                   start / reps * 1e6);
    }
    if (gpu)
        cuda_dl_free(buf);
    else
        free(buf);
    MPI_Finalize();
    return 0;
}
