/*
 * btl_tca_progress.c - progress: polling the rings and handing each message
 * to its upcall (the only place that calls ob1's receive callbacks), serving
 * peers' gets, puts and atomics, finding dead peers and, where it runs, the
 * progress thread that does the same while the application computes.
 */
#include "btl_tca.h"
#include "btl_tca_endpoint.h"

#include <stdio.h>
#include <stdlib.h>

#include "opal/util/proc.h"
#include "session/liveness.h"
#include "mca_glue/tca_mca_check.h"

#define HELP_FILE "help-btl-tca.txt"

/* Whom the thread asked for doorbells (engine thread only).  A peer whose
 * endpoint was made after the thread went to sleep was never asked: its
 * messages would not wake it, and the thread slept through them until its
 * longest sleep ended (btl_tca_progress_thread_sleep_us, 100 ms: at start-up
 * every rendezvous of the first ~100 ms completed only when the application
 * waited - no overlap at all).  add_procs wakes the thread, and its next
 * pass asks the new peers before it polls. */
static int thread_sleeping;
/* Gets, small puts or atomics of ours unanswered after the thread's last
 * poll (engine thread only): it polls on for them rather than sleeping. */
static int thread_awaiting;
static uint64_t thread_told;

static void tell_new_peers(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    bool told = false;
    for (int n = 0; n < c->num_nodes; ++n) {
        mca_btl_base_endpoint_t *ep = c->endpoints[n];
        opal_atomic_rmb();
        if (NULL == ep || (thread_told & (UINT64_C(1) << n)))
            continue;
        tca_btl_peer_announce_sleep(ep->peer, 1);
        thread_told |= UINT64_C(1) << n;
        told = true;
    }
    if (told) /* as announce_sleep's caller does: then poll, so no message is missed */
        opal_atomic_mb();
}

static int thread_poll(void *ctx) {
    (void) ctx;
    if (opal_atomic_swap_32(&mca_btl_tca_component.progress_lock, 1))
        return 0;
    if (thread_sleeping)
        tell_new_peers();
#if OPAL_CUDA_SUPPORT
    mca_btl_tca_cuda_bind_thread(); /* upcalls may unpack into GPU buffers */
#endif
    const int n = mca_btl_tca_poll();
    thread_awaiting = tca_btl_gets_pending(mca_btl_tca_component.gets) > 0 ||
                      tca_btl_atomics_pending(mca_btl_tca_component.atomics) > 0;
    opal_atomic_wmb();
    mca_btl_tca_component.progress_lock = 0;
    return n;
}

/* Answers due to our own requests, as the last pass saw them. */
static int thread_awaits_answers(void *ctx) {
    (void) ctx;
    return thread_awaiting;
}

static void thread_announce_sleep(void *ctx, int sleeping) {
    (void) ctx;
    thread_sleeping = sleeping;
    thread_told = 0;
    for (int n = 0; n < mca_btl_tca_component.num_nodes; ++n) {
        mca_btl_base_endpoint_t *ep = mca_btl_tca_component.endpoints[n];
        opal_atomic_rmb();
        if (NULL == ep)
            continue;
        tca_btl_peer_announce_sleep(ep->peer, sleeping);
        if (sleeping)
            thread_told |= UINT64_C(1) << n;
    }
}

/* A program may leave without MPI_Finalize (return from main, exit()).  Then
 * exit() runs libtca's static teardown, which unmaps the node's segments,
 * while the progress thread may still poll the rings in them or sleep on the
 * device: SIGSEGV.  This handler stops the thread first: it is registered
 * after libtca was loaded (libtca registered its teardown then), and exit()
 * runs handlers in reverse order of registration.  (It belongs to this DSO:
 * when Open MPI unloads the component after MPI_Finalize it runs then, with
 * the thread already stopped.) */
static void tca_btl_at_exit(void) {
    mca_btl_tca_component_stop_thread();
}

void mca_btl_tca_progress_thread_start(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m,
                                       bool enable_mpi_threads) {
    const bool want_thread = c->set.progress_thread == TCA_BTL_THREAD_ON ||
                             (c->set.progress_thread == TCA_BTL_THREAD_AUTO && enable_mpi_threads);
    if (want_thread) {
        /* The thread calls ob1's upcalls: ob1 must lock (the btl tcp precedent). */
        opal_set_using_threads(true);
        m->super.btl_flags |= MCA_BTL_FLAGS_BTL_PROGRESS_THREAD_ENABLED;
        c->thread = tca_btl_progress_thread_start(
            thread_poll, thread_announce_sleep, thread_awaits_answers, NULL, c->set.thread_check_us,
            c->set.thread_check_max_us, c->set.thread_sleep_us);
        if (NULL == c->thread)
            tca_show_help(HELP_FILE, "thread-failed");
        static int at_exit_registered = 0;
        if (NULL != c->thread && !at_exit_registered)
            at_exit_registered = 0 == atexit(tca_btl_at_exit);
    }
}

