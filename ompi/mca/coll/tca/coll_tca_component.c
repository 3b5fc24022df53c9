/* coll_tca_component.c - the component and its MCA parameters. */
#include "coll_tca.h"

#include <stdlib.h>
#include <string.h>

#include "common_tca_session.h"
#include "common_tca_settings.h"
#include "session/session_core.h"
#include "ompi/mca/coll/base/base.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/show_help.h"
#include "mca_glue/tca_error_text.h"
#include "mca_glue/tca_mca_check.h"
#include "mca_glue/tca_cuda_abi.h"

static int tca_register(void);
static int tca_open(void);
static int tca_close(void);

mca_coll_tca_component_t mca_coll_tca_component = {
    .super =
        {
            .collm_version =
                {
                    TCA_COLL_BASE_VERSION,
                    .mca_component_name = "tca",
                    MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                          OMPI_RELEASE_VERSION),
                    .mca_open_component = tca_open,
                    .mca_close_component = tca_close,
                    .mca_register_component_params = tca_register,
                },
            .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
            .collm_init_query = mca_coll_tca_init_query,
            .collm_comm_query = mca_coll_tca_comm_query,
        },
};

static mca_base_var_enum_value_t engines[] = {
    {TCA_COLL_ENGINE_OFFLOAD, "offload"},
    {TCA_COLL_ENGINE_THREAD, "thread"},
    {0, NULL},
};

/* A size in bytes that every rank must share (the vote at bcast_init checks
 * the ones that shape the plan); its default is stored first. */
static void register_shared_size(const char *name, int level, size_t dflt, const char *help,
                                 size_t *storage) {
    *storage = dflt;
    (void) mca_base_component_var_register(&mca_coll_tca_component.super.collm_version, name, help,
                                           MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, level,
                                           MCA_BASE_VAR_SCOPE_ALL_EQ, storage);
}

