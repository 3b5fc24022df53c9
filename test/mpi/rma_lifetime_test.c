/*
 * rma_lifetime_test.c - a window's memory belongs to the program: it may give
 * it back once its last epoch is over (before MPI_Win_free), free a shared
 * window whose memory another window also exposes, and grow a dynamic window
 * while other ranks work on it.  One sub-test per invocation:
 * rma_lifetime_test <name>.  Every value is checked; a wrong one aborts the
 * job naming it.  Runs under test/mpi/run_case.sh.
 *   free_early   a window over the program's memory (malloc'd, then
 *                MPI_Alloc_mem'd): epochs with a 4 MiB put and a 4 MiB
 *                MPI_Send inside (PSCW, then fence, then lock), the target
 *                gives the memory back, then MPI_Win_free; each rank also
 *                allocates again at once (the freed address is reused) and
 *                the next window's data must be right
 *   shared_first MPI_Win_allocate_shared memory exposed through MPI_Win_create
 *                as well: put, accumulate, get_accumulate, fetch-and-op and
 *                compare-and-swap through the second window, each followed by
 *                a flush and a load through the shared one; the shared window
 *                is freed first, then the other
 *   list         a linked list on a dynamic window: every rank MPI_Alloc_mems
 *                and attaches new elements and appends them at the tail with
 *                compare-and-swap, reading with MPI_Fetch_and_op (MPI_AINT,
 *                MPI_REPLACE and MPI_NO_OP), each operation in its own
 *                MPI_Win_lock(MPI_LOCK_SHARED, ..., MPI_MODE_NOCHECK) epoch;
 *                rank 0 walks the list: every element once, each rank's in order
 *   list_plain   the same with MPI_Get and MPI_Put (and flushes) instead of
 *                fetch-and-op
 *   late_small   (erroneous on purpose) rank 0 unmaps its window's memory and
 *                maps new memory at the same address; rank 1's later small
 *                put, fetch-and-op and compare-and-swap into the window must
 *                not touch the new memory (its registration ended with it)
 *   late_large   the same with a 64 KiB put: the job ends with btl tca's
 *                message (its put is refused, nothing written)
 */
#define _GNU_SOURCE /* MAP_FIXED_NOREPLACE */
#include <mpi.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int rank, size;

#define TEST_RANK rank
#include "../common/mpi_fail.h"
#include "../common/byte_pattern.h"

static void ok(int rc, const char *what) {
    if (MPI_SUCCESS != rc) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        FAIL("%s: %s", what, text);
    }
}

/* ---- free_early ---- */
enum { BIG = 4 << 20 };
enum { MEM_MALLOC, MEM_ALLOC_MEM };
static const char *const mem_names[] = {"malloc", "MPI_Alloc_mem"};
enum { EPOCH_PSCW, EPOCH_FENCE, EPOCH_LOCK, EPOCHS };
static const char *const epoch_names[] = {"post-start-complete-wait", "fence", "lock"};

static void *mem_get(int how, size_t n) {
    void *p = NULL;
    if (MEM_MALLOC == how)
        return xmalloc(n);
    ok(MPI_Alloc_mem((MPI_Aint) n, MPI_INFO_NULL, &p), "MPI_Alloc_mem");
    return p;
}
static void mem_put(int how, void *p) {
    if (MEM_MALLOC == how)
        free(p);
    else
        ok(MPI_Free_mem(p), "MPI_Free_mem");
}

