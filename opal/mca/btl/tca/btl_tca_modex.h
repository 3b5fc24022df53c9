/* btl_tca_modex.h - what a btl tca process publishes through the modex
 * (coll tca reads the TCA session's own modex, not this). */
#ifndef MCA_BTL_TCA_MODEX_H
#define MCA_BTL_TCA_MODEX_H

#include <stdint.h>

#include "tca.h"

typedef struct mca_btl_tca_modex_t {
    uint32_t version;
    int32_t subcluster; /* which sub-cluster (device job) this process belongs to */
    int32_t node;       /* its node id in that sub-cluster */
    int32_t num_nodes;
    uint32_t ring_slots;
    uint32_t slot_payload;
    int32_t has_progress_thread;
    int32_t
        polls_by_traffic; /* it reads its traffic line: senders mark their ring there after each message */
    tcaHandle area; /* its area: control words and one eager ring per sender */
} mca_btl_tca_modex_t;
#define MCA_BTL_TCA_MODEX_VERSION 2

#endif
