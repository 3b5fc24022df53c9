/*
 * bcast_tree_gpu.c - bcast_tree.c between GPU buffers, as the published
 * PEACH2 broadcast benchmark (compat reference B4) runs it: tcaMalloc'd GPU
 * memory registered by tcaCreateHandleList, the root's payload put there and
 * every receiver's copied back with cudaMemcpy (cudaMemcpyDefault) through
 * cudaMallocHost staging. Prints "SKIP: no GPU" and exits 77 without a CUDA
 * device.
 *
 * What it reproduces, and relies on:
 * - power-of-two process counts; rank r forwards to r + m for every m below
 *   its lowest set bit (largest subtree first), so odd ranks never load or
 *   start a channel and the root's chain has log2(P) descriptors;
 * - each rank's chain is built and loaded on channel 0 once per size, then
 *   started every iteration without tcaWaitDMAC;
 * - every descriptor notifies both the child and the rank itself, but only one
 *   self-notification is waited per start: k - 1 are left over every
 *   iteration (the library must neither stall the sender nor fail on them);
 * - MPI_Allreduce (time) and MPI_Barrier close every iteration, and the next
 *   start follows right after (channel reuse right after its notifications);
 * - tcaInit before cudaSetDevice, handles from tcaCreateHandleList, no
 *   finalize call.
 * Every rank checks every byte it received in every iteration.
 */
#include <mpi.h>
#include "tca-help.h"
#include "cuda-help.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bcast_tree_common.h"

int main(int argc, char **argv) {
    tree_init(&argc, &argv, "bcast_tree_gpu");
    int devices = 0;
    if (cudaSuccess != cudaGetDeviceCount(&devices) || 0 == devices) {
        if (0 == me)
            printf("SKIP: no GPU\n");
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return 77;
    }
    CUDA_SAFE_CALL(cudaSetDevice(0));
    uint8_t *host;
    CUDA_SAFE_CALL(cudaMallocHost((void **) &host, (size_t) 4 << 20));

    int span = 0 == me ? nprocs : lowbit(me); /* my subtree: [me, me + span) */
    int parent = 0 == me ? -1 : me - lowbit(me);
    for (size_t size = 8; size <= (4u << 20); size *= 8) {
        if (size == (size_t) 1 << 21)
            size = (size_t) 4 << 20; /* 8 B .. 4 MiB */
        int iters = size <= 32768 ? 60 : 6;
        uint8_t *buf;
        tcaHandle *handle;
        tcaDesc *desc = NULL;
        int children = 0;
        TCA_SAFE_CALL(tcaMalloc((void **) &buf, size, tcaMemoryGPU));
        CUDA_SAFE_CALL(cudaMemset(buf, 0, size));
        tcaCreateHandleList(&handle, nprocs, buf, size);

        if (span > 1) {
            desc = tcaDescNew();
            for (int m = span / 2; m >= 1; m /= 2, ++children)
                TCA_SAFE_CALL(tcaDescSetMemcpy(desc, &handle[me + m], 0, &handle[me], 0, size,
                                               DMA_FLAG, 0, WAIT_TAG));
            TCA_SAFE_CALL(tcaDescSet(desc, DMA_CH));
        }
        MPI_Barrier(MPI_COMM_WORLD);

        double total = 0.0;
        for (int it = 0; it < WARMUP + iters; ++it) {
            double t0 = MPI_Wtime();
            if (0 == me) {
                for (size_t i = 0; i < size; ++i)
                    host[i] = pattern(i, it, size);
                CUDA_SAFE_CALL(cudaMemcpy(buf, host, size, cudaMemcpyDefault));
            } else {
                TCA_SAFE_CALL(tcaWaitDMARecvDesc(&handle[parent], 0, WAIT_TAG));
            }
            if (children > 0) {
                TCA_SAFE_CALL(tcaStartDMADesc(DMA_CH));
                TCA_SAFE_CALL(tcaWaitDMARecvDesc(&handle[me], 0, WAIT_TAG)); /* one of `children` */
            }
            double t = MPI_Wtime() - t0;
            if (0 != me) {
                CUDA_SAFE_CALL(cudaMemcpy(host, buf, size, cudaMemcpyDefault));
                for (size_t i = 0; i < size; ++i) {
                    if (host[i] != pattern(i, it, size)) {
                        fprintf(stderr,
                                "bcast_tree_gpu: rank %d size %zu iteration %d: byte %zu is %u, "
                                "expected %u\n",
                                me, size, it, i, host[i], pattern(i, it, size));
                        exit(EXIT_FAILURE);
                    }
                }
            }
            MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            if (it >= WARMUP)
                total += t;
        }
        if (0 == me)
            printf("bcast_tree_gpu: %d ranks %8zu bytes %10.3f us\n", nprocs, size,
                   total / iters * 1e6);

        if (desc)
            TCA_SAFE_CALL(tcaDescFree(desc));
        free(handle);
        MPI_Barrier(MPI_COMM_WORLD); /* nobody writes into buf any more */
        TCA_SAFE_CALL(tcaFree(buf, tcaMemoryGPU));
    }
    CUDA_SAFE_CALL(cudaFreeHost(host));
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me)
        printf("bcast_tree_gpu: PASSED\n");
    MPI_Finalize();
    return 0;
}
