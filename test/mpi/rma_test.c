/*
 * rma_test.c - MPI one-sided communication over btl tca (osc rdma on its
 * puts, emulated gets and atomics), one sub-test per invocation:
 * rma_test <name>.  Every test checks the data it moved and aborts with a
 * message naming the first wrong value.  Runs under test/mpi/run_case.sh.
 *   sync   every window kind (MPI_Win_create, MPI_Win_allocate, dynamic; "sync
 *          nodynamic": not dynamic, for Open MPI 4.1.4 across hosts, whose osc rdma
 *          deadlocks in its own lookup of a dynamic window's regions there) under
 *          every synchronisation (fence, post-start-complete-wait, lock, lock_all
 *          with flush): put, get, accumulate, fetch-and-op, compare-and-swap,
 *          from 8 B to 1 MiB, each rank on its right neighbour
 *   many   every other rank into rank 0 at once: fetch-and-op tickets (each
 *          value handed out exactly once: the atomics are atomic), accumulates,
 *          puts into disjoint parts
 *   busy   rank 0 computes without calling MPI while the others run lock
 *          epochs on its window: it must see every epoch end before it
 *          calls MPI again (passive-target progress, the progress thread's
 *          job)
 *   errors accesses past the window's end and into a dynamic window's
 *          unattached memory: an MPI error each, nothing written outside
 * The osc component that ran is printed (the cases check it).
 */
#include <mpi.h>

#include "../common/compute.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define TEST_RANK rank
#include "../common/mpi_fail.h"
#include "../common/byte_pattern.h"

/* ---- a window of any kind: data bytes, then the scalars ---- */
enum { KIND_CREATE, KIND_ALLOCATE, KIND_DYNAMIC, KINDS };
static const char *const kind_names[] = {"MPI_Win_create", "MPI_Win_allocate", "dynamic"};
#define ACC_INTS 16
typedef struct {
    MPI_Win win;
    int kind;
    unsigned char *base; /* our window memory */
    size_t data;         /* bytes of data before the scalars */
    MPI_Aint *disp0;     /* per rank: the displacement of its window's first byte */
} window_t;
typedef struct { /* after the data: accumulate target, counter, compare-and-swap word */
    int acc[ACC_INTS];
    long counter;
    long cas;
} scalars_t;

static size_t window_bytes(size_t data) {
    return data + sizeof(scalars_t);
}
static scalars_t *scalars(const window_t *w) {
    return (scalars_t *) (w->base + w->data);
}
static MPI_Aint disp_of(const window_t *w, int target, size_t offset) {
    return w->disp0[target] + (MPI_Aint) offset;
}

