// pending_gets.hpp - the requester's side of emulated gets: each get in
// flight keeps its owner record (what the glue needs to complete it) beside a
// CookieTable entry, so the answer's cookie, a value from a peer, is only ever
// checked against the table, never turned into a pointer.  Lock-free and
// allocation free once built.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "cookie_table.hpp"
#include "tca_btl_core.h"

namespace tca::btl {

class PendingGets {
public:
    explicit PendingGets(uint32_t capacity);

    // TCA_BTL_GET_OK (req filled, owner kept), _BAD or _FULL.
    int begin(int peer_node, const void *owner, size_t len, const tcaHandle &src, uint64_t src_addr,
              const tcaHandle &dst, uint64_t dst_addr, uint64_t size,
              tca_btl_get_request_t *req) noexcept;
    void cancel(uint64_t cookie) noexcept;
    // TCA_BTL_GET_OK or _WRONG_PEER (owner copied out), or _UNKNOWN.
    int finish(const tca_btl_get_done_t &done, int from_node, void *owner) noexcept;
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

// An [addr, addr + size) inside the registration h.
bool inside(const tcaHandle &h, uint64_t addr, uint64_t size) noexcept;

}  // namespace tca::btl
