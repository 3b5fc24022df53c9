// shared_heap.cpp - arenas of the shared heap (owner side).  Peers map them
// through PeerArenas; here they are made, filled with blocks and removed.
#include "loopback/shared_heap.hpp"

#include "loopback/launcher_cleanup.hpp"
#include "loopback/shm_reserve.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tca::loopback {

namespace {
uint64_t pages(uint64_t size) {
    return (std::max<uint64_t>(size, 1) + SharedHeap::kPage - 1) / SharedHeap::kPage *
           SharedHeap::kPage;
}
}  // namespace

SharedHeap::~SharedHeap() {
    shutdown();
}

Result SharedHeap::add_arena(uint64_t size, bool own, Arena **out) {
    ArenaSlot *table = nodes_.own().arenas();
    uint32_t slot = kMaxArenas;
    for (uint32_t i = 0; i < kMaxArenas && slot == kMaxArenas; ++i)
        if (table[i].serial.load(std::memory_order_relaxed) == 0)
            slot = i;
    if (slot == kMaxArenas)
        return tcaErrorNoMemory;
    const std::string &segment = nodes_.segment_name(nodes_.self());
    std::string name;
    int fd = -1;
    for (int attempt = 0; attempt < 8 && fd < 0;
         ++attempt) {  // EEXIST: a squatter; try another name
        name = new_arena_name(segment);
        fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0)
        return tcaErrorNoMemory;
    register_launcher_cleanup(name);  // as the segment (loopback_device.cpp)
    if (name.size() >= sizeof table[slot].name || fchmod(fd, 0600) != 0 ||
        ftruncate(fd, static_cast<off_t>(size)) != 0) {
        close(fd);
        shm_unlink(name.c_str());
        return tcaErrorNoMemory;
    }
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        close(fd);
        shm_unlink(name.c_str());
        return tcaErrorNoMemory;
    }
    auto a = std::make_unique<Arena>();
    a->slot = slot;
    a->serial = next_serial_++;
    a->fd = fd;
    a->base = static_cast<unsigned char *>(p);
    a->size = size;
    a->own = own;
    if (!own)
        a->blocks = std::make_unique<InternalHeap>(size);
    ArenaSlot &s = table[slot];
    s.size = size;
    std::snprintf(s.name, sizeof s.name, "%s", name.c_str());
    s.serial.store(a->serial, std::memory_order_release);  // publishes name and size
    *out = a.get();
    arenas_.push_back(std::move(a));
    return tcaSuccess;
}

void SharedHeap::drop_arena(Arena *a) noexcept {
    ArenaSlot &s = nodes_.own().arenas()[a->slot];
    char name[sizeof s.name];
    std::memcpy(name, s.name, sizeof name);
    s.serial.store(0, std::memory_order_release);
    shm_unlink(name);
    munmap(a->base, a->size);
    close(a->fd);
    arenas_.erase(
        std::find_if(arenas_.begin(), arenas_.end(), [&](const auto &p) { return p.get() == a; }));
}

// The block's pages exist from here on: a full /dev/shm is an error now,
// never a SIGBUS at a later store (ours or a peer's).
Result SharedHeap::reserve(Arena *a, uint64_t off, uint64_t len) {
    // Quiet: tcaMalloc falls back to private memory.
    return reserve_shm(a->fd, off, len, nodes_.own().arenas()[a->slot].name,
                       "shared heap (tcaMalloc)", false);
}

void SharedHeap::give_back(Arena *a, uint64_t off, uint64_t len) noexcept {
    // Zero pages for the next user and no real memory meanwhile.
    if (fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(off),
                  static_cast<off_t>(len)) != 0)
        std::memset(a->base + off, 0, len);
}

Result SharedHeap::allocate(size_t size, void **out) {
    const uint64_t len = pages(size);
    if (len < size)
        return tcaErrorNoMemory;  // size near SIZE_MAX
    std::lock_guard g(lock_);
    if (shut_down_)
        return tcaErrorNoMemory;
    Arena *arena = nullptr;
    uint64_t off = 0;
    if (len >= kOwnArena) {
        if (Result r = add_arena(len, true, &arena); r != tcaSuccess)
            return r;
    } else {
        for (const auto &a : arenas_) {
            if (a->own)
                continue;
            if (const auto o = a->blocks->allocate(len)) {
                arena = a.get();
                off = *o;
                break;
            }
        }
        if (arena == nullptr) {
            const uint64_t size_new = std::max(next_general_, len);
            if (Result r = add_arena(size_new, false, &arena); r != tcaSuccess)
                return r;
            next_general_ = std::min(2 * next_general_, kMaxArena);
            off = *arena->blocks->allocate(len);
        }
    }
    if (Result r = reserve(arena, off, len); r != tcaSuccess) {
        if (arena->own)
            drop_arena(arena);
        else {
            give_back(arena, off, len);
            arena->blocks->release(off);
        }
        return r;
    }
    unsigned char *p = arena->base + off;
    blocks_[reinterpret_cast<uint64_t>(p)] = Block{arena, off, len, size};
    *out = p;
    return tcaSuccess;
}

std::optional<uint64_t> SharedHeap::block_length(const void *p) const {
    std::lock_guard g(lock_);
    const auto it = blocks_.find(reinterpret_cast<uint64_t>(p));
    if (it == blocks_.end())
        return std::nullopt;
    return it->second.length;
}

std::optional<size_t> SharedHeap::release(void *p) {
    std::lock_guard g(lock_);
    const auto it = blocks_.find(reinterpret_cast<uint64_t>(p));
    if (it == blocks_.end())
        return std::nullopt;
    const Block b = it->second;
    blocks_.erase(it);
    if (b.arena->own) {
        drop_arena(b.arena);  // its memory goes back with the file (peers' mappings of it go stale)
    } else {
        give_back(b.arena, b.offset, b.length);
        b.arena->blocks->release(b.offset);
    }
    return b.asked;
}

std::optional<SharedHeap::Location> SharedHeap::locate(uint64_t addr, uint64_t size) const {
    std::lock_guard g(lock_);
    auto it = blocks_.upper_bound(addr);
    if (it == blocks_.begin())
        return std::nullopt;
    --it;
    const Block &b = it->second;
    const uint64_t rel = addr - it->first;
    // Inside the block as reserved (whole pages): the registration may cover
    // the rounding, never another block.
    if (rel > b.length || size > b.length - rel)
        return std::nullopt;
    return Location{b.arena->slot, b.arena->serial, b.offset + rel};
}

void SharedHeap::shutdown() noexcept {
    std::lock_guard g(lock_);
    if (shut_down_)
        return;
    shut_down_ = true;
    if (arenas_.empty())
        return;  // (also: the node may never have made its segment)
    ArenaSlot *table = nodes_.own().arenas();
    for (const auto &a : arenas_) {
        shm_unlink(table[a->slot].name);
        close(a->fd);
        a->fd = -1;
        const bool used = std::any_of(blocks_.begin(), blocks_.end(),
                                      [&](const auto &kv) { return kv.second.arena == a.get(); });
        if (!used)
            munmap(a->base, a->size);
    }
}

uint64_t SharedHeap::arenas() const {
    std::lock_guard g(lock_);
    return arenas_.size();
}

uint64_t SharedHeap::bytes_in_use() const {
    std::lock_guard g(lock_);
    uint64_t n = 0;
    for (const auto &[addr, b] : blocks_)
        n += b.length;
    return n;
}

}  // namespace tca::loopback
