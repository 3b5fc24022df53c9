// remote_atomics.hpp - BTL atomics on a put-only device: the device cannot
// read, let alone lock, remote memory, so the origin sends a request and the
// target's progress runs it with the CPU's atomics on its own memory
// (std::atomic_ref): atomic against every other request and against the
// target's own CPU atomics (osc rdma's MCA_BTL_ATOMIC_SUPPORTS_GLOB), on every
// device and path, never a read-modify-write of copies.
#pragma once

#include <cstdint>

#include "pending_ops.hpp"
#include "tca_btl_core.h"

namespace tca::btl {

// The target's side, on reg, the live registration the request's slot and
// key name (the caller looks it up: tcaHandleOfKey): false (nothing touched)
// for a request that is not on self_node's host memory, not inside the
// registration, misaligned, or of an unknown operation.
bool run_atomic(const tca_btl_atomic_request_t &req, const tcaHandle &reg, int self_node,
                uint64_t *old) noexcept;

// The origin's side: checks, then a record until the answer.
class PendingAtomics {
public:
    explicit PendingAtomics(uint32_t capacity) : ops_(capacity) {}
    // TCA_BTL_GET_OK (req filled, owner kept), _BAD or _FULL.
    int begin(int peer_node, const void *owner, size_t len, const tcaHandle &target, uint64_t addr,
              uint32_t op, uint32_t flags, uint64_t operand, uint64_t compare,
              tca_btl_atomic_request_t *req) noexcept;
    void cancel(uint64_t cookie) noexcept { ops_.cancel(cookie); }
    // TCA_BTL_GET_OK or _WRONG_PEER (owner copied out), or _UNKNOWN.
    int finish(const tca_btl_atomic_done_t &done, int from_node, void *owner) noexcept;
    int pending() const noexcept { return ops_.pending(); }

private:
    PendingOps ops_;
};

}  // namespace tca::btl
