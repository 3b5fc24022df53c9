// peer_area.hpp - the layout of the block of internal memory every btl tca
// process publishes to its sub-cluster: per-peer control words, then one
// eager ring per possible sender.  Peers map it write-only (tcaPioMap).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "eager_ring.hpp"

namespace tca::btl {

// Words a peer writes into my area.  One cache line each, so two peers'
// stores never share a line.
struct alignas(64) PeerWords {
    std::atomic<uint64_t> consumed{0};  // how many of my messages that peer has consumed (credits)
    std::atomic<uint32_t> doorbell{0};  // that peer's progress thread sleeps: raise its interrupt after sending
};
static_assert(sizeof(PeerWords) == 64);

class AreaLayout {
public:
    AreaLayout(int nodes, RingGeometry g) noexcept : nodes_(nodes), geo_(g) {}

    size_t words_offset(int peer) const noexcept { return size_t(peer) * sizeof(PeerWords); }
    size_t ring_offset(int sender) const noexcept { return rings_base() + size_t(sender) * geo_.bytes(); }
    size_t bytes() const noexcept { return ring_offset(nodes_); }
    const RingGeometry &geometry() const noexcept { return geo_; }

private:
    size_t rings_base() const noexcept { return (size_t(nodes_) * sizeof(PeerWords) + 4095) / 4096 * 4096; }
    int nodes_;
    RingGeometry geo_;
};

// Everything one process needs to talk to one peer: the ring it writes into
// (in the peer's area), the ring it reads (in its own area), and the credit
// and doorbell words in both directions.
class PeerChannel {
public:
    PeerChannel(unsigned char *own_area, unsigned char *peer_area, const AreaLayout &layout, int self, int peer,
                bool peer_has_thread) noexcept
        : tx_(peer_area + layout.ring_offset(self), &words(own_area, layout, peer)->consumed, layout.geometry()),
          rx_(own_area + layout.ring_offset(peer), &words(peer_area, layout, self)->consumed, layout.geometry(),
              credit_batch(layout.geometry())),
          doorbell_wanted_(&words(own_area, layout, peer)->doorbell),
          my_doorbell_at_peer_(&words(peer_area, layout, self)->doorbell),
          peer_has_thread_(peer_has_thread) {}

    RingWriter &tx() noexcept { return tx_; }
    RingReader &rx() noexcept { return rx_; }

    // After a commit: must the peer's interrupt be raised?  Only a peer with a
    // progress thread ever asks; the fence pairs with announce_sleep's, so
    // either we see the request or the peer's re-poll sees our message.
    bool wants_interrupt() const noexcept {
        if (!peer_has_thread_) return false;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        return doorbell_wanted_->load(std::memory_order_relaxed) != 0;
    }
    // Tell the peer whether our progress thread sleeps (the caller fences once
    // after announcing to all peers, then re-polls).
    void announce_sleep(bool sleeping) noexcept {
        my_doorbell_at_peer_->store(sleeping ? 1u : 0u, std::memory_order_relaxed);
    }

    // Half a ring: the sender keeps the other half while credits travel.
    static uint32_t credit_batch(const RingGeometry &g) noexcept { return g.slots > 1 ? g.slots / 2 : 1; }

private:
    static PeerWords *words(unsigned char *area, const AreaLayout &l, int peer) noexcept {
        return reinterpret_cast<PeerWords *>(area + l.words_offset(peer));
    }

    RingWriter tx_;
    RingReader rx_;
    const std::atomic<uint32_t> *doorbell_wanted_;
    std::atomic<uint32_t> *my_doorbell_at_peer_;
    bool peer_has_thread_;
};

}  // namespace tca::btl
