/*
 * rma_conformance.c - every MPI-3 one-sided operation under every
 * synchronisation, on one window flavour per invocation:
 *   rma_conformance create|allocate|shared|dynamic
 * The combinations are generated: operation (put, get, accumulate,
 * get_accumulate, fetch_and_op, compare_and_swap and the request versions
 * rput, rget, raccumulate, rget_accumulate) x reduction (sum, replace, no_op,
 * maxloc for the pair type; a failing compare for compare_and_swap) x
 * synchronisation (fence, post-start-complete-wait, lock exclusive, lock
 * shared + flush, lock + flush_local, lock_all + flush_all, lock_all + flush,
 * lock_all + flush_local_all, lock_all + MPI_Win_sync at the target) x type
 * (MPI_INT, MPI_LONG, MPI_DOUBLE, MPI_AINT, MPI_2INT, a strided vector of
 * MPI_INT at the target) x count (1, 7, and 20000 for the bulk operations) x
 * pattern (each rank on its right neighbour; every rank into rank 0 at once,
 * for the accumulating operations).  Only what MPI allows is generated
 * (request operations in passive-target epochs, compare_and_swap on
 * integers, fetch_and_op and compare_and_swap on one predefined element).
 * Every value is checked: the target's memory and every fetched result.
 *
 * From 3 ranks on, what is new is concurrency and the groups: the types shrink
 * to MPI_INT and MPI_LONG (every type runs on 1 and 2 ranks).
 *
 * Window memory: create and dynamic run the matrix twice, over malloc'd and
 * over MPI_Alloc_mem'd memory; the first is given back before MPI_Win_free
 * (after the last epoch), the second after (from 3 ranks on: the first only).  dynamic attaches and detaches
 * other memory of its own while its neighbour's epochs run on it.  shared runs
 * it on an MPI_Win_allocate_shared window and on an MPI_Win_create window over
 * that memory, then frees the shared window first.
 *
 * A failed combination prints "FAILED <combination>: <why>" and the run goes
 * on; the last line is "<flavour>: N combinations, M failed on P ranks".  The
 * exit status is 0 when the run got to its end (test/mpi/conformance_case.sh
 * compares the failures with Open MPI's own shared-memory transport's).
 */
#include <mpi.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define TEST_RANK rank
#include "../common/mpi_fail.h"

/* ---- the dimensions ---- */
enum {
    OP_PUT,
    OP_GET,
    OP_ACC,
    OP_GET_ACC,
    OP_FOP,
    OP_CAS,
    OP_RPUT,
    OP_RGET,
    OP_RACC,
    OP_RGET_ACC,
    OPS
};
static const char *const op_names[] = {
    "put",  "get",  "accumulate",  "get_accumulate", "fetch_and_op", "compare_and_swap",
    "rput", "rget", "raccumulate", "rget_accumulate"};
enum { RED_SUM, RED_REPLACE, RED_NO_OP, RED_CAS_MISS, REDS }; /* RED_SUM is MAXLOC on MPI_2INT */
static const char *const red_names[] = {"sum", "replace", "no_op", "compare_fails"};
enum {
    SYNC_FENCE,
    SYNC_PSCW,
    SYNC_LOCK,
    SYNC_LOCK_SHARED_FLUSH,
    SYNC_LOCK_FLUSH_LOCAL,
    SYNC_LOCK_ALL_FLUSH_ALL,
    SYNC_LOCK_ALL_FLUSH,
    SYNC_LOCK_ALL_FLUSH_LOCAL_ALL,
    SYNC_LOCK_ALL_WIN_SYNC,
    SYNCS
};
static const char *const sync_names[] = {"fence",
                                         "pscw",
                                         "lock",
                                         "lock_shared+flush",
                                         "lock+flush_local",
                                         "lock_all+flush_all",
                                         "lock_all+flush",
                                         "lock_all+flush_local_all",
                                         "lock_all+win_sync"};
enum { T_INT, T_LONG, T_DOUBLE, T_AINT, T_2INT, T_VEC, TYPES };
static const char *const type_names[] = {"MPI_INT",  "MPI_LONG", "MPI_DOUBLE",
                                         "MPI_AINT", "MPI_2INT", "vector(MPI_INT)"};
enum { PAT_RING, PAT_ALL_TO_0, PATS };
static const char *const pat_names[] = {"ring", "all_to_0"};
static const int counts[] = {1, 7, 20000};
#define COUNTS 3
#define MAX_COUNT 20000

