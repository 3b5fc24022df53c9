/*
 * btl_tca_device.c - btl tca's share of the TCA device: joining the session,
 * the rings every peer writes into (one internal-memory area, registered
 * once), and the modex that tells the peers where they are.
 */
#include "btl_tca.h"
#include "btl_tca_modex.h"

#include <string.h>

#include "common_tca_session.h"
#include "mca_glue/tca_error_text.h"
#include "mca_glue/tca_mca_check.h"

#define HELP_FILE "help-btl-tca.txt"

/* Joins the process's TCA session (common_tca_session.h): its place in the
 * host's sub-clusters and the device, shared with coll tca.  OPAL_ERR_NOT_AVAILABLE:
 * the last, partial sub-cluster of a host may hold one process - nobody to reach. */
int mca_btl_tca_device_start(mca_btl_tca_component_t *c) {
    tca_session_place_t place;
    int device_result = tcaSuccess;
    char why[768];
    const int rc = mca_common_tca_session_join("btl tca", opal_btl_base_framework.framework_output,
                                               c->set.subcluster_size, &place, &device_result, why,
                                               sizeof(why));
    if (OPAL_ERR_NOT_AVAILABLE == rc)
        return rc;
    if (OPAL_ERR_BAD_PARAM == rc) {
        tca_show_help(HELP_FILE, "session-conflict", why);
        return OPAL_ERROR;
    }
    if (OPAL_SUCCESS != rc) {
        tca_show_help(HELP_FILE, "device-failed", tca_error_text(device_result, why, sizeof(why)));
        return OPAL_ERROR;
    }
    c->device_up = 1;
    c->subcluster = place.subcluster;
    c->node = place.node;
    c->num_nodes = place.num_nodes;
    c->across_hosts = mca_common_tca_session_across_hosts();
    /* Across hosts a mark costs a put per message more: every ring is polled. */
    c->poll_by_traffic = !c->across_hosts && c->num_nodes - 1 > c->set.poll_all_max_peers;
    c->pending_peers = 0;
    tcaResult r;

    /* auto: the largest of 64, 32, ... 2 slots whose rings fit */
    const bool auto_slots = 0 == c->set.ring_slots;
    if (auto_slots)
        c->set.ring_slots = 64;
    for (;;) {
        c->area_bytes = tca_btl_area_bytes(c->num_nodes, c->set.ring_slots, c->slot_payload);
        r = tcaMalloc(&c->area, c->area_bytes, tcaMemoryInternal);
        if (tcaSuccess == r || !auto_slots || c->set.ring_slots <= 2)
            break;
        c->set.ring_slots /= 2;
    }
    if (tcaSuccess != r) {
        char why[768];
        tca_show_help(HELP_FILE, "ring-alloc-failed", c->area_bytes,
                      tca_error_text(r, why, sizeof(why)));
        return OPAL_ERROR;
    }
    memset(c->area, 0, c->area_bytes);
    c->poller =
        tca_btl_poller_new(c->area, c->num_nodes, c->poll_by_traffic, (uint32_t) c->set.poll_batch,
                           (uint32_t) c->set.ring_slots, c->slot_payload, c->across_hosts);
    if (NULL == c->poller) {
        tca_show_help(HELP_FILE, "ring-alloc-failed", c->area_bytes,
                      "no memory for the ring poller");
        return OPAL_ERROR;
    }
    r = tcaCreateHandle(&c->area_handle, c->area, c->area_bytes, tcaMemoryInternal);
    if (tcaSuccess != r) {
        tca_show_help(HELP_FILE, "register-failed", tcaGetErrorString(r));
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

void mca_btl_tca_device_stop(mca_btl_tca_component_t *c) {
    if (!c->device_up)
        return;
    if (NULL != c->poller)
        tca_btl_poller_free(c->poller);
    c->poller = NULL;
    if (NULL != c->area)
        (void) tcaFree(c->area, tcaMemoryInternal);
    c->area = NULL;
    mca_common_tca_session_leave();
    c->device_up = 0;
}

int mca_btl_tca_modex_publish(mca_btl_tca_component_t *c) {
    mca_btl_tca_modex_t modex;
    int rc;
    memset(&modex, 0, sizeof(modex));
    modex.version = MCA_BTL_TCA_MODEX_VERSION;
    modex.subcluster = c->subcluster;
    modex.node = c->node;
    modex.num_nodes = c->num_nodes;
    modex.ring_slots = c->set.ring_slots;
    modex.slot_payload = c->slot_payload;
    modex.has_progress_thread = NULL != c->thread || c->set.progress_thread == TCA_BTL_THREAD_ON;
    modex.polls_by_traffic = c->poll_by_traffic;
    modex.area = c->area_handle;
    OPAL_MODEX_SEND(rc, c->across_hosts ? TCA_MODEX_GLOBAL : TCA_MODEX_LOCAL, &c->super.btl_version,
                    &modex, sizeof(modex));
    return rc;
}
