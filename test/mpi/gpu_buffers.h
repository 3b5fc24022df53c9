/*
 * gpu_buffers.h - device buffers for the MPI tests' GPU runs (TCA_TEST_GPU=1
 * or --gpu): cudaMalloc'd memory through a CUDA runtime loaded with dlopen,
 * so the tests build and run on machines without CUDA.  The data checks stay
 * on the host: fill and check copy through a host bounce buffer.
 */
#ifndef TCA_TEST_GPU_BUFFERS_H
#define TCA_TEST_GPU_BUFFERS_H

#include <stddef.h>

/* Printed (and exit status 77, automake's SKIP) when a GPU run finds no GPU. */
#define TCA_TEST_GPU_SKIP_LINE "SKIP: no GPU"
#define TCA_TEST_GPU_SKIP_STATUS 77

/* Whether GPU buffers were asked for: TCA_TEST_GPU=1 in the environment. */
int tca_test_gpu_requested(void);
/* Load the CUDA runtime and select this process's device: the nearest GPUs
 * by hwloc (the rule tca_info prints), shared round robin by local rank, else
 * local rank modulo the device count.  1 when a GPU is usable; 0 with the
 * reason in why. */
int tca_test_gpu_open(char *why, size_t why_len);
/* Device memory; interior: return a pointer 512 bytes into a larger
 * allocation (what registration must handle as base + offset). */
void *tca_test_gpu_alloc(size_t n, int interior);
void tca_test_gpu_free(void *p);
/* cudaMemcpy with cudaMemcpyDefault (unified addressing): any direction. */
void tca_test_gpu_copy(void *dst, const void *src, size_t n);
void tca_test_gpu_memset(void *dst, int value, size_t n);

#endif
