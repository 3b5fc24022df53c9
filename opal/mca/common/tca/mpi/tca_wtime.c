/*
 * tca_wtime.c - libtcawtime.so: MPI programs read the TCA virtual clock
 * (TCA_TIMING=virtual, docs/virtual-time.md).  Preloaded into an unmodified
 * MPI program (LD_PRELOAD, or tca-mpirun with TCA_WTIME=1), it interposes
 * through the MPI profiling interface:
 *   - MPI_Wtime returns tcaWtime(): this node's virtual clock (a wall clock
 *     where virtual time is off or before tcaInit), MPI_Wtick 1 ns;
 *   - the communication calls run held (tcaVirtualTimeHold): the CPU time
 *     spent inside MPI - polling, matching, copying - is not charged as the
 *     program's computation; what a message costs is the model's (its
 *     stamp, TCA_MPI_SEND_NS / TCA_MPI_RECV_NS, over btl tca);
 *   - with TCA_WTIME_SYNC=1, MPI_Barrier, MPI_Allreduce, MPI_Allgather and
 *     MPI_Alltoall also move every rank's clock to the latest entry, as such
 *     a call cannot end before its last rank entered: for jobs whose MPI
 *     traffic does not go over btl tca (whose messages carry their stamps).
 * MPI calls not listed here run unheld: their CPU time counts as the
 * program's.  Over btl tca the component starts the device (and the clock)
 * in MPI_Init; a program that calls tcaInit itself uses the same node.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "tca.h"

static int sync_clocks(void) {
    static int cached = -1;
    if (cached < 0) {
        const char *v = getenv("TCA_WTIME_SYNC");
        cached = v != NULL && strcmp(v, "1") == 0;
    }
    return cached;
}

/* The latest clock of the ranks of comm at entry (the caller holds). */
static void align_clocks(MPI_Comm comm, double entered) {
    double latest = entered;
    if (PMPI_Allreduce(&entered, &latest, 1, MPI_DOUBLE, MPI_MAX, comm) == MPI_SUCCESS)
        (void) tcaWtimeAtLeast(latest);
}

double MPI_Wtime(void) {
    return tcaWtime();
}

double MPI_Wtick(void) {
    return 1e-9;
}

/* A call whose CPU time is MPI's, not the program's. */
#define HELD(call)                                                                                 \
    do {                                                                                           \
        (void) tcaVirtualTimeHold(1);                                                              \
        const int held_rc_ = (call);                                                               \
        (void) tcaVirtualTimeHold(0);                                                              \
        return held_rc_;                                                                           \
    } while (0)

/* The same, then every rank's clock at the latest entry (TCA_WTIME_SYNC=1). */
#define HELD_ALIGNED(call, comm)                                                                   \
    do {                                                                                           \
        const double entered_ = tcaWtime();                                                        \
        (void) tcaVirtualTimeHold(1);                                                              \
        const int held_rc_ = (call);                                                               \
        if (held_rc_ == MPI_SUCCESS && sync_clocks())                                              \
            align_clocks(comm, entered_);                                                          \
        (void) tcaVirtualTimeHold(0);                                                              \
        return held_rc_;                                                                           \
    } while (0)

int MPI_Send(const void *b, int n, MPI_Datatype t, int dst, int tag, MPI_Comm c) {
    HELD(PMPI_Send(b, n, t, dst, tag, c));
}
int MPI_Ssend(const void *b, int n, MPI_Datatype t, int dst, int tag, MPI_Comm c) {
    HELD(PMPI_Ssend(b, n, t, dst, tag, c));
}
int MPI_Recv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status *s) {
    HELD(PMPI_Recv(b, n, t, src, tag, c, s));
}
int MPI_Isend(const void *b, int n, MPI_Datatype t, int dst, int tag, MPI_Comm c, MPI_Request *r) {
    HELD(PMPI_Isend(b, n, t, dst, tag, c, r));
}
int MPI_Irecv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Request *r) {
    HELD(PMPI_Irecv(b, n, t, src, tag, c, r));
}
int MPI_Sendrecv(const void *sb, int sn, MPI_Datatype st, int dst, int stag, void *rb, int rn,
                 MPI_Datatype rt, int src, int rtag, MPI_Comm c, MPI_Status *s) {
    HELD(PMPI_Sendrecv(sb, sn, st, dst, stag, rb, rn, rt, src, rtag, c, s));
}
int MPI_Wait(MPI_Request *r, MPI_Status *s) {
    HELD(PMPI_Wait(r, s));
}
int MPI_Waitall(int n, MPI_Request r[], MPI_Status s[]) {
    HELD(PMPI_Waitall(n, r, s));
}
int MPI_Waitany(int n, MPI_Request r[], int *i, MPI_Status *s) {
    HELD(PMPI_Waitany(n, r, i, s));
}
int MPI_Test(MPI_Request *r, int *f, MPI_Status *s) {
    HELD(PMPI_Test(r, f, s));
}
int MPI_Testall(int n, MPI_Request r[], int *f, MPI_Status s[]) {
    HELD(PMPI_Testall(n, r, f, s));
}
int MPI_Probe(int src, int tag, MPI_Comm c, MPI_Status *s) {
    HELD(PMPI_Probe(src, tag, c, s));
}
int MPI_Iprobe(int src, int tag, MPI_Comm c, int *f, MPI_Status *s) {
    HELD(PMPI_Iprobe(src, tag, c, f, s));
}
int MPI_Start(MPI_Request *r) {
    HELD(PMPI_Start(r));
}
int MPI_Startall(int n, MPI_Request r[]) {
    HELD(PMPI_Startall(n, r));
}
int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c) {
    HELD(PMPI_Bcast(b, n, t, root, c));
}
int MPI_Reduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
    HELD(PMPI_Reduce(sb, rb, n, t, op, root, c));
}
int MPI_Barrier(MPI_Comm c) {
    HELD_ALIGNED(PMPI_Barrier(c), c);
}
int MPI_Allreduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
    HELD_ALIGNED(PMPI_Allreduce(sb, rb, n, t, op, c), c);
}
int MPI_Allgather(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
                  MPI_Comm c) {
    HELD_ALIGNED(PMPI_Allgather(sb, sn, st, rb, rn, rt, c), c);
}
int MPI_Alltoall(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
                 MPI_Comm c) {
    HELD_ALIGNED(PMPI_Alltoall(sb, sn, st, rb, rn, rt, c), c);
}
int MPI_Win_fence(int a, MPI_Win w) {
    HELD(PMPI_Win_fence(a, w));
}
int MPI_Put(const void *ob, int on, MPI_Datatype ot, int target, MPI_Aint d, int tn,
            MPI_Datatype tt, MPI_Win w) {
    HELD(PMPI_Put(ob, on, ot, target, d, tn, tt, w));
}
int MPI_Get(void *ob, int on, MPI_Datatype ot, int target, MPI_Aint d, int tn, MPI_Datatype tt,
            MPI_Win w) {
    HELD(PMPI_Get(ob, on, ot, target, d, tn, tt, w));
}
int MPI_Win_lock(int type, int rank, int a, MPI_Win w) {
    HELD(PMPI_Win_lock(type, rank, a, w));
}
int MPI_Win_unlock(int rank, MPI_Win w) {
    HELD(PMPI_Win_unlock(rank, w));
}
int MPI_Win_flush(int rank, MPI_Win w) {
    HELD(PMPI_Win_flush(rank, w));
}
