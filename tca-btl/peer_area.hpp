// peer_area.hpp - the layout of the block of internal memory every btl tca
// process publishes to its sub-cluster: per-peer control words, the traffic
// line, then one eager ring per possible sender.  Peers map it write-only
// (tcaPioMap), or write it by PIO where the device cannot map it (ucx).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "eager_ring.hpp"
#include "remote_area.hpp"

namespace tca::btl {

// Words a peer writes into my area.  One cache line each, so two peers'
// stores never share a line.
struct alignas(64) PeerWords {
    std::atomic<uint64_t> consumed{0};  // how many of my messages that peer has consumed (credits)
    std::atomic<uint32_t> doorbell{
        0};  // that peer's progress thread sleeps: raise its interrupt after sending
    std::atomic<uint32_t> streaming{0};  // that peer streams rendezvous messages to me
};
static_assert(sizeof(PeerWords) == 64);

inline constexpr int kMaxPeers = 64;  // TCA_MAX_NODES: one bit of a 64-bit mask per node

// Where senders mark "a message of mine is in your ring": one word per
// sender, plain stores of its message count (the device can neither read nor
// add remotely, and the receiver needs no atomic read-modify-write either: a
// mark is new when it differs from the one it saw last).  A receiver with
// many peers reads these lines and polls only the marked rings, instead of
// one ring header (one line) per peer every pass.  32 bits: between two looks
// a sender sends at most a ring plus a poll batch (< 2^17), so a count never
// comes back to the value last seen.
struct alignas(64) TrafficLine {
    std::atomic<uint32_t> from[kMaxPeers];
};
static_assert(sizeof(TrafficLine) == 4 * 64 && std::atomic<uint32_t>::is_always_lock_free);

class AreaLayout {
public:
    AreaLayout(int nodes, RingGeometry g) noexcept : nodes_(nodes), geo_(g) {}

    size_t words_offset(int peer) const noexcept { return size_t(peer) * sizeof(PeerWords); }
    size_t traffic_offset() const noexcept { return size_t(nodes_) * sizeof(PeerWords); }
    size_t ring_offset(int sender) const noexcept {
        return rings_base() + size_t(sender) * geo_.bytes();
    }
    size_t bytes() const noexcept { return ring_offset(nodes_); }
    const RingGeometry &geometry() const noexcept { return geo_; }

private:
    size_t rings_base() const noexcept {
        return (traffic_offset() + sizeof(TrafficLine) + 4095) / 4096 * 4096;
    }
    int nodes_;
    RingGeometry geo_;
};

// The receiver's side of the traffic line: which peers marked their ring
// since the last look.  A new mark read here (acquire) synchronises with the
// sender's store after its header word, so the marked ring shows that
// message; a later mark differs again and is seen at a later look.
class TrafficMarks {
public:
    TrafficMarks(unsigned char *own_area, const AreaLayout &layout, int nodes) noexcept
        : line_(reinterpret_cast<const TrafficLine *>(own_area + layout.traffic_offset())),
          nodes_(nodes < kMaxPeers ? nodes : kMaxPeers) {}

    // Bit n: node n marked its ring since the last call.
    uint64_t take() noexcept {
        uint64_t marked = 0;
        for (int n = 0; n < nodes_; ++n) {
            const uint32_t mark = line_->from[n].load(std::memory_order_acquire);
            if (mark != seen_[n]) {
                seen_[n] = mark;
                marked |= uint64_t{1} << n;
            }
        }
        return marked;
    }

private:
    const TrafficLine *line_;
    int nodes_;
    uint32_t seen_[kMaxPeers] = {};
};

// Everything one process needs to talk to one peer: the ring it writes into
// (in the peer's area), the ring it reads (in its own area), the credit and
// doorbell words in both directions, and our mark in the peer's traffic line
// when the peer polls by traffic.
class PeerChannel {
public:
    PeerChannel(unsigned char *own_area, const RemoteArea &peer_area, const AreaLayout &layout,
                int self, int peer, bool peer_has_thread, bool peer_polls_by_traffic = false)
        : tx_(peer_area, layout.ring_offset(self), &words(own_area, layout, peer)->consumed,
              ring_geometry(layout, peer_area)),
          rx_(own_area + layout.ring_offset(peer), peer_area,
              layout.words_offset(self) + offsetof(PeerWords, consumed),
              ring_geometry(layout, peer_area)),
          peer_(peer_area), doorbell_wanted_(&words(own_area, layout, peer)->doorbell),
          my_doorbell_at_peer_(layout.words_offset(self) + offsetof(PeerWords, doorbell)),
          peer_streaming_(&words(own_area, layout, peer)->streaming),
          my_streaming_at_peer_(layout.words_offset(self) + offsetof(PeerWords, streaming)),
          my_mark_at_peer_(layout.traffic_offset() + offsetof(TrafficLine, from) +
                           size_t(self) * sizeof(uint32_t)),
          peer_polls_by_traffic_(peer_polls_by_traffic), peer_has_thread_(peer_has_thread) {}
    // The peer's area mapped at `peer_area`.
    PeerChannel(unsigned char *own_area, unsigned char *peer_area, const AreaLayout &layout,
                int self, int peer, bool peer_has_thread, bool peer_polls_by_traffic = false)
        : PeerChannel(own_area, RemoteArea::mapped(peer_area), layout, self, peer, peer_has_thread,
                      peer_polls_by_traffic) {}

