/*
 * mpi-help.h - the MPI helper header of published TCA programs: <mpi.h> and
 * the MPI_SAFE_CALL check macro.  Any include order, any number of times.
 */
#ifndef TCA_MPI_HELP_H
#define TCA_MPI_HELP_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* Evaluate an MPI call once; on any result but MPI_SUCCESS print where and
 * why and abort the job. */
#ifndef MPI_SAFE_CALL
#define MPI_SAFE_CALL(call)                                                                        \
    do {                                                                                           \
        int mpi_safe_call_result_ = (call);                                                        \
        if (MPI_SUCCESS != mpi_safe_call_result_) {                                                \
            char mpi_safe_call_text_[MPI_MAX_ERROR_STRING];                                        \
            int mpi_safe_call_len_ = 0;                                                            \
            MPI_Error_string(mpi_safe_call_result_, mpi_safe_call_text_, &mpi_safe_call_len_);     \
            fprintf(stderr, "%s:%d: MPI error in %s: %s\n", __FILE__, __LINE__, #call,             \
                    mpi_safe_call_text_);                                                          \
            MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);                                               \
        }                                                                                          \
    } while (0)
#endif

#endif /* TCA_MPI_HELP_H */
