/* liveness.h - which nodes of this process's sub-cluster died without
 * finishing: one sweep of the device's node states per process, shared by
 * every client of the session (btl tca's receives, coll tca's broadcasts),
 * at most every TCA_LIVENESS_INTERVAL_MS.  A peer that dies leaves its
 * rings and counters silent; where the launcher keeps the job alive
 * (mpirun --enable-recovery, launchers that do not watch their processes)
 * a wait for it would never end.  C API over liveness.cpp. */
#ifndef TCA_SESSION_LIVENESS_H
#define TCA_SESSION_LIVENESS_H

#include <stdint.h>

#include "session/session_core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TCA_LIVENESS_INTERVAL_MS 250

/* Bit n: node n (< num_nodes, at most 64) died without finishing, as the
 * last sweep saw it (a dead node stays dead).  Sweeps when the last one is
 * older than the interval and no other thread sweeps now; otherwise returns
 * what is known at once.  Thread safe; the device must be up. */
TCA_SESSION_API uint64_t tca_session_dead_nodes(int num_nodes);
/* Forgets what was known: the session's device stopped (its last client left). */
TCA_SESSION_API void tca_session_liveness_reset(void);

#ifdef __cplusplus
}
#endif

#endif
