/*
 * coll_tca_request.c - the life of a persistent broadcast request: MPI_Start
 * only kicks the engine built at init; progress completes it; a start before
 * the one-time exchange finished waits for it.  MPI_Request_free never waits
 * for other ranks: a request whose last credits are still on their way from
 * late children is parked, and its counters, channel and memory go back to
 * the device from progress once they are in.
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
OBJ_CLASS_INSTANCE(mca_coll_tca_request_t, ompi_request_t, request_construct, NULL);

/* c->lock held: progress runs while any request is active or parked. */
static void need_progress_locked(mca_coll_tca_component_t *c) {
    if (!c->progress_registered) {
        opal_progress_register(mca_coll_tca_progress);
        c->progress_registered = 1;
    }
}

void mca_coll_tca_request_track(mca_coll_tca_request_t *r) {
    mca_coll_tca_component_t *c = &mca_coll_tca_component;
    OPAL_THREAD_LOCK(&c->lock);
    opal_list_append(&c->active, &r->super.super.super);
    need_progress_locked(c);
    OPAL_THREAD_UNLOCK(&c->lock);
}

void mca_coll_tca_request_park_locked(mca_coll_tca_request_t *r) {
    opal_list_append(&mca_coll_tca_component.freed, &r->super.super.super);
    need_progress_locked(&mca_coll_tca_component);
}

int mca_coll_tca_request_fail(const char *what, tcaResult r) {
    char why[768];
    tca_show_help("help-coll-tca.txt", "call-failed", what, tca_error_text(r, why, sizeof(why)));
    return tcaErrorNoMemory == r || tcaErrorNoResource == r ? MPI_ERR_NO_MEM : MPI_ERR_INTERN;
}

tcaResult mca_coll_tca_injected(int step) {
    return mca_coll_tca_component.test_fail == step ? tcaErrorNoResource : tcaSuccess;
}

static void destroy(mca_coll_tca_request_t *r) {
    if (NULL != r->core)
        tca_coll_bcast_free(r->core);
    r->core = NULL;
    free(r->children);
    free(r->exchange);
    OBJ_RELEASE(r);
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
        if (!mca_coll_tca_exchange_finished(r) ||
            (NULL != r->core && !tca_coll_bcast_settled(r->core)))
            continue;
        opal_list_remove_item(&c->freed, &r->super.super.super);
        destroy(r);
    }
    OPAL_THREAD_UNLOCK(&c->lock);
}

mca_coll_tca_request_t *
mca_coll_tca_request_new(tca_coll_bcast_t *core, const tca_coll_peer_info_t *mine,
                         tca_coll_peer_info_t *children, ompi_request_t **exchange,
                         struct ompi_communicator_t *comm, struct ompi_datatype_t *datatype) {
    mca_coll_tca_request_t *r = OBJ_NEW(mca_coll_tca_request_t);
    if (NULL == r)
        return NULL;
    r->core = core;
    r->mine = *mine;
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
    return r;
}

/* The one-time exchange is done (its buffers may go)?  Frees the PML
 * requests when it is. */
int mca_coll_tca_exchange_finished(mca_coll_tca_request_t *r) {
    for (int i = 0; i < r->nexchange; ++i)
        if (NULL != r->exchange[i] && !REQUEST_COMPLETE(r->exchange[i]))
            return 0;
    for (int i = 0; i < r->nexchange; ++i)
        if (NULL != r->exchange[i])
            ompi_request_free(&r->exchange[i]);
    r->nexchange = 0;
    return 1;
}

/* Exchange done?  Then build the engine and say which one runs (verbose). */
int mca_coll_tca_try_connect(mca_coll_tca_request_t *r) {
    if (!mca_coll_tca_exchange_finished(r))
        return 0;
    tcaResult e = mca_coll_tca_injected(TCA_COLL_FAIL_CONNECT);
    if (tcaSuccess == e)
        e = tca_coll_bcast_connect(r->core, &r->parent, r->children);
    if (tcaSuccess != e) {
        r->state = FAILED;
        r->error_class = mca_coll_tca_request_fail("building the broadcast program", e);
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
    tcaResult e = mca_coll_tca_injected(TCA_COLL_FAIL_START);
    if (tcaSuccess == e)
        e = tca_coll_bcast_start(r->core);
    if (tcaSuccess != e) {
        r->state = FAILED;
        r->error_class = mca_coll_tca_request_fail("starting a persistent broadcast", e);
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
            if (0 == mca_coll_tca_try_connect(r))
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
                r->super.req_status.MPI_ERROR =
                    mca_coll_tca_request_fail("a persistent broadcast", e);
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
    mca_coll_tca_request_park_locked(r);
    OPAL_THREAD_UNLOCK(&c->lock);
    if (NULL != r->datatype)
        OBJ_RELEASE(r->datatype);
    r->datatype = NULL;
    OMPI_REQUEST_FINI(&r->super);
    *request = MPI_REQUEST_NULL;
    mca_coll_tca_release_freed(0); /* most often settled already: given back now */
    return OMPI_SUCCESS;
}
