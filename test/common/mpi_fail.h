/* mpi_fail.h - FAIL(...) for the MPI test programs: print which rank saw what,
 * then abort the whole job (a failing rank must not leave the others waiting
 * in a collective until the test's timeout).  The includer names its rank
 * variable: #define TEST_RANK rank */
#ifndef TEST_MPI_FAIL_H
#define TEST_MPI_FAIL_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>

static inline void test_fail(int rank, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
static inline void test_fail(int rank, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rank %d: FAIL: ", rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    MPI_Abort(MPI_COMM_WORLD, 1);
    for (;;) {
    } /* MPI_Abort does not return */
}

#define FAIL(...) test_fail(TEST_RANK, __VA_ARGS__)

#endif
