/*
 * coll_tca_bcast_init.c - MPIX_Bcast_init: the plan every rank agrees on.
 *
 * bcast_init plans, registers the buffer and builds this rank's part, then
 * posts (never waits for) the one-time exchange with its tree neighbours
 * (coll_tca_connect.c); progress finishes it and builds the engine, MPI_Start
 * only kicks it (coll_tca_request.c).
 *
 * Every rank takes the same path: what decides between tca and libnbc is
 * either equal on every rank (the communicator, the message size, MCA values
 * registered with MCA_BASE_VAR_SCOPE_ALL_EQ) or agreed once, here, by one
 * small allreduce: each rank says whether its layout is contiguous, whether
 * it got the device resources the request needs, and which plan parameters it
 * uses.  Any "no" sends the request to libnbc everywhere.
 */
#include "coll_tca_request.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/mca/pml/pml.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/show_help.h"
#include "common_tca_session.h"
#include "mca_glue/tca_error_text.h"
#include "mca_glue/tca_mca_check.h"

/* The agreement of bcast_init: MPI_MIN of each entry over the communicator.
 * HOST_ONLY / GPU_ONLY: 1 where every rank's buffer is host / GPU memory
 * (both 0: mixed, and every rank then cuts segments for GPU buffers). */
enum {
    VOTE_CONTIGUOUS,
    VOTE_RESOURCES,
    VOTE_PARAMS,
    VOTE_PARAMS_NEG,
    VOTE_HOST_ONLY,
    VOTE_GPU_ONLY,
    VOTE_STAGE_ALL,     /* every size staged here (MIN: everywhere) */
    VOTE_STAGE_ALL_NEG, /* its negation (MIN: -(anywhere)) */
    VOTE_COUNT
};

/* The plan parameters every rank must share (they shape the tree and the
 * segments), folded into 30 bits; voted as (d, -d) so MIN tells equality. */
static int params_digest(void) {
    const mca_coll_tca_component_t *c = &mca_coll_tca_component;
    const uint64_t v[] = {c->segment_bytes, c->gpu_segment_bytes, c->ucx_segment_bytes,
                          c->chain_threshold, c->staging_bytes};
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); ++i)
        h = (h ^ v[i]) * 1099511628211ull;
    return (int) ((h ^ (h >> 32)) & 0x3fffffff);
}

/* Why the communicator as a whole cannot take this request (NULL: it can).
 * `mine` is this rank's vote, `all` the agreed one. */
static const char *refusal(const int *mine, const int *all, tcaResult local_error, char *why,
                           size_t len) {
    if (!all[VOTE_CONTIGUOUS])
        return mine[VOTE_CONTIGUOUS] ? "non-contiguous datatype at another rank"
                                     : "non-contiguous datatype";
    if (all[VOTE_PARAMS] != -all[VOTE_PARAMS_NEG])
        return "coll_tca segment/gpu_segment/ucx_segment/chain/staging sizes differ between ranks";
    if (!all[VOTE_RESOURCES]) {
        if (mine[VOTE_RESOURCES])
            return "no device resources at another rank";
        snprintf(why, len, "no device resources here: %s", tcaGetErrorString(local_error));
        return why;
    }
    return NULL;
}

static int fall_back(const char *why, void *buff, int count, struct ompi_datatype_t *datatype,
                     int root, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                     ompi_request_t **request, mca_coll_tca_module_t *m, size_t bytes) {
    opal_output_verbose(10, ompi_coll_base_framework.framework_output,
                        "coll:tca: persistent broadcast on %s (%zu bytes, root %d): libnbc (%s)",
                        comm->c_name, bytes, root, why);
    return m->previous_bcast_init(buff, count, datatype, root, comm, info, request,
                                  m->previous_bcast_init_module);
}

