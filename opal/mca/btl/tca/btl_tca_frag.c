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

static mca_btl_tca_frag_t *frag_get(struct mca_btl_base_endpoint_t *endpoint, uint8_t order, uint32_t flags) {
    mca_btl_tca_frag_t *frag = (mca_btl_tca_frag_t *) opal_free_list_get(&mca_btl_tca_component.frags);
    if (OPAL_UNLIKELY(NULL == frag)) return NULL;
    frag->endpoint = endpoint;
    frag->base.des_flags = flags;
    frag->base.order = order;
    frag->base.des_cbfunc = NULL;
    frag->base.des_cbdata = NULL;
    frag->segment.seg_addr.pval = frag->data;
    return frag;
}

mca_btl_base_descriptor_t *mca_btl_tca_alloc(struct mca_btl_base_module_t *btl,
                                             struct mca_btl_base_endpoint_t *endpoint, uint8_t order, size_t size,
                                             uint32_t flags) {
    (void) btl;
    if (OPAL_UNLIKELY(size > mca_btl_tca_component.slot_payload)) return NULL;
    mca_btl_tca_frag_t *frag = frag_get(endpoint, order, flags);
    if (OPAL_UNLIKELY(NULL == frag)) return NULL;
    frag->segment.seg_len = size;
    return &frag->base;
}

int mca_btl_tca_free(struct mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des) {
    (void) btl;
    opal_free_list_return(&mca_btl_tca_component.frags, (opal_free_list_item_t *) des);
    return OPAL_SUCCESS;
}

/* Copy (pack) up to one slot of the user's data behind `reserve` header bytes. */
struct mca_btl_base_descriptor_t *mca_btl_tca_prepare_src(struct mca_btl_base_module_t *btl,
                                                          struct mca_btl_base_endpoint_t *endpoint,
                                                          struct opal_convertor_t *convertor, uint8_t order,
                                                          size_t reserve, size_t *size, uint32_t flags) {
    (void) btl;
    const size_t room = mca_btl_tca_component.slot_payload;
    if (OPAL_UNLIKELY(reserve > room)) return NULL;
    mca_btl_tca_frag_t *frag = frag_get(endpoint, order, flags);
    if (OPAL_UNLIKELY(NULL == frag)) return NULL;
    if (reserve + *size > room) *size = room - reserve;
    if (*size > 0) {
        struct iovec iov = {.iov_base = frag->data + reserve, .iov_len = *size};
        uint32_t iov_count = 1;
        if (OPAL_UNLIKELY(opal_convertor_pack(convertor, &iov, &iov_count, size) < 0)) {
            opal_free_list_return(&mca_btl_tca_component.frags, (opal_free_list_item_t *) frag);
            return NULL;
        }
    }
    frag->segment.seg_len = reserve + *size;
    return &frag->base;
}
