// pending_gets.hpp - the requester's side of emulated gets: the checks of a
// get before it goes out, and its record until the answer (PendingOps).
#pragma once

#include <cstdint>

#include "pending_ops.hpp"
#include "tca_btl_core.h"

namespace tca::btl {

class PendingGets {
public:
    explicit PendingGets(uint32_t capacity);

    // TCA_BTL_GET_OK (req filled, owner kept), _BAD or _FULL.
    int begin(int peer_node, const void *owner, size_t len, const tcaHandle &src, uint64_t src_addr,
              const tcaHandle &dst, uint64_t dst_addr, uint64_t size,
              tca_btl_get_request_t *req) noexcept;
    // A small get of host memory (tca_btl_get_small_t); the same codes.
    int begin_small(int peer_node, const void *owner, size_t len, const tcaHandle &src,
                    uint64_t src_addr, const tcaHandle &dst, uint64_t dst_addr, uint64_t size,
                    tca_btl_get_small_t *req) noexcept;
    void cancel(uint64_t cookie) noexcept;
    // TCA_BTL_GET_OK or _WRONG_PEER (owner copied out), or _UNKNOWN.
    int finish(const tca_btl_get_done_t &done, int from_node, void *owner) noexcept;
    int pending() const noexcept { return ops_.pending(); }

private:
    PendingOps ops_;
};

}  // namespace tca::btl
