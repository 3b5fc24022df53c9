/*
 * coll_tca_bcast_init.c - the persistent broadcast request.
 *
 * bcast_init plans, registers the buffer and builds this rank's part, then
 * posts (never waits for) the one-time exchange with its tree neighbours:
 * buffer handle and counters.  The progress function finishes the exchange,
 * builds the engine (for the offload engine: the descriptor program) and runs
 * a start that came before it was ready.  MPI_Start only kicks the engine.
 *
 * Every rank takes the same path: what decides between tca and libnbc is
 * either equal on every rank (the communicator, the message size, MCA values
 * registered with MCA_BASE_VAR_SCOPE_ALL_EQ) or agreed once, here, by one
 * small allreduce: each rank says whether its layout is contiguous, whether
 * it got the device resources the request needs, and which plan parameters it
 * uses.  Any "no" sends the request to libnbc everywhere.
 *
 * MPI_Request_free never waits for other ranks: a request whose last credits
 * are still on their way from late children is parked, and its counters,
 * channel and memory go back to the device from progress once they are in.
 */
#include "coll_tca.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/mca/pml/pml.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/show_help.h"
#include "common_tca_session.h"
#include "tca_error_text.h"
#include "tca_mca_check.h"

/* FAILED: the request can never run (its exchange, engine or a start
 * failed, said once where it happened); every start completes at once with
 * its error class. */
enum { EXCHANGING, IDLE, RUNNING, FAILED };

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

typedef struct mca_coll_tca_request_t {
    ompi_request_t super;
    tca_coll_bcast_t *core;
    ompi_datatype_t *datatype; /* retained if not predefined (4.1.4 does not) */
    int state;
    int start_pending;
    int error_class; /* FAILED: what every start completes with */
    tca_coll_peer_info_t mine, parent, *children;
    ompi_request_t **exchange; /* PML requests of the one-time exchange */
    int nexchange;
    char shape[224]; /* the verbose line's description, printed once the engine is built */
} mca_coll_tca_request_t;

static int request_start(size_t count, ompi_request_t **requests);
static int request_free(ompi_request_t **request);
static int request_cancel(ompi_request_t *request, int complete) {
    (void) request;
    (void) complete;
    return MPI_ERR_REQUEST;
}

static void request_construct(mca_coll_tca_request_t *r) {
    r->core = NULL;
    r->datatype = NULL;
    r->children = NULL;
    r->exchange = NULL;
    r->nexchange = 0;
    r->start_pending = 0;
    r->error_class = MPI_SUCCESS;
    r->shape[0] = '\0';
    r->state = EXCHANGING;
}
static OBJ_CLASS_INSTANCE(mca_coll_tca_request_t, ompi_request_t, request_construct, NULL);

static void track(mca_coll_tca_request_t *r) {
    mca_coll_tca_component_t *c = &mca_coll_tca_component;
    OPAL_THREAD_LOCK(&c->lock);
    opal_list_append(&c->active, &r->super.super.super);
    if (!c->progress_registered) {
        opal_progress_register(mca_coll_tca_progress);
        c->progress_registered = 1;
    }
    OPAL_THREAD_UNLOCK(&c->lock);
}

/* Says once what failed; the MPI error class the request completes with. */
static int fail(const char *what, tcaResult r) {
    char why[768];
    tca_show_help("help-coll-tca.txt", "call-failed", what, tca_error_text(r, why, sizeof(why)));
    return tcaErrorNoMemory == r || tcaErrorNoResource == r ? MPI_ERR_NO_MEM : MPI_ERR_INTERN;
}

/* Test hook (TCA_COLL_TEST_FAIL, read once by the component): the named step
 * fails as a device without resources would make it fail. */
static tcaResult injected(int step) {
    return mca_coll_tca_component.test_fail == step ? tcaErrorNoResource : tcaSuccess;
}

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

static void destroy(mca_coll_tca_request_t *r) {
    if (NULL != r->core)
        tca_coll_bcast_free(r->core);
    r->core = NULL;
    free(r->children);
    free(r->exchange);
    OBJ_RELEASE(r);
}

/* c->lock held.  The one-time exchange of a freed request is done (its
 * buffers may go)?  Frees the PML requests when it is. */
