// local_memory.cpp - see local_memory.hpp.
#include "loopback/local_memory.hpp"

#include <algorithm>
#include <cstdlib>
#include <random>

#include "gpu/cuda_runtime.hpp"

namespace tca::loopback {

namespace {
// Bytes a host allocation occupies (whole pages); 0 if size cannot be rounded.
size_t page_rounded(size_t size) noexcept {
    return size > SIZE_MAX - 4095 ? 0 : (size + 4095) / 4096 * 4096;
}
}  // namespace

LocalMemory::LocalMemory(NodeSet &nodes, const Topology &topo, const DeviceSettings &settings)
    : nodes_(nodes), topo_(topo), heap_(settings.internal_size), shared_heap_(nodes),
      use_shared_heap_(settings.shared_heap) {
    std::random_device rd;
    next_key_ = (static_cast<uint64_t>(rd()) << 32 | rd()) | 1;
    for (uint32_t i = kMaxRegistrations; i-- > 0;)
        free_regs_.push_back(i);
}

// Size 0 is valid (programs with zero shadow widths allocate it): a
// distinct pointer of at least one byte, freed as any other.
Result LocalMemory::allocate(void **ptr, size_t size, tcaMemoryType type) {
    if (ptr == nullptr)
        return tcaErrorInvalidValue;
    *ptr = nullptr;
    switch (type) {
    case tcaMemoryCPU: {
        if (use_shared_heap_ && shared_heap_.allocate(size, ptr) == tcaSuccess)
            return tcaSuccess;
        // No shared memory left (/dev/shm full, every arena slot taken):
        // private memory, which peers reach by process_vm_writev.
        const size_t rounded = page_rounded(std::max<size_t>(size, 1));
        if (rounded == 0)
            return tcaErrorNoMemory;  // near SIZE_MAX: would wrap to 0 bytes
        void *p = std::aligned_alloc(4096, rounded);
        if (p == nullptr)
            return tcaErrorNoMemory;
        std::lock_guard g(alloc_lock_);
        host_allocs_[p] = size;
        *ptr = p;
        return tcaSuccess;
    }
    case tcaMemoryGPU: {
        void *p = nullptr;
        if (Result r = gpu::CudaRuntime::instance().allocate(&p, std::max<size_t>(size, 1));
            r != tcaSuccess)
            return r;
        std::lock_guard g(alloc_lock_);
        gpu_allocs_[p] = size;
        *ptr = p;
        return tcaSuccess;
    }
    case tcaMemoryInternal:
        *ptr = heap_.allocate_at(nodes_.own().internal(), size);
        return *ptr != nullptr ? tcaSuccess : tcaErrorNoMemory;
    }
    return tcaErrorInvalidValue;
}

Result LocalMemory::release(void *ptr, tcaMemoryType type) {
    if (ptr == nullptr)
        return tcaErrorInvalidValue;
    switch (type) {
    case tcaMemoryCPU:
        // Registrations end before the memory can be reused: a peer's
        // later put fails (tcaErrorNotRegistered) instead of landing in it.
        if (const auto length = shared_heap_.block_length(ptr)) {
            drop_registrations(reinterpret_cast<uint64_t>(ptr), *length, type);
            return shared_heap_.release(ptr) ? tcaSuccess : tcaErrorInvalidValue;
        }
        [[fallthrough]];
    case tcaMemoryGPU: {
        size_t size = 0;
        {
            std::lock_guard g(alloc_lock_);
            auto &map = type == tcaMemoryCPU ? host_allocs_ : gpu_allocs_;
            auto it = map.find(ptr);
            if (it == map.end())
                return tcaErrorInvalidValue;
            size = it->second;
            map.erase(it);
        }
        drop_registrations(reinterpret_cast<uint64_t>(ptr), std::max<size_t>(size, 1), type);
        if (type == tcaMemoryCPU) {
            std::free(ptr);
            return tcaSuccess;
        }
        return gpu::CudaRuntime::instance().release(ptr);
    }
    case tcaMemoryInternal: {
        const auto freed = heap_.release_at(nodes_.own().internal(), ptr);
        if (!freed)
            return tcaErrorInvalidValue;
        drop_registrations(freed->offset, freed->length, type);
        return tcaSuccess;
    }
    }
    return tcaErrorInvalidValue;
}

// Size 0 gives a valid handle of 0 bytes: 0-byte descriptors on it are
// no-ops, anything else is out of range.
Result LocalMemory::register_memory(void *addr, size_t size, tcaMemoryType type, tcaHandle *out) {
    if (out == nullptr || addr == nullptr)
        return tcaErrorInvalidValue;
    uint32_t arena = 0;
    uint64_t arena_off = 0, arena_serial = 0;
    tcaHandle h{};
    h.magic = TCA_HANDLE_MAGIC;
    h.node = static_cast<uint16_t>(nodes_.self());
    h.region = static_cast<uint8_t>(type);
    h.size = size;
    Region region = Region::Host;
    switch (type) {
    case tcaMemoryCPU:
        h.addr = reinterpret_cast<uint64_t>(addr);
        // [addr, addr + size) must not wrap around the address space.
        if (size > UINT64_MAX - h.addr)
            return tcaErrorOutOfRange;
        // Inside one tcaMalloc'd block (an interior pointer too): peers
        // write it with plain stores into their mapping of the arena.
        if (const auto loc = shared_heap_.locate(h.addr, size)) {
            arena = loc->slot + 1;
            arena_off = loc->offset;
            arena_serial = loc->serial;
        }
        break;
    case tcaMemoryInternal: {
        const auto off = heap_.offset_of(nodes_.own().internal(), addr, size);
        if (!off)
            return tcaErrorOutOfRange;
        h.addr = *off;
        region = Region::Internal;
        break;
    }
    case tcaMemoryGPU: {
        auto &cuda = gpu::CudaRuntime::instance();
        if (!cuda.available())
            return tcaErrorNotSupported;
        // IPC handles name whole allocations, and a peer's open gives
        // the allocation's start: the handle carries addr's offset in it.
        // The application's own cudaMalloc'd memory is asked of the driver
        // (registering an interior pointer as its own base would send
        // the peer's writes to the allocation's start).
        uint64_t base = reinterpret_cast<uint64_t>(addr);
        bool found = false;
        {
            std::lock_guard g(alloc_lock_);
            for (const auto &[p, n] : gpu_allocs_) {
                const auto b = reinterpret_cast<uint64_t>(p);
                if (reinterpret_cast<uint64_t>(addr) >= b &&
                    reinterpret_cast<uint64_t>(addr) < b + n) {
                    base = b;
                    found = true;
                }
            }
        }
        if (!found && !cuda.allocation_base(addr, &base))
            return tcaErrorInvalidValue;
        if (Result r = cuda.ipc_handle(reinterpret_cast<void *>(base), h.ipc); r != tcaSuccess)
            return r;
        h.addr = reinterpret_cast<uint64_t>(addr);
        h.ipc_offset = h.addr - base;
        region = Region::Gpu0;
        break;
    }
    default:
        return tcaErrorInvalidValue;
    }
    std::lock_guard g(reg_lock_);
    if (free_regs_.empty())
        return tcaErrorNoMemory;
    const uint32_t idx = free_regs_.back();
    free_regs_.pop_back();
    next_key_ += 0x9E3779B97F4A7C16ull;  // distinct, hard-to-guess keys
    h.key = next_key_ | 1;
    h.reg_index = idx;
    const AddressMap &map = topo_.address_map();
    h.global = map.region_base(nodes_.self(), region) +
               (global_next_[static_cast<int>(region)] % map.region_size());
    global_next_[static_cast<int>(region)] += (size + 4095) / 4096 * 4096;
    RegistrationEntry &e = nodes_.own().registrations()[idx];
    // The key is 0 here: peers that read the fields meanwhile discard
    // them (the fence keeps the new fields behind the zeroed key).
    std::atomic_thread_fence(std::memory_order_release);
    e.base = h.addr;
    e.size = h.size;
    e.region = h.region;
    e.arena = arena;
    e.arena_off = arena_off;
    e.arena_serial = arena_serial;
    e.global = h.global;
    e.key.store(h.key, std::memory_order_release);
    *out = h;
    return tcaSuccess;
}

void LocalMemory::describe(DeviceInfo *i) const {
    i->heap_arenas = shared_heap_.arenas();
    i->heap_bytes = shared_heap_.bytes_in_use();
    i->internal_size = heap_.size();
    i->internal_used = heap_.used();
    std::lock_guard g(reg_lock_);
    i->registrations = static_cast<int>(kMaxRegistrations - free_regs_.size());
    i->max_registrations = static_cast<int>(kMaxRegistrations);
}

// Allocates nothing (free_regs_ keeps its capacity for every entry): this also
// runs from memory-release hooks (tcaRevokeHandle).
Result LocalMemory::deregister(uint32_t reg_index, uint64_t key) noexcept {
    std::lock_guard g(reg_lock_);
    auto &entry_key = nodes_.own().registrations()[reg_index].key;
    // Checked again under the lock: two deregistrations of one handle (a
    // hook's and the owner's) end it once, never a newer registration of the slot.
    if (entry_key.load(std::memory_order_relaxed) != key)
        return tcaErrorNotRegistered;
    entry_key.store(0, std::memory_order_release);
    free_regs_.push_back(reg_index);
    return tcaSuccess;
}

// tcaFree of memory that still has handles: those handles go stale, so a
// peer's put fails with tcaErrorNotRegistered instead of hitting freed memory.
void LocalMemory::drop_registrations(uint64_t base, uint64_t size, tcaMemoryType type) {
    std::lock_guard g(reg_lock_);
    RegistrationEntry *table = nodes_.own().registrations();
    for (uint32_t i = 0; i < kMaxRegistrations; ++i) {
        RegistrationEntry &e = table[i];
        if (e.key.load(std::memory_order_acquire) == 0 || e.region != static_cast<uint32_t>(type))
            continue;
        if (e.base >= base && e.base < base + size) {
            e.key.store(0, std::memory_order_release);
            free_regs_.push_back(i);
        }
    }
}

}  // namespace tca::loopback
