/*
 * btl_tca_put.c - RDMA put.  ob1 runs its PUT protocol over it (the device
 * has no GET) and sends a FIN as soon as the completion callback runs, so the
 * callback fires only once the data is visible at the target:
 *  - by default, and below btl_tca_put_dma_min: a PIO write, complete when it returns;
 *  - from btl_tca_put_dma_min up: one descriptor on a DMA channel of ours, completed from progress when
 *    the channel reports the data landed.  Puts that find every channel busy
 *    wait in order; put never returns OUT_OF_RESOURCE (ob1 would not retry).
 * The channels belong to the device layer: we acquire up to btl_tca_dma_channels of them when DMA puts
 * first need one (coll tca's offloaded broadcasts and TCA-API programs acquire theirs from the same
 * pool).  While we hold none and none is free, a DMA-sized put is a PIO write: slower to issue,
 * never an error.
 */
#include "btl_tca_endpoint.h"

#include "opal/mca/btl/base/base.h"

typedef struct mca_btl_tca_put_t {
    opal_list_item_t super;
    struct mca_btl_base_endpoint_t *endpoint;
    void *local_address;
    struct mca_btl_base_registration_handle_t *local_handle;
    tcaHandle dst, src;
    uint64_t dst_off, src_off;
    size_t size;
    tcaDesc *desc;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext, *cbdata;
} mca_btl_tca_put_t;
static OBJ_CLASS_INSTANCE(mca_btl_tca_put_t, opal_list_item_t, NULL, NULL);

static void put_complete(mca_btl_tca_put_t *put, int status) {
    put->cbfunc(&mca_btl_tca_module.super, put->endpoint, put->local_address, put->local_handle, put->cbcontext,
                put->cbdata, status);
}

/* dma_lock held.  i: index into our acquired channels. */
static tcaResult start_on_channel(mca_btl_tca_put_t *put, int i) {
    const int channel = mca_btl_tca_component.dma_channel_ids[i];
    tcaResult r;
    put->desc = tcaDescNew();
    if (NULL == put->desc) return tcaErrorNoMemory;
    r = tcaDescSetMemcpy(put->desc, &put->dst, (off_t) put->dst_off, &put->src, (off_t) put->src_off, put->size,
                         tcaDMAUseInternal, 0, 0);
    if (tcaSuccess == r) r = tcaDescSet(put->desc, channel);
    if (tcaSuccess == r) r = tcaStartDMADesc(channel);
    if (tcaSuccess != r) {
        tcaDescFree(put->desc);
        put->desc = NULL;
        return r;
    }
    mca_btl_tca_component.dma_active[i] = put;
    return tcaSuccess;
}

/* dma_lock held: an idle channel of ours, else a newly acquired one (up to
 * btl_tca_dma_channels), else -1. */
static int idle_channel_locked(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    for (int i = 0; i < c->dma_nchannels; ++i)
        if (NULL == c->dma_active[i]) return i;
    if (c->dma_nchannels >= c->dma_channels) return -1;
    int channel = -1;
    const tcaResult r = tcaChannelAcquire(&channel);
    if (tcaSuccess != r) {
        if (0 == c->dma_nchannels && !c->dma_none_reported)
            opal_output_verbose(10, opal_btl_base_framework.framework_output,
                                "btl:tca: no free DMA channel (%s): DMA-sized puts are PIO writes until one is",
                                tcaGetErrorString(r));
        c->dma_none_reported = 1;
        return -1;
    }
    opal_output_verbose(10, opal_btl_base_framework.framework_output,
                        "btl:tca: DMA puts use channel %d (%d of up to %d)", channel & 0xffff /* the id's index */,
                        c->dma_nchannels + 1,
                        c->dma_channels);
    c->dma_channel_ids[c->dma_nchannels] = channel;
    c->dma_active[c->dma_nchannels] = NULL;
    return c->dma_nchannels++;
}

static int pio_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep, void *local_address,
                   tcaHandle *dst, uint64_t dst_off, struct mca_btl_base_registration_handle_t *local_handle,
                   size_t size, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata) {
    const tcaResult r = tcaPioWrite(dst, (off_t) dst_off, local_address, size, 0, 0, 0);
    if (OPAL_UNLIKELY(tcaSuccess != r)) {
        mca_btl_tca_fatal(ep, "a put", r);
        return OPAL_ERROR;
    }
    cbfunc(btl, ep, local_address, local_handle, cbcontext, cbdata, OPAL_SUCCESS);
    return OPAL_SUCCESS;
}

int mca_btl_tca_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep, void *local_address,
                    uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags, int order,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata) {
    (void) flags;
    (void) order;
    /* A PIO write reads its source with CPU loads: GPU memory goes by DMA
     * (ob1 puts from GPU buffers when an emulated get failed and it falls
     * back to its PUT protocol). */
    const int need_dma = NULL != local_handle && tcaMemoryGPU == local_handle->h.region;
    return mca_btl_tca_put_ex(btl, ep, local_address, remote_address, local_handle, remote_handle, size, need_dma,
                              cbfunc, cbcontext, cbdata);
}

/* need_dma: the source is GPU memory or the put must otherwise not be a PIO
 * write (CPU loads of the source); it then waits for a channel of ours and
 * fails, rather than falling back to PIO, when none can be had. */
