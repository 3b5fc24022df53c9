/*
 * btl_tca_module.c - the module: reachability (add_procs), registration
 * (grdma rcache over device handles), error callback and finalize.
 */
#include "btl_tca.h"
#include "btl_tca_endpoint.h"
#include "btl_tca_frag.h"

#include <string.h>

#include "opal/class/opal_bitmap.h"
#include "opal/mca/rcache/base/base.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"
#include "mca_glue/tca_mca_check.h"

static int tca_register_error(struct mca_btl_base_module_t *btl,
                              mca_btl_base_module_error_cb_fn_t cbfunc);
static struct mca_btl_base_registration_handle_t *
tca_register_mem(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                 void *base, size_t size, uint32_t flags);
static int tca_deregister_mem(struct mca_btl_base_module_t *btl,
                              struct mca_btl_base_registration_handle_t *handle);

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
            .btl_register_mem = tca_register_mem,
            .btl_deregister_mem = tca_deregister_mem,
        },
};

static void endpoint_construct(mca_btl_tca_endpoint_t *ep) {
    ep->proc = NULL;
    ep->node = -1;
    ep->peer = NULL;
    ep->pending_count = 0;
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

/* ---- registration: device handles, cached by grdma ---- */

static int rcache_register(void *reg_data, void *base, size_t size,
                           mca_rcache_base_registration_t *reg) {
    mca_btl_tca_reg_t *r = (mca_btl_tca_reg_t *) reg;
    tcaMemoryType type =
        tcaMemoryCPU; /* libtca still asks CUDA about pointers of processes that loaded it */
    (void) reg_data;
#if OPAL_CUDA_GDR_SUPPORT
    /* grdma handed us the whole allocation (cuMemGetAddressRange): base is what
     * a CUDA IPC handle names, and put/get address the user's pointer as
     * an offset into it. */
    if (reg->flags & TCA_RCACHE_FLAGS_GPU_MEM)
        type = tcaMemoryGPU;
#endif
    const tcaResult rc = tcaCreateHandle(&r->handle.h, base, size, type);
    if (tcaSuccess == rc)
        return OPAL_SUCCESS;
    return tcaErrorNoMemory == rc ? OPAL_ERR_OUT_OF_RESOURCE
                                  : OPAL_ERROR; /* grdma evicts and retries */
}

static int rcache_deregister(void *reg_data, mca_rcache_base_registration_t *reg) {
    mca_btl_tca_reg_t *r = (mca_btl_tca_reg_t *) reg;
    (void) reg_data;
    return tcaSuccess == tcaDestroyHandle(&r->handle.h) ? OPAL_SUCCESS : OPAL_ERROR;
}

int mca_btl_tca_module_init(mca_btl_tca_module_t *module) {
    mca_rcache_base_resources_t res = {
        .cache_name = "tca",
        .reg_data = module,
        .sizeof_reg = sizeof(mca_btl_tca_reg_t),
        .register_mem = rcache_register,
        .deregister_mem = rcache_deregister,
    };
    module->rcache = mca_rcache_base_module_create("grdma", module, &res);
    if (NULL == module->rcache) {
        tca_show_help("help-btl-tca.txt", "rcache-failed");
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

/* Any access flags are accepted: ob1 asks for REMOTE_READ even on buffers
 * that will only be written (the put-only device never reads remotely). */
static struct mca_btl_base_registration_handle_t *
tca_register_mem(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                 void *base, size_t size, uint32_t flags) {
    mca_btl_tca_module_t *m = (mca_btl_tca_module_t *) btl;
    mca_btl_tca_reg_t *reg = NULL;
    uint32_t rcache_flags = 0;
    (void) endpoint;
    const int access = (int) (flags & MCA_BTL_REG_FLAG_ACCESS_ANY);
#if OPAL_CUDA_GDR_SUPPORT
    /* ob1 marks GPU buffers; grdma then registers the whole CUDA allocation
     * (page rounding could leave it) and drops entries of freed GPU memory. */
    if (flags & MCA_BTL_REG_FLAG_CUDA_GPU_MEM)
        rcache_flags |= TCA_RCACHE_FLAGS_GPU_MEM;
#endif
    /* ob1 chooses between RDMA and its copy protocol by whether it can
     * register the whole message (mca_pml_ob1_rdma_btls asks for REMOTE_READ,
     * nothing else does): a refusal up to btl_min_rdma_pipeline_size sends
     * such messages by copy, as that parameter says, on the sender's side too. */
    if (MCA_BTL_REG_FLAG_REMOTE_READ == flags && size <= m->super.btl_min_rdma_pipeline_size)
        return NULL;
    if (OPAL_SUCCESS != m->rcache->rcache_register(m->rcache, base, size, rcache_flags, access,
                                                   (mca_rcache_base_registration_t **) &reg))
        return NULL;
    return &reg->handle;
}

static int tca_deregister_mem(struct mca_btl_base_module_t *btl,
                              struct mca_btl_base_registration_handle_t *handle) {
    mca_btl_tca_module_t *m = (mca_btl_tca_module_t *) btl;
    mca_btl_tca_reg_t *reg =
        (mca_btl_tca_reg_t *) ((intptr_t) handle - offsetof(mca_btl_tca_reg_t, handle));
    m->rcache->rcache_deregister(m->rcache, &reg->base);
    return OPAL_SUCCESS;
}

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
        }
        opal_mutex_unlock(&c->endpoints_lock);
        free(modex);
        peers[i] = ep;
        if (NULL != reachable)
            opal_bitmap_set_bit(reachable, (int) i);
    }
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
    if (NULL != m->rcache)
        mca_rcache_base_module_destroy(m->rcache); /* drops the device handles */
    m->rcache = NULL;
    mca_btl_tca_component_shutdown();
    return OPAL_SUCCESS;
}