/* Rank r puts 4 MiB into rank r+1's window and sends it 4 MiB, in one epoch. */
static void free_early_round(int how, int epoch, unsigned seed) {
    char what[160];
    snprintf(what, sizeof(what), "free_early (%s, %s)", mem_names[how], epoch_names[epoch]);
    const int target = (rank + 1) % size, origin = (rank + size - 1) % size;
    unsigned char *win_mem = mem_get(how, BIG);
    memset(win_mem, 0, BIG);
    unsigned char *out = xmalloc(BIG), *msg = xmalloc(BIG), *in = xmalloc(BIG);
    fill(out, BIG, seed + (unsigned) rank);
    fill(msg, BIG, seed + 100u + (unsigned) rank);
    MPI_Win win;
    ok(MPI_Win_create(win_mem, BIG, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win), "MPI_Win_create");
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Request reqs[2];
    MPI_Group world, to, from;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &origin, &from);
    MPI_Group_incl(world, 1, &target, &to);
    switch (epoch) {
    case EPOCH_PSCW:
        MPI_Win_post(from, 0, win);
        MPI_Win_start(to, 0, win);
        break;
    case EPOCH_FENCE:
        MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
        break;
    default:
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
        break;
    }
    MPI_Irecv(in, BIG, MPI_BYTE, origin, 7, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(msg, BIG, MPI_BYTE, target, 7, MPI_COMM_WORLD, &reqs[1]);
    ok(MPI_Put(out, BIG, MPI_BYTE, target, 0, BIG, MPI_BYTE, win), what);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    switch (epoch) {
    case EPOCH_PSCW:
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        break;
    case EPOCH_FENCE:
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        break;
    default:
        MPI_Win_unlock(target, win);
        MPI_Barrier(MPI_COMM_WORLD); /* every put into us is complete */
        break;
    }
    MPI_Group_free(&from);
    MPI_Group_free(&to);
    MPI_Group_free(&world);
    check(win_mem, BIG, seed + (unsigned) origin, what);
    check(in, BIG, seed + 100u + (unsigned) origin, what);
    /* The last epoch is over: the memory goes back before MPI_Win_free, and
     * what the program allocates next may sit where it was. */
    mem_put(how, win_mem);
    unsigned char *reuse = mem_get(how, BIG);
    fill(reuse, BIG, seed + 200u);
    ok(MPI_Win_free(&win), "MPI_Win_free after the memory was given back");
    check(reuse, BIG, seed + 200u, "memory allocated after the window's was given back");
    mem_put(how, reuse);
    free(out);
    free(msg);
    free(in);
}

static void test_free_early(void) {
    unsigned seed = 1;
    for (int how = MEM_MALLOC; how <= MEM_ALLOC_MEM; how++)
        for (int epoch = 0; epoch < EPOCHS; epoch++)
            free_early_round(how, epoch, seed++ * 17u);
}

/* ---- shared_first ---- */
typedef struct {
    long put_word;
    int acc[4];
    long gacc;
    long fop;
    long cas;
} shared_words_t;
enum { OP_PUT, OP_ACCUMULATE, OP_GET_ACCUMULATE, OP_FETCH_AND_OP, OP_COMPARE_AND_SWAP, OPS };
static const char *const op_names[] = {"put", "accumulate", "get_accumulate", "fetch-and-op",
                                       "compare-and-swap"};

