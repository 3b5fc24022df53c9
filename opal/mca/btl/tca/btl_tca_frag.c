/* btl_tca_frag.c - descriptor allocation and packing (prepare_src). */
#include "btl_tca_frag.h"

#include "opal/datatype/opal_convertor.h"

static void frag_construct(mca_btl_tca_frag_t *frag) {
    frag->data = (unsigned char *) frag + mca_btl_tca_frag_object_size();
    frag->segment.seg_addr.pval = frag->data;
    frag->segment.seg_len = 0;
    frag->base.des_segments = &frag->segment;
    frag->base.des_segment_count = 1;
    frag->endpoint = NULL;
}
OBJ_CLASS_INSTANCE(mca_btl_tca_frag_t, mca_btl_base_descriptor_t, frag_construct, NULL);

static mca_btl_tca_frag_t *frag_get(struct mca_btl_base_endpoint_t *endpoint, uint8_t order,
                                    uint32_t flags) {
    mca_btl_tca_frag_t *frag =
        (mca_btl_tca_frag_t *) opal_free_list_get(&mca_btl_tca_component.frags);
    if (OPAL_UNLIKELY(NULL == frag))
        return NULL;
    frag->endpoint = endpoint;
    frag->base.des_flags = flags;
    frag->base.order = order;
    frag->base.des_cbfunc = NULL;
    frag->base.des_cbdata = NULL;
    frag->segment.seg_addr.pval = frag->data;
    frag->held = false;
    return frag;
}

mca_btl_base_descriptor_t *mca_btl_tca_alloc(struct mca_btl_base_module_t *btl,
                                             struct mca_btl_base_endpoint_t *endpoint,
                                             uint8_t order, size_t size, uint32_t flags) {
    (void) btl;
    /* Our own process (RMA only) has no ring; nor does a too large message. */
    if (OPAL_UNLIKELY(size > mca_btl_tca_component.slot_payload ||
                      (NULL != endpoint && NULL == endpoint->peer)))
        return NULL;
    mca_btl_tca_frag_t *frag = frag_get(endpoint, order, flags);
    if (OPAL_UNLIKELY(NULL == frag))
        return NULL;
    frag->segment.seg_len = size;
    return &frag->base;
}

int mca_btl_tca_free(struct mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des) {
    (void) btl;
    mca_btl_tca_frag_t *frag = (mca_btl_tca_frag_t *) des;
    if (OPAL_UNLIKELY(frag->held))
        mca_btl_tca_frag_publish(frag, MCA_BTL_TCA_TAG_NOTHING);
    opal_free_list_return(&mca_btl_tca_component.frags, (opal_free_list_item_t *) des);
    return OPAL_SUCCESS;
}

/* Where ob1 packs: room in the peer's ring for `max` bytes, taken now and published
 * by btl_send (no copy of our own: vader's fragments live in shared memory
 * for the same reason), else our own buffer, which the queue copies into the
 * ring once there is room (the ring is full, messages wait in the queue
 * before this one, or the device writes the ring by PIO).
 *
 * Except for the later fragments of a message (ob1's scheduler asks without
 * PRIORITY) where the ring is full: NULL, and ob1 parks the request and
 * retries from its progress, packing once credits came back.  Queued, each
 * of those fragments was copied twice on the sender, which cost bidirectional
 * bandwidth from 64 KiB (docs/results.md).  A message's
 * first fragment (PRIORITY) still queues: ob1 restarts a message whose start
 * failed (PENDING_START), the retry that lost messages of restarted
 * persistent requests when sendi gave no descriptor (btl_tca_send.c). */
static unsigned char *pack_target(mca_btl_tca_frag_t *frag,
                                  struct mca_btl_base_endpoint_t *endpoint, uint32_t flags,
                                  size_t max) {
    OPAL_THREAD_LOCK(&endpoint->lock);
    unsigned char *slot =
        0 == endpoint->pending_count
            ? (unsigned char *) tca_btl_tx_hold(endpoint->peer, (uint32_t) max, &frag->slot)
            : NULL;
    OPAL_THREAD_UNLOCK(&endpoint->lock);
    if (NULL != slot) {
        frag->held = true;
        frag->segment.seg_addr.pval = slot;
        return slot;
    }
    if (!(flags & MCA_BTL_DES_FLAGS_PRIORITY) && tca_btl_tx_can_hold(endpoint->peer))
        return NULL;
    return frag->data;
}

/* Copy (pack) up to one slot of the user's data behind `reserve` header bytes. */
struct mca_btl_base_descriptor_t *mca_btl_tca_prepare_src(struct mca_btl_base_module_t *btl,
                                                          struct mca_btl_base_endpoint_t *endpoint,
                                                          struct opal_convertor_t *convertor,
                                                          uint8_t order, size_t reserve,
                                                          size_t *size, uint32_t flags) {
    const size_t room = mca_btl_tca_component.slot_payload;
    if (OPAL_UNLIKELY(reserve > room || NULL == endpoint->peer))
        return NULL;
    mca_btl_tca_frag_t *frag = frag_get(endpoint, order, flags);
    if (OPAL_UNLIKELY(NULL == frag))
        return NULL;
    if (reserve + *size > room)
        *size = room - reserve;
    unsigned char *target = pack_target(frag, endpoint, flags, reserve + *size);
    if (NULL == target) {
        opal_free_list_return(&mca_btl_tca_component.frags, (opal_free_list_item_t *) frag);
        return NULL;
    }
    if (*size > 0) {
        struct iovec iov = {.iov_base = target + reserve, .iov_len = *size};
        uint32_t iov_count = 1;
        if (OPAL_UNLIKELY(opal_convertor_pack(convertor, &iov, &iov_count, size) < 0)) {
            mca_btl_tca_free(btl, &frag->base);
            return NULL;
        }
    }
    frag->segment.seg_len = reserve + *size;
    return &frag->base;
}
