/* common_tca_session.h - the TCA session of an MPI process, shared by btl tca
 * and coll tca (libmca_common_tca, one copy per process).  The first client
 * to join places the process in its host's sub-clusters (in the job's, on
 * the ucx device), starts the device
 * (tcaInitWithParams) and publishes the place in the modex under one key of
 * the session's own; the last to leave stops the device.  Neither component
 * needs the other: coll tca joins on its own when btl tca is not loaded.
 * Join before the modex fence of MPI_Init (a component's open or init). */
#ifndef MCA_COMMON_TCA_SESSION_H
#define MCA_COMMON_TCA_SESSION_H

#include "opal_config.h"

#include "opal/util/proc.h"
#include "session/session_core.h"

BEGIN_C_DECLS

/* OPAL_SUCCESS: joined, *place filled (leave once done); a line at
 * verbosity 5 on `output` (the client's framework stream) says whether this
 * client started the session or joined it.  OPAL_ERR_NOT_AVAILABLE:
 * nobody else in this process's sub-cluster, nothing started (do not leave).
 * OPAL_ERR_BAD_PARAM: the session already runs with another sub-cluster size
 * (why says how).  OPAL_ERROR: the device did not start (*device_result, a
 * tcaResult; tcaGetErrorDetail may say more).  requested_size < 0: any. */
TCA_SESSION_API int mca_common_tca_session_join(const char *client, int output, int requested_size,
                                                tca_session_place_t *place, int *device_result,
                                                char *why, size_t why_len);
TCA_SESSION_API void mca_common_tca_session_leave(void);
/* 1 when the session's device connects hosts (TCA_DEVICE=ucx): its nodes are
 * the job's ranks, not this host's local ranks, peers on other hosts are in
 * the sub-cluster, and a client publishes its modex to every host. */
TCA_SESSION_API int mca_common_tca_session_across_hosts(void);
/* 1 when Open MPI yields when idle here (mpi_yield_when_idle; by default
 * where the node is oversubscribed). */
TCA_SESSION_API int mca_common_tca_session_yields_when_idle(void);
/* How long a progress thread lets the application be away before it takes
 * work over: 1000 us, or 5000 where Open MPI yields when idle (an
 * application thread back from a yield may have been off its core for a
 * whole time slice).  coll tca's thread engine (coll_tca_thread_takeover_us
 * -1) and the ucx device's progress thread (unless TCA_TAKEOVER_US is set)
 * wait this long. */
TCA_SESSION_API int mca_common_tca_session_takeover_us(void);
/* The place a process of this job published (OPAL_ERR_NOT_FOUND: none). */
TCA_SESSION_API int mca_common_tca_session_lookup(const opal_process_name_t *proc,
                                                  tca_session_place_t *place);

END_C_DECLS

#endif
