// registration_lookup.hpp - a node's live registration found in its
// registration table (every process maps every node's segment): by address
// (tcaHandleOfAddress: a client that knows where it writes but holds a handle
// its owner may have replaced meanwhile gets the owner's current one), or by
// table slot and key (tcaHandleOfKey: a request names a registration in 12
// bytes, and its owner checks that it still lives).
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
// The live entry `index` of `table` if it has `key`, as a handle;
// tcaErrorNotRegistered otherwise (GPU memory: without its IPC handle).
Result registration_of_key(const RegistrationEntry *table, int node, uint32_t index, uint64_t key,
                           tcaHandle *out) noexcept;

}  // namespace tca::loopback
