/* btl_tca_frag.h - send descriptors: a base descriptor plus room for one ring
 * slot's payload, from a free list.  prepare_src packs straight into a slot
 * of the peer's ring where it can (held: the room behind stays unused). */
#ifndef MCA_BTL_TCA_FRAG_H
#define MCA_BTL_TCA_FRAG_H

#include "btl_tca.h"
#include "btl_tca_endpoint.h"

typedef struct mca_btl_tca_frag_t {
    mca_btl_base_descriptor_t base;
    mca_btl_base_segment_t segment;
    struct mca_btl_base_endpoint_t *endpoint;
    mca_btl_base_tag_t tag; /* set when queued */
    unsigned char *data;    /* slot_payload bytes, right behind the object */
    bool held;              /* segment is the held slot `slot` of endpoint's ring */
    uint64_t slot;
} mca_btl_tca_frag_t;
OBJ_CLASS_DECLARATION(mca_btl_tca_frag_t);

static inline size_t mca_btl_tca_frag_object_size(void) {
    return (sizeof(mca_btl_tca_frag_t) + 63) & ~(size_t) 63;
}

mca_btl_base_descriptor_t *mca_btl_tca_alloc(struct mca_btl_base_module_t *btl,
                                             struct mca_btl_base_endpoint_t *endpoint,
                                             uint8_t order, size_t size, uint32_t flags);
int mca_btl_tca_free(struct mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des);
/* Publish a held slot's message (tag NOTHING: dropped) and ring the peer's
 * doorbell if it asks: messages sent behind it wait for it. */
void mca_btl_tca_frag_publish(mca_btl_tca_frag_t *frag, mca_btl_base_tag_t tag);
struct mca_btl_base_descriptor_t *mca_btl_tca_prepare_src(struct mca_btl_base_module_t *btl,
                                                          struct mca_btl_base_endpoint_t *endpoint,
                                                          struct opal_convertor_t *convertor,
                                                          uint8_t order, size_t reserve,
                                                          size_t *size, uint32_t flags);

/* Local completion of a send descriptor: callback if asked, free if ours. */
static inline void mca_btl_tca_frag_complete(mca_btl_tca_frag_t *frag, int always_callback) {
    const uint32_t flags = frag->base.des_flags;
    if ((always_callback || (flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK)) &&
        NULL != frag->base.des_cbfunc)
        frag->base.des_cbfunc(&mca_btl_tca_module.super, frag->endpoint, &frag->base, OPAL_SUCCESS);
    if (flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP)
        opal_free_list_return(&mca_btl_tca_component.frags, (opal_free_list_item_t *) frag);
}

#endif
