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

#include "opal/runtime/opal_params.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"
#include "common_tca_session.h"
#include "session/liveness.h"
#include "session/session_core.h"
#include "tca_cuda_abi.h"
#include "tca_error_text.h"
#include "tca_mca_check.h"

#define HELP_FILE "help-btl-tca.txt"

static int tca_component_register(void);
static int tca_component_open(void);
static int tca_component_close(void);
/* What ob1 may do with btl_get.  The GET_REQ message must fit a ring slot
 * (eager limits of a few hundred bytes leave no room: no get then). */
static void set_get_flags(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m) {
    int mode = c->set.get_emulation;
    m->super.btl_flags &= ~(uint32_t) MCA_BTL_FLAGS_GET;
#if OPAL_CUDA_SUPPORT
    m->super.btl_flags &= ~(uint32_t) TCA_BTL_FLAGS_GPU_GET;
#endif
    if (TCA_BTL_GET_OFF != mode && mca_btl_tca_get_request_bytes() > c->slot_payload) {
        opal_output_verbose(
            1, opal_btl_base_framework.framework_output,
            "btl:tca: eager slots of %u bytes cannot hold a get request (%zu bytes): no get",
            (unsigned) c->slot_payload, mca_btl_tca_get_request_bytes());
        mode = TCA_BTL_GET_OFF;
    }
    if (TCA_BTL_GET_ALL == mode)
        m->super.btl_flags |= MCA_BTL_FLAGS_GET;
#if OPAL_CUDA_SUPPORT
    /* ob1 turns its GPU get on per peer when we announce it (tca_register_error,
     * TCA_BTL_ERROR_FLAGS_ADD_GPU_IPC), as smcuda does after its handshake. */
    if (TCA_BTL_GET_OFF != mode)
        m->super.btl_flags |= TCA_BTL_FLAGS_GPU_GET;
#endif
    c->set.get_emulation = mode;
    /* An inline answer is GET_DONE and the data in one eager slot. */
    const size_t inline_room = c->slot_payload - sizeof(tca_btl_get_done_t);
    if (c->set.get_inline_max > inline_room)
        c->set.get_inline_max = inline_room;
    const size_t put_room = c->slot_payload - sizeof(tca_btl_get_small_t);
    if (c->set.put_inline_max > put_room)
        c->set.put_inline_max = put_room;
}

/* What osc rdma (MPI one-sided) relies on besides put and get. */
static void set_rma_flags(const mca_btl_tca_component_t *c, mca_btl_tca_module_t *m) {
    mca_btl_tca_atomic_set_flags(m, c->slot_payload);
#ifdef MCA_BTL_FLAGS_RDMA_REMOTE_COMPLETION
    /* A put calls back once its data is visible at the target (PIO returns
     * after it, a DMA put completes behind its data), as ob1's FIN and the
     * emulated get already rely on.  (Open MPI 5; 4.1's osc rdma assumes it.) */
    m->super.btl_flags |= MCA_BTL_FLAGS_RDMA_REMOTE_COMPLETION;
#endif
    /* The emulated get needs our registration of its destination beyond
     * get_inline_max (the owner puts into it); smaller ones come back in the
     * answer and are copied out here.  A put below put_dma_min is a PIO
     * write, which reads its source without one. */
    m->super.btl_get_local_registration_threshold = c->set.get_inline_max;
    m->super.btl_put_local_registration_threshold =
        0 == c->set.put_dma_min ? SIZE_MAX : (size_t) c->set.put_dma_min - 1;
}

static mca_btl_base_module_t **tca_component_init(int *num_btls, bool enable_progress_threads,
                                                  bool enable_mpi_threads);
static int tca_component_progress(void);

