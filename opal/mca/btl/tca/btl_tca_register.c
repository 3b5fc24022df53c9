/*
 * btl_tca_register.c - registrations, two kinds:
 *  - a message's buffer (ob1's RDMA protocols): device handles cached by
 *    Open MPI's grdma rcache, as btl openib and uct keep theirs;
 *  - a window's memory (osc rdma asks for remote atomics): kept by the core
 *    (tca-btl/window_registrations.hpp) as long as the window wants it, not
 *    cached, and ended at once when the program gives the memory back (Open
 *    MPI's memory-release hook), so that giving back window memory before
 *    MPI_Win_free is no abort and a late put into it is refused (docs/mpi.md
 *    says where it is not);
 * and the remote handles the data path is given, checked against the
 * address they come with (mca_btl_tca_remote_handle).
 */
#include "btl_tca.h"
#include "btl_tca_endpoint.h"

#include <stdlib.h>
#include <string.h>

#include "opal/memoryhooks/memory.h"
#include "opal/mca/rcache/base/base.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "mca_glue/tca_mca_check.h"

/* Live window registrations at once: the device's whole registration table. */
#define TCA_WINDOW_REGISTRATIONS 4096

/* ---- message buffers: device handles, cached by grdma ---- */

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
    r->window_slot = UINT32_MAX;
    r->handle.window = 0;
    r->handle.lent = 0;
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

/* ---- window memory given back ---- */

/* Called inside free/munmap (any thread): the core allocates nothing here. */
static void memory_released(void *buf, size_t length, void *cbdata, bool from_alloc) {
    (void) cbdata;
    (void) from_alloc;
    tca_btl_windows_t *windows = mca_btl_tca_component.windows;
    if (NULL != windows)
        tca_btl_windows_released(windows, (uintptr_t) buf, length);
}

int mca_btl_tca_registrations_init(mca_btl_tca_module_t *module) {
    mca_rcache_base_resources_t res = {
        .cache_name = "tca",
        .reg_data = module,
        .sizeof_reg = sizeof(mca_btl_tca_reg_t),
        .register_mem = rcache_register,
        .deregister_mem = rcache_deregister,
    };
    /* Creating the rcache also starts Open MPI's memory hooks (unless
     * mpi_leave_pinned is 0): the window registrations' hook needs them. */
    module->rcache = mca_rcache_base_module_create("grdma", module, &res);
    if (NULL == module->rcache) {
        tca_show_help("help-btl-tca.txt", "rcache-failed");
        return OPAL_ERROR;
    }
    /* One table for the process, kept after finalize: Open MPI runs a release
     * callback outside its lock and does not wait for one that started before
     * the hook was unregistered, so freeing the table could pull it from under
     * a thread giving memory back (window registrations are all gone by then). */
    static tca_btl_windows_t *process_windows = NULL;
    if (NULL == process_windows)
        process_windows = tca_btl_windows_new(TCA_WINDOW_REGISTRATIONS);
    if (NULL == process_windows)
        return OPAL_ERR_OUT_OF_RESOURCE;
    mca_btl_tca_component.windows = process_windows;
    const int hooked = opal_mem_hooks_register_release(memory_released, NULL);
    mca_btl_tca_component.memory_hook = OPAL_SUCCESS == hooked;
    /* Without hooks (mpi_leave_pinned 0, or no memory patcher) window memory
     * given back keeps its registration until MPI_Win_free: no abort either,
     * but a late put into reused memory is not refused. */
    opal_output_verbose(5, opal_btl_base_framework.framework_output,
                        "btl:tca: window memory given back ends its registration: %s",
                        mca_btl_tca_component.memory_hook ? "yes (Open MPI's memory hooks)"
                                                          : "no (no memory hooks)");
    return OPAL_SUCCESS;
}

