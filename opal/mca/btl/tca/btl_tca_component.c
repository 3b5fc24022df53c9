/*
 * btl_tca_component.c - the component: MCA parameters, device start-up,
 * the modex, and progress (the only place that calls ob1's receive upcalls,
 * unless the progress thread made the library thread-aware).
 */
#include "btl_tca.h"
#include "btl_tca_endpoint.h"
#include "btl_tca_frag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opal/mca/pmix/pmix.h"
#include "opal/runtime/opal_params.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"
#include "common_tca_session.h"
#include "tca_cuda_abi.h"
#include "tca_error_text.h"
#include "tca_mca_check.h"
#if OPAL_CUDA_SUPPORT
#include "opal/mca/common/cuda/common_cuda.h"
#endif

#define HELP_FILE "help-btl-tca.txt"

static int tca_component_register(void);
static int tca_component_open(void);
static int tca_component_close(void);
/* What ob1 may do with btl_get.  The GET_REQ message must fit a ring slot
 * (eager limits of a few hundred bytes leave no room: no get then). */
static void set_get_flags(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m) {
    int mode = c->get_emulation;
    m->super.btl_flags &= ~(uint32_t) MCA_BTL_FLAGS_GET;
#if OPAL_CUDA_SUPPORT
    m->super.btl_flags &= ~(uint32_t) MCA_BTL_FLAGS_CUDA_GET;
#endif
    if (MCA_BTL_TCA_GET_OFF != mode && mca_btl_tca_get_request_bytes() > c->slot_payload) {
        opal_output_verbose(1, opal_btl_base_framework.framework_output,
                            "btl:tca: eager slots of %u bytes cannot hold a get request (%zu bytes): no get",
                            (unsigned) c->slot_payload, mca_btl_tca_get_request_bytes());
        mode = MCA_BTL_TCA_GET_OFF;
    }
    if (MCA_BTL_TCA_GET_ALL == mode) m->super.btl_flags |= MCA_BTL_FLAGS_GET;
#if OPAL_CUDA_SUPPORT
    /* ob1 turns CUDA_GET on per peer when we announce it (tca_register_error,
     * MCA_BTL_ERROR_FLAGS_ADD_CUDA_IPC), as smcuda does after its handshake. */
    if (MCA_BTL_TCA_GET_OFF != mode) m->super.btl_flags |= MCA_BTL_FLAGS_CUDA_GET;
#endif
    c->get_emulation = mode;
}

static mca_btl_base_module_t **tca_component_init(int *num_btls, bool enable_progress_threads,
                                                  bool enable_mpi_threads);
static int tca_component_progress(void);

mca_btl_tca_component_t mca_btl_tca_component = {
    .super = {
        .btl_version = {
            MCA_BTL_DEFAULT_VERSION("tca"),
            .mca_open_component = tca_component_open,
            .mca_close_component = tca_component_close,
            .mca_register_component_params = tca_component_register,
        },
        .btl_data = {.param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT},
        .btl_init = tca_component_init,
        .btl_progress = tca_component_progress,
    },
};

static mca_base_var_enum_value_t thread_modes[] = {
    {MCA_BTL_TCA_THREAD_OFF, "off"},
    {MCA_BTL_TCA_THREAD_ON, "on"},
    {MCA_BTL_TCA_THREAD_AUTO, "auto"},
    {0, NULL},
};

static mca_base_var_enum_value_t get_modes[] = {
    {MCA_BTL_TCA_GET_OFF, "off"},
    {MCA_BTL_TCA_GET_GPU, "gpu"},
    {MCA_BTL_TCA_GET_ALL, "all"},
    {0, NULL},
};

static int register_int(const char *name, const char *help, int level, int *storage) {
    return mca_base_component_var_register(&mca_btl_tca_component.super.btl_version, name, help,
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, level, MCA_BASE_VAR_SCOPE_READONLY,
                                           storage);
}

