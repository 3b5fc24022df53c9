/*
 * jacobi.c - a 2-D Jacobi solver for Laplace's equation, an ordinary MPI
 * application: rows split across ranks, halo rows exchanged with
 * MPI_Sendrecv and with persistent requests (MPI_Send_init/MPI_Recv_init +
 * MPI_Startall), parameters and the boundary profile broadcast with
 * MPI_Bcast_init (MPIX_Bcast_init in Open MPI 4.1), the residual of every check
 * broadcast with one persistent request started again each time.
 *
 * Built twice from this file: tca_jacobi_cuda keeps its rows in cudaMalloc'd
 * memory and passes them to MPI as they are (needs a CUDA-aware Open MPI),
 * tca_jacobi_host keeps them in malloc'd memory (see jacobi_ops.h).
 *
 *   jacobi [-n N] [-i ITERATIONS] [-c CHECK_EVERY] [-halo sendrecv|persistent|alternate]
 *
 * Output (rank 0): "iter K residual R (HEX)" every CHECK_EVERY iterations (R:
 * the sum over all points of the squared change of that iteration) and
 * "field S (HEX)" at the end.  Residuals do not depend on the number of
 * ranks or the transport: a point's update reads the same four values in
 * the same order wherever its row lives, each row's sum runs over its
 * columns left to right, and rank 0 adds the rows' sums in global row order
 * (gathered, never MPI_Reduce'd, whose order depends on the tree).  So runs
 * at 1, 3 or 4 ranks, over btl tca or Open MPI's own transports, print the
 * very same bits; the test scripts compare them exactly.
 *
 * Without the memory it needs (no GPU, or an Open MPI that is not CUDA-aware
 * for GPU rows) it prints "SKIP: <why>" and exits 77.
 */
#include <mpi.h>
#include "../../common/bcast_init.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jacobi_ops.h"

enum { HALO_SENDRECV, HALO_PERSISTENT, HALO_ALTERNATE };
static const char *const halo_names[] = {"sendrecv", "persistent", "alternate"};

typedef struct params {
    int n; /* interior points per row and number of rows */
    int iterations;
    int check_every;
    int halo; /* HALO_* */
} params_t;

static int rank, size;

static void die(const char *what) {
    fprintf(stderr, "jacobi rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static int rows_of(int r, int n) {
    return n / size + (r < n % size ? 1 : 0);
}
static int first_row_of(int r, int n) {
    int first = 0;
    for (int q = 0; q < r; q++)
        first += rows_of(q, n);
    return first;
}

/* GPU rows need an Open MPI that knows GPU pointers. */
static int mpi_takes_gpu_memory(char *why, size_t len) {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    if (MPIX_Query_cuda_support())
        return 1;
    snprintf(why, len, "Open MPI's CUDA support is off at run time");
#else
    snprintf(why, len,
             "this Open MPI is not CUDA-aware (scripts/build-ompi.sh, then configure "
             "--with-ompi=PREFIX)");
#endif
    return 0;
}

static void parse(int argc, char **argv, params_t *p) {
    *p = (params_t){256, 200, 50, HALO_ALTERNATE};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n"))
            p->n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-i"))
            p->iterations = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-c"))
            p->check_every = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-halo")) {
            p->halo = -1;
            for (int h = 0; h < 3; h++)
                if (!strcmp(argv[i + 1], halo_names[h]))
                    p->halo = h;
        } else
            p->halo = -1;
    }
}

