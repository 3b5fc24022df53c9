/*
 * btl_tca_put.c - RDMA put.  ob1 runs its PUT protocol over it (the device
 * has no GET) and sends a FIN as soon as the completion callback runs, so the
 * callback fires only once the data is visible at the target:
 *  - by default, and below btl_tca_put_dma_min: a PIO write, complete when it returns;
 *  - from btl_tca_put_dma_min up: a DMA put (tca-btl/dma_puts.hpp: on a
 *    channel of ours or queued in order behind them), completed from progress.
 *    put never returns OUT_OF_RESOURCE (ob1 would not retry).  While we hold
 *    no channel and none is free, a DMA-sized put is a PIO write: slower to
 *    issue, never an error.
 * This file only chooses and forwards; the queue is the core's.
 */
#include "btl_tca_endpoint.h"

#include <string.h>

#include "opal/mca/btl/base/base.h"
#include "opal/util/output.h"
#include "mca_glue/tca_mca_check.h"

/* The completion of a DMA put rides through the core's queue as bytes. */

static void complete(const mca_btl_tca_rdma_done_t *d, int status) {
    if (NULL == d->cbfunc) { /* a put run for a peer's get */
        mca_btl_tca_get_served(d->endpoint, d->cookie, status);
        return;
    }
    d->cbfunc(&mca_btl_tca_module.super, d->endpoint, d->local_address, d->local_handle,
              d->cbcontext, d->cbdata, status);
}

static int pio_put(const mca_btl_tca_rdma_done_t *d, tcaHandle *dst, uint64_t dst_off,
                   size_t size) {
    const tcaResult r = tcaPioWrite(dst, (off_t) dst_off, d->local_address, size, 0, 0, 0);
    if (OPAL_UNLIKELY(tcaSuccess != r)) {
        mca_btl_tca_fatal(d->endpoint, "a put", r);
        return OPAL_ERROR;
    }
    complete(d, OPAL_SUCCESS);
    return OPAL_SUCCESS;
}

/* Between two host registrations of our own process (osc rdma on itself, through
 * the endpoint without a ring): a plain copy, checked like a peer's request,
 * never through the device (the ucx device would send it to itself). */
int mca_btl_tca_copy_own(const mca_btl_tca_rdma_done_t *d, const tcaHandle *dst, uint64_t dst_addr,
                         const tcaHandle *src, uint64_t src_addr, size_t size) {
    const tca_btl_get_request_t req = {
        .src_addr = src_addr, .dst_addr = dst_addr, .size = size, .src = *src, .dst = *dst};
    const int node = mca_btl_tca_component.node;
    if (OPAL_UNLIKELY(tcaMemoryCPU != src->region || tcaMemoryCPU != dst->region))
        return OPAL_ERR_NOT_AVAILABLE; /* GPU memory: not by CPU loads and stores */
    if (OPAL_UNLIKELY(!tca_btl_get_request_servable(&req, node, node)))
        return OPAL_ERR_BAD_PARAM;
    memmove((void *) (uintptr_t) dst_addr, (const void *) (uintptr_t) src_addr, size);
    d->cbfunc(&mca_btl_tca_module.super, d->endpoint, d->local_address, d->local_handle,
              d->cbcontext, d->cbdata, OPAL_SUCCESS);
    return OPAL_SUCCESS;
}

int mca_btl_tca_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata) {
    (void) btl;
    (void) flags;
    (void) order;
    const mca_btl_tca_rdma_done_t done = {.cbfunc = cbfunc,
                                          .endpoint = ep,
                                          .local_address = local_address,
                                          .local_handle = local_handle,
                                          .cbcontext = cbcontext,
                                          .cbdata = cbdata};
    tcaHandle remote;
    const int found = mca_btl_tca_remote_handle(ep, remote_handle, remote_address, size, &remote);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != found))
        return found;
    if (NULL == ep->peer) { /* into our own memory (osc rdma on itself) */
        /* Without a registration the source is host memory (osc passes none for small puts). */
        tcaHandle src = mca_btl_tca_host_range(local_address, size);
        if (NULL != local_handle)
            src = local_handle->h;
        return mca_btl_tca_copy_own(&done, &remote, remote_address, &src,
                                    (uint64_t) (uintptr_t) local_address, size);
    }
    /* Small, from and into host memory: a message the target copies in and
     * answers (GET_DONE completes it like a get). */
    if (size <= mca_btl_tca_component.set.put_inline_max && tcaMemoryCPU == remote.region &&
        (NULL == local_handle || tcaMemoryCPU == local_handle->h.region)) {
        const tcaHandle src = mca_btl_tca_host_range(local_address, size);
        tca_btl_get_small_t req;
        const int begun = mca_btl_tca_begin_status(
            tca_btl_get_begin_small(mca_btl_tca_component.gets, ep->node, &done, sizeof(done),
                                    &remote, remote_address, &src, src.addr, size, &req));
        if (OPAL_UNLIKELY(OPAL_SUCCESS != begun))
            return begun;
        return mca_btl_tca_send_request(ep, MCA_BTL_TCA_TAG_PUT_SMALL, &req, sizeof(req),
                                        req.cookie, local_address, size);
    }
    /* A PIO write reads its source with CPU loads: GPU memory goes by DMA
     * (ob1 puts from GPU buffers when an emulated get failed and it falls
     * back to its PUT protocol). */
    const int need_dma = NULL != local_handle && tcaMemoryGPU == local_handle->h.region;
    return mca_btl_tca_put_ex(&done, NULL == local_handle ? NULL : &local_handle->h, &remote,
                              remote_address, size, need_dma);
}