    RingWriter &tx() noexcept { return tx_; }
    const RingWriter &tx() const noexcept { return tx_; }
    RingReader &rx() noexcept { return rx_; }

    // Publish the reserved slot, then mark our ring in the peer's traffic
    // line with our message count (after the header word: a receiver that
    // sees the new mark sees the message).
    tcaResult commit(uint8_t tag, uint32_t size) noexcept {
        if (tcaResult r = tx_.commit(tag, size); r != tcaSuccess)
            return r;
        return mark();
    }
    // The same for a slot taken by tx().hold().
    tcaResult publish(uint64_t index, uint8_t tag, uint32_t size) noexcept {
        tx_.publish(index, tag, size);
        return mark();
    }

    // After a commit: must the peer's interrupt be raised?  Only a peer with a
    // progress thread ever asks; the fence pairs with announce_sleep's, so
    // either we see the request or the peer's re-poll sees our message.
    // Written by PIO, neither store is visible at once (it lands when the
    // peer's device takes it), so that handshake cannot work: such a peer's
    // interrupt is raised after every message.
    bool wants_interrupt() const noexcept {
        if (!peer_has_thread_)
            return false;
        if (!peer_.is_mapped())
            return true;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        return doorbell_wanted_->load(std::memory_order_relaxed) != 0;
    }
    // Tell the peer whether our progress thread sleeps (the caller fences once
    // after announcing to all peers, then re-polls).
    void announce_sleep(bool sleeping) noexcept {
        if (peer_.is_mapped())
            (void) peer_.store<uint32_t>(my_doorbell_at_peer_, sleeping ? 1u : 0u);
    }

    // Whether the peer told us it streams rendezvous messages to us, and
    // telling it the same of us (rendezvous_choice.hpp): a hint, so relaxed.
    bool peer_streams() const noexcept {
        return peer_streaming_->load(std::memory_order_relaxed) != 0;
    }
    void announce_streaming(bool streaming) noexcept {
        (void) peer_.store<uint32_t>(my_streaming_at_peer_, streaming ? 1u : 0u);
    }

private:
    tcaResult mark() noexcept {
        if (!peer_polls_by_traffic_)
            return tcaSuccess;
        return peer_.store<uint32_t>(my_mark_at_peer_, static_cast<uint32_t>(tx_.published()));
    }
    // A device that cannot map the peer's area cannot map ours either: both
    // rings are written by PIO, their slots ending with the header.
    static RingGeometry ring_geometry(const AreaLayout &l, const RemoteArea &peer) noexcept {
        RingGeometry g = l.geometry();
        g.header_last = !peer.is_mapped();
        return g;
    }
    static PeerWords *words(unsigned char *area, const AreaLayout &l, int peer) noexcept {
        return reinterpret_cast<PeerWords *>(area + l.words_offset(peer));
    }

    RingWriter tx_;
    RingReader rx_;
    RemoteArea peer_;
    const std::atomic<uint32_t> *doorbell_wanted_;
    size_t my_doorbell_at_peer_;  // offsets in the peer's area
    const std::atomic<uint32_t> *peer_streaming_;
    size_t my_streaming_at_peer_;
    size_t my_mark_at_peer_;
    bool peer_polls_by_traffic_;
    bool peer_has_thread_;
};

}  // namespace tca::btl
