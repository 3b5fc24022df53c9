/*
 * tca_btl_core.h - the C interface between the Open MPI glue of btl tca
 * (opal/mca/btl/tca, C) and its protocol core (this directory, C++).
 * Everything here is MPI-free and unit-tested on its own.
 */
#ifndef TCA_BTL_CORE_H
#define TCA_BTL_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "tca.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TCA_BTL_CORE_HIDDEN __attribute__((visibility("hidden")))

/* ---- the published area: control words + one eager ring per sender ---- */
TCA_BTL_CORE_HIDDEN size_t tca_btl_area_bytes(int nodes, uint32_t slots, uint32_t max_payload);
/* Largest payload a slot holds for this max_payload (rounded up to the slot stride). */
TCA_BTL_CORE_HIDDEN uint32_t tca_btl_slot_payload(uint32_t max_payload);
/* 1: this core was compiled with optimization. */
TCA_BTL_CORE_HIDDEN int tca_btl_core_optimized(void);

/* ---- one peer: tx ring (in the peer's area) and rx ring (in ours) ---- */
typedef struct tca_btl_peer tca_btl_peer_t;

/* own_area: our area (local); peer_area: the peer's area, mapped write-only,
 * or NULL where the device cannot map it: then every store into it is a PIO
 * write through peer_handle (the ucx device; a peer with a progress thread
 * then gets its interrupt after every message), and the slots of both rings
 * end with their header (the peer's device cannot map ours either).
 * peer_polls_by_traffic: the peer reads its traffic line (it said so in its
 * modex), so every commit also marks our ring there. */
TCA_BTL_CORE_HIDDEN tca_btl_peer_t *tca_btl_peer_new(void *own_area, void *peer_area,
                                                     const tcaHandle *peer_handle, int nodes,
                                                     int self, int peer, uint32_t slots,
                                                     uint32_t max_payload, int peer_has_thread,
                                                     int peer_polls_by_traffic);
TCA_BTL_CORE_HIDDEN void tca_btl_peer_free(tca_btl_peer_t *p);

/* Payload area for a message of up to `max` bytes in the peer's ring, or
 * NULL while there is no room for it. */
TCA_BTL_CORE_HIDDEN void *tca_btl_tx_reserve(tca_btl_peer_t *p, uint32_t max);
/* Publish the reserved message, size <= max (header word last, then our traffic mark where
 * the peer reads them).  Returns 1 when the peer
 * asked for an interrupt after each message (its progress thread sleeps),
 * 0 when not, -1 when the device refused a PIO write (*err: why; the
 * message is not sent). */
TCA_BTL_CORE_HIDDEN int tca_btl_tx_commit(tca_btl_peer_t *p, uint8_t tag, uint32_t size,
                                          tcaResult *err);
/* Take room in a mapped ring for a message of up to `max` bytes packed into
 * it later (no copy of the sender's own), or NULL (no room, or written by
 * PIO).  Messages committed meanwhile reach the peer after it: every held
 * message must be published (size <= max), with a tag the peer skips where
 * the message is dropped.  publish returns as commit does (never -1: a
 * mapped ring). */
TCA_BTL_CORE_HIDDEN void *tca_btl_tx_hold(tca_btl_peer_t *p, uint32_t max, uint64_t *index);
/* 1 where messages can be held (a mapped ring): hold's NULL then means no room. */
TCA_BTL_CORE_HIDDEN int tca_btl_tx_can_hold(const tca_btl_peer_t *p);
TCA_BTL_CORE_HIDDEN int tca_btl_tx_publish(tca_btl_peer_t *p, uint64_t index, uint8_t tag,
                                           uint32_t size);

/* ---- receiving: which rings a progress pass looks at ----
 * by_traffic: we read our traffic line (and say so in the modex): only rings
 * whose senders marked them, and those a pass left unfinished, are polled;
 * else every added peer's ring.  At most `batch` messages per ring per pass.
 * One caller of poll at a time; add may come from another thread. */
typedef struct tca_btl_poller tca_btl_poller_t;
/* written_by_pio: our rings are written by PIO (peers whose device cannot
 * map our area: tca_btl_peer_new with peer_area NULL), their slots end with
 * the header. */
