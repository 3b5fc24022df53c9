/*
 * coll_tca_connect.c - the one-time exchange of a persistent broadcast: each
 * rank sends its tree neighbours its buffer handle and counters, posted by
 * bcast_init and never waited for (progress builds the engine from the
 * answers: coll_tca_request.c), and what a post that failed leaves behind.
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

/* Receives the neighbours' infos and sends ours: a receive and a send per
 * neighbour, counted in r->nexchange as they are posted. */
int mca_coll_tca_post_exchange(mca_coll_tca_request_t *r, struct ompi_communicator_t *comm) {
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
        rc = tcaSuccess != mca_coll_tca_injected(TCA_COLL_FAIL_POST)
                 ? OMPI_ERR_OUT_OF_RESOURCE
                 : MCA_PML_CALL(isend(&r->mine, sizeof(r->mine), MPI_BYTE, peer, tag,
                                      MCA_PML_BASE_SEND_STANDARD, comm, &send));
        if (OMPI_SUCCESS != rc)
            break;
        r->exchange[r->nexchange++] = send;
    }
    if (OMPI_SUCCESS != rc)
        mca_coll_tca_request_fail("posting the one-time exchange of a persistent broadcast",
                                  tcaErrorSystem);
    return rc;
}

/* After a post failed: the receives posted are cancelled, the sends run to
 * their end, and the request's memory goes back once all of them have
 * (mca_coll_tca_release_freed). */
void mca_coll_tca_park_after_failed_post(mca_coll_tca_request_t *r) {
    mca_coll_tca_component_t *c = &mca_coll_tca_component;
    for (int i = 0; i < r->nexchange; ++i)
        if (NULL != r->exchange[i] && !REQUEST_COMPLETE(r->exchange[i]))
            (void) ompi_request_cancel(r->exchange[i]);
    if (NULL != r->datatype)
        OBJ_RELEASE(r->datatype);
    r->datatype = NULL;
    OMPI_REQUEST_FINI(&r->super);
    OPAL_THREAD_LOCK(&c->lock);
    mca_coll_tca_request_park_locked(r);
    OPAL_THREAD_UNLOCK(&c->lock);
}
