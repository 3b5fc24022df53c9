/*
 * btl_tca_get.c - RDMA get on a put-only device, as a put request.
 *
 * TCA cannot read remote memory, but ob1's zero-copy protocol for GPU buffers
 * in Open MPI 4.1 and 5.0 is GET-only (MCA_BTL_FLAGS_CUDA_GET, 5.0's
 * MCA_BTL_FLAGS_ACCELERATOR_GET), so get is emulated:
 *   1. the requester sends GET_REQ {source (the owner's handle and address),
 *      destination (its own handle and address), size, cookie} over the eager
 *      ring to the data owner;
 *   2. the owner's progress executes it as a put of its own (the btl's put
 *      path: PIO or a DMA channel; always DMA when either side is GPU memory,
 *      which the device moves through CUDA IPC on the loopback and GPUDirect
 *      on PEACH2) and, once the put completed - the data is visible in the
 *      requester's memory - sends GET_DONE {cookie, status} back;
 *   3. the requester's progress sees GET_DONE behind the data and completes
 *      the get (ob1 then sends its FIN).
 * A get of host memory up to btl_tca_get_inline_max asks with a short
 * request (GET_SMALL: one cache line) and comes back inside the answer
 * (GET_DATA: the answer and the data in one ring message, copied out by the
 * requester): one message where the put and GET_DONE are two, and no
 * single-copy call for a few bytes.
 * Ring messages of one peer are delivered in order and published after
 * their payload, so GET_DONE is never seen before the data it announces.
 * The wire format, the checks and the pending gets are the core's
 * (tca-btl/pending_gets.hpp); this file sends, forwards and reports.
 *
 * The same code serves host memory: btl_tca_get_emulation=all advertises
 * MCA_BTL_FLAGS_GET, ob1 then runs its RGET protocol over it, and the whole
 * path is tested without a GPU.
 */
#include "btl_tca_endpoint.h"
#include "btl_tca_frag.h"

#include <string.h>

#include "opal/mca/btl/base/base.h"
#include "opal/util/output.h"
#include "mca_glue/tca_mca_check.h"

#define HELP_FILE "help-btl-tca.txt"

/* Outstanding gets in flight at once (ob1 retries a get refused for lack of one). */
#define MAX_PENDING_GETS 4096

int mca_btl_tca_get_init(void) {
    mca_btl_tca_component.gets = tca_btl_gets_new(MAX_PENDING_GETS);
    return NULL == mca_btl_tca_component.gets ? OPAL_ERR_OUT_OF_RESOURCE : OPAL_SUCCESS;
}

void mca_btl_tca_get_fini(void) {
    tca_btl_gets_free(mca_btl_tca_component.gets);
    mca_btl_tca_component.gets = NULL;
}

size_t mca_btl_tca_get_request_bytes(void) {
    return sizeof(tca_btl_get_request_t);
}

/* Owner: the answer with the data behind it, in one message. */
static void answer_with_data(struct mca_btl_base_endpoint_t *ep, uint64_t cookie, uint64_t src_addr,
                             size_t size) {
    const tca_btl_get_done_t done = {.cookie = cookie, .status = OPAL_SUCCESS};
    OPAL_THREAD_ADD_FETCH64(&mca_btl_tca_component.gets_served, 1);
    if (OPAL_UNLIKELY(OPAL_SUCCESS !=
                      mca_btl_tca_send_control(ep, MCA_BTL_TCA_TAG_GET_DATA, &done, sizeof(done),
                                               (const void *) (uintptr_t) src_addr, size)))
        mca_btl_tca_fatal(ep, "answering a get (no descriptor)", tcaErrorNoMemory);
}

int mca_btl_tca_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata) {
    (void) btl;
    (void) flags;
    (void) order;
    /* The owner writes into our registration; a small get's data comes back
     * in the answer instead and we copy it out ourselves.  osc rdma registers
     * no destination (btl_get_local_registration_threshold is SIZE_MAX: it
     * would get into its own registered buffer and copy from there): a
     * larger get registers it here. */
    const size_t inline_max = mca_btl_tca_component.set.get_inline_max;
    tcaHandle remote;
    const int found = mca_btl_tca_remote_handle(ep, remote_handle, remote_address, size, &remote);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != found))
        return found;
    tcaHandle host_dst = mca_btl_tca_host_range(local_address, size);
    const tcaHandle *dst = NULL == local_handle ? &host_dst : &local_handle->h;
    const mca_btl_tca_rdma_done_t done = {.cbfunc = cbfunc,
                                          .endpoint = ep,
                                          .local_address = local_address,
                                          .local_handle = local_handle,
                                          .cbcontext = cbcontext,
                                          .cbdata = cbdata,
                                          .result_bytes = size <= UINT32_MAX ? (uint32_t) size : 0};
    if (NULL == ep->peer) /* from our own memory (osc rdma on itself) */
        return mca_btl_tca_copy_own(&done, dst, (uint64_t) (uintptr_t) local_address, &remote,
                                    remote_address, size);
    /* Small and host memory on both sides: the short request, answered inline. */
    if (size <= inline_max && tcaMemoryCPU == remote.region && tcaMemoryCPU == dst->region) {
        tca_btl_get_small_t small;
        const int begun = mca_btl_tca_begin_status(tca_btl_get_begin_small(
            mca_btl_tca_component.gets, ep->node, &done, sizeof(done), &remote, remote_address, dst,
            (uint64_t) (uintptr_t) local_address, size, &small));
        if (OPAL_UNLIKELY(OPAL_SUCCESS != begun))
            return begun;
        return mca_btl_tca_send_request(ep, MCA_BTL_TCA_TAG_GET_SMALL, &small, sizeof(small),
                                        small.cookie, NULL, 0);
    }
    /* The owner puts into our registration (one copy, by its core). */
    mca_btl_tca_rdma_done_t owned = done;
    if (NULL == local_handle) {
        const int registered =
            mca_btl_tca_register_destination(local_address, size, &owned.own_reg);
        if (OPAL_UNLIKELY(OPAL_SUCCESS != registered))
            return registered;
        dst = &owned.own_reg->handle.h;
    }
    tca_btl_get_request_t req;
    /* Full: ob1 queues the get and retries. */
    int rc = mca_btl_tca_begin_status(
        tca_btl_get_begin(mca_btl_tca_component.gets, ep->node, &owned, sizeof(owned), &remote,
                          remote_address, dst, (uint64_t) (uintptr_t) local_address, size, &req));
    if (OPAL_LIKELY(OPAL_SUCCESS == rc))
        rc = mca_btl_tca_send_request(ep, MCA_BTL_TCA_TAG_GET_REQ, &req, sizeof(req), req.cookie,
                                      NULL, 0);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc))
        mca_btl_tca_release_destination(owned.own_reg);
    return rc;
}

