/*
 * coll_tca_module.c - which communicators coll tca serves.  Whether a
 * communicator can use tca at all depends only on facts every rank sees
 * alike: the modex that btl tca published for every member (same host, same
 * sub-cluster).  No communication.  What differs between ranks (layouts,
 * free device resources) is agreed per request in bcast_init.
 */
#include "coll_tca.h"

#include <stdlib.h>

#include "opal/mca/btl/btl.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/mca/btl/tca/btl_tca_modex.h"
#include "ompi/proc/proc.h"
#include "opal/util/show_help.h"
#include "tca_mca_check.h"

/* btl tca's modex key is derived from its component version: rebuild it. */
static mca_base_component_t btl_tca_version = {MCA_BTL_DEFAULT_VERSION("tca")};

static void module_construct(mca_coll_tca_module_t *m) {
    m->previous_bcast_init = NULL;
    m->previous_bcast_init_module = NULL;
    m->usable = -1;
    m->node_of = NULL;
}
static void module_destruct(mca_coll_tca_module_t *m) {
    if (NULL != m->previous_bcast_init_module) OBJ_RELEASE(m->previous_bcast_init_module);
    free(m->node_of);
}
OBJ_CLASS_INSTANCE(mca_coll_tca_module_t, mca_coll_base_module_t, module_construct, module_destruct);

int mca_coll_tca_init_query(bool enable_progress_threads, bool enable_mpi_threads) {
    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    return mca_coll_tca_params_valid() ? OMPI_SUCCESS : OMPI_ERR_BAD_PARAM;
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
    int node = -1;
    *priority = mca_coll_tca_component.priority;
    if (mca_coll_tca_component.priority < 0 || OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) < 2) return NULL;
    if (tcaSuccess != tcaGetNodeId(&node)) return NULL; /* btl tca did not start the device here */
    mca_coll_tca_module_t *m = OBJ_NEW(mca_coll_tca_module_t);
    if (NULL == m) return NULL;
    m->super.coll_module_enable = tca_module_enable;
    m->super.coll_bcast_init = mca_coll_tca_bcast_init;
    return &m->super;
}

static int lookup_modex(ompi_proc_t *proc, mca_btl_tca_modex_t *out) {
    mca_btl_tca_modex_t *modex = NULL;
    size_t size = 0;
    int rc;
    OPAL_MODEX_RECV(rc, &btl_tca_version, &proc->super.proc_name, (void **) &modex, &size);
    if (OPAL_SUCCESS != rc || NULL == modex || size != sizeof(*modex)) {
        free(modex);
        return OMPI_ERR_NOT_FOUND;
    }
    *out = *modex;
    free(modex);
    return OMPI_SUCCESS;
}

/* Lazily, on the first persistent broadcast of the communicator. */
int mca_coll_tca_module_usable(mca_coll_tca_module_t *m, struct ompi_communicator_t *comm);
int mca_coll_tca_module_usable(mca_coll_tca_module_t *m, struct ompi_communicator_t *comm) {
    if (m->usable >= 0) return m->usable;
    const int size = ompi_comm_size(comm);
    mca_btl_tca_modex_t mine, peer;
    m->usable = 0;
    if (OMPI_SUCCESS != lookup_modex(ompi_proc_local(), &mine)) return 0;
    m->node_of = (int *) malloc(sizeof(int) * (size_t) size);
    if (NULL == m->node_of) return 0;
    for (int r = 0; r < size; ++r) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, r);
        if (NULL == proc || OMPI_SUCCESS != lookup_modex(proc, &peer) || peer.subcluster != mine.subcluster ||
            proc->super.proc_name.jobid != ompi_proc_local()->super.proc_name.jobid)
            return 0;
        m->node_of[r] = peer.node;
    }
    m->usable = 1;
    return 1;
}
