// local_registrations.cpp - see local_registrations.hpp.
#include "ucx/local_registrations.hpp"

#include <cstring>
#include <random>

namespace tca::ucx {

namespace {
// Keys start at a random point: a key of an earlier run of the job is not
// one of this run's.
uint64_t first_key() {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32 | rd()) | 1;
}
}  // namespace

Result LocalRegistrations::add(Registration reg, tcaHandle *h) {
    std::lock_guard g(lock_);
    if (next_key_ == 0)
        next_key_ = first_key();
    if (regs_.size() >= kMax)
        return tcaErrorNoMemory;
    uint32_t idx = 0;
    while (regs_.count(idx) != 0)
        ++idx;
    next_key_ += 0x9E3779B97F4A7C16ull;
    reg.key = next_key_ | 1;
    h->key = reg.key;
    h->reg_index = idx;
    regs_[idx] = std::move(reg);
    return tcaSuccess;
}

Result LocalRegistrations::take(const tcaHandle &h, Registration *out) {
    std::lock_guard g(lock_);
    auto it = regs_.find(h.reg_index);
    if (it == regs_.end() || it->second.key != h.key)
        return tcaErrorNotRegistered;
    *out = std::move(it->second);
    regs_.erase(it);  // from now on a key request for it is refused
    return tcaSuccess;
}

std::vector<std::pair<uint32_t, Registration>>
LocalRegistrations::take_range(uint64_t base, uint64_t size, tcaMemoryType type) {
    std::vector<std::pair<uint32_t, Registration>> gone;
    std::lock_guard g(lock_);
    for (auto it = regs_.begin(); it != regs_.end();) {
        if (it->second.type == type && it->second.addr >= base && it->second.addr < base + size) {
            gone.emplace_back(it->first, std::move(it->second));
            it = regs_.erase(it);
        } else {
            ++it;
        }
    }
    return gone;
}

Result LocalRegistrations::local(const tcaHandle &h, unsigned char **base) const {
    std::lock_guard g(lock_);
    return local_locked(h, base);
}

Result LocalRegistrations::handle_of(uint32_t index, uint64_t key, int self, tcaHandle *out) const {
    std::lock_guard g(lock_);
    auto it = regs_.find(index);
    if (it == regs_.end() || it->second.key != key)
        return tcaErrorNotRegistered;
    tcaHandle h{};
    h.magic = TCA_HANDLE_MAGIC;
    h.node = static_cast<uint16_t>(self);
    h.region = static_cast<uint8_t>(it->second.type);
    h.reg_index = index;
    h.key = key;
    h.addr = it->second.addr;
    h.size = it->second.size;
    *out = h;
    return tcaSuccess;
}

Result LocalRegistrations::local_locked(const tcaHandle &h, unsigned char **base) const {
    auto it = regs_.find(h.reg_index);
    // The range too: a handle whose size was altered must not reach past the registration.
    if (it == regs_.end() || it->second.key != h.key || it->second.addr != h.addr ||
        it->second.size != h.size)
        return tcaErrorNotRegistered;
    if (base != nullptr)
        *base = h.region == tcaMemoryInternal ? internal_ + h.addr
                                              : reinterpret_cast<unsigned char *>(h.addr);
    return tcaSuccess;
}

Result LocalRegistrations::land(const tcaHandle &dst, uint64_t off, uint64_t size,
                                const std::function<void(unsigned char *)> &copy) {
    std::lock_guard g(lock_);
    unsigned char *base = nullptr;
    if (local_locked(dst, &base) != tcaSuccess || off > dst.size || size > dst.size - off)
        return tcaErrorNotRegistered;
    copy(base + off);
    return tcaSuccess;
}

void LocalRegistrations::answer(const KeyRequestMsg &req, const MemoryMap *internal_map,
                                KeyReplyMsg *reply) {
    reply->status = tcaErrorNotRegistered;
    std::lock_guard g(lock_);
    auto it = regs_.find(req.reg_index);
    if (it == regs_.end() || it->second.key != req.key || it->second.addr != req.addr ||
        it->second.size != req.size)
        return;
    Registration &reg = it->second;
    reg.holders |= uint64_t{1} << req.src;  // told before it could have the key: revoked at destroy
    const std::vector<std::byte> *packed = nullptr;
    if (reg.type == tcaMemoryInternal) {
        packed = internal_map != nullptr ? &internal_map->packed_key() : nullptr;
        reply->va_of_zero = reinterpret_cast<uint64_t>(internal_);
    } else if (reg.map) {
        packed = &reg.map->packed_key();
    }
    if (packed == nullptr) {
        reply->status = tcaSuccess;  // 0 bytes: nothing to write, no key needed
    } else if (packed->size() <= kMaxPackedKey) {
        std::memcpy(reply->packed_key, packed->data(), packed->size());
        reply->key_length = static_cast<uint32_t>(packed->size());
        reply->status = tcaSuccess;
    } else {
        reply->status = tcaErrorNotSupported;
    }
}

int LocalRegistrations::count() const {
    std::lock_guard g(lock_);
    return static_cast<int>(regs_.size());
}

void LocalRegistrations::clear() {
    std::lock_guard g(lock_);
    regs_.clear();
}

}  // namespace tca::ucx
