/*
 * tca_mpi.c - the MPI helper of the TCA API (library libtca_mpi), kept apart
 * so the device layer itself never needs MPI.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "tca.h"

/* Collective over MPI_COMM_WORLD: register [addr, addr+size) and gather every
 * rank's handle.  On success *list is a malloc'd array of nprocs handles. */
tcaResult tcaCreateHandleList(tcaHandle **list, int nprocs, void *addr, size_t size)
{
    int world = 0, initialized = 0;
    tcaHandle mine;
    tcaResult rc;

    if (NULL == list) return tcaErrorInvalidValue;
    *list = NULL;
    MPI_Initialized(&initialized);
    if (!initialized) return tcaErrorNotInitialized;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (nprocs != world) return tcaErrorInvalidValue;

    /* Every rank takes part even if its own registration failed, so no rank
     * hangs in the allgather; the failure is then reported everywhere. */
    rc = tcaCreateHandle(&mine, addr, size, tcaMemoryCPU);
    if (tcaSuccess != rc) mine.magic = 0;

    tcaHandle *all = malloc(sizeof(tcaHandle) * (size_t)nprocs);
    if (NULL == all) return tcaErrorNoMemory;
    if (MPI_SUCCESS != MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                                     MPI_COMM_WORLD)) {
        free(all);
        return tcaErrorSystem;
    }
    for (int i = 0; i < nprocs; ++i) {
        if (TCA_HANDLE_MAGIC != all[i].magic) {
            if (tcaSuccess == rc) tcaDestroyHandle(&mine);
            free(all);
            return tcaSuccess != rc ? rc : tcaErrorInvalidHandle;
        }
    }
    /* Two ranks that are the same node are not one sub-cluster (ranks on
     * another host, or each process its own one-node sub-cluster): their
     * handles would fail later as "stale".  Say so now, on every rank. */
    for (int i = 0; i < nprocs; ++i) {
        for (int j = i + 1; j < nprocs; ++j) {
            if (all[i].node == all[j].node) {
                int me = 0;
                MPI_Comm_rank(MPI_COMM_WORLD, &me);
                if (0 == me)
                    fprintf(stderr,
                            "tca: tcaCreateHandleList: ranks %d and %d are both node %u: the ranks of "
                            "MPI_COMM_WORLD do not form one TCA sub-cluster (another host, or a launcher tca "
                            "does not recognise: set TCA_JOB_KEY, TCA_NODE_ID and TCA_NUM_NODES)\n",
                            i, j, (unsigned) all[i].node);
                tcaDestroyHandle(&mine);
                free(all);
                return tcaErrorInvalidNode;
            }
        }
    }
    *list = all;
    return tcaSuccess;
}
