/* btl_tca_modex.h - what a btl tca process publishes through the modex;
 * also read by coll tca to learn which ranks share its sub-cluster. */
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
    int32_t reserved;
    tcaHandle area; /* its area: control words and one eager ring per sender */
} mca_btl_tca_modex_t;
#define MCA_BTL_TCA_MODEX_VERSION 1

#endif
