/*
 * btl_tca_component.c - the component's life: register, open, init (the
 * steps of params.c, protocols.c, device.c and progress.c in their order),
 * shutdown and close.
 */
#include "btl_tca.h"
#include "btl_tca_endpoint.h"
#include "btl_tca_frag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/runtime/opal_params.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"
#include "common_tca_session.h"
#include "common_tca_settings.h"
#include "mca_glue/tca_cuda_abi.h"
#include "mca_glue/tca_error_text.h"
#include "mca_glue/tca_mca_check.h"

#define HELP_FILE "help-btl-tca.txt"

static int tca_component_register(void);
static int tca_component_open(void);
static int tca_component_close(void);
static mca_btl_base_module_t **tca_component_init(int *num_btls, bool enable_progress_threads,
                                                  bool enable_mpi_threads);

mca_btl_tca_component_t mca_btl_tca_component = {
    .super =
        {
            .btl_version =
                {
                    MCA_BTL_DEFAULT_VERSION("tca"),
                    .mca_open_component = tca_component_open,
                    .mca_close_component = tca_component_close,
                    .mca_register_component_params = tca_component_register,
                },
            .btl_data = {.param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT},
            .btl_init = tca_component_init,
            .btl_progress = mca_btl_tca_component_progress,
        },
};

static int tca_component_register(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;

    tca_mca_help_dirs(HELP_FILE, "opal/mca/btl/tca");
    /* Before anything touches mca_btl_base_module_t, whose layout depends on
     * the Open MPI's CUDA support: registering fails, so the framework
     * unloads the component. */
    if (!tca_cuda_abi_check(HELP_FILE, "btl tca"))
        return OPAL_ERR_NOT_AVAILABLE;
    /* The device's settings (btl_tca_device, btl_tca_single_copy, ...). */
    mca_common_tca_settings_register();
    return mca_btl_tca_params_register(c, &mca_btl_tca_module);
}

static int tca_component_open(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    OBJ_CONSTRUCT(&c->frags, opal_free_list_t);
    OBJ_CONSTRUCT(&c->endpoints_lock, opal_mutex_t);
    c->senders_tried = 0;
    c->device_up = 0;
    c->thread = NULL;
    c->progress_lock = 0;
    memset(c->endpoints, 0, sizeof(c->endpoints));
    c->self_endpoint = NULL;
    c->dma_puts = NULL;
    c->gets = NULL;
    c->gets_served = 0;
    c->gpu_initialized = 0;
    return OPAL_SUCCESS;
}

/* init failed after the registrations started: everything it started goes,
 * the memory-release hook first (it points into this DSO, which Open MPI
 * unloads next). */
static void undo_init(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m) {
    mca_btl_tca_atomic_fini();
    mca_btl_tca_put_fini();
    mca_btl_tca_get_fini();
    mca_btl_tca_registrations_fini(m);
    mca_btl_tca_device_stop(c);
}