typedef struct {
    int op, red, sync, type, count, pattern;
} combo_t;

typedef struct {
    int v, loc;
} int2_t;

/* ---- element access by type ---- */
static size_t elem_bytes(int t) {
    switch (t) {
    case T_INT:
    case T_VEC:
        return sizeof(int);
    case T_LONG:
        return sizeof(long);
    case T_DOUBLE:
        return sizeof(double);
    case T_AINT:
        return sizeof(MPI_Aint);
    default:
        return sizeof(int2_t);
    }
}
static int stride_of(int t) { /* elements between two of the target's (the vector's stride) */
    return T_VEC == t ? 2 : 1;
}
static MPI_Datatype basic_type(int t) {
    switch (t) {
    case T_INT:
    case T_VEC:
        return MPI_INT;
    case T_LONG:
        return MPI_LONG;
    case T_DOUBLE:
        return MPI_DOUBLE;
    case T_AINT:
        return MPI_AINT;
    default:
        return MPI_2INT;
    }
}
/* Value and location of element i of buf (laid out with `stride`). */
static void put_elem(void *buf, int t, int i, int stride, long v, int loc) {
    const size_t at = (size_t) i * (size_t) stride;
    switch (t) {
    case T_INT:
    case T_VEC:
        ((int *) buf)[at] = (int) v;
        break;
    case T_LONG:
        ((long *) buf)[at] = v;
        break;
    case T_DOUBLE:
        ((double *) buf)[at] = (double) v;
        break;
    case T_AINT:
        ((MPI_Aint *) buf)[at] = (MPI_Aint) v;
        break;
    default:
        ((int2_t *) buf)[at].v = (int) v;
        ((int2_t *) buf)[at].loc = loc;
        break;
    }
}
static long get_elem(const void *buf, int t, int i, int stride, int *loc) {
    const size_t at = (size_t) i * (size_t) stride;
    *loc = -1;
    switch (t) {
    case T_INT:
    case T_VEC:
        return ((const int *) buf)[at];
    case T_LONG:
        return ((const long *) buf)[at];
    case T_DOUBLE:
        return (long) ((const double *) buf)[at];
    case T_AINT:
        return (long) ((const MPI_Aint *) buf)[at];
    default:
        *loc = ((const int2_t *) buf)[at].loc;
        return ((const int2_t *) buf)[at].v;
    }
}

/* The data: a target's element before the epoch, an origin's operand. */
static long base_val(int target, int i, int seed) {
    return 1000 + 37 * target + (i * 13 + seed) % 101;
}
static long origin_val(int origin, int i, int seed) {
    return 5 + 11 * origin + (i * 7 + seed * 3) % 53;
}

/* ---- windows ---- */
enum { FLAVOUR_CREATE, FLAVOUR_ALLOCATE, FLAVOUR_SHARED, FLAVOUR_DYNAMIC };
typedef struct {
    MPI_Win win;
    int flavour;               /* how this window was made (create over shared memory: CREATE) */
    unsigned char *base;       /* our window memory */
    MPI_Aint *disp0;           /* per rank: where its data starts, as the window addresses it */
    unsigned char *scratch[2]; /* dynamic: memory attached and detached while in use */
    int scratch_on;
} window_t;
static size_t win_bytes;  /* the largest batch's (matrix_bytes) */
static long epoch_errors; /* errors of the synchronisation calls themselves */

/* ---- results ---- */
/* One combination of a batch: where its data lies (the same offset in the
 * window, the origin buffer and the result buffer), its request, its verdict. */
typedef struct {
    combo_t c;
    int seed;
    size_t off;
    MPI_Datatype vec; /* the target's strided type (T_VEC) */
    MPI_Request req;
    int failed; /* this rank saw it fail */
} slot_t;

static long combos_run, combos_failed;

static void describe(const slot_t *s, const char *memory, char *out, size_t n) {
    const combo_t *c = &s->c;
    snprintf(out, n, "%s %s %s %s count %d %s %s", op_names[c->op], red_names[c->red],
             sync_names[c->sync], type_names[c->type], c->count, pat_names[c->pattern], memory);
}
static const char *batch_memory; /* the window's memory, for the lines */
static void bad(slot_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(slot_t *s, const char *fmt, ...) {
    if (s->failed)
        return; /* one line per combination and rank */
    s->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    char why[256], what[256];
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    describe(s, batch_memory, what, sizeof(what));
    printf("FAILED %s: rank %d: %s\n", what, rank, why);
}
static void ok(slot_t *s, int rc, const char *call) {
    if (MPI_SUCCESS != rc) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        if (NULL != s) {
            bad(s, "%s: %s", call, text);
        } else {
            printf("FAILED %s %s: rank %d: %s: %s\n", batch_memory, "(epoch)", rank, call, text);
            epoch_errors++;
        }
    }
}

