/*
 * cacheline_probe.c - how dear moving cache lines between two cores is right
 * now: the probe scripts/bench.sh runs at the start of every round and prints
 * beside it, so that rounds can be told apart by the machine's state rather
 * than by the transport that happened to run in them.
 *
 * Two processes, bound to the two CPUs the benchmark's ranks use (0 and 1 by
 * default, as `mpirun --bind-to core -np 2` places them; -c A,B), share one
 * anonymous mapping and measure:
 *   pingpong   one 64-byte line bounced between them: ns per round trip (two
 *              line transfers, nothing else);
 *   lines      one writes a 64 KiB block, the other reads it back (each of its
 *              1024 lines moves from one core's cache to the other's): ns per
 *              line, the cost of a copy between processes per cache line.
 * Prints "PROBE pingpong_ns <median> lines_ns <median>" (medians of -r
 * batches, 9 by default) and exits 0; 1 where the CPUs cannot be used.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { LINE = 64, BLOCK = 64 * 1024, PINGS = 20000, BLOCKS = 200, MAX_BATCHES = 99 };

struct shared {
    _Alignas(LINE) atomic_uint_fast64_t ping; /* the bounced line: round number, odd from A */
    _Alignas(LINE) atomic_uint_fast64_t block_ready;
    _Alignas(LINE) atomic_uint_fast64_t block_read;
    _Alignas(LINE) atomic_int start;
    _Alignas(4096) unsigned char block[BLOCK];
};

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int bind_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t) n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Side B: answers pings, reads blocks, for `batches` batches of each. */
static void side_b(struct shared *s, int batches) {
    for (int b = 0; b < batches; b++) {
        const uint64_t base = (uint64_t) b * PINGS * 2;
        for (uint64_t i = 0; i < PINGS; i++) {
            while (atomic_load_explicit(&s->ping, memory_order_acquire) != base + 2 * i + 1)
                ;
            atomic_store_explicit(&s->ping, base + 2 * i + 2, memory_order_release);
        }
    }
    uint64_t sum = 0;
    for (uint64_t k = 1; k <= (uint64_t) batches * BLOCKS; k++) {
        while (atomic_load_explicit(&s->block_ready, memory_order_acquire) != k)
            ;
        for (int off = 0; off < BLOCK; off += LINE)
            sum += s->block[off];
        atomic_store_explicit(&s->block_read, k, memory_order_release);
    }
    if (sum == 1) /* keeps the reads */
        fputc('\0', stderr);
}

int main(int argc, char **argv) {
    int cpu_a = 0, cpu_b = 1, batches = 9, opt;
    while ((opt = getopt(argc, argv, "c:r:")) != -1) {
        if (opt == 'c' && sscanf(optarg, "%d,%d", &cpu_a, &cpu_b) == 2)
            continue;
        if (opt == 'r' && (batches = atoi(optarg)) > 0 && batches <= MAX_BATCHES)
            continue;
        fprintf(stderr, "usage: cacheline_probe [-c CPU_A,CPU_B] [-r BATCHES (1..%d)]\n",
                MAX_BATCHES);
        return 2;
    }
    struct shared *s =
        mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) {
        perror("cacheline_probe: mmap");
        return 1;
    }
    memset(s, 0, sizeof *s);
    const pid_t child = fork();
    if (child < 0) {
        perror("cacheline_probe: fork");
        return 1;
    }
    if (child == 0) {
        if (bind_to(cpu_b) != 0) {
            perror("cacheline_probe: binding to the second CPU");
            _exit(1);
        }
        atomic_store(&s->start, 1);
        side_b(s, batches);
        _exit(0);
    }
    if (bind_to(cpu_a) != 0) {
        perror("cacheline_probe: binding to the first CPU");
        kill(child, SIGKILL);
        return 1;
    }
    while (!atomic_load(&s->start)) {
        int status;
        if (waitpid(child, &status, WNOHANG) == child)
            return 1; /* it could not bind, and said so */
    }
    double ping[MAX_BATCHES], lines[MAX_BATCHES];
    for (int b = 0; b < batches; b++) {
        const uint64_t base = (uint64_t) b * PINGS * 2;
        const double t0 = now_ns();
        for (uint64_t i = 0; i < PINGS; i++) {
            atomic_store_explicit(&s->ping, base + 2 * i + 1, memory_order_release);
            while (atomic_load_explicit(&s->ping, memory_order_acquire) != base + 2 * i + 2)
                ;
        }
        ping[b] = (now_ns() - t0) / PINGS;
    }
    uint64_t k = 0;
    for (int b = 0; b < batches; b++) {
        const double t0 = now_ns();
        for (int i = 0; i < BLOCKS; i++) {
            ++k;
            memset(s->block, (int) (k & 0xff), BLOCK);
            atomic_store_explicit(&s->block_ready, k, memory_order_release);
            while (atomic_load_explicit(&s->block_read, memory_order_acquire) != k)
                ;
        }
        /* Each block: A's writes (its lines come back from B's cache) and
         * B's reads (they go over to B): two transfers per line. */
        lines[b] = (now_ns() - t0) / BLOCKS / (BLOCK / LINE);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("PROBE pingpong_ns %.1f lines_ns %.2f\n", median(ping, batches), median(lines, batches));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