int mca_coll_tca_bcast_init(void *buff, int count, struct ompi_datatype_t *datatype, int root,
                            struct ompi_communicator_t *comm, struct ompi_info_t *info,
                            ompi_request_t **request, mca_coll_base_module_t *module) {
    mca_coll_tca_module_t *m = (mca_coll_tca_module_t *) module;
    size_t type_size = 0;
    ompi_datatype_type_size(datatype, &type_size);
    const size_t bytes = type_size * (size_t) count;
    /* Not ours, from facts equal on every rank (the members' modex, the type
     * signature's size, coll_tca_min_bytes): libnbc, no communication. */
    const char *why = !mca_coll_tca_module_usable(m, comm) ? "a member outside the tca sub-cluster"
                      : bytes < mca_coll_tca_component.min_bytes ? "below coll_tca_min_bytes"
                                                                 : NULL;
    if (NULL != why)
        return fall_back(why, buff, count, datatype, root, comm, info, request, m, bytes);

    /* Freed requests whose late peers are done give their counters back first. */
    mca_coll_tca_release_freed(0);

    /* The layout may differ between ranks (MPI_INT x n at the root, a vector
     * of n ints elsewhere): each rank prepares what it can, then all agree. */
    ptrdiff_t true_lb = 0, true_extent = 0;
    ompi_datatype_get_true_extent(datatype, &true_lb, &true_extent);
    tca_coll_peer_info_t mine_info;
    tca_coll_bcast_t *core = NULL;
    tca_coll_peer_info_t *children = NULL;
    ompi_request_t **exchange = NULL;
    const int contiguous = ompi_datatype_is_contiguous_memory_layout(datatype, count) ? 1 : 0;
    /* Segments are cut for the kind of memory (GPU copies cost more each);
     * a broadcast with host buffers at some ranks and GPU buffers at others
     * is agreed on in a second round, cut for GPU memory everywhere. */
    /* Staging every size is each rank's own choice (measured per process):
     * where ranks differ, a second round plans without it everywhere. */
    int gpu_anywhere = 0, stage_all = 1 == mca_coll_tca_component.stage_all ||
                                      (-1 == mca_coll_tca_component.stage_all &&
                                       mca_coll_tca_component.host_puts_by_target);
    for (;;) {
        tcaResult err = tcaSuccess;
        if (contiguous) {
            const tca_coll_bcast_params_t p = {
                .node_of = m->node_of,
                .size = ompi_comm_size(comm),
                .rank = ompi_comm_rank(comm),
                .root = root,
                .buffer = (char *) buff + true_lb,
                .bytes = bytes,
                .segment_bytes = mca_common_tca_session_across_hosts()
                                     ? mca_coll_tca_component.ucx_segment_bytes
                                     : mca_coll_tca_component.segment_bytes,
                .gpu_segment_bytes = mca_coll_tca_component.gpu_segment_bytes,
                .gpu_anywhere = gpu_anywhere,
                .chain_threshold = mca_coll_tca_component.chain_threshold,
                .staging_bytes = mca_coll_tca_component.staging_bytes,
                .stage_all = stage_all,
                .pipeline_pairs = mca_common_tca_session_across_hosts(),
                .engine = mca_coll_tca_component.engine,
                /* A CUDA-aware Open MPI hands us cudaMalloc'd buffers: the core
                 * asks CUDA and registers them as GPU memory (moved GPU to GPU).
                 * Where Open MPI's accelerator framework (5.0) says the buffer
                 * is host memory, nobody asks CUDA. */
                .detect_gpu =
                    OPAL_CUDA_SUPPORT && 0 != tca_ompi_buffer_on_gpu((char *) buff + true_lb),
            };
            core = tca_coll_bcast_new(&p, &mine_info, &err);
        }
        /* Everything that can fail on one rank alone happens before the vote. */
        if (NULL != core) {
            const size_t n = (size_t) tca_coll_bcast_num_children(core) + 1;
            children = (tca_coll_peer_info_t *) calloc(n, sizeof(*children));
            exchange = (ompi_request_t **) calloc(2 * n, sizeof(*exchange));
            if (NULL == children || NULL == exchange) {
                tca_coll_bcast_free(core);
                core = NULL;
                err = tcaErrorNoMemory;
            }
        }
        const int digest = params_digest(), on_gpu = NULL != core && tca_coll_bcast_on_gpu(core);
        const int stages =
            NULL != core ? tca_coll_bcast_stages_all(core) : stage_all && !gpu_anywhere;
        /* A rank without a core votes neither way on the memory: RESOURCES refuses. */
        int vote[VOTE_COUNT] = {contiguous,
                                !contiguous || NULL != core,
                                digest,
                                -digest,
                                NULL == core || !on_gpu,
                                NULL == core || on_gpu,
                                stages,
                                -stages},
            all[VOTE_COUNT];
        int rc = comm->c_coll->coll_allreduce(vote, all, VOTE_COUNT, MPI_INT, MPI_MIN, comm,
                                              comm->c_coll->coll_allreduce_module);
        char reason[160];
        const int mixed =
            OMPI_SUCCESS == rc && !all[VOTE_HOST_ONLY] && !all[VOTE_GPU_ONLY] && !gpu_anywhere;
        const int mixed_staging =
            OMPI_SUCCESS == rc && all[VOTE_STAGE_ALL] != -all[VOTE_STAGE_ALL_NEG];
        if (OMPI_SUCCESS != rc || mixed || mixed_staging ||
            NULL != (why = refusal(vote, all, err, reason, sizeof(reason)))) {
            if (NULL != core)
                tca_coll_bcast_free(core); /* nobody else knows its counters yet */
            core = NULL;
            free(children);
            free(exchange);
            children = NULL;
            exchange = NULL;
            if (OMPI_SUCCESS != rc)
                return rc;
            if (mixed || mixed_staging) {
                gpu_anywhere |= mixed;
                stage_all &= !mixed_staging;
                continue;
            }
            return fall_back(why, buff, count, datatype, root, comm, info, request, m, bytes);
        }
        break;
    }
    mca_coll_tca_request_t *r =
        mca_coll_tca_request_new(core, &mine_info, children, exchange, comm, datatype);
    if (NULL == r) {
        tca_coll_bcast_free(core);
        free(children);
        free(exchange);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    char path[128] = "direct (into the children's buffers)";
    if (tca_coll_bcast_slots(core) > 0)
        snprintf(path, sizeof(path), "staged through %zu slot%s of %zu bytes per child%s",
                 tca_coll_bcast_slots(core), tca_coll_bcast_slots(core) > 1 ? "s" : "",
                 tca_coll_bcast_slot_bytes(core),
                 tca_coll_bcast_stages_all(core) ? " (every size staged)" : "");
    /* The engine is known once it is built (the offload engine needs a free
     * DMA channel): try_connect prints the line then. */
    snprintf(r->shape, sizeof(r->shape),
             "persistent broadcast on %s (%zu bytes, root %d): tca, %%s, %s buffer, %s, "
             "%zu segment%s of %zu bytes",
             comm->c_name, bytes, root, tca_coll_bcast_on_gpu(core) ? "GPU" : "host", path,
             tca_coll_bcast_segments(core), tca_coll_bcast_segments(core) == 1 ? "" : "s",
             tca_coll_bcast_segment_bytes(core));
    /* The one-time exchange with the tree neighbours, posted, not awaited. */
    const int rc = mca_coll_tca_post_exchange(r, comm);
    if (OMPI_SUCCESS != rc) {
        /* Never handed out: what was posted is cancelled (receives) or left
         * to finish (sends of r->mine), and the request parked until it has. */
        mca_coll_tca_park_after_failed_post(r);
        return rc;
    }
    r->state = EXCHANGING;
    mca_coll_tca_request_track(r);
    *request = &r->super;
    return OMPI_SUCCESS;
}
