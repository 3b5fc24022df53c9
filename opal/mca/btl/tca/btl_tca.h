/*
 * btl tca: Open MPI byte-transfer layer over the put-only TCA device.
 *
 * This directory is the thin MCA glue (C, like btl/vader and btl/self): the
 * component, the module's function table, descriptors and the calls into ob1.
 * The protocol itself - eager rings, credits, doorbells, the progress thread -
 * lives in tca-btl/ (C++, tested without MPI).
 */
#ifndef MCA_BTL_TCA_H
#define MCA_BTL_TCA_H

#include "opal_config.h"

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_list.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/rcache/rcache.h"
#include "mca_glue/tca_ompi_compat.h"

#include "btl_tca_modex.h"
#include "tca.h"
#include "btl_params.h"
#include "tca_btl_core.h"

BEGIN_C_DECLS

/* The btl's own messages, handled in progress before ob1's tag table (the
 * BTL-private tag range, like MCA_BTL_TAG_SMCUDA). */
#define MCA_BTL_TCA_TAG_GET_REQ (MCA_BTL_TAG_BTL + 0x10)
#define MCA_BTL_TCA_TAG_GET_DONE (MCA_BTL_TAG_BTL + 0x11)
/* A slot a descriptor held (prepare_src) and ob1 freed unsent: skipped. */
#define MCA_BTL_TCA_TAG_NOTHING (MCA_BTL_TAG_BTL + 0x12)
#define MCA_BTL_TCA_TAG_ATOMIC_REQ (MCA_BTL_TAG_BTL + 0x13)
#define MCA_BTL_TCA_TAG_ATOMIC_DONE (MCA_BTL_TAG_BTL + 0x14)
/* GET_DONE with the data behind it (a small get of host memory) */
#define MCA_BTL_TCA_TAG_GET_DATA (MCA_BTL_TAG_BTL + 0x15)
/* a small get of host memory: answered with GET_DATA */
#define MCA_BTL_TCA_TAG_GET_SMALL (MCA_BTL_TAG_BTL + 0x16)
/* a small put of host memory: the data behind the request, answered with GET_DONE */
#define MCA_BTL_TCA_TAG_PUT_SMALL (MCA_BTL_TAG_BTL + 0x17)

/* The wire registration handle: a device handle is meaningful to every node
 * of the sub-cluster (node, base address, length, key).  window: a window's
 * registration (register.c), whose handle a peer may read where its owner
 * rewrites it, so the data path checks it against the owner's table.
 * lent: ours only (a peer ignores it): a mca_btl_tca_lent_t's handle. */
struct mca_btl_base_registration_handle_t {
    tcaHandle h;
    uint32_t window;
    uint32_t lent;
};

/* base.rcache is NULL for a window's registration (register.c): not grdma's. */
typedef struct mca_btl_tca_reg_t {
    mca_rcache_base_registration_t base;
    mca_btl_base_registration_handle_t handle;
    uint32_t window_slot; /* a window's: its slot in the core's table */
} mca_btl_tca_reg_t;

/* A registration granted to a lone rendezvous (btl_tca_rendezvous_choice
 * traffic): grdma's, counted on its peer's endpoint until ob1 gives it back,
 * so that the next message to that peer knows a rendezvous is in flight. */
typedef struct mca_btl_tca_lent_t {
    mca_btl_base_registration_handle_t handle; /* grdma's, lent = 1 */
    mca_btl_tca_reg_t *reg;
    struct mca_btl_base_endpoint_t *endpoint;
} mca_btl_tca_lent_t;

struct mca_btl_base_endpoint_t;
struct mca_btl_tca_put_t;

