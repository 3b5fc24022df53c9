/*
 * ucx_fault_test.c - a peer lost under a TCA wait on the ucx device: the
 * wait must end with a named error within TCA_TIMEOUT_MS, never hang.
 * Two ranks (best on two hosts).  First one checked exchange (both
 * endpoints exist), "phase 1 done" on rank 0; then rank 0 waits for a second
 * notification from rank 1 that never comes, because rank 1
 *   silent:   stays alive but sends nothing;
 *   killed:   SIGKILLs itself (run with mpirun --enable-recovery, so that
 *             the launcher does not end rank 0 first);
 *   linkdown: keeps still while the test takes its host's link down, then
 *             tries to write to rank 0 and reports how that ended.
 * Rank 0 reports "ucx_fault_test: rank 0: wait ended after S s: <error>" and
 * leaves at once (_exit: MPI cannot finalize with a peer gone).  Each rank
 * writes its lines into the file PREFIX.<rank> (the second argument) as well
 * as to stdout: output forwarded by the launcher can be lost when a job is
 * torn down, and that of a rank behind a downed link never arrives.
 */
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tca.h"

static FILE *report;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
    if (NULL != report) {
        va_start(ap, fmt);
        vfprintf(report, fmt, ap);
        va_end(ap);
        fflush(report);
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + 1e-9 * (double) t.tv_nsec;
}

int main(int argc, char **argv) {
    int rank, size;
    const char *mode = argc > 1 ? argv[1] : "silent";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 2) {
        char path[4096];
        snprintf(path, sizeof path, "%s.%d", argv[2], rank);
        report = fopen(path, "w");
    }
    tcaResult r = tcaInit();
    if (tcaSuccess != r || size != 2) {
        fprintf(stderr, "ucx_fault_test: needs 2 ranks and tcaInit (%s)\n", tcaGetErrorString(r));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char *buf;
    tcaHandle mine, all[2];
    if (tcaSuccess != tcaMalloc((void **) &buf, 4096, tcaMemoryCPU) ||
        tcaSuccess != tcaCreateHandle(&mine, buf, 4096, tcaMemoryCPU))
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
    const int peer = 1 - rank;
    const unsigned char word[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    if (tcaSuccess != tcaPioWrite(&all[peer], 0, word, 8, tcaDMANotify, 1, 1) ||
        tcaSuccess != tcaWaitDMARecvDesc(&all[peer], 1, 1) || 0 != memcmp(buf, word, 8)) {
        fprintf(stderr, "ucx_fault_test: rank %d: the first exchange failed\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        say("ucx_fault_test: phase 1 done\n");
        const double t0 = now();
        r = tcaWaitDMARecvDesc(&all[peer], 1, 2);
        say("ucx_fault_test: rank 0: wait ended after %.1f s: %s\n", now() - t0,
            tcaGetErrorString(r));
        _exit(tcaSuccess == r ? 1 : 0);
    }
    if (0 == strcmp(mode, "killed"))
        raise(SIGKILL);
    if (0 == strcmp(mode, "linkdown")) {
        sleep(3); /* the test takes our link down meanwhile */
        const double t0 = now();
        r = tcaPioWrite(&all[peer], 8, word, 8, tcaDMANotify, 1, 3);
        if (tcaSuccess == r)
            r = tcaWaitDMARecvDesc(&all[peer], 1, 3); /* never sent: bounded too */
        say("ucx_fault_test: rank 1: write and wait ended after %.1f s: %s\n", now() - t0,
            tcaGetErrorString(r));
        _exit(0);
    }
    sleep(600); /* silent: alive, sends nothing; the launcher ends us */
    _exit(0);
}
