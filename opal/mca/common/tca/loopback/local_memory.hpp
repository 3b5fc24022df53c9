// local_memory.hpp - the memory of this process's node: tcaMalloc's three
// kinds (host memory from the shared heap, or private where that is full;
// GPU memory; the node's internal memory) and the registration table peers
// check every put against (keys, global addresses, arena locations).
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/env_settings.hpp"
#include "base/internal_heap.hpp"
#include "device.hpp"
#include "loopback/node_set.hpp"
#include "loopback/shared_heap.hpp"
#include "model/topology.hpp"
#include "tca.h"

namespace tca::loopback {

class LocalMemory {
public:
    // nodes: this node's segment must exist before the first allocation.
    LocalMemory(NodeSet &nodes, const Topology &topo, const DeviceSettings &settings);

    uint64_t internal_size() const noexcept { return heap_.size(); }
    // Size 0 is valid (programs with zero shadow widths allocate it): a
    // distinct pointer of at least one byte, freed as any other.
    Result allocate(void **ptr, size_t size, tcaMemoryType type);
    // Ends every registration inside the memory first: a peer's later put
    // fails (tcaErrorNotRegistered) instead of landing in reused memory.
    Result release(void *ptr, tcaMemoryType type);
    // Size 0 gives a valid handle of 0 bytes: 0-byte descriptors on it are
    // no-ops, anything else is out of range.
    Result register_memory(void *addr, size_t size, tcaMemoryType type, tcaHandle *out);
    // A checked handle of this node's (the device checks it); key: the
    // handle's (tcaErrorNotRegistered if the entry has ended meanwhile).
    Result deregister(uint32_t reg_index, uint64_t key) noexcept;
    bool uses_shared_heap() const noexcept { return use_shared_heap_; }
    // Heaps and registrations in use, for tcaQueryDevice / tcaQueryBackend.
    void describe(DeviceInfo *i) const;
    // The shared heap's names go; memory the application still holds stays mapped.
    void shutdown() { shared_heap_.shutdown(); }

private:
    void drop_registrations(uint64_t base, uint64_t size, tcaMemoryType type);

    NodeSet &nodes_;
    const Topology &topo_;
    InternalHeap heap_;
    SharedHeap shared_heap_;
    bool use_shared_heap_;

    mutable std::mutex reg_lock_;
    std::vector<uint32_t> free_regs_;
    uint64_t next_key_ = 1;
    uint64_t global_next_[4] = {};

    std::mutex alloc_lock_;
    std::unordered_map<void *, size_t> host_allocs_;
    std::unordered_map<void *, size_t> gpu_allocs_;
};

}  // namespace tca::loopback
