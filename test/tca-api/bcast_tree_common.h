/* bcast_tree_common.h - what bcast_tree.c and bcast_tree_gpu.c share: the
 * binomial tree over a power-of-two number of processes (a rank's parent is
 * itself less its lowest set bit), the root's payload and the start.
 * Include after tca-help.h. */
#ifndef TCA_TEST_BCAST_TREE_COMMON_H
#define TCA_TEST_BCAST_TREE_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define DMA_CH 0
#define WAIT_TAG 0x100
#define DMA_FLAG (tcaDMAUseInternal | tcaDMAUseNotifyInternal | tcaDMANotify | tcaDMANotifySelf)
#define WARMUP 2
#define IS_POW_2(x) (((x) & ((x) -1)) == 0)

static int me, nprocs;

/* The root's payload in iteration `it`: differs between sizes and iterations. */
static uint8_t pattern(size_t i, int it, size_t size) {
    return (uint8_t) (i * 7u + (unsigned) it * 13u + (unsigned) size * 3u + 1u);
}

static int lowbit(int r) {
    return r & -r;
}

/* MPI and the device up; a process count that is no power of two ends the
 * program (name says which). */
static void tree_init(int *argc, char ***argv, const char *name) {
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (!IS_POW_2(nprocs)) {
        if (0 == me)
            fprintf(stderr, "%s: the process count must be a power of two\n", name);
        exit(EXIT_FAILURE);
    }
    TCA_SAFE_CALL(tcaInit());
}

#endif
