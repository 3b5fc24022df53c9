// tca_btl_core.cpp - the C entry points of the btl tca core.  Exceptions
// (allocation failure) never cross into Open MPI: they become NULL.
#include "tca_btl_core.h"

#include <new>

#include "base/build_info.hpp"
#include "peer_area.hpp"
#include "progress_client.hpp"
#include "rendezvous_choice.hpp"
#include "ring_poller.hpp"

using tca::btl::AreaLayout;
using tca::btl::MessageHeader;
using tca::btl::PeerChannel;
using tca::btl::ProgressClient;
using tca::btl::RemoteArea;
using tca::btl::RendezvousChooser;
using tca::btl::RingGeometry;
using tca::btl::RingPoller;

struct tca_btl_peer {
    PeerChannel ch;
    RendezvousChooser rendezvous;
    int node;
    // TCA_TIMING=virtual and a mapped ring: our stores bypass the device,
    // so each message is stamped through it before it becomes visible (a
    // ring written by PIO is stamped by the device's writes themselves).
    bool stamped;
    void stamp(uint32_t size) const noexcept {
        if (stamped)
            (void) tcaVirtualTimeMessage(node, size);
    }
};

namespace {
bool virtual_time() noexcept {
    int mode = 0;
    return tcaTimingEnabled(&mode) == tcaSuccess && mode == 2;
}
}  // namespace
struct tca_btl_poller {
    RingPoller poller;
};
struct tca_btl_progress_thread {
    tca_btl_progress_thread(tca::btl::ProgressHooks hooks, int check_us, int check_max_us,
                            int sleep_us)
        : thread(hooks, std::chrono::microseconds(check_us),
                 std::chrono::microseconds(check_max_us), std::chrono::microseconds(sleep_us)) {}
    ProgressClient thread;
};

extern "C" {

size_t tca_btl_area_bytes(int nodes, uint32_t slots, uint32_t max_payload) {
    return AreaLayout(nodes, RingGeometry::for_payload(slots, max_payload)).bytes();
}

int tca_btl_core_optimized(void) {
    return tca::kBuiltOptimized ? 1 : 0;
}

uint32_t tca_btl_slot_payload(uint32_t max_payload) {
    return RingGeometry::for_payload(1, max_payload).max_payload();
}

tca_btl_peer_t *tca_btl_peer_new(void *own_area, void *peer_area, const tcaHandle *peer_handle,
                                 int nodes, int self, int peer, uint32_t slots,
                                 uint32_t max_payload, int peer_has_thread,
                                 int peer_polls_by_traffic) {
    if (own_area == nullptr || (peer_area == nullptr && peer_handle == nullptr) ||
        !RingGeometry{slots, 64}.valid() || max_payload > tca::btl::kMaxRingPayload)
        return nullptr;
    const AreaLayout layout(nodes, RingGeometry::for_payload(slots, max_payload));
    const RemoteArea area = peer_area != nullptr
                                ? RemoteArea::mapped(static_cast<unsigned char *>(peer_area))
                                : RemoteArea::by_pio(*peer_handle);
    try {
        return new tca_btl_peer{PeerChannel(static_cast<unsigned char *>(own_area), area, layout,
                                            self, peer, peer_has_thread != 0,
                                            peer_polls_by_traffic != 0),
                                RendezvousChooser{}, peer, peer_area != nullptr && virtual_time()};
    } catch (const std::bad_alloc &) {
        return nullptr;
    }
}

void tca_btl_peer_free(tca_btl_peer_t *p) {
    delete p;
}

void *tca_btl_tx_reserve(tca_btl_peer_t *p, uint32_t max) {
    return p->ch.tx().reserve(max);
}

int tca_btl_tx_commit(tca_btl_peer_t *p, uint8_t tag, uint32_t size, tcaResult *err) {
    p->stamp(size);
    if (const tcaResult r = p->ch.commit(tag, size); r != tcaSuccess) {
        *err = r;
        return -1;
    }
    return p->ch.wants_interrupt() ? 1 : 0;
}

void *tca_btl_tx_hold(tca_btl_peer_t *p, uint32_t max, uint64_t *index) {
    return p->ch.tx().hold(max, index);
}

int tca_btl_tx_can_hold(const tca_btl_peer_t *p) {
    return p->ch.tx().can_hold() ? 1 : 0;
}

int tca_btl_tx_publish(tca_btl_peer_t *p, uint64_t index, uint8_t tag, uint32_t size) {
    // A mapped ring: the traffic mark is a plain store, it cannot fail.
    p->stamp(size);
    (void) p->ch.publish(index, tag, size);
    return p->ch.wants_interrupt() ? 1 : 0;
}

tca_btl_poller_t *tca_btl_poller_new(void *own_area, int nodes, int by_traffic, uint32_t batch,
                                     uint32_t slots, uint32_t max_payload, int written_by_pio) {
    if (own_area == nullptr || nodes < 1 || nodes > tca::btl::kMaxPeers || batch == 0 ||
        !RingGeometry{slots, 64}.valid())
        return nullptr;
    return new (std::nothrow) tca_btl_poller{
        RingPoller(static_cast<unsigned char *>(own_area), nodes, by_traffic != 0, batch,
                   RingGeometry::for_payload(slots, max_payload, written_by_pio != 0))};
}

uint64_t tca_btl_poller_unknown_senders(const tca_btl_poller_t *p) {
    return p->poller.unknown_senders();
}

void tca_btl_poller_free(tca_btl_poller_t *p) {
    delete p;
}

void tca_btl_poller_add(tca_btl_poller_t *p, int node, tca_btl_peer_t *peer) {
    p->poller.add(node, &peer->ch);
}

int tca_btl_poller_poll(tca_btl_poller_t *p, tca_btl_deliver_fn deliver, void *ctx) {
    return p->poller.poll([&](int node, const MessageHeader &h, const unsigned char *payload) {
        deliver(ctx, node, h.tag, payload, h.size);
    });
}

void tca_btl_peer_announce_sleep(tca_btl_peer_t *p, int sleeping) {
    p->ch.announce_sleep(sleeping != 0);
}

int tca_btl_peer_rendezvous_by_rdma(tca_btl_peer_t *p, const tca_btl_rendezvous_t *r) {
    const RendezvousChooser::Choice c = p->rendezvous.choose(*r, p->ch.peer_streams());
    if (c.announce != RendezvousChooser::Announce::kNothing)
        p->ch.announce_streaming(c.announce == RendezvousChooser::Announce::kStreaming);
    return c.rdma ? 1 : 0;
}

tca_btl_progress_thread_t *tca_btl_progress_thread_start(int (*poll)(void *),
                                                         void (*announce_sleep)(void *, int),
                                                         int (*awaiting)(void *), void *ctx,
                                                         int check_interval_us, int check_max_us,
                                                         int max_sleep_us) {
    try {
        return new tca_btl_progress_thread(
            tca::btl::ProgressHooks{poll, announce_sleep, ctx, awaiting}, check_interval_us,
            check_max_us, max_sleep_us);
    } catch (...) {  // std::bad_alloc: the session's progress thread could not take it
        return nullptr;
    }
}

void tca_btl_progress_thread_note_app(tca_btl_progress_thread_t *t) {
    t->thread.note_app_progress();
}

void tca_btl_progress_thread_stop(tca_btl_progress_thread_t *t) {
    delete t;
}

}  // extern "C"
