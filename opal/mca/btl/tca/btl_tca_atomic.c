/*
 * btl_tca_atomic.c - the BTL's atomics (btl_atomic_op, _fop, _cswap), which
 * osc rdma needs before it takes a BTL (4.1 refuses one without fetching
 * atomics; 5.0 falls back on its active-message emulation).
 *
 * The device writes and cannot read remote memory, so an atomic is a request
 * and an answer, like the emulated get:
 *   1. the origin sends ATOMIC_REQ {cookie, the target's registration and
 *      address, operation, operands} over the eager ring;
 *   2. the target's progress (its MPI calls or the progress thread) runs it
 *      with the CPU's atomics on its own memory and sends ATOMIC_DONE
 *      {cookie, old value, status};
 *   3. the origin's progress writes the old value to the fetch address and
 *      calls back.
 * The target's CPU runs every atomic on its memory, whatever the device or
 * path, so btl atomics are atomic with each other and with the target's own
 * CPU atomics (MCA_BTL_ATOMIC_SUPPORTS_GLOB), never a read-modify-write of
 * copies.  The checks and the pending table are the core's
 * (tca-btl/remote_atomics.hpp); this file maps Open MPI's codes, sends and
 * reports.
 */
#include "btl_tca_endpoint.h"

#include <string.h>

#include "opal/mca/btl/base/base.h"
#include "opal/util/output.h"
#include "mca_glue/tca_mca_check.h"

#define HELP_FILE "help-btl-tca.txt"

/* Atomics in flight at once (more are refused with OUT_OF_RESOURCE: osc retries). */
#define MAX_PENDING_ATOMICS 4096

int mca_btl_tca_atomic_init(void) {
    mca_btl_tca_component.atomics = tca_btl_atomics_new(MAX_PENDING_ATOMICS);
    mca_btl_tca_component.atomics_served = 0;
    return NULL == mca_btl_tca_component.atomics ? OPAL_ERR_OUT_OF_RESOURCE : OPAL_SUCCESS;
}

void mca_btl_tca_atomic_fini(void) {
    tca_btl_atomics_free(mca_btl_tca_component.atomics);
    mca_btl_tca_component.atomics = NULL;
}

void mca_btl_tca_atomic_set_flags(mca_btl_tca_module_t *m, uint32_t slot_payload) {
    m->super.btl_flags &= ~(uint32_t) (MCA_BTL_FLAGS_ATOMIC_OPS | MCA_BTL_FLAGS_ATOMIC_FOPS);
    m->super.btl_atomic_flags = 0;
    if (sizeof(tca_btl_atomic_request_t) > slot_payload) {
        opal_output_verbose(1, opal_btl_base_framework.framework_output,
                            "btl:tca: eager slots of %u bytes cannot hold an atomic request (%zu "
                            "bytes): no atomics",
                            (unsigned) slot_payload, sizeof(tca_btl_atomic_request_t));
        return;
    }
    m->super.btl_flags |= MCA_BTL_FLAGS_ATOMIC_OPS | MCA_BTL_FLAGS_ATOMIC_FOPS;
    m->super.btl_atomic_flags = MCA_BTL_ATOMIC_SUPPORTS_ADD | MCA_BTL_ATOMIC_SUPPORTS_AND |
                                MCA_BTL_ATOMIC_SUPPORTS_OR | MCA_BTL_ATOMIC_SUPPORTS_XOR |
                                MCA_BTL_ATOMIC_SUPPORTS_SWAP | MCA_BTL_ATOMIC_SUPPORTS_MIN |
                                MCA_BTL_ATOMIC_SUPPORTS_MAX | MCA_BTL_ATOMIC_SUPPORTS_CSWAP |
                                MCA_BTL_ATOMIC_SUPPORTS_32BIT | MCA_BTL_ATOMIC_SUPPORTS_GLOB;
}

