// registration_lookup.cpp - see registration_lookup.hpp.
#include "loopback/registration_lookup.hpp"

#include <atomic>

namespace tca::loopback {

namespace {

// Entry i as a handle, its fields read between two loads of its key (the
// owner zeroes the key before it reuses an entry): false if it is free or
// was reused meanwhile.
bool entry_handle(const RegistrationEntry &e, int node, uint32_t i, tcaHandle *out) noexcept {
    const uint64_t key = e.key.load(std::memory_order_acquire);
    if (key == 0)
        return false;
    tcaHandle h{};
    h.magic = TCA_HANDLE_MAGIC;
    h.node = static_cast<uint16_t>(node);
    h.region = static_cast<uint8_t>(e.region);
    h.reg_index = i;
    h.key = key;
    h.addr = e.base;
    h.size = e.size;
    h.global = e.global;
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e.key.load(std::memory_order_relaxed) != key)
        return false;
    *out = h;
    return true;
}

}  // namespace

Result find_host_registration(const RegistrationEntry *table, int node, uint64_t addr,
                              uint64_t size, tcaHandle *out) noexcept {
    if (size > UINT64_MAX - addr)
        return tcaErrorOutOfRange;
    tcaHandle h{};
    for (uint32_t i = 0; i < kMaxRegistrations; ++i) {
        if (table[i].key.load(std::memory_order_relaxed) == 0 ||
            !entry_handle(table[i], node, i, &h))
            continue;
        if (h.region != tcaMemoryCPU || addr < h.addr || addr - h.addr > h.size ||
            size > h.size - (addr - h.addr))
            continue;
        *out = h;
        return tcaSuccess;
    }
    return tcaErrorNotRegistered;
}

Result registration_of_key(const RegistrationEntry *table, int node, uint32_t index, uint64_t key,
                           tcaHandle *out) noexcept {
    tcaHandle h{};
    if (index >= kMaxRegistrations || key == 0 || !entry_handle(table[index], node, index, &h) ||
        h.key != key)
        return tcaErrorNotRegistered;
    *out = h;
    return tcaSuccess;
}

}  // namespace tca::loopback
