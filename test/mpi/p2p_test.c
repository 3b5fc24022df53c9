/*
 * p2p_test.c - point-to-point correctness over btl tca, one sub-test per
 * invocation: p2p_test <name> [--gpu].  Every test checks the data it receives and
 * aborts with a message naming the first wrong byte.  Runs under
 * test/mpi/run_case.sh (mpirun --mca pml ob1 --mca btl tca,self ...).
 *
 * GPU buffers (--gpu or TCA_TEST_GPU=1; test/mpi/run_gpu_case.sh): pingpong,
 * mixed, bidir, persistent and threads send from and receive into cudaMalloc'd
 * memory, every other buffer 512 bytes into its allocation; "mixed" keeps
 * the even ranks' buffers in host memory (host <-> GPU both ways).  Without
 * a GPU it prints "SKIP: no GPU" and exits 77.
 */
#include <mpi.h>

#include "../common/compute.h"
#include "../common/shm_fill.h"
#include "gpu_buffers.h"
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, size;

#define TEST_RANK rank
#include "../common/mpi_fail.h"
#include "../common/byte_pattern.h"

/* ---- message buffers: host memory, or GPU memory in GPU runs ---- */
static int gpu_mode;   /* --gpu / TCA_TEST_GPU=1 */
static int mixed_mode; /* "mixed": even ranks keep host buffers */
static int buffers_on_gpu(void) {
    return gpu_mode && !(mixed_mode && rank % 2 == 0);
}
static void *dbuf_alloc(size_t n) {
    static int count;
    if (!buffers_on_gpu())
        return xmalloc(n);
    return tca_test_gpu_alloc(n, __atomic_fetch_add(&count, 1, __ATOMIC_RELAXED) % 2);
}
static void dbuf_free(void *p) {
    if (buffers_on_gpu())
        tca_test_gpu_free(p);
    else
        free(p);
}
static void dfill(void *buf, size_t n, unsigned seed) {
    if (!buffers_on_gpu()) {
        fill(buf, n, seed);
        return;
    }
    unsigned char *host = xmalloc(n);
    fill(host, n, seed);
    tca_test_gpu_copy(buf, host, n);
    free(host);
}
static void dcheck(const void *buf, size_t n, unsigned seed, const char *what) {
    if (!buffers_on_gpu()) {
        check(buf, n, seed, what);
        return;
    }
    unsigned char *host = xmalloc(n);
    tca_test_gpu_copy(host, buf, n);
    check(host, n, seed, what);
    free(host);
}
static void dzero(void *buf, size_t n) {
    if (buffers_on_gpu())
        tca_test_gpu_memset(buf, 0, n);
    else
        memset(buf, 0, n);
}

/* ---- ping-pong over every size class and protocol boundary ---- */
static void test_pingpong(void) {
    /* eager limit 32768 by default (65536 on the ucx device) and
     * 4096 in the eager4k case (ob1 subtracts its 56-byte header union; match
     * header 14 B, rndv 32 B), pipeline send length 64 KiB, DMA threshold 1 MiB,
     * pipeline fragment 4 MiB; each +-1 byte */
    static const size_t sizes[] = {
        0,       1,       2,       7,        8,       13,     56,      255,     256,     257,
        1000,    4031,    4032,    4033,     4063,    4064,   4065,    4079,    4080,    4081,
        4082,    4095,    4096,    4097,     8191,    8192,   8193,    16327,   16328,   16329,
        16351,   16352,   16353,   16369,    16370,   16371,  16383,   16384,   16385,   32711,
        32712,   32713,   32735,   32736,    32737,   32753,  32754,   32755,   32767,   32768,
        32769,   65535,   65536,   65537,    131071,  131073, 1000003, 1048575, 1048576, 1048577,
        4194303, 4194304, 4194305, 12345679, 64 << 20};
    if (size < 2)
        return;
    const int peer = rank ^ 1;
    if (peer >= size)
        return;
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        const size_t n = sizes[s];
        const int iters = n > (8u << 20) ? 2 : n > 65536 ? 5 : 20;
        unsigned char *buf = dbuf_alloc(n);
        for (int it = 0; it < iters; it++) {
            const unsigned seed = (unsigned) (s * 100 + it);
            if (rank < peer) {
                dfill(buf, n, seed);
                MPI_Send(buf, (int) n, MPI_BYTE, peer, it, MPI_COMM_WORLD);
                dzero(buf, n);
                MPI_Status st;
                MPI_Recv(buf, (int) n, MPI_BYTE, peer, it, MPI_COMM_WORLD, &st);
                int count;
                MPI_Get_count(&st, MPI_BYTE, &count);
                if ((size_t) count != n)
                    FAIL("pingpong %zu: got %d bytes", n, count);
                dcheck(buf, n, seed + 1, "pingpong echo");
            } else {
                MPI_Recv(buf, (int) n, MPI_BYTE, peer, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                dcheck(buf, n, seed, "pingpong");
                dfill(buf, n, seed + 1);
                MPI_Send(buf, (int) n, MPI_BYTE, peer, it, MPI_COMM_WORLD);
            }
        }
        dbuf_free(buf);
    }
}

