/*
 * btl_tca_module.c - the module: reachability (add_procs), error callback
 * and finalize (registration: btl_tca_register.c).
 */
#include "btl_tca.h"
#include "btl_tca_endpoint.h"
#include "btl_tca_frag.h"

#include <string.h>

#include "opal/class/opal_bitmap.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"
#include "mca_glue/tca_mca_check.h"

static int tca_register_error(struct mca_btl_base_module_t *btl,
                              mca_btl_base_module_error_cb_fn_t cbfunc);

mca_btl_tca_module_t mca_btl_tca_module = {
    .super =
        {
            .btl_component = &mca_btl_tca_component.super,
            .btl_add_procs = mca_btl_tca_add_procs,
            .btl_del_procs = mca_btl_tca_del_procs,
            .btl_finalize = mca_btl_tca_finalize,
            .btl_alloc = mca_btl_tca_alloc,
            .btl_free = mca_btl_tca_free,
            .btl_prepare_src = mca_btl_tca_prepare_src,
            .btl_send = mca_btl_tca_send,
            .btl_sendi = mca_btl_tca_sendi,
            .btl_put = mca_btl_tca_put,
            .btl_get = mca_btl_tca_get,
            .btl_atomic_op = mca_btl_tca_aop,
            .btl_atomic_fop = mca_btl_tca_afop,
            .btl_atomic_cswap = mca_btl_tca_acswap,
            .btl_dump = mca_btl_base_dump,
            .btl_register_error = tca_register_error,
            .btl_register_mem = mca_btl_tca_register_mem,
            .btl_deregister_mem = mca_btl_tca_deregister_mem,
        },
};

static void endpoint_construct(mca_btl_tca_endpoint_t *ep) {
    ep->proc = NULL;
    ep->node = -1;
    ep->peer = NULL;
    ep->pending_count = 0;
    ep->rendezvous_in_flight = 0;
    ep->last_rendezvous = NULL;
#if OPAL_CUDA_SUPPORT
    ep->cuda_get_announced = 0;
#endif
    OBJ_CONSTRUCT(&ep->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&ep->pending, opal_list_t);
}
static void endpoint_destruct(mca_btl_tca_endpoint_t *ep) {
    if (NULL != ep->peer)
        tca_btl_peer_free(ep->peer);
    OBJ_DESTRUCT(&ep->pending);
    OBJ_DESTRUCT(&ep->lock);
}
OBJ_CLASS_INSTANCE(mca_btl_tca_endpoint_t, opal_list_item_t, endpoint_construct, endpoint_destruct);

#if OPAL_CUDA_SUPPORT
/* ob1 enables its GPU zero copy (a GPU get) per peer when a BTL reports
 * TCA_BTL_ERROR_FLAGS_ADD_GPU_IPC for it (smcuda, after its IPC handshake).
 * Every peer of the sub-cluster runs the same btl tca and serves gets, so we
 * announce them when ob1 registers its callback, which it does after each of
 * its add_procs (MPI_Init: every local process, add_procs_cutoff only defers
 * remote ones; spawn and connect: the new ones, announced then).  Not from
 * our add_procs itself: ob1's handler looks up the proc's bml endpoint, which
 * exists only after the BTLs' add_procs returned.  A process the bml adds
 * lazily on first contact (a remote one: never a TCA peer) is not announced. */
static void announce_cuda_get(mca_btl_tca_module_t *m, mca_btl_tca_endpoint_t *ep) {
    if (NULL == m->error_cb || NULL == ep || NULL == ep->proc || ep->cuda_get_announced)
        return;
    if (!(m->super.btl_flags & TCA_BTL_FLAGS_GPU_GET))
        return;
    ep->cuda_get_announced = 1;
    int stream = opal_btl_base_framework.framework_output;
    m->error_cb(&m->super, TCA_BTL_ERROR_FLAGS_ADD_GPU_IPC, ep->proc, (char *) &stream);
}
#endif

static int tca_register_error(struct mca_btl_base_module_t *btl,
                              mca_btl_base_module_error_cb_fn_t cbfunc) {
    mca_btl_tca_module_t *m = (mca_btl_tca_module_t *) btl;
    m->error_cb = cbfunc;
#if OPAL_CUDA_SUPPORT
    for (int n = 0; n < TCA_MAX_NODES; ++n)
        announce_cuda_get(m, mca_btl_tca_component.endpoints[n]);
#endif
    return OPAL_SUCCESS;
}

/* ---- reachability ---- */

static bool same_geometry(const mca_btl_tca_modex_t *modex, const mca_btl_tca_component_t *c) {
    return modex->version == MCA_BTL_TCA_MODEX_VERSION && modex->num_nodes == c->num_nodes &&
           modex->ring_slots == c->set.ring_slots && modex->slot_payload == c->slot_payload &&
           modex->node >= 0 && modex->node < c->num_nodes && modex->node != c->node;
}

