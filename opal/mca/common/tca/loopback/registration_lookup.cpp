// registration_lookup.cpp - see registration_lookup.hpp.
#include "loopback/registration_lookup.hpp"

#include <atomic>

namespace tca::loopback {

Result find_host_registration(const RegistrationEntry *table, int node, uint64_t addr,
                              uint64_t size, tcaHandle *out) noexcept {
    if (size > UINT64_MAX - addr)
        return tcaErrorOutOfRange;
    for (uint32_t i = 0; i < kMaxRegistrations; ++i) {
        const RegistrationEntry &e = table[i];
        const uint64_t key = e.key.load(std::memory_order_acquire);
        if (key == 0 || e.region != static_cast<uint32_t>(tcaMemoryCPU))
            continue;
        const uint64_t base = e.base, length = e.size, global = e.global;
        std::atomic_thread_fence(std::memory_order_acquire);
        if (e.key.load(std::memory_order_relaxed) != key)
            continue;  // reused while we read it
        if (addr < base || addr - base > length || size > length - (addr - base))
            continue;
        tcaHandle h{};
        h.magic = TCA_HANDLE_MAGIC;
        h.node = static_cast<uint16_t>(node);
        h.region = static_cast<uint8_t>(tcaMemoryCPU);
        h.reg_index = i;
        h.key = key;
        h.addr = base;
        h.size = length;
        h.global = global;
        *out = h;
        return tcaSuccess;
    }
    return tcaErrorNotRegistered;
}

}  // namespace tca::loopback
