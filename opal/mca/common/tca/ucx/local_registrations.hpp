// local_registrations.hpp - this node's registrations on the ucx device (as
// UCX's md keeps memory handles): the range, its key, the ucp_mem_map of
// host memory, and the nodes that were given its packed key (which a
// destroy or a free must have forget it).  Peers' writes land only inside
// one of these (landing), and their key requests are answered from here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "tca.h"
#include "ucx/ucp_transport.hpp"
#include "ucx/wire.hpp"

namespace tca::ucx {

struct Registration {
    uint64_t key = 0;
    uint64_t addr = 0;  // host memory: virtual address; internal memory: offset
    uint64_t size = 0;
    tcaMemoryType type = tcaMemoryCPU;
    std::unique_ptr<MemoryMap> map;  // host memory of size > 0
    uint64_t holders = 0;            // nodes given its key (bit n: node n)
};

class LocalRegistrations {
public:
    static constexpr size_t kMax = 1u << 16;

    // internal: where internal memory starts here (its handles hold offsets);
    // set once it is allocated, before the first registration.
    explicit LocalRegistrations(unsigned char *internal) : internal_(internal) {}
    void set_internal(unsigned char *internal) noexcept { internal_ = internal; }

    // A new registration of `reg` on node `self`: its handle's index and key.
    Result add(Registration reg, tcaHandle *h);
    // The registration a handle names, taken out (tcaDestroyHandle).
    Result take(const tcaHandle &h, Registration *out);
    // Every registration of `type` that starts inside [base, base + size),
    // taken out with its index (the memory is being freed).
    std::vector<std::pair<uint32_t, Registration>> take_range(uint64_t base, uint64_t size,
                                                              tcaMemoryType type);
    // Where one of ours starts locally (the source of a put), checked: the
    // handle's range must be the registration's.
    Result local(const tcaHandle &h, unsigned char **base) const;
    // The handle of the live registration in slot `index` with `key` (tcaHandleOfKey).
    Result handle_of(uint32_t index, uint64_t key, int self, tcaHandle *out) const;
    // A peer's write of `size` bytes at dst + off lands inside one of ours
    // only: `copy` runs on its address under the lock (a destroy cannot
    // unmap it meanwhile); tcaErrorNotRegistered where it would not land.
    Result land(const tcaHandle &dst, uint64_t off, uint64_t size,
                const std::function<void(unsigned char *)> &copy);
    // A peer's key request: fills the reply's status, packed key and
    // va_of_zero, and notes the peer as a holder before it has the key.
    void answer(const KeyRequestMsg &req, const MemoryMap *internal_map, KeyReplyMsg *reply);
    int count() const;
    void clear();

private:
    Result local_locked(const tcaHandle &h, unsigned char **base) const;

    unsigned char *internal_;
    mutable std::mutex lock_;  // a leaf: nothing else is taken under it
    std::map<uint32_t, Registration> regs_;
    uint64_t next_key_ = 0;  // first used: a random start
};

}  // namespace tca::ucx
