/* program_end.h - how the counting TCA programs here end (host_pingpong,
 * gpu_pingpong, blockstride_pingpong, pio_allreduce): every rank's errors
 * summed, one PASSED/FAILED line from rank 0, a barrier before teardown, and
 * the exit status 1 on any error.  Include after mpi-help.h. */
#ifndef TCA_TEST_PROGRAM_END_H
#define TCA_TEST_PROGRAM_END_H

#include <stdio.h>

static int program_end(int me, int errors) {
    MPI_SAFE_CALL(MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (0 == me)
        printf("%s: %d errors\n", errors ? "FAILED" : "PASSED", errors);
    MPI_SAFE_CALL(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Finalize();
    return errors ? 1 : 0;
}

#endif
