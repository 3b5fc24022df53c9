/*
 * btl_tca_fatal.c - the one way btl tca gives up on a transfer: the help
 * text, then Open MPI's error callback (ob1 aborts the job).  Its own file so
 * that the data path (send, put, get, atomics) needs nothing of the component.
 */
#include "btl_tca.h"
#include "btl_tca_endpoint.h"

#include <stdio.h>

#include "mca_glue/tca_mca_check.h"

#define HELP_FILE "help-btl-tca.txt"

void mca_btl_tca_fatal(struct mca_btl_base_endpoint_t *endpoint, const char *what, tcaResult r) {
    char msg[256];
    snprintf(msg, sizeof(msg), "btl tca: %s failed: %s", what, tcaGetErrorString(r));
    tca_show_help(HELP_FILE, "fatal", what, tcaGetErrorString(r));
    if (NULL != mca_btl_tca_module.error_cb)
        mca_btl_tca_module.error_cb(&mca_btl_tca_module.super, MCA_BTL_ERROR_FLAGS_FATAL,
                                    endpoint ? endpoint->proc : NULL, msg);
}