static void window_open(window_t *w, int kind, size_t data) {
    const size_t bytes = window_bytes(data);
    w->kind = kind;
    w->data = data;
    w->disp0 = xmalloc(sizeof(MPI_Aint) * (size_t) size);
    MPI_Aint mine = 0;
    switch (kind) {
    case KIND_CREATE:
        w->base = xmalloc(bytes);
        MPI_Win_create(w->base, (MPI_Aint) bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
        break;
    case KIND_ALLOCATE:
        MPI_Win_allocate((MPI_Aint) bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->base, &w->win);
        break;
    default:
        w->base = xmalloc(bytes);
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
        MPI_Win_attach(w->win, w->base, (MPI_Aint) bytes);
        MPI_Get_address(w->base, &mine);
        break;
    }
    MPI_Allgather(&mine, 1, MPI_AINT, w->disp0, 1, MPI_AINT, MPI_COMM_WORLD);
}

static void window_close(window_t *w) {
    if (KIND_DYNAMIC == w->kind)
        MPI_Win_detach(w->win, w->base);
    MPI_Win_free(&w->win);
    if (KIND_ALLOCATE != w->kind)
        free(w->base);
    free(w->disp0);
}

/* Our own window memory, set while no epoch can touch it. */
static void window_reset(window_t *w) {
    memset(w->base, 0, w->data);
    scalars_t *s = scalars(w);
    for (int i = 0; i < ACC_INTS; i++)
        s->acc[i] = rank * 1000 + i;
    s->counter = 1000;
    s->cas = 7;
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- sync: each rank writes into its right neighbour, reads it back ---- */
enum { SYNC_FENCE, SYNC_PSCW, SYNC_LOCK, SYNC_LOCK_ALL, SYNCS };
static const char *const sync_names[] = {"fence", "post-start-complete-wait", "lock", "lock_all"};

static void epoch_begin(window_t *w, int mode, int target, int origin) {
    MPI_Group world, to, from;
    switch (mode) {
    case SYNC_FENCE:
        MPI_Win_fence(0, w->win);
        break;
    case SYNC_PSCW:
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_incl(world, 1, &origin, &from);
        MPI_Group_incl(world, 1, &target, &to);
        MPI_Win_post(from, 0, w->win);
        MPI_Win_start(to, 0, w->win);
        MPI_Group_free(&from);
        MPI_Group_free(&to);
        MPI_Group_free(&world);
        break;
    case SYNC_LOCK:
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, w->win);
        break;
    default:
        MPI_Win_lock_all(0, w->win);
        break;
    }
}

static void epoch_end(window_t *w, int mode, int target) {
    switch (mode) {
    case SYNC_FENCE:
        MPI_Win_fence(0, w->win);
        break;
    case SYNC_PSCW:
        MPI_Win_complete(w->win);
        MPI_Win_wait(w->win);
        break;
    case SYNC_LOCK:
        MPI_Win_unlock(target, w->win);
        break;
    default:
        MPI_Win_flush(target, w->win);
        MPI_Win_unlock_all(w->win);
        break;
    }
    MPI_Barrier(MPI_COMM_WORLD); /* the target's memory is final for its own checks */
}

static void sync_round(window_t *w, int mode, size_t n, unsigned seed) {
    const int target = (rank + 1) % size, origin = (rank + size - 1) % size;
    char what[160];
    snprintf(what, sizeof(what), "%s, %s, %zu bytes", kind_names[w->kind], sync_names[mode], n);
    unsigned char *out = xmalloc(n), *in = xmalloc(n);
    fill(out, n, seed + (unsigned) rank);
    memset(in, 0, n);
    int acc[ACC_INTS];
    for (int i = 0; i < ACC_INTS; i++)
        acc[i] = rank + 1 + i;
    long add = 5, fetched = -1, swap_in = 100 + rank, compare = 7, swapped = -1;
    window_reset(w);

    /* Epoch 1: put, accumulate, fetch-and-op, compare-and-swap */
    epoch_begin(w, mode, target, origin);
    MPI_Put(out, (int) n, MPI_BYTE, target, disp_of(w, target, 0), (int) n, MPI_BYTE, w->win);
    MPI_Accumulate(acc, ACC_INTS, MPI_INT, target, disp_of(w, target, w->data), ACC_INTS, MPI_INT,
                   MPI_SUM, w->win);
    MPI_Fetch_and_op(&add, &fetched, MPI_LONG, target,
                     disp_of(w, target, w->data + offsetof(scalars_t, counter)), MPI_SUM, w->win);
    MPI_Compare_and_swap(&swap_in, &compare, &swapped, MPI_LONG, target,
                         disp_of(w, target, w->data + offsetof(scalars_t, cas)), w->win);
    epoch_end(w, mode, target);

    check(w->base, n, seed + (unsigned) origin, what);
    const scalars_t *s = scalars(w);
    for (int i = 0; i < ACC_INTS; i++)
        if (s->acc[i] != rank * 1000 + i + origin + 1 + i)
            FAIL("%s: accumulated int %d is %d, expected %d", what, i, s->acc[i],
                 rank * 1000 + i + origin + 1 + i);
    if (s->counter != 1005 || fetched != 1000)
        FAIL("%s: fetch-and-op: counter %ld (expected 1005), fetched %ld (expected 1000)", what,
             s->counter, fetched);
    if (s->cas != 100 + origin || swapped != 7)
        FAIL("%s: compare-and-swap: word %ld (expected %d), old %ld (expected 7)", what, s->cas,
             100 + origin, swapped);

    /* Epoch 2: get back what we put */
    epoch_begin(w, mode, target, origin);
    MPI_Get(in, (int) n, MPI_BYTE, target, disp_of(w, target, 0), (int) n, MPI_BYTE, w->win);
    epoch_end(w, mode, target);
    check(in, n, seed + (unsigned) rank, what);
    free(out);
    free(in);
}

static int no_dynamic; /* "sync nodynamic" */

static void test_sync(void) {
    /* Inline answers, an owner's put into a destination btl tca registers
     * itself (odd sizes: osc rdma used its own buffer up to 32 KiB), 1 MiB. */
    static const size_t sizes[] = {8, 4096, 12345, 40001, 100000, 1 << 20};
    const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
    for (int kind = 0; kind < (no_dynamic ? KIND_DYNAMIC : KINDS); kind++) {
        window_t w;
        window_open(&w, kind, sizes[nsizes - 1]);
        for (int mode = 0; mode < SYNCS; mode++)
            for (size_t i = 0; i < nsizes; i++)
                sync_round(&w, mode, sizes[i], (unsigned) (kind * 31 + mode * 7 + (int) i));
        window_close(&w);
    }
}

/* ---- many: every other rank into rank 0 at once ---- */
static void test_many(void) {
    enum { ROUNDS = 200, PIECE = 4096 };
    window_t w;
    window_open(&w, KIND_CREATE, (size_t) PIECE * (size_t) size);
    window_reset(&w);
    long *tickets = xmalloc(sizeof(long) * ROUNDS);
    unsigned char *piece = xmalloc(PIECE);
    if (rank != 0) {
        int one[ACC_INTS];
        for (int i = 0; i < ACC_INTS; i++)
            one[i] = 1;
        const long add = 1;
        for (int r = 0; r < ROUNDS; r++) {
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win);
            MPI_Fetch_and_op(&add, &tickets[r], MPI_LONG, 0,
                             disp_of(&w, 0, w.data + offsetof(scalars_t, counter)), MPI_SUM, w.win);
            MPI_Accumulate(one, ACC_INTS, MPI_INT, 0, disp_of(&w, 0, w.data), ACC_INTS, MPI_INT,
                           MPI_SUM, w.win);
            MPI_Win_unlock(0, w.win);
        }
        fill(piece, PIECE, 77u + (unsigned) rank);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w.win);
        MPI_Put(piece, PIECE, MPI_BYTE, 0, disp_of(&w, 0, (size_t) PIECE * (size_t) rank), PIECE,
                MPI_BYTE, w.win);
        MPI_Win_unlock(0, w.win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* Every ticket from 1000 on handed out exactly once. */
    const int total = ROUNDS * (size - 1);
    long *all = rank == 0 ? xmalloc(sizeof(long) * ROUNDS * (size_t) size) : NULL;
    MPI_Gather(tickets, ROUNDS, MPI_LONG, all, ROUNDS, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        const scalars_t *s = scalars(&w);
        if (s->counter != 1000 + total)
            FAIL("many: counter %ld after %d fetch-and-ops, expected %d", s->counter, total,
                 1000 + total);
        unsigned char *seen = calloc((size_t) total, 1);
        for (int i = ROUNDS; i < ROUNDS * size; i++) {
            const long t = all[i] - 1000;
            if (t < 0 || t >= total || seen[t]++)
                FAIL("many: ticket %ld handed out twice or out of range (rank %d, round %d)",
                     all[i], i / ROUNDS, i % ROUNDS);
        }
        for (int i = 0; i < ACC_INTS; i++)
            if (s->acc[i] != i + total)
                FAIL("many: accumulated int %d is %d, expected %d", i, s->acc[i], i + total);
        for (int r = 1; r < size; r++)
            check(w.base + (size_t) PIECE * (size_t) r, PIECE, 77u + (unsigned) r, "many: put");
        free(seen);
        free(all);
    }
    free(tickets);
    free(piece);
    window_close(&w);
}

/* ---- busy: passive target while the target computes ---- */
/* Decided by events, not by a time limit: rank 0 computes without an MPI
 * call until it sees, in its own window memory, that every other rank has
 * finished its lock epoch (each ends with a second epoch that adds 1 to the
 * compare-and-swap word).  Only a progress engine that serves the target
 * while it computes can make that happen; without one the word never moves
 * and rank 0 gives up after give_up_s (a hang detector: far beyond what any
 * load makes of epochs that take milliseconds). */
static void test_busy(void) {
    const double give_up_s = 120.0;
    enum { N = 65536 };
    window_t w;
    window_open(&w, KIND_CREATE, (size_t) N * (size_t) size);
    window_reset(&w);
    const long cas_start = scalars(&w)->cas, one = 1;
    if (rank == 0) {
        const double t0 = compute_now(), deadline = t0 + give_up_s;
        long done = 0;
        /* no MPI call in here */
        while ((done = __atomic_load_n(&scalars(&w)->cas, __ATOMIC_ACQUIRE) - cas_start) <
                   size - 1 &&
               compute_now() < deadline)
            compute_for(0.001);
        printf("rank %d: computed %.3f s without MPI calls while %ld of %d epochs ended\n", rank,
               compute_now() - t0, done, size - 1);
        if (done < size - 1)
            FAIL("busy: %ld of %d lock epochs ended in %.0f s while the target computed: they wait "
                 "for it to call MPI",
                 done, size - 1, give_up_s);
    } else {
        unsigned char *out = xmalloc(N), *in = xmalloc(N);
        fill(out, N, 5u + (unsigned) rank);
        long old = -1, ignored = 0;
        const double t0 = MPI_Wtime();
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w.win);
        MPI_Put(out, N, MPI_BYTE, 0, disp_of(&w, 0, (size_t) N * (size_t) rank), N, MPI_BYTE,
                w.win);
        MPI_Fetch_and_op(&one, &old, MPI_LONG, 0,
                         disp_of(&w, 0, w.data + offsetof(scalars_t, counter)), MPI_SUM, w.win);
        MPI_Win_flush(0, w.win);
        MPI_Get(in, N, MPI_BYTE, 0, disp_of(&w, 0, (size_t) N * (size_t) rank), N, MPI_BYTE, w.win);
        MPI_Win_unlock(0, w.win);
        const double took = MPI_Wtime() - t0;
        check(in, N, 5u + (unsigned) rank, "busy: get after put");
        if (old < 1000 || old >= 1000 + size)
            FAIL("busy: fetched %ld", old);
        printf("rank %d: lock epoch on a computing target took %.3f s\n", rank, took);
        /* Tell the target this epoch is over (an atomic: the target reads the word as it lands). */
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win);
        MPI_Fetch_and_op(&one, &ignored, MPI_LONG, 0,
                         disp_of(&w, 0, w.data + offsetof(scalars_t, cas)), MPI_SUM, w.win);
        MPI_Win_unlock(0, w.win);
        free(out);
        free(in);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && scalars(&w)->counter != 1000 + size - 1)
        FAIL("busy: counter %ld, expected %d", scalars(&w)->counter, 1000 + size - 1);
    window_close(&w);
}