static int tca_register(void) {
    mca_base_component_t *c = &mca_coll_tca_component.super.collm_version;
    mca_base_var_enum_t *e = NULL;
    tca_mca_help_dirs("help-coll-tca.txt", "ompi/mca/coll/tca");
    if (!tca_cuda_abi_check("help-coll-tca.txt", "coll tca"))
        return OMPI_ERR_NOT_AVAILABLE;
    /* The device's settings, shared with btl tca (coll_tca_device, ...). */
    mca_common_tca_settings_register();
    mca_coll_tca_component.build_optimized =
        tca_coll_core_optimized() && tca_session_core_optimized();
    (void) mca_base_component_var_register(
        c, "build_optimized",
        "Whether coll tca's C++ core and the TCA device layer (libtca) were compiled with "
        "optimization (false: built without -O, broadcasts run several times slower; rebuild "
        "with an -O level in CXXFLAGS)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_4,
        MCA_BASE_VAR_SCOPE_CONSTANT, &mca_coll_tca_component.build_optimized);
    mca_coll_tca_component.priority = 40;
    (void) mca_base_component_var_register(
        c, "priority",
        "Priority of coll tca; it provides only the persistent broadcast "
        "(MPIX_Bcast_init) and must beat libnbc (10) for that. -1 disables it.",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &mca_coll_tca_component.priority);
    mca_coll_tca_component.engine = TCA_COLL_ENGINE_OFFLOAD;
    (void) mca_base_var_enum_create("coll_tca_engines", engines, &e);
    (void) mca_base_component_var_register(
        c, "engine",
        "'offload': the whole pipelined tree is a triggered descriptor program "
        "prepared at init and MPI_Start only kicks it (a rank without a free "
        "DMA channel uses the thread engine); 'thread': the same steps done in "
        "software by a progress thread. Ranks may differ: both move data the "
        "same way. On the ucx device (TCA_DEVICE=ucx) the default is the thread "
        "engine, faster there; set 'offload' to run the triggered descriptors, "
        "which that device executes in software.",
        MCA_BASE_VAR_TYPE_INT, e, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_tca_component.engine);
    OBJ_RELEASE(e);
    register_shared_size("segment_size", OPAL_INFO_LVL_5, 128 * 1024,
                         "Pipeline segment of large broadcasts (bytes); grows if the program "
                         "would exceed the device's 255-descriptor chains.",
                         &mca_coll_tca_component.segment_bytes);
    /* Each GPU copy has a fixed cost of its own (a CUDA copy and a wait; on a
     * GPU shared by processes without MPS a switch between their contexts),
     * large enough that a broadcast of GPU buffers in few large segments
     * beat the host size many times over (docs/results.md). */
    register_shared_size("gpu_segment_size", OPAL_INFO_LVL_5, 4 * 1024 * 1024,
                         "Pipeline segment of broadcasts of GPU buffers (bytes; used on every "
                         "rank when any rank's buffer is GPU memory); grows like segment_size.",
                         &mca_coll_tca_component.gpu_segment_bytes);
    /* Each segment is one message on the ucx device; over UCX tcp one that
     * fits a fragment (UCX_TCP_SEG_SIZE, 64 KiB) with its headers goes whole,
     * a larger one in two, which took twice as long (docs/results.md). */
    register_shared_size("ucx_segment_size", OPAL_INFO_LVL_5, 60 * 1024,
                         "Pipeline segment of broadcasts of host buffers on the ucx device "
                         "(TCA_DEVICE=ucx, a job across hosts; segment_size elsewhere): one "
                         "message each, best just under UCX's fragment size (UCX_TCP_SEG_SIZE, "
                         "64 KiB, less headers); grows like segment_size.",
                         &mca_coll_tca_component.ucx_segment_bytes);
    register_shared_size("chain_threshold", OPAL_INFO_LVL_5, 256 * 1024,
                         "Messages of at least this many bytes use a pipelined chain along the "
                         "TCA ring, smaller ones a binomial tree laid over the ring.",
                         &mca_coll_tca_component.chain_threshold);
    register_shared_size(
        "staging_size", OPAL_INFO_LVL_5, 8 * 1024,
        "Broadcasts up to this many bytes are staged: every non-root keeps up to 48 "
        "landing slots (at most 2 MiB of them) in the device's internal memory (host "
        "memory when full), "
        "so a parent runs epochs ahead of a child instead of waiting for it to "
        "start each one. 0 disables staging.",
        &mca_coll_tca_component.staging_bytes);
    mca_coll_tca_component.stage_all = -1;
    (void) mca_base_component_var_register(
        c, "stage_all",
        "Stage host broadcasts of every size, large ones in pipelined segments: "
        "a parent writes into its children's landing slots and each child copies "
        "out with its own core while the parent writes the next segment. 1: "
        "always; 0: only up to coll_tca_staging_size; -1 (default): where the "
        "device measured a copy into another process as dearer than two copies "
        "(TCA_SINGLE_COPY=auto; tca_info says so). Where ranks differ, none "
        "stages. GPU buffers are staged only up to coll_tca_staging_size.",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL,
        &mca_coll_tca_component.stage_all);
    /* Where ranks outnumber cores, a progress thread that took over after
     * 1 ms spun on UCX's worker lock against application threads back from
     * a yield; after 5 ms it kept out of their way (docs/results.md; the
     * session sets the device's progress thread the same way). */
    mca_coll_tca_component.thread_takeover_us = -1;
    (void) mca_base_component_var_register(
        c, "thread_takeover_us",
        "Microseconds a process may be away from MPI (since it last tested, "
        "waited for or started a broadcast) before the TCA session's progress "
        "thread does the thread engine's work for it. Sooner, the thread "
        "competes for the device and the core with an application thread that "
        "is only off its core for a moment; 0: at once. -1 (default): 1000, or "
        "5000 where Open MPI yields when idle (mpi_yield_when_idle, on by "
        "default when oversubscribed: a thread that yielded may wait a whole "
        "time slice).",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_LOCAL,
        &mca_coll_tca_component.thread_takeover_us);
    register_shared_size("min_bytes", OPAL_INFO_LVL_6, 1,
                         "Persistent broadcasts smaller than this go to libnbc.",
                         &mca_coll_tca_component.min_bytes);
    return OMPI_SUCCESS;
}

