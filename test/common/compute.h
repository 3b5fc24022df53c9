/* compute.h - "the application computes": busy work for a given time with no
 * MPI calls, for the overlap tests and benchmarks. */
#ifndef TCA_TEST_COMPUTE_H
#define TCA_TEST_COMPUTE_H

#include <time.h>

static inline double compute_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static volatile double compute_sink; /* keeps the loop from being optimised away */

static inline void compute_for(double seconds) {
    const double end = compute_now() + seconds;
    double x = 1.0;
    while (compute_now() < end)
        for (int i = 0; i < 200; i++)
            x = x * 1.0000001 + 1e-9;
    compute_sink = x;
}

#endif
