/* common_tca_session.c - see common_tca_session.h: the Open MPI side of the
 * session (launch facts, device start, modex, launcher cleanup); who shares
 * the node is session_core.cpp's. */
#include "common_tca_session.h"
#include "common_tca_settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "tca.h"
#include "mca_glue/tca_ompi_compat.h"

/* Published per process; a version bump makes older peers "not found". */
#define SESSION_KEY "tca.session.1"

/* A device whose nodes may sit on several hosts (the ucx device): the
 * session's nodes are the job's ranks on every host (its nodes are PMIx
 * ranks), not this host's local ranks, and what it publishes goes to every
 * host.  libtca says which device it would start, asked with placed
 * parameters as start_device passes them (an unset TCA_DEVICE then means the
 * loopback); a TCA_DEVICE that names none fails the start itself, by name. */
int mca_common_tca_session_across_hosts(void) {
    const tcaInitParams placed = {.job_key = NULL, .node_id = 0, .num_nodes = 1};
    char backend[32];
    int spans = 0;
    return tcaSuccess == tcaQueryBackendChoice(&placed, backend, sizeof(backend), &spans) && spans;
}

/* The job's size from the launcher (0: not known). */
static int job_size(void) {
    opal_process_name_t wildcard = OPAL_PROC_MY_NAME;
    wildcard.vpid = OPAL_VPID_WILDCARD;
    uint32_t size = 0, *psize = &size;
    int rc;
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, TCA_MODEX_JOB_SIZE, &wildcard, &psize, TCA_MODEX_UINT32);
    return OPAL_SUCCESS == rc ? (int) size : 0;
}

int mca_common_tca_session_yields_when_idle(void) {
    /* Read as the variable: set before the components start, where
     * opal_progress's own flag is set only at the end of MPI_Init. */
    const int index = mca_base_var_find("ompi", "mpi", NULL, "yield_when_idle");
    const bool *value = NULL;
    return index >= 0 && OPAL_SUCCESS == mca_base_var_get_value(index, &value, NULL, NULL) &&
           NULL != value && *value;
}

int mca_common_tca_session_takeover_us(void) {
    return mca_common_tca_session_yields_when_idle() ? 5000 : 1000;
}

static int start_device(const tca_session_place_t *place, void *ctx) {
    (void) ctx;
    char key[64];
    snprintf(key, sizeof(key), "ompi%u-sc%d", (unsigned) OPAL_PROC_MY_NAME.jobid,
             (int) place->subcluster);
    const tcaInitParams params = {
        .job_key = key, .node_id = place->node, .num_nodes = place->num_nodes};
    tcaResult r = tcaInitWithParams(&params);
    if (tcaSuccess != r)
        return r;

    /* Where Open MPI yields when idle (more ranks than cores) an application
     * thread is often off its core for more than the ucx device's 1 ms: its
     * progress thread then took the worker over and fought the application
     * threads for it (broadcasts across hosts slowed down).  Set
     * through libtca, never with setenv(): that raced the getenv() of Open
     * MPI's own threads (a segfault in PMIx's event thread).  A takeover_us
     * the user set wins; the loopback has no such thread (NotSupported). */
    char takeover_us[32] = "";
    if (tcaSuccess != tcaGetSetting("TCA_TAKEOVER_US", takeover_us, sizeof(takeover_us), NULL, 0) ||
        0 == strcasecmp(takeover_us, "auto"))
        (void) tcaSetProgressTakeover(mca_common_tca_session_takeover_us());

    /* An aborted job leaves no segment behind: the launcher removes it. */
    char path[256];
    if (tcaSuccess == tcaGetBackingPath(path, sizeof(path)) && '\0' != path[0])
        tca_ompi_register_cleanup(path);

    tca_session_place_t blob = *place;
    int rc;
    const int scope = mca_common_tca_session_across_hosts() ? TCA_MODEX_GLOBAL : TCA_MODEX_LOCAL;
    OPAL_MODEX_SEND_STRING(rc, scope, SESSION_KEY, &blob, sizeof(blob));
    if (OPAL_SUCCESS != rc) {
        (void) tcaFinalize();
        return tcaErrorSystem;
    }
    return tcaSuccess;
}

int mca_common_tca_session_join(const char *client, int output, int requested_size,
                                tca_session_place_t *place, int *device_result, char *why,
                                size_t why_len) {
    const bool across_hosts = mca_common_tca_session_across_hosts();
    const int rank =
        across_hosts ? (int) OPAL_PROC_MY_NAME.vpid : (int) opal_process_info.my_local_rank;
    const int size = across_hosts ? job_size() : (int) opal_process_info.num_local_peers + 1;
    if (size < 2)
        return OPAL_ERR_NOT_AVAILABLE;
    const int outcome = tca_session_core_join(requested_size, rank, size, start_device, NULL, place,
                                              device_result, why, why_len);
    switch (outcome) {
    case TCA_SESSION_STARTED:
    case TCA_SESSION_JOINED: {
        tcaBackendAttr backend;
        char takeover[192] = "";
        memset(&backend, 0, sizeof(backend));
        /* Only for the line: a backend query also asks the CUDA runtime. */
        if (opal_output_get_verbosity(output) >= 5 && tcaSuccess == tcaQueryBackend(&backend) &&
            backend.takeover_us >= 0) {
            snprintf(takeover, sizeof(takeover),
                     "; the %s device's progress thread takes over %d us after the last wait",
                     backend.backend, backend.takeover_us);
        }
        opal_output_verbose(5, output, "%s: %s the TCA session: node %d of %d in sub-cluster %d%s",
                            client, TCA_SESSION_STARTED == outcome ? "started" : "joined",
                            (int) place->node, (int) place->num_nodes, (int) place->subcluster,
                            takeover);
        mca_common_tca_settings_report(client, output);
        return OPAL_SUCCESS;
    }
    case TCA_SESSION_ALONE:
        return OPAL_ERR_NOT_AVAILABLE;
    case TCA_SESSION_CONFLICT:
        return OPAL_ERR_BAD_PARAM;
    default:
        return OPAL_ERROR;
    }
}

void mca_common_tca_session_leave(void) {
    if (tca_session_core_leave())
        (void) tcaFinalize();
}

int mca_common_tca_session_lookup(const opal_process_name_t *proc, tca_session_place_t *place) {
    tca_session_place_t *blob = NULL;
    size_t size = 0;
    int rc;
    OPAL_MODEX_RECV_STRING(rc, SESSION_KEY, proc, (void **) &blob, &size);
    if (OPAL_SUCCESS != rc || NULL == blob || size != sizeof(*blob)) {
        free(blob);
        return OPAL_ERR_NOT_FOUND;
    }
    *place = *blob;
    free(blob);
    return OPAL_SUCCESS;
}
