// jacobi_cuda.cu - jacobi_ops on cudaMalloc'd rows: the sweep and the row
// residuals as CUDA kernels (every operation rounded on its own, see
// jacobi_ops.h, so the results equal the host loops' bit for bit).
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "jacobi_ops.h"

namespace {

void check(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return;
    fprintf(stderr, "jacobi: CUDA error in %s: %s\n", what, cudaGetErrorString(e));
    abort();  // under mpirun: the job ends
}

__global__ void sweep_kernel(double *unew, const double *u, int nloc, int n) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x + 1;
    const int i = blockIdx.y * blockDim.y + threadIdx.y + 1;
    if (i > nloc || j > n) return;
    const size_t pitch = (size_t) n + 2;
    const size_t k = (size_t) i * pitch + (size_t) j;
    unew[k] = __dmul_rn(0.25, __dadd_rn(__dadd_rn(__dadd_rn(u[k - pitch], u[k + pitch]), u[k - 1]), u[k + 1]));
}

// One thread per row, columns left to right: the order the host loop uses.
__global__ void row_sums_kernel(double *out, const double *a, const double *b, int nloc, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x + 1;
    if (i > nloc) return;
    const size_t pitch = (size_t) n + 2;
    double s = 0.0;
    for (int j = 1; j <= n; j++) {
        const size_t k = (size_t) i * pitch + (size_t) j;
        const double d = b ? __dadd_rn(a[k], -b[k]) : a[k];
        s = __dadd_rn(s, __dmul_rn(d, d));
    }
    out[i - 1] = s;
}

int cuda_open(int local_rank, char *why, size_t len) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count < 1) {
        snprintf(why, len, "no GPU (cudaGetDeviceCount: %s)", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return -1;
    }
    check(cudaSetDevice(local_rank % count), "cudaSetDevice");  // ranks share the node's GPUs round robin
    return 0;
}

void *cuda_alloc(size_t bytes) {
    void *p = nullptr;
    check(cudaMalloc(&p, bytes > 0 ? bytes : 1), "cudaMalloc");
    check(cudaMemset(p, 0, bytes), "cudaMemset");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return p;
}
void cuda_release(void *p) { check(cudaFree(p), "cudaFree"); }
void cuda_copy(void *dst, const void *src, size_t bytes) {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
}

// Synchronous: the halo rows go to MPI right after.
void cuda_sweep(double *unew, const double *u, int nloc, int n) {
    if (nloc < 1 || n < 1) return;
    const dim3 block(32, 8), grid((n + 31) / 32, (nloc + 7) / 8);
    sweep_kernel<<<grid, block>>>(unew, u, nloc, n);
    check(cudaGetLastError(), "sweep kernel launch");
    check(cudaDeviceSynchronize(), "sweep kernel");
}

void cuda_row_sums(double *out, const double *a, const double *b, int nloc, int n) {
    if (nloc < 1) return;
    double *d = static_cast<double *>(cuda_alloc(sizeof(double) * (size_t) nloc));
    row_sums_kernel<<<(nloc + 127) / 128, 128>>>(d, a, b, nloc, n);
    check(cudaGetLastError(), "row sums kernel launch");
    check(cudaMemcpy(out, d, sizeof(double) * (size_t) nloc, cudaMemcpyDeviceToHost), "row sums copy");
    cuda_release(d);
}

}  // namespace

extern "C" const jacobi_ops_t jacobi_ops = {"cuda", cuda_open, cuda_alloc, cuda_release, cuda_copy, cuda_sweep,
                                             cuda_row_sums};
