// bounce_mailbox.hpp - puts into another process's private host memory
// where single copy is refused or dear: the writer streams each row through
// its mailbox in the target's segment, and the target (its progress, or its
// DMA-engine thread) copies it out after checking the range against its own
// registrations.  Both sides are here: write() is the writer's, service() the
// target's.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "loopback/node_set.hpp"
#include "loopback/row_copy.hpp"
#include "model/result.hpp"
#include "tca.h"

namespace tca::loopback {

class BounceMailbox {
public:
    explicit BounceMailbox(NodeSet &nodes) : nodes_(nodes) {}
    // The rows written into node's memory at dst_addr (+ c.dst_off), dst
    // being the registration the target checks; waits for the target's copy
    // at most as long as `bound` allows (tcaErrorTimeout then; the bytes may
    // be partly there).
    Result write(int node, const tcaHandle &dst, uint64_t dst_addr, const RowCopy &c,
                 const PutBound &bound);
    // Target side: copy what the writers streamed so far out of every posted
    // mailbox into our memory (each in turn: no writer waits behind another's
    // whole row).
    bool service();
    // A peer's request waits in one of our mailboxes (two loads: for hot paths).
    bool pending() const noexcept {
        const std::atomic<uint64_t> *posted = nodes_.own_bounce_posted();
        return posted != nullptr && posted->load(std::memory_order_relaxed) != 0;
    }

private:
    Result bounce_row(int node, const tcaHandle &dst, uint64_t dst_addr, const unsigned char *src,
                      uint64_t len, bool src_on_gpu, const PutBound &bound);
    template <class Ready>
    Result wait_served(SegmentView target, Ready &&ready, int node, const PutBound &bound);
    // wait_until on a peer's work, ended early (tcaErrorTimeout) by `bound`.
    template <class Ready>
    Result wait_bounded(EventWord &ev, Ready &&ready, int node, const PutBound &bound);
    enum class Claim { None, Serving, Refused };  // Refused: answered with an error at once
    struct Serving;
    bool serve_mailbox(uint32_t src, Serving &s);
    Claim claim_bounce(BounceArea *b, Serving &s);
    void finish_bounce(BounceArea *b, Serving &s, Result status);

    NodeSet &nodes_;
    std::mutex service_lock_;
    // The bounce request of a peer we are copying out (service_lock_): a
    // snapshot of its checked fields and how far we got.
    struct Serving {
        uint64_t req = 0;  // 0: none
        uint64_t dst_addr = 0, len = 0, copied = 0;
        std::chrono::steady_clock::time_point look_at{};  // next check that the writer lives
    };
    std::array<Serving, TCA_MAX_NODES> serving_{};  // by source node (service_lock_)
};

}  // namespace tca::loopback