typedef struct mca_btl_tca_component_t {
    mca_btl_base_component_3_0_0_t super;

    tca_btl_settings_t set; /* its own MCA parameters (tca-btl/btl_params.h has what each is) */

    /* state */
    int subcluster, node, num_nodes;
    uint32_t slot_payload;
    void *area;
    size_t area_bytes;
    tcaHandle area_handle;
    struct mca_btl_base_endpoint_t
        *endpoints[TCA_MAX_NODES];                 /* by node id; published with release */
    struct mca_btl_base_endpoint_t *self_endpoint; /* our own process: RMA only (module.c) */
    int poll_by_traffic; /* we read our traffic line (published in the modex) */
    int across_hosts;    /* the device connects hosts (ucx): peers' areas are written by PIO */
    int lone_by_rdma;    /* rendezvous_choice traffic in effect (protocols.c): register.c asks */
    opal_mutex_t
        endpoints_lock; /* add_procs: from MPI, and from progress for a sender MPI has not added */
    uint64_t senders_tried;   /* nodes progress tried to add (progress lock held) */
    tca_btl_poller_t *poller; /* which rings a progress pass looks at (tca-btl core) */
    volatile int64_t
        pending_peers; /* bit n: node n's endpoint has queued sends (set and cleared under its lock) */
    opal_free_list_t frags;
    int device_up;
    volatile int32_t progress_lock;
    tca_btl_progress_thread_t *thread;
    struct mca_btl_tca_module_t *module;

    tca_btl_dma_puts_t *dma_puts; /* puts through the DMA engine (tca-btl core) */

    /* peers that die without finishing (check_peers) */
    uint32_t passes_since_check;
    int peer_death_reported;

    /* emulated gets */
    tca_btl_gets_t *gets;         /* ours, waiting for GET_DONE (tca-btl core) */
    volatile int64_t gets_served; /* puts run for peers' gets (reported at finalize, verbose) */
    /* rendezvous_choice traffic: messages beyond the eager limit ob1 asked
     * about, granted (RGET) and refused (copy protocol) */
    volatile int64_t rendezvous_by_rdma, rendezvous_by_copy;
    /* atomics */
    tca_btl_atomics_t *atomics;      /* ours, waiting for ATOMIC_DONE (tca-btl core) */
    volatile int64_t atomics_served; /* peers' atomics run on our memory (verbose at finalize) */
    tca_btl_windows_t *windows;      /* window registrations (tca-btl core) */
    int memory_hook;                 /* memory given back ends window registrations (register.c) */
    volatile int64_t handles_found;  /* remote handles found again by address (register.c) */
    int gpu_initialized; /* tca_ompi_gpu_init started Open MPI's GPU support (and needs its fini) */
    bool build_optimized; /* btl tca's C++ core and libtca's were compiled with optimization */
} mca_btl_tca_component_t;

TCA_OPAL_COMPONENT_DECLSPEC extern mca_btl_tca_component_t mca_btl_tca_component;

typedef struct mca_btl_tca_module_t {
    mca_btl_base_module_t super;
    mca_btl_base_module_error_cb_fn_t error_cb;
    mca_rcache_base_module_t *rcache;
} mca_btl_tca_module_t;

extern mca_btl_tca_module_t mca_btl_tca_module;

/* module.c */
int mca_btl_tca_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                          struct opal_bitmap_t *reachable);
int mca_btl_tca_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers);
int mca_btl_tca_finalize(struct mca_btl_base_module_t *btl);

/* register.c */
int mca_btl_tca_registrations_init(mca_btl_tca_module_t *module);
void mca_btl_tca_registrations_fini(mca_btl_tca_module_t *module);
struct mca_btl_base_registration_handle_t *
mca_btl_tca_register_mem(struct mca_btl_base_module_t *btl,
                         struct mca_btl_base_endpoint_t *endpoint, void *base, size_t size,
                         uint32_t flags);
int mca_btl_tca_deregister_mem(struct mca_btl_base_module_t *btl,
                               struct mca_btl_base_registration_handle_t *handle);
/* A get's destination nobody registered (see get.c). */
int mca_btl_tca_register_destination(void *base, size_t size, mca_btl_tca_reg_t **reg);
void mca_btl_tca_release_destination(mca_btl_tca_reg_t *reg); /* NULL: nothing */
/* Our live registration that a peer's request names by table slot and key (a
 * small get or put, an atomic): false once it has ended - memory given back
 * ends it (register.c), and a late request must not touch what took its place. */
bool mca_btl_tca_own_registration(uint32_t reg_index, uint64_t key, tcaHandle *out);
/* Whether a whole handle of ours (a large get's source, our own memory) still lives as it says. */
bool mca_btl_tca_own_handle_live(const tcaHandle *h);
/* The registration a put, get or atomic of size bytes at remote_address of
 * ep's node goes into, copied to *out: the handle it was given if that covers
 * the range, else the target's live registration that does (a handle osc rdma
 * read from a table its owner rearranged); OPAL_ERR_BAD_PARAM (said at
 * btl_base_verbose 1) if none. */
