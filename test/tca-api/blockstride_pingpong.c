/*
 * blockstride_pingpong.c - 2-D block-stride DMA ping-pong in the style of
 * the published block-stride benchmark (B2), on host memory: an N x N x N
 * cube of doubles per rank; one plane of N rows of N doubles (row pitch
 * N*N doubles) goes to the peer's cube with a single tcaDescSetMemcpy2D
 * descriptor, N = 2 .. 128.  Ranks pair up (0-1, 2-3, ...).  The receiver
 * checks the plane and that the rows beside it stay untouched.
 * Usage: blockstride_pingpong [iterations]
 */
#include "mpi-help.h"
#include "tca-help.h"
#include "program_end.h"

#define WAIT_SLOT 0
#define WAIT_TAG 0x100
#define DMA_CH 0
#define ROW 1 /* the plane sent: y = ROW */

static double value(int z, int x, int it, int sender) {
    return sender * 1e6 + it * 1e4 + z * 200.0 + x;
}

int main(int argc, char **argv) {
    int me, nprocs, peer, errors = 0, iters = argc > 1 ? atoi(argv[1]) : 10;
    const int flags = tcaDMAUseInternal | tcaDMAUseNotifyInternal | tcaDMANotify;

    MPI_SAFE_CALL(MPI_Init(&argc, &argv));
    MPI_SAFE_CALL(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    MPI_SAFE_CALL(MPI_Comm_size(MPI_COMM_WORLD, &nprocs));
    TCA_SAFE_CALL(tcaInit());
    peer = (me % 2 == 0) ? me + 1 : me - 1;
    if (peer >= nprocs)
        peer = -1;

    for (int N = 2; N <= 128; N *= 2) {
        const size_t cube = (size_t) N * N * N, pitch = (size_t) N * N * sizeof(double);
        const size_t width = (size_t) N * sizeof(double);
        const off_t plane = (off_t) (ROW * N * sizeof(double));
        double *send, *recv;
        tcaHandle *hs, *hr;
        tcaDesc *desc = NULL;
        double t0, t1;

        TCA_SAFE_CALL(tcaMalloc((void **) &send, cube * sizeof(double), tcaMemoryCPU));
        TCA_SAFE_CALL(tcaMalloc((void **) &recv, cube * sizeof(double), tcaMemoryCPU));
        for (size_t i = 0; i < cube; ++i)
            recv[i] = -1.0;
        tcaCreateHandleList(&hs, nprocs, send, cube * sizeof(double));
        tcaCreateHandleList(&hr, nprocs, recv, cube * sizeof(double));
        if (peer >= 0) {
            desc = tcaDescNew();
            TCA_SAFE_CALL(tcaDescSetMemcpy2D(desc, &hr[peer], plane, pitch, &hs[me], plane, pitch,
                                             width, N, flags, WAIT_SLOT, WAIT_TAG));
            TCA_SAFE_CALL(tcaDescSet(desc, DMA_CH));
        }
        MPI_SAFE_CALL(MPI_Barrier(MPI_COMM_WORLD));
        t0 = MPI_Wtime();
        for (int it = 0; peer >= 0 && it < iters; ++it) {
            const int sends_first = me % 2 == 0;
            for (int turn = 0; turn < 2; ++turn) {
                if ((turn == 0) == sends_first) {
                    for (int z = 0; z < N; ++z)
                        for (int x = 0; x < N; ++x)
                            send[(size_t) z * N * N + ROW * N + x] = value(z, x, it, me);
                    TCA_SAFE_CALL(tcaStartDMADesc(DMA_CH));
                } else {
                    TCA_SAFE_CALL(tcaWaitDMARecvDesc(&hr[peer], WAIT_SLOT, WAIT_TAG));
                    for (int z = 0; z < N; ++z) {
                        for (int x = 0; x < N; ++x) {
                            const double got = recv[(size_t) z * N * N + ROW * N + x];
                            const double beside = recv[(size_t) z * N * N + (ROW + 1) % N * N + x];
                            if (got != value(z, x, it, peer) || beside != -1.0) {
                                if (errors++ < 5)
                                    fprintf(stderr,
                                            "rank %d: N=%d it %d (z %d, x %d): %g (beside %g), "
                                            "expected %g\n",
                                            me, N, it, z, x, got, beside, value(z, x, it, peer));
                            }
                        }
                    }
                }
            }
        }
        t1 = MPI_Wtime();
        if (0 == me && peer >= 0)
            printf("N=%4d %8zu B  %10.3f us one way\n", N, width * N, (t1 - t0) * 1e6 / iters / 2);
        MPI_SAFE_CALL(MPI_Barrier(MPI_COMM_WORLD));
        if (desc)
            TCA_SAFE_CALL(tcaDescFree(desc));
        free(hs);
        free(hr);
        TCA_SAFE_CALL(tcaFree(send, tcaMemoryCPU));
        TCA_SAFE_CALL(tcaFree(recv, tcaMemoryCPU));
    }

    return program_end(me, errors);
}
