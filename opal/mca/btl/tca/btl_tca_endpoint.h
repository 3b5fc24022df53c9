/* btl_tca_endpoint.h - one peer of the sub-cluster, as ob1 sees it. */
#ifndef MCA_BTL_TCA_ENDPOINT_H
#define MCA_BTL_TCA_ENDPOINT_H

#include "btl_tca.h"

struct mca_btl_base_endpoint_t {
    opal_list_item_t super;
    struct opal_proc_t *proc;
    int node;             /* peer's node id in the sub-cluster */
    tca_btl_peer_t *peer; /* rings and credits (tca-btl core); NULL: our own process (RMA only) */
    opal_mutex_t lock;    /* the tx ring and the pending list */
    opal_list_t pending;  /* descriptors waiting for ring credits, in order */
    volatile int32_t pending_count;
    volatile int32_t rendezvous_in_flight;
    void *last_rendezvous;
    /* where the last rendezvous ob1 asked about started (a hint) */ /* lone rendezvous granted, not given back */
#if OPAL_CUDA_SUPPORT
    int cuda_get_announced; /* ob1 was told it may use its GPU get with this peer */
#endif
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;
typedef mca_btl_base_endpoint_t mca_btl_tca_endpoint_t;
OBJ_CLASS_DECLARATION(mca_btl_tca_endpoint_t);

#endif
