/*
 * gpu_pingpong.c - GPU-to-GPU DMA ping-pong in the style of the published
 * GPU ping-pong (B1): tcaMalloc'd GPU buffers registered by
 * tcaCreateHandleList, ranks paired (0-1, 2-3, ...), sizes 8 B .. 4 MiB, one
 * chain per size started every iteration, notifying the peer and the sender.
 * The data is staged through cudaMallocHost memory and checked on the host.
 * Prints "SKIP: no GPU" and exits 77 where there is no CUDA device.
 * Usage: gpu_pingpong [iterations]
 */
#include "mpi-help.h"
#include "cuda-help.h"
#include "tca-help.h"
#include "program_end.h"

#define WAIT_SLOT 0
#define WAIT_TAG 0x100
#define DMA_CH 0
#define MAX_SIZE (4u << 20)

static unsigned char pattern(size_t i, int it, int sender) {
    return (unsigned char) (i * 7u + (unsigned) it * 13u + (unsigned) sender * 101u + (i >> 8));
}

int main(int argc, char **argv) {
    int me, nprocs, peer, errors = 0, devices = 0, iters = argc > 1 ? atoi(argv[1]) : 20;
    const int flags = tcaDMAUseInternal | tcaDMAUseNotifyInternal | tcaDMANotify | tcaDMANotifySelf;
    unsigned char *host;

    MPI_SAFE_CALL(MPI_Init(&argc, &argv));
    MPI_SAFE_CALL(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    MPI_SAFE_CALL(MPI_Comm_size(MPI_COMM_WORLD, &nprocs));
    TCA_SAFE_CALL(tcaInit());
    if (cudaSuccess != cudaGetDeviceCount(&devices) || 0 == devices) {
        if (0 == me)
            printf("SKIP: no GPU\n");
        MPI_SAFE_CALL(MPI_Barrier(MPI_COMM_WORLD));
        MPI_Finalize();
        return 77;
    }
    CUDA_SAFE_CALL(cudaSetDevice(0));
    CUDA_SAFE_CALL(cudaMallocHost((void **) &host, MAX_SIZE));
    peer = (me % 2 == 0) ? me + 1 : me - 1;
    if (peer >= nprocs)
        peer = -1;

    for (size_t size = 8; size <= MAX_SIZE; size *= 2) {
        unsigned char *buf; /* GPU: [0, size) sent, [size, 2 size) received */
        tcaHandle *handles;
        tcaDesc *desc = NULL;
        int n = size > (256u << 10) ? (iters + 3) / 4 : iters;
        double t0, t1;

        TCA_SAFE_CALL(tcaMalloc((void **) &buf, 2 * size, tcaMemoryGPU));
        tcaCreateHandleList(&handles, nprocs, buf, 2 * size);
        if (peer >= 0) {
            desc = tcaDescNew();
            TCA_SAFE_CALL(tcaDescSetMemcpy(desc, &handles[peer], (off_t) size, &handles[me], 0,
                                           size, flags, WAIT_SLOT, WAIT_TAG));
            TCA_SAFE_CALL(tcaDescSet(desc, DMA_CH));
        }
        MPI_SAFE_CALL(MPI_Barrier(MPI_COMM_WORLD));
        t0 = MPI_Wtime();
        for (int it = 0; peer >= 0 && it < n; ++it) {
            for (int turn = 0; turn < 2; ++turn) {
                if ((turn == 0) == (me % 2 == 0)) {
                    for (size_t i = 0; i < size; ++i)
                        host[i] = pattern(i, it, me);
                    CUDA_SAFE_CALL(cudaMemcpy(buf, host, size, cudaMemcpyDefault));
                    TCA_SAFE_CALL(tcaStartDMADesc(DMA_CH));
                    TCA_SAFE_CALL(tcaWaitDMARecvDesc(&handles[me], WAIT_SLOT, WAIT_TAG));
                } else {
                    TCA_SAFE_CALL(tcaWaitDMARecvDesc(&handles[peer], WAIT_SLOT, WAIT_TAG));
                    CUDA_SAFE_CALL(cudaMemcpy(host, buf + size, size, cudaMemcpyDefault));
                    for (size_t i = 0; i < size; ++i) {
                        if (host[i] != pattern(i, it, peer)) {
                            fprintf(stderr,
                                    "rank %d: %zu B, iteration %d: byte %zu is %u, expected %u\n",
                                    me, size, it, i, host[i], pattern(i, it, peer));
                            ++errors;
                            break;
                        }
                    }
                }
            }
        }
        t1 = MPI_Wtime();
        if (0 == me && peer >= 0)
            printf("%8zu B  %10.3f us one way\n", size, (t1 - t0) * 1e6 / n / 2);
        MPI_SAFE_CALL(MPI_Barrier(MPI_COMM_WORLD));
        if (desc)
            TCA_SAFE_CALL(tcaDescFree(desc));
        free(handles);
        TCA_SAFE_CALL(tcaFree(buf, tcaMemoryGPU));
    }

    CUDA_SAFE_CALL(cudaFreeHost(host));
    return program_end(me, errors);
}
