/* session_core.h - the part of the TCA session (common_tca_session.h) that
 * needs no MPI: where this process sits in its host's sub-clusters, and who
 * shares its TCA node.  C API over session_core.cpp, for the MCA glue. */
#ifndef TCA_SESSION_CORE_H
#define TCA_SESSION_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported from libmca_common_tca (built with hidden visibility). */
#define TCA_SESSION_API __attribute__((visibility("default")))

/* A process's place: its sub-cluster of consecutive local ranks, its node id
 * there and the sub-cluster's size. */
typedef struct tca_session_place_t {
    int32_t subcluster;
    int32_t node;
    int32_t num_nodes;
} tca_session_place_t;

/* Sub-clusters of `subcluster_size` consecutive local ranks (0, or more than
 * the host has: one of all of them; at most TCA_MAX_NODES each); the last
 * may be smaller. */
TCA_SESSION_API tca_session_place_t tca_session_place(int local_rank, int local_size,
                                                      int subcluster_size);

/* Starts the device for the first client: a tcaResult. */
typedef int (*tca_session_start_fn)(const tca_session_place_t *place, void *ctx);

/* Outcomes of tca_session_core_join. */
enum {
    TCA_SESSION_STARTED = 0, /* the first client: start() ran; *place is ours, leave once done */
    TCA_SESSION_JOINED = 1,  /* a later client: *place is the session's; leave once done */
    TCA_SESSION_ALONE = 2, /* no other process in our sub-cluster: nothing started, do not leave */
    TCA_SESSION_CONFLICT = 3,    /* the session runs with another sub-cluster size (*why says) */
    TCA_SESSION_START_FAILED = 4 /* start() failed: its result in *device_result */
};

/* Joins the process's session.  The first client places the process (its
 * requested sub-cluster size; < 0: 0) and calls start(); later clients share
 * the place, unless they ask for a different size (< 0: any).  Thread safe. */
TCA_SESSION_API int tca_session_core_join(int requested_size, int local_rank, int local_size,
                                          tca_session_start_fn start, void *ctx,
                                          tca_session_place_t *place, int *device_result, char *why,
                                          size_t why_len);
/* 1 when this was the last client (the caller stops the device), else 0. */
TCA_SESSION_API int tca_session_core_leave(void);
/* Clients now. */
TCA_SESSION_API int tca_session_core_clients(void);
/* 1: the session's C++ (built with libtca, by the same rules) was compiled
 * with optimization; answers without a device, for ompi_info. */
TCA_SESSION_API int tca_session_core_optimized(void);

#ifdef __cplusplus
}
#endif

#endif
