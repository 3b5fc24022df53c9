/*
 * btl_tca_protocols.c - what ob1 and osc may do over btl tca, decided at init
 * from the settings and the device: get, RMA and atomic flags, the size up
 * to which messages go by copy, and the verbose line that says which path
 * a message takes.
 */
#include "btl_tca.h"

#include <stdint.h>

#include "common_tca_session.h"
#include "mca_glue/tca_mca_check.h"

/* What ob1 may do with btl_get.  The GET_REQ message must fit a ring slot
 * (eager limits of a few hundred bytes leave no room: no get then). */
static void set_get_flags(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m) {
    int mode = c->set.get_emulation;
    m->super.btl_flags &= ~(uint32_t) MCA_BTL_FLAGS_GET;
#if OPAL_CUDA_SUPPORT
    m->super.btl_flags &= ~(uint32_t) TCA_BTL_FLAGS_GPU_GET;
#endif
    if (TCA_BTL_GET_OFF != mode && mca_btl_tca_get_request_bytes() > c->slot_payload) {
        opal_output_verbose(
            1, opal_btl_base_framework.framework_output,
            "btl:tca: eager slots of %u bytes cannot hold a get request (%zu bytes): no get",
            (unsigned) c->slot_payload, mca_btl_tca_get_request_bytes());
        mode = TCA_BTL_GET_OFF;
    }
    if (TCA_BTL_GET_ALL == mode)
        m->super.btl_flags |= MCA_BTL_FLAGS_GET;
#if OPAL_CUDA_SUPPORT
    /* ob1 turns its GPU get on per peer when we announce it (tca_register_error,
     * TCA_BTL_ERROR_FLAGS_ADD_GPU_IPC), as smcuda does after its handshake. */
    if (TCA_BTL_GET_OFF != mode)
        m->super.btl_flags |= TCA_BTL_FLAGS_GPU_GET;
#endif
    c->set.get_emulation = mode;
    /* An inline answer is GET_DONE and the data in one eager slot. */
    const size_t inline_room = c->slot_payload - sizeof(tca_btl_get_done_t);
    if (c->set.get_inline_max > inline_room)
        c->set.get_inline_max = inline_room;
    const size_t put_room = c->slot_payload - sizeof(tca_btl_get_small_t);
    if (c->set.put_inline_max > put_room)
        c->set.put_inline_max = put_room;
}

/* What osc rdma (MPI one-sided) relies on besides put and get. */
static void set_rma_flags(const mca_btl_tca_component_t *c, mca_btl_tca_module_t *m) {
    mca_btl_tca_atomic_set_flags(m, c->slot_payload);
#ifdef MCA_BTL_FLAGS_RDMA_REMOTE_COMPLETION
    /* A put calls back once its data is visible at the target (PIO returns
     * after it, a DMA put completes behind its data), as ob1's FIN and the
     * emulated get already rely on.  (Open MPI 5; 4.1's osc rdma assumes it.) */
    m->super.btl_flags |= MCA_BTL_FLAGS_RDMA_REMOTE_COMPLETION;
#endif
    /* The emulated get needs a registration of its destination beyond
     * get_inline_max (the owner puts into it); smaller ones come back in the
     * answer and are copied out here.  btl_get registers a destination given
     * without one itself: osc rdma would otherwise get into its own buffer
     * and copy every byte again (docs/results.md, issue 59).  A put below
     * put_dma_min is a PIO write, which reads its source without one. */
    m->super.btl_get_local_registration_threshold = SIZE_MAX;
    m->super.btl_put_local_registration_threshold =
        0 == c->set.put_dma_min ? SIZE_MAX : (size_t) c->set.put_dma_min - 1;
}

void mca_btl_tca_set_protocols(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m) {
    set_get_flags(c, m);
    set_rma_flags(c, m);
}

/* Which path a message takes at which size, and how progress polls (verbose). */
void mca_btl_tca_report_path(const mca_btl_tca_component_t *c, const mca_btl_tca_module_t *m) {
    tcaBackendAttr backend;
    char line[1024];
    if (tcaSuccess != tcaQueryBackend(&backend))
        backend.put_mechanism[0] = '\0';
    const tca_btl_path_t path = {.eager_limit = m->super.btl_eager_limit,
                                 .copy_max = SIZE_MAX == m->super.btl_min_rdma_pipeline_size
                                                 ? UINT64_MAX
                                                 : m->super.btl_min_rdma_pipeline_size,
                                 .put_dma_min = c->set.put_dma_min,
                                 .get_for_host = TCA_BTL_GET_ALL == c->set.get_emulation,
                                 .lone_by_rdma = c->lone_by_rdma,
                                 .poll_by_traffic = c->poll_by_traffic,
                                 .peers = c->num_nodes - 1,
                                 .poll_all_max_peers = c->set.poll_all_max_peers,
                                 .put_mechanism = backend.put_mechanism};
    (void) tca_btl_describe_path(&path, line, sizeof(line));
    opal_output_verbose(5, opal_btl_base_framework.framework_output, "btl:tca: node %d: %s",
                        c->node, line);
}

/* Up to which size ob1 sends by copy through the rings (tca_register_mem
 * refuses registrations of messages up to btl_min_rdma_pipeline_size),
 * unless the user set it.  The copy protocol moves every byte twice, each
 * time from one core's cache to the other's, with both cores copying at
 * once; a single-copy put moves it once, on the sender's core alone, behind
 * a rendezvous of three messages.
 * - Where a put into another process is itself a copy by the target's CPU
 *   (the device measured single copy as dear, or it is off), and across
 *   hosts (the ucx device: ob1's put rendezvous is three messages and a put,
 *   each end of each waiting for the other to progress UCX, where the copy
 *   protocol streams ring slots behind one handshake): every size by copy.
 * - Elsewhere Open MPI's default stands (eager limit +
 *   btl_rdma_pipeline_send_length: 96 KiB).  Puts from the eager limit on
 *   (btl_tca_min_rdma_pipeline_size 16K) cut one-way latency at 33-96 KiB
 *   but cost streams of such messages bandwidth and a computing receiver
 *   its overlap (docs/results.md, issue 50): not as the rule for every
 *   message.  With btl_tca_rendezvous_choice traffic (the default) a lone
 *   message up to the limit takes the RGET rendezvous all the same
 *   (register.c asks tca_btl_rendezvous_by_rdma), a message of a stream
 *   the copy protocol. */
void mca_btl_tca_choose_copy_limit(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m) {
    tcaBackendAttr backend;
    const bool copy_pays_alone =
        mca_common_tca_session_across_hosts() ||
        (tcaSuccess == tcaQueryBackend(&backend) && backend.host_puts_by_target);
    c->lone_by_rdma = TCA_BTL_RNDV_BY_TRAFFIC == c->set.rendezvous_choice && !copy_pays_alone;
    if (!tca_mca_var_is_default("opal", "btl", "tca", "min_rdma_pipeline_size"))
        return;
    /* By traffic, every size may go by copy: ob1 asks us about each message up
     * to this limit (beyond it, without mpi_leave_pinned, it runs its
     * pipeline protocol without asking), and a lone one takes the RGET
     * rendezvous all the same. */
    if (copy_pays_alone || c->lone_by_rdma)
        m->super.btl_min_rdma_pipeline_size = SIZE_MAX;
}