static mca_btl_base_module_t **tca_component_init(int *num_btls, bool enable_progress_threads,
                                                  bool enable_mpi_threads) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    mca_btl_tca_module_t *m = &mca_btl_tca_module;
    mca_btl_base_module_t **btls;
    (void) enable_progress_threads;
    *num_btls = 0;

    /* GPU buffers in the convertor (Open MPI 4.1 starts its CUDA support on a
     * BTL's request; 5.0 in opal_init). */
    if (!c->gpu_initialized)
        c->gpu_initialized = tca_ompi_gpu_init();
    /* nobody to reach: alone on this host, and the sub-cluster does not span hosts */
    if (0 == opal_process_info.num_local_peers && !mca_common_tca_session_across_hosts())
        return NULL;
    if (!mca_btl_tca_params_valid(c, m))
        return NULL;

    c->slot_payload = tca_btl_eager_slot_payload(
        m->super.btl_eager_limit, m->super.btl_rndv_eager_limit, m->super.btl_max_send_size);

    mca_btl_tca_set_protocols(c, m);

    if (OPAL_SUCCESS != mca_btl_tca_device_start(c)) {
        mca_btl_tca_device_stop(c);
        return NULL;
    }
    mca_btl_tca_choose_copy_limit(c, m);
    /* On the ucx device a registration costs its owner a ucp_mem_map and a
     * peer writing into it a key fetch (a round trip), and dropping it a
     * revoke (another): keep them, as btl openib did, unless the user chose
     * (mpi_leave_pinned).  grdma reads this when the rcache is created
     * (module init, below).  Large messages across hosts were faster with
     * the registrations kept (docs/results.md). */
    if (c->across_hosts && -1 == opal_leave_pinned)
        opal_leave_pinned = 1;
    if (OPAL_SUCCESS != opal_free_list_init(&c->frags,
                                            mca_btl_tca_frag_object_size() + c->slot_payload, 64,
                                            OBJ_CLASS(mca_btl_tca_frag_t), 0, 0, 64, -1, 64, NULL,
                                            0, NULL, NULL, NULL) ||
        OPAL_SUCCESS != mca_btl_tca_registrations_init(m)) {
        mca_btl_tca_registrations_fini(m);
        mca_btl_tca_device_stop(c);
        return NULL;
    }
    btls = (mca_btl_base_module_t **) malloc(sizeof(*btls));
    if (NULL == btls || OPAL_SUCCESS != mca_btl_tca_get_init() ||
        OPAL_SUCCESS != mca_btl_tca_put_init() || OPAL_SUCCESS != mca_btl_tca_atomic_init()) {
        free(btls);
        undo_init(c, m);
        return NULL;
    }

    mca_btl_tca_progress_thread_start(c, m, enable_mpi_threads);

    if (OPAL_SUCCESS != mca_btl_tca_modex_publish(c)) {
        tca_show_help(HELP_FILE, "modex-failed");
        if (c->thread)
            tca_btl_progress_thread_stop(c->thread);
        c->thread = NULL;
        free(btls);
        undo_init(c, m);
        return NULL;
    }

    mca_btl_tca_report_path(c, m);
    btls[0] = &m->super;
    c->module = m;
    *num_btls = 1;
    return btls;
}

void mca_btl_tca_component_shutdown(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    /* The MPI cases check this line: the get path really ran. */
    opal_output_verbose(5, opal_btl_base_framework.framework_output,
                        "btl:tca: node %d served %lld emulated gets, %d of its own unanswered",
                        c->node, (long long) c->gets_served,
                        NULL == c->gets ? 0 : tca_btl_gets_pending(c->gets));
    opal_output_verbose(5, opal_btl_base_framework.framework_output,
                        "btl:tca: node %d ran %lld atomics for peers, %d of its own unanswered",
                        c->node, (long long) c->atomics_served,
                        NULL == c->atomics ? 0 : tca_btl_atomics_pending(c->atomics));
    int lent = 0;
    for (int n = 0; n < TCA_MAX_NODES; ++n)
        if (NULL != c->endpoints[n])
            lent += c->endpoints[n]->rendezvous_in_flight;
    opal_output_verbose(
        5, opal_btl_base_framework.framework_output,
        "btl:tca: node %d sent %lld rendezvous by RGET, %lld by copy, %d unfinished", c->node,
        (long long) c->rendezvous_by_rdma, (long long) c->rendezvous_by_copy, lent);
    mca_btl_tca_atomic_fini();
    mca_btl_tca_put_fini();
    mca_btl_tca_get_fini();
    for (int n = 0; n < TCA_MAX_NODES; ++n) {
        if (NULL != c->endpoints[n])
            OBJ_RELEASE(c->endpoints[n]);
        c->endpoints[n] = NULL;
    }
    if (NULL != c->self_endpoint)
        OBJ_RELEASE(c->self_endpoint);
    c->self_endpoint = NULL;
    mca_btl_tca_device_stop(c);
}

static int tca_component_close(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    if (c->gpu_initialized)
        tca_ompi_gpu_fini();
    c->gpu_initialized = 0;
    OBJ_DESTRUCT(&c->frags);
    OBJ_DESTRUCT(&c->endpoints_lock);
    return OPAL_SUCCESS;
}
