/*
 * btl_tca_cuda.c - the progress thread and CUDA contexts (CUDA-aware Open MPI
 * only; empty otherwise).
 *
 * Open MPI 4.1 copies GPU data with the CUDA driver API (cuMemcpy in the
 * convertor), which needs a current context in the calling thread.  The
 * application's threads have one (the runtime API makes its primary context
 * current, and Open MPI requires it before the first GPU buffer), but the
 * progress thread of btl tca, which runs ob1's receive upcalls and so unpacks
 * eager messages into GPU buffers, has none.  We note the context an
 * application thread has while it calls MPI progress and make it current in
 * the progress thread before that one delivers anything.
 */
#include "btl_tca.h"

#if OPAL_CUDA_SUPPORT
#include <dlfcn.h>

typedef int (*ctx_get_fn)(void **ctx);
typedef int (*ctx_set_fn)(void *ctx);

static ctx_get_fn ctx_get;
static ctx_set_fn ctx_set;
static int looked_up;       /* under the progress lock */
static unsigned note_calls; /* under the progress lock */
static void *app_ctx;       /* published with release, read with acquire */
static void *thread_ctx;    /* the progress thread's own */

/* libcuda is loaded (by Open MPI's common CUDA code) iff CUDA is in use:
 * never load it here. */
static int lookup(void) {
    if (!looked_up) {
        looked_up = 1;
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (NULL != lib) {
            ctx_get = (ctx_get_fn) dlsym(lib, "cuCtxGetCurrent");
            ctx_set = (ctx_set_fn) dlsym(lib, "cuCtxSetCurrent");
            if (NULL == ctx_get || NULL == ctx_set)
                ctx_get = NULL;
        }
    }
    return NULL != ctx_get;
}

void mca_btl_tca_cuda_note_app_context(void) {
    /* until known, every 64th progress call: a host-only application may never create one */
    if (NULL != __atomic_load_n(&app_ctx, __ATOMIC_RELAXED) || 0 != (note_calls++ & 63))
        return;
    void *ctx = NULL;
    if (lookup() && 0 == ctx_get(&ctx) && NULL != ctx)
        __atomic_store_n(&app_ctx, ctx, __ATOMIC_RELEASE);
}

void mca_btl_tca_cuda_bind_thread(void) {
    void *ctx = __atomic_load_n(&app_ctx, __ATOMIC_ACQUIRE);
    if (NULL == ctx || ctx == thread_ctx)
        return;
    if (0 == ctx_set(ctx))
        thread_ctx = ctx;
}
#endif /* OPAL_CUDA_SUPPORT */