int mca_btl_tca_put_ex(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep, void *local_address,
                       uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
                       struct mca_btl_base_registration_handle_t *remote_handle, size_t size, int need_dma,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    tcaHandle *dst = &remote_handle->h;
    if (OPAL_UNLIKELY(remote_address < dst->addr || size > dst->size || remote_address - dst->addr > dst->size - size))
        return OPAL_ERR_BAD_PARAM;
    const uint64_t dst_off = remote_address - dst->addr;

    if (need_dma && NULL == local_handle) return OPAL_ERR_BAD_PARAM;
    if (!need_dma && (0 == c->put_dma_min || size < c->put_dma_min || NULL == local_handle))
        return pio_put(btl, ep, local_address, dst, dst_off, local_handle, size, cbfunc, cbcontext, cbdata);

    OPAL_THREAD_LOCK(&c->dma_lock);
    const int i = opal_list_is_empty(&c->dma_pending) ? idle_channel_locked() : -1;
    if (i < 0 && 0 == c->dma_nchannels) { /* no channel of ours and none free */
        OPAL_THREAD_UNLOCK(&c->dma_lock);
        if (need_dma) {
            mca_btl_tca_fatal(ep, "a GPU put (no free DMA channel)", tcaErrorNoResource);
            return OPAL_ERROR;
        }
        return pio_put(btl, ep, local_address, dst, dst_off, local_handle, size, cbfunc, cbcontext, cbdata);
    }
    mca_btl_tca_put_t *put = OBJ_NEW(mca_btl_tca_put_t);
    if (OPAL_UNLIKELY(NULL == put)) {
        OPAL_THREAD_UNLOCK(&c->dma_lock);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    put->endpoint = ep;
    put->local_address = local_address;
    put->local_handle = local_handle;
    put->dst = *dst;
    put->dst_off = dst_off;
    put->src = local_handle->h;
    put->src_off = (uint64_t) ((uintptr_t) local_address - local_handle->h.addr);
    put->size = size;
    put->desc = NULL;
    put->cbfunc = cbfunc;
    put->cbcontext = cbcontext;
    put->cbdata = cbdata;

    tcaResult r = tcaSuccess;
    if (i >= 0) r = start_on_channel(put, i);
    else opal_list_append(&c->dma_pending, &put->super);
    if (tcaSuccess == r) OPAL_THREAD_ADD_FETCH32(&c->dma_in_flight, 1);
    OPAL_THREAD_UNLOCK(&c->dma_lock);
    if (OPAL_UNLIKELY(tcaSuccess != r)) {
        OBJ_RELEASE(put);
        mca_btl_tca_fatal(ep, "starting a DMA put", r);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

/* Reap finished channels, start waiting puts, then call back (unlocked). */
int mca_btl_tca_put_progress(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    mca_btl_tca_put_t *done[TCA_NUM_DMA_CHANNELS];
    int status[TCA_NUM_DMA_CHANNELS];
    int ndone = 0;

    OPAL_THREAD_LOCK(&c->dma_lock);
    for (int ch = 0; ch < c->dma_nchannels; ++ch) {
        mca_btl_tca_put_t *put = c->dma_active[ch];
        int finished = 0;
        if (NULL == put) continue;
        const tcaResult r = tcaTestDMAC(c->dma_channel_ids[ch], &finished);
        if (tcaSuccess != r) {
            status[ndone] = OPAL_ERROR;
            mca_btl_tca_fatal(put->endpoint, "a DMA put", r);
        } else if (!finished) {
            continue;
        } else {
            status[ndone] = OPAL_SUCCESS;
        }
        tcaDescFree(put->desc);
        c->dma_active[ch] = NULL;
        done[ndone++] = put;
        mca_btl_tca_put_t *next = (mca_btl_tca_put_t *) opal_list_remove_first(&c->dma_pending);
        if (NULL != next) {
            const tcaResult rs = start_on_channel(next, ch);
            if (tcaSuccess != rs) { /* report it like a failed transfer */
                mca_btl_tca_fatal(next->endpoint, "starting a DMA put", rs);
                opal_list_prepend(&c->dma_pending, &next->super);
            }
        }
    }
    OPAL_THREAD_UNLOCK(&c->dma_lock);

    for (int i = 0; i < ndone; ++i) {
        OPAL_THREAD_ADD_FETCH32(&c->dma_in_flight, -1);
        put_complete(done[i], status[i]);
        OBJ_RELEASE(done[i]);
    }
    return ndone;
}

void mca_btl_tca_put_fini(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    for (int ch = 0; ch < c->dma_nchannels; ++ch) {
        if (NULL != c->dma_active[ch]) {
            (void) tcaWaitDMAC(c->dma_channel_ids[ch]);
            tcaDescFree(c->dma_active[ch]->desc);
            OBJ_RELEASE(c->dma_active[ch]);
            c->dma_active[ch] = NULL;
        }
        (void) tcaChannelRelease(c->dma_channel_ids[ch]);
    }
    c->dma_nchannels = 0;
    opal_list_item_t *item;
    while (NULL != (item = opal_list_remove_first(&c->dma_pending))) OBJ_RELEASE(item);
}
