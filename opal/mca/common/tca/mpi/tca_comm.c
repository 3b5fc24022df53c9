/*
 * tca_comm.c - libtcacomm: tcaCreateHandleList, the MPI helper of published
 * TCA programs (declared by tca-help.h), kept apart so libtca never needs MPI.
 *
 * Programs call it unchecked and use its result as if it always worked
 * (a void function; one program declares it itself with a double * third
 * parameter), so every failure is reported here and ends the job.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "tca-help.h"

static void fail(const char *what, tcaresult rc) {
    int me = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    fprintf(stderr, "tca: tcaCreateHandleList (rank %d): %s%s%s\n", me, what,
            rc != TCA_SUCCESS ? ": " : "", rc != TCA_SUCCESS ? tcaGetErrorString(rc) : "");
    MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
    exit(EXIT_FAILURE); /* MPI_Abort does not return; this keeps the compiler sure of it */
}

/* Collective over MPI_COMM_WORLD: register [ptr, ptr+size) and gather every
 * rank's handle into a malloc'd array indexed by world rank.  tcaCreateHandle
 * registers a GPU pointer as GPU memory even though we pass tcaMemoryCPU
 * (published programs hand this function tcaMalloc'd GPU buffers). */
__attribute__((visibility("default"))) void tcaCreateHandleList(tcaHandle **list, int nprocs,
                                                                void *ptr, size_t size) {
    int world = 0, initialized = 0, ok = 1, all_ok = 0;
    tcaHandle mine;
    tcaresult rc;
    tcaHandle *all;

    MPI_Initialized(&initialized);
    if (!initialized) {
        fprintf(stderr, "tca: tcaCreateHandleList: call MPI_Init first (it is collective over "
                        "MPI_COMM_WORLD)\n");
        exit(EXIT_FAILURE);
    }
    if (NULL == list)
        fail("list is NULL", TCA_SUCCESS);
    *list = NULL;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (nprocs != world)
        fail("nprocs is not the size of MPI_COMM_WORLD", TCA_SUCCESS);

    /* Every rank reaches the allgather even if its own registration failed,
     * so the others do not hang; the failing rank says why, then aborts. */
    rc = tcaCreateHandle(&mine, ptr, size, tcaMemoryCPU);
    if (TCA_SUCCESS != rc) {
        int me = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        fprintf(stderr, "tca: tcaCreateHandleList (rank %d): registering %zu bytes at %p: %s\n", me,
                size, ptr, tcaGetErrorString(rc));
        ok = 0;
    }
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok)
        fail("a rank could not register its memory", rc);

    all = malloc(sizeof(tcaHandle) * (size_t) nprocs);
    if (NULL == all)
        fail("out of memory for the handle list", TCA_ERROR_OUT_OF_MEMORY);
    if (MPI_SUCCESS != MPI_Allgather(&mine, (int) sizeof mine, MPI_BYTE, all, (int) sizeof mine,
                                     MPI_BYTE, MPI_COMM_WORLD))
        fail("MPI_Allgather failed", TCA_SUCCESS);
    /* Two ranks that are the same node are not one sub-cluster (ranks on
     * another host, or a launcher tca does not recognise): their handles
     * would fail later as "stale".  Say so now. */
    for (int i = 0; i < nprocs; ++i) {
        for (int j = i + 1; j < nprocs; ++j) {
            if (all[i].node == all[j].node) {
                fprintf(
                    stderr,
                    "tca: tcaCreateHandleList: ranks %d and %d are both TCA node %u: the ranks of "
                    "MPI_COMM_WORLD do not form one TCA sub-cluster (another host: the loopback "
                    "device is "
                    "one host, TCA_DEVICE=ucx reaches others; or a launcher tca does not "
                    "recognise: set "
                    "TCA_JOB_KEY, TCA_NODE_ID and TCA_NUM_NODES)\n",
                    i, j, (unsigned) all[i].node);
                MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
            }
        }
    }
    *list = all;
}
