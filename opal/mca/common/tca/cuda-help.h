/*
 * cuda-help.h - the CUDA helper header of published TCA programs: the CUDA
 * runtime API (<cuda_runtime.h>) and the CUDA_SAFE_CALL check macro.  Any
 * include order, any number of times.  Needs the CUDA toolkit's headers on
 * the include path (-I<CUDA>/include) and -lcudart at link time.
 */
#ifndef TCA_CUDA_HELP_H
#define TCA_CUDA_HELP_H

#if defined(__has_include)
#if !__has_include(<cuda_runtime.h>)
#error                                                                                             \
    "cuda-help.h needs the CUDA toolkit's headers: add -I<CUDA>/include (cuda_runtime.h was not found)"
#endif
#endif
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

/* Evaluate a CUDA runtime call once; on any result but cudaSuccess print
 * where and why and exit with failure status. */
#ifndef CUDA_SAFE_CALL
#define CUDA_SAFE_CALL(call)                                                                       \
    do {                                                                                           \
        cudaError_t cuda_safe_call_result_ = (call);                                               \
        if (cudaSuccess != cuda_safe_call_result_) {                                               \
            fprintf(stderr, "%s:%d: CUDA error in %s: %s\n", __FILE__, __LINE__, #call,            \
                    cudaGetErrorString(cuda_safe_call_result_));                                   \
            exit(EXIT_FAILURE);                                                                    \
        }                                                                                          \
    } while (0)
#endif

#endif /* TCA_CUDA_HELP_H */
