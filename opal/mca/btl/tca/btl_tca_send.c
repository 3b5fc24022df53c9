/*
 * btl_tca_send.c - the eager path: a message is copied into the next slot of
 * the receiver's ring (PIO stores) and published by its header word.  A full
 * ring queues the descriptor on the endpoint, in order; progress drains the
 * queue when credits come back.  send never fails and always calls back for
 * queued descriptors (the btl/vader policy, ompi-notes 1.4).
 */
#include "btl_tca_endpoint.h"
#include "btl_tca_frag.h"

#include <string.h>

#include "opal/datatype/opal_convertor.h"

/* Try to put one descriptor into the ring; the endpoint lock is held.  A
 * write the device refused (the peer is gone, ucx device) sets *failed and
 * counts as done: the caller reports it once unlocked. */
static inline bool ring_write_locked(mca_btl_tca_endpoint_t *ep, const mca_btl_tca_frag_t *frag,
                                     mca_btl_base_tag_t tag, bool *doorbell, tcaResult *failed) {
    void *slot = tca_btl_tx_reserve(ep->peer, (uint32_t) frag->segment.seg_len);
    if (NULL == slot)
        return false;
    memcpy(slot, frag->segment.seg_addr.pval, frag->segment.seg_len);
    const int asked = tca_btl_tx_commit(ep->peer, tag, (uint32_t) frag->segment.seg_len, failed);
    *doorbell |= asked > 0;
    return true;
}

static inline void ring_doorbell(mca_btl_tca_endpoint_t *ep) {
    const tcaResult r = tcaInterruptRaise(ep->node);
    if (OPAL_UNLIKELY(tcaSuccess != r))
        mca_btl_tca_fatal(ep, "raising a peer's interrupt", r);
}

static inline void ring_write_failed(mca_btl_tca_endpoint_t *ep, tcaResult r) {
    if (OPAL_UNLIKELY(tcaSuccess != r))
        mca_btl_tca_fatal(ep, "writing into a peer's ring", r);
}

/* Room for size bytes straight in the peer's ring (it fits a slot, nothing
 * is queued before it): returned with the endpoint lock held until
 * ring_commit_unlock; NULL, unlocked, where there is none. */
static inline unsigned char *ring_reserve_locked(mca_btl_tca_endpoint_t *ep, size_t size) {
    if (OPAL_UNLIKELY(size > mca_btl_tca_component.slot_payload))
        return NULL;
    OPAL_THREAD_LOCK(&ep->lock);
    unsigned char *slot = 0 == ep->pending_count
                              ? (unsigned char *) tca_btl_tx_reserve(ep->peer, (uint32_t) size)
                              : NULL;
    if (OPAL_UNLIKELY(NULL == slot))
        OPAL_THREAD_UNLOCK(&ep->lock);
    return slot;
}

/* Publishes length bytes of the reserved room, unlocks, rings the doorbell. */
static inline void ring_commit_unlock(mca_btl_tca_endpoint_t *ep, mca_btl_base_tag_t tag,
                                      size_t length) {
    tcaResult failed = tcaSuccess;
    const int doorbell = tca_btl_tx_commit(ep->peer, tag, (uint32_t) length, &failed);
    OPAL_THREAD_UNLOCK(&ep->lock);
    ring_write_failed(ep, failed);
    if (doorbell > 0)
        ring_doorbell(ep);
}

void mca_btl_tca_frag_publish(mca_btl_tca_frag_t *frag, mca_btl_base_tag_t tag) {
    mca_btl_tca_endpoint_t *ep = frag->endpoint;
    const uint32_t size = MCA_BTL_TCA_TAG_NOTHING == tag ? 0 : (uint32_t) frag->segment.seg_len;
    frag->held = false;
    OPAL_THREAD_LOCK(&ep->lock);
    const int doorbell = tca_btl_tx_publish(ep->peer, frag->slot, tag, size);
    OPAL_THREAD_UNLOCK(&ep->lock);
    if (doorbell > 0)
        ring_doorbell(ep);
}

int mca_btl_tca_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                     struct mca_btl_base_descriptor_t *descriptor, mca_btl_base_tag_t tag) {
    mca_btl_tca_frag_t *frag = (mca_btl_tca_frag_t *) descriptor;
    bool doorbell = false;
    tcaResult failed = tcaSuccess;
    (void) btl;
    if (frag->held) {
        /* Packed into its slot already; messages queued meanwhile come after it. */
        mca_btl_tca_frag_publish(frag, tag);
        mca_btl_tca_frag_complete(frag, 0);
        return 1;
    }
    frag->endpoint = ep;

    OPAL_THREAD_LOCK(&ep->lock);
    if (OPAL_LIKELY(0 == ep->pending_count) &&
        ring_write_locked(ep, frag, tag, &doorbell, &failed)) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        ring_write_failed(ep, failed);
        if (doorbell)
            ring_doorbell(ep);
        /* The source is reusable at once: complete inline, like btl/self. */
        mca_btl_tca_frag_complete(frag, 0);
        return 1;
    }
    frag->tag = tag;
    opal_list_append(&ep->pending, (opal_list_item_t *) frag);
    if (1 == ++ep->pending_count)
        (void) opal_atomic_fetch_or_64(&mca_btl_tca_component.pending_peers,
                                       (int64_t) (UINT64_C(1) << ep->node));
    OPAL_THREAD_UNLOCK(&ep->lock);
    return OPAL_SUCCESS;
}