/* Open MPI's operation to the core's; 0 for one we do not declare. */
static uint32_t core_op(mca_btl_base_atomic_op_t op) {
    switch (op) {
    case MCA_BTL_ATOMIC_ADD:
        return TCA_BTL_ATOMIC_ADD;
    case MCA_BTL_ATOMIC_AND:
        return TCA_BTL_ATOMIC_AND;
    case MCA_BTL_ATOMIC_OR:
        return TCA_BTL_ATOMIC_OR;
    case MCA_BTL_ATOMIC_XOR:
        return TCA_BTL_ATOMIC_XOR;
    case MCA_BTL_ATOMIC_SWAP:
        return TCA_BTL_ATOMIC_SWAP;
    case MCA_BTL_ATOMIC_MIN:
        return TCA_BTL_ATOMIC_MIN;
    case MCA_BTL_ATOMIC_MAX:
        return TCA_BTL_ATOMIC_MAX;
    default:
        return 0;
    }
}

/* Writes the old value where the operation asked for it, then calls back. */
static void complete(const mca_btl_tca_rdma_done_t *d, uint64_t old, int status) {
    if (OPAL_SUCCESS == status && 8 == d->result_bytes) {
        memcpy(d->local_address, &old, 8);
    } else if (OPAL_SUCCESS == status && 4 == d->result_bytes) {
        const uint32_t old32 = (uint32_t) old;
        memcpy(d->local_address, &old32, 4);
    }
    d->cbfunc(&mca_btl_tca_module.super, d->endpoint, d->local_address, d->local_handle,
              d->cbcontext, d->cbdata, status);
}

/* An atomic on our own memory: the target's side run here, at once. */
static int run_own(const mca_btl_tca_rdma_done_t *d, const tcaHandle *remote,
                   uint64_t remote_address, uint32_t op, uint32_t core_flags, uint64_t operand,
                   uint64_t compare) {
    const tca_btl_atomic_request_t req = {.addr = remote_address,
                                          .operand = operand,
                                          .compare = compare,
                                          .reg_key = remote->key,
                                          .reg_index = remote->reg_index,
                                          .reg_node = remote->node,
                                          .reg_region = remote->region,
                                          .flags = (uint8_t) core_flags,
                                          .op = op};
    uint64_t old = 0;
    if (OPAL_UNLIKELY(TCA_BTL_GET_OK !=
                      tca_btl_atomic_run(&req, remote, mca_btl_tca_component.node, &old)))
        return OPAL_ERR_BAD_PARAM;
    complete(d, old, OPAL_SUCCESS);
    return OPAL_SUCCESS;
}

/* Records the operation and sends the request; the callback runs from
 * progress once the target answered. */
static int start(struct mca_btl_base_endpoint_t *ep, void *local_address,
                 struct mca_btl_base_registration_handle_t *local_handle,
                 struct mca_btl_base_registration_handle_t *remote_handle, uint64_t remote_address,
                 uint32_t op, int flags, uint64_t operand, uint64_t compare, int fetch,
                 mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata) {
    /* Floating-point atomics are not declared (MCA_BTL_ATOMIC_SUPPORTS_FLOAT). */
    if (OPAL_UNLIKELY(0 == op || (flags & ~MCA_BTL_ATOMIC_FLAG_32BIT) || NULL == remote_handle))
        return OPAL_ERR_NOT_AVAILABLE;
    const uint32_t core_flags = (flags & MCA_BTL_ATOMIC_FLAG_32BIT) ? TCA_BTL_ATOMIC_32BIT : 0;
    tcaHandle remote;
    const int found =
        mca_btl_tca_remote_handle(ep, remote_handle, remote_address, core_flags ? 4 : 8, &remote);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != found))
        return found;
    const mca_btl_tca_rdma_done_t done = {.cbfunc = cbfunc,
                                          .endpoint = ep,
                                          .local_address = local_address,
                                          .local_handle = local_handle,
                                          .cbcontext = cbcontext,
                                          .cbdata = cbdata,
                                          .result_bytes = fetch ? (core_flags ? 4 : 8) : 0};
    tca_btl_atomic_request_t req;
    if (NULL == ep->peer) /* on our own memory (osc rdma on itself) */
        return run_own(&done, &remote, remote_address, op, core_flags, operand, compare);
    /* Full: osc progresses and retries; outside the registration or misaligned: nothing is sent. */
    const int begun = mca_btl_tca_begin_status(
        tca_btl_atomic_begin(mca_btl_tca_component.atomics, ep->node, &done, sizeof(done), &remote,
                             remote_address, op, core_flags, operand, compare, &req));
    if (OPAL_UNLIKELY(OPAL_SUCCESS != begun))
        return begun;
    const int rc =
        mca_btl_tca_send_control(ep, MCA_BTL_TCA_TAG_ATOMIC_REQ, &req, sizeof(req), NULL, 0);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc))
        tca_btl_atomic_cancel(mca_btl_tca_component.atomics, req.cookie);
    return rc;
}

