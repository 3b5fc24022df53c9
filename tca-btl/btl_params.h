/*
 * btl_params.h - what each of btl tca's MCA parameters is: name, help text,
 * default, the values it may take and why others are refused.  The glue
 * (btl_tca_component.c) only registers them with Open MPI from this table
 * and reports what the checks here find; what a value means is the core's.
 * Its own parameters land in a tca_btl_settings_t; the common BTL
 * parameters (btl_tca_eager_limit, ...) are registered by Open MPI's BTL base
 * into the module, and only their ranges (and some defaults) are here.
 */
#ifndef TCA_BTL_PARAMS_H
#define TCA_BTL_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TCA_BTL_PARAMS_HIDDEN __attribute__((visibility("hidden")))

/* Progress-thread modes (btl_tca_progress_thread), in the order of its names. */
enum {
    TCA_BTL_THREAD_OFF = 0, /* progress only inside MPI calls */
    TCA_BTL_THREAD_ON =
        1, /* always: makes the library thread-aware (like btl_tcp_progress_thread) */
    TCA_BTL_THREAD_AUTO = 2 /* only when the application asked for MPI_THREAD_MULTIPLE */
};

/* get emulation (btl_tca_get_emulation), in the order of its names. */
enum {
    TCA_BTL_GET_OFF = 0, /* no btl_get: ob1 uses its PUT rendezvous (and copies GPU buffers) */
    TCA_BTL_GET_GPU = 1, /* only ob1's GPU zero copy (MCA_BTL_FLAGS_CUDA_GET; CUDA-aware builds) */
    TCA_BTL_GET_ALL = 2  /* default; also host buffers: MCA_BTL_FLAGS_GET (ob1 RGET, osc rdma) */
};

enum {
    TCA_BTL_RNDV_BY_SIZE = 0,   /* copy protocol up to the copy limit, RDMA beyond */
    TCA_BTL_RNDV_BY_TRAFFIC = 1 /* default; a lone message by RDMA, a stream by copy */
};

/* btl tca's own parameters, as Open MPI stores them. */
typedef struct tca_btl_settings {
    int subcluster_size;     /* 0: all processes of the node form one sub-cluster */
    unsigned int ring_slots; /* eager slots per (sender, receiver); 0: chosen to fit */
    int progress_thread;     /* TCA_BTL_THREAD_* */
    int thread_check_us; /* thread: first interval between looks at whether the application progresses */
    int thread_check_max_us; /* thread: the interval doubles up to this while the application is in MPI */
    int thread_sleep_us;    /* thread: longest sleep on the device interrupt */
    size_t put_dma_min;     /* puts of at least this size go through the DMA engine (0: none) */
    size_t get_inline_max;  /* gets up to this size come back in the answer (0: never) */
    size_t put_inline_max;  /* puts up to this size go as a message the target copies (0: never) */
    int dma_channels;       /* at most this many DMA channels for puts */
    int poll_batch;         /* messages taken from one peer per progress pass */
    int poll_all_max_peers; /* with more peers, poll only the rings marked in our traffic line */
    int get_emulation;      /* TCA_BTL_GET_* */
    int rendezvous_choice;  /* TCA_BTL_RNDV_BY_* */
} tca_btl_settings_t;

/* How Open MPI stores a value (its MCA_BASE_VAR_TYPE_*). */
typedef enum {
    TCA_BTL_PARAM_INT,
    TCA_BTL_PARAM_UNSIGNED,
    TCA_BTL_PARAM_SIZE,
    TCA_BTL_PARAM_UINT32
} tca_btl_param_type_t;

enum {
    TCA_BTL_PARAM_ADJUSTED =
        1u << 0, /* the BTL base changes it after reading: its text need not equal it */
    TCA_BTL_PARAM_ALL_EQ = 1u << 1, /* must be the same on every process */
    TCA_BTL_PARAM_OMPI_DEFAULT = 1u
                                 << 2 /* a common parameter whose default is Open MPI's, not ours */
};

typedef struct tca_btl_param {
    const char *name; /* without "btl_tca_" */
    const char *help; /* NULL: a common BTL parameter, registered by Open MPI's BTL base */
    int level;        /* ompi_info level, 1..9 */
    tca_btl_param_type_t type;
    const char *const *names; /* an enumeration's values, by number (NULL: a number) */
    int name_count;
    uint64_t def, min, max;
    unsigned flags;       /* TCA_BTL_PARAM_* */
    const char *allowed;  /* the values it may take, as an error message says it */
    const char *not_pow2; /* set: only 0 and powers of two are taken, and this is why */
    const char *not_one;  /* set: 1 is refused, and this is why */
    size_t offset;        /* own parameters: where the value lies in tca_btl_settings_t */
} tca_btl_param_t;

/* Every parameter, own ones first. */
TCA_BTL_PARAMS_HIDDEN const tca_btl_param_t *tca_btl_params(size_t *count);
/* By name without "btl_tca_"; NULL: none such. */
TCA_BTL_PARAMS_HIDDEN const tca_btl_param_t *tca_btl_param_find(const char *name);
/* Every own parameter at its default. */
TCA_BTL_PARAMS_HIDDEN void tca_btl_settings_defaults(tca_btl_settings_t *s);
/* An own parameter's value in s, widened (an int as its two's complement). */
TCA_BTL_PARAMS_HIDDEN uint64_t tca_btl_setting_get(const tca_btl_settings_t *s,
                                                   const tca_btl_param_t *p);
/* A parameter's default for this job: the table's, except the eager limits
 * (eager_limit, rndv_eager_limit, max_send_size) where the device connects
 * hosts (across_hosts: the ucx device), whose slots are network messages. */
TCA_BTL_PARAMS_HIDDEN uint64_t tca_btl_param_default(const tca_btl_param_t *p, int across_hosts);
/* The payload of one ring slot: the largest message the three limits allow,
 * rounded as the rings lay slots out.  The one place it is computed; the
 * peers compare it in the modex. */
TCA_BTL_PARAMS_HIDDEN uint32_t tca_btl_eager_slot_payload(size_t eager_limit,
                                                          size_t rndv_eager_limit,
                                                          size_t max_send_size);
/* NULL: value is in [min, max] and is neither 1 where not_one says why
 * not nor other than a power of two (or 0) where not_pow2 does; else why.
 * An int parameter's value is read as signed. */
TCA_BTL_PARAMS_HIDDEN const char *tca_btl_param_problem(const tca_btl_param_t *p, uint64_t value);

#ifdef __cplusplus
}
#endif

#endif /* TCA_BTL_PARAMS_H */