static int exchange_finished(mca_coll_tca_request_t *r) {
    for (int i = 0; i < r->nexchange; ++i)
        if (NULL != r->exchange[i] && !REQUEST_COMPLETE(r->exchange[i]))
            return 0;
    for (int i = 0; i < r->nexchange; ++i)
        if (NULL != r->exchange[i])
            ompi_request_free(&r->exchange[i]);
    r->nexchange = 0;
    return 1;
}

/* Give the resources of freed requests back once nothing can land in them
 * any more; force (component close, after every peer finished): all of them. */
void mca_coll_tca_release_freed(int force) {
    mca_coll_tca_component_t *c = &mca_coll_tca_component;
    mca_coll_tca_request_t *r, *next;
    if (opal_list_is_empty(&c->freed))
        return;
    OPAL_THREAD_LOCK(&c->lock);
    OPAL_LIST_FOREACH_SAFE(r, next, &c->freed, mca_coll_tca_request_t) {
        if (force) {
            opal_list_remove_item(&c->freed, &r->super.super.super);
            if (NULL != r->core)
                tca_coll_bcast_free(r->core);
            r->core = NULL;
            if (0 == r->nexchange)
                destroy(r); /* else its buffers stay with the PML's requests */
            continue;
        }
        if (!exchange_finished(r) || (NULL != r->core && !tca_coll_bcast_settled(r->core)))
            continue;
        opal_list_remove_item(&c->freed, &r->super.super.super);
        destroy(r);
    }
    OPAL_THREAD_UNLOCK(&c->lock);
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

/* Receives the neighbours' infos and sends ours: a receive and a send per
 * neighbour, counted in r->nexchange as they are posted. */
static int post_exchange(mca_coll_tca_request_t *r, struct ompi_communicator_t *comm) {
    const int parent = tca_coll_bcast_parent(r->core),
              nchildren = tca_coll_bcast_num_children(r->core);
    const int tag = ompi_coll_base_nbc_reserve_tags(comm, 1);
    int rc = OMPI_SUCCESS;
    for (int i = -1; i < nchildren && OMPI_SUCCESS == rc; ++i) {
        const int peer = i < 0 ? parent : tca_coll_bcast_child(r->core, i);
        if (peer < 0)
            continue; /* the root has no parent */
        void *into = i < 0 ? (void *) &r->parent : (void *) &r->children[i];
        ompi_request_t *recv = MPI_REQUEST_NULL, *send = MPI_REQUEST_NULL;
        rc = MCA_PML_CALL(irecv(into, sizeof(r->parent), MPI_BYTE, peer, tag, comm, &recv));
        if (OMPI_SUCCESS != rc)
            break;
        r->exchange[r->nexchange++] = recv;
        rc = tcaSuccess != injected(TCA_COLL_FAIL_POST)
                 ? OMPI_ERR_OUT_OF_RESOURCE
                 : MCA_PML_CALL(isend(&r->mine, sizeof(r->mine), MPI_BYTE, peer, tag,
                                      MCA_PML_BASE_SEND_STANDARD, comm, &send));
        if (OMPI_SUCCESS != rc)
            break;
        r->exchange[r->nexchange++] = send;
    }
    if (OMPI_SUCCESS != rc)
        fail("posting the one-time exchange of a persistent broadcast", tcaErrorSystem);
    return rc;
}

/* After a post failed: the receives posted are cancelled, the sends run to
 * their end, and the request's memory goes back once all of them have
 * (mca_coll_tca_release_freed). */
static void park_after_failed_post(mca_coll_tca_request_t *r) {
    mca_coll_tca_component_t *c = &mca_coll_tca_component;
    for (int i = 0; i < r->nexchange; ++i)
        if (NULL != r->exchange[i] && !REQUEST_COMPLETE(r->exchange[i]))
            (void) ompi_request_cancel(r->exchange[i]);
    if (NULL != r->datatype)
        OBJ_RELEASE(r->datatype);
    r->datatype = NULL;
    OMPI_REQUEST_FINI(&r->super);
    OPAL_THREAD_LOCK(&c->lock);
    opal_list_append(&c->freed, &r->super.super.super);
    if (!c->progress_registered) {
        opal_progress_register(mca_coll_tca_progress);
        c->progress_registered = 1;
    }
    OPAL_THREAD_UNLOCK(&c->lock);
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
    mca_coll_tca_request_t *r = OBJ_NEW(mca_coll_tca_request_t);
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
    r->core = core;
    r->mine = mine_info;
    r->children = children;
    r->exchange = exchange;
    OMPI_REQUEST_INIT(&r->super, true);
    r->super.req_type = OMPI_REQUEST_COLL;
    r->super.req_start = request_start;
    r->super.req_free = request_free;
    r->super.req_cancel = request_cancel;
    r->super.req_mpi_object.comm = comm;
    if (!ompi_datatype_is_predefined(datatype)) {
        OBJ_RETAIN(datatype);
        r->datatype = datatype;
    }

    /* The one-time exchange with the tree neighbours, posted, not awaited. */
    const int rc = post_exchange(r, comm);
    if (OMPI_SUCCESS != rc) {
        /* Never handed out: what was posted is cancelled (receives) or left
         * to finish (sends of r->mine), and the request parked until it has. */
        park_after_failed_post(r);
        return rc;
    }
    r->state = EXCHANGING;
    track(r);
    *request = &r->super;
    return OMPI_SUCCESS;
}

/* c->lock held.  The request can never run: each start completes at once
 * with `error_class` (the caller said what failed, once). */
static void give_up(mca_coll_tca_request_t *r, int error_class) {
    r->state = FAILED;
    r->error_class = error_class;
}

/* Exchange done?  Then build the engine and say which one runs.  0: not yet;
 * 1: built (IDLE); -1: failed (FAILED). */
static int try_connect(mca_coll_tca_request_t *r) {
    for (int i = 0; i < r->nexchange; ++i)
        if (NULL != r->exchange[i] && !REQUEST_COMPLETE(r->exchange[i]))
            return 0;
    for (int i = 0; i < r->nexchange; ++i)
        if (NULL != r->exchange[i])
            ompi_request_free(&r->exchange[i]);
    r->nexchange = 0;
    tcaResult e = injected(TCA_COLL_FAIL_CONNECT);
    if (tcaSuccess == e)
        e = tca_coll_bcast_connect(r->core, &r->parent, r->children);
    if (tcaSuccess != e) {
        give_up(r, fail("building the broadcast program", e));
        return -1;
    }
    const int engine = tca_coll_bcast_engine(r->core);
    char used[96];
    snprintf(used, sizeof(used), "%s engine%s",
             TCA_COLL_ENGINE_OFFLOAD == engine ? "offload" : "thread",
             TCA_COLL_ENGINE_OFFLOAD == mca_coll_tca_component.engine &&
                     TCA_COLL_ENGINE_OFFLOAD != engine
                 ? " (no DMA channel free for the offload engine)"
                 : "");
    char line[sizeof(r->shape) + sizeof(used)];
    snprintf(line, sizeof(line), r->shape, used);
    opal_output_verbose(10, ompi_coll_base_framework.framework_output, "coll:tca: %s", line);
    r->state = IDLE;
    return 1;
}

/* c->lock held.  Starts the built engine (RUNNING), or gives the request up. */
static int kick(mca_coll_tca_request_t *r) {
    tcaResult e = injected(TCA_COLL_FAIL_START);
    if (tcaSuccess == e)
        e = tca_coll_bcast_start(r->core);
    if (tcaSuccess != e) {
        give_up(r, fail("starting a persistent broadcast", e));
        return r->error_class;
    }
    r->state = RUNNING;
    return OMPI_SUCCESS;
}

/* c->lock held: ends the start under way with the request's status (taken
 * off the active list by the caller); the lock is dropped meanwhile. */
static void complete_locked(mca_coll_tca_request_t *r) {
    OPAL_THREAD_UNLOCK(&mca_coll_tca_component.lock);
    ompi_request_complete(&r->super, true);
    OPAL_THREAD_LOCK(&mca_coll_tca_component.lock);
}

int mca_coll_tca_progress(void) {
    mca_coll_tca_component_t *c = &mca_coll_tca_component;
    mca_coll_tca_request_t *r, *next;
    int count = 0;
    mca_coll_tca_release_freed(0);
    if (opal_list_is_empty(&c->active))
        return 0;
    OPAL_THREAD_LOCK(&c->lock);
    OPAL_LIST_FOREACH_SAFE(r, next, &c->active, mca_coll_tca_request_t) {
        if (EXCHANGING == r->state) {
            if (0 == try_connect(r))
                continue;
            if (FAILED != r->state && r->start_pending)
                (void) kick(r);
            if (RUNNING != r->state) {
                /* Built and not started, or given up: off the list; a start
                 * that waited for the exchange ends now, with the error. */
                opal_list_remove_item(&c->active, &r->super.super.super);
                if (r->start_pending) {
                    r->start_pending = 0;
                    r->super.req_status.MPI_ERROR = r->error_class;
                    ++count;
                    complete_locked(r);
                    next = (mca_coll_tca_request_t *) opal_list_get_first(
                        &c->active); /* it may have changed */
                }
                continue;
            }
            r->start_pending = 0;
        }
        if (RUNNING == r->state) {
            const tcaResult e = tca_coll_bcast_test(r->core);
            if (tcaErrorNotReady == e)
                continue;
            r->state = IDLE;
            if (tcaSuccess != e)
                r->super.req_status.MPI_ERROR = fail("a persistent broadcast", e);
            opal_list_remove_item(&c->active, &r->super.super.super);
            ++count;
            complete_locked(r);
            next = (mca_coll_tca_request_t *) opal_list_get_first(
                &c->active); /* the list may have changed */
        }
    }
    OPAL_THREAD_UNLOCK(&c->lock);
    return count;
}

static int request_start(size_t count, ompi_request_t **requests) {
    mca_coll_tca_component_t *c = &mca_coll_tca_component;
    for (size_t i = 0; i < count; ++i) {
        mca_coll_tca_request_t *r = (mca_coll_tca_request_t *) requests[i];
        if (OMPI_REQUEST_ACTIVE == r->super.req_state)
            return MPI_ERR_REQUEST;
        r->super.req_complete = REQUEST_PENDING;
        r->super.req_state = OMPI_REQUEST_ACTIVE;
        r->super.req_status.MPI_ERROR = OMPI_SUCCESS;
        OPAL_THREAD_LOCK(&c->lock);
        if (EXCHANGING == r->state) {
            r->start_pending = 1; /* progress kicks it once the exchange is done */
        } else if (FAILED != r->state && OMPI_SUCCESS == kick(r)) {
            opal_list_append(&c->active, &r->super.super.super);
        } else {
            /* It can never run: this start ends at once with the error (MPI_Wait
             * reports it), as every later one will. */
            r->super.req_status.MPI_ERROR = r->error_class;
            complete_locked(r);
        }
        OPAL_THREAD_UNLOCK(&c->lock);
    }
    return OMPI_SUCCESS;
}

static int request_free(ompi_request_t **request) {
    mca_coll_tca_request_t *r = (mca_coll_tca_request_t *) *request;
    mca_coll_tca_component_t *c = &mca_coll_tca_component;
    if (OMPI_REQUEST_ACTIVE == r->super.req_state && !REQUEST_COMPLETE(&r->super))
        return MPI_ERR_REQUEST;
    OPAL_THREAD_LOCK(&c->lock);
    mca_coll_tca_request_t *it;
    OPAL_LIST_FOREACH(it, &c->active, mca_coll_tca_request_t) {
        if (it == r) {
            opal_list_remove_item(&c->active, &r->super.super.super);
            break;
        }
    }
    /* Our parent's request waits for the credits we still owe. */
    if (NULL != r->core)
        tca_coll_bcast_retire(r->core);
    /* Parked, never waited for: a late child may still return credits, or the
     * one-time exchange still run; progress gives everything back after. */
    opal_list_append(&c->freed, &r->super.super.super);
    if (!c->progress_registered) {
        opal_progress_register(mca_coll_tca_progress);
        c->progress_registered = 1;
    }
    OPAL_THREAD_UNLOCK(&c->lock);
    if (NULL != r->datatype)
        OBJ_RELEASE(r->datatype);
    r->datatype = NULL;
    OMPI_REQUEST_FINI(&r->super);
    *request = MPI_REQUEST_NULL;
    mca_coll_tca_release_freed(0); /* most often settled already: given back now */
    return OMPI_SUCCESS;
}