void mca_btl_tca_registrations_fini(mca_btl_tca_module_t *module) {
    if (mca_btl_tca_component.memory_hook)
        opal_mem_hooks_unregister_release(memory_released);
    mca_btl_tca_component.memory_hook = 0;
    if (NULL != module->rcache)
        mca_rcache_base_module_destroy(module->rcache); /* drops the device handles */
    module->rcache = NULL;
    if (NULL != mca_btl_tca_component.windows) {
        /* The MPI cases check this line (test/mpi/cases/rma_lifetime_*.mpi). */
        opal_output_verbose(
            5, opal_btl_base_framework.framework_output,
            "btl:tca: node %d: %llu window registrations ended by memory given "
            "back before MPI_Win_free, %lld remote handles found again by address",
            mca_btl_tca_component.node,
            (unsigned long long) tca_btl_windows_revoked(mca_btl_tca_component.windows),
            (long long) mca_btl_tca_component.handles_found);
    }
    mca_btl_tca_component.windows = NULL; /* the table itself stays (init) */
}

/* ---- the module's register_mem / deregister_mem ---- */

/* A window's registration (osc rdma asks for remote atomics on every memory
 * it exposes; ob1 never does) of host memory. */
static mca_btl_tca_reg_t *register_window(void *base, size_t size) {
    mca_btl_tca_reg_t *reg = calloc(1, sizeof(*reg));
    if (NULL == reg)
        return NULL;
    reg->base.rcache = NULL; /* not grdma's: deregister_mem tells them apart so */
    if (tcaSuccess != tca_btl_windows_add(mca_btl_tca_component.windows, base, size, &reg->handle.h,
                                          &reg->window_slot)) {
        free(reg);
        return NULL;
    }
    reg->handle.window = 1;
    return reg;
}

/* A host message up to btl_min_rdma_pipeline_size: by ob1's copy protocol
 * (refused), or, where btl_tca_rendezvous_choice traffic picks it (a lone
 * message, streams both ways, a stream from one buffer:
 * tca-btl/rendezvous_choice.hpp), by its RGET rendezvous (granted, and
 * counted on the peer until ob1 gives the registration back after the
 * rendezvous' FIN). */
static struct mca_btl_base_registration_handle_t *
register_rendezvous(mca_btl_tca_module_t *m, struct mca_btl_base_endpoint_t *ep, void *base,
                    size_t size, int access) {
    if (!mca_btl_tca_component.lone_by_rdma || NULL == ep || NULL == ep->peer)
        return NULL;
    const tca_btl_rendezvous_t now = {.size = size,
                                      .copy_max = m->super.btl_min_rdma_pipeline_size,
                                      .by_traffic = 1,
                                      .rendezvous_in_flight = ep->rendezvous_in_flight,
                                      .queued = ep->pending_count,
                                      .same_buffer = base == ep->last_rendezvous};
    ep->last_rendezvous = base;
    if (!tca_btl_peer_rendezvous_by_rdma(ep->peer, &now)) {
        (void) OPAL_THREAD_ADD_FETCH64(&mca_btl_tca_component.rendezvous_by_copy, 1);
        return NULL;
    }
    mca_btl_tca_lent_t *lent = malloc(sizeof(*lent));
    mca_btl_tca_reg_t *reg = NULL;
    if (NULL == lent)
        return NULL;
    if (OPAL_SUCCESS != m->rcache->rcache_register(m->rcache, base, size, 0, access,
                                                   (mca_rcache_base_registration_t **) &reg)) {
        free(lent);
        return NULL;
    }
    lent->handle = reg->handle;
    lent->handle.lent = 1;
    lent->reg = reg;
    lent->endpoint = ep;
    (void) OPAL_THREAD_ADD_FETCH32(&ep->rendezvous_in_flight, 1);
    (void) OPAL_THREAD_ADD_FETCH64(&mca_btl_tca_component.rendezvous_by_rdma, 1);
    return &lent->handle;
}

/* Any access flags are accepted: ob1 asks for REMOTE_READ even on buffers
 * that will only be written (the put-only device never reads remotely). */