TCA_BTL_CORE_HIDDEN tca_btl_poller_t *tca_btl_poller_new(void *own_area, int nodes, int by_traffic,
                                                         uint32_t batch, uint32_t slots,
                                                         uint32_t max_payload, int written_by_pio);
/* Bit n: node n is not added, yet its first message has arrived in its ring.
 * Open MPI adds a process of another host only when it first talks to it:
 * the glue adds such a sender itself (as btl tcp does for a connection). */
TCA_BTL_CORE_HIDDEN uint64_t tca_btl_poller_unknown_senders(const tca_btl_poller_t *p);
TCA_BTL_CORE_HIDDEN void tca_btl_poller_free(tca_btl_poller_t *p);
TCA_BTL_CORE_HIDDEN void tca_btl_poller_add(tca_btl_poller_t *p, int node, tca_btl_peer_t *peer);
/* deliver(ctx, node, tag, payload, size) per arrived message; the payload is
 * valid until deliver returns (the slot is released then).  Returns how many. */
typedef void (*tca_btl_deliver_fn)(void *ctx, int node, uint8_t tag, const void *payload,
                                   uint32_t size);
TCA_BTL_CORE_HIDDEN int tca_btl_poller_poll(tca_btl_poller_t *p, tca_btl_deliver_fn deliver,
                                            void *ctx);

/* Our progress thread sleeps (1) or not (0): ask this peer for doorbells. */
TCA_BTL_CORE_HIDDEN void tca_btl_peer_announce_sleep(tca_btl_peer_t *p, int sleeping);

/* ---- DMA puts: a queue over the channels btl tca acquires ----
 * One reused descriptor per channel (no allocation per put once warm); puts
 * that find every channel busy wait in order.  Channels are acquired from the
 * device as puts first need them, up to max_channels. */
#define TCA_BTL_OWNER_BYTES 64 /* the glue's completion record, carried as bytes */
typedef struct tca_btl_dma_put {
    tcaHandle dst, src; /* src: a registration of this process */
    uint64_t dst_off, src_off, size;
    unsigned char owner[TCA_BTL_OWNER_BYTES]; /* handed back untouched on completion */
} tca_btl_dma_put_t;
typedef struct tca_btl_dma_puts tca_btl_dma_puts_t;
enum {
    TCA_BTL_PUT_STARTED,    /* on a channel */
    TCA_BTL_PUT_QUEUED,     /* behind the puts on our channels */
    TCA_BTL_PUT_NO_CHANNEL, /* we hold none and the device has none free: not taken */
    TCA_BTL_PUT_FAILED      /* not taken: *err says why */
};
/* log(ctx, text): a channel taken, or none free when first needed (verbose output). */
TCA_BTL_CORE_HIDDEN tca_btl_dma_puts_t *
tca_btl_dma_puts_new(int max_channels, void (*log)(void *ctx, const char *text), void *log_ctx);
/* Waits for the puts on our channels (no callbacks), drops waiting ones, releases the channels. */
TCA_BTL_CORE_HIDDEN void tca_btl_dma_puts_free(tca_btl_dma_puts_t *q);
TCA_BTL_CORE_HIDDEN int tca_btl_dma_put_submit(tca_btl_dma_puts_t *q, const tca_btl_dma_put_t *put,
                                               tcaResult *err);
/* Reaps finished channels and starts waiting puts; done(ctx, put, result)
 * runs for each finished or failed one, without the queue's lock.  Returns how many. */
TCA_BTL_CORE_HIDDEN int
tca_btl_dma_puts_progress(tca_btl_dma_puts_t *q,
                          void (*done)(void *ctx, const tca_btl_dma_put_t *put, tcaResult r),
                          void *ctx);
/* Puts taken and not yet handed back (one atomic load: progress asks every pass; 0 for NULL). */
TCA_BTL_CORE_HIDDEN int tca_btl_dma_puts_busy(const tca_btl_dma_puts_t *q);

/* ---- emulated get: RDMA get on a put-only device, as a put request ----
 * The requester sends a request naming both registrations and a cookie; the
 * data owner checks it, runs the put and answers with the cookie.  On the
 * wire between processes of one host and build (no byte swapping). */
