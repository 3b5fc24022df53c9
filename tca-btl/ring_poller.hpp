// ring_poller.hpp - the receiving half of btl tca's progress: which rings to
// look at in a pass and how many messages to take from each.  With few peers
// it looks at every peer's ring; with many it reads its traffic line and
// polls only the marked rings, plus those a previous pass left unfinished
// (batch reached, or a peer that wrote before it was added).  One poller at a
// time (the glue's progress lock); peers are added at any time by another
// thread and published with release.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "peer_area.hpp"

namespace tca::btl {

class RingPoller {
public:
    RingPoller(unsigned char *own_area, int nodes, bool by_marks, uint32_t batch,
               RingGeometry g = {}) noexcept
        : own_area_(own_area), layout_(nodes, g), nodes_(nodes < kMaxPeers ? nodes : kMaxPeers),
          batch_(batch ? batch : 1) {
        // Only the traffic line's offset matters, and it depends on the node count alone.
        if (by_marks)
            marks_.emplace(own_area, AreaLayout(nodes, RingGeometry{}), nodes_);
    }

    // Bit n: node n is not added, yet its first message is in its ring (the
    // header word at the ring's start: a record's, or slot 0's with sequence 1).  Open MPI adds a process on another host only when
    // it first talks to it, so a receiver may hear from a sender it was never
    // told about; the caller adds it, and the next pass drains its ring.
    // (Needs the geometry given at construction.)
    uint64_t unknown_senders() const noexcept {
        uint64_t found = 0;
        // Every other node added (a pass of every poll once the job talked): nothing to look at.
        if (layout_.geometry().slots == 0 || added_.load(std::memory_order_acquire) >= nodes_ - 1)
            return 0;
        for (int n = 0; n < nodes_; ++n) {
            if (peers_[n].load(std::memory_order_acquire) != nullptr)
                continue;
            const auto *first = reinterpret_cast<const HeaderWord *>(
                own_area_ + layout_.ring_offset(n) + layout_.geometry().header_at());
            const uint64_t w = first->load(std::memory_order_acquire);
            if (layout_.geometry().packed() ? w != 0 : static_cast<uint32_t>(w) == 1)
                found |= uint64_t{1} << n;
        }
        return found;
    }

    bool by_marks() const noexcept { return marks_.has_value(); }

    void add(int node, PeerChannel *ch) noexcept {
        if (node < 0 || node >= nodes_)
            return;
        const PeerChannel *was = peers_[node].exchange(ch, std::memory_order_acq_rel);
        if ((was == nullptr) != (ch == nullptr))
            added_.fetch_add(ch != nullptr ? 1 : -1, std::memory_order_acq_rel);
    }

    // deliver(node, header, payload) for each arrived message, which is
    // released after deliver returns; how many were delivered.
    template <class Deliver>
    int poll(Deliver &&deliver) {
        int count = 0;
        if (!marks_) {
            for (int n = 0; n < nodes_; ++n)
                count += drain(n, deliver);
            return count;
        }
        uint64_t todo = marks_->take() | unfinished_;
        unfinished_ = 0;
        for (; todo != 0; todo &= todo - 1) {
            const int n = __builtin_ctzll(todo);
            const uint32_t got = drain(n, deliver);
            if (got == batch_ || peers_[n].load(std::memory_order_acquire) == nullptr)
                unfinished_ |= uint64_t{1} << n;
            count += static_cast<int>(got);
        }
        return count;
    }

private:
    template <class Deliver>
    uint32_t drain(int node, Deliver &deliver) {
        PeerChannel *ch = peers_[node].load(std::memory_order_acquire);
        if (ch == nullptr)
            return 0;
        uint32_t got = 0;
        MessageHeader h;
        const unsigned char *payload;
        while (got < batch_ && ch->rx().peek(&h, &payload)) {
            deliver(node, h, payload);
            ch->rx().release(h);
            ++got;
        }
        return got;
    }

    const unsigned char *own_area_;
    AreaLayout layout_;
    int nodes_;
    uint32_t batch_;
    std::optional<TrafficMarks> marks_;
    std::atomic<PeerChannel *> peers_[kMaxPeers] = {};
    std::atomic<int> added_{0};  // non-null entries of peers_
    uint64_t unfinished_ = 0;    // rings to poll next pass without a mark
};

}  // namespace tca::btl
