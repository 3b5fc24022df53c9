// registration_lookup.hpp - a node's live host registration found by address
// in its registration table (every process maps every node's segment), for
// tcaHandleOfAddress: a client that knows where it writes but holds a handle
// its owner may have replaced meanwhile gets the owner's current one.
#pragma once

#include <cstdint>

#include "loopback/segment_layout.hpp"
#include "model/result.hpp"
#include "tca.h"

namespace tca::loopback {

// The first live host-memory entry of `table` (node `node`'s) that covers
// [addr, addr + size), as a handle; tcaErrorNotRegistered if none does.
// Each entry is read between two loads of its key, so a handle never mixes
// two registrations of one slot.
Result find_host_registration(const RegistrationEntry *table, int node, uint64_t addr,
                              uint64_t size, tcaHandle *out) noexcept;

}  // namespace tca::loopback