/* Every MCA value checked after Open MPI read it (it wraps "-1" to SIZE_MAX -
 * a segment size that broke the pipeline arithmetic and delivered wrong data -
 * and reads "abc" as 0): an unusable one is reported with its name, value and
 * range, and coll tca is not used (libnbc serves every persistent broadcast).
 * The same parameters on every rank give the same decision everywhere. */
bool mca_coll_tca_params_valid(void) {
    const char *f = "help-coll-tca.txt";
    const mca_coll_tca_component_t *c = &mca_coll_tca_component;
    bool ok = true;
    ok = tca_mca_check_int(f, "coll_tca_priority", c->priority, -1, INT32_MAX,
                           "-1 (disabled) .. 2147483647") &&
         ok;
    static const char *const engine_names[] = {"offload", "thread"}; /* TCA_COLL_ENGINE_* order */
    ok = tca_mca_check_enum(f, "coll_tca_engine", engine_names, 2, "offload or thread") && ok;
    ok = tca_mca_check_size(f, "coll_tca_segment_size", c->segment_bytes, 64, UINT64_C(1) << 30,
                            "64..1G bytes (k, M, G suffixes allowed)") &&
         ok;
    ok = tca_mca_check_size(f, "coll_tca_gpu_segment_size", c->gpu_segment_bytes, 64,
                            UINT64_C(1) << 30, "64..1G bytes (k, M, G suffixes allowed)") &&
         ok;
    ok = tca_mca_check_size(f, "coll_tca_ucx_segment_size", c->ucx_segment_bytes, 64,
                            UINT64_C(1) << 30, "64..1G bytes (k, M, G suffixes allowed)") &&
         ok;
    ok = tca_mca_check_size(f, "coll_tca_chain_threshold", c->chain_threshold, 0, TCA_MCA_MAX_BYTES,
                            "0..1T bytes (k, M, G suffixes allowed)") &&
         ok;
    ok = tca_mca_check_size(f, "coll_tca_staging_size", c->staging_bytes, 0, UINT64_C(16) << 20,
                            "0 (no staging) .. 16M bytes (k, M suffixes allowed)") &&
         ok;
    ok = tca_mca_check_int(f, "coll_tca_stage_all", c->stage_all, -1, 1,
                           "-1 (where single copy is dear), 0 or 1") &&
         ok;
    ok = tca_mca_check_size(f, "coll_tca_min_bytes", c->min_bytes, 0, TCA_MCA_MAX_BYTES,
                            "0..1T bytes (k, M, G suffixes allowed)") &&
         ok;
    ok = tca_mca_check_int(f, "coll_tca_thread_takeover_us", c->thread_takeover_us, -1, 1000000,
                           "-1 (by Open MPI's mpi_yield_when_idle) or 0..1000000 us") &&
         ok;
    return ok;
}

void mca_coll_tca_apply_thread_takeover(void) {
    const int set = mca_coll_tca_component.thread_takeover_us;
    const bool yields = set < 0 && mca_common_tca_session_yields_when_idle();
    const unsigned us = (unsigned) (set >= 0 ? set : mca_common_tca_session_takeover_us());
    tca_coll_set_thread_takeover_us(us);
    opal_output_verbose(
        10, ompi_coll_base_framework.framework_output,
        "coll tca: the progress thread takes over a thread engine's broadcast %u us after the "
        "application left MPI%s",
        us, yields ? " (Open MPI yields when idle here)" : "");
}

/* The sub-cluster size btl tca was given, when it is loaded (it started the
 * session in its init, before coll's framework opened; asking for the same
 * size joins it); else 0: all local ranks form one sub-cluster. */
static int btl_tca_subcluster_size(void) {
    const int index = mca_base_var_find("opal", "btl", "tca", "subcluster_size");
    const int *value = NULL;
    if (index < 0 || OPAL_SUCCESS != mca_base_var_get_value(index, &value, NULL, NULL) ||
        NULL == value)
        return 0;
    return *value;
}

