/* byte_pattern.h - the MPI test programs' data: a byte pattern by position and
 * seed, filled and checked (the first wrong byte fails the job), and a
 * malloc that fails the job.  Include after mpi_fail.h (FAIL). */
#ifndef TEST_BYTE_PATTERN_H
#define TEST_BYTE_PATTERN_H

#include <stdlib.h>

static inline unsigned char pattern(size_t i, unsigned seed) {
    return (unsigned char) (i * 131 + seed * 7 + (i >> 9));
}
static inline void fill(void *buf, size_t n, unsigned seed) {
    unsigned char *b = buf;
    for (size_t i = 0; i < n; i++)
        b[i] = pattern(i, seed);
}
static inline void check(const void *buf, size_t n, unsigned seed, const char *what) {
    const unsigned char *b = buf;
    for (size_t i = 0; i < n; i++)
        if (b[i] != pattern(i, seed))
            FAIL("%s: byte %zu of %zu is %u, expected %u", what, i, n, b[i], pattern(i, seed));
}
static inline void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p)
        FAIL("out of memory (%zu bytes)", n);
    return p;
}

#endif
