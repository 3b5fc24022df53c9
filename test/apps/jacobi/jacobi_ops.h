/* jacobi_ops.h - what the Jacobi solver (jacobi.c) asks of the memory its rows
 * live in: one implementation moves cudaMalloc'd rows and runs CUDA kernels
 * (jacobi_cuda.cu), the other malloc'd rows and the same arithmetic in C
 * loops (jacobi_host.c).  The MPI code is the same for both.
 *
 * The grid of one rank: rows 0..nloc+1 (0 and nloc+1 are the halos), columns
 * 0..n+1 (0 and n+1 the fixed boundary), row pitch n+2 doubles.
 *
 * The arithmetic is written so that every value is the same however the rows
 * are split and on whichever processor: a point is 0.25 * (((up + down) +
 * left) + right), a row's residual the sum over its columns, left to right, of
 * d * d with d = new - old, each operation rounded on its own (no fused
 * multiply-add: __dmul_rn/__dadd_rn in CUDA, -ffp-contract=off in C). */
#ifndef JACOBI_OPS_H
#define JACOBI_OPS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct jacobi_ops {
    const char *name; /* "host" or "cuda" */
    /* 0 when usable; else a reason in why (the program skips) */
    int (*open)(int local_rank, char *why, size_t len);
    void *(*alloc)(size_t bytes); /* zeroed */
    void (*release)(void *p);
    void (*copy)(void *dst, const void *src, size_t bytes); /* any mix of host and device memory */
    /* unew[1..nloc][1..n] from u (halos and boundary of u read) */
    void (*sweep)(double *unew, const double *u, int nloc, int n);
    /* out[i-1] = sum over j of (a - b)^2 for row i = 1..nloc (b NULL: a^2); out in host memory */
    void (*row_sums)(double *out, const double *a, const double *b, int nloc, int n);
} jacobi_ops_t;

extern const jacobi_ops_t jacobi_ops;

#ifdef __cplusplus
}
#endif
#endif