static void serve_request(struct mca_btl_base_endpoint_t *ep, tca_btl_get_request_t *req) {
    if (OPAL_UNLIKELY(!tca_btl_get_request_servable(req, mca_btl_tca_component.node, ep->node) ||
                      !mca_btl_tca_own_handle_live(&req->src))) {
        opal_output_verbose(1, opal_btl_base_framework.framework_output,
                            "btl:tca: get request from node %d outside our live registrations: "
                            "refused",
                            ep->node);
        mca_btl_tca_send_done(ep, req->cookie, OPAL_ERR_BAD_PARAM);
        return;
    }
    const mca_btl_tca_rdma_done_t done = {
        .endpoint = ep, .local_address = (void *) (uintptr_t) req->src_addr, .cookie = req->cookie};
    /* PIO reads the source with CPU loads: GPU memory on either side goes by DMA. */
    const int need_dma = tcaMemoryGPU == req->src.region || tcaMemoryGPU == req->dst.region;
    const int rc = mca_btl_tca_put_ex(&done, &req->src, &req->dst, req->dst_addr,
                                      (size_t) req->size, need_dma);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc))
        mca_btl_tca_send_done(ep, req->cookie, rc); /* it did not start: no callback */
}

/* The cookie came from the peer: the core looks it up, never dereferences it.
 * data: an inline answer's bytes (len of them), NULL after the owner's put. */
static void finish_get(struct mca_btl_base_endpoint_t *ep, const tca_btl_get_done_t *answer_msg,
                       const void *data, size_t len) {
    mca_btl_tca_rdma_done_t d;
    unsigned char owner[TCA_BTL_OWNER_BYTES];
    const int how = tca_btl_get_finish(mca_btl_tca_component.gets, answer_msg, ep->node, owner);
    if (!mca_btl_tca_take_answer(how, ep, "bad-get-answer", answer_msg->cookie, owner, &d))
        return;
    /* Answered by another peer than the one asked: the data cannot be trusted. */
    int status = TCA_BTL_GET_OK == how ? answer_msg->status : OPAL_ERROR;
    if (NULL != data && OPAL_SUCCESS == status) {
        if (OPAL_LIKELY(len == d.result_bytes))
            memcpy(d.local_address, data, len);
        else
            status = OPAL_ERROR; /* not the size asked for */
    }
    mca_btl_tca_release_destination(d.own_reg); /* NULL unless get() took one */
    d.cbfunc(&mca_btl_tca_module.super, d.endpoint, d.local_address, d.local_handle, d.cbcontext,
             d.cbdata, status);
}

/* From progress, for the btl's own tags; the payload stays valid during the call. */
void mca_btl_tca_get_control(struct mca_btl_base_endpoint_t *ep, uint8_t tag, const void *payload,
                             size_t size) {
    if (MCA_BTL_TCA_TAG_GET_REQ == tag && size == sizeof(tca_btl_get_request_t)) {
        tca_btl_get_request_t req;
        memcpy(&req, payload,
               sizeof(req)); /* the slot goes back to the peer before the put completes */
        serve_request(ep, &req);
    } else if (MCA_BTL_TCA_TAG_GET_DONE == tag && size == sizeof(tca_btl_get_done_t)) {
        tca_btl_get_done_t done;
        memcpy(&done, payload, sizeof(done));
        finish_get(ep, &done, NULL, 0);
    } else if (MCA_BTL_TCA_TAG_GET_SMALL == tag && size == sizeof(tca_btl_get_small_t)) {
        tca_btl_get_small_t req;
        tcaHandle reg;
        memcpy(&req, payload, sizeof(req));
        if (OPAL_LIKELY(mca_btl_tca_own_registration(req.reg_index, req.reg_key, &reg) &&
                        tca_btl_get_small_servable(&req, &reg, mca_btl_tca_component.node) &&
                        req.size <=
                            mca_btl_tca_component.slot_payload - sizeof(tca_btl_get_done_t)))
            answer_with_data(ep, req.cookie, req.src_addr, (size_t) req.size);
        else
            mca_btl_tca_send_done(ep, req.cookie, OPAL_ERR_BAD_PARAM);
    } else if (MCA_BTL_TCA_TAG_GET_DATA == tag && size >= sizeof(tca_btl_get_done_t)) {
        tca_btl_get_done_t done;
        memcpy(&done, payload, sizeof(done));
        finish_get(ep, &done, (const unsigned char *) payload + sizeof(done), size - sizeof(done));
    } else {
        tca_show_help(HELP_FILE, "dropped-message", tag, ep->node);
    }
}