typedef struct tca_btl_get_request {
    uint64_t cookie;   /* the requester's pending get */
    uint64_t src_addr; /* in the owner's address space */
    uint64_t dst_addr; /* in the requester's address space */
    uint64_t size;
    tcaHandle src; /* the owner's registration */
    tcaHandle dst; /* the requester's registration */
} tca_btl_get_request_t;
typedef struct tca_btl_get_done {
    uint64_t cookie;
    int32_t status; /* the owner's result: 0 for success, else an (Open MPI) error code */
    int32_t reserved;
} tca_btl_get_done_t;
/* A small get of host memory, answered with the data inside the answer
 * (GET_DATA): only the owner's registration travels, one cache line with the
 * ring's header word. */
typedef struct tca_btl_get_small {
    uint64_t cookie;
    uint64_t src_addr; /* in the owner's address space */
    uint64_t size;
    uint64_t reg_key;   /* the owner's registration it names: key and table slot (the */
    uint32_t reg_index; /* owner looks the live one up: tcaHandleOfKey), node and type */
    uint16_t reg_node;
    uint8_t reg_region;
    uint8_t reserved;
} tca_btl_get_small_t;
/* The requester's gets in flight: owner records beside a cookie table. */
typedef struct tca_btl_gets tca_btl_gets_t;
enum {
    TCA_BTL_GET_OK,
    TCA_BTL_GET_BAD,       /* outside a registration, or the source is not the peer's */
    TCA_BTL_GET_FULL,      /* every record in use: try again later */
    TCA_BTL_GET_UNKNOWN,   /* an answer whose cookie names nothing of ours */
    TCA_BTL_GET_WRONG_PEER /* an answer from another peer than the one asked: the get failed */
};
TCA_BTL_CORE_HIDDEN tca_btl_gets_t *tca_btl_gets_new(uint32_t capacity);
TCA_BTL_CORE_HIDDEN void tca_btl_gets_free(tca_btl_gets_t *g);
/* Checks the get, records owner (len <= TCA_BTL_OWNER_BYTES) and fills req. */
TCA_BTL_CORE_HIDDEN int tca_btl_get_begin(tca_btl_gets_t *g, int peer_node, const void *owner,
                                          size_t len, const tcaHandle *src, uint64_t src_addr,
                                          const tcaHandle *dst, uint64_t dst_addr, uint64_t size,
                                          tca_btl_get_request_t *req);
/* The same for a small get of host memory (both registrations tcaMemoryCPU). */
TCA_BTL_CORE_HIDDEN int tca_btl_get_begin_small(tca_btl_gets_t *g, int peer_node, const void *owner,
                                                size_t len, const tcaHandle *src, uint64_t src_addr,
                                                const tcaHandle *dst, uint64_t dst_addr,
                                                uint64_t size, tca_btl_get_small_t *req);
/* The owner's check of a small get (or put): reg, the live registration its
 * slot and key name (tcaHandleOfKey), is its own host memory and holds it. */
TCA_BTL_CORE_HIDDEN int tca_btl_get_small_servable(const tca_btl_get_small_t *req,
                                                   const tcaHandle *reg, int self_node);
/* The request could not be sent: forget it. */
TCA_BTL_CORE_HIDDEN void tca_btl_get_cancel(tca_btl_gets_t *g, uint64_t cookie);
/* An answer from from_node: OK or WRONG_PEER with the owner record copied
 * out (TCA_BTL_OWNER_BYTES), or UNKNOWN with nothing. */
TCA_BTL_CORE_HIDDEN int tca_btl_get_finish(tca_btl_gets_t *g, const tca_btl_get_done_t *done,
                                           int from_node, void *owner);
TCA_BTL_CORE_HIDDEN int tca_btl_gets_pending(const tca_btl_gets_t *g);
/* The owner's check of a peer's request: only its own registrations, only
 * inside them, and only into the asking peer's memory. */
TCA_BTL_CORE_HIDDEN int tca_btl_get_request_servable(const tca_btl_get_request_t *req,
                                                     int self_node, int peer_node);

