/*
 * coll_tca_module.c - which communicators coll tca serves.  Whether a
 * communicator can use tca at all depends only on facts every rank sees
 * alike: the place every member's TCA session published in the modex (same
 * job, same sub-cluster).  No communication.  What differs between ranks (layouts,
 * free device resources) is agreed per request in bcast_init.
 */
#include "coll_tca.h"

#include <stdlib.h>

#include "common_tca_session.h"
#include "ompi/proc/proc.h"
#include "opal/util/show_help.h"
#include "mca_glue/tca_mca_check.h"

static void module_construct(mca_coll_tca_module_t *m) {
    m->previous_bcast_init = NULL;
    m->previous_bcast_init_module = NULL;
    m->usable = -1;
    m->node_of = NULL;
}
static void module_destruct(mca_coll_tca_module_t *m) {
    if (NULL != m->previous_bcast_init_module)
        OBJ_RELEASE(m->previous_bcast_init_module);
    free(m->node_of);
}
OBJ_CLASS_INSTANCE(mca_coll_tca_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

int mca_coll_tca_init_query(bool enable_progress_threads, bool enable_mpi_threads) {
    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    if (!mca_coll_tca_params_valid())
        return OMPI_ERR_BAD_PARAM;
    mca_coll_tca_apply_thread_takeover();
    return OMPI_SUCCESS;
}

static int tca_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm) {
    mca_coll_tca_module_t *m = (mca_coll_tca_module_t *) module;
    /* Still libnbc's (lower priority) at this point: keep it for fallback. */
    if (NULL == comm->c_coll->coll_bcast_init || NULL == comm->c_coll->coll_bcast_init_module) {
        tca_show_help("help-coll-tca.txt", "no-fallback", comm->c_name);
        return OMPI_ERROR;
    }
    m->previous_bcast_init = comm->c_coll->coll_bcast_init;
    m->previous_bcast_init_module = comm->c_coll->coll_bcast_init_module;
    OBJ_RETAIN(m->previous_bcast_init_module);
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_tca_comm_query(struct ompi_communicator_t *comm, int *priority) {
    *priority = mca_coll_tca_component.priority;
    if (mca_coll_tca_component.priority < 0 || OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) < 2)
        return NULL;
    if (!mca_coll_tca_component.session_joined)
        return NULL; /* no TCA node in this process */
    mca_coll_tca_module_t *m = OBJ_NEW(mca_coll_tca_module_t);
    if (NULL == m)
        return NULL;
    m->super.coll_module_enable = tca_module_enable;
    m->super.coll_bcast_init = mca_coll_tca_bcast_init;
    return &m->super;
}

/* Lazily, on the first persistent broadcast of the communicator. */
int mca_coll_tca_module_usable(mca_coll_tca_module_t *m, struct ompi_communicator_t *comm) {
    if (m->usable >= 0)
        return m->usable;
    const int size = ompi_comm_size(comm);
    tca_session_place_t mine, peer;
    m->usable = 0;
    if (OPAL_SUCCESS != mca_common_tca_session_lookup(&ompi_proc_local()->super.proc_name, &mine))
        return 0;
    m->node_of = (int *) malloc(sizeof(int) * (size_t) size);
    if (NULL == m->node_of)
        return 0;
    for (int r = 0; r < size; ++r) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, r);
        if (NULL == proc ||
            OPAL_SUCCESS != mca_common_tca_session_lookup(&proc->super.proc_name, &peer) ||
            peer.subcluster != mine.subcluster ||
            proc->super.proc_name.jobid != ompi_proc_local()->super.proc_name.jobid)
            return 0;
        m->node_of[r] = peer.node;
    }
    m->usable = 1;
    return 1;
}
