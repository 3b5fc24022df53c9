/*
 * published_example.c - the pattern of published PEACH2 programs, written
 * against tca-help.h (libtca + libtcacomm): MPI gives the ranks, tcaCreateHandleList exchanges the
 * handles, one descriptor chain is built once and started for many
 * iterations (ping-pong with notifications), and the data is checked.
 * Run: mpirun -np 2 ./tca_published_example
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tca-help.h"

#define CHECK(call)                                                                                \
    do {                                                                                           \
        tcaresult r_ = (call);                                                                     \
        if (TCA_SUCCESS != r_) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, tcaGetErrorString(r_));  \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv) {
    const size_t size = 1 << 16;
    const int iters = 2000;
    int rank, nprocs, peer, i, errors = 0;
    void *buf;
    tcaHandle *handles;
    tcaDesc *desc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (2 != nprocs) {
        if (0 == rank)
            fprintf(stderr, "run with 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    peer = 1 - rank;
    CHECK(tcaInit());
    CHECK(tcaMalloc(&buf, size, tcaMemoryCPU));
    tcaCreateHandleList(&handles, nprocs, buf, size); /* void: aborts the job on failure */

    desc = tcaDescNew();
    CHECK(tcaDescSetMemcpy(desc, &handles[peer], 0, &handles[rank], 0, size, tcaDMANotify, 0, 1));
    CHECK(tcaDescSet(desc, 0));

    for (i = 0; i < iters; ++i) {
        unsigned int *w = buf;
        if (i % 2 == rank) {
            w[0] = (unsigned) i;
            w[size / sizeof *w - 1] = (unsigned) i * 7u;
            CHECK(tcaStartDMADesc(0));
            CHECK(tcaWaitDMAC(0));
        } else {
            CHECK(tcaWaitDMARecvDesc(&handles[peer], 0, 1));
            if (w[0] != (unsigned) i || w[size / sizeof *w - 1] != (unsigned) i * 7u)
                ++errors;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank)
        printf("published pattern: %d iterations of %zu bytes, %d errors\n", iters, size, errors);
    tcaDescFree(desc);
    CHECK(tcaDestroyHandle(&handles[rank]));
    free(handles);
    CHECK(tcaFree(buf, tcaMemoryCPU));
    CHECK(tcaFinalize());
    MPI_Finalize();
    return errors ? 1 : 0;
}
