/*
 * halo_shadow.c - halo ("reflect") exchange of 2-D arrays with shadow widths
 * that may be 0, in the style of a PGAS compiler runtime's TCA backend
 * (compat references R1/R2).
 *
 * A 2-D array of doubles is block-distributed over a non-periodic process
 * grid (P x 1, 1 x P and MPI_Dims_create's 2-D grid); every array has its own
 * lower/upper shadow width per dimension, some of them 0. Per array:
 * - pack buffers of width x layer bytes are allocated with tcaMalloc and
 *   registered with tcaCreateHandle for each side of each dimension, whatever
 *   the width: a zero width makes both calls with size 0;
 * - one chain is built and loaded on channel 0 once: per dimension up to two
 *   descriptors, lower neighbour first in dimension 0 and upper first in
 *   dimension 1; a layer of 8 bytes per row goes through the pack buffers,
 *   anything wider is a 2-D descriptor straight into the neighbour's shadow;
 * - a rank without any neighbour to send to loads and starts its empty chain
 *   all the same;
 * - every exchange starts the chain, waits for one notification per
 *   neighbour that sends to it - naming the sender's array handle even where
 *   the data lands in a pack buffer - unpacks, and ends in MPI_Barrier;
 * - missing neighbours are MPI_PROC_NULL, compared with MPI_PROC_NULL only
 *   (it is -2 in Open MPI, -1 in MPICH).
 * Handles travel as raw bytes with MPI_Sendrecv. Every element of the array,
 * shadows and corners included, is checked after every exchange.
 */
#include <mpi.h>
#include "tca-help.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DMA_CH 0
#define WAIT_TAG 0x100
#define DMA_FLAG (tcaDMAUseInternal | tcaDMAUseNotifyInternal | tcaDMANotify | tcaDMAPipeline)
#define NX 12 /* interior columns per rank (dimension 0, contiguous) */
#define NY 10 /* interior rows per rank (dimension 1) */
#define EXCHANGES 8
#define SENTINEL (-1.0)

static int me, nprocs;

/* One side (0 = lower, 1 = upper) of one dimension of one array. */
struct side {
    int width;           /* shadow width on this side */
    int nb;              /* neighbour on this side, or MPI_PROC_NULL */
    double *sbuf, *rbuf; /* pack buffers: what I send across this side, what I receive on it */
    tcaHandle sh, rh;    /* their handles */
    tcaHandle nb_array;  /* the neighbour's array handle */
    tcaHandle nb_rbuf;   /* the neighbour's receive pack buffer for what I send to it */
};

struct array {
    int lo[2], hi[2]; /* shadow widths per dimension */
    int lx, ly;       /* allocated extent, shadows included */
    int coord[2];
    double *a;
    tcaHandle h;
    struct side s[2][2]; /* [dimension][lower, upper] */
    tcaDesc *desc;
};

static double value(int gx, int gy, int it) {
    return (double) it * 1e6 + (double) gx * 1000.0 + (double) gy;
}

static double *at(struct array *A, int i,
                  int j) /* interior index i, j; shadows negative / beyond */
{
    return &A->a[(size_t) (A->lo[1] + j) * A->lx + (A->lo[0] + i)];
}

static off_t off(const struct array *A, int i, int j) {
    return (off_t) (((size_t) (A->lo[1] + j) * A->lx + (A->lo[0] + i)) * sizeof(double));
}

/* Shadow width I send across side `up` of dimension d: the neighbour's shadow
 * facing me, which has my own width on the opposite side (same array). */
static int send_width(const struct array *A, int d, int up) {
    return up ? A->lo[d] : A->hi[d];
}

/* Pack layer count x bytes per layer for dimension d. */
static size_t layer_bytes(int d) {
    return (0 == d ? NY : NX) * sizeof(double);
}

static void pack(struct array *A, int up) /* dimension 0 only, width 1 */
{
    int i = up ? NX - 1 : 0;
    for (int j = 0; j < NY; ++j)
        A->s[0][up].sbuf[j] = *at(A, i, j);
}

static void unpack(struct array *A, int up) {
    int i = up ? NX : -1;
    for (int j = 0; j < NY; ++j)
        *at(A, i, j) = A->s[0][up].rbuf[j];
}

static int packed(int d, int width) {
    return 0 == d && 1 == width; /* an 8-byte block per row */
}

