/*
 * shm_fill.h - fill /dev/shm to its last byte in the middle of an MPI job
 * (test/shm_full.sh, issue: a full /dev/shm must not kill a running job).
 * Only where TCA_TEST_FILL_SHM=1, which test/shm_full.sh sets inside a mount
 * namespace with a private small tmpfs on /dev/shm: never the host's.
 * Rank 0 fills and the others wait in a barrier, so every page touched
 * afterwards, by any rank, that was not reserved would raise SIGBUS.
 */
#ifndef TCA_TEST_SHM_FILL_H
#define TCA_TEST_SHM_FILL_H

#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define TCA_TEST_FILL_PATH "/dev/shm/filler-of-shm-full-test"

static int tca_test_fill_wanted(void) {
    const char *v = getenv("TCA_TEST_FILL_SHM");
    return NULL != v && 0 == strcmp(v, "1");
}

/* Free bytes left in /dev/shm. */
static unsigned long long tca_test_shm_free(void) {
    struct statvfs fs;
    if (0 != statvfs("/dev/shm", &fs))
        return 0;
    return (unsigned long long) fs.f_bavail * fs.f_frsize;
}

static void tca_test_fill_shm(MPI_Comm comm) {
    int rank;
    if (!tca_test_fill_wanted())
        return;
    MPI_Comm_rank(comm, &rank);
    if (0 == rank) {
        const int fd = open(TCA_TEST_FILL_PATH, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0) {
            perror("shm_fill: open " TCA_TEST_FILL_PATH);
            MPI_Abort(comm, 1);
        }
        /* Grow by halves until nothing more fits: the last pages too. */
        off_t size = 0;
        for (unsigned long long step = tca_test_shm_free(); step >= 4096; step /= 2)
            while (0 == posix_fallocate(fd, size, (off_t) step))
                size += (off_t) step;
        close(fd);
        printf("shm_fill: /dev/shm filled (%llu MiB more taken, %llu bytes free)\n",
               (unsigned long long) size >> 20, tca_test_shm_free());
        fflush(stdout);
    }
    MPI_Barrier(comm);
}

static void tca_test_unfill_shm(MPI_Comm comm) {
    int rank;
    if (!tca_test_fill_wanted())
        return;
    MPI_Barrier(comm);
    MPI_Comm_rank(comm, &rank);
    if (0 == rank)
        unlink(TCA_TEST_FILL_PATH);
}

#endif /* TCA_TEST_SHM_FILL_H */