static void shared_first_round(int op) {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    shared_words_t *mine = NULL;
    MPI_Win shared, win;
    ok(MPI_Win_allocate_shared(sizeof(shared_words_t), 1, MPI_INFO_NULL, node, &mine, &shared),
       "MPI_Win_allocate_shared");
    memset(mine, 0, sizeof(*mine));
    mine->cas = 7;
    ok(MPI_Win_create(mine, sizeof(*mine), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win),
       "MPI_Win_create over shared memory");
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    const int target = (rank + 1) % size;
    /* The target's words, read through the shared window (same node). */
    MPI_Aint bytes = 0;
    int unit = 0;
    shared_words_t *theirs = NULL;
    int node_target = -1;
    MPI_Group wg, ng;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(node, &ng);
    MPI_Group_translate_ranks(wg, 1, &target, ng, &node_target);
    MPI_Group_free(&wg);
    MPI_Group_free(&ng);
    if (MPI_UNDEFINED == node_target)
        FAIL("shared_first: rank %d is on another node", target);
    ok(MPI_Win_shared_query(shared, node_target, &bytes, &unit, &theirs), "MPI_Win_shared_query");
    MPI_Win_lock_all(0, shared);
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
    const long put_val = 1000 + rank, add = 3, swap = 50 + rank, compare = 7;
    int acc[4] = {rank + 1, rank + 2, rank + 3, rank + 4};
    long got = -1;
    const char *what = op_names[op];
    switch (op) {
    case OP_PUT:
        ok(MPI_Put(&put_val, 1, MPI_LONG, target, offsetof(shared_words_t, put_word), 1, MPI_LONG,
                   win),
           what);
        break;
    case OP_ACCUMULATE:
        ok(MPI_Accumulate(acc, 4, MPI_INT, target, offsetof(shared_words_t, acc), 4, MPI_INT,
                          MPI_SUM, win),
           what);
        break;
    case OP_GET_ACCUMULATE:
        ok(MPI_Get_accumulate(&add, 1, MPI_LONG, &got, 1, MPI_LONG, target,
                              offsetof(shared_words_t, gacc), 1, MPI_LONG, MPI_SUM, win),
           what);
        break;
    case OP_FETCH_AND_OP:
        ok(MPI_Fetch_and_op(&add, &got, MPI_LONG, target, offsetof(shared_words_t, fop), MPI_SUM,
                            win),
           what);
        break;
    default:
        ok(MPI_Compare_and_swap(&swap, &compare, &got, MPI_LONG, target,
                                offsetof(shared_words_t, cas), win),
           what);
        break;
    }
    ok(MPI_Win_flush(target, win), "MPI_Win_flush");
    MPI_Win_sync(shared);
    /* The origin's own view through the shared window (a load). */
    switch (op) {
    case OP_PUT:
        if (theirs->put_word != put_val)
            FAIL("shared_first %s: loaded %ld, expected %ld", what, theirs->put_word, put_val);
        break;
    case OP_ACCUMULATE:
        for (int i = 0; i < 4; i++)
            if (theirs->acc[i] != acc[i])
                FAIL("shared_first %s: int %d is %d, expected %d", what, i, theirs->acc[i], acc[i]);
        break;
    case OP_GET_ACCUMULATE:
        if (got != 0 || theirs->gacc != add)
            FAIL("shared_first %s: fetched %ld (0), word %ld (%ld)", what, got, theirs->gacc, add);
        break;
    case OP_FETCH_AND_OP:
        if (got != 0 || theirs->fop != add)
            FAIL("shared_first %s: fetched %ld (0), word %ld (%ld)", what, got, theirs->fop, add);
        break;
    default:
        if (got != 7 || theirs->cas != swap)
            FAIL("shared_first %s: old %ld (7), word %ld (%ld)", what, got, theirs->cas, swap);
        break;
    }
    MPI_Win_unlock(target, win);
    MPI_Win_unlock_all(shared);
    MPI_Barrier(MPI_COMM_WORLD);
    /* The shared window (and its memory) first, then the window over it. */
    ok(MPI_Win_free(&shared), "MPI_Win_free of the shared window");
    ok(MPI_Win_free(&win), "MPI_Win_free of the window over the shared memory");
    MPI_Comm_free(&node);
}

static void test_shared_first(void) {
    for (int op = 0; op < OPS; op++)
        shared_first_round(op);
}

/* ---- list: a linked list on a dynamic window ---- */
enum { PER_RANK = 40 };
#define NIL ((MPI_Aint) -1)
typedef struct {
    MPI_Aint next_rank; /* NIL: the tail */
    MPI_Aint next_disp; /* NIL until the appender wrote it */
    MPI_Aint value;     /* rank * PER_RANK + i */
} elem_t;

static int plain; /* list_plain: gets and puts instead of fetch-and-op */