int mca_btl_tca_remote_handle(const struct mca_btl_base_endpoint_t *ep,
                              const struct mca_btl_base_registration_handle_t *remote_handle,
                              uint64_t remote_address, size_t size, tcaHandle *out);

/* send.c */
int mca_btl_tca_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     struct mca_btl_base_descriptor_t *descriptor, mca_btl_base_tag_t tag);
int mca_btl_tca_sendi(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                      struct opal_convertor_t *convertor, void *header, size_t header_size,
                      size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                      mca_btl_base_descriptor_t **descriptor);
int mca_btl_tca_send_pending(struct mca_btl_base_endpoint_t *endpoint);
int mca_btl_tca_send_control(struct mca_btl_base_endpoint_t *endpoint, mca_btl_base_tag_t tag,
                             const void *msg, size_t len, const void *data, size_t data_len);

/* How an RDMA operation completes: ob1's callback and its arguments, or
 * (cbfunc NULL) the answer to a peer's get, named by its cookie.  The core
 * carries it for every put and keeps it for every get, in
 * TCA_BTL_OWNER_BYTES. */
typedef struct mca_btl_tca_rdma_done_t {
    mca_btl_base_rdma_completion_fn_t cbfunc;
    struct mca_btl_base_endpoint_t *endpoint;
    void *local_address;
    struct mca_btl_base_registration_handle_t *local_handle;
    void *cbcontext, *cbdata;
    union {
        uint64_t cookie; /* the answer to a peer's get */
        /* Our get into memory the caller did not register (osc rdma's
         * MPI_Get): the destination registration btl tca took for the owner's
         * put, given back when the get completes. */
        struct mca_btl_tca_reg_t *own_reg;
    };
    uint32_t result_bytes; /* bytes an answer may write to local_address: an atomic's old value
                              (0, 4, 8), a get's data (inline answers; 0: too large) */
} mca_btl_tca_rdma_done_t;
_Static_assert(sizeof(mca_btl_tca_rdma_done_t) <= TCA_BTL_OWNER_BYTES,
               "the core carries TCA_BTL_OWNER_BYTES per put and get");

/* Our own host memory that carries no registration (osc passes none for
 * small puts and gets), described as one for the core's range checks. */
static inline tcaHandle mca_btl_tca_host_range(const void *addr, size_t size) {
    const tcaHandle h = {.region = tcaMemoryCPU,
                         .node = (uint16_t) mca_btl_tca_component.node,
                         .addr = (uint64_t) (uintptr_t) addr,
                         .size = size};
    return h;
}

/* A request the core refused to begin (TCA_BTL_GET_* codes), as Open MPI's
 * code: a full table is retried by the caller, anything else is bad input. */
static inline int mca_btl_tca_begin_status(int how) {
    return TCA_BTL_GET_OK == how     ? OPAL_SUCCESS
           : TCA_BTL_GET_FULL == how ? OPAL_ERR_OUT_OF_RESOURCE
                                     : OPAL_ERR_BAD_PARAM;
}

/* put.c */
int mca_btl_tca_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata);
int mca_btl_tca_put_ex(const mca_btl_tca_rdma_done_t *done, const tcaHandle *src, tcaHandle *dst,
                       uint64_t remote_address, size_t size, int need_dma);
int mca_btl_tca_put_progress(void);
/* put and get on our own process (the endpoint without a ring): a checked copy, completed at once */
int mca_btl_tca_copy_own(const mca_btl_tca_rdma_done_t *done, const tcaHandle *dst,
                         uint64_t dst_addr, const tcaHandle *src, uint64_t src_addr, size_t size);
int mca_btl_tca_put_init(void);
void mca_btl_tca_put_fini(void);

/* get.c */
int mca_btl_tca_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *local_handle,
                    struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata);
void mca_btl_tca_get_control(struct mca_btl_base_endpoint_t *endpoint, uint8_t tag,
                             const void *payload, size_t size);
/* put.c: a peer's small put (PUT_SMALL) */
void mca_btl_tca_put_control(struct mca_btl_base_endpoint_t *endpoint, const void *payload,
                             size_t size);