/* ---- errors: outside the window ---- */
static void expect_error(int rc, const char *what) {
    if (MPI_SUCCESS == rc)
        FAIL("errors: %s succeeded", what);
    char text[MPI_MAX_ERROR_STRING];
    int len = 0, cls = 0;
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, text, &len);
    if (rank == 1)
        printf("errors: %s: error class %d (%s)\n", what, cls, text);
}

static void test_errors(void) {
    /* osc rdma attaches whole pages: the unattached address is a page away. */
    enum { BYTES = 256, GUARD = 3 * 4096 };
    const unsigned char guard = 0xab;
    unsigned char *mem = NULL;
    if (0 != posix_memalign((void **) &mem, 4096, BYTES + GUARD))
        FAIL("out of memory");
    memset(mem, 0, BYTES);
    memset(mem + BYTES, guard, GUARD);
    MPI_Win win;
    MPI_Win_create(mem, BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    unsigned char buf[64];
    memset(buf, 0x5a, sizeof(buf));
    long one = 1, old = 0;
    if (rank == 1) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        expect_error(MPI_Put(buf, 64, MPI_BYTE, 0, BYTES - 32, 64, MPI_BYTE, win),
                     "put across the window's end");
        expect_error(MPI_Put(buf, 8, MPI_BYTE, 0, BYTES + 64, 8, MPI_BYTE, win),
                     "put past the window's end");
        expect_error(MPI_Get(buf, 64, MPI_BYTE, 0, BYTES - 8, 64, MPI_BYTE, win),
                     "get across the window's end");
        expect_error(MPI_Accumulate(buf, 16, MPI_INT, 0, BYTES - 16, 16, MPI_INT, MPI_SUM, win),
                     "accumulate across the window's end");
        expect_error(MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, BYTES, MPI_SUM, win),
                     "fetch-and-op just past the window's end");
        (void) MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < GUARD; i++)
        if (mem[BYTES + i] != guard)
            FAIL("errors: byte %d past the window's end was written (0x%02x)", i, mem[BYTES + i]);
    MPI_Win_free(&win);

    /* A dynamic window: memory that was never attached. */
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_attach(win, mem, BYTES);
    MPI_Aint addr = 0, addrs[2] = {0, 0};
    MPI_Get_address(mem + 2 * 4096, &addr); /* a page past the attached part */
    MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        int rc = MPI_Put(buf, 8, MPI_BYTE, 0, addrs[0], 8, MPI_BYTE, win);
        if (MPI_SUCCESS == rc)
            rc = MPI_Win_flush(0, win);
        expect_error(rc, "put into a dynamic window's unattached memory");
        (void) MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < GUARD; i++)
        if (mem[BYTES + i] != guard)
            FAIL("errors: byte %d past the attached memory was written (0x%02x)", i,
                 mem[BYTES + i]);
    MPI_Win_detach(win, mem);
    MPI_Win_free(&win);
    free(mem);
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "";
    int provided;
    no_dynamic = argc > 2 && !strcmp(argv[2], "nodynamic");
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static const struct {
        const char *name;
        void (*fn)(void);
        int min_ranks;
    } tests[] = {{"sync", test_sync, 2},
                 {"many", test_many, 3},
                 {"busy", test_busy, 2},
                 {"errors", test_errors, 2}};
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (strcmp(name, tests[i].name))
            continue;
        if (size < tests[i].min_ranks)
            FAIL("%s needs %d ranks", name, tests[i].min_ranks);
        const double t0 = MPI_Wtime();
        tests[i].fn();
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            printf("%s: passed on %d ranks in %.2f s\n", name, size, MPI_Wtime() - t0);
        MPI_Finalize();
        return 0;
    }
    if (rank == 0)
        fprintf(stderr, "unknown test '%s'\n", name);
    MPI_Finalize();
    return 2;
}