static void setup(struct array *A, MPI_Comm cart, const int w[4]) {
    A->lo[0] = w[0], A->hi[0] = w[1], A->lo[1] = w[2], A->hi[1] = w[3];
    A->lx = A->lo[0] + NX + A->hi[0];
    A->ly = A->lo[1] + NY + A->hi[1];
    MPI_Cart_coords(cart, me, 2, A->coord);
    size_t bytes = (size_t) A->lx * A->ly * sizeof(double);
    TCA_SAFE_CALL(tcaMalloc((void **) &A->a, bytes, tcaMemoryCPU));
    for (size_t k = 0; k < (size_t) A->lx * A->ly; ++k)
        A->a[k] = SENTINEL;
    TCA_SAFE_CALL(tcaCreateHandle(&A->h, A->a, bytes, tcaMemoryCPU));

    for (int d = 0; d < 2; ++d) {
        MPI_Cart_shift(cart, d, 1, &A->s[d][0].nb, &A->s[d][1].nb);
        for (int up = 0; up < 2; ++up) {
            struct side *S = &A->s[d][up];
            S->width = up ? A->hi[d] : A->lo[d];
            size_t sbytes = (size_t) send_width(A, d, up) * layer_bytes(d); /* 0 for a zero width */
            size_t rbytes = (size_t) S->width * layer_bytes(d);
            TCA_SAFE_CALL(tcaMalloc((void **) &S->sbuf, sbytes, tcaMemoryCPU));
            TCA_SAFE_CALL(tcaMalloc((void **) &S->rbuf, rbytes, tcaMemoryCPU));
            TCA_SAFE_CALL(tcaCreateHandle(&S->sh, S->sbuf, sbytes, tcaMemoryCPU));
            TCA_SAFE_CALL(tcaCreateHandle(&S->rh, S->rbuf, rbytes, tcaMemoryCPU));
        }
        /* The neighbours' array handles, and their receive buffers for what I send. */
        for (int up = 0; up < 2; ++up) {
            struct side *S = &A->s[d][up], *O = &A->s[d][!up];
            MPI_Sendrecv(&A->h, sizeof(tcaHandle), MPI_BYTE, O->nb, 1, &S->nb_array,
                         sizeof(tcaHandle), MPI_BYTE, S->nb, 1, cart, MPI_STATUS_IGNORE);
            /* my receive buffer on side !up is what the neighbour on side !up sends into */
            MPI_Sendrecv(&O->rh, sizeof(tcaHandle), MPI_BYTE, O->nb, 2, &S->nb_rbuf,
                         sizeof(tcaHandle), MPI_BYTE, S->nb, 2, cart, MPI_STATUS_IGNORE);
        }
    }

    A->desc = tcaDescNew();
    for (int d = 0; d < 2; ++d) {
        for (int k = 0; k < 2; ++k) {
            int up = 0 == d ? k : !k; /* lower first in dimension 0, upper first in dimension 1 */
            struct side *S = &A->s[d][up];
            int sw = send_width(A, d, up);
            if (MPI_PROC_NULL == S->nb || 0 == sw)
                continue;
            if (packed(d, sw)) {
                TCA_SAFE_CALL(tcaDescSetMemcpy(A->desc, &S->nb_rbuf, 0, &S->sh, 0, layer_bytes(d),
                                               DMA_FLAG, 0, WAIT_TAG));
            } else if (0 == d) {
                /* my first/last sw columns into the neighbour's upper/lower shadow */
                off_t src = up ? off(A, NX - sw, 0) : off(A, 0, 0);
                off_t dst = up ? off(A, -sw, 0) : off(A, NX, 0);
                TCA_SAFE_CALL(tcaDescSetMemcpy2D(A->desc, &S->nb_array, dst, A->lx * sizeof(double),
                                                 &A->h, src, A->lx * sizeof(double),
                                                 sw * sizeof(double), NY, DMA_FLAG, 0, WAIT_TAG));
            } else {
                off_t src = up ? off(A, 0, NY - sw) : off(A, 0, 0);
                off_t dst = up ? off(A, 0, -sw) : off(A, 0, NY);
                TCA_SAFE_CALL(tcaDescSetMemcpy2D(A->desc, &S->nb_array, dst, A->lx * sizeof(double),
                                                 &A->h, src, A->lx * sizeof(double),
                                                 NX * sizeof(double), sw, DMA_FLAG, 0, WAIT_TAG));
            }
        }
    }
    TCA_SAFE_CALL(tcaDescSet(A->desc, DMA_CH)); /* loaded even when empty */
}