/* ---- epochs ---- */
static int is_passive(int sync) {
    return sync >= SYNC_LOCK;
}
static int uses_lock_all(int sync) {
    return sync >= SYNC_LOCK_ALL_FLUSH_ALL;
}

/* The group of one rank, or of every rank (one < 0). */
static MPI_Group group_of(int one) {
    MPI_Group world, g;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    if (one < 0)
        return world;
    MPI_Group_incl(world, 1, &one, &g);
    MPI_Group_free(&world);
    return g;
}

/* Opens the access epoch on `target` and, active target, the exposure epoch
 * for `exposure`: a rank, -1 every rank, -2 none. */
static void epoch_open(window_t *w, int sync, int target, int exposure) {
    switch (sync) {
    case SYNC_FENCE:
        ok(NULL, MPI_Win_fence(0, w->win), "MPI_Win_fence");
        break;
    case SYNC_PSCW: {
        if (exposure != -2) {
            MPI_Group from = group_of(exposure);
            ok(NULL, MPI_Win_post(from, 0, w->win), "MPI_Win_post");
            MPI_Group_free(&from);
        }
        MPI_Group to = group_of(target);
        ok(NULL, MPI_Win_start(to, 0, w->win), "MPI_Win_start");
        MPI_Group_free(&to);
        break;
    }
    case SYNC_LOCK:
        ok(NULL, MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, w->win), "MPI_Win_lock");
        break;
    case SYNC_LOCK_SHARED_FLUSH:
    case SYNC_LOCK_FLUSH_LOCAL:
        ok(NULL, MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w->win), "MPI_Win_lock");
        break;
    default:
        ok(NULL, MPI_Win_lock_all(0, w->win), "MPI_Win_lock_all");
        break;
    }
}

/* Ends it: every operation is complete at the target afterwards.  Requests
 * are waited for first (local completion), as a program would. */
static void epoch_close(window_t *w, int sync, int target, int exposed, slot_t *slots, int n) {
    for (int i = 0; i < n; i++)
        if (MPI_REQUEST_NULL != slots[i].req)
            ok(&slots[i], MPI_Wait(&slots[i].req, MPI_STATUS_IGNORE), "MPI_Wait");
    switch (sync) {
    case SYNC_FENCE:
        ok(NULL, MPI_Win_fence(0, w->win), "MPI_Win_fence");
        break;
    case SYNC_PSCW:
        ok(NULL, MPI_Win_complete(w->win), "MPI_Win_complete");
        if (exposed)
            ok(NULL, MPI_Win_wait(w->win), "MPI_Win_wait");
        break;
    case SYNC_LOCK:
        ok(NULL, MPI_Win_unlock(target, w->win), "MPI_Win_unlock");
        break;
    case SYNC_LOCK_SHARED_FLUSH:
        ok(NULL, MPI_Win_flush(target, w->win), "MPI_Win_flush");
        ok(NULL, MPI_Win_unlock(target, w->win), "MPI_Win_unlock");
        break;
    case SYNC_LOCK_FLUSH_LOCAL:
        ok(NULL, MPI_Win_flush_local(target, w->win), "MPI_Win_flush_local");
        ok(NULL, MPI_Win_unlock(target, w->win), "MPI_Win_unlock");
        break;
    case SYNC_LOCK_ALL_FLUSH_ALL:
        ok(NULL, MPI_Win_flush_all(w->win), "MPI_Win_flush_all");
        ok(NULL, MPI_Win_unlock_all(w->win), "MPI_Win_unlock_all");
        break;
    case SYNC_LOCK_ALL_FLUSH:
        ok(NULL, MPI_Win_flush(target, w->win), "MPI_Win_flush");
        ok(NULL, MPI_Win_unlock_all(w->win), "MPI_Win_unlock_all");
        break;
    case SYNC_LOCK_ALL_FLUSH_LOCAL_ALL:
        ok(NULL, MPI_Win_flush_local_all(w->win), "MPI_Win_flush_local_all");
        ok(NULL, MPI_Win_unlock_all(w->win), "MPI_Win_unlock_all");
        break;
    default: /* win_sync: stays open; the target reads inside its own epoch */
        ok(NULL, MPI_Win_flush(target, w->win), "MPI_Win_flush");
        break;
    }
}

