/* progress_engine.h - the one progress thread of a process's TCA session.
 *
 * btl tca (its asynchronous progress) and coll tca (its software broadcast
 * engine) are clients: each registers a poll callback, and one thread calls
 * them all.  It exists while any client does and sleeps on the device
 * interrupt between passes, so a raise (a doorbell, a counter update, a
 * kick) wakes one thread, not one per component - or, while no client
 * listens for the interrupt (the application drives progress itself), naps
 * through the raises: each would preempt a busy application thread.  The loopback DMA engine
 * is not a client: it is the device's own engine (PEACH2's is hardware) and
 * sleeps on an event word of its own.  C API over progress_engine.cpp. */
#ifndef TCA_SESSION_PROGRESS_ENGINE_H
#define TCA_SESSION_PROGRESS_ENGINE_H

#include <stdint.h>

#include "session/session_core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tca_progress_hooks {
    /* One pass; the events it handled.  > 0: the engine passes again at once. */
    int (*poll)(void *ctx);
    /* After a pass that handled nothing: the longest the engine may then
     * sleep on the device interrupt before passing again (microseconds; a
     * raise ends it sooner; <= 0: do not sleep). */
    int64_t (*idle_us)(void *ctx);
    void *ctx;
    /* After such a pass, asked after idle_us: does the client wait for the
     * device interrupt (non-zero), or only for its time and
     * tca_progress_wake (0)?  NULL: it listens. */
    int (*listens)(void *ctx);
} tca_progress_hooks_t;

typedef struct tca_progress_client tca_progress_client_t;

/* Registers a client and starts the thread for the first; the device must be
 * up (tcaInit) until the client leaves.  NULL: out of memory, or the process
 * is exiting. */
TCA_SESSION_API tca_progress_client_t *tca_progress_join(const tca_progress_hooks_t *hooks);
/* Unregisters; on return no pass of it runs (called from inside its own poll,
 * it takes effect after that pass).  The last client's leave stops the thread. */
TCA_SESSION_API void tca_progress_leave(tca_progress_client_t *client);
/* Ends the current sleep or nap of the thread (a nap: a futex of its own; a
 * sleep: raises this node's interrupt). */
TCA_SESSION_API void tca_progress_wake(void);
/* Progress threads this process runs now: 0 or 1 (for tests and reports). */
TCA_SESSION_API int tca_progress_threads(void);
/* Clients registered now. */
TCA_SESSION_API int tca_progress_clients(void);

#ifdef __cplusplus
}
#endif

#endif