/* ---- remote atomics on a put-only device, as a request and an answer ----
 * The origin sends a request naming the target's registration and a cookie;
 * the target's progress checks it, runs it with the CPU's atomics on its own
 * memory (so it is atomic with the target's own CPU atomics too) and answers
 * with the old value.  Same wire rules as the emulated get. */
enum { /* the operation (Open MPI's btl.h codes are mapped by the glue) */
       TCA_BTL_ATOMIC_ADD = 1,
       TCA_BTL_ATOMIC_AND,
       TCA_BTL_ATOMIC_OR,
       TCA_BTL_ATOMIC_XOR,
       TCA_BTL_ATOMIC_SWAP,
       TCA_BTL_ATOMIC_MIN, /* signed */
       TCA_BTL_ATOMIC_MAX, /* signed */
       TCA_BTL_ATOMIC_CSWAP,
       TCA_BTL_ATOMIC_OPS_END
};
enum { TCA_BTL_ATOMIC_32BIT = 1 };      /* 32-bit operands (else 64-bit) */
typedef struct tca_btl_atomic_request { /* one cache line with the ring's header word */
    uint64_t cookie;                    /* the origin's pending atomic */
    uint64_t addr;                      /* in the target's address space, aligned to the operand */
    uint64_t operand;                   /* the value (CSWAP: the new value) */
    uint64_t compare;                   /* CSWAP only */
    uint64_t reg_key;   /* the target's registration it names: key and table slot (the */
    uint32_t reg_index; /* target looks the live one up: tcaHandleOfKey), node and type */
    uint16_t reg_node;
    uint8_t reg_region;
    uint8_t flags; /* TCA_BTL_ATOMIC_32BIT */
    uint32_t op;   /* TCA_BTL_ATOMIC_* */
} tca_btl_atomic_request_t;
typedef struct tca_btl_atomic_done {
    uint64_t cookie;
    uint64_t old;   /* the value before the operation (32-bit: in the low half) */
    int32_t status; /* 0, or an (Open MPI) error code from the target */
    int32_t reserved;
} tca_btl_atomic_done_t;
typedef struct tca_btl_atomics tca_btl_atomics_t;
TCA_BTL_CORE_HIDDEN tca_btl_atomics_t *tca_btl_atomics_new(uint32_t capacity);
TCA_BTL_CORE_HIDDEN void tca_btl_atomics_free(tca_btl_atomics_t *a);
/* Checks the operation (the target's node, the range, the alignment), records
 * owner (len <= TCA_BTL_OWNER_BYTES) and fills req: TCA_BTL_GET_OK, _BAD or _FULL. */
TCA_BTL_CORE_HIDDEN int tca_btl_atomic_begin(tca_btl_atomics_t *a, int peer_node, const void *owner,
                                             size_t len, const tcaHandle *target, uint64_t addr,
                                             uint32_t op, uint32_t flags, uint64_t operand,
                                             uint64_t compare, tca_btl_atomic_request_t *req);
TCA_BTL_CORE_HIDDEN void tca_btl_atomic_cancel(tca_btl_atomics_t *a, uint64_t cookie);
/* An answer from from_node: TCA_BTL_GET_OK or _WRONG_PEER with the owner
 * record copied out (TCA_BTL_OWNER_BYTES), or _UNKNOWN with nothing. */
TCA_BTL_CORE_HIDDEN int tca_btl_atomic_finish(tca_btl_atomics_t *a,
                                              const tca_btl_atomic_done_t *done, int from_node,
                                              void *owner);
TCA_BTL_CORE_HIDDEN int tca_btl_atomics_pending(const tca_btl_atomics_t *a);
/* The target: a peer's request on our own host memory (reg: the live
 * registration its slot and key name, tcaHandleOfKey; self_node's CPU memory
 * only, inside it, aligned, a known operation) is run and *old set:
 * TCA_BTL_GET_OK; anything else is refused untouched: TCA_BTL_GET_BAD. */
TCA_BTL_CORE_HIDDEN int tca_btl_atomic_run(const tca_btl_atomic_request_t *req,
                                           const tcaHandle *reg, int self_node, uint64_t *old);