/* One MPI_Aint of another rank's element, in an epoch of its own. */
static MPI_Aint read_word(MPI_Win win, int target, MPI_Aint disp) {
    MPI_Aint v = NIL, none = 0;
    ok(MPI_Win_lock(MPI_LOCK_SHARED, target, MPI_MODE_NOCHECK, win), "lock");
    if (plain) {
        ok(MPI_Get(&v, 1, MPI_AINT, target, disp, 1, MPI_AINT, win), "MPI_Get");
        ok(MPI_Win_flush(target, win), "flush");
    } else {
        ok(MPI_Fetch_and_op(&none, &v, MPI_AINT, target, disp, MPI_NO_OP, win),
           "MPI_Fetch_and_op (MPI_NO_OP)");
    }
    ok(MPI_Win_unlock(target, win), "unlock");
    return v;
}
static void write_word(MPI_Win win, int target, MPI_Aint disp, MPI_Aint v) {
    MPI_Aint old = 0;
    ok(MPI_Win_lock(MPI_LOCK_SHARED, target, MPI_MODE_NOCHECK, win), "lock");
    if (plain) {
        ok(MPI_Put(&v, 1, MPI_AINT, target, disp, 1, MPI_AINT, win), "MPI_Put");
        ok(MPI_Win_flush(target, win), "flush");
    } else {
        ok(MPI_Fetch_and_op(&v, &old, MPI_AINT, target, disp, MPI_REPLACE, win),
           "MPI_Fetch_and_op (MPI_REPLACE)");
    }
    ok(MPI_Win_unlock(target, win), "unlock");
}
static MPI_Aint cas_word(MPI_Win win, int target, MPI_Aint disp, MPI_Aint compare, MPI_Aint v) {
    MPI_Aint old = 0;
    ok(MPI_Win_lock(MPI_LOCK_SHARED, target, MPI_MODE_NOCHECK, win), "lock");
    ok(MPI_Compare_and_swap(&v, &compare, &old, MPI_AINT, target, disp, win),
       "MPI_Compare_and_swap");
    ok(MPI_Win_unlock(target, win), "unlock");
    return old;
}

