/* cuda_dl.h - the few CUDA runtime calls the MPI test programs and benchmarks
 * need for GPU buffers (device count, malloc/free, copies, memset), loaded
 * with dlopen: the programs build the same way with or without a CUDA
 * toolkit and say why they skip where there is no runtime or no GPU.
 *
 *   char why[200];
 *   if (cuda_dl_open(why, sizeof why) != 0) { printf("SKIP: %s\n", why); exit(77); }  // "no GPU: ..." 
 *
 * Also decides whether the Open MPI in use can take GPU buffers at all
 * (cuda_dl_mpi_aware): only a CUDA-aware build may see a cudaMalloc'd pointer.
 */
#ifndef TEST_CUDA_DL_H
#define TEST_CUDA_DL_H

#include <dlfcn.h>
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(OPEN_MPI)
#include <mpi-ext.h>
#endif

typedef struct cuda_dl {
    int (*get_device_count)(int *);
    int (*set_device)(int);
    int (*malloc_)(void **, size_t);
    int (*free_)(void *);
    int (*memcpy_)(void *, const void *, size_t, int);
    int (*memset_)(void *, int, size_t);
    int (*synchronize)(void);
    const char *(*error_string)(int);
    int devices;
} cuda_dl_t;

static cuda_dl_t cuda_dl;

enum { CUDA_DL_MEMCPY_DEFAULT = 4 }; /* cudaMemcpyDefault: direction from the pointers */

/* 0 when the runtime is loaded and at least one device is there; else a
 * reason in why, starting "no GPU: ". */
static inline int cuda_dl_open(char *why, size_t len) {
    static const char *names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                  "libcudart.so.11.0", "/usr/local/cuda/lib64/libcudart.so"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && lib == NULL; ++i)
        lib = dlopen(names[i], RTLD_NOW);
    if (lib == NULL) {
        snprintf(why, len, "no GPU: no CUDA runtime (libcudart) to load");
        return -1;
    }
#define CUDA_DL_SYM(field, name) cuda_dl.field = (__typeof__(cuda_dl.field)) dlsym(lib, name)
    CUDA_DL_SYM(get_device_count, "cudaGetDeviceCount");
    CUDA_DL_SYM(set_device, "cudaSetDevice");
    CUDA_DL_SYM(malloc_, "cudaMalloc");
    CUDA_DL_SYM(free_, "cudaFree");
    CUDA_DL_SYM(memcpy_, "cudaMemcpy");
    CUDA_DL_SYM(memset_, "cudaMemset");
    CUDA_DL_SYM(synchronize, "cudaDeviceSynchronize");
    CUDA_DL_SYM(error_string, "cudaGetErrorString");
#undef CUDA_DL_SYM
    if (!cuda_dl.get_device_count || !cuda_dl.set_device || !cuda_dl.malloc_ || !cuda_dl.free_ ||
        !cuda_dl.memcpy_ || !cuda_dl.memset_ || !cuda_dl.synchronize || !cuda_dl.error_string) {
        snprintf(why, len, "no GPU: libcudart lacks a runtime call the test needs");
        return -1;
    }
    int n = 0;
    const int rc = cuda_dl.get_device_count(&n);
    if (rc != 0 || n < 1) {
        snprintf(why, len, "no GPU: cudaGetDeviceCount: %s",
                 rc != 0 ? cuda_dl.error_string(rc) : "0 devices");
        return -1;
    }
    cuda_dl.devices = n;
    return 0;
}

/* Open MPI built with CUDA support and saying so at run time (call after
 * MPI_Init).  0 with a reason otherwise. */
static inline int cuda_dl_mpi_aware(char *why, size_t len) {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    if (MPIX_Query_cuda_support())
        return 1;
    snprintf(why, len, "Open MPI was built with CUDA support but it is off at run time");
    return 0;
#else
    snprintf(why, len,
             "this Open MPI is not CUDA-aware (build one with scripts/build-ompi.sh, configure "
             "--with-ompi)");
    return 0;
#endif
}

/* Every call below aborts the job on a CUDA error: a test must not go on
 * with memory it does not have. */
static inline void cuda_dl_check(int rc, const char *what) {
    if (rc == 0)
        return;
    fprintf(stderr, "CUDA error in %s: %s\n", what, cuda_dl.error_string(rc));
    MPI_Abort(MPI_COMM_WORLD, 1);
}
static inline void *cuda_dl_malloc(size_t n) {
    void *p = NULL;
    cuda_dl_check(cuda_dl.malloc_(&p, n > 0 ? n : 1), "cudaMalloc");
    return p;
}
static inline void cuda_dl_free(void *p) {
    cuda_dl_check(cuda_dl.free_(p), "cudaFree");
}
static inline void cuda_dl_copy(void *dst, const void *src, size_t n) {
    if (n > 0)
        cuda_dl_check(cuda_dl.memcpy_(dst, src, n, CUDA_DL_MEMCPY_DEFAULT), "cudaMemcpy");
}
static inline void cuda_dl_fill(void *dst, int byte, size_t n) {
    if (n > 0)
        cuda_dl_check(cuda_dl.memset_(dst, byte, n), "cudaMemset");
    cuda_dl_check(cuda_dl.synchronize(), "cudaDeviceSynchronize");
}

/* Ranks of a node share its GPUs round robin (local rank from the launcher). */
static inline void cuda_dl_pick_device(void) {
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    const int local = lr ? atoi(lr) : 0;
    cuda_dl_check(cuda_dl.set_device(local % cuda_dl.devices), "cudaSetDevice");
}

#endif
