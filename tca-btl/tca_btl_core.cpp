// tca_btl_core.cpp - the C entry points of the btl tca core.  Exceptions
// (allocation failure) never cross into Open MPI: they become NULL.
#include "tca_btl_core.h"

#include <new>

#include "peer_area.hpp"
#include "progress_thread.hpp"

using tca::btl::AreaLayout;
using tca::btl::MessageHeader;
using tca::btl::PeerChannel;
using tca::btl::ProgressThread;
using tca::btl::RingGeometry;
using tca::btl::TrafficMarks;

struct tca_btl_peer {
    PeerChannel ch;
};
struct tca_btl_traffic {
    TrafficMarks marks;
};
struct tca_btl_progress_thread {
    tca_btl_progress_thread(tca::btl::ProgressHooks hooks, int check_us, int check_max_us, int sleep_us)
        : thread(hooks, std::chrono::microseconds(check_us), std::chrono::microseconds(check_max_us),
                 std::chrono::microseconds(sleep_us)) {}
    ProgressThread thread;
};

extern "C" {

size_t tca_btl_area_bytes(int nodes, uint32_t slots, uint32_t max_payload) {
    return AreaLayout(nodes, RingGeometry::for_payload(slots, max_payload)).bytes();
}

uint32_t tca_btl_slot_payload(uint32_t max_payload) {
    return RingGeometry::for_payload(1, max_payload).max_payload();
}

tca_btl_peer_t *tca_btl_peer_new(void *own_area, void *peer_area, int nodes, int self, int peer, uint32_t slots,
                                 uint32_t max_payload, int peer_has_thread, int peer_polls_by_traffic) {
    if (own_area == nullptr || peer_area == nullptr || !RingGeometry{slots, 64}.valid() ||
        max_payload > tca::btl::kMaxRingPayload)
        return nullptr;
    const AreaLayout layout(nodes, RingGeometry::for_payload(slots, max_payload));
    return new (std::nothrow) tca_btl_peer{PeerChannel(static_cast<unsigned char *>(own_area),
                                                       static_cast<unsigned char *>(peer_area), layout, self, peer,
                                                       peer_has_thread != 0, peer_polls_by_traffic != 0)};
}

void tca_btl_peer_free(tca_btl_peer_t *p) { delete p; }

void *tca_btl_tx_reserve(tca_btl_peer_t *p) { return p->ch.tx().reserve(); }

int tca_btl_tx_commit(tca_btl_peer_t *p, uint8_t tag, uint32_t size) {
    p->ch.commit(tag, size);
    return p->ch.wants_interrupt() ? 1 : 0;
}

int tca_btl_rx_peek(tca_btl_peer_t *p, uint8_t *tag, uint32_t *size, const void **payload) {
    MessageHeader h;
    const unsigned char *data = nullptr;
    if (!p->ch.rx().peek(&h, &data)) return 0;
    *tag = h.tag;
    *size = h.size;
    *payload = data;
    return 1;
}

void tca_btl_rx_release(tca_btl_peer_t *p) { p->ch.rx().release(); }

tca_btl_traffic_t *tca_btl_traffic_new(void *own_area, int nodes) {
    if (own_area == nullptr || nodes < 1 || nodes > tca::btl::kMaxPeers) return nullptr;
    // Only the traffic line's offset matters, and it depends on the node count alone.
    return new (std::nothrow) tca_btl_traffic{
        TrafficMarks(static_cast<unsigned char *>(own_area), AreaLayout(nodes, RingGeometry{}), nodes)};
}

uint64_t tca_btl_traffic_take(tca_btl_traffic_t *t) { return t->marks.take(); }

void tca_btl_traffic_free(tca_btl_traffic_t *t) { delete t; }

void tca_btl_peer_announce_sleep(tca_btl_peer_t *p, int sleeping) { p->ch.announce_sleep(sleeping != 0); }

tca_btl_progress_thread_t *tca_btl_progress_thread_start(int (*poll)(void *), void (*announce_sleep)(void *, int),
                                                         void *ctx, int check_interval_us, int check_max_us,
                                                         int max_sleep_us) {
    try {
        return new tca_btl_progress_thread(tca::btl::ProgressHooks{poll, announce_sleep, ctx}, check_interval_us,
                                           check_max_us, max_sleep_us);
    } catch (...) {  // std::bad_alloc: the session's progress thread could not take it
        return nullptr;
    }
}

void tca_btl_progress_thread_note_app(tca_btl_progress_thread_t *t) { t->thread.note_app_progress(); }

void tca_btl_progress_thread_stop(tca_btl_progress_thread_t *t) { delete t; }

}  // extern "C"
