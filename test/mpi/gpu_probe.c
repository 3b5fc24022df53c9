/* gpu_probe.c - exit 0 when the GPU tests can run here (a CUDA runtime and a
 * device), else print "SKIP: no GPU (why)" and exit 77.  Run by
 * test/mpi/run_gpu_case.sh before it starts any MPI job. */
#include <stdio.h>

#include "gpu_buffers.h"

int main(void) {
    char why[160];
    if (tca_test_gpu_open(why, sizeof(why)))
        return 0;
    printf("%s (%s)\n", TCA_TEST_GPU_SKIP_LINE, why);
    return TCA_TEST_GPU_SKIP_STATUS;
}
