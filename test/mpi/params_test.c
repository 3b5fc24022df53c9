/*
 * params_test.c - the small MPI program test/mpi/run_case.sh runs once per
 * row of a parameter table (PARAM_TABLE): point-to-point messages around a
 * ring over every protocol of btl tca, and persistent broadcasts over coll
 * tca (tree and pipelined chain, two roots, two epochs).  Every byte is
 * checked, so a setting that is accepted must also deliver the right data.
 */
#include <mpi.h>
#include "../common/bcast_init.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define TEST_RANK rank
#include "../common/mpi_fail.h"

static unsigned char pat(size_t i, unsigned seed) {
    return (unsigned char) (i * 151 + seed * 13 + (i >> 11));
}

static void ring(void) {
    static const size_t sizes[] = {0, 1, 4000, 17000, 70000, (1 << 20) + 1};
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        const size_t n = sizes[s];
        unsigned char *out = malloc(n + 1), *in = malloc(n + 1);
        for (size_t i = 0; i < n; i++)
            out[i] = pat(i, (unsigned) (rank * 31 + s));
        memset(in, 0xEE, n + 1);
        MPI_Sendrecv(out, (int) n, MPI_BYTE, to, (int) s, in, (int) n, MPI_BYTE, from, (int) s,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (size_t i = 0; i < n; i++)
            if (in[i] != pat(i, (unsigned) (from * 31 + s)))
                FAIL("ring: %zu bytes: byte %zu differs", n, i);
        free(out);
        free(in);
    }
}

static void bcasts(void) {
    static const int counts[] = {1, 5000, 300000, (1 << 20) + 3};
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        for (int root = 0; root < size; root += size - 1) {
            const size_t n = (size_t) counts[c];
            unsigned char *buf = malloc(n);
            MPI_Request req;
            BCAST_INIT(buf, counts[c], MPI_BYTE, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
            for (unsigned e = 0; e < 2; e++) {
                const unsigned seed = (unsigned) (c * 10 + (size_t) root * 3 + e);
                if (rank == root)
                    for (size_t i = 0; i < n; i++)
                        buf[i] = pat(i, seed);
                else
                    memset(buf, 0xEE, n);
                MPI_Start(&req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                for (size_t i = 0; i < n; i++)
                    if (buf[i] != pat(i, seed))
                        FAIL("bcast: %zu bytes from %d, epoch %u: byte %zu differs", n, root, e, i);
            }
            MPI_Request_free(&req);
            free(buf);
            if (size == 1)
                break;
        }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ring();
    bcasts();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("params: passed on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