/* One arrived message to its upcall (the core releases the slot after). */
static void deliver(void *ctx, int node, uint8_t tag, const void *payload, uint32_t size) {
    mca_btl_base_endpoint_t *ep =
        mca_btl_tca_component.endpoints[node]; /* published before the poller saw it */
    const mca_btl_active_message_callback_t *reg = mca_btl_base_active_message_trigger + tag;
    mca_btl_base_segment_t segment = {.seg_addr.pval = (void *) payload, .seg_len = size};
    (void) ctx;
    if (OPAL_UNLIKELY(MCA_BTL_TCA_TAG_GET_REQ == tag || MCA_BTL_TCA_TAG_GET_DONE == tag ||
                      MCA_BTL_TCA_TAG_GET_DATA == tag || MCA_BTL_TCA_TAG_GET_SMALL == tag)) {
        mca_btl_tca_get_control(ep, tag, payload, size);
    } else if (OPAL_UNLIKELY(MCA_BTL_TCA_TAG_PUT_SMALL == tag)) {
        mca_btl_tca_put_control(ep, payload, size);
    } else if (OPAL_UNLIKELY(MCA_BTL_TCA_TAG_ATOMIC_REQ == tag ||
                             MCA_BTL_TCA_TAG_ATOMIC_DONE == tag)) {
        mca_btl_tca_atomic_control(ep, tag, payload, size);
    } else if (OPAL_UNLIKELY(MCA_BTL_TCA_TAG_NOTHING == tag)) {
        return;
    } else if (OPAL_LIKELY(NULL != reg->cbfunc)) {
        tca_btl_upcall(reg, &mca_btl_tca_module.super, ep, tag, &segment);
    } else {
        tca_show_help(HELP_FILE, "dropped-message", tag, node);
    }
}

/* A peer that died without finishing leaves its rings silent: a receive
 * from it would wait for ever wherever the launcher keeps the job alive.
 * The session's liveness sweep (session/liveness.h, shared with coll tca)
 * says which nodes died; asked every 1024th pass, so the clock stays off the
 * hot path.  A dead peer is fatal, reported once. */
static void check_peers(mca_btl_tca_component_t *c) {
    if (OPAL_LIKELY(++c->passes_since_check < 1024) || c->peer_death_reported)
        return;
    c->passes_since_check = 0;
    for (uint64_t dead = tca_session_dead_nodes(c->num_nodes); 0 != dead; dead &= dead - 1) {
        const int n = __builtin_ctzll(dead);
        mca_btl_base_endpoint_t *ep = c->endpoints[n];
        if (NULL == ep)
            continue;
        c->peer_death_reported = 1;
        char msg[128];
        snprintf(msg, sizeof(msg), "btl tca: the process of node %d died without finishing", n);
        tca_show_help(HELP_FILE, "peer-died", n, (int) ep->proc->proc_name.vpid);
        if (NULL != mca_btl_tca_module.error_cb)
            mca_btl_tca_module.error_cb(&mca_btl_tca_module.super, MCA_BTL_ERROR_FLAGS_FATAL,
                                        ep->proc, msg);
        return;
    }
}

/* Across hosts Open MPI adds a process of another host only when this one
 * first sends to it, so a peer that sends first is found by its first
 * message and added here, as btl tcp adds the sender of a connection.  Each
 * node is tried once: one that cannot be added stays with the next BTL. */
static void add_unknown_senders(mca_btl_tca_component_t *c) {
    uint64_t unknown = tca_btl_poller_unknown_senders(c->poller) & ~c->senders_tried;
    for (; 0 != unknown; unknown &= unknown - 1) {
        const int node = __builtin_ctzll(unknown);
        c->senders_tried |= UINT64_C(1) << node;
        opal_process_name_t name = OPAL_PROC_MY_NAME;
        name.vpid = (opal_vpid_t) ((int) OPAL_PROC_MY_NAME.vpid - c->node +
                                   node); /* nodes are consecutive ranks */
        opal_proc_t *proc = opal_proc_for_name(name);
        struct mca_btl_base_endpoint_t *ep = NULL;
        if (NULL != proc)
            (void) mca_btl_tca_add_procs(&mca_btl_tca_module.super, 1, &proc, &ep, NULL);
        opal_output_verbose(
            10, opal_btl_base_framework.framework_output,
            "btl:tca: node %d: first message from node %d, which MPI had not added yet: %s",
            c->node, node, NULL != ep ? "added" : "not reachable over tca");
    }
}

int mca_btl_tca_poll(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    int count = 0;
    check_peers(c);
    if (OPAL_UNLIKELY(c->across_hosts))
        add_unknown_senders(c);
    /* Serve what the device wants of this process's CPU (the bounce mailbox
     * peers write into when single copy is refused, chains waiting for a
     * kick): the engine thread would have to preempt this spinning thread
     * first, on the same core when ranks are bound. */
    tcaProgress(NULL);
    count += tca_btl_poller_poll(c->poller, deliver, NULL);
    for (uint64_t pending = (uint64_t) c->pending_peers; pending; pending &= pending - 1) {
        mca_btl_base_endpoint_t *ep = c->endpoints[__builtin_ctzll(pending)];
        if (NULL != ep)
            count += mca_btl_tca_send_pending(ep);
    }
    if (tca_btl_dma_puts_busy(c->dma_puts))
        count += mca_btl_tca_put_progress();
    return count;
}

int mca_btl_tca_component_progress(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    int count;
    if (NULL != c->thread)
        tca_btl_progress_thread_note_app(c->thread);
    /* One poller at a time: upcalls may re-enter the BTL, never progress. */
    if (opal_using_threads()) {
        if (opal_atomic_swap_32(&c->progress_lock, 1))
            return 0;
    } else if (c->progress_lock) {
        return 0;
    } else {
        c->progress_lock = 1;
    }
#if OPAL_CUDA_SUPPORT
    if (NULL != c->thread)
        mca_btl_tca_cuda_note_app_context();
#endif
    count = mca_btl_tca_poll();
    opal_atomic_wmb();
    c->progress_lock = 0;
    return count;
}

/* Called from the module's finalize: first the thread, then (after the
 * registration cache is gone) everything else.  The thread also from
 * tca_btl_at_exit. */
void mca_btl_tca_component_stop_thread(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    if (NULL != c->thread)
        tca_btl_progress_thread_stop(c->thread);
    c->thread = NULL;
}