/* The target's own view of its memory, in an epoch of its own: an exclusive
 * lock on itself, or (win_sync) MPI_Win_sync in the lock_all epoch still open. */
static void target_view_open(window_t *w, int sync) {
    MPI_Barrier(MPI_COMM_WORLD); /* every origin's epoch is over */
    if (SYNC_LOCK_ALL_WIN_SYNC == sync)
        ok(NULL, MPI_Win_sync(w->win), "MPI_Win_sync");
    else
        ok(NULL, MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win), "MPI_Win_lock (self)");
}
static void target_view_close(window_t *w, int sync) {
    if (SYNC_LOCK_ALL_WIN_SYNC == sync) {
        ok(NULL, MPI_Win_sync(w->win), "MPI_Win_sync");
        MPI_Barrier(MPI_COMM_WORLD);
        ok(NULL, MPI_Win_unlock_all(w->win), "MPI_Win_unlock_all");
    } else {
        ok(NULL, MPI_Win_unlock(rank, w->win), "MPI_Win_unlock (self)");
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- one combination ---- */
static unsigned char *origin_buf, *result_buf; /* as large as the window's data */

static int elems_of(const combo_t *c) { /* elements the target holds for it */
    return c->op == OP_FOP || c->op == OP_CAS ? 1 : c->count;
}
static size_t bytes_of(const combo_t *c) { /* with the vector's gaps, 8-byte aligned */
    const size_t b = (size_t) c->count * elem_bytes(c->type) * (size_t) stride_of(c->type);
    return (b + 7) / 8 * 8;
}

/* Expected value at the target of element i after every operation of the
 * combination (origins: the ranks that operated on us). */
static long expect_target(const combo_t *c, int me, int i, int seed, const int *origins, int n,
                          int *loc) {
    long v = base_val(me, i, seed);
    *loc = me;
    switch (c->op) {
    case OP_GET:
    case OP_RGET:
        return v;
    case OP_PUT:
    case OP_RPUT:
        *loc = origins[0];
        return origin_val(origins[0], i, seed);
    case OP_CAS:
        if (RED_CAS_MISS == c->red)
            return v;
        *loc = origins[0];
        return origin_val(origins[0], i, seed);
    default:
        break;
    }
    switch (c->red) {
    case RED_NO_OP:
        return v;
    case RED_REPLACE:
        *loc = origins[0];
        return origin_val(origins[0], i, seed);
    default:
        break;
    }
    for (int k = 0; k < n; k++) {
        const long o = origin_val(origins[k], i, seed);
        if (T_2INT == c->type) { /* MAXLOC: the larger value, the smaller location on a tie */
            if (o > v || (o == v && origins[k] < *loc)) {
                v = o;
                *loc = origins[k];
            }
        } else {
            v += o;
        }
    }
    return v;
}

static void issue(window_t *w, slot_t *s, int target) {
    const combo_t *c = &s->c;
    const MPI_Datatype bt = basic_type(c->type);
    const MPI_Aint disp = w->disp0[target] + (MPI_Aint) s->off;
    const MPI_Datatype tt = T_VEC == c->type ? s->vec : bt;
    const int tn = T_VEC == c->type ? 1 : c->count;
    const MPI_Op red = RED_NO_OP == c->red     ? MPI_NO_OP
                       : RED_REPLACE == c->red ? MPI_REPLACE
                       : T_2INT == c->type     ? MPI_MAXLOC
                                               : MPI_SUM;
    unsigned char *in = origin_buf + s->off, *out = result_buf + s->off;
    for (int i = 0; i < c->count; i++)
        put_elem(in, c->type, i, 1, origin_val(rank, i, s->seed), rank);
    memset(out, 0xee, (size_t) c->count * elem_bytes(c->type));
    s->req = MPI_REQUEST_NULL;
    switch (c->op) {
    case OP_PUT:
        ok(s, MPI_Put(in, c->count, bt, target, disp, tn, tt, w->win), "MPI_Put");
        break;
    case OP_RPUT:
        ok(s, MPI_Rput(in, c->count, bt, target, disp, tn, tt, w->win, &s->req), "MPI_Rput");
        break;
    case OP_GET:
        ok(s, MPI_Get(out, c->count, bt, target, disp, tn, tt, w->win), "MPI_Get");
        break;
    case OP_RGET:
        ok(s, MPI_Rget(out, c->count, bt, target, disp, tn, tt, w->win, &s->req), "MPI_Rget");
        break;
    case OP_ACC:
        ok(s, MPI_Accumulate(in, c->count, bt, target, disp, tn, tt, red, w->win),
           "MPI_Accumulate");
        break;
    case OP_RACC:
        ok(s, MPI_Raccumulate(in, c->count, bt, target, disp, tn, tt, red, w->win, &s->req),
           "MPI_Raccumulate");
        break;
    case OP_GET_ACC:
        ok(s,
           MPI_Get_accumulate(in, c->count, bt, out, c->count, bt, target, disp, tn, tt, red,
                              w->win),
           "MPI_Get_accumulate");
        break;
    case OP_RGET_ACC:
        ok(s,
           MPI_Rget_accumulate(in, c->count, bt, out, c->count, bt, target, disp, tn, tt, red,
                               w->win, &s->req),
           "MPI_Rget_accumulate");
        break;
    case OP_FOP:
        ok(s, MPI_Fetch_and_op(in, out, bt, target, disp, red, w->win), "MPI_Fetch_and_op");
        break;
    default: { /* CAS: compare with what the target holds (or something else) */
        unsigned char compare[16];
        put_elem(compare, c->type, 0, 1, base_val(target, 0, s->seed) + (RED_CAS_MISS == c->red),
                 target);
        ok(s, MPI_Compare_and_swap(in, compare, out, bt, target, disp, w->win),
           "MPI_Compare_and_swap");
        break;
    }
    }
}

/* The fetched results of a rank that operated on `target`: the target's
 * elements before (alone, the ring) or before some of the others (all_to_0). */
static void check_fetched(slot_t *s, int target) {
    const combo_t *c = &s->c;
    const int fetches = c->op == OP_GET || c->op == OP_RGET || c->op == OP_GET_ACC ||
                        c->op == OP_RGET_ACC || c->op == OP_FOP || c->op == OP_CAS;
    if (!fetches)
        return;
    const unsigned char *out = result_buf + s->off;
    for (int i = 0; i < c->count && !s->failed; i++) {
        int loc;
        const long got = get_elem(out, c->type, i, 1, &loc);
        const long before = base_val(target, i, s->seed);
        if (PAT_RING == c->pattern || RED_NO_OP == c->red || c->op == OP_GET || c->op == OP_RGET) {
            if (got != before || (T_2INT == c->type && loc != target))
                bad(s, "fetched element %d is %ld (loc %d), expected %ld (loc %d)", i, got, loc,
                    before, target);
        } else if (T_2INT != c->type && (got < before || got > before + 1000000)) {
            bad(s, "fetched element %d is %ld, not the target's %ld plus other origins' sums", i,
                got, before);
        }
    }
}

static void check_target(window_t *w, slot_t *s, const int *origins, int n) {
    const combo_t *c = &s->c;
    const int stride = stride_of(c->type);
    const unsigned char *mem = w->base + s->off;
    for (int i = 0; i < elems_of(c) && !s->failed; i++) {
        int want_loc, loc;
        const long want = expect_target(c, rank, i, s->seed, origins, n, &want_loc);
        const long got = get_elem(mem, c->type, i, stride, &loc);
        if (got != want || (T_2INT == c->type && loc != want_loc))
            bad(s, "target element %d is %ld (loc %d), expected %ld (loc %d)", i, got, loc, want,
                want_loc);
        if (T_VEC == c->type && ((const int *) mem)[2 * i + 1] != -7)
            bad(s, "the vector's gap after element %d was written (%d)", i,
                ((const int *) mem)[2 * i + 1]);
    }
}

/* dynamic: memory attached and detached beside the data while epochs run. */
static void churn_attachments(window_t *w) {
    if (FLAVOUR_DYNAMIC != w->flavour)
        return;
    const int k = w->scratch_on;
    if (k >= 0)
        ok(NULL, MPI_Win_detach(w->win, w->scratch[k]), "MPI_Win_detach (scratch)");
    w->scratch_on = (k + 1) % 2;
    ok(NULL, MPI_Win_attach(w->win, w->scratch[w->scratch_on], 4096), "MPI_Win_attach (scratch)");
}

/* Whether MPI allows the combination (and whether it is worth generating). */
static int allowed(const combo_t *c) {
    const int request = c->op >= OP_RPUT;
    const int accumulating = c->op == OP_ACC || c->op == OP_GET_ACC || c->op == OP_FOP ||
                             c->op == OP_RACC || c->op == OP_RGET_ACC;
    if (request && !is_passive(c->sync))
        return 0; /* request operations only in passive-target epochs */
    if (c->op == OP_FOP || c->op == OP_CAS) {
        if (c->count != 1 || T_VEC == c->type)
            return 0; /* one predefined element */
        if (c->op == OP_CAS && (T_DOUBLE == c->type || T_2INT == c->type))
            return 0; /* integers only */
    }
    /* Reductions: accumulating operations take sum/maxloc, replace and
     * no_op (not accumulate); compare_and_swap hits or misses; the rest none. */
    if (accumulating) {
        if (RED_CAS_MISS == c->red)
            return 0;
        if (RED_NO_OP == c->red && (c->op == OP_ACC || c->op == OP_RACC))
            return 0;
    } else if (c->op == OP_CAS) {
        if (RED_SUM != c->red && RED_CAS_MISS != c->red)
            return 0;
    } else if (RED_SUM != c->red) {
        return 0;
    }
    /* Every rank into rank 0 at once: the accumulating operations (sum,
     * maxloc, no_op), where concurrency is defined; at least 3 ranks. */
    if (PAT_ALL_TO_0 == c->pattern && (!accumulating || RED_REPLACE == c->red || size < 3))
        return 0;
    /* From 3 ranks on, what is new is concurrency and the groups: the types
     * (covered on 1 and 2 ranks) shrink to the 32- and 64-bit integers. */
    if (size >= 3 && T_INT != c->type && T_LONG != c->type)
        return 0;
    /* The large count for the bulk operations on MPI_INT, MPI_DOUBLE and the vector. */
    if (MAX_COUNT == c->count && (c->op == OP_FOP || c->op == OP_CAS ||
                                  (T_INT != c->type && T_DOUBLE != c->type && T_VEC != c->type)))
        return 0;
    return 1;
}

/* Every allowed combination of one synchronisation and pattern, laid out
 * one after another in the window (each on its own bytes): all issued in
 * one epoch, then checked one by one. */
static int batch_of(int sync, int pattern, slot_t *slots, size_t *bytes) {
    combo_t c = {.sync = sync, .pattern = pattern};
    int n = 0;
    size_t off = 0;
    for (c.op = 0; c.op < OPS; c.op++)
        for (c.red = 0; c.red < REDS; c.red++)
            for (c.type = 0; c.type < TYPES; c.type++)
                for (int k = 0; k < COUNTS; k++) {
                    c.count = counts[k];
                    if (!allowed(&c))
                        continue;
                    if (NULL != slots)
                        slots[n] = (slot_t){.c = c,
                                            .seed = n % 97,
                                            .off = off,
                                            .vec = MPI_DATATYPE_NULL,
                                            .req = MPI_REQUEST_NULL};
                    off += bytes_of(&c);
                    n++;
                }
    *bytes = off;
    return n;
}

/* The window's data bytes: the largest batch. */
static size_t matrix_bytes(void) {
    size_t most = 0, b;
    for (int sync = 0; sync < SYNCS; sync++)
        for (int p = 0; p < PATS; p++) {
            batch_of(sync, p, NULL, &b);
            most = b > most ? b : most;
        }
    return most;
}

static void run_batch(window_t *w, int sync, int pattern) {
    size_t bytes;
    const int n = batch_of(sync, pattern, NULL, &bytes);
    if (0 == n)
        return;
    slot_t *slots = calloc((size_t) n, sizeof(*slots));
    int *mine = calloc((size_t) n, sizeof(int)), *all = calloc((size_t) n, sizeof(int));
    if (NULL == slots || NULL == mine || NULL == all)
        FAIL("out of memory");
    batch_of(sync, pattern, slots, &bytes);
    /* The targets' memory, set in an epoch of their own. */
    ok(NULL, MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win), "MPI_Win_lock (self)");
    for (int k = 0; k < n; k++) {
        const combo_t *c = &slots[k].c;
        for (int i = 0; i < elems_of(c); i++) {
            put_elem(w->base + slots[k].off, c->type, i, stride_of(c->type),
                     base_val(rank, i, slots[k].seed), rank);
            if (T_VEC == c->type)
                ((int *) (w->base + slots[k].off))[2 * i + 1] = -7; /* the gap: must stay */
        }
        if (T_VEC == c->type) {
            MPI_Type_vector(c->count, 1, 2, MPI_INT, &slots[k].vec);
            MPI_Type_commit(&slots[k].vec);
        }
    }
    ok(NULL, MPI_Win_unlock(rank, w->win), "MPI_Win_unlock (self)");
    MPI_Barrier(MPI_COMM_WORLD);

    /* Who operates on whom; PSCW: we expose to our origin(s). */
    int origins[64], norigins = 0, target, exposure = -2;
    if (PAT_RING == pattern) {
        target = (rank + 1) % size;
        origins[norigins++] = (rank + size - 1) % size;
        exposure = origins[0];
    } else {
        target = 0;
        if (0 == rank) {
            for (int r = 0; r < size; r++)
                origins[norigins++] = r;
            exposure = -1;
        }
    }
    epoch_open(w, sync, target, SYNC_PSCW == sync ? exposure : -2);
    for (int k = 0; k < n; k++) {
        issue(w, &slots[k], target);
        if (k % 64 == 32 && (uses_lock_all(sync) || SYNC_LOCK_SHARED_FLUSH == sync))
            churn_attachments(w); /* while the epochs on us may still run */
    }
    epoch_close(w, sync, target, SYNC_PSCW == sync && -2 != exposure, slots, n);
    for (int k = 0; k < n; k++)
        check_fetched(&slots[k], target);
    target_view_open(w, sync);
    if (norigins > 0)
        for (int k = 0; k < n; k++)
            check_target(w, &slots[k], origins, norigins);
    target_view_close(w, sync);
    for (int k = 0; k < n; k++) {
        mine[k] = slots[k].failed;
        if (MPI_DATATYPE_NULL != slots[k].vec)
            MPI_Type_free(&slots[k].vec);
    }
    MPI_Allreduce(mine, all, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (int k = 0; k < n; k++)
        combos_failed += all[k];
    combos_run += n;
    free(slots);
    free(mine);
    free(all);
}

static void run_matrix(window_t *w, const char *memory) {
    batch_memory = memory;
    for (int sync = 0; sync < SYNCS; sync++)
        for (int pattern = 0; pattern < PATS; pattern++)
            run_batch(w, sync, pattern);
}

/* ---- window life ---- */
enum { MEM_MALLOC, MEM_ALLOC_MEM };

static void *mem_get(int how, size_t n) {
    void *p = NULL;
    if (MEM_MALLOC == how)
        p = malloc(n);
    else if (MPI_SUCCESS != MPI_Alloc_mem((MPI_Aint) n, MPI_INFO_NULL, &p))
        p = NULL;
    if (NULL == p)
        FAIL("out of memory (%zu bytes)", n);
    return p;
}
static void mem_put(int how, void *p) {
    if (MEM_MALLOC == how)
        free(p);
    else
        MPI_Free_mem(p);
}

static void exchange_disp(window_t *w, MPI_Aint mine) {
    w->disp0 = malloc(sizeof(MPI_Aint) * (size_t) size);
    MPI_Allgather(&mine, 1, MPI_AINT, w->disp0, 1, MPI_AINT, MPI_COMM_WORLD);
}

/* create and dynamic: malloc'd memory given back before MPI_Win_free, then
 * MPI_Alloc_mem'd memory after it. */
static void run_over_own_memory(int flavour) {
    static const char *const names[] = {"malloc'd, given back before MPI_Win_free",
                                        "MPI_Alloc_mem'd, given back after MPI_Win_free"};
    /* From 3 ranks on, the malloc'd window only. */
    for (int how = MEM_MALLOC; how <= (size >= 3 ? MEM_MALLOC : MEM_ALLOC_MEM); how++) {
        window_t w = {.flavour = flavour, .scratch_on = -1};
        w.base = mem_get(how, win_bytes);
        memset(w.base, 0, win_bytes);
        if (FLAVOUR_CREATE == flavour) {
            ok(NULL, MPI_Win_create(w.base, win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w.win),
               "MPI_Win_create");
            exchange_disp(&w, 0);
        } else {
            ok(NULL, MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w.win),
               "MPI_Win_create_dynamic");
            ok(NULL, MPI_Win_attach(w.win, w.base, win_bytes), "MPI_Win_attach");
            w.scratch[0] = mem_get(how, 4096);
            w.scratch[1] = mem_get(how, 4096);
            MPI_Aint mine;
            MPI_Get_address(w.base, &mine);
            exchange_disp(&w, mine);
        }
        MPI_Win_set_errhandler(w.win, MPI_ERRORS_RETURN);
        run_matrix(&w, names[how]);
        if (FLAVOUR_DYNAMIC == flavour) {
            if (w.scratch_on >= 0)
                ok(NULL, MPI_Win_detach(w.win, w.scratch[w.scratch_on]),
                   "MPI_Win_detach (scratch)");
            ok(NULL, MPI_Win_detach(w.win, w.base), "MPI_Win_detach");
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (MEM_MALLOC == how) { /* the last epoch is over: give it back first */
            mem_put(how, w.base);
            if (FLAVOUR_DYNAMIC == flavour) {
                mem_put(how, w.scratch[0]);
                mem_put(how, w.scratch[1]);
            }
        }
        ok(NULL, MPI_Win_free(&w.win), "MPI_Win_free");
        if (MEM_ALLOC_MEM == how) {
            mem_put(how, w.base);
            if (FLAVOUR_DYNAMIC == flavour) {
                mem_put(how, w.scratch[0]);
                mem_put(how, w.scratch[1]);
            }
        }
        free(w.disp0);
    }
}

static void run_allocate(void) {
    window_t w = {.flavour = FLAVOUR_ALLOCATE, .scratch_on = -1};
    ok(NULL, MPI_Win_allocate(win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w.base, &w.win),
       "MPI_Win_allocate");
    MPI_Win_set_errhandler(w.win, MPI_ERRORS_RETURN);
    exchange_disp(&w, 0);
    run_matrix(&w, "MPI_Win_allocate'd");
    ok(NULL, MPI_Win_free(&w.win), "MPI_Win_free");
    free(w.disp0);
}

/* allocate_shared, then MPI_Win_create over that memory; the shared window
 * is freed first. */
static void run_shared(void) {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_size = 0;
    MPI_Comm_size(node, &node_size);
    if (node_size != size)
        FAIL("shared: the ranks span several nodes");
    window_t sw = {.flavour = FLAVOUR_SHARED, .scratch_on = -1};
    ok(NULL, MPI_Win_allocate_shared(win_bytes, 1, MPI_INFO_NULL, node, &sw.base, &sw.win),
       "MPI_Win_allocate_shared");
    MPI_Win_set_errhandler(sw.win, MPI_ERRORS_RETURN);
    exchange_disp(&sw, 0);
    run_matrix(&sw, "MPI_Win_allocate_shared'd");

    window_t cw = {.flavour = FLAVOUR_CREATE, .base = sw.base, .scratch_on = -1};
    ok(NULL, MPI_Win_create(cw.base, win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &cw.win),
       "MPI_Win_create over shared memory");
    MPI_Win_set_errhandler(cw.win, MPI_ERRORS_RETURN);
    exchange_disp(&cw, 0);
    run_matrix(&cw, "shared memory under MPI_Win_create, the shared window freed first");
    MPI_Barrier(MPI_COMM_WORLD);
    ok(NULL, MPI_Win_free(&sw.win), "MPI_Win_free (shared window)");
    ok(NULL, MPI_Win_free(&cw.win), "MPI_Win_free (the window over it)");
    free(sw.disp0);
    free(cw.disp0);
    MPI_Comm_free(&node);
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 64)
        FAIL("at most 64 ranks");
    win_bytes = matrix_bytes();
    origin_buf = malloc(win_bytes);
    result_buf = malloc(win_bytes);
    if (NULL == origin_buf || NULL == result_buf)
        FAIL("out of memory");
    const double t0 = MPI_Wtime();
    if (!strcmp(name, "create"))
        run_over_own_memory(FLAVOUR_CREATE);
    else if (!strcmp(name, "dynamic"))
        run_over_own_memory(FLAVOUR_DYNAMIC);
    else if (!strcmp(name, "allocate"))
        run_allocate();
    else if (!strcmp(name, "shared"))
        run_shared();
    else {
        if (rank == 0)
            fprintf(stderr, "usage: rma_conformance create|allocate|shared|dynamic\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %ld combinations, %ld failed on %d ranks in %.1f s (%zu bytes of window)\n",
               name, combos_run, combos_failed + epoch_errors, size, MPI_Wtime() - t0, win_bytes);
    free(origin_buf);
    free(result_buf);
    MPI_Finalize();
    return 0;
}