static int tca_component_register(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    mca_base_var_enum_t *mode_enum = NULL;

    tca_mca_help_dirs(HELP_FILE, "opal/mca/btl/tca");
    /* Before anything touches mca_btl_base_module_t, whose layout depends on
     * the Open MPI's CUDA support: registering fails, so the framework
     * unloads the component. */
    if (!tca_cuda_abi_check(HELP_FILE, "btl tca")) return OPAL_ERR_NOT_AVAILABLE;
    c->subcluster_size = 0;
    register_int("subcluster_size",
                 "Processes per TCA sub-cluster on this host (0: all of them). The loopback device joins the "
                 "processes of one host; a size below that splits them into sub-clusters of consecutive local "
                 "ranks, which reach each other over tca and everyone else over the next BTL in the list "
                 "(e.g. --mca btl tca,self,tcp), like HA-PACS/TCA's sub-clusters inside an InfiniBand system.",
                 OPAL_INFO_LVL_4, &c->subcluster_size);

    c->ring_slots = 0;
    (void) mca_base_component_var_register(&c->super.btl_version, "ring_slots",
                                           "Eager ring slots per (sender, receiver) pair in the receiver's internal "
                                           "memory; each slot holds one message of up to the largest of "
                                           "btl_tca_eager_limit, btl_tca_rndv_eager_limit and btl_tca_max_send_size. "
                                           "0 (default): 64, halved (down to 2) until the rings of all peers fit in "
                                           "the device's internal memory (TCA_INTERNAL_SIZE). Else a power of two, "
                                           "2..4096. Must be the same on every process.",
                                           MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_ALL_EQ, &c->ring_slots);

    c->progress_thread = MCA_BTL_TCA_THREAD_AUTO;
    (void) mca_base_var_enum_create("btl_tca_progress_thread_modes", thread_modes, &mode_enum);
    (void) mca_base_component_var_register(
        &c->super.btl_version, "progress_thread",
        "Asynchronous progress thread: 'off' (progress only inside MPI calls), 'on' (a thread progresses "
        "messages while the application computes; it makes Open MPI thread-aware, like btl_tcp_progress_thread), "
        "'auto' (on only for MPI_THREAD_MULTIPLE, where the library is thread-aware anyway). The thread sleeps "
        "while the application itself calls MPI and on the device interrupt when idle; it never spins.",
        MCA_BASE_VAR_TYPE_INT, mode_enum, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &c->progress_thread);
    OBJ_RELEASE(mode_enum);

    c->thread_check_us = 200;
    register_int("progress_thread_check_us",
                 "Progress thread: microseconds between its looks at whether the application still calls MPI "
                 "(it takes over progress only after a whole interval without an MPI call); the shortest interval.",
                 OPAL_INFO_LVL_6, &c->thread_check_us);
    c->thread_check_max_us = 1000;
    register_int("progress_thread_check_max_us",
                 "Progress thread: while the application keeps calling MPI the interval doubles up to this many "
                 "microseconds, so a latency-bound rank is not interrupted; it drops back once the thread had work.",
                 OPAL_INFO_LVL_6, &c->thread_check_max_us);
    c->thread_sleep_us = 100000;
    register_int("progress_thread_sleep_us",
                 "Progress thread: longest sleep on the device interrupt when there is nothing to do (a safety "
                 "net; peers raise the interrupt after each message while it sleeps).",
                 OPAL_INFO_LVL_6, &c->thread_sleep_us);

    c->put_dma_min = 0;
    (void) mca_base_component_var_register(&c->super.btl_version, "put_dma_min",
                                           "Puts of at least this many bytes run on the DMA engine and complete "
                                           "asynchronously (the sender may compute meanwhile); smaller ones are "
                                           "PIO writes that complete at once. 0 (default): no DMA puts - on the "
                                           "loopback device the engine thread competes with the ranks for cores "
                                           "and a direct write is about twice as fast; 1: every put uses DMA.",
                                           MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_READONLY, &c->put_dma_min);
    c->dma_channels = 1;
    register_int("dma_channels",
                 "DMA channels btl tca acquires from the device for DMA puts (1-4), as the first DMA puts "
                 "need them. Channels held by coll tca's offloaded broadcasts or by the application are not "
                 "taken; while none is free, DMA-sized puts are PIO writes.",
                 OPAL_INFO_LVL_6, &c->dma_channels);
    c->poll_batch = 32;
    register_int("poll_batch", "Messages taken from one peer's ring per progress pass (fairness between peers).",
                 OPAL_INFO_LVL_6, &c->poll_batch);
    c->poll_all_max_peers = 4;
    register_int("poll_all_max_peers",
                 "With at most this many peers in the sub-cluster (0..63), progress looks at every peer's ring "
                 "each pass. With more, each sender also stores its message count into its word of the "
                 "receiver's traffic line (64 words) after each message, and progress reads that line and "
                 "polls only the rings whose count changed (the line read instead of one ring header per "
                 "peer, for one more store per message). 0: always by marks; 63: never.",
                 OPAL_INFO_LVL_6, &c->poll_all_max_peers);

    c->get_emulation = MCA_BTL_TCA_GET_GPU;
    (void) mca_base_var_enum_create("btl_tca_get_emulation_modes", get_modes, &mode_enum);
    (void) mca_base_component_var_register(
        &c->super.btl_version, "get_emulation",
        "RDMA get on the put-only device: the requester sends a put request to the data owner, whose side "
        "runs the put (DMA for GPU memory: CUDA IPC on the loopback, GPUDirect on PEACH2) and answers once the "
        "data is visible. 'gpu' (default): only for ob1's zero-copy protocol of GPU buffers (CUDA_GET, in a "
        "CUDA-aware Open MPI; no effect in others); 'all': host buffers too (ob1's RGET protocol replaces its "
        "PUT rendezvous for contiguous messages); 'off': no get (GPU buffers are copied through the rings). "
        "Must be the same on every process.",
        MCA_BASE_VAR_TYPE_INT, mode_enum, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->get_emulation);
    OBJ_RELEASE(mode_enum);

    /* Module defaults, then the common BTL parameters (btl_tca_eager_limit, ...).
     * btl_put must be set before mca_btl_base_param_register or it strips PUT. */
    mca_btl_tca_module_t *m = &mca_btl_tca_module;
    m->super.btl_exclusivity = MCA_BTL_EXCLUSIVITY_DEFAULT;
    /* 16 KiB: a copy through the ring beats the 3-message PUT rendezvous up to
     * there (measured: 4 KiB one-way 1.0 us eager vs 4.6 us rendezvous). */
    m->super.btl_eager_limit = 16 * 1024;
    m->super.btl_rndv_eager_limit = 16 * 1024;
    m->super.btl_max_send_size = 16 * 1024;
    m->super.btl_rdma_pipeline_send_length = 64 * 1024;
    m->super.btl_rdma_pipeline_frag_size = 4 * 1024 * 1024;
    m->super.btl_min_rdma_pipeline_size = 0;
    m->super.btl_latency = 1;
    m->super.btl_bandwidth = 20000; /* Mb/s */
    /* GET here only so that the base registers btl_tca_get_limit and
     * btl_tca_get_alignment (it registers them for a module with GET, and an
     * unregistered value would be ignored without a word); set_get_flags
     * decides at init whether ob1 sees GET. */
    m->super.btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_PUT | MCA_BTL_FLAGS_GET;
    m->super.btl_registration_handle_size = sizeof(mca_btl_base_registration_handle_t);
    m->super.btl_put = mca_btl_tca_put;
    /* The device cannot read remote memory: get is a put request (btl_tca_get.c);
     * init advertises it as btl_tca_get_emulation says. */
    m->super.btl_get = mca_btl_tca_get;
    return mca_btl_base_param_register(&c->super.btl_version, &m->super);
}