int mca_btl_tca_aop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                    uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *remote_handle,
                    mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata) {
    (void) btl;
    (void) order;
    return start(ep, NULL, NULL, remote_handle, remote_address, core_op(op), flags, operand, 0, 0,
                 cbfunc, cbcontext, cbdata);
}

int mca_btl_tca_afop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                     void *local_address, uint64_t remote_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle,
                     mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata) {
    (void) btl;
    (void) order;
    return start(ep, local_address, local_handle, remote_handle, remote_address, core_op(op), flags,
                 operand, 0, 1, cbfunc, cbcontext, cbdata);
}

int mca_btl_tca_acswap(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                       void *local_address, uint64_t remote_address,
                       struct mca_btl_base_registration_handle_t *local_handle,
                       struct mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                       uint64_t value, int flags, int order,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata) {
    (void) btl;
    (void) order;
    return start(ep, local_address, local_handle, remote_handle, remote_address,
                 TCA_BTL_ATOMIC_CSWAP, flags, value, compare, 1, cbfunc, cbcontext, cbdata);
}

/* Target: run a peer's request on our memory and answer it. */
static void serve(struct mca_btl_base_endpoint_t *ep, const tca_btl_atomic_request_t *req) {
    tca_btl_atomic_done_t done = {.cookie = req->cookie, .status = OPAL_SUCCESS};
    tcaHandle reg;
    if (OPAL_UNLIKELY(!mca_btl_tca_own_registration(req->reg_index, req->reg_key, &reg) ||
                      TCA_BTL_GET_OK !=
                          tca_btl_atomic_run(req, &reg, mca_btl_tca_component.node, &done.old))) {
        opal_output_verbose(1, opal_btl_base_framework.framework_output,
                            "btl:tca: atomic request from node %d outside our live host "
                            "registrations or misaligned: refused",
                            ep->node);
        done.status = OPAL_ERR_BAD_PARAM;
    }
    OPAL_THREAD_ADD_FETCH64(&mca_btl_tca_component.atomics_served, 1);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != mca_btl_tca_send_control(ep, MCA_BTL_TCA_TAG_ATOMIC_DONE,
                                                               &done, sizeof(done), NULL, 0)))
        mca_btl_tca_fatal(ep, "answering an atomic (no descriptor)", tcaErrorNoMemory);
}

/* Origin: the answer; its cookie came from the peer and is only looked up. */
static void finish(struct mca_btl_base_endpoint_t *ep, const tca_btl_atomic_done_t *answer) {
    mca_btl_tca_rdma_done_t d;
    unsigned char owner[TCA_BTL_OWNER_BYTES];
    const int how = tca_btl_atomic_finish(mca_btl_tca_component.atomics, answer, ep->node, owner);
    if (!mca_btl_tca_take_answer(how, ep, "bad-atomic-answer", answer->cookie, owner, &d))
        return;
    complete(&d, answer->old, TCA_BTL_GET_OK == how ? answer->status : OPAL_ERROR);
}

/* From progress, for the atomic tags; the payload stays valid during the call. */
void mca_btl_tca_atomic_control(struct mca_btl_base_endpoint_t *ep, uint8_t tag,
                                const void *payload, size_t size) {
    if (MCA_BTL_TCA_TAG_ATOMIC_REQ == tag && size == sizeof(tca_btl_atomic_request_t)) {
        tca_btl_atomic_request_t req;
        memcpy(&req, payload, sizeof(req)); /* aligned copy of the ring's bytes */
        serve(ep, &req);
    } else if (MCA_BTL_TCA_TAG_ATOMIC_DONE == tag && size == sizeof(tca_btl_atomic_done_t)) {
        tca_btl_atomic_done_t done;
        memcpy(&done, payload, sizeof(done));
        finish(ep, &done);
    } else {
        tca_show_help(HELP_FILE, "dropped-message", tag, ep->node);
    }
}
