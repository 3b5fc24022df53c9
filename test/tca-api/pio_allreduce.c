/*
 * pio_allreduce.c - recursive-doubling allreduce (sum of doubles) over PIO,
 * in the style of a published PGAS runtime's TCA allreduce (R3/R4): every
 * rank's tcaMalloc'd host buffer holds one slot of `stride` bytes per step
 * (two sets, used by alternate calls); window i is declared with
 * tcaSetPIORegion(&pio[i], partner's handle, 0, stride) and written at
 * offset (set * steps + i) * stride - past the declared window, inside the
 * partner's registration.  A message is the vector plus an 8-byte marker
 * (255) in its last word; the receiver polls the marker in its own memory,
 * clears it and adds the partner's vector.  Power-of-two rank counts.
 * Usage: pio_allreduce [calls]
 */
#include "mpi-help.h"
#include "tca-help.h"
#include "program_end.h"

#include <stdint.h>
#include <string.h>

#define MARKER 255
#define MAX_SPIN 2147483647L

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause");
#endif
}

int main(int argc, char **argv) {
    const int counts[] = {1, 2, 8, 100, 1000};
    int me, nprocs, steps = 0, errors = 0, calls = argc > 1 ? atoi(argv[1]) : 50;

    MPI_SAFE_CALL(MPI_Init(&argc, &argv));
    MPI_SAFE_CALL(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    MPI_SAFE_CALL(MPI_Comm_size(MPI_COMM_WORLD, &nprocs));
    if (nprocs & (nprocs - 1)) {
        if (0 == me)
            fprintf(stderr, "run with a power-of-two number of ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    while ((1 << steps) < nprocs)
        ++steps;
    TCA_SAFE_CALL(tcaInit());
    TCA_SAFE_CALL(tcaDMADescInt_Init());

    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
        const int count = counts[c];
        const size_t msg = (size_t) count * sizeof(double) + 8;
        const size_t stride = (msg + 63) / 64 * 64;
        const size_t bytes = stride * (size_t) (2 * steps > 0 ? 2 * steps : 1);
        unsigned char *recvbuf, *sendbuf;
        tcaHandle mine;
        tcaHandle *partner = malloc(sizeof(tcaHandle) * (size_t) (steps > 0 ? steps : 1));
        tcaPIOHandle *pio = malloc(sizeof(tcaPIOHandle) * (size_t) (steps > 0 ? steps : 1));
        double *vec = malloc(sizeof(double) * (size_t) count);
        double t0, t1;

        TCA_SAFE_CALL(tcaMalloc((void **) &recvbuf, bytes, tcaMemoryCPU));
        memset(recvbuf, 0, bytes);
        TCA_SAFE_CALL(tcaCreateHandle(&mine, recvbuf, bytes, tcaMemoryCPU));
        sendbuf = malloc(msg);
        for (int i = 0; i < steps; ++i) {
            const int p = me ^ (1 << i);
            MPI_SAFE_CALL(MPI_Sendrecv(&mine, sizeof mine, MPI_BYTE, p, i, &partner[i],
                                       sizeof(tcaHandle), MPI_BYTE, p, i, MPI_COMM_WORLD,
                                       MPI_STATUS_IGNORE));
            TCA_SAFE_CALL(tcaSetPIORegion(&pio[i], &partner[i], 0, stride));
        }
        MPI_SAFE_CALL(MPI_Barrier(MPI_COMM_WORLD));
        t0 = MPI_Wtime();
        for (int call = 0; call < calls; ++call) {
            const int set = call & 1;
            for (int j = 0; j < count; ++j)
                vec[j] = me * 1000.0 + call * 10.0 + j;
            tcaSendPIOCommit();
            for (int i = 0; i < steps; ++i) {
                const size_t slot = ((size_t) set * steps + i) * stride;
                volatile uint64_t *marker = (volatile uint64_t *) (recvbuf + slot + msg - 8);
                const uint64_t mark = MARKER;
                long spin = 0;
                memcpy(sendbuf, vec, msg - 8);
                memcpy(sendbuf + msg - 8, &mark, 8);
                TCA_SAFE_CALL(tcaSendPIO(&pio[i], slot, sendbuf, msg));
                tcaSendPIOCommit();
                while (*marker != MARKER) {
                    cpu_relax();
                    if (++spin == MAX_SPIN) {
                        fprintf(stderr, "rank %d: time out waiting for step %d of call %d\n", me, i,
                                call);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                }
                *marker = 0;
                __sync_synchronize(); /* read the vector after the marker */
                for (int j = 0; j < count; ++j) {
                    double v;
                    memcpy(&v, recvbuf + slot + (size_t) j * sizeof(double), sizeof v);
                    vec[j] += v;
                }
            }
            for (int j = 0; j < count; ++j) {
                /* sum over ranks r of (r*1000 + call*10 + j) */
                const double want =
                    1000.0 * nprocs * (nprocs - 1) / 2 + (double) nprocs * (call * 10.0 + j);
                if (vec[j] != want) {
                    if (errors++ < 5)
                        fprintf(stderr,
                                "rank %d: count %d, call %d: element %d is %.1f, expected %.1f\n",
                                me, count, call, j, vec[j], want);
                }
            }
        }
        t1 = MPI_Wtime();
        if (0 == me)
            printf("count %5d (%6zu B messages): %10.3f us per allreduce\n", count, msg,
                   (t1 - t0) * 1e6 / calls);
        MPI_SAFE_CALL(MPI_Barrier(MPI_COMM_WORLD));
        TCA_SAFE_CALL(tcaDestroyHandle(&mine));
        TCA_SAFE_CALL(tcaFree(recvbuf, tcaMemoryCPU));
        free(sendbuf);
        free(vec);
        free(pio);
        free(partner);
    }

    return program_end(me, errors);
}