static int tca_component_open(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    OBJ_CONSTRUCT(&c->frags, opal_free_list_t);
    c->device_up = 0;
    c->thread = NULL;
    c->progress_lock = 0;
    memset(c->endpoints, 0, sizeof(c->endpoints));
    c->dma_puts = NULL;
    c->gets = NULL;
    c->gets_served = 0;
#if OPAL_CUDA_SUPPORT
    c->cuda_initialized = 0;
#endif
    return OPAL_SUCCESS;
}

void mca_btl_tca_fatal(struct mca_btl_base_endpoint_t *endpoint, const char *what, tcaResult r) {
    char msg[256];
    snprintf(msg, sizeof(msg), "btl tca: %s failed: %s", what, tcaGetErrorString(r));
    tca_show_help(HELP_FILE, "fatal", what, tcaGetErrorString(r));
    if (NULL != mca_btl_tca_module.error_cb)
        mca_btl_tca_module.error_cb(&mca_btl_tca_module.super, MCA_BTL_ERROR_FLAGS_FATAL,
                                    endpoint ? endpoint->proc : NULL, msg);
}

/* Joins the process's TCA session (common_tca_session.h): its place in the
 * host's sub-clusters and the device, shared with coll tca.  OPAL_ERR_NOT_AVAILABLE:
 * the last, partial sub-cluster of a host may hold one process - nobody to reach. */
