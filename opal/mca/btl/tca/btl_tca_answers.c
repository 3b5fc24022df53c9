/*
 * btl_tca_answers.c - the btl's own request and answer messages over the
 * rings, shared by the emulated get, the small put and the atomics: a
 * request the pending table holds by cookie, the answer GET_DONE {cookie,
 * status}, and the checks on an answer that came back.  Their own file so
 * that get.c and put.c each need only this one, not each other.
 */
#include "btl_tca_endpoint.h"
#include "btl_tca_frag.h"

#include <string.h>

#include "mca_glue/tca_mca_check.h"

#define HELP_FILE "help-btl-tca.txt"

void mca_btl_tca_send_done(struct mca_btl_base_endpoint_t *ep, uint64_t cookie, int status) {
    const tca_btl_get_done_t done = {.cookie = cookie, .status = status};
    if (OPAL_UNLIKELY(OPAL_SUCCESS != mca_btl_tca_send_control(ep, MCA_BTL_TCA_TAG_GET_DONE, &done,
                                                               sizeof(done), NULL, 0)))
        mca_btl_tca_fatal(ep, "answering a get (no descriptor)", tcaErrorNoMemory);
}

/* Owner: the put for a peer finished (the data is visible there) or failed. */
void mca_btl_tca_get_served(struct mca_btl_base_endpoint_t *ep, uint64_t cookie, int status) {
    OPAL_THREAD_ADD_FETCH64(&mca_btl_tca_component.gets_served, 1);
    mca_btl_tca_send_done(ep, cookie, status);
}

int mca_btl_tca_send_request(struct mca_btl_base_endpoint_t *ep, mca_btl_base_tag_t tag,
                             const void *req, size_t len, uint64_t cookie, const void *data,
                             size_t data_len) {
    const int rc = mca_btl_tca_send_control(ep, tag, req, len, data, data_len);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc))
        tca_btl_get_cancel(mca_btl_tca_component.gets, cookie);
    return rc;
}

bool mca_btl_tca_take_answer(int how, struct mca_btl_base_endpoint_t *ep, const char *topic,
                             uint64_t cookie, const unsigned char *owner,
                             mca_btl_tca_rdma_done_t *d) {
    if (OPAL_UNLIKELY(TCA_BTL_GET_OK != how))
        tca_show_help(HELP_FILE, topic, ep->node, (unsigned long long) cookie);
    if (TCA_BTL_GET_UNKNOWN == how)
        return false;
    memcpy(d, owner, sizeof(*d));
    return true;
}
