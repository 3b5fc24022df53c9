/*
 * tca-help.h - the helper header of published TCA programs: the whole TCA
 * API (tca-api.h), the TCA_SAFE_CALL check macro, and tcaCreateHandleList
 * (library libtcacomm: link -ltca -ltcacomm).  Any include order, any
 * number of times, C99 or C++.
 */
#ifndef TCA_HELP_H
#define TCA_HELP_H

#include <stdio.h>
#include <stdlib.h>

#include "tca-api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over MPI_COMM_WORLD (every rank calls it, nprocs = the world
 * size): register [ptr, ptr+size) - GPU memory is recognised as such - and
 * gather every rank's handle into *list, a malloc'd array indexed by world
 * rank (release it with free()).  No result: on any failure it prints why and
 * calls MPI_Abort. */
void tcaCreateHandleList(tcaHandle **list, int nprocs, void *ptr, size_t size);

#ifdef __cplusplus
}
#endif

/* Evaluate a TCA call once; on any result but TCA_SUCCESS print where and why
 * and exit with failure status. */
#ifndef TCA_SAFE_CALL
#define TCA_SAFE_CALL(call)                                                                        \
    do {                                                                                           \
        tcaresult tca_safe_call_result_ = (call);                                                  \
        if (TCA_SUCCESS != tca_safe_call_result_) {                                                \
            fprintf(stderr, "%s:%d: TCA error in %s: %s\n", __FILE__, __LINE__, #call,             \
                    tcaGetErrorString(tca_safe_call_result_));                                     \
            exit(EXIT_FAILURE);                                                                    \
        }                                                                                          \
    } while (0)
#endif

#endif /* TCA_HELP_H */