/* src: the local registration (NULL: PIO only).  need_dma: the source is GPU
 * memory or the put must otherwise not be a PIO write (CPU loads of the
 * source); it then fails, rather than falling back to PIO, when no channel
 * can be had. */
int mca_btl_tca_put_ex(const mca_btl_tca_rdma_done_t *d, const tcaHandle *src, tcaHandle *dst,
                       uint64_t remote_address, size_t size, int need_dma) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    if (OPAL_UNLIKELY(remote_address < dst->addr || size > dst->size ||
                      remote_address - dst->addr > dst->size - size))
        return OPAL_ERR_BAD_PARAM;
    const uint64_t dst_off = remote_address - dst->addr;

    if (need_dma && NULL == src)
        return OPAL_ERR_BAD_PARAM;
    if (!need_dma && (0 == c->set.put_dma_min || size < c->set.put_dma_min || NULL == src))
        return pio_put(d, dst, dst_off, size);

    tca_btl_dma_put_t put = {.dst = *dst,
                             .src = *src,
                             .dst_off = dst_off,
                             .src_off = (uint64_t) ((uintptr_t) d->local_address - src->addr),
                             .size = size};
    memcpy(put.owner, d, sizeof(*d));
    tcaResult r = tcaSuccess;
    switch (tca_btl_dma_put_submit(c->dma_puts, &put, &r)) {
    case TCA_BTL_PUT_STARTED:
    case TCA_BTL_PUT_QUEUED:
        return OPAL_SUCCESS;
    case TCA_BTL_PUT_NO_CHANNEL:
        if (!need_dma)
            return pio_put(d, dst, dst_off, size);
        r = tcaErrorNoResource;
        mca_btl_tca_fatal(d->endpoint, "a GPU put (no free DMA channel)", r);
        return OPAL_ERROR;
    default:
        mca_btl_tca_fatal(d->endpoint, "starting a DMA put", r);
        return OPAL_ERROR;
    }
}

static void dma_put_done(void *ctx, const tca_btl_dma_put_t *put, tcaResult r) {
    mca_btl_tca_rdma_done_t d;
    (void) ctx;
    memcpy(&d, put->owner, sizeof(d));
    if (OPAL_UNLIKELY(tcaSuccess != r))
        mca_btl_tca_fatal(d.endpoint, "a DMA put", r);
    complete(&d, tcaSuccess == r ? OPAL_SUCCESS : OPAL_ERROR);
}

int mca_btl_tca_put_progress(void) {
    return tca_btl_dma_puts_progress(mca_btl_tca_component.dma_puts, dma_put_done, NULL);
}

static void log_dma(void *ctx, const char *text) {
    (void) ctx;
    opal_output_verbose(10, opal_btl_base_framework.framework_output, "btl:tca: %s", text);
}

int mca_btl_tca_put_init(void) {
    mca_btl_tca_component.dma_puts =
        tca_btl_dma_puts_new(mca_btl_tca_component.set.dma_channels, log_dma, NULL);
    return NULL == mca_btl_tca_component.dma_puts ? OPAL_ERR_OUT_OF_RESOURCE : OPAL_SUCCESS;
}

void mca_btl_tca_put_fini(void) {
    tca_btl_dma_puts_free(mca_btl_tca_component.dma_puts);
    mca_btl_tca_component.dma_puts = NULL;
}

/* Target: a peer's small put, the data behind the request; the same checks as
 * a small get of that range, then a copy and the answer. */
void mca_btl_tca_put_control(struct mca_btl_base_endpoint_t *ep, const void *payload, size_t size) {
    tca_btl_get_small_t req;
    if (OPAL_UNLIKELY(size < sizeof(req))) {
        tca_show_help("help-btl-tca.txt", "dropped-message", MCA_BTL_TCA_TAG_PUT_SMALL, ep->node);
        return;
    }
    memcpy(&req, payload, sizeof(req));
    tcaHandle reg;
    if (OPAL_UNLIKELY(req.size != size - sizeof(req) ||
                      !mca_btl_tca_own_registration(req.reg_index, req.reg_key, &reg) ||
                      !tca_btl_get_small_servable(&req, &reg, mca_btl_tca_component.node))) {
        opal_output_verbose(
            1, opal_btl_base_framework.framework_output,
            "btl:tca: small put from node %d outside our live host registrations: refused",
            ep->node);
        mca_btl_tca_send_done(ep, req.cookie, OPAL_ERR_BAD_PARAM);
        return;
    }
    memcpy((void *) (uintptr_t) req.src_addr, (const unsigned char *) payload + sizeof(req),
           (size_t) req.size);
    mca_btl_tca_send_done(ep, req.cookie, OPAL_SUCCESS);
}