mca_btl_tca_component_t mca_btl_tca_component = {
    .super =
        {
            .btl_version =
                {
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

/* Enumerations keep a pointer to their values: they live as long as the
 * component, one row per parameter of the table (a bound checked below). */
#define TCA_MAX_PARAMS 32
#define TCA_MAX_ENUM_VALUES 4
static mca_base_var_enum_value_t enum_values[TCA_MAX_PARAMS][TCA_MAX_ENUM_VALUES];

/* An own parameter of the core's table (tca-btl/btl_params.h), registered
 * into c->set at its default.  i: its row in the table. */
static void register_param(mca_btl_tca_component_t *c, const tca_btl_param_t *p, size_t i) {
    static const mca_base_var_type_t types[] = {
        [TCA_BTL_PARAM_INT] = MCA_BASE_VAR_TYPE_INT,
        [TCA_BTL_PARAM_UNSIGNED] = MCA_BASE_VAR_TYPE_UNSIGNED_INT,
        [TCA_BTL_PARAM_SIZE] = MCA_BASE_VAR_TYPE_SIZE_T,
        [TCA_BTL_PARAM_UINT32] = MCA_BASE_VAR_TYPE_UINT32_T,
    };
    mca_base_var_enum_t *e = NULL;
    if (NULL != p->names && i < TCA_MAX_PARAMS && p->name_count < TCA_MAX_ENUM_VALUES) {
        mca_base_var_enum_value_t *v = enum_values[i];
        for (int k = 0; k < p->name_count; ++k)
            v[k] = (mca_base_var_enum_value_t){k, p->names[k]};
        v[p->name_count] = (mca_base_var_enum_value_t){0, NULL};
        char enum_name[96];
        snprintf(enum_name, sizeof(enum_name), "btl_tca_%s_values", p->name);
        (void) mca_base_var_enum_create(enum_name, v, &e);
    }
    (void) mca_base_component_var_register(
        &c->super.btl_version, p->name, p->help, types[p->type], e, 0, 0,
        (mca_base_var_info_lvl_t) (OPAL_INFO_LVL_1 + p->level - 1),
        (p->flags & TCA_BTL_PARAM_ALL_EQ) ? MCA_BASE_VAR_SCOPE_ALL_EQ : MCA_BASE_VAR_SCOPE_READONLY,
        (char *) &c->set + p->offset);
    if (NULL != e)
        OBJ_RELEASE(e);
}

/* The module field behind each common BTL parameter of the core's table. */
static const struct {
    const char *name;
    size_t offset;
    int is_u32; /* else size_t (the only two widths among them) */
} base_fields[] = {
#define BASE_FIELD(n)                                                                              \
    {                                                                                              \
#n, offsetof(mca_btl_base_module_t, btl_##n),                                              \
            4 == sizeof(((mca_btl_base_module_t *) 0)->btl_##n)                                    \
    }
    BASE_FIELD(exclusivity),
    BASE_FIELD(eager_limit),
    BASE_FIELD(rndv_eager_limit),
    BASE_FIELD(max_send_size),
    BASE_FIELD(rdma_pipeline_send_length),
    BASE_FIELD(rdma_pipeline_frag_size),
    BASE_FIELD(min_rdma_pipeline_size),
    BASE_FIELD(put_limit),
    BASE_FIELD(put_alignment),
    BASE_FIELD(get_limit),
    BASE_FIELD(get_alignment),
    BASE_FIELD(latency),
    BASE_FIELD(bandwidth),
#undef BASE_FIELD
};

static uint64_t base_value(const mca_btl_base_module_t *b, size_t i) {
    const char *field = (const char *) b + base_fields[i].offset;
    return base_fields[i].is_u32 ? *(const uint32_t *) field : *(const size_t *) field;
}

static int tca_component_register(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;

    tca_mca_help_dirs(HELP_FILE, "opal/mca/btl/tca");
    /* Before anything touches mca_btl_base_module_t, whose layout depends on
     * the Open MPI's CUDA support: registering fails, so the framework
     * unloads the component. */
    if (!tca_cuda_abi_check(HELP_FILE, "btl tca"))
        return OPAL_ERR_NOT_AVAILABLE;
    tca_btl_settings_defaults(&c->set);
    size_t count = 0;
    const tca_btl_param_t *params = tca_btl_params(&count);
    for (size_t i = 0; i < count; ++i)
        if (NULL != params[i].help)
            register_param(c, &params[i], i);
    /* Read-only, as Open MPI's own build facts in ompi_info: a core built
     * without -O is several times slower and nothing else would say so. */
    c->build_optimized = tca_btl_core_optimized() && tca_session_core_optimized();
    (void) mca_base_component_var_register(
        &c->super.btl_version, "build_optimized",
        "Whether btl tca's C++ core and the TCA device layer (libtca) were compiled with "
        "optimization (false: built without -O, the message path runs several times slower; "
        "rebuild with an -O level in CXXFLAGS)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_4,
        MCA_BASE_VAR_SCOPE_CONSTANT, &c->build_optimized);

    /* Module defaults, then the common BTL parameters (btl_tca_eager_limit, ...).
     * btl_put must be set before mca_btl_base_param_register or it strips PUT. */
    mca_btl_tca_module_t *m = &mca_btl_tca_module;
    m->super.btl_exclusivity = MCA_BTL_EXCLUSIVITY_DEFAULT;
    for (size_t i = 0; i < sizeof(base_fields) / sizeof(base_fields[0]); ++i) {
        const tca_btl_param_t *p = tca_btl_param_find(base_fields[i].name);
        if (NULL == p || (p->flags & TCA_BTL_PARAM_OMPI_DEFAULT))
            continue;
        char *field = (char *) &m->super + base_fields[i].offset;
        if (base_fields[i].is_u32)
            *(uint32_t *) field = (uint32_t) p->def;
        else
            *(size_t *) field = (size_t) p->def;
    }
    /* On the ucx device (TCA_DEVICE=ucx) a ring slot is one active message
     * whatever its size, and ob1's rendezvous costs three more messages over
     * the network: eager as large as one message stays one UCX fragment
     * (UCX_TCP_SEG_SIZE, 64 KiB with its headers: 60 KiB of payload, as coll
     * tca's ucx_segment_size).  A slot just over it went as UCX's own
     * rendezvous, a handshake per slot, each end waiting for the other to be
     * scheduled where ranks outnumber cores.  The ring slots halve where the
     * rings would not fit (btl_tca_ring_slots). */
    if (mca_common_tca_session_across_hosts())
        m->super.btl_eager_limit = m->super.btl_rndv_eager_limit = m->super.btl_max_send_size =
            60 * 1024;
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
    OBJ_CONSTRUCT(&c->endpoints_lock, opal_mutex_t);
    c->senders_tried = 0;
    c->device_up = 0;
    c->thread = NULL;
    c->progress_lock = 0;
    memset(c->endpoints, 0, sizeof(c->endpoints));
    c->self_endpoint = NULL;
    c->dma_puts = NULL;
    c->gets = NULL;
    c->gets_served = 0;
    c->gpu_initialized = 0;
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
    const int rc = mca_common_tca_session_join("btl tca", opal_btl_base_framework.framework_output,
                                               c->set.subcluster_size, &place, &device_result, why,
                                               sizeof(why));
    if (OPAL_ERR_NOT_AVAILABLE == rc)
        return rc;
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
    c->across_hosts = mca_common_tca_session_across_hosts();
    /* Across hosts a mark costs a put per message more: every ring is polled. */
    c->poll_by_traffic = !c->across_hosts && c->num_nodes - 1 > c->set.poll_all_max_peers;
    c->pending_peers = 0;
    tcaResult r;

    /* auto: the largest of 64, 32, ... 2 slots whose rings fit */
    const bool auto_slots = 0 == c->set.ring_slots;
    if (auto_slots)
        c->set.ring_slots = 64;
    for (;;) {
        c->area_bytes = tca_btl_area_bytes(c->num_nodes, c->set.ring_slots, c->slot_payload);
        r = tcaMalloc(&c->area, c->area_bytes, tcaMemoryInternal);
        if (tcaSuccess == r || !auto_slots || c->set.ring_slots <= 2)
            break;
        c->set.ring_slots /= 2;
    }
    if (tcaSuccess != r) {
        char why[768];
        tca_show_help(HELP_FILE, "ring-alloc-failed", c->area_bytes,
                      tca_error_text(r, why, sizeof(why)));
        return OPAL_ERROR;
    }
    memset(c->area, 0, c->area_bytes);
    c->poller =
        tca_btl_poller_new(c->area, c->num_nodes, c->poll_by_traffic, (uint32_t) c->set.poll_batch,
                           (uint32_t) c->set.ring_slots, c->slot_payload, c->across_hosts);
    if (NULL == c->poller) {
        tca_show_help(HELP_FILE, "ring-alloc-failed", c->area_bytes,
                      "no memory for the ring poller");
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
    if (!c->device_up)
        return;
    if (NULL != c->poller)
        tca_btl_poller_free(c->poller);
    c->poller = NULL;
    if (NULL != c->area)
        (void) tcaFree(c->area, tcaMemoryInternal);
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
    modex.ring_slots = c->set.ring_slots;
    modex.slot_payload = c->slot_payload;
    modex.has_progress_thread = NULL != c->thread || c->set.progress_thread == TCA_BTL_THREAD_ON;
    modex.polls_by_traffic = c->poll_by_traffic;
    modex.area = c->area_handle;
    OPAL_MODEX_SEND(rc, c->across_hosts ? TCA_MODEX_GLOBAL : TCA_MODEX_LOCAL, &c->super.btl_version,
                    &modex, sizeof(modex));
    return rc;
}

static int thread_poll(void *ctx) {
    (void) ctx;
    if (opal_atomic_swap_32(&mca_btl_tca_component.progress_lock, 1))
        return 0;
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
        if (NULL != ep)
            tca_btl_peer_announce_sleep(ep->peer, sleeping);
    }
}

/* One value of the core's table as Open MPI stored it: the text it came as
 * (from the environment, where mpirun --mca puts it too) is checked here,
 * the range and rules by the core.  0: help shown naming the parameter. */
static int param_valid(const tca_btl_param_t *p, uint64_t value) {
    char name[96], shown[32];
    snprintf(name, sizeof(name), "btl_tca_%s", p->name);
    if (NULL != p->names &&
        !tca_mca_check_enum(HELP_FILE, name, p->names, p->name_count, p->allowed))
        return 0;
    const int is_signed = TCA_BTL_PARAM_INT == p->type;
    const char *problem =
        NULL == p->names
            ? tca_mca_text_problem(name, is_signed, value, !(p->flags & TCA_BTL_PARAM_ADJUSTED))
            : NULL;
    if (NULL == problem)
        problem = tca_btl_param_problem(p, value);
    if (NULL == problem)
        return 1;
    if (is_signed)
        snprintf(shown, sizeof(shown), "%" PRId64, (int64_t) value);
    else
        snprintf(shown, sizeof(shown), "%" PRIu64, value);
    tca_mca_show_invalid(HELP_FILE, name, shown, problem, p->allowed);
    return 0;
}

/* Every MCA value checked after Open MPI read it (it wraps "-1" to SIZE_MAX
 * and reads "abc" as 0 without a word): an unusable one is reported with its
 * name, value and range, and btl tca is not used.  All are reported, not only
 * the first. */
static bool params_valid(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m) {
    size_t count = 0;
    const tca_btl_param_t *params = tca_btl_params(&count);
    bool ok = true;
    for (size_t i = 0; i < count; ++i)
        if (NULL != params[i].help)
            ok = param_valid(&params[i], tca_btl_setting_get(&c->set, &params[i])) && ok;
    for (size_t i = 0; i < sizeof(base_fields) / sizeof(base_fields[0]); ++i) {
        const tca_btl_param_t *p = tca_btl_param_find(base_fields[i].name);
        if (NULL != p)
            ok = param_valid(p, base_value(&m->super, i)) && ok;
    }
    if (!(m->super.btl_flags & MCA_BTL_FLAGS_SEND)) {
        tca_mca_show_invalid(
            HELP_FILE, "btl_tca_flags", "(without send)", "btl tca moves every message with send",
            "flags that include 'send' (default: send,put,get; get as btl_tca_get_emulation says)");
        ok = false;
    }
    return ok;
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

/* Which path a message takes at which size, and how progress polls (verbose). */
static void report_path(const mca_btl_tca_component_t *c, const mca_btl_tca_module_t *m) {
    tcaBackendAttr backend;
    char line[1024];
    if (tcaSuccess != tcaQueryBackend(&backend))
        backend.put_mechanism[0] = '\0';
    const tca_btl_path_t path = {.eager_limit = m->super.btl_eager_limit,
                                 .copy_max = SIZE_MAX == m->super.btl_min_rdma_pipeline_size
                                                 ? UINT64_MAX
                                                 : m->super.btl_min_rdma_pipeline_size,
                                 .put_dma_min = c->set.put_dma_min,
                                 .get_for_host = TCA_BTL_GET_ALL == c->set.get_emulation,
                                 .poll_by_traffic = c->poll_by_traffic,
                                 .peers = c->num_nodes - 1,
                                 .poll_all_max_peers = c->set.poll_all_max_peers,
                                 .put_mechanism = backend.put_mechanism};
    (void) tca_btl_describe_path(&path, line, sizeof(line));
    opal_output_verbose(5, opal_btl_base_framework.framework_output, "btl:tca: node %d: %s",
                        c->node, line);
}

/* Up to which size ob1 sends by copy through the rings (tca_register_mem
 * refuses registrations of messages up to btl_min_rdma_pipeline_size),
 * unless the user set it.  The copy protocol moves every byte twice, each
 * time from one core's cache to the other's, with both cores copying at
 * once; a single-copy put moves it once, on the sender's core alone, behind
 * a rendezvous of three messages.
 * - Where a put into another process is itself a copy by the target's CPU
 *   (the device measured single copy as dear, or it is off), and across
 *   hosts (the ucx device: ob1's put rendezvous is three messages and a put,
 *   each end of each waiting for the other to progress UCX, where the copy
 *   protocol streams ring slots behind one handshake): every size by copy.
 * - Elsewhere Open MPI's default stands (eager limit +
 *   btl_rdma_pipeline_send_length: 96 KiB).  Puts from the eager limit on
 *   (btl_tca_min_rdma_pipeline_size 16K) halve one-way latency at 33-96 KiB
 *   but cost streams of such messages a fifth of their bandwidth and a
 *   computing receiver its overlap at 64 KiB (docs/results.md, issue 50):
 *   not the default. */
static void choose_copy_limit(mca_btl_tca_module_t *m) {
    tcaBackendAttr backend;
    if (!tca_mca_var_is_default("opal", "btl", "tca", "min_rdma_pipeline_size"))
        return;
    if (mca_common_tca_session_across_hosts() ||
        (tcaSuccess == tcaQueryBackend(&backend) && backend.host_puts_by_target))
        m->super.btl_min_rdma_pipeline_size = SIZE_MAX;
}

static mca_btl_base_module_t **tca_component_init(int *num_btls, bool enable_progress_threads,
                                                  bool enable_mpi_threads) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    mca_btl_tca_module_t *m = &mca_btl_tca_module;
    mca_btl_base_module_t **btls;
    (void) enable_progress_threads;
    *num_btls = 0;

    /* GPU buffers in the convertor (Open MPI 4.1 starts its CUDA support on a
     * BTL's request; 5.0 in opal_init). */
    if (!c->gpu_initialized)
        c->gpu_initialized = tca_ompi_gpu_init();
    /* nobody to reach: alone on this host, and the sub-cluster does not span hosts */
    if (0 == opal_process_info.num_local_peers && !mca_common_tca_session_across_hosts())
        return NULL;
    if (!params_valid(c, m))
        return NULL;

    size_t max_payload = m->super.btl_eager_limit;
    if (m->super.btl_rndv_eager_limit > max_payload)
        max_payload = m->super.btl_rndv_eager_limit;
    if (m->super.btl_max_send_size > max_payload)
        max_payload = m->super.btl_max_send_size;
    c->slot_payload = tca_btl_slot_payload((uint32_t) max_payload);

    set_get_flags(c, m);
    set_rma_flags(c, m);

    if (OPAL_SUCCESS != start_device(c)) {
        stop_device(c);
        return NULL;
    }
    choose_copy_limit(m);
    /* On the ucx device a registration costs its owner a ucp_mem_map and a
     * peer writing into it a key fetch (a round trip), and dropping it a
     * revoke (another): keep them, as btl openib did, unless the user chose
     * (mpi_leave_pinned).  grdma reads this when the rcache is created
     * (module init, below).  4 MiB one-way over UCX tcp: 795-1225 us with
     * registrations dropped, 641-647 kept (pml ucx 525-578). */
    if (c->across_hosts && -1 == opal_leave_pinned)
        opal_leave_pinned = 1;
    if (OPAL_SUCCESS != opal_free_list_init(&c->frags,
                                            mca_btl_tca_frag_object_size() + c->slot_payload, 64,
                                            OBJ_CLASS(mca_btl_tca_frag_t), 0, 0, 64, -1, 64, NULL,
                                            0, NULL, NULL, NULL) ||
        OPAL_SUCCESS != mca_btl_tca_module_init(m)) {
        stop_device(c);
        return NULL;
    }
    if (OPAL_SUCCESS != mca_btl_tca_get_init() || OPAL_SUCCESS != mca_btl_tca_put_init() ||
        OPAL_SUCCESS != mca_btl_tca_atomic_init()) {
        mca_btl_tca_atomic_fini();
        mca_btl_tca_put_fini();
        mca_btl_tca_get_fini();
        stop_device(c);
        return NULL;
    }

    const bool want_thread = c->set.progress_thread == TCA_BTL_THREAD_ON ||
                             (c->set.progress_thread == TCA_BTL_THREAD_AUTO && enable_mpi_threads);
    if (want_thread) {
        /* The thread calls ob1's upcalls: ob1 must lock (the btl tcp precedent). */
        opal_set_using_threads(true);
        m->super.btl_flags |= MCA_BTL_FLAGS_BTL_PROGRESS_THREAD_ENABLED;
        c->thread = tca_btl_progress_thread_start(
            thread_poll, thread_announce_sleep, NULL, c->set.thread_check_us,
            c->set.thread_check_max_us, c->set.thread_sleep_us);
        if (NULL == c->thread)
            tca_show_help(HELP_FILE, "thread-failed");
        static int at_exit_registered = 0;
        if (NULL != c->thread && !at_exit_registered)
            at_exit_registered = 0 == atexit(tca_btl_at_exit);
    }

    if (OPAL_SUCCESS != publish_modex(c)) {
        tca_show_help(HELP_FILE, "modex-failed");
        if (c->thread)
            tca_btl_progress_thread_stop(c->thread);
        c->thread = NULL;
        mca_btl_tca_atomic_fini();
        mca_btl_tca_put_fini();
        mca_btl_tca_get_fini();
        stop_device(c);
        return NULL;
    }

    report_path(c, m);
    btls = (mca_btl_base_module_t **) malloc(sizeof(*btls));
    if (NULL == btls)
        return NULL;
    btls[0] = &m->super;
    c->module = m;
    *num_btls = 1;
    return btls;
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

static int tca_component_progress(void) {
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

void mca_btl_tca_component_shutdown(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    /* The MPI cases check this line: the get path really ran. */
    opal_output_verbose(5, opal_btl_base_framework.framework_output,
                        "btl:tca: node %d served %lld emulated gets, %d of its own unanswered",
                        c->node, (long long) c->gets_served,
                        NULL == c->gets ? 0 : tca_btl_gets_pending(c->gets));
    opal_output_verbose(5, opal_btl_base_framework.framework_output,
                        "btl:tca: node %d ran %lld atomics for peers, %d of its own unanswered",
                        c->node, (long long) c->atomics_served,
                        NULL == c->atomics ? 0 : tca_btl_atomics_pending(c->atomics));
    mca_btl_tca_atomic_fini();
    mca_btl_tca_put_fini();
    mca_btl_tca_get_fini();
    for (int n = 0; n < TCA_MAX_NODES; ++n) {
        if (NULL != c->endpoints[n])
            OBJ_RELEASE(c->endpoints[n]);
        c->endpoints[n] = NULL;
    }
    if (NULL != c->self_endpoint)
        OBJ_RELEASE(c->self_endpoint);
    c->self_endpoint = NULL;
    stop_device(c);
}

static int tca_component_close(void) {
    mca_btl_tca_component_t *c = &mca_btl_tca_component;
    if (c->gpu_initialized)
        tca_ompi_gpu_fini();
    c->gpu_initialized = 0;
    OBJ_DESTRUCT(&c->frags);
    OBJ_DESTRUCT(&c->endpoints_lock);
    return OPAL_SUCCESS;
}
