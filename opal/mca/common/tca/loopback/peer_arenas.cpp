// peer_arenas.cpp - mapping other nodes' arenas: found by name in the owner's
// segment, opened only if open_own_segment_file accepts the file (ours, 0600,
// one link, a regular file) and its size is the published one.
#include "loopback/peer_arenas.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace tca::loopback {

PeerArenas::~PeerArenas() {
    for (const auto &pn : per_node_)
        for (const Mapping &m : pn->maps)
            if (m.base != nullptr)
                munmap(m.base, m.size);
}

PeerArenas::PeerArenas(NodeSet &nodes) : nodes_(nodes) {
    for (int i = 0; i < nodes.size(); ++i)
        per_node_.push_back(std::make_unique<PerNode>());
}

Result PeerArenas::map(int node, uint32_t slot, uint64_t serial) {
    const ArenaSlot *table = nodes_.view(node).arenas();
    // Drop mappings of arenas the owner has replaced or removed since (its
    // freed big blocks): their memory goes back only once nobody maps them.
    PerNode &pn = *per_node_[static_cast<size_t>(node)];
    for (uint32_t i = 0; i < kMaxArenas; ++i) {
        Mapping &m = pn.maps[i];
        if (m.base != nullptr && table[i].serial.load(std::memory_order_acquire) != m.serial) {
            munmap(m.base, m.size);
            m = Mapping{};
        }
    }
    // The slot as published (seqlock on its serial).
    const ArenaSlot &s = table[slot];
    char name[sizeof s.name];
    const uint64_t before = s.serial.load(std::memory_order_acquire);
    std::memcpy(name, s.name, sizeof name);
    const uint64_t size = s.size;
    std::atomic_thread_fence(std::memory_order_acquire);
    if (before != serial || s.serial.load(std::memory_order_relaxed) != serial)
        return tcaErrorNotRegistered;
    name[sizeof name - 1] = '\0';
    const std::string n(name);
    if (!is_arena_name(n) || arena_segment_name(n) != nodes_.segment_name(node))
        return tcaErrorNotRegistered;
    struct stat st {};
    std::string why;
    const int fd = open_own_segment_file(n, &st, &why);
    if (fd < 0)
        return tcaErrorNotRegistered;  // removed meanwhile (freed), or not ours
    if (static_cast<uint64_t>(st.st_size) != size || size == 0) {
        close(fd);
        return tcaErrorNotRegistered;
    }
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return tcaErrorSystem;
    Mapping &m = pn.maps[slot];
    if (m.base != nullptr)
        munmap(m.base, m.size);
    m = Mapping{serial, static_cast<unsigned char *>(p), size};
    return tcaSuccess;
}

uint64_t PeerArenas::mapped() const noexcept {
    uint64_t n = 0;
    for (const auto &pn : per_node_) {
        std::shared_lock g(pn->lock);
        for (const Mapping &m : pn->maps)
            n += m.base != nullptr;
    }
    return n;
}

}  // namespace tca::loopback