static int start_device(mca_btl_tca_component_t *c) {
    tca_session_place_t place;
    int device_result = tcaSuccess;
    char why[768];
    const int rc = mca_common_tca_session_join("btl tca", opal_btl_base_framework.framework_output, c->subcluster_size,
                                               &place, &device_result, why, sizeof(why));
    if (OPAL_ERR_NOT_AVAILABLE == rc) return rc;
    if (OPAL_ERR_BAD_PARAM == rc) {
        tca_show_help(HELP_FILE, "session-conflict", why);
        return OPAL_ERROR;
    }
    if (OPAL_SUCCESS != rc) {
        tca_show_help(HELP_FILE, "device-failed", tca_error_text(device_result, why, sizeof(why)));
        return OPAL_ERROR;
    }
    c->device_up = 1;
    c->subcluster = place.subcluster;
    c->node = place.node;
    c->num_nodes = place.num_nodes;
    c->poll_by_traffic = c->num_nodes - 1 > c->poll_all_max_peers;
    c->pending_peers = 0;
    tcaResult r;

    /* auto: the largest of 64, 32, ... 2 slots whose rings fit */
    const bool auto_slots = 0 == c->ring_slots;
    if (auto_slots) c->ring_slots = 64;
    for (;;) {
        c->area_bytes = tca_btl_area_bytes(c->num_nodes, c->ring_slots, c->slot_payload);
        r = tcaMalloc(&c->area, c->area_bytes, tcaMemoryInternal);
        if (tcaSuccess == r || !auto_slots || c->ring_slots <= 2) break;
        c->ring_slots /= 2;
    }
    if (tcaSuccess != r) {
        char why[768];
        tca_show_help(HELP_FILE, "ring-alloc-failed", c->area_bytes, tca_error_text(r, why, sizeof(why)));
        return OPAL_ERROR;
    }
    memset(c->area, 0, c->area_bytes);
    c->poller = tca_btl_poller_new(c->area, c->num_nodes, c->poll_by_traffic, (uint32_t) c->poll_batch);
    if (NULL == c->poller) {
        tca_show_help(HELP_FILE, "ring-alloc-failed", c->area_bytes, "no memory for the ring poller");
        return OPAL_ERROR;
    }
    r = tcaCreateHandle(&c->area_handle, c->area, c->area_bytes, tcaMemoryInternal);
    if (tcaSuccess != r) {
        tca_show_help(HELP_FILE, "register-failed", tcaGetErrorString(r));
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

static void stop_device(mca_btl_tca_component_t *c) {
    if (!c->device_up) return;
    if (NULL != c->poller) tca_btl_poller_free(c->poller);
    c->poller = NULL;
    if (NULL != c->area) (void) tcaFree(c->area, tcaMemoryInternal);
    c->area = NULL;
    mca_common_tca_session_leave();
    c->device_up = 0;
}

static int publish_modex(mca_btl_tca_component_t *c) {
    mca_btl_tca_modex_t modex;
    int rc;
    memset(&modex, 0, sizeof(modex));
    modex.version = MCA_BTL_TCA_MODEX_VERSION;
    modex.subcluster = c->subcluster;
    modex.node = c->node;
    modex.num_nodes = c->num_nodes;
    modex.ring_slots = c->ring_slots;
    modex.slot_payload = c->slot_payload;
    modex.has_progress_thread = NULL != c->thread || c->progress_thread == MCA_BTL_TCA_THREAD_ON;
    modex.polls_by_traffic = c->poll_by_traffic;
    modex.area = c->area_handle;
    OPAL_MODEX_SEND(rc, OPAL_PMIX_LOCAL, &c->super.btl_version, &modex, sizeof(modex));
    return rc;
}

static int thread_poll(void *ctx) {
    (void) ctx;
    if (opal_atomic_swap_32(&mca_btl_tca_component.progress_lock, 1)) return 0;
#if OPAL_CUDA_SUPPORT
    mca_btl_tca_cuda_bind_thread(); /* upcalls may unpack into GPU buffers */
#endif
    const int n = mca_btl_tca_poll();
    opal_atomic_wmb();
    mca_btl_tca_component.progress_lock = 0;
    return n;
}

static void thread_announce_sleep(void *ctx, int sleeping) {
    (void) ctx;
    for (int n = 0; n < mca_btl_tca_component.num_nodes; ++n) {
        mca_btl_base_endpoint_t *ep = mca_btl_tca_component.endpoints[n];
        opal_atomic_rmb();
        if (NULL != ep) tca_btl_peer_announce_sleep(ep->peer, sleeping);
    }
}

/* Eager payloads: ob1 needs room for its 56-byte header union; a ring slot
 * holds at most 16 MiB. */
#define TCA_MIN_EAGER 128
#define TCA_MAX_EAGER ((UINT64_C(1) << 24) - 64)

/* btl_tca_put_alignment, btl_tca_get_alignment: 0 or a power of two up to 64K. */
static bool check_alignment(const char *f, const char *name, size_t align) {
    if (!tca_mca_check_size(f, name, align, 0, 65536, "0 or a power of two up to 64K")) return false;
    if (0 == (align & (align - 1))) return true;
    char shown[32];
    snprintf(shown, sizeof(shown), "%zu", align);
    tca_mca_show_invalid(f, name, shown, "not a power of two", "0 or a power of two up to 64K");
    return false;
}

/* Every MCA value checked after Open MPI read it (it wraps "-1" to SIZE_MAX
 * and reads "abc" as 0 without a word): an unusable one is reported with its
 * name, value and range, and btl tca is not used.  All are reported, not only
 * the first. */
static bool params_valid(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m) {
    const char *f = HELP_FILE;
    const mca_btl_base_module_t *b = &m->super;
    bool ok = true;
    ok = tca_mca_check_int(f, "btl_tca_subcluster_size", c->subcluster_size, 0, TCA_MAX_NODES,
                           "0 (all processes of a host) or 2..64") && ok;
    if (1 == c->subcluster_size) {
        tca_show_help(f, "subcluster-of-one");
        ok = false;
    }
    const char *slots_allowed = "0 (auto) or a power of two, 2..4096";
    ok = tca_mca_check_size(f, "btl_tca_ring_slots", c->ring_slots, 0, 4096, slots_allowed) && ok;
    if (1 == c->ring_slots) {
        tca_mca_show_invalid(f, "btl_tca_ring_slots", "1", "a ring needs at least 2 slots", slots_allowed);
        ok = false;
    } else if (c->ring_slots <= 4096 && 0 != (c->ring_slots & (c->ring_slots - 1))) {
        char shown[32];
        snprintf(shown, sizeof(shown), "%u", c->ring_slots);
        tca_mca_show_invalid(f, "btl_tca_ring_slots", shown, "not a power of two (a ring index is a mask)",
                             slots_allowed);
        ok = false;
    }
    static const char *const modes[] = {"off", "on", "auto"}; /* MCA_BTL_TCA_THREAD_* order */
    ok = tca_mca_check_enum(f, "btl_tca_progress_thread", modes, 3, "off, on or auto") && ok;
    ok = tca_mca_check_int(f, "btl_tca_progress_thread_check_us", c->thread_check_us, 10, 1000000,
                           "10..1000000 microseconds") && ok;
    ok = tca_mca_check_int(f, "btl_tca_progress_thread_check_max_us", c->thread_check_max_us, 10, 1000000,
                           "10..1000000 microseconds") && ok;
    ok = tca_mca_check_int(f, "btl_tca_progress_thread_sleep_us", c->thread_sleep_us, 100, 60000000,
                           "100..60000000 microseconds (shorter sleeps would make the thread spin)") && ok;
    ok = tca_mca_check_size(f, "btl_tca_put_dma_min", c->put_dma_min, 0, TCA_MCA_MAX_BYTES,
                            "0 (no DMA puts) .. 1T bytes (k, M, G suffixes allowed)") && ok;
    ok = tca_mca_check_int(f, "btl_tca_dma_channels", c->dma_channels, 1, TCA_NUM_DMA_CHANNELS, "1..4") && ok;
    ok = tca_mca_check_int(f, "btl_tca_poll_batch", c->poll_batch, 1, 65536, "1..65536") && ok;
    ok = tca_mca_check_int(f, "btl_tca_poll_all_max_peers", c->poll_all_max_peers, 0, TCA_MAX_NODES - 1,
                           "0..63 peers") && ok;
    static const char *const get_names[] = {"off", "gpu", "all"}; /* MCA_BTL_TCA_GET_* order */
    ok = tca_mca_check_enum(f, "btl_tca_get_emulation", get_names, 3, "off, gpu or all") && ok;
    /* the common BTL parameters, registered by mca_btl_base_param_register */
    ok = tca_mca_check_size(f, "btl_tca_exclusivity", b->btl_exclusivity, 0, UINT32_MAX, "0..4294967295") && ok;
    if (!(b->btl_flags & MCA_BTL_FLAGS_SEND)) {
        tca_mca_show_invalid(f, "btl_tca_flags", "(without send)", "btl tca moves every message with send",
                             "flags that include 'send' (default: send,put,get; get as btl_tca_get_emulation says)");
        ok = false;
    }
    ok = tca_mca_check_size(f, "btl_tca_eager_limit", b->btl_eager_limit, TCA_MIN_EAGER, TCA_MAX_EAGER,
                            "128..16777152 bytes (k, M suffixes allowed)") && ok;
    ok = tca_mca_check_size(f, "btl_tca_rndv_eager_limit", b->btl_rndv_eager_limit, TCA_MIN_EAGER, TCA_MAX_EAGER,
                            "128..16777152 bytes (k, M suffixes allowed)") && ok;
    ok = tca_mca_check_size(f, "btl_tca_max_send_size", b->btl_max_send_size, TCA_MIN_EAGER, TCA_MAX_EAGER,
                            "128..16777152 bytes (k, M suffixes allowed)") && ok;
    ok = tca_mca_check_size(f, "btl_tca_rdma_pipeline_send_length", b->btl_rdma_pipeline_send_length, 0,
                            TCA_MCA_MAX_BYTES, "0..1T bytes") && ok;
    ok = tca_mca_check_size(f, "btl_tca_rdma_pipeline_frag_size", b->btl_rdma_pipeline_frag_size, 1024,
                            TCA_MCA_MAX_BYTES, "1K..1T bytes") && ok;
    ok = tca_mca_check_size_adjusted(f, "btl_tca_min_rdma_pipeline_size", b->btl_min_rdma_pipeline_size, 0,
                            TCA_MCA_MAX_BYTES, "0..1T bytes") && ok;
    ok = tca_mca_check_size_adjusted(f, "btl_tca_put_limit", b->btl_put_limit, 1, SIZE_MAX,
                                     "a byte count (0: no limit)") && ok;
    ok = check_alignment(f, "btl_tca_put_alignment", b->btl_put_alignment) && ok;
    /* ob1 splits an RGET at get_limit and aligns it at get_alignment, as for put */
    ok = tca_mca_check_size_adjusted(f, "btl_tca_get_limit", b->btl_get_limit, 1, SIZE_MAX,
                                     "a byte count (0: no limit)") && ok;
    ok = check_alignment(f, "btl_tca_get_alignment", b->btl_get_alignment) && ok;
    ok = tca_mca_check_size(f, "btl_tca_latency", b->btl_latency, 0, UINT32_MAX, "0..4294967295") && ok;
    ok = tca_mca_check_size(f, "btl_tca_bandwidth", b->btl_bandwidth, 1, UINT32_MAX, "1..4294967295 (Mb/s)") && ok;
    return ok;
}

void mca_btl_tca_component_stop_thread(void);

/* A program may leave without MPI_Finalize (return from main, exit()).  Then
 * exit() runs libtca's static teardown, which unmaps the node's segments,
 * while the progress thread may still poll the rings in them or sleep on the
 * device: SIGSEGV.  This handler stops the thread first: it is registered
 * after libtca was loaded (libtca registered its teardown then), and exit()
 * runs handlers in reverse order of registration.  (It belongs to this DSO:
 * when Open MPI unloads the component after MPI_Finalize it runs then, with
 * the thread already stopped.) */
static void tca_btl_at_exit(void) { mca_btl_tca_component_stop_thread(); }

/* Which path a message takes at which size, and how progress polls (verbose). */
static void report_path(const mca_btl_tca_component_t *c, const mca_btl_tca_module_t *m) {
    tcaBackendAttr backend;
    char line[1024];
    if (tcaSuccess != tcaQueryBackend(&backend)) backend.put_mechanism[0] = '\0';
    const tca_btl_path_t path = {.eager_limit = m->super.btl_eager_limit,
                                 .put_dma_min = c->put_dma_min,
                                 .get_for_host = MCA_BTL_TCA_GET_ALL == c->get_emulation,
                                 .poll_by_traffic = c->poll_by_traffic,
                                 .peers = c->num_nodes - 1,
                                 .poll_all_max_peers = c->poll_all_max_peers,
                                 .put_mechanism = backend.put_mechanism};
    (void) tca_btl_describe_path(&path, line, sizeof(line));
    opal_output_verbose(5, opal_btl_base_framework.framework_output, "btl:tca: node %d: %s", c->node, line);
}

static mca_btl_base_module_t **tca_component_init(int *num_btls, bool enable_progress_threads,
                                                  bool enable_mpi_threads) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    mca_btl_tca_module_t *m = &mca_btl_tca_module;
    mca_btl_base_module_t **btls;
    (void) enable_progress_threads;
    *num_btls = 0;

#if OPAL_CUDA_SUPPORT
    /* The convertor recognises GPU buffers (and packs them with CUDA copies)
     * only once Open MPI's CUDA support is initialised; smcuda does this from
     * its init too.  Without libcuda (opal_warn_on_missing_libcuda=0 on GPU-less
     * machines) it leaves CUDA off and every buffer is host memory. */
    if (!c->cuda_initialized) {
        (void) mca_common_cuda_stage_one_init();
        c->cuda_initialized = 1;
    }
#endif
    if (0 == opal_process_info.num_local_peers) return NULL; /* nobody to reach */
    if (!params_valid(c, m)) return NULL;

    size_t max_payload = m->super.btl_eager_limit;
    if (m->super.btl_rndv_eager_limit > max_payload) max_payload = m->super.btl_rndv_eager_limit;
    if (m->super.btl_max_send_size > max_payload) max_payload = m->super.btl_max_send_size;
    c->slot_payload = tca_btl_slot_payload((uint32_t) max_payload);

    set_get_flags(c, m);

    if (OPAL_SUCCESS != start_device(c)) {
        stop_device(c);
        return NULL;
    }
    if (OPAL_SUCCESS != opal_free_list_init(&c->frags, mca_btl_tca_frag_object_size() + c->slot_payload, 64,
                                            OBJ_CLASS(mca_btl_tca_frag_t), 0, 0, 64, -1, 64, NULL, 0, NULL,
                                            NULL, NULL) ||
        OPAL_SUCCESS != mca_btl_tca_module_init(m)) {
        stop_device(c);
        return NULL;
    }
    if (OPAL_SUCCESS != mca_btl_tca_get_init() || OPAL_SUCCESS != mca_btl_tca_put_init()) {
        mca_btl_tca_put_fini();
        mca_btl_tca_get_fini();
        stop_device(c);
        return NULL;
    }

    const bool want_thread = c->progress_thread == MCA_BTL_TCA_THREAD_ON ||
                             (c->progress_thread == MCA_BTL_TCA_THREAD_AUTO && enable_mpi_threads);
    if (want_thread) {
        /* The thread calls ob1's upcalls: ob1 must lock (the btl tcp precedent). */
        opal_set_using_threads(true);
        m->super.btl_flags |= MCA_BTL_FLAGS_BTL_PROGRESS_THREAD_ENABLED;
        c->thread = tca_btl_progress_thread_start(thread_poll, thread_announce_sleep, NULL, c->thread_check_us,
                                                  c->thread_check_max_us, c->thread_sleep_us);
        if (NULL == c->thread) tca_show_help(HELP_FILE, "thread-failed");
        static int at_exit_registered = 0;
        if (NULL != c->thread && !at_exit_registered) at_exit_registered = 0 == atexit(tca_btl_at_exit);
    }

    if (OPAL_SUCCESS != publish_modex(c)) {
        tca_show_help(HELP_FILE, "modex-failed");
        if (c->thread) tca_btl_progress_thread_stop(c->thread);
        c->thread = NULL;
        mca_btl_tca_put_fini();
        mca_btl_tca_get_fini();
        stop_device(c);
        return NULL;
    }

    report_path(c, m);
    btls = (mca_btl_base_module_t **) malloc(sizeof(*btls));
    if (NULL == btls) return NULL;
    btls[0] = &m->super;
    c->module = m;
    *num_btls = 1;
    return btls;
}

/* One arrived message to its upcall (the core releases the slot after). */
static void deliver(void *ctx, int node, uint8_t tag, const void *payload, uint32_t size) {
    mca_btl_base_endpoint_t *ep = mca_btl_tca_component.endpoints[node]; /* published before the poller saw it */
    const mca_btl_active_message_callback_t *reg = mca_btl_base_active_message_trigger + tag;
    mca_btl_base_segment_t segment = {.seg_addr.pval = (void *) payload, .seg_len = size};
    mca_btl_base_descriptor_t desc = {.des_segments = &segment, .des_segment_count = 1};
    (void) ctx;
    if (OPAL_UNLIKELY(MCA_BTL_TCA_TAG_GET_REQ == tag || MCA_BTL_TCA_TAG_GET_DONE == tag)) {
        mca_btl_tca_get_control(ep, tag, payload, size);
    } else if (OPAL_LIKELY(NULL != reg->cbfunc)) {
        reg->cbfunc(&mca_btl_tca_module.super, tag, &desc, reg->cbdata);
    } else {
        tca_show_help(HELP_FILE, "dropped-message", tag, node);
    }
}

/* A peer that died without finishing leaves its rings silent: a receive
 * from it would wait for ever wherever the launcher keeps the job alive
 * (mpirun --enable-recovery, launchers that do not watch their processes).
 * libtca's own detection, not the launcher's: at most every 250 ms (checked
 * every 1024th pass, so the clock stays off the hot path), each peer's
 * state; a dead one is fatal, reported once. */
static void check_peers(mca_btl_tca_component_t *c) {
    if (OPAL_LIKELY(++c->passes_since_check < 1024) || c->peer_death_reported) return;
    c->passes_since_check = 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    const uint64_t ns = (uint64_t) now.tv_sec * 1000000000ull + (uint64_t) now.tv_nsec;
    if (ns < c->next_check_ns) return;
    c->next_check_ns = ns + 250000000ull;
    for (int n = 0; n < c->num_nodes; ++n) {
        mca_btl_base_endpoint_t *ep = c->endpoints[n];
        int state = TCA_NODE_ALIVE;
        if (NULL == ep || tcaSuccess != tcaNodeState(n, &state) || TCA_NODE_DEAD != state) continue;
        c->peer_death_reported = 1;
        char msg[128];
        snprintf(msg, sizeof(msg), "btl tca: the process of node %d died without finishing", n);
        tca_show_help(HELP_FILE, "peer-died", n, opal_process_info.my_local_rank - c->node + n);
        if (NULL != mca_btl_tca_module.error_cb)
            mca_btl_tca_module.error_cb(&mca_btl_tca_module.super, MCA_BTL_ERROR_FLAGS_FATAL, ep->proc, msg);
        return;
    }
}

int mca_btl_tca_poll(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    int count = 0;
    check_peers(c);
    /* Serve what the device wants of this process's CPU (the bounce mailbox
     * peers write into when single copy is refused, chains waiting for a
     * kick): the engine thread would have to preempt this spinning thread
     * first, on the same core when ranks are bound. */
    tcaProgress(NULL);
    count += tca_btl_poller_poll(c->poller, deliver, NULL);
    for (uint64_t pending = (uint64_t) c->pending_peers; pending; pending &= pending - 1) {
        mca_btl_base_endpoint_t *ep = c->endpoints[__builtin_ctzll(pending)];
        if (NULL != ep) count += mca_btl_tca_send_pending(ep);
    }
    if (tca_btl_dma_puts_busy(c->dma_puts)) count += mca_btl_tca_put_progress();
    return count;
}

static int tca_component_progress(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    int count;
    if (NULL != c->thread) tca_btl_progress_thread_note_app(c->thread);
    /* One poller at a time: upcalls may re-enter the BTL, never progress. */
    if (opal_using_threads()) {
        if (opal_atomic_swap_32(&c->progress_lock, 1)) return 0;
    } else if (c->progress_lock) {
        return 0;
    } else {
        c->progress_lock = 1;
    }
#if OPAL_CUDA_SUPPORT
    if (NULL != c->thread) mca_btl_tca_cuda_note_app_context();
#endif
    count = mca_btl_tca_poll();
    opal_atomic_wmb();
    c->progress_lock = 0;
    return count;
}

/* Called from the module's finalize: first the thread, then (after the
 * registration cache is gone) everything else.  The thread also from
 * tca_btl_at_exit. */
void mca_btl_tca_component_shutdown(void);
void mca_btl_tca_component_stop_thread(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    if (NULL != c->thread) tca_btl_progress_thread_stop(c->thread);
    c->thread = NULL;
}

void mca_btl_tca_component_shutdown(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    /* The MPI cases check this line: the get path really ran. */
    opal_output_verbose(5, opal_btl_base_framework.framework_output,
                        "btl:tca: node %d served %lld emulated gets, %d of its own unanswered", c->node,
                        (long long) c->gets_served, NULL == c->gets ? 0 : tca_btl_gets_pending(c->gets));
    mca_btl_tca_put_fini();
    mca_btl_tca_get_fini();
    for (int n = 0; n < TCA_MAX_NODES; ++n) {
        if (NULL != c->endpoints[n]) OBJ_RELEASE(c->endpoints[n]);
        c->endpoints[n] = NULL;
    }
    stop_device(c);
}

static int tca_component_close(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
#if OPAL_CUDA_SUPPORT
    /* reference counted in common_cuda: smcuda's fini may run too */
    if (c->cuda_initialized) mca_common_cuda_fini();
    c->cuda_initialized = 0;
#endif
    OBJ_DESTRUCT(&c->frags);
    return OPAL_SUCCESS;
}