/* ---- window registrations (window_registrations.hpp): host memory osc rdma
 * keeps registered until MPI_Win_free, not cached, ended at once when the
 * program gives the memory back ---- */
typedef struct tca_btl_windows tca_btl_windows_t;
TCA_BTL_CORE_HIDDEN tca_btl_windows_t *tca_btl_windows_new(uint32_t capacity);
TCA_BTL_CORE_HIDDEN void tca_btl_windows_free(tca_btl_windows_t *w);
/* tcaSuccess with *out and *slot, or the device's error (tcaErrorNoResource: all slots taken). */
TCA_BTL_CORE_HIDDEN int tca_btl_windows_add(tca_btl_windows_t *w, void *addr, size_t size,
                                            tcaHandle *out, uint32_t *slot);
TCA_BTL_CORE_HIDDEN void tca_btl_windows_remove(tca_btl_windows_t *w, uint32_t slot);
/* From the memory-release hook: [addr, addr + len) was given back. */
TCA_BTL_CORE_HIDDEN void tca_btl_windows_released(tca_btl_windows_t *w, uintptr_t addr, size_t len);
TCA_BTL_CORE_HIDDEN uint64_t tca_btl_windows_revoked(const tca_btl_windows_t *w);

/* ---- ob1's rendezvous protocol for a host message beyond the eager limit ---- */
typedef struct tca_btl_rendezvous {
    uint64_t size;                /* the message */
    uint64_t copy_max;            /* the largest that may go by ob1's copy protocol */
    int by_traffic;               /* btl_tca_rendezvous_choice traffic, and single copy pays */
    int32_t rendezvous_in_flight; /* our RDMA rendezvous to this peer not yet finished */
    int32_t queued;               /* descriptors waiting for room in the peer's ring */
    int same_buffer;              /* it starts where the previous one to this peer started */
} tca_btl_rendezvous_t;
/* 1: by RDMA (ob1's RGET: grant the registration), 0: by ob1's copy protocol
 * (refuse it).  Tells the peer when we start or stop streaming to it
 * (rendezvous_choice.hpp has the rules). */
TCA_BTL_CORE_HIDDEN int tca_btl_peer_rendezvous_by_rdma(tca_btl_peer_t *p,
                                                        const tca_btl_rendezvous_t *r);

/* ---- the data path by size, as one line for the verbose output ---- */
typedef struct tca_btl_path {
    uint64_t eager_limit; /* up to here: the rings */
    uint64_t copy_max;    /* up to here: ob1's copy protocol through the rings (UINT64_MAX: all) */
    uint64_t put_dma_min; /* puts from here on the DMA engine (0: none) */
    int get_for_host;     /* ob1 uses the emulated get (RGET) for host buffers */
    int lone_by_rdma;     /* up to copy_max, a lone message by RDMA (rendezvous_choice traffic) */
    int poll_by_traffic;
    int peers, poll_all_max_peers;
    const char *put_mechanism; /* the device's (tcaQueryBackend) */
} tca_btl_path_t;
/* Writes the line into text (truncated to size); returns its full length. */
TCA_BTL_CORE_HIDDEN size_t tca_btl_describe_path(const tca_btl_path_t *path, char *text,
                                                 size_t size);

/* ---- asynchronous progress: a client of the TCA session's one progress
 * thread (session/progress_engine.h); NULL when it could not join ---- */
typedef struct tca_btl_progress_thread tca_btl_progress_thread_t;
TCA_BTL_CORE_HIDDEN tca_btl_progress_thread_t *
tca_btl_progress_thread_start(int (*poll)(void *ctx), void (*announce_sleep)(void *ctx, int on),
                              int (*awaiting)(void *ctx), void *ctx, int check_interval_us,
                              int check_max_us, int max_sleep_us);
TCA_BTL_CORE_HIDDEN void tca_btl_progress_thread_note_app(tca_btl_progress_thread_t *t);
TCA_BTL_CORE_HIDDEN void tca_btl_progress_thread_stop(tca_btl_progress_thread_t *t);

#ifdef __cplusplus
}
#endif

#endif /* TCA_BTL_CORE_H */