struct mca_btl_base_registration_handle_t *
mca_btl_tca_register_mem(struct mca_btl_base_module_t *btl,
                         struct mca_btl_base_endpoint_t *endpoint, void *base, size_t size,
                         uint32_t flags) {
    mca_btl_tca_module_t *m = (mca_btl_tca_module_t *) btl;
    mca_btl_tca_reg_t *reg = NULL;
    uint32_t rcache_flags = 0;
    const int access = (int) (flags & MCA_BTL_REG_FLAG_ACCESS_ANY);
#if OPAL_CUDA_GDR_SUPPORT
    /* ob1 marks GPU buffers; grdma then registers the whole CUDA allocation
     * (page rounding could leave it) and drops entries of freed GPU memory. */
    if (flags & MCA_BTL_REG_FLAG_CUDA_GPU_MEM)
        rcache_flags |= TCA_RCACHE_FLAGS_GPU_MEM;
#endif
    /* ob1 chooses between RDMA and its copy protocol by whether it can
     * register the whole message (mca_pml_ob1_rdma_btls asks for REMOTE_READ,
     * nothing else does): a refusal sends it by copy. */
    if (MCA_BTL_REG_FLAG_REMOTE_READ == flags && size <= m->super.btl_min_rdma_pipeline_size)
        return register_rendezvous(m, endpoint, base, size, access);
    if ((flags & MCA_BTL_REG_FLAG_REMOTE_ATOMIC) && 0 == rcache_flags) {
        reg = register_window(base, size);
        return NULL == reg ? NULL : &reg->handle;
    }
    if (OPAL_SUCCESS != m->rcache->rcache_register(m->rcache, base, size, rcache_flags, access,
                                                   (mca_rcache_base_registration_t **) &reg))
        return NULL;
    return &reg->handle;
}

int mca_btl_tca_deregister_mem(struct mca_btl_base_module_t *btl,
                               struct mca_btl_base_registration_handle_t *handle) {
    mca_btl_tca_module_t *m = (mca_btl_tca_module_t *) btl;
    if (handle->lent) {
        mca_btl_tca_lent_t *lent = (mca_btl_tca_lent_t *) handle; /* its first member */
        (void) OPAL_THREAD_ADD_FETCH32(&lent->endpoint->rendezvous_in_flight, -1);
        m->rcache->rcache_deregister(m->rcache, &lent->reg->base);
        free(lent);
        return OPAL_SUCCESS;
    }
    mca_btl_tca_reg_t *reg =
        (mca_btl_tca_reg_t *) ((intptr_t) handle - offsetof(mca_btl_tca_reg_t, handle));
    if (NULL == reg->base.rcache) { /* a window's */
        tca_btl_windows_remove(mca_btl_tca_component.windows, reg->window_slot);
        free(reg);
        return OPAL_SUCCESS;
    }
    m->rcache->rcache_deregister(m->rcache, &reg->base);
    return OPAL_SUCCESS;
}

/* A get's destination the caller did not register: osc rdma registers none
 * (btl_get_local_registration_threshold is SIZE_MAX), where its own bounce
 * buffer would cost a copy of every byte; the owner's put needs one, taken
 * here and cached by grdma like ob1's (a reused buffer finds it again). */
int mca_btl_tca_register_destination(void *base, size_t size, mca_btl_tca_reg_t **reg) {
    mca_rcache_base_module_t *rcache = mca_btl_tca_module.rcache;
    *reg = NULL;
    /* OUT_OF_RESOURCE once grdma found nothing to evict: the caller retries. */
    return rcache->rcache_register(rcache, base, size, 0, MCA_BTL_REG_FLAG_LOCAL_WRITE,
                                   (mca_rcache_base_registration_t **) reg);
}

void mca_btl_tca_release_destination(mca_btl_tca_reg_t *reg) {
    if (NULL != reg)
        mca_btl_tca_module.rcache->rcache_deregister(mca_btl_tca_module.rcache, &reg->base);
}

/* ---- our registrations a peer's request names ---- */

