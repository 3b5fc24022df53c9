/*
 * btl_tca_get.c - RDMA get on a put-only device, as a put request.
 *
 * TCA cannot read remote memory, but ob1's zero-copy protocol for GPU buffers
 * in Open MPI 4.1 is GET-only (MCA_BTL_FLAGS_CUDA_GET), so get is emulated:
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
 * Ring messages of one peer are delivered in order and published after
 * their payload, so GET_DONE is never seen before the data it announces.
 *
 * The same code serves host memory: btl_tca_get_emulation=all advertises
 * MCA_BTL_FLAGS_GET, ob1 then runs its RGET protocol over it, and the whole
 * path is tested without a GPU.
 */
#include "btl_tca_endpoint.h"
#include "btl_tca_frag.h"

#include <stdlib.h>
#include <string.h>

#include "opal/mca/btl/base/base.h"
#include "opal/util/output.h"
#include "tca_mca_check.h"

#define HELP_FILE "help-btl-tca.txt"

/* On the wire (same host, same build: no byte swapping). */
typedef struct get_request_t {
    uint64_t cookie;   /* the requester's pending get */
    uint64_t src_addr; /* in the owner's address space */
    uint64_t dst_addr; /* in the requester's address space */
    uint64_t size;
    tcaHandle src;     /* the owner's registration (ob1 shipped it in its RGET header) */
    tcaHandle dst;     /* the requester's registration */
} get_request_t;

typedef struct get_done_t {
    uint64_t cookie;
    int32_t status; /* OPAL_SUCCESS or an error */
    int32_t reserved;
} get_done_t;

/* The requester's side of one get, until GET_DONE. */
typedef struct pending_get_t {
    struct mca_btl_base_endpoint_t *endpoint;
    void *local_address;
    struct mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext, *cbdata;
} pending_get_t;

/* The owner's side: the put it runs for a peer. */
typedef struct served_get_t {
    uint64_t cookie;
    struct mca_btl_base_registration_handle_t src, dst; /* put's local and remote handles */
} served_get_t;

/* Either record, from a free list: no allocation per get once warm. */
typedef struct get_item_t {
    opal_free_list_item_t super;
    union {
        pending_get_t pending;
        served_get_t served;
    } u;
} get_item_t;
static OBJ_CLASS_INSTANCE(get_item_t, opal_free_list_item_t, NULL, NULL);

/* Outstanding gets in flight at once (ob1 retries a get refused for lack of one). */
#define MAX_PENDING_GETS 4096
static opal_free_list_t get_items;
static tca_btl_cookies_t *pending_gets; /* cookie -> get_item_t of a pending get */

int mca_btl_tca_get_init(void) {
    OBJ_CONSTRUCT(&get_items, opal_free_list_t);
    if (OPAL_SUCCESS != opal_free_list_init(&get_items, sizeof(get_item_t), 64,
                                            OBJ_CLASS(get_item_t), 0, 0, 16, MAX_PENDING_GETS * 2, 16, NULL, 0,
                                            NULL, NULL, NULL))
        return OPAL_ERR_OUT_OF_RESOURCE;
    pending_gets = tca_btl_cookies_new(MAX_PENDING_GETS);
    return NULL == pending_gets ? OPAL_ERR_OUT_OF_RESOURCE : OPAL_SUCCESS;
}

void mca_btl_tca_get_fini(void) {
    tca_btl_cookies_free(pending_gets);
    pending_gets = NULL;
    OBJ_DESTRUCT(&get_items);
}

size_t mca_btl_tca_get_request_bytes(void) {
    return sizeof(get_request_t);
}

/* A control message through the ring; send never fails, it queues. */
static int send_control(struct mca_btl_base_endpoint_t *ep, mca_btl_base_tag_t tag, const void *msg, size_t len) {
    mca_btl_base_descriptor_t *des = mca_btl_tca_alloc(&mca_btl_tca_module.super, ep, MCA_BTL_NO_ORDER, len,
                                                       MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (OPAL_UNLIKELY(NULL == des)) return OPAL_ERR_OUT_OF_RESOURCE;
    memcpy(des->des_segments[0].seg_addr.pval, msg, len);
    (void) mca_btl_tca_send(&mca_btl_tca_module.super, ep, des, tag);
    return OPAL_SUCCESS;
}

int mca_btl_tca_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep, void *local_address,
                    uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags, int order,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata) {
    (void) btl;
    (void) flags;
    (void) order;
    /* The owner writes into our registration: without one there is nothing it could name. */
    if (OPAL_UNLIKELY(NULL == local_handle || NULL == remote_handle)) return OPAL_ERR_BAD_PARAM;
    const tcaHandle *src = &remote_handle->h;
    const tcaHandle *dst = &local_handle->h;
    const uint64_t dst_addr = (uint64_t) (uintptr_t) local_address;
    if (OPAL_UNLIKELY(src->node != (uint16_t) ep->node || remote_address < src->addr || size > src->size ||
                      remote_address - src->addr > src->size - size || dst_addr < dst->addr || size > dst->size ||
                      dst_addr - dst->addr > dst->size - size))
        return OPAL_ERR_BAD_PARAM;

    get_item_t *item = (get_item_t *) opal_free_list_get(&get_items);
    if (OPAL_UNLIKELY(NULL == item)) return OPAL_ERR_OUT_OF_RESOURCE;
    item->u.pending = (pending_get_t){.endpoint = ep, .local_address = local_address, .local_handle = local_handle,
                                      .cbfunc = cbfunc, .cbcontext = cbcontext, .cbdata = cbdata};
    get_request_t req = {.src_addr = remote_address, .dst_addr = dst_addr, .size = size, .src = *src, .dst = *dst};
    if (OPAL_UNLIKELY(!tca_btl_cookie_put(pending_gets, item, &req.cookie))) {
        opal_free_list_return(&get_items, &item->super);
        return OPAL_ERR_OUT_OF_RESOURCE; /* ob1 queues the get and retries */
    }
    OPAL_THREAD_ADD_FETCH32(&mca_btl_tca_component.gets_pending, 1);
    const int rc = send_control(ep, MCA_BTL_TCA_TAG_GET_REQ, &req, sizeof(req));
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
        OPAL_THREAD_ADD_FETCH32(&mca_btl_tca_component.gets_pending, -1);
        (void) tca_btl_cookie_take(pending_gets, req.cookie);
        opal_free_list_return(&get_items, &item->super);
    }
    return rc;
}