/* Drain the endpoint's queue while the ring has room; callbacks run unlocked. */
int mca_btl_tca_send_pending(struct mca_btl_base_endpoint_t *ep) {
    opal_list_t done;
    bool doorbell = false;
    tcaResult failed = tcaSuccess;
    int count = 0;
    OBJ_CONSTRUCT(&done, opal_list_t);
    OPAL_THREAD_LOCK(&ep->lock);
    while (ep->pending_count > 0) {
        mca_btl_tca_frag_t *frag = (mca_btl_tca_frag_t *) opal_list_get_first(&ep->pending);
        if (!ring_write_locked(ep, frag, frag->tag, &doorbell, &failed))
            break;
        opal_list_remove_first(&ep->pending);
        ep->pending_count--;
        opal_list_append(&done, (opal_list_item_t *) frag);
    }
    if (0 == ep->pending_count)
        (void) opal_atomic_fetch_and_64(&mca_btl_tca_component.pending_peers,
                                        (int64_t) ~(UINT64_C(1) << ep->node));
    OPAL_THREAD_UNLOCK(&ep->lock);
    ring_write_failed(ep, failed);
    if (doorbell)
        ring_doorbell(ep);
    opal_list_item_t *item;
    while (NULL != (item = opal_list_remove_first(&done))) {
        mca_btl_tca_frag_complete((mca_btl_tca_frag_t *) item,
                                  1); /* we returned 0: always call back */
        ++count;
    }
    OBJ_DESTRUCT(&done);
    return count;
}

/* Header and data straight into the ring, no descriptor. */
int mca_btl_tca_sendi(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                      struct opal_convertor_t *convertor, void *header, size_t header_size,
                      size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                      mca_btl_base_descriptor_t **descriptor) {
    if (OPAL_UNLIKELY(NULL == ep->peer)) { /* our own process: RMA only */
        *descriptor = NULL;
        return OPAL_ERR_UNREACH;
    }
    unsigned char *slot = ring_reserve_locked(ep, header_size + payload_size);
    if (OPAL_LIKELY(NULL != slot)) {
        size_t length = header_size;
        memcpy(slot, header, header_size);
        if (payload_size > 0) {
            struct iovec iov = {.iov_base = slot + header_size, .iov_len = payload_size};
            uint32_t iov_count = 1;
            size_t packed = payload_size;
            (void) opal_convertor_pack(convertor, &iov, &iov_count, &packed);
            length += packed;
        }
        ring_commit_unlock(ep, tag, length);
        return OPAL_SUCCESS;
    }
    /* Hand ob1 a descriptor to pack into: its btl_send queues behind the
     * pending ones.  (With NULL, ob1 parks the whole request on its own retry
     * list, and a persistent request restarted meanwhile loses a message.) */
    if (NULL != descriptor)
        *descriptor = mca_btl_tca_alloc(btl, ep, order, header_size + payload_size,
                                        flags | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
    return OPAL_ERR_OUT_OF_RESOURCE;
}

/* One of the btl's own messages (get, atomics): msg, then data (may be
 * empty), straight into the ring like sendi where it has room and nothing is
 * queued, else a descriptor queued in order.  Never fails once a descriptor
 * was had. */
int mca_btl_tca_send_control(struct mca_btl_base_endpoint_t *ep, mca_btl_base_tag_t tag,
                             const void *msg, size_t len, const void *data, size_t data_len) {
    const size_t total = len + data_len;
    unsigned char *slot = ring_reserve_locked(ep, total);
    if (OPAL_LIKELY(NULL != slot)) {
        memcpy(slot, msg, len);
        if (data_len > 0)
            memcpy(slot + len, data, data_len);
        ring_commit_unlock(ep, tag, total);
        return OPAL_SUCCESS;
    }
    mca_btl_base_descriptor_t *des = mca_btl_tca_alloc(
        &mca_btl_tca_module.super, ep, MCA_BTL_NO_ORDER, total, MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (OPAL_UNLIKELY(NULL == des))
        return OPAL_ERR_OUT_OF_RESOURCE;
    unsigned char *p = des->des_segments[0].seg_addr.pval;
    memcpy(p, msg, len);
    if (data_len > 0)
        memcpy(p + len, data, data_len);
    (void) mca_btl_tca_send(&mca_btl_tca_module.super, ep, des, tag);
    return OPAL_SUCCESS;
}
