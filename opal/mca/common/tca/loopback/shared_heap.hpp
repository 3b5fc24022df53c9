// shared_heap.hpp - where tcaMalloc(tcaMemoryCPU) memory comes from: arenas
// of POSIX shared memory that the peers map once and then write with plain
// stores (a put into another process's host memory is then one memcpy, no
// system call), instead of process_vm_writev per put.
//
// Arenas are files <segment name>-h<16 random hex digits>, made exclusively
// with mode 0600 and published in the node's segment (ArenaSlot table), so
// they are found, checked and swept exactly like the segment.  Real memory
// follows the allocations: an arena is only an address range until a block
// of it is allocated (fallocate reserves the block's pages, so a full
// /dev/shm is tcaErrorNoMemory and not a SIGBUS later); a freed block's
// pages go back at once (hole punched).  Arenas are added on demand, each
// twice the last (64 MiB .. 1 GiB of address space); an allocation of
// kOwnArena bytes or more gets an arena of its own that goes away with it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "base/internal_heap.hpp"
#include "loopback/node_set.hpp"

namespace tca::loopback {

class SharedHeap {
public:
    static constexpr uint64_t kPage = 4096;
    static constexpr uint64_t kFirstArena = 64ull << 20;
    static constexpr uint64_t kMaxArena = 1ull << 30;
    static constexpr uint64_t kOwnArena = 64ull << 20;

    explicit SharedHeap(NodeSet &nodes) : nodes_(nodes) {}
    ~SharedHeap();
    SharedHeap(const SharedHeap &) = delete;
    SharedHeap &operator=(const SharedHeap &) = delete;

    // size bytes (0 is one page: a valid, distinct pointer), page aligned,
    // zero-filled.  tcaErrorNoMemory if /dev/shm is full or every arena slot
    // is taken (the caller then falls back to private memory).
    Result allocate(size_t size, void **out);
    // The size asked for when p was allocated, or nothing if p is not a block
    // of this heap.  The block's pages go back to the system.
    std::optional<size_t> release(void *p);
    // Bytes reserved for the block at p (whole pages), or nothing if p is not one.
    std::optional<uint64_t> block_length(const void *p) const;

    // Where [addr, addr + size) lies, if it is inside one live block.
    struct Location {
        uint32_t slot;
        uint64_t serial;
        uint64_t offset;  // of addr in the arena file
    };
    std::optional<Location> locate(uint64_t addr, uint64_t size) const;

    // At device teardown: the names go (nothing is left in /dev/shm); arenas
    // without live blocks are unmapped, the others stay mapped for the
    // pointers the application still holds.
    void shutdown() noexcept;

    uint64_t arenas() const;
    uint64_t bytes_in_use() const;

private:
    struct Arena {
        uint32_t slot = 0;
        uint64_t serial = 0;
        int fd = -1;
        unsigned char *base = nullptr;
        uint64_t size = 0;
        bool own = false;                      // one allocation's own arena
        std::unique_ptr<InternalHeap> blocks;  // general arenas: offsets of blocks
    };
    struct Block {
        Arena *arena;
        uint64_t offset;
        uint64_t length;  // bytes reserved (whole pages)
        size_t asked;     // what tcaMalloc was asked for
    };

    Result add_arena(uint64_t size, bool own, Arena **out);
    void drop_arena(Arena *a) noexcept;  // unpublish, unlink, unmap
    Result reserve(Arena *a, uint64_t off, uint64_t len);
    void give_back(Arena *a, uint64_t off, uint64_t len) noexcept;

    NodeSet &nodes_;
    mutable std::mutex lock_;
    std::vector<std::unique_ptr<Arena>> arenas_;
    std::map<uint64_t, Block> blocks_;  // by address
    uint64_t next_general_ = kFirstArena;
    uint64_t next_serial_ = 1;
    bool shut_down_ = false;
};

}  // namespace tca::loopback