/* Owner: the put for a peer finished (the data is visible there) or failed. */
static void served_put_done(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep, void *local_address,
                            struct mca_btl_base_registration_handle_t *local_handle, void *context, void *cbdata,
                            int status) {
    get_item_t *item = (get_item_t *) context;
    (void) btl;
    (void) local_address;
    (void) local_handle;
    (void) cbdata;
    const get_done_t done = {.cookie = item->u.served.cookie, .status = status};
    opal_free_list_return(&get_items, &item->super);
    OPAL_THREAD_ADD_FETCH64(&mca_btl_tca_component.gets_served, 1);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != send_control(ep, MCA_BTL_TCA_TAG_GET_DONE, &done, sizeof(done))))
        mca_btl_tca_fatal(ep, "answering a get (no descriptor)", tcaErrorNoMemory);
}

static void serve_request(struct mca_btl_base_endpoint_t *ep, const get_request_t *req) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    const tcaHandle *src = &req->src;
    get_done_t refused = {.cookie = req->cookie, .status = OPAL_ERR_BAD_PARAM};
    /* Only our own registrations, and only inside them. */
    if (OPAL_UNLIKELY(src->node != (uint16_t) c->node || req->src_addr < src->addr || req->size > src->size ||
                      req->src_addr - src->addr > src->size - req->size || req->dst.node != (uint16_t) ep->node)) {
        opal_output_verbose(1, opal_btl_base_framework.framework_output,
                            "btl:tca: get request from node %d outside our registration: refused", ep->node);
        (void) send_control(ep, MCA_BTL_TCA_TAG_GET_DONE, &refused, sizeof(refused));
        return;
    }
    get_item_t *item = (get_item_t *) opal_free_list_get(&get_items);
    if (OPAL_UNLIKELY(NULL == item)) {
        refused.status = OPAL_ERR_OUT_OF_RESOURCE;
        (void) send_control(ep, MCA_BTL_TCA_TAG_GET_DONE, &refused, sizeof(refused));
        return;
    }
    served_get_t *sg = &item->u.served;
    sg->cookie = req->cookie;
    sg->src.h = req->src;
    sg->dst.h = req->dst;
    /* PIO reads the source with CPU loads: GPU memory on either side goes by DMA. */
    const int need_dma = tcaMemoryGPU == src->region || tcaMemoryGPU == req->dst.region;
    const int rc = mca_btl_tca_put_ex(&mca_btl_tca_module.super, ep, (void *) (uintptr_t) req->src_addr,
                                      req->dst_addr, &sg->src, &sg->dst, (size_t) req->size, need_dma,
                                      served_put_done, item, NULL);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
        /* the put did not start, so it will not call back */
        opal_free_list_return(&get_items, &item->super);
        refused.status = rc;
        (void) send_control(ep, MCA_BTL_TCA_TAG_GET_DONE, &refused, sizeof(refused));
    }
}

/* The cookie came from the peer: it is looked up, never dereferenced. */
static void finish_get(struct mca_btl_base_endpoint_t *ep, const get_done_t *done) {
    get_item_t *item = (get_item_t *) tca_btl_cookie_take(pending_gets, done->cookie);
    if (OPAL_UNLIKELY(NULL == item)) {
        tca_show_help(HELP_FILE, "bad-get-answer", ep->node, (unsigned long long) done->cookie);
        return;
    }
    const pending_get_t pg = item->u.pending;
    opal_free_list_return(&get_items, &item->super);
    OPAL_THREAD_ADD_FETCH32(&mca_btl_tca_component.gets_pending, -1);
    /* Asked of one peer, answered by another: the data cannot be trusted. */
    const int status = pg.endpoint == ep ? done->status : OPAL_ERROR;
    if (OPAL_UNLIKELY(pg.endpoint != ep))
        tca_show_help(HELP_FILE, "bad-get-answer", ep->node, (unsigned long long) done->cookie);
    pg.cbfunc(&mca_btl_tca_module.super, pg.endpoint, pg.local_address, pg.local_handle, pg.cbcontext, pg.cbdata,
              status);
}

/* From progress, for the btl's own tags; the payload stays valid during the call. */
void mca_btl_tca_get_control(struct mca_btl_base_endpoint_t *ep, uint8_t tag, const void *payload, size_t size) {
    if (MCA_BTL_TCA_TAG_GET_REQ == tag && size == sizeof(get_request_t)) {
        get_request_t req;
        memcpy(&req, payload, sizeof(req)); /* the slot goes back to the peer before the put completes */
        serve_request(ep, &req);
    } else if (MCA_BTL_TCA_TAG_GET_DONE == tag && size == sizeof(get_done_t)) {
        get_done_t done;
        memcpy(&done, payload, sizeof(done));
        finish_get(ep, &done);
    } else {
        tca_show_help(HELP_FILE, "dropped-message", tag, ep->node);
    }
}