/* Sum of the ranks' row sums, in global row order, at rank 0. */
static double ordered_sum(const double *mine, int nloc, int n) {
    int *counts = NULL, *displs = NULL;
    double *all = NULL;
    if (rank == 0) {
        counts = malloc(sizeof(int) * (size_t) size);
        displs = malloc(sizeof(int) * (size_t) size);
        all = malloc(sizeof(double) * (size_t) n);
        for (int r = 0; r < size; r++) {
            counts[r] = rows_of(r, n);
            displs[r] = first_row_of(r, n);
        }
    }
    MPI_Gatherv(mine, nloc, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double s = 0.0;
    if (rank == 0) {
        for (int i = 0; i < n; i++)
            s = s + all[i];
        free(counts);
        free(displs);
        free(all);
    }
    return s;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Can this run use its memory?  Every rank answers; all skip together. */
    char why[256] = "";
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int unusable = jacobi_ops.open(lr ? atoi(lr) : 0, why, sizeof why) != 0;
    if (!unusable && !strcmp(jacobi_ops.name, "cuda"))
        unusable = !mpi_takes_gpu_memory(why, sizeof why);
    int any = 0;
    MPI_Allreduce(&unusable, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
        if (unusable)
            printf("SKIP: %s\n", why);
        fflush(stdout);
        MPI_Finalize();
        return 77;
    }

    /* Parameters: rank 0 reads the command line, a persistent broadcast tells the rest. */
    params_t p;
    if (rank == 0)
        parse(argc, argv, &p);
    MPI_Request req;
    BCAST_INIT(&p, (int) sizeof p, MPI_BYTE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    MPI_Start(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Request_free(&req);
    if (p.halo < 0 || p.n < size || p.n < 1 || p.iterations < 1 || p.check_every < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: jacobi [-n N >= ranks] [-i ITERATIONS] [-c CHECK_EVERY] "
                            "[-halo sendrecv|persistent|alternate]\n");
        MPI_Finalize();
        return 2;
    }
    const int n = p.n, nloc = rows_of(rank, n);
    const size_t pitch = (size_t) n + 2, row_bytes = pitch * sizeof(double);
    if (rank == 0)
        printf("jacobi: %s rows, %d ranks, %d x %d, %d iterations, halo %s\n", jacobi_ops.name,
               size, n, n, p.iterations, halo_names[p.halo]);

    /* The top boundary's profile, computed at rank 0 and broadcast into every
     * rank's memory of the solver's kind (GPU memory for the CUDA build). */
    double *profile = jacobi_ops.alloc(row_bytes);
    if (rank == 0) {
        double *h = calloc(pitch, sizeof(double));
        for (int j = 1; j <= n; j++)
            h[j] = (double) j * (double) (n + 1 - j) / ((double) (n + 1) * (n + 1) / 4.0);
        jacobi_ops.copy(profile, h, row_bytes);
        free(h);
    }
    BCAST_INIT(profile, (int) pitch, MPI_DOUBLE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    MPI_Start(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Request_free(&req);

    /* Both grids, halos and boundary included; the global top row is rank 0's
     * upper halo, set once from the profile (no rank writes it again). */
    double *grid[2];
    for (int g = 0; g < 2; g++) {
        grid[g] = jacobi_ops.alloc(row_bytes * ((size_t) nloc + 2));
        if (rank == 0)
            jacobi_ops.copy(grid[g], profile, row_bytes);
    }
    const int up = rank > 0 ? rank - 1 : MPI_PROC_NULL,
              down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

    /* Persistent halo exchange of each grid: first row up, last row down. */
    MPI_Request halo[2][4];
    for (int g = 0; g < 2; g++) {
        double *u = grid[g];
        MPI_Recv_init(u, (int) pitch, MPI_DOUBLE, up, 2, MPI_COMM_WORLD, &halo[g][0]);
        MPI_Recv_init(u + (size_t) (nloc + 1) * pitch, (int) pitch, MPI_DOUBLE, down, 1,
                      MPI_COMM_WORLD, &halo[g][1]);
        MPI_Send_init(u + pitch, (int) pitch, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &halo[g][2]);
        MPI_Send_init(u + (size_t) nloc * pitch, (int) pitch, MPI_DOUBLE, down, 2, MPI_COMM_WORLD,
                      &halo[g][3]);
    }

    /* The residual of each check, from rank 0 to all: one persistent request. */
    double control[2];
    MPI_Request control_req;
    BCAST_INIT(control, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &control_req);

    double *sums = malloc(sizeof(double) * (size_t) (nloc > 0 ? nloc : 1));
    int cur = 0;
    for (int it = 1; it <= p.iterations; it++) {
        double *u = grid[cur], *unew = grid[1 - cur];
        const int persistent = p.halo == HALO_PERSISTENT || (p.halo == HALO_ALTERNATE && it % 2);
        if (persistent) {
            MPI_Startall(4, halo[cur]);
            MPI_Waitall(4, halo[cur], MPI_STATUSES_IGNORE);
        } else {
            MPI_Sendrecv(u + pitch, (int) pitch, MPI_DOUBLE, up, 1, u + (size_t) (nloc + 1) * pitch,
                         (int) pitch, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Sendrecv(u + (size_t) nloc * pitch, (int) pitch, MPI_DOUBLE, down, 2, u,
                         (int) pitch, MPI_DOUBLE, up, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        jacobi_ops.sweep(unew, u, nloc, n);
        if (it % p.check_every == 0 || it == p.iterations) {
            jacobi_ops.row_sums(sums, unew, u, nloc, n);
            const double r = ordered_sum(sums, nloc, n);
            if (rank == 0) {
                control[0] = r;
                control[1] = it;
            }
            MPI_Start(&control_req);
            MPI_Wait(&control_req, MPI_STATUS_IGNORE);
            if (control[1] != it)
                die("the residual broadcast delivered another iteration's value");
            if (rank == 0)
                printf("iter %d residual %.17g (%a)\n", it, control[0], control[0]);
        }
        cur = 1 - cur;
    }
    jacobi_ops.row_sums(sums, grid[cur], NULL, nloc, n);
    const double field = ordered_sum(sums, nloc, n);
    if (rank == 0)
        printf("field %.17g (%a)\n", field, field);

    MPI_Barrier(MPI_COMM_WORLD); /* nobody frees rows a peer may still write */
    MPI_Request_free(&control_req);
    for (int g = 0; g < 2; g++) {
        for (int k = 0; k < 4; k++)
            MPI_Request_free(&halo[g][k]);
        jacobi_ops.release(grid[g]);
    }
    jacobi_ops.release(profile);
    free(sums);
    MPI_Finalize();
    return 0;
}
