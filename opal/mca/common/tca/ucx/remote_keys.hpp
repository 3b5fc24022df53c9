// remote_keys.hpp - the keys of peers' registrations this node has asked for
// and cached (as UCX's rkey cache), and the bookkeeping of the revoke
// protocol around them:
//
//   a writer asks the owner for a key on first use (KeyRequestMsg), waits
//   for the answer (KeyReplyMsg) and caches it per (node, index, key, range);
//   the owner's destroy (or free) asks every node it gave the key to forget
//   it (KeyRevokeMsg); a node forgets it once no put with it is being issued,
//   flushes its puts to the owner and confirms (kAmKeyForgotten); the owner
//   returns once all confirmed.  A revoke can overtake the answer of an ask
//   in flight: an answer asked for while its key was revoked is not cached.
//
// Handlers (inside worker progress, no UCX calls) only fill in what arrived;
// the requests and revokes to serve wait here for a progress pass that may
// call UCX.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "tca.h"
#include "ucx/ucp_transport.hpp"
#include "ucx/wire.hpp"

namespace tca::ucx {

// A peer's registration as a handle names it: node, index, key, and the range
// (a handle with an altered range is a different one, asked of the owner,
// who refuses it).
using RegId = std::tuple<int, uint32_t, uint64_t, uint64_t, uint64_t>;
inline RegId reg_id(const tcaHandle &h) {
    return RegId{h.node, h.reg_index, h.key, h.addr, h.size};
}
// A key as its owner revokes it: owner, index, key.
using KeyName = std::tuple<int, uint32_t, uint64_t>;

struct RemoteRegistration {
    std::unique_ptr<RemoteKey> key;  // none: a 0-byte registration
    uint64_t va_of_zero = 0;         // the owner's address of the handle's address 0
};

struct KeyAnswer {
    Result status = tcaErrorNotReady;
    uint64_t va_of_zero = 0;
    std::vector<std::byte> packed;
};

class RemoteKeys {
public:
    bool cached(const RegId &id) const;
    // f(const RemoteRegistration &) with the key held (a revoke waits for
    // it: issuing a put with the key, the key is not forgotten under it);
    // tcaErrorNotRegistered where it is not (or no longer) cached.
    template <class F>
    Result with_key(const RegId &id, F &&f) const {
        std::shared_lock g(key_lock_);
        const auto it = keys_.find(id);
        if (it == keys_.end())
            return tcaErrorNotRegistered;
        return f(it->second);
    }

    // An ask of the owner starts ...
    void asking(const KeyName &k);
    // ... its answer arrives (a handler) ...
    void answered(const RegId &id, KeyAnswer a);
    std::optional<KeyAnswer> take_answer(const RegId &id);
    // ... and it ends: `reg` cached unless the owner revoked the key since the
    // ask began (false then; nothing cached).  reg empty: the ask failed.
    bool finish_ask(const KeyName &k, const RegId &id, std::optional<RemoteRegistration> reg);

    // This node forgets a key its owner revoked: every cached range of it,
    // once no put with it is being issued.
    void forget(const KeyName &k);

    // The owner's side: node n confirmed it forgot (index, key).
    void confirmed(uint32_t index, uint64_t key, int node);
    uint64_t confirmations(uint32_t index, uint64_t key) const;
    void clear_confirmations(uint32_t index, uint64_t key);

    // What handlers queue for a serving progress pass (it may call UCX).
    void queue(const KeyRequestMsg &m);
    void queue(const KeyRevokeMsg &m);
    bool queued() const noexcept { return queued_.load(std::memory_order_acquire) != 0; }
    struct Served {
        bool is_request = false;
        KeyRequestMsg request{};
        KeyRevokeMsg revoke{};
    };
    std::optional<Served> next_to_serve();

    void clear();

private:
    // key_lock_ (shared: a put being issued with a key; exclusive: a key added
    // or forgotten) is taken before book_lock_, never after: the one order.
    mutable std::shared_mutex key_lock_;
    std::map<RegId, RemoteRegistration> keys_;

    mutable std::mutex book_lock_;        // the rest
    std::map<KeyName, int> asking_;       // keys being asked for, by how many threads
    std::set<KeyName> revoked_asks_;      // of those, revoked meanwhile
    std::map<RegId, KeyAnswer> answers_;  // arrived, not taken yet
    std::map<std::pair<uint32_t, uint64_t>, uint64_t>
        forgotten_;  // (index, key) -> nodes that confirmed
    std::deque<KeyRequestMsg> requests_;
    std::deque<KeyRevokeMsg> revokes_;
    std::atomic<int> queued_{0};  // requests_ + revokes_, read without the lock
};

}  // namespace tca::ucx
