/*
 * tca_btl_core.h - the C interface between the Open MPI glue of btl tca
 * (opal/mca/btl/tca, C) and its protocol core (this directory, C++).
 * Everything here is MPI-free and unit-tested on its own.
 */
#ifndef TCA_BTL_CORE_H
#define TCA_BTL_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TCA_BTL_CORE_HIDDEN __attribute__((visibility("hidden")))

/* ---- the published area: control words + one eager ring per sender ---- */
TCA_BTL_CORE_HIDDEN size_t tca_btl_area_bytes(int nodes, uint32_t slots, uint32_t max_payload);
/* Largest payload a slot holds for this max_payload (rounded up to the slot stride). */
TCA_BTL_CORE_HIDDEN uint32_t tca_btl_slot_payload(uint32_t max_payload);

/* ---- one peer: tx ring (in the peer's area) and rx ring (in ours) ---- */
typedef struct tca_btl_peer tca_btl_peer_t;

/* own_area: our area (local); peer_area: the peer's area, mapped write-only. */
TCA_BTL_CORE_HIDDEN tca_btl_peer_t *tca_btl_peer_new(void *own_area, void *peer_area, int nodes, int self, int peer,
                                                     uint32_t slots, uint32_t max_payload, int peer_has_thread);
TCA_BTL_CORE_HIDDEN void tca_btl_peer_free(tca_btl_peer_t *p);

/* Payload area of the next slot in the peer's ring, or NULL while it is full. */
TCA_BTL_CORE_HIDDEN void *tca_btl_tx_reserve(tca_btl_peer_t *p);
/* Publish the reserved slot (header word last).  Returns 1 when the peer
 * asked for an interrupt after each message (its progress thread sleeps). */
TCA_BTL_CORE_HIDDEN int tca_btl_tx_commit(tca_btl_peer_t *p, uint8_t tag, uint32_t size);

/* Next arrived message from this peer: 1 and its tag/size/payload, or 0. */
TCA_BTL_CORE_HIDDEN int tca_btl_rx_peek(tca_btl_peer_t *p, uint8_t *tag, uint32_t *size, const void **payload);
/* Done with the peeked message; credits go back lazily. */
TCA_BTL_CORE_HIDDEN void tca_btl_rx_release(tca_btl_peer_t *p);

/* Our progress thread sleeps (1) or not (0): ask this peer for doorbells. */
TCA_BTL_CORE_HIDDEN void tca_btl_peer_announce_sleep(tca_btl_peer_t *p, int sleeping);

/* ---- cookies: what a peer sends back to name our pending operation ---- */
/* Checked against a table (cookie_table.hpp), never turned into a pointer:
 * a cookie not handed out, already answered or forged names nothing. */
typedef struct tca_btl_cookies tca_btl_cookies_t;
TCA_BTL_CORE_HIDDEN tca_btl_cookies_t *tca_btl_cookies_new(uint32_t capacity);
TCA_BTL_CORE_HIDDEN void tca_btl_cookies_free(tca_btl_cookies_t *t);
/* 1 and *cookie naming value until taken; 0 while every entry is in use. */
TCA_BTL_CORE_HIDDEN int tca_btl_cookie_put(tca_btl_cookies_t *t, void *value, uint64_t *cookie);
/* The value the cookie names, once; NULL for anything else. */
TCA_BTL_CORE_HIDDEN void *tca_btl_cookie_take(tca_btl_cookies_t *t, uint64_t cookie);

/* ---- the progress thread ---- */
typedef struct tca_btl_progress_thread tca_btl_progress_thread_t;
TCA_BTL_CORE_HIDDEN tca_btl_progress_thread_t *tca_btl_progress_thread_start(int (*poll)(void *ctx),
                                                                             void (*announce_sleep)(void *ctx,
                                                                                                    int on),
                                                                             void *ctx, int check_interval_us,
                                                                             int check_max_us, int max_sleep_us);
TCA_BTL_CORE_HIDDEN void tca_btl_progress_thread_note_app(tca_btl_progress_thread_t *t);
TCA_BTL_CORE_HIDDEN void tca_btl_progress_thread_stop(tca_btl_progress_thread_t *t);

#ifdef __cplusplus
}
#endif

#endif /* TCA_BTL_CORE_H */
