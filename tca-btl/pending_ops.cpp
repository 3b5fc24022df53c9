// pending_ops.cpp - see pending_ops.hpp.
#include "pending_ops.hpp"

#include <cstring>

namespace tca::btl {

bool inside(const tcaHandle &h, uint64_t addr, uint64_t size) noexcept {
    return addr >= h.addr && size <= h.size && addr - h.addr <= h.size - size;
}

int answer_code(PendingOps::Answer a) noexcept {
    switch (a) {
    case PendingOps::Answer::kOk:
        return TCA_BTL_GET_OK;
    case PendingOps::Answer::kWrongPeer:
        return TCA_BTL_GET_WRONG_PEER;
    default:
        return TCA_BTL_GET_UNKNOWN;
    }
}

PendingOps::PendingOps(uint32_t capacity)
    : table_(capacity), records_(new Record[table_.capacity()]) {}

bool PendingOps::begin(int peer_node, const void *owner, size_t len, uint64_t *cookie) noexcept {
    if (len > TCA_BTL_OWNER_BYTES)
        return false;
    const bool ok = table_.claim(cookie, [&](uint32_t i) {
        records_[i].node = peer_node;
        std::memcpy(records_[i].owner, owner, len);
    });
    if (ok)
        pending_.fetch_add(1, std::memory_order_relaxed);
    return ok;
}

void PendingOps::cancel(uint64_t cookie) noexcept {
    if (table_.release(cookie, [](uint32_t) {}))
        pending_.fetch_sub(1, std::memory_order_relaxed);
}

PendingOps::Answer PendingOps::finish(uint64_t cookie, int from_node, void *owner) noexcept {
    int asked = -1;
    const bool known = table_.release(cookie, [&](uint32_t i) {
        asked = records_[i].node;
        std::memcpy(owner, records_[i].owner, TCA_BTL_OWNER_BYTES);
    });
    if (!known)
        return Answer::kUnknown;
    pending_.fetch_sub(1, std::memory_order_relaxed);
    return asked == from_node ? Answer::kOk : Answer::kWrongPeer;
}

}  // namespace tca::btl