static void test_list(void) {
    MPI_Win win;
    ok(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win), "MPI_Win_create_dynamic");
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    /* The head: an element of rank 0's, value -1. */
    elem_t *elems[PER_RANK + 1] = {NULL};
    MPI_Aint head_disp = 0;
    if (rank == 0) {
        ok(MPI_Alloc_mem(sizeof(elem_t), MPI_INFO_NULL, &elems[PER_RANK]), "MPI_Alloc_mem");
        *elems[PER_RANK] = (elem_t){NIL, NIL, -1};
        ok(MPI_Win_attach(win, elems[PER_RANK], sizeof(elem_t)), "MPI_Win_attach");
        MPI_Get_address(elems[PER_RANK], &head_disp);
    }
    MPI_Bcast(&head_disp, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    int tail_rank = 0;
    MPI_Aint tail_disp = head_disp;
    for (int i = 0; i < PER_RANK; i++) {
        /* A new element of our own, attached while the others append. */
        ok(MPI_Alloc_mem(sizeof(elem_t), MPI_INFO_NULL, &elems[i]), "MPI_Alloc_mem");
        *elems[i] = (elem_t){NIL, NIL, (MPI_Aint) rank * PER_RANK + i};
        ok(MPI_Win_attach(win, elems[i], sizeof(elem_t)), "MPI_Win_attach");
        MPI_Aint mine = 0;
        MPI_Get_address(elems[i], &mine);
        for (;;) {
            const MPI_Aint old = cas_word(win, tail_rank, tail_disp + offsetof(elem_t, next_rank),
                                          NIL, (MPI_Aint) rank);
            if (NIL == old) { /* ours is the tail now: say where it is */
                write_word(win, tail_rank, tail_disp + offsetof(elem_t, next_disp), mine);
                tail_rank = rank;
                tail_disp = mine;
                break;
            }
            /* Somebody appended first: follow it (its appender may not have
             * written where it is yet). */
            MPI_Aint next = NIL;
            while (NIL ==
                   (next = read_word(win, tail_rank, tail_disp + offsetof(elem_t, next_disp))))
                ;
            if (old < 0 || old >= size)
                FAIL("list: a next rank of %ld", (long) old);
            tail_rank = (int) old;
            tail_disp = next;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) { /* walk it */
        int seen = 0, last[64];
        for (int r = 0; r < size && r < 64; r++)
            last[r] = -1;
        int r = 0;
        MPI_Aint d = head_disp;
        for (;;) {
            const MPI_Aint nr = read_word(win, r, d + offsetof(elem_t, next_rank));
            if (NIL == nr)
                break;
            const MPI_Aint nd = read_word(win, r, d + offsetof(elem_t, next_disp));
            if (nr < 0 || nr >= size || NIL == nd)
                FAIL("list: element %d links to rank %ld at %ld", seen, (long) nr, (long) nd);
            r = (int) nr;
            d = nd;
            const MPI_Aint v = read_word(win, r, d + offsetof(elem_t, value));
            if (v / PER_RANK != r || v % PER_RANK != last[r] + 1)
                FAIL("list: element %d holds %ld: rank %d's next was %d", seen, (long) v, r,
                     last[r] + 1);
            last[r] = (int) (v % PER_RANK);
            if (++seen > size * PER_RANK)
                FAIL("list: more than %d elements (a cycle)", size * PER_RANK);
        }
        if (seen != size * PER_RANK)
            FAIL("list: %d elements, expected %d", seen, size * PER_RANK);
        printf("list%s: %d elements of %d ranks, each once and in order\n", plain ? "_plain" : "",
               seen, size);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i <= PER_RANK; i++)
        if (elems[i]) {
            ok(MPI_Win_detach(win, elems[i]), "MPI_Win_detach");
            ok(MPI_Free_mem(elems[i]), "MPI_Free_mem");
        }
    ok(MPI_Win_free(&win), "MPI_Win_free");
}

/* ---- late: accesses after the target gave the memory back ---- */
static int late_large;

static void test_late(void) {
    enum { BYTES = 1 << 20 };
    unsigned char *mem =
        mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (MAP_FAILED == mem)
        FAIL("mmap");
    MPI_Win win;
    ok(MPI_Win_create(mem, BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win), "MPI_Win_create");
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_fence(0, win);
    MPI_Win_fence(0, win);
    int same = 1;
    if (rank == 0) { /* gives the memory back; something else takes its place */
        if (0 != munmap(mem, BYTES))
            FAIL("munmap");
        void *again = mmap(mem, BYTES, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        same = again == mem;
        if (MAP_FAILED == again)
            FAIL("mmap at the old address");
        memset(again, 0xaa, BYTES);
    }
    MPI_Bcast(&same, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!same)
        FAIL("late: the new memory did not come at the old address");
    if (rank == 1) { /* erroneous: the window's memory is gone */
        static unsigned char buf[65536];
        memset(buf, 0x55, sizeof(buf));
        long one = 1, old = 0, cmp = 0, swap = 7;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Put(buf, 64, MPI_BYTE, 0, 0, 64, MPI_BYTE, win);
        MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, 8192, MPI_SUM, win);
        MPI_Compare_and_swap(&swap, &cmp, &old, MPI_LONG, 0, 16384, win);
        if (late_large)
            MPI_Put(buf, sizeof(buf), MPI_BYTE, 0, 32768, sizeof(buf), MPI_BYTE, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        size_t written = 0;
        for (size_t i = 0; i < BYTES; i++)
            written += mem[i] != 0xaa;
        if (written)
            FAIL("late: %zu bytes of the memory that replaced the window's were written", written);
        printf("late: nothing written into the memory that replaced the window's\n");
        munmap(mem, BYTES);
    }
    MPI_Win_free(&win);
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "";
    plain = !strcmp(name, "list_plain");
    late_large = !strcmp(name, "late_large");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {{"free_early", test_free_early},
                 {"shared_first", test_shared_first},
                 {"list", test_list},
                 {"list_plain", test_list},
                 {"late_small", test_late},
                 {"late_large", test_late}};
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (strcmp(name, tests[i].name))
            continue;
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