/* Joins the process's TCA session now: this is before MPI_Init's modex
 * fence, so when btl tca is not loaded and this starts the session, the
 * place it publishes still reaches every peer. */
static void join_session(void) {
    mca_coll_tca_component_t *c = &mca_coll_tca_component;
    tca_session_place_t place;
    int device_result = tcaSuccess;
    char why[768];
    if (c->priority < 0)
        return;
    if (mca_common_tca_session_across_hosts() && TCA_COLL_ENGINE_OFFLOAD == c->engine &&
        tca_mca_var_is_default("ompi", "coll", "tca", "engine")) {
        /* The ucx device runs triggered descriptors in software, on
         * whichever thread progresses it, and a channel's wait flushes its
         * targets (a round trip per child and epoch): the offload
         * engine's program took several times the thread engine's time
         * there (docs/results.md).  A user who asks for it gets it. */
        opal_output_verbose(
            5, ompi_coll_base_framework.framework_output,
            "coll tca: on the ucx device the thread engine runs the broadcasts (the offload "
            "engine's triggered descriptors run in software there, slower; coll_tca_engine "
            "offload asks for them)");
        c->engine = TCA_COLL_ENGINE_THREAD;
    }
    const int rc = mca_common_tca_session_join(
        "coll tca", ompi_coll_base_framework.framework_output, btl_tca_subcluster_size(), &place,
        &device_result, why, sizeof(why));
    if (OPAL_SUCCESS == rc) {
        tcaBackendAttr backend;
        c->session_joined = 1;
        c->host_puts_by_target =
            tcaSuccess == tcaQueryBackend(&backend) && backend.host_puts_by_target;
    } else if (OPAL_ERR_BAD_PARAM == rc) {
        tca_show_help("help-coll-tca.txt", "session-conflict", why);
    } else if (OPAL_ERR_NOT_AVAILABLE != rc) {
        tca_show_help("help-coll-tca.txt", "device-failed",
                      tca_error_text(device_result, why, sizeof(why)));
    }
}

static int test_fail_step(void) {
    const char *v = getenv("TCA_COLL_TEST_FAIL");
    if (NULL == v)
        return TCA_COLL_FAIL_NONE;
    if (0 == strcmp(v, "post"))
        return TCA_COLL_FAIL_POST;
    if (0 == strcmp(v, "connect"))
        return TCA_COLL_FAIL_CONNECT;
    if (0 == strcmp(v, "start"))
        return TCA_COLL_FAIL_START;
    return TCA_COLL_FAIL_NONE;
}

static int tca_open(void) {
    mca_coll_tca_component.test_fail = test_fail_step();
    OBJ_CONSTRUCT(&mca_coll_tca_component.lock, opal_mutex_t);
    OBJ_CONSTRUCT(&mca_coll_tca_component.active, opal_list_t);
    OBJ_CONSTRUCT(&mca_coll_tca_component.freed, opal_list_t);
    mca_coll_tca_component.progress_registered = 0;
    mca_coll_tca_component.session_joined = 0;
    mca_coll_tca_component.host_puts_by_target = 0;
    join_session();
    return OMPI_SUCCESS;
}

static int tca_close(void) {
    if (mca_coll_tca_component.progress_registered)
        opal_progress_unregister(mca_coll_tca_progress);
    mca_coll_tca_component.progress_registered = 0;
    mca_coll_tca_release_freed(1); /* MPI_Finalize: every peer is done with them */
    tca_coll_finalize();           /* requests never freed: their engines stay idle */
    if (mca_coll_tca_component.session_joined)
        mca_common_tca_session_leave();
    mca_coll_tca_component.session_joined = 0;
    OBJ_DESTRUCT(&mca_coll_tca_component.freed);
    OBJ_DESTRUCT(&mca_coll_tca_component.active);
    OBJ_DESTRUCT(&mca_coll_tca_component.lock);
    return OMPI_SUCCESS;
}
