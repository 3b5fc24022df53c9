/*
 * bcast_test.c - persistent broadcast (MPIX_Bcast_init / MPI_Bcast_init) over
 * coll tca, one sub-test per run: bcast_test <name>.  Every rank checks the
 * data of every epoch; the root changes it every time.
 */
#include <mpi.h>
#if MPI_VERSION < 4
#include <mpi-ext.h>
#define BCAST_INIT MPIX_Bcast_init
#else
#define BCAST_INIT MPI_Bcast_init
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wrank;
#define FAIL(...)                                              \
    do {                                                       \
        fprintf(stderr, "rank %d: FAIL: ", wrank);             \
        fprintf(stderr, __VA_ARGS__);                          \
        fprintf(stderr, "\n");                                 \
        MPI_Abort(MPI_COMM_WORLD, 1);                          \
    } while (0)

static unsigned char pat(size_t i, unsigned seed) { return (unsigned char) (i * 151 + seed * 13 + (i >> 11)); }

/* count elements of `type` (extent ext bytes, `bytes` of data) broadcast `epochs` times */
static void run(MPI_Comm comm, MPI_Datatype type, int count, int root, int epochs, const char *what) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Aint lb, extent;
    MPI_Type_get_extent(type, &lb, &extent);
    const size_t span = (size_t) extent * (size_t) (count > 0 ? count : 1) + 16;
    unsigned char *buf = malloc(span), *expect = malloc(span);
    MPI_Request req;
    BCAST_INIT(buf, count, type, root, comm, MPI_INFO_NULL, &req);
    for (int e = 0; e < epochs; e++) {
        for (size_t i = 0; i < span; i++) expect[i] = pat(i, (unsigned) (e + 7 * root));
        if (rank == root) memcpy(buf, expect, span);
        else memset(buf, 0xEE, span);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank != root) {
            /* compare what the type covers: pack both and compare */
            int psize;
            MPI_Pack_size(count, type, comm, &psize);
            unsigned char *a = malloc((size_t) psize + 1), *b = malloc((size_t) psize + 1);
            int pa = 0, pb = 0;
            MPI_Pack(buf, count, type, a, psize, &pa, comm);
            MPI_Pack(expect, count, type, b, psize, &pb, comm);
            if (pa != pb || memcmp(a, b, (size_t) pa))
                FAIL("%s: root %d count %d epoch %d: data differs", what, root, count, e);
            free(a);
            free(b);
        }
    }
    MPI_Request_free(&req);
    if (req != MPI_REQUEST_NULL) FAIL("%s: request not freed", what);
    free(buf);
    free(expect);
}

static void test_basic(void) {
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int counts[] = {0, 1, 7, 1001, 131071, 131072, 131073, 262143, 262145, 3000001};
    for (int root = 0; root < size; root++)
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
            run(MPI_COMM_WORLD, MPI_BYTE, counts[k], root, counts[k] > 1000000 ? 2 : 4, "bytes");
    run(MPI_COMM_WORLD, MPI_INT, 300000, size - 1, 3, "int");
    run(MPI_COMM_WORLD, MPI_DOUBLE, 33, 0, 3, "double");
    run(MPI_COMM_WORLD, MPI_BYTE, 64 << 20, 0, 2, "64 MiB");
    MPI_Datatype contig, vec;
    MPI_Type_contiguous(5, MPI_INT, &contig);
    MPI_Type_commit(&contig);
    run(MPI_COMM_WORLD, contig, 20001, 1 % size, 3, "contiguous derived");
    MPI_Type_vector(1000, 2, 5, MPI_DOUBLE, &vec); /* non-contiguous: libnbc */
    MPI_Type_commit(&vec);
    run(MPI_COMM_WORLD, vec, 3, 0, 3, "vector (fallback)");
    /* a derived type freed by the user while the request lives (we retain it) */
    MPI_Datatype tmp;
    MPI_Type_contiguous(3, MPI_SHORT, &tmp);
    MPI_Type_commit(&tmp);
    MPI_Request req;
    short data[300];
    for (int i = 0; i < 300; i++) data[i] = (short) (wrank == 0 ? i : -1);
    BCAST_INIT(data, 100, tmp, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    MPI_Type_free(&tmp);
    MPI_Start(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < 300; i++) if (data[i] != i) FAIL("type freed early: element %d is %d", i, data[i]);
    MPI_Request_free(&req);
    MPI_Type_free(&contig);
    MPI_Type_free(&vec);
}

static void test_comms(void) {
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm dup, half, rev;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &half);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - wrank, &rev);
    MPI_Comm comms[3] = {dup, half, rev};
    for (int c = 0; c < 3; c++) {
        int csize;
        MPI_Comm_size(comms[c], &csize);
        for (int root = 0; root < csize; root++) {
            run(comms[c], MPI_BYTE, 1000, root, 5, "comm small");
            run(comms[c], MPI_BYTE, 1 << 20, root, 3, "comm large");
        }
    }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    MPI_Comm_free(&rev);
}