bool mca_btl_tca_own_registration(uint32_t reg_index, uint64_t key, tcaHandle *out) {
    return tcaSuccess == tcaHandleOfKey(mca_btl_tca_component.node, reg_index, key, out);
}

bool mca_btl_tca_own_handle_live(const tcaHandle *h) {
    tcaHandle live;
    return h->node == (uint16_t) mca_btl_tca_component.node &&
           mca_btl_tca_own_registration(h->reg_index, h->key, &live) && live.addr == h->addr &&
           live.size == h->size && live.region == h->region;
}

/* ---- remote handles ---- */

/* A window's handle names the registration its bytes say: a copy taken
 * while the owner rewrote them (osc rdma 4.1 hands us a pointer into a
 * dynamic window's region table, which the owner's MPI_Win_attach shifts)
 * can join one entry's address and length to another's key, which the device
 * would refuse (a correct program's put ended the job).  Where the device can
 * look the key up (the owner's table is mapped: one host), the copy must be
 * that registration's.  Not found: a torn copy or a registration ended by
 * memory given back (a late access, which the device refuses). */
static bool handle_is_whole(int node, const tcaHandle *h) {
    tcaHandle live;
    const tcaResult r = tcaHandleOfKey(node, h->reg_index, h->key, &live);
    if (tcaErrorNotSupported == r)
        return true;
    return tcaSuccess == r && live.addr == h->addr && live.size == h->size &&
           live.region == h->region;
}

static bool handle_covers(const tcaHandle *h, int node, uint64_t remote_address, size_t size) {
    return h->node == node && remote_address >= h->addr && size <= h->size &&
           remote_address - h->addr <= h->size - size;
}

int mca_btl_tca_remote_handle(const struct mca_btl_base_endpoint_t *ep,
                              const struct mca_btl_base_registration_handle_t *remote_handle,
                              uint64_t remote_address, size_t size, tcaHandle *out) {
    const int node = NULL == ep->peer ? mca_btl_tca_component.node : ep->node;
    if (OPAL_UNLIKELY(NULL == remote_handle))
        return OPAL_ERR_BAD_PARAM;
    for (int copies = 1;; ++copies) {
        /* One copy: osc rdma may hand us a pointer into memory its owner changes. */
        memcpy(out, &remote_handle->h, sizeof(*out));
        if (OPAL_UNLIKELY(!handle_covers(out, node, remote_address, size)))
            break;
        /* Our own memory is copied here and now, with no target to check that
         * the registration still lives: we do. */
        if (OPAL_UNLIKELY(NULL == ep->peer))
            return mca_btl_tca_own_handle_live(out) ? OPAL_SUCCESS : OPAL_ERR_BAD_PARAM;
        if (OPAL_LIKELY(!remote_handle->window) || handle_is_whole(node, out))
            return OPAL_SUCCESS;
        if (copies == 3) /* no whole copy in three: ended (the device refuses it) */
            return OPAL_SUCCESS;
    }
    /* A dynamic window's handle that does not cover the address it came with:
     * osc rdma (Open MPI 4.1, one host) looks a region up in the target's
     * table under the target's lock but hands us a pointer into that table,
     * which the target's next MPI_Win_attach rearranges; what it points at
     * then is another region's handle.  The address is the program's: ask
     * the device for the target's registration that covers it. */
    const tcaResult r = tcaHandleOfAddress(node, remote_address, size, out);
    if (OPAL_LIKELY(tcaSuccess == r)) {
        OPAL_THREAD_ADD_FETCH64(&mca_btl_tca_component.handles_found, 1);
        return OPAL_SUCCESS;
    }
    opal_output_verbose(1, opal_btl_base_framework.framework_output,
                        "btl:tca: an access of %zu bytes at 0x%" PRIx64
                        " of node %d lies outside every registration of it (%s): refused",
                        size, remote_address, node, tcaGetErrorString(r));
    return OPAL_ERR_BAD_PARAM;
}
