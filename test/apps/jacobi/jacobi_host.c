/* jacobi_host.c - jacobi_ops on malloc'd rows: the CUDA kernels' arithmetic as
 * C loops (compiled with -ffp-contract=off, see jacobi_ops.h). */
#include <stdlib.h>
#include <string.h>

#include "jacobi_ops.h"

static int host_open(int local_rank, char *why, size_t len) {
    (void) local_rank;
    (void) why;
    (void) len;
    return 0;
}
static void *host_alloc(size_t bytes) {
    return calloc(1, bytes > 0 ? bytes : 1);
}
static void host_release(void *p) {
    free(p);
}
static void host_copy(void *dst, const void *src, size_t bytes) {
    memcpy(dst, src, bytes);
}

static void host_sweep(double *unew, const double *u, int nloc, int n) {
    const size_t pitch = (size_t) n + 2;
    for (int i = 1; i <= nloc; i++)
        for (int j = 1; j <= n; j++) {
            const size_t k = (size_t) i * pitch + (size_t) j;
            unew[k] = 0.25 * (((u[k - pitch] + u[k + pitch]) + u[k - 1]) + u[k + 1]);
        }
}

static void host_row_sums(double *out, const double *a, const double *b, int nloc, int n) {
    const size_t pitch = (size_t) n + 2;
    for (int i = 1; i <= nloc; i++) {
        double s = 0.0;
        for (int j = 1; j <= n; j++) {
            const size_t k = (size_t) i * pitch + (size_t) j;
            const double d = b ? a[k] - b[k] : a[k];
            s = s + d * d;
        }
        out[i - 1] = s;
    }
}

const jacobi_ops_t jacobi_ops = {"host",    host_open,  host_alloc,   host_release,
                                 host_copy, host_sweep, host_row_sums};