static void test_epochs(void) {
    run(MPI_COMM_WORLD, MPI_BYTE, 1024, 0, 1000, "1000 epochs 1 KiB");
    run(MPI_COMM_WORLD, MPI_BYTE, 1 << 20, 1, 200, "200 epochs 1 MiB");
}

/* several persistent broadcasts on different communicators, Startall, mixed with p2p and blocking collectives */
static void test_startall(void) {
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &half);
    enum { N = 3 };
    static unsigned char bufs[N][200000];
    const int lens[N] = {100, 200000, 4096};
    MPI_Comm comms[N] = {MPI_COMM_WORLD, dup, half};
    MPI_Request reqs[N + 2];
    for (int i = 0; i < N; i++) BCAST_INIT(bufs[i], lens[i], MPI_BYTE, 0, comms[i], MPI_INFO_NULL, &reqs[i]);
    for (int e = 0; e < 100; e++) {
        int crank[N];
        for (int i = 0; i < N; i++) {
            MPI_Comm_rank(comms[i], &crank[i]);
            for (int j = 0; j < lens[i]; j++) bufs[i][j] = crank[i] == 0 ? pat((size_t) j, (unsigned) (e + i)) : 0;
        }
        MPI_Startall(N, reqs);
        /* p2p and a blocking collective while the broadcasts run */
        int token = wrank, got = -1;
        MPI_Sendrecv(&token, 1, MPI_INT, (wrank + 1) % size, 5, &got, 1, MPI_INT, (wrank + size - 1) % size, 5,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (got != (wrank + size - 1) % size) FAIL("p2p during broadcasts: got %d", got);
        int sum = 0;
        MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (sum != size * (size - 1) / 2) FAIL("allreduce during broadcasts: %d", sum);
        MPI_Waitall(N, reqs, MPI_STATUSES_IGNORE);
        for (int i = 0; i < N; i++)
            for (int j = 0; j < lens[i]; j++)
                if (bufs[i][j] != pat((size_t) j, (unsigned) (e + i))) FAIL("startall: bcast %d epoch %d byte %d", i, e, j);
    }
    for (int i = 0; i < N; i++) MPI_Request_free(&reqs[i]);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
}

static void test_free_active(void) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    unsigned char buf[4096];
    MPI_Request req;
    memset(buf, wrank == 0 ? 3 : 0, sizeof buf);
    BCAST_INIT(buf, 4096, MPI_BYTE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    MPI_Start(&req);
    if (wrank == 1) { /* rank 1 cannot complete before rank 0 starts: it is active now */
        const int rc = MPI_Request_free(&req);
        if (rc == MPI_SUCCESS) FAIL("MPI_Request_free of an active persistent broadcast succeeded");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < 4096; i++) if (buf[i] != 3) FAIL("free-active: byte %d", i);
    if (MPI_Request_free(&req) != MPI_SUCCESS || req != MPI_REQUEST_NULL) FAIL("free after completion failed");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    const char *name = argc > 1 ? argv[1] : "";
    double t0 = MPI_Wtime();
    if (!strcmp(name, "basic")) test_basic();
    else if (!strcmp(name, "comms")) test_comms();
    else if (!strcmp(name, "epochs")) test_epochs();
    else if (!strcmp(name, "startall")) test_startall();
    else if (!strcmp(name, "free_active")) test_free_active();
    else FAIL("unknown test '%s'", name);
    MPI_Barrier(MPI_COMM_WORLD);
    if (wrank == 0) printf("%s: passed in %.2f s\n", name, MPI_Wtime() - t0);
    MPI_Finalize();
    return 0;
}
