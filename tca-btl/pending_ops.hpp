// pending_ops.hpp - our operations a peer answers (emulated gets, remote
// atomics): each one in flight keeps its owner record (what the glue needs to
// complete it) and the peer asked beside a CookieTable entry, so the answer's
// cookie, a value from a peer, is only ever checked against the table, never
// turned into a pointer.  Lock-free and allocation free once built.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "cookie_table.hpp"
#include "tca_btl_core.h"

namespace tca::btl {

class PendingOps {
public:
    enum class Answer { kOk, kWrongPeer, kUnknown };

    explicit PendingOps(uint32_t capacity);

    // Keeps owner (len <= TCA_BTL_OWNER_BYTES) for an operation on peer_node;
    // false while every record is in use (or len is too long).
    bool begin(int peer_node, const void *owner, size_t len, uint64_t *cookie) noexcept;
    // The request could not be sent: forget it.
    void cancel(uint64_t cookie) noexcept;
    // An answer from from_node: kOk or kWrongPeer (asked of another peer: the
    // operation failed) with the owner record copied out, or kUnknown.
    Answer finish(uint64_t cookie, int from_node, void *owner) noexcept;
    int pending() const noexcept { return pending_.load(std::memory_order_relaxed); }

private:
    struct Record {
        int node;  // the peer asked
        unsigned char owner[TCA_BTL_OWNER_BYTES];
    };
    CookieTable table_;
    std::unique_ptr<Record[]> records_;  // by table index
    std::atomic<int> pending_{0};
};

// An answer's outcome as the C interface's code: TCA_BTL_GET_OK, _WRONG_PEER
// (run by another peer than asked: failed) or _UNKNOWN.
int answer_code(PendingOps::Answer a) noexcept;

// An [addr, addr + size) inside the registration h.
bool inside(const tcaHandle &h, uint64_t addr, uint64_t size) noexcept;

}  // namespace tca::btl