static mca_btl_tca_endpoint_t *create_endpoint(struct opal_proc_t *proc,
                                               const mca_btl_tca_modex_t *modex) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    void *peer_area = NULL; /* across hosts: none, its area is written by PIO through modex->area */
    if (!c->across_hosts) {
        tcaHandle area = modex->area;
        const tcaResult r = tcaPioMap(&area, &peer_area);
        if (tcaSuccess != r) {
            tca_show_help("help-btl-tca.txt", "map-failed", modex->node, tcaGetErrorString(r));
            return NULL;
        }
    }
    mca_btl_tca_endpoint_t *ep = OBJ_NEW(mca_btl_tca_endpoint_t);
    if (NULL == ep)
        return NULL;
    ep->proc = proc;
    ep->node = modex->node;
    ep->peer = tca_btl_peer_new(c->area, peer_area, &modex->area, c->num_nodes, c->node,
                                modex->node, c->set.ring_slots, c->slot_payload,
                                modex->has_progress_thread, modex->polls_by_traffic);
    if (NULL == ep->peer) {
        OBJ_RELEASE(ep);
        return NULL;
    }
    return ep;
}

/* Our own process, for one-sided communication only: Open MPI 5's osc rdma
 * takes a BTL for its native path only if the BTL reaches every rank of the
 * window, itself included, and bml lists a BTL with full RDMA and fetching
 * atomics among a process's RDMA BTLs even where another BTL (btl self) won
 * its sends; ob1 skips such RMA-only BTLs.  No ring: put, get and atomics on
 * our own memory run at once (put.c, get.c, atomic.c).  Not offered where our
 * exclusivity would win the sends to ourselves from btl self. */
static mca_btl_tca_endpoint_t *self_endpoint(struct opal_proc_t *proc) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    const mca_btl_base_module_t *m = &mca_btl_tca_module.super;
    if (m->btl_exclusivity >= MCA_BTL_EXCLUSIVITY_HIGH ||
        !(m->btl_flags & MCA_BTL_FLAGS_ATOMIC_FOPS) || !(m->btl_flags & MCA_BTL_FLAGS_GET))
        return NULL;
    opal_mutex_lock(&c->endpoints_lock);
    if (NULL == c->self_endpoint) {
        mca_btl_tca_endpoint_t *ep = OBJ_NEW(mca_btl_tca_endpoint_t);
        if (NULL != ep) {
            ep->proc = proc;
            ep->node = c->node; /* peer stays NULL: no ring */
        }
        c->self_endpoint = ep;
    }
    opal_mutex_unlock(&c->endpoints_lock);
    return c->self_endpoint;
}

int mca_btl_tca_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                          struct opal_bitmap_t *reachable) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    const opal_proc_t *self = opal_proc_local_get();
    bool added = false;
    (void) btl;

    for (size_t i = 0; i < nprocs; ++i) {
        struct opal_proc_t *proc = procs[i];
        mca_btl_tca_modex_t *modex = NULL;
        size_t msize = 0;
        int rc;
        peers[i] = NULL;
        if (proc == self) {
            peers[i] = self_endpoint(proc);
            if (NULL != peers[i] && NULL != reachable)
                opal_bitmap_set_bit(reachable, (int) i);
            continue;
        }
        if (proc->proc_name.jobid != self->proc_name.jobid ||
            (!c->across_hosts && !OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags)))
            continue; /* another job or host: not in our sub-cluster */
        OPAL_MODEX_RECV(rc, &c->super.btl_version, &proc->proc_name, (void **) &modex, &msize);
        if (OPAL_SUCCESS != rc || NULL == modex)
            continue; /* it runs without tca */
        if (msize != sizeof(*modex) || modex->subcluster != c->subcluster) {
            free(modex);
            continue; /* another sub-cluster: left to the next BTL */
        }
        if (!same_geometry(modex, c)) {
            tca_show_help("help-btl-tca.txt", "geometry-differs", modex->node, c->subcluster);
            free(modex);
            continue;
        }
        opal_mutex_lock(&c->endpoints_lock); /* always: the progress thread adds too */
        mca_btl_tca_endpoint_t *ep = c->endpoints[modex->node];
        if (NULL == ep) {
            ep = create_endpoint(proc, modex);
            if (NULL == ep) {
                opal_mutex_unlock(&c->endpoints_lock);
                free(modex);
                continue;
            }
            opal_atomic_wmb(); /* the progress thread may look at the table now */
            c->endpoints[modex->node] = ep;
            tca_btl_poller_add(c->poller, modex->node,
                               ep->peer); /* after the table: deliver finds ep */
            added = true;
        }
        opal_mutex_unlock(&c->endpoints_lock);
        free(modex);
        peers[i] = ep;
        if (NULL != reachable)
            opal_bitmap_set_bit(reachable, (int) i);
    }
    /* A progress thread asleep on its doorbell asked only the peers it knew:
     * wake it, and it asks the new ones (btl_tca_progress.c). */
    if (added && NULL != c->thread)
        (void) tcaInterruptRaise(c->node);
    return OPAL_SUCCESS;
}

/* Endpoints stay until finalize: the progress thread may still be polling them. */
int mca_btl_tca_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers) {
    (void) btl;
    (void) nprocs;
    (void) procs;
    (void) peers;
    return OPAL_SUCCESS;
}

int mca_btl_tca_finalize(struct mca_btl_base_module_t *btl) {
    mca_btl_tca_module_t *m = (mca_btl_tca_module_t *) btl;
    mca_btl_tca_component_stop_thread();
    mca_btl_tca_registrations_fini(m);
    mca_btl_tca_component_shutdown();
    return OPAL_SUCCESS;
}
