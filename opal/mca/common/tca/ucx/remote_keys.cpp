// remote_keys.cpp - see remote_keys.hpp.
#include "ucx/remote_keys.hpp"

namespace tca::ucx {

bool RemoteKeys::cached(const RegId &id) const {
    std::shared_lock g(key_lock_);
    return keys_.count(id) != 0;
}

void RemoteKeys::asking(const KeyName &k) {
    std::lock_guard g(book_lock_);
    ++asking_[k];
}

void RemoteKeys::answered(const RegId &id, KeyAnswer a) {
    std::lock_guard g(book_lock_);
    answers_[id] = std::move(a);
}

std::optional<KeyAnswer> RemoteKeys::take_answer(const RegId &id) {
    std::lock_guard g(book_lock_);
    auto it = answers_.find(id);
    if (it == answers_.end())
        return std::nullopt;
    KeyAnswer a = std::move(it->second);
    answers_.erase(it);
    return a;
}

bool RemoteKeys::finish_ask(const KeyName &k, const RegId &id,
                            std::optional<RemoteRegistration> reg) {
    std::unique_lock keys(key_lock_);  // forget() marks under it too: nothing slips between
    bool revoked = false;
    {
        std::lock_guard g(book_lock_);
        revoked = revoked_asks_.count(k) != 0;
        if (--asking_[k] == 0) {
            asking_.erase(k);
            revoked_asks_.erase(k);
        }
    }
    if (!reg || revoked)
        return !revoked;
    keys_.emplace(id, std::move(*reg));
    return true;
}

void RemoteKeys::forget(const KeyName &k) {
    std::unique_lock g(key_lock_);
    {
        std::lock_guard book(book_lock_);
        if (asking_.count(k) != 0)
            revoked_asks_.insert(k);  // an answer on its way is not cached
    }
    // Its entries (one per range a handle named) sit together: the id is
    // ordered by owner, index and key first.
    const auto [owner, index, key] = k;
    auto it = keys_.lower_bound(RegId{owner, index, key, 0, 0});
    while (it != keys_.end() && std::get<0>(it->first) == owner &&
           std::get<1>(it->first) == index && std::get<2>(it->first) == key)
        it = keys_.erase(it);
}

void RemoteKeys::confirmed(uint32_t index, uint64_t key, int node) {
    std::lock_guard g(book_lock_);
    forgotten_[std::make_pair(index, key)] |= uint64_t{1} << node;
}

uint64_t RemoteKeys::confirmations(uint32_t index, uint64_t key) const {
    std::lock_guard g(book_lock_);
    const auto it = forgotten_.find(std::make_pair(index, key));
    return it == forgotten_.end() ? 0 : it->second;
}

void RemoteKeys::clear_confirmations(uint32_t index, uint64_t key) {
    std::lock_guard g(book_lock_);
    forgotten_.erase(std::make_pair(index, key));
}

void RemoteKeys::queue(const KeyRequestMsg &m) {
    std::lock_guard g(book_lock_);
    requests_.push_back(m);
    queued_.fetch_add(1, std::memory_order_acq_rel);
}

void RemoteKeys::queue(const KeyRevokeMsg &m) {
    std::lock_guard g(book_lock_);
    revokes_.push_back(m);
    queued_.fetch_add(1, std::memory_order_acq_rel);
}

std::optional<RemoteKeys::Served> RemoteKeys::next_to_serve() {
    std::lock_guard g(book_lock_);
    Served s;
    if (!requests_.empty()) {
        s.is_request = true;
        s.request = requests_.front();
        requests_.pop_front();
    } else if (!revokes_.empty()) {
        s.revoke = revokes_.front();
        revokes_.pop_front();
    } else {
        return std::nullopt;
    }
    queued_.fetch_sub(1, std::memory_order_acq_rel);
    return s;
}

void RemoteKeys::clear() {
    std::unique_lock g(key_lock_);
    keys_.clear();
}

}  // namespace tca::ucx