size_t mca_btl_tca_get_request_bytes(void);
/* The emulated get's state (tca-btl core): set up in component init, torn down at shutdown. */
int mca_btl_tca_get_init(void);
void mca_btl_tca_get_fini(void);

/* answers.c: the btl's own requests and answers (get, small put, atomics) */
/* Sends a request the gets table holds (by cookie: gets, small puts), and
 * forgets it where it could not go. */
int mca_btl_tca_send_request(struct mca_btl_base_endpoint_t *endpoint, mca_btl_base_tag_t tag,
                             const void *req, size_t len, uint64_t cookie, const void *data,
                             size_t data_len);
/* An answer the core looked up (how: TCA_BTL_GET_*), from ep: reported with
 * the help topic unless it answered our operation from the peer asked; false
 * where it named none of ours (no callback), else *done taken from owner. */
bool mca_btl_tca_take_answer(int how, struct mca_btl_base_endpoint_t *ep, const char *topic,
                             uint64_t cookie, const unsigned char *owner,
                             mca_btl_tca_rdma_done_t *done);
/* The answer to a peer's get or small put: GET_DONE {cookie, status}. */
void mca_btl_tca_send_done(struct mca_btl_base_endpoint_t *endpoint, uint64_t cookie, int status);
/* The put run for a peer's get finished (or failed): answer it. */
void mca_btl_tca_get_served(struct mca_btl_base_endpoint_t *endpoint, uint64_t cookie, int status);

/* atomic.c: atomics run by the target's progress (tca-btl/remote_atomics.hpp) */
int mca_btl_tca_aop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                    uint64_t remote_address,
                    struct mca_btl_base_registration_handle_t *remote_handle,
                    mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int mca_btl_tca_afop(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle,
                     mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int mca_btl_tca_acswap(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                       void *local_address, uint64_t remote_address,
                       struct mca_btl_base_registration_handle_t *local_handle,
                       struct mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                       uint64_t value, int flags, int order,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
void mca_btl_tca_atomic_control(struct mca_btl_base_endpoint_t *endpoint, uint8_t tag,
                                const void *payload, size_t size);
/* What osc may ask (btl_flags, btl_atomic_flags), at init: none where a request does not fit a slot. */
void mca_btl_tca_atomic_set_flags(mca_btl_tca_module_t *module, uint32_t slot_payload);
int mca_btl_tca_atomic_init(void);
void mca_btl_tca_atomic_fini(void);

#if OPAL_CUDA_SUPPORT
/* cuda.c: the application's CUDA context for the progress thread */
void mca_btl_tca_cuda_note_app_context(void); /* application thread, progress lock held */
void mca_btl_tca_cuda_bind_thread(void);      /* progress thread, progress lock held */
#endif

/* fatal.c: help text, then the error callback (ob1 aborts) */
void mca_btl_tca_fatal(struct mca_btl_base_endpoint_t *endpoint, const char *what, tcaResult r);

/* params.c: btl tca's own and the common BTL parameters; false after help
 * naming every unusable value */
int mca_btl_tca_params_register(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m);
bool mca_btl_tca_params_valid(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m);

/* protocols.c: what ob1 and osc may do, decided at init */
void mca_btl_tca_set_protocols(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m);
/* once the device runs */
void mca_btl_tca_choose_copy_limit(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m);
void mca_btl_tca_report_path(const mca_btl_tca_component_t *c, const mca_btl_tca_module_t *m);

/* device.c: the session, the rings' area, the modex */
int mca_btl_tca_device_start(mca_btl_tca_component_t *c);
void mca_btl_tca_device_stop(mca_btl_tca_component_t *c);
int mca_btl_tca_modex_publish(mca_btl_tca_component_t *c);

/* progress.c */
int mca_btl_tca_poll(void);
int mca_btl_tca_component_progress(void);
void mca_btl_tca_progress_thread_start(mca_btl_tca_component_t *c, mca_btl_tca_module_t *m,
                                       bool enable_mpi_threads);
/* The module's finalize: first the progress thread (also from the at-exit
 * handler), then, once the registration cache is gone, everything else
 * (component.c). */
void mca_btl_tca_component_stop_thread(void);
void mca_btl_tca_component_shutdown(void);

END_C_DECLS
#endif /* MCA_BTL_TCA_H */