static void check(struct array *A, const char *grid, int it) {
    for (int j = -A->lo[1]; j < NY + A->hi[1]; ++j) {
        for (int i = -A->lo[0]; i < NX + A->hi[0]; ++i) {
            int xo = i < 0 ? 0 : i >= NX ? 1 : -1; /* outside in x: lower/upper */
            int yo = j < 0 ? 0 : j >= NY ? 1 : -1;
            double want;
            if (xo >= 0 && yo >= 0)
                want = SENTINEL; /* corners are not exchanged */
            else if (xo >= 0 && MPI_PROC_NULL == A->s[0][xo].nb)
                want = SENTINEL;
            else if (yo >= 0 && MPI_PROC_NULL == A->s[1][yo].nb)
                want = SENTINEL;
            else
                want = value(A->coord[0] * NX + i, A->coord[1] * NY + j, it);
            if (*at(A, i, j) != want) {
                fprintf(stderr,
                        "halo_shadow: rank %d grid %s shadows x(%d,%d) y(%d,%d) exchange %d: "
                        "element (%d,%d) is %g, "
                        "expected %g\n",
                        me, grid, A->lo[0], A->hi[0], A->lo[1], A->hi[1], it, i, j, *at(A, i, j),
                        want);
                exit(EXIT_FAILURE);
            }
        }
    }
}

static void reflect(struct array *A, int it) {
    for (int j = 0; j < NY; ++j)
        for (int i = 0; i < NX; ++i)
            *at(A, i, j) = value(A->coord[0] * NX + i, A->coord[1] * NY + j, it);
    for (int up = 0; up < 2; ++up)
        if (packed(0, send_width(A, 0, up)))
            pack(A, up);
    TCA_SAFE_CALL(tcaStartDMADesc(DMA_CH));
    for (int d = 0; d < 2; ++d)
        for (int up = 0; up < 2; ++up) {
            struct side *S = &A->s[d][up];
            if (MPI_PROC_NULL != S->nb && S->width > 0)
                TCA_SAFE_CALL(tcaWaitDMARecvDesc(&S->nb_array, 0, WAIT_TAG));
        }
    for (int up = 0; up < 2; ++up)
        if (MPI_PROC_NULL != A->s[0][up].nb && packed(0, A->s[0][up].width))
            unpack(A, up);
}

static void teardown(struct array *A) {
    TCA_SAFE_CALL(tcaDescFree(A->desc));
    for (int d = 0; d < 2; ++d)
        for (int up = 0; up < 2; ++up) {
            TCA_SAFE_CALL(tcaFree(A->s[d][up].sbuf, tcaMemoryCPU));
            TCA_SAFE_CALL(tcaFree(A->s[d][up].rbuf, tcaMemoryCPU));
        }
    TCA_SAFE_CALL(tcaFree(A->a, tcaMemoryCPU));
}

int main(int argc, char **argv) {
    static const int widths[][4] = {
        /* x lower, x upper, y lower, y upper */
        {1, 1, 1, 1}, /* x through pack buffers, y by 2-D descriptors */
        {0, 2, 1, 0}, /* zero-size buffers on one side of each dimension */
        {1, 0, 0, 0}, /* y all zero: on a 1 x P grid every chain is empty */
        {0, 0, 2, 2}, /* x all zero: on a P x 1 grid every chain is empty */
        {2, 1, 0, 1},
    };
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    TCA_SAFE_CALL(tcaInit());

    int grids[3][2] = {{nprocs, 1}, {1, nprocs}, {0, 0}};
    MPI_Dims_create(nprocs, 2, grids[2]);
    const char *names[3] = {"Px1", "1xP", "2-D"};
    for (int g = 0; g < 3; ++g) {
        int periods[2] = {0, 0};
        MPI_Comm cart;
        MPI_Cart_create(MPI_COMM_WORLD, 2, grids[g], periods, 0, &cart);
        for (size_t c = 0; c < sizeof widths / sizeof widths[0]; ++c) {
            struct array A;
            memset(&A, 0, sizeof A);
            setup(&A, cart, widths[c]);
            MPI_Barrier(MPI_COMM_WORLD);
            for (int it = 0; it < EXCHANGES; ++it) {
                reflect(&A, it);
                check(&A, names[g], it);
                MPI_Barrier(MPI_COMM_WORLD);
            }
            teardown(&A);
        }
        MPI_Comm_free(&cart);
        if (0 == me)
            printf("halo_shadow: %d ranks, grid %s (%d x %d): %zu arrays verified\n", nprocs,
                   names[g], grids[g][0], grids[g][1], sizeof widths / sizeof widths[0]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me)
        printf("halo_shadow: PASSED\n");
    MPI_Finalize();
    return 0;
}
