/*
 * tca_coll_core.h - the C interface between coll tca's Open MPI glue
 * (ompi/mca/coll/tca, C because coll.h is not valid C++) and its C++ core:
 * one persistent broadcast = plan + registered buffer + counters + engine.
 */
#ifndef TCA_COLL_CORE_H
#define TCA_COLL_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "tca.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TCA_COLL_HIDDEN __attribute__((visibility("hidden")))

enum { TCA_COLL_ENGINE_OFFLOAD = 0, TCA_COLL_ENGINE_THREAD = 1 };

/* What a rank tells its tree neighbours once, at init. */
typedef struct tca_coll_peer_info {
    tcaHandle buffer;  /* where the parent writes: staging area (staged plans) or the buffer */
    tcaHandle scratch; /* landing bytes for the children's credit descriptors */
    int32_t node;
    int32_t data_counter;
    int32_t ready_counter;
    int32_t credit_counter; /* first of one per child (staged plans) */
    uint64_t
        buffer_offset; /* direct plans: the buffer inside `buffer` (GPU: offset in its allocation) */
} tca_coll_peer_info_t;

typedef struct tca_coll_bcast tca_coll_bcast_t;

typedef struct tca_coll_bcast_params {
    const int *node_of; /* device node of every communicator rank */
    int size, rank, root;
    void *buffer;
    size_t bytes;
    size_t segment_bytes, chain_threshold;
    /* Segments of GPU buffers, used where this rank's buffer is GPU memory or
     * gpu_anywhere (another rank's is: all ranks must cut alike). */
    size_t gpu_segment_bytes;
    int gpu_anywhere;
    size_t staging_bytes; /* messages up to this size are staged (0: never) */
    /* 1: host buffers of every size are staged (chains in segments through
     * the slots); GPU buffers (here or, gpu_anywhere, elsewhere) keep staging_bytes. */
    int stage_all;
    /* 1: two ranks also get a chain of segments from chain_threshold up (the
     * ucx device sends one large write as a synchronous rendezvous). */
    int pipeline_pairs;
    int engine; /* TCA_COLL_ENGINE_* (offload falls back to thread where no channel can be acquired) */
    /* 1 (CUDA-aware Open MPI): the buffer may be GPU memory; asked of CUDA and
     * registered as tcaMemoryGPU (its allocation, buffer at an offset). */
    int detect_gpu;
} tca_coll_bcast_params_t;

/* 1: this core was compiled with optimization. */
TCA_COLL_HIDDEN int tca_coll_core_optimized(void);

/* Plans, registers the buffer, acquires counters (and staging memory); *mine is what to send
 * to the parent and children.  NULL on failure (*err says why: tcaErrorNoResource when the
 * device has no run of free counters left). */
TCA_COLL_HIDDEN tca_coll_bcast_t *tca_coll_bcast_new(const tca_coll_bcast_params_t *p,
                                                     tca_coll_peer_info_t *mine, tcaResult *err);
TCA_COLL_HIDDEN int tca_coll_bcast_parent(const tca_coll_bcast_t *b); /* -1 at the root */
TCA_COLL_HIDDEN int tca_coll_bcast_num_children(const tca_coll_bcast_t *b);
TCA_COLL_HIDDEN int tca_coll_bcast_child(const tca_coll_bcast_t *b, int i);
TCA_COLL_HIDDEN int tca_coll_bcast_engine(const tca_coll_bcast_t *b); /* after connect */
TCA_COLL_HIDDEN int tca_coll_bcast_on_gpu(const tca_coll_bcast_t *b); /* the buffer is GPU memory */
TCA_COLL_HIDDEN size_t tca_coll_bcast_segments(const tca_coll_bcast_t *b); /* pipeline segments */
TCA_COLL_HIDDEN size_t
tca_coll_bcast_segment_bytes(const tca_coll_bcast_t *b); /* each but maybe the last */
/* Landing slots per child (0: not staged: parents write into the buffers),
 * the bytes of each, and whether stage_all took effect here. */
TCA_COLL_HIDDEN size_t tca_coll_bcast_slots(const tca_coll_bcast_t *b);
TCA_COLL_HIDDEN size_t tca_coll_bcast_slot_bytes(const tca_coll_bcast_t *b);
TCA_COLL_HIDDEN int tca_coll_bcast_stages_all(const tca_coll_bcast_t *b);
/* With the neighbours' infos (parent's ignored at the root): build the engine. */
TCA_COLL_HIDDEN tcaResult tca_coll_bcast_connect(tca_coll_bcast_t *b,
                                                 const tca_coll_peer_info_t *parent,
                                                 const tca_coll_peer_info_t *children);
TCA_COLL_HIDDEN tcaResult tca_coll_bcast_start(tca_coll_bcast_t *b);
/* tcaSuccess: this rank's part of the epoch is done; tcaErrorNotReady: not yet. */
TCA_COLL_HIDDEN tcaResult tca_coll_bcast_test(tca_coll_bcast_t *b);
/* The application freed the request (MPI_Request_free: it is not active, or
 * its last epoch is done): a child returns the credits it still owes its
 * parent (staged plans return them in batches), so that the parent's request
 * settles.  Not at MPI_Finalize's forced release: the parent may be gone. */
TCA_COLL_HIDDEN void tca_coll_bcast_retire(tca_coll_bcast_t *b);
/* 1 when nothing can still land in this request's counters and memory (the
 * children's last credits are in): then tca_coll_bcast_free may give them
 * back to the device.  Never waits. */
TCA_COLL_HIDDEN int tca_coll_bcast_settled(const tca_coll_bcast_t *b);
/* MPI_Finalize, after the freed requests are released: the session's
 * progress thread stops running thread engines, also those of requests the
 * application never freed (their code is unloaded next). */
TCA_COLL_HIDDEN void tca_coll_finalize(void);
/* How long after the application last tested, waited for or started a
 * broadcast the session's progress thread takes over the thread engine's
 * work (the default: 1000 us). */
TCA_COLL_HIDDEN void tca_coll_set_thread_takeover_us(unsigned us);
/* Releases at once: counters, channel, registrations and memory. */
TCA_COLL_HIDDEN void tca_coll_bcast_free(tca_coll_bcast_t *b);

#ifdef __cplusplus
}
#endif
#endif /* TCA_COLL_CORE_H */