/* ---- large messages both ways at once, then many senders into one ----
 * Every rank writes into its peer while the peer writes into it: on the
 * bounce path (TCA_SINGLE_COPY=0) each node's engine thread and application
 * thread both serve the node's mailbox.  A race there delivered one 256 KiB
 * chunk holding the next chunk's bytes in about 1 exchange of 100, so this
 * repeats hundreds of times and checks every byte. */
static void test_bidir(void) {
    const size_t n = (4u << 20) + 12345; /* 17 bounce chunks, the last one partial */
    const int rounds = 300;
    unsigned char *out = dbuf_alloc(n), *in = dbuf_alloc(n);
    const int peer = rank ^ 1;
    if (peer < size) {
        for (int r = 0; r < rounds; r++) {
            dfill(out, n, (unsigned) (rank * 1000 + r));
            dzero(in, n);
            MPI_Sendrecv(out, (int) n, MPI_BYTE, peer, r, in, (int) n, MPI_BYTE, peer, r,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            dcheck(in, n, (unsigned) (peer * 1000 + r), "bidirectional sendrecv");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* many-to-one: every other rank sends to rank 0 at the same time */
    const size_t m = (2u << 20) + 7;
    for (int r = 0; r < 20; r++) {
        if (rank == 0) {
            for (int k = 1; k < size; k++) {
                MPI_Status st;
                MPI_Recv(in, (int) m, MPI_BYTE, MPI_ANY_SOURCE, r, MPI_COMM_WORLD, &st);
                dcheck(in, m, (unsigned) (st.MPI_SOURCE * 77 + r), "many-to-one");
            }
        } else {
            dfill(out, m, (unsigned) (rank * 77 + r));
            MPI_Send(out, (int) m, MPI_BYTE, 0, r, MPI_COMM_WORLD);
        }
    }
    dbuf_free(out);
    dbuf_free(in);
}

/* ---- the rendezvous protocol chosen per message (btl_tca_rendezvous_choice) ----
 * Messages beyond the eager limit in the situations that pick each path: alone
 * (RGET), a window one way (copy protocol after the first), windows both ways
 * (RGET once each side has told the other it streams), and the changes between
 * them, several times over so that the streaming word goes on and off.  The
 * same send buffer carries several messages of a window at once (OSU's shape)
 * or each its own slice; every byte is checked.  The case checks at finalize
 * that both paths ran and that no granted registration was left behind. */
static void rendezvous_window(unsigned char *out, unsigned char *in, size_t n, int count,
                              int both_ways, int one_buffer, unsigned seed) {
    const int peer = rank ^ 1;
    const int sends = rank < peer || both_ways;
    const int recvs = rank > peer || both_ways;
    MPI_Request req[128];
    int nreq = 0;
    const unsigned mine = seed * 131u + (unsigned) rank, theirs = seed * 131u + (unsigned) peer;
    if (sends && one_buffer)
        dfill(out, n, mine);
    for (int i = 0; i < count && sends; i++) {
        if (!one_buffer)
            dfill(out + (size_t) i * n, n, mine + (unsigned) i);
        MPI_Isend(out + (one_buffer ? 0 : (size_t) i * n), (int) n, MPI_BYTE, peer, 40 + i,
                  MPI_COMM_WORLD, &req[nreq++]);
    }
    if (recvs)
        dzero(in, n * (size_t) count);
    for (int i = 0; i < count && recvs; i++)
        MPI_Irecv(in + (size_t) i * n, (int) n, MPI_BYTE, peer, 40 + i, MPI_COMM_WORLD,
                  &req[nreq++]);
    MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    for (int i = 0; i < count && recvs; i++)
        dcheck(in + (size_t) i * n, n, theirs + (one_buffer ? 0u : (unsigned) i),
               both_ways ? "rendezvous both ways" : "rendezvous window");
}

static void test_rendezvous(void) {
    static const size_t sizes[] = {32769, 65536, 98305, 262147, 1048576 + 5};
    enum { WINDOW = 16 };
    const int peer = rank ^ 1;
    if (peer >= size)
        return;
    const size_t most = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1];
    unsigned char *out = dbuf_alloc(most * WINDOW), *in = dbuf_alloc(most * WINDOW);
    unsigned seed = 1;
    for (int lap = 0; lap < 3; lap++) {
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            const size_t n = sizes[s];
            /* alone: a ping-pong */
            for (int it = 0; it < 6; it++, seed++) {
                if (rank < peer) {
                    dfill(out, n, seed);
                    MPI_Send(out, (int) n, MPI_BYTE, peer, 30, MPI_COMM_WORLD);
                    dzero(in, n);
                    MPI_Recv(in, (int) n, MPI_BYTE, peer, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    dcheck(in, n, seed + 7, "rendezvous echo");
                } else {
                    dzero(in, n);
                    MPI_Recv(in, (int) n, MPI_BYTE, peer, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    dcheck(in, n, seed, "rendezvous alone");
                    dfill(out, n, seed + 7);
                    MPI_Send(out, (int) n, MPI_BYTE, peer, 31, MPI_COMM_WORLD);
                }
            }
            /* streams: one way, then both ways, each from one buffer and from slices */
            for (int shape = 0; shape < 4; shape++, seed++)
                rendezvous_window(out, in, n, WINDOW, shape >= 2, shape & 1, seed);
        }
    }
    dbuf_free(out);
    dbuf_free(in);
}

/* ---- non-contiguous datatypes, both directions ---- */
struct particle {
    int id;
    double pos[3];
    char tag[3];
};

static void exchange_typed(MPI_Datatype type, int count, size_t extent_bytes, const char *what) {
    /* rank 0 sends `count` of `type` from a patterned buffer; rank 1 receives them
     * packed as bytes and checks against MPI_Pack; then the reverse. */
    int packed_size;
    MPI_Pack_size(count, type, MPI_COMM_WORLD, &packed_size);
    unsigned char *typed = xmalloc(extent_bytes), *bytes = xmalloc((size_t) packed_size),
                  *expect = xmalloc((size_t) packed_size);
    fill(typed, extent_bytes, 3);
    int pos = 0;
    MPI_Pack(typed, count, type, expect, packed_size, &pos, MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Send(typed, count, type, 1, 1, MPI_COMM_WORLD);      /* non-contig -> contig */
        MPI_Send(expect, pos, MPI_PACKED, 1, 2, MPI_COMM_WORLD); /* contig -> non-contig */
        MPI_Recv(typed, count, type, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* round trip */
        unsigned char *again = xmalloc((size_t) packed_size);
        int p2 = 0;
        MPI_Pack(typed, count, type, again, packed_size, &p2, MPI_COMM_WORLD);
        if (p2 != pos || memcmp(again, expect, (size_t) pos))
            FAIL("%s: round trip differs", what);
        free(again);
    } else if (rank == 1) {
        MPI_Recv(bytes, packed_size, MPI_PACKED, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (memcmp(bytes, expect, (size_t) pos))
            FAIL("%s: non-contiguous send arrived wrong", what);
        unsigned char *target = xmalloc(extent_bytes);
        memset(target, 0, extent_bytes);
        MPI_Recv(target, count, type, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        unsigned char *check_buf = xmalloc((size_t) packed_size);
        int p2 = 0;
        MPI_Pack(target, count, type, check_buf, packed_size, &p2, MPI_COMM_WORLD);
        if (memcmp(check_buf, expect, (size_t) pos))
            FAIL("%s: non-contiguous receive wrong", what);
        MPI_Send(target, count, type, 0, 3, MPI_COMM_WORLD);
        free(check_buf);
        free(target);
    }
    free(typed);
    free(bytes);
    free(expect);
}

static void test_datatypes(void) {
    MPI_Datatype vec, idx, st, st_resized;
    /* vector: small (eager) and large (fragments) */
    MPI_Type_vector(1000, 3, 7, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    exchange_typed(vec, 1, 1000 * 7 * sizeof(double), "vector small");
    exchange_typed(vec, 40, 40 * 1000 * 7 * sizeof(double), "vector 1 MiB");
    int blens[4] = {1, 5, 2, 9}, displs[4] = {0, 3, 17, 40};
    MPI_Type_indexed(4, blens, displs, MPI_INT, &idx);
    MPI_Type_commit(&idx);
    MPI_Aint ext_lb, ext;
    MPI_Type_get_extent(idx, &ext_lb, &ext);
    exchange_typed(idx, 3000, (size_t) ext * 3000, "indexed");
    int sl[3] = {1, 3, 3};
    MPI_Aint sd[3] = {offsetof(struct particle, id), offsetof(struct particle, pos),
                      offsetof(struct particle, tag)};
    MPI_Datatype stypes[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    MPI_Type_create_struct(3, sl, sd, stypes, &st);
    MPI_Type_create_resized(st, 0, sizeof(struct particle), &st_resized);
    MPI_Type_commit(&st_resized);
    exchange_typed(st_resized, 5, 5 * sizeof(struct particle), "struct small");
    exchange_typed(st_resized, 50000, 50000 * sizeof(struct particle), "struct large");
    MPI_Type_free(&vec);
    MPI_Type_free(&idx);
    MPI_Type_free(&st);
    MPI_Type_free(&st_resized);
}

/* ---- matching: wildcards, probes, non-overtaking ---- */
static void test_matching(void) {
    const int per_source = 500;
    if (rank == 0) {
        int *next = calloc((size_t) size, sizeof(int));
        for (int i = 0; i < per_source * (size - 1); i++) {
            int msg[2];
            MPI_Status st;
            MPI_Recv(msg, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            if (msg[0] != st.MPI_SOURCE || st.MPI_TAG != msg[1] % 7)
                FAIL("wildcard status: source %d tag %d for message %d/%d", st.MPI_SOURCE,
                     st.MPI_TAG, msg[0], msg[1]);
            if (msg[1] != next[st.MPI_SOURCE]++)
                FAIL("overtaking: from %d got %d, expected %d", st.MPI_SOURCE, msg[1],
                     next[st.MPI_SOURCE] - 1);
        }
        free(next);
    } else {
        for (int i = 0; i < per_source; i++) {
            int msg[2] = {rank, i};
            MPI_Send(msg, 2, MPI_INT, 0, i % 7, MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* Probe / Iprobe / Mprobe / Improbe with sizes unknown to the receiver (eager and rendezvous) */
    const int sizes[4] = {17, 4090, 70000, 3 << 20};
    for (int k = 0; k < 4; k++) {
        if (rank == 1) {
            unsigned char *b = xmalloc((size_t) sizes[k]);
            fill(b, (size_t) sizes[k], (unsigned) k);
            MPI_Send(b, sizes[k], MPI_BYTE, 0, 100 + k, MPI_COMM_WORLD);
            free(b);
        } else if (rank == 0) {
            MPI_Status st;
            MPI_Message m;
            int count, flag = 0;
            switch (k) {
            case 0:
                MPI_Probe(1, 100 + k, MPI_COMM_WORLD, &st);
                break;
            case 1:
                while (!flag)
                    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
                break;
            case 2:
                MPI_Mprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &m, &st);
                break;
            default:
                while (!flag)
                    MPI_Improbe(MPI_ANY_SOURCE, 100 + k, MPI_COMM_WORLD, &flag, &m, &st);
                break;
            }
            MPI_Get_count(&st, MPI_BYTE, &count);
            if (count != sizes[k] || st.MPI_SOURCE != 1 || st.MPI_TAG != 100 + k)
                FAIL("probe %d: count %d source %d tag %d", k, count, st.MPI_SOURCE, st.MPI_TAG);
            unsigned char *b = xmalloc((size_t) count);
            if (k >= 2)
                MPI_Mrecv(b, count, MPI_BYTE, &m, MPI_STATUS_IGNORE);
            else
                MPI_Recv(b, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            check(b, (size_t) count, (unsigned) k, "probed message");
            free(b);
        }
    }
    /* ordering of a large message followed by small ones with the same tag: non-overtaking */
    if (rank == 1) {
        unsigned char *big = xmalloc(2 << 20);
        fill(big, 2 << 20, 9);
        MPI_Request r[3];
        int a = 1, b = 2;
        MPI_Isend(big, 2 << 20, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(&a, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, &r[1]);
        MPI_Isend(&b, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, &r[2]);
        MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
        free(big);
    } else if (rank == 0) {
        unsigned char *big = xmalloc(2 << 20);
        int a = 0, b = 0, count;
        MPI_Status st;
        MPI_Recv(big, 2 << 20, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        if (count != 2 << 20)
            FAIL("ordering: first message has %d bytes", count);
        check(big, 2 << 20, 9, "ordered large message");
        MPI_Recv(&a, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&b, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (a != 1 || b != 2)
            FAIL("ordering: got %d %d", a, b);
        free(big);
    }
}

/* ---- many-to-one flood: 10^5 messages, none lost, per-source order kept ---- */
static void test_flood(void) {
    const int total = 100000, senders = size - 1, per = total / senders, window = 256;
    if (rank == 0) {
        int *next = calloc((size_t) size, sizeof(int));
        int buf[16];
        for (int i = 0; i < per * senders; i++) {
            MPI_Status st;
            MPI_Recv(buf, 16, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st);
            int count;
            MPI_Get_count(&st, MPI_INT, &count);
            const int src = st.MPI_SOURCE, seq = buf[0];
            if (seq != next[src])
                FAIL("flood: from %d got seq %d, expected %d", src, seq, next[src]);
            if (count != 1 + seq % 15)
                FAIL("flood: message %d from %d has %d ints", seq, src, count);
            for (int k = 1; k < count; k++)
                if (buf[k] != src * k + seq)
                    FAIL("flood: payload of %d from %d", seq, src);
            next[src]++;
        }
        for (int s = 1; s < size; s++)
            if (next[s] != per)
                FAIL("flood: %d of %d messages from %d", next[s], per, s);
        free(next);
    } else {
        int(*bufs)[16] = malloc(sizeof(int[16]) * (size_t) window);
        MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t) window);
        for (int i = 0; i < per; i += window) {
            int n = per - i < window ? per - i : window;
            for (int j = 0; j < n; j++) {
                const int seq = i + j, count = 1 + seq % 15;
                bufs[j][0] = seq;
                for (int k = 1; k < count; k++)
                    bufs[j][k] = rank * k + seq;
                MPI_Isend(bufs[j], count, MPI_INT, 0, 7, MPI_COMM_WORLD, &reqs[j]);
            }
            MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        }
        free(bufs);
        free(reqs);
    }
}

/* ---- send modes ---- */
static void test_modes(void) {
    const size_t sizes[3] = {64, 4090, 300000};
    for (int k = 0; k < 3; k++) {
        const size_t n = sizes[k];
        unsigned char *b = xmalloc(n);
        if (rank == 0) {
            fill(b, n, (unsigned) k);
            MPI_Ssend(b, (int) n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            int bsize = (int) n + MPI_BSEND_OVERHEAD;
            void *attach = xmalloc((size_t) bsize);
            MPI_Buffer_attach(attach, bsize);
            fill(b, n, (unsigned) k + 10);
            MPI_Bsend(b, (int) n, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
            memset(b, 0, n); /* buffered: ours again at once */
            MPI_Buffer_detach(&attach, &bsize);
            free(attach);
            MPI_Barrier(MPI_COMM_WORLD); /* the receive below is posted */
            fill(b, n, (unsigned) k + 20);
            MPI_Rsend(b, (int) n, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(b, (int) n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(b, n, (unsigned) k, "Ssend");
            MPI_Recv(b, (int) n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(b, n, (unsigned) k + 10, "Bsend");
            MPI_Request r;
            MPI_Irecv(b, (int) n, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &r);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            check(b, n, (unsigned) k + 20, "Rsend");
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
        }
        free(b);
    }
}

/* ---- persistent requests: 1000 starts, contents change every time ---- */
static void test_persistent(void) {
    const size_t sizes[4] = {8, 4000, 100000, 1 << 20};
    if (rank > 1)
        return;
    const int peer = 1 - rank;
    for (int k = 0; k < 4; k++) {
        const size_t n = sizes[k];
        const int starts = n > 100000 ? 200 : 1000;
        unsigned char *sb = dbuf_alloc(n), *rb = dbuf_alloc(n);
        MPI_Request req[2];
        if (rank == 0) {
            MPI_Send_init(sb, (int) n, MPI_BYTE, peer, k, MPI_COMM_WORLD, &req[0]);
            MPI_Recv_init(rb, (int) n, MPI_BYTE, peer, k, MPI_COMM_WORLD, &req[1]);
        } else {
            MPI_Recv_init(rb, (int) n, MPI_BYTE, peer, k, MPI_COMM_WORLD, &req[1]);
            MPI_Send_init(sb, (int) n, MPI_BYTE, peer, k, MPI_COMM_WORLD, &req[0]);
        }
        for (int s = 0; s < starts; s++) {
            dfill(sb, n, (unsigned) (s * 2 + rank));
            MPI_Startall(2, req);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            dcheck(rb, n, (unsigned) (s * 2 + peer), "persistent Send_init/Recv_init");
        }
        MPI_Request_free(&req[0]);
        MPI_Request_free(&req[1]);
        /* Ssend_init and Bsend_init, started one at a time */
        MPI_Request ps, pr;
        /* a buffered send may still occupy the buffer after its Wait: room for all */
        int bsize = (int) (n + MPI_BSEND_OVERHEAD) * (starts / 4);
        void *attach = xmalloc((size_t) bsize);
        MPI_Buffer_attach(attach, bsize);
        for (int mode = 0; mode < 2; mode++) {
            if (rank == 0) {
                if (mode == 0)
                    MPI_Ssend_init(sb, (int) n, MPI_BYTE, peer, 50 + mode, MPI_COMM_WORLD, &ps);
                else
                    MPI_Bsend_init(sb, (int) n, MPI_BYTE, peer, 50 + mode, MPI_COMM_WORLD, &ps);
                for (int s = 0; s < starts / 4; s++) {
                    dfill(sb, n, (unsigned) (s + 1000 * mode));
                    MPI_Start(&ps);
                    MPI_Wait(&ps, MPI_STATUS_IGNORE);
                }
                MPI_Request_free(&ps);
            } else {
                MPI_Recv_init(rb, (int) n, MPI_BYTE, peer, 50 + mode, MPI_COMM_WORLD, &pr);
                for (int s = 0; s < starts / 4; s++) {
                    MPI_Start(&pr);
                    MPI_Wait(&pr, MPI_STATUS_IGNORE);
                    dcheck(rb, n, (unsigned) (s + 1000 * mode), mode ? "Bsend_init" : "Ssend_init");
                }
                MPI_Request_free(&pr);
            }
        }
        MPI_Buffer_detach(&attach, &bsize);
        free(attach);
        dbuf_free(sb);
        dbuf_free(rb);
    }
}

/* ---- Waitany / Waitsome / Testall mixes ---- */
static void test_waitmix(void) {
    enum { N = 16 };
    const int peer = rank ^ 1;
    if (peer >= size)
        return;
    unsigned char *sb[N], *rb[N];
    size_t len[N];
    MPI_Request rr[N], sr[N];
    for (int round = 0; round < 30; round++) {
        for (int i = 0; i < N; i++) {
            len[i] = (size_t) ((i * 7919 + round * 104729) % 200000) + 1;
            sb[i] = xmalloc(len[i]);
            rb[i] = xmalloc(len[i]);
            fill(sb[i], len[i], (unsigned) (round * N + i + rank * 7));
            MPI_Irecv(rb[i], (int) len[i], MPI_BYTE, peer, i, MPI_COMM_WORLD, &rr[i]);
        }
        for (int i = N - 1; i >= 0; i--)
            MPI_Isend(sb[i], (int) len[i], MPI_BYTE, peer, i, MPI_COMM_WORLD, &sr[i]);
        int done = 0;
        if (round % 3 == 0) {
            while (done < N) {
                int idx;
                MPI_Status st;
                MPI_Waitany(N, rr, &idx, &st);
                if (st.MPI_TAG != idx)
                    FAIL("Waitany: index %d tag %d", idx, st.MPI_TAG);
                check(rb[idx], len[idx], (unsigned) (round * N + idx + peer * 7), "Waitany");
                done++;
            }
            MPI_Waitall(N, sr, MPI_STATUSES_IGNORE);
        } else if (round % 3 == 1) {
            while (done < N) {
                int outcount, idx[N];
                MPI_Waitsome(N, rr, &outcount, idx, MPI_STATUSES_IGNORE);
                for (int j = 0; j < outcount; j++)
                    check(rb[idx[j]], len[idx[j]], (unsigned) (round * N + idx[j] + peer * 7),
                          "Waitsome");
                done += outcount;
            }
            MPI_Waitall(N, sr, MPI_STATUSES_IGNORE);
        } else {
            int flag = 0, sflag = 0;
            while (!flag || !sflag) {
                if (!flag)
                    MPI_Testall(N, rr, &flag, MPI_STATUSES_IGNORE);
                if (!sflag)
                    MPI_Testall(N, sr, &sflag, MPI_STATUSES_IGNORE);
            }
            for (int i = 0; i < N; i++)
                check(rb[i], len[i], (unsigned) (round * N + i + peer * 7), "Testall");
        }
        for (int i = 0; i < N; i++) {
            free(sb[i]);
            free(rb[i]);
        }
    }
}

/* ---- MPI_THREAD_MULTIPLE: concurrent senders and receivers ---- */
enum { THREADS = 4, THREAD_MSGS = 400 };
static void *thread_body(void *arg) {
    const int t = (int) (intptr_t) arg, peer = rank ^ 1;
    for (int i = 0; i < THREAD_MSGS; i++) {
        const size_t n = (size_t) ((i * 37 + t * 1000) % 9000) + 1 + (i % 50 == 0 ? 200000 : 0);
        unsigned char *sb = dbuf_alloc(n), *rb = dbuf_alloc(n);
        dfill(sb, n, (unsigned) (t * 100000 + i + rank));
        MPI_Request r[2];
        MPI_Irecv(rb, (int) n, MPI_BYTE, peer, t, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(sb, (int) n, MPI_BYTE, peer, t, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        dcheck(rb, n, (unsigned) (t * 100000 + i + peer), "thread multiple");
        dbuf_free(sb);
        dbuf_free(rb);
    }
    return NULL;
}
static void test_threads(void) {
    if ((rank ^ 1) >= size)
        return;
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, thread_body, (void *) (intptr_t) t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
}

/* ---- several communicators at once: same tags, no interference ---- */
static void test_comms(void) {
    MPI_Comm dup, half, reversed;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
    MPI_Comm comms[4] = {MPI_COMM_WORLD, dup, half, reversed};
    const size_t n = 50000;
    unsigned char *sb[4], *rb[4];
    MPI_Request req[8];
    int nreq = 0;
    for (int c = 0; c < 4; c++) {
        int r, s;
        MPI_Comm_rank(comms[c], &r);
        MPI_Comm_size(comms[c], &s);
        sb[c] = xmalloc(n);
        rb[c] = xmalloc(n);
        fill(sb[c], n, (unsigned) (c * 1000 + r));
        const int to = (r + 1) % s, from = (r + s - 1) % s;
        MPI_Irecv(rb[c], (int) n, MPI_BYTE, from, 9, comms[c], &req[nreq++]);
        MPI_Isend(sb[c], (int) n, MPI_BYTE, to, 9, comms[c], &req[nreq++]);
    }
    MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    for (int c = 0; c < 4; c++) {
        int r, s;
        MPI_Comm_rank(comms[c], &r);
        MPI_Comm_size(comms[c], &s);
        check(rb[c], n, (unsigned) (c * 1000 + (r + s - 1) % s), "communicator ring");
        free(sb[c]);
        free(rb[c]);
    }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    MPI_Comm_free(&reversed);
}

/* ---- every pair talks (for the two-sub-cluster tca,self,tcp run) ---- */
static void test_allpairs(void) {
    const size_t sizes[3] = {100, 20000, 2 << 20};
    for (int k = 0; k < 3; k++) {
        const size_t n = sizes[k];
        for (int d = 1; d < size; d++) {
            const int to = (rank + d) % size, from = (rank + size - d) % size;
            unsigned char *sb = xmalloc(n), *rb = xmalloc(n);
            fill(sb, n, (unsigned) (rank * 64 + to + k));
            MPI_Sendrecv(sb, (int) n, MPI_BYTE, to, d, rb, (int) n, MPI_BYTE, from, d,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(rb, n, (unsigned) (from * 64 + rank + k), "all pairs");
            free(sb);
            free(rb);
        }
    }
}

/* ---- overlap: the receiver computes, without MPI calls, while 1 MiB arrives ---- */
static void test_overlap(void) {
    const size_t n = 1 << 20;
    unsigned char *b = xmalloc(n);
    int completed_during_compute = 0;
    const int rounds = 10;
    for (int r = 0; r < rounds; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            fill(b, n, (unsigned) r);
            MPI_Send(b, (int) n, MPI_BYTE, 1, r, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Request req;
            int flag = 0;
            MPI_Irecv(b, (int) n, MPI_BYTE, 0, r, MPI_COMM_WORLD, &req);
            /* No MPI calls: only the progress thread can move the rendezvous.  0.2 s,
             * not less: under CPU load the progress thread waits its turn for the
             * CPU (8 of 10 completed in 50 ms with the cores busy). */
            compute_for(0.2);
            MPI_Request_get_status(req, &flag, MPI_STATUS_IGNORE);
            completed_during_compute += flag;
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            check(b, n, (unsigned) r, "overlap");
        }
    }
    if (rank == 1) {
        printf("overlap: %d of %d 1 MiB receives completed while the receiver computed\n",
               completed_during_compute, rounds);
        /* Without a working progress thread none completes.  How many do is
         * up to the scheduler of a loaded machine (8 of 10 with the cores
         * busy): one is proof enough; none in ten 0.2 s windows is no
         * accident of load. */
        if (completed_during_compute == 0)
            FAIL("the progress thread did not complete the receive during compute");
    }
    free(b);
}

/* ---- the first rendezvous after MPI_Init, while the receiver computes ----
 * The progress thread asks its peers to ring its doorbell when it goes to
 * sleep; a thread that went to sleep before MPI had made the endpoints asked
 * nobody, and slept its whole longest sleep (btl_tca_progress_thread_sleep_us)
 * through every message: the case sets it to 10 s, so a receive that is not
 * complete after 2 s of computing was left to that sleep (before the fix it
 * completed only in MPI_Wait, every run). */
static void test_overlap_first(void) {
    const size_t n = 1 << 20;
    unsigned char *b = xmalloc(n);
    if (rank == 0) {
        fill(b, n, 7u);
        MPI_Send(b, (int) n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Request req;
        int flag = 0;
        MPI_Irecv(b, (int) n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &req);
        compute_for(2.0); /* no MPI calls: only the progress thread moves it */
        MPI_Request_get_status(req, &flag, MPI_STATUS_IGNORE);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        check(b, n, 7u, "first overlap");
        printf("overlap_first: the first receive %s while the receiver computed\n",
               flag ? "completed" : "did not complete");
        if (!flag)
            FAIL("the progress thread slept through the first rendezvous");
    }
    free(b);
}

/* ---- a peer dies mid-run: the job must end, not hang ---- */
static void test_kill(void) {
    char c[64] = {0};
    for (int i = 0; i < 1000; i++) {
        if (rank == 0)
            MPI_Send(c, 64, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        else if (rank == 1)
            MPI_Recv(c, 64, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank == 1) {
        fflush(stdout);
        raise(9); /* SIGKILL */
    }
    if (rank == 0) /* waits for a message that never comes */
        MPI_Recv(c, 64, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* host <-> GPU: the ping-pong sweep with the even ranks' buffers in host memory */
static void test_mixed(void) {
    mixed_mode = 1;
    test_pingpong();
    mixed_mode = 0;
}

/* ---- the data owner dies while a get from it is pending ----
 * (run with btl_tca_get_emulation=all): rank 1 starts a large send (ob1: RGET,
 * rank 0 sends its put request) and is killed before its progress serves it.
 * Rank 0 must not hang on the get that is never answered. */
static void test_kill_get(void) {
    const size_t n = 4u << 20;
    unsigned char *b = xmalloc(n);
    fill(b, n, 5);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Request r;
        MPI_Isend(b, (int) n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r);
        const struct timespec pause = {0, 200000000};
        nanosleep(&pause, NULL); /* rank 0's put request arrives; nobody serves it */
        fflush(stdout);
        raise(9); /* SIGKILL */
    }
    if (rank == 0)
        MPI_Recv(b, (int) n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    free(b);
}

/* A program that returns from main without MPI_Finalize, under
 * MPI_THREAD_MULTIPLE (btl tca's progress thread on): traffic with every
 * peer first, so the thread polls rings and sleeps on the device interrupt,
 * then rank 0 says so and everyone returns.  exit() then runs libtca's
 * teardown while the thread may still run: it must end before that (no
 * SIGSEGV on an unmapped segment, no hang).  The pass line is printed before
 * the exit, which is the part under test (the case checks for signals). */
static void test_no_finalize(void) {
    const size_t n = 64 * 1024;
    unsigned char *b = xmalloc(n);
    const int peer = rank ^ 1;
    for (int it = 0; it < 50 && peer < size; ++it) {
        const size_t len = it % 2 ? n : 64;
        if (rank & 1) {
            MPI_Recv(b, (int) len, MPI_BYTE, peer, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b, (int) len, MPI_BYTE, peer, it, MPI_COMM_WORLD);
        } else {
            fill(b, len, (unsigned) it);
            MPI_Send(b, (int) len, MPI_BYTE, peer, it, MPI_COMM_WORLD);
            MPI_Recv(b, (int) len, MPI_BYTE, peer, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            dcheck(b, len, (unsigned) it, "no_finalize");
        }
    }
    /* Away from MPI long enough for the progress thread to take over. */
    const struct timespec pause = {0, 5000000};
    nanosleep(&pause, NULL);
    /* The pass line is out before anyone can leave (see bcast_test.c). */
    if (rank == 0)
        printf("no_finalize: passed on %d ranks, returning without MPI_Finalize\n", size);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) {
        const struct timespec forward = {0, 200000000};
        nanosleep(&forward, NULL);
    }
    free(b);
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "";
    int provided;
    gpu_mode = tca_test_gpu_requested() || (argc > 2 && !strcmp(argv[2], "--gpu"));
    if (gpu_mode) { /* before MPI_Init: Open MPI's CUDA support uses the device selected here */
        char why[160];
        if (!tca_test_gpu_open(why, sizeof(why))) {
            printf("%s (%s)\n", TCA_TEST_GPU_SKIP_LINE, why);
            return TCA_TEST_GPU_SKIP_STATUS;
        }
    }
    if (!strcmp(name, "threads") || !strcmp(name, "no_finalize")) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided != MPI_THREAD_MULTIPLE) {
            fprintf(stderr, "MPI_THREAD_MULTIPLE not provided\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!strcmp(name, "no_finalize")) {
        test_no_finalize();
        return 0; /* no MPI_Finalize: that is the test */
    }
    static const struct {
        const char *name;
        void (*fn)(void);
        int min_ranks;
    } tests[] = {{"pingpong", test_pingpong, 2},
                 {"datatypes", test_datatypes, 2},
                 {"matching", test_matching, 2},
                 {"flood", test_flood, 2},
                 {"modes", test_modes, 2},
                 {"persistent", test_persistent, 2},
                 {"waitmix", test_waitmix, 2},
                 {"threads", test_threads, 2},
                 {"comms", test_comms, 2},
                 {"allpairs", test_allpairs, 2},
                 {"overlap", test_overlap, 2},
                 {"kill", test_kill, 2},
                 {"bidir", test_bidir, 2},
                 {"mixed", test_mixed, 2},
                 {"kill_get", test_kill_get, 2},
                 {"rendezvous", test_rendezvous, 2},
                 {"overlap_first", test_overlap_first, 2}};
    static const char *const gpu_tests[] = {"pingpong", "mixed", "bidir", "persistent", "threads"};
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (strcmp(name, tests[i].name))
            continue;
        if (size < tests[i].min_ranks)
            FAIL("%s needs %d ranks", name, tests[i].min_ranks);
        int gpu_variant = 0;
        for (size_t g = 0; g < sizeof(gpu_tests) / sizeof(gpu_tests[0]); g++)
            gpu_variant |= !strcmp(name, gpu_tests[g]);
        if (gpu_mode && !gpu_variant) { /* never a host-memory run passed off as a GPU one */
            if (rank == 0)
                printf("%s: no GPU variant of this sub-test\n", name);
            MPI_Finalize();
            return TCA_TEST_GPU_SKIP_STATUS;
        }
        tca_test_fill_shm(MPI_COMM_WORLD); /* test/shm_full.sh: /dev/shm full from here on */
        const double t0 = MPI_Wtime();
        tests[i].fn();
        tca_test_unfill_shm(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            printf("%s: passed on %d ranks in %.2f s%s\n", name, size, MPI_Wtime() - t0,
                   gpu_mode ? " with GPU buffers" : "");
        MPI_Finalize();
        return 0;
    }
    if (rank == 0)
        fprintf(stderr, "unknown test '%s'\n", name);
    MPI_Finalize();
    return 2;
}
