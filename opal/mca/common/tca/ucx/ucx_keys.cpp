// ucx_keys.cpp - the keys of registrations between nodes (as uct's mm_md
// packs and unpacks them): a writer asks the owner on first use, the owner
// answers and notes the holder, and a registration's end revokes its key at
// every holder before the memory is unmapped or freed.  The books:
// remote_keys.hpp; the registrations: local_registrations.hpp.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>

#include "ucx/ucx_device.hpp"

namespace tca::ucx {

// The owner's key for a remote handle, asked for on first use and cached.
// The owner may revoke it between its answer and our caching it (the revoke
// can even overtake the answer): forget_key marks what is being asked for,
// and a marked answer is not cached.  Callers look the key up again under
// its lock when they use it.
Result UcxDevice::fetch_remote_key(const tcaHandle &h) {
    const RegId id = reg_id(h);
    if (remote_keys_.cached(id))
        return tcaSuccess;
    Endpoint *ep = nullptr;
    if (Result r = peers_.endpoint(h.node, &ep); r != tcaSuccess)
        return r;
    const KeyName asked{h.node, h.reg_index, h.key};
    remote_keys_.asking(asked);
    KeyAnswer answer;
    auto req = std::make_unique<KeyRequestMsg>(
        KeyRequestMsg{self_, h.reg_index, h.key, h.addr, h.size, 0u, {}});
    if (const auto &a = worker_->address(); a.size() <= sizeof req->address) {
        std::memcpy(req->address, a.data(), a.size());
        req->address_length = static_cast<uint32_t>(a.size());
    }
    Result waited = ep->am_send(kAmKeyRequest, req.get(), sizeof *req, deadline());
    if (waited == tcaSuccess)
        waited = wait_for(
            [&]() -> Result {
                if (auto a = remote_keys_.take_answer(id)) {
                    answer = std::move(*a);
                    return tcaSuccess;
                }
                return peers_.failed(h.node) ? tcaErrorPeerGone : tcaErrorNotReady;
            },
            true);
    std::optional<RemoteRegistration> reg;
    if (waited == tcaSuccess && answer.status == tcaSuccess) {
        reg.emplace();
        reg->va_of_zero = answer.va_of_zero;
        if (!answer.packed.empty())
            waited = RemoteKey::create(*ep, answer.packed, &reg->key);
    }
    if (waited != tcaSuccess)
        reg.reset();
    const bool kept = remote_keys_.finish_ask(asked, id, std::move(reg));
    if (waited != tcaSuccess)
        return waited;
    if (answer.status != tcaSuccess)
        return answer.status;
    return kept ? tcaSuccess : tcaErrorNotRegistered;  // not kept: destroyed by its owner meanwhile
}

// A peer's request for one of our keys (queued by its handler, served by a
// progress pass: the answer is a send).
void UcxDevice::answer_key_request(const KeyRequestMsg &req) {
    auto reply = std::make_unique<KeyReplyMsg>();
    std::memset(reply.get(), 0, sizeof *reply);
    reply->src = self_;
    reply->reg_index = req.reg_index;
    reply->key = req.key;
    reply->addr = req.addr;
    reply->size = req.size;
    regs_.answer(req, internal_map_.get(), reply.get());
    Endpoint *ep = nullptr;
    const std::span<const std::byte> address{
        reinterpret_cast<const std::byte *>(req.address),
        std::min<size_t>(req.address_length, sizeof req.address)};
    if (peers_.endpoint(req.src, address, &ep) == tcaSuccess)
        (void) ep->am_send(kAmKeyReply, reply.get(), sizeof *reply, deadline());
}

// Our cached key of a peer's registration that the peer ended: gone once no
// put of ours is being issued with it, then our puts to the owner are
// flushed (landed) before we confirm.  A later write asks the owner again
// and is refused.
void UcxDevice::forget_key(const KeyRevokeMsg &m) {
    remote_keys_.forget(KeyName{m.src, m.reg_index, m.key});
    Endpoint *ep = nullptr;
    if (peers_.endpoint(m.src, &ep) != tcaSuccess)
        return;  // the owner is gone: nobody waits
    (void) ep->flush(deadline());
    const KeyRevokeMsg done{self_, m.reg_index, m.key};
    (void) ep->am_send(kAmKeyForgotten, &done, sizeof done, deadline());
}

// The owner's side: every node that was given the key of `reg` forgets it
// and has its puts with it landed before the memory is unmapped (or, freed
// by the program, reused).  Nodes that finished or failed write nothing
// more.  At most TCA_TIMEOUT_MS; then tcaErrorTimeout, and the registration
// is gone all the same.
Result UcxDevice::revoke(uint32_t index, const Registration &reg) {
    if (reg.holders == 0)
        return tcaSuccess;
    const KeyRevokeMsg m{self_, index, reg.key};
    uint64_t asked = 0;
    for (int n = 0; n < n_; ++n) {
        const uint64_t bit = uint64_t{1} << n;
        Endpoint *ep = nullptr;
        if (!(reg.holders & bit) || peers_.finished(n) || peers_.endpoint(n, &ep) != tcaSuccess)
            continue;
        if (ep->am_send(kAmKeyRevoke, &m, sizeof m, deadline()) == tcaSuccess)
            asked |= bit;
    }
    const Result r = wait_for(
        [&]() -> Result {
            uint64_t pending = asked & ~remote_keys_.confirmations(index, reg.key);
            for (int n = 0; n < n_; ++n)
                if ((pending >> n & 1) && !peers_.may_write(n))
                    pending &= ~(uint64_t{1} << n);
            return pending == 0 ? tcaSuccess : tcaErrorNotReady;
        },
        true);
    remote_keys_.clear_confirmations(index, reg.key);
    if (r != tcaSuccess)
        std::fprintf(
            stderr,
            "tca: node %d: tcaDestroyHandle: a node that holds the key of registration %u did not "
            "confirm within TCA_TIMEOUT_MS that it stopped writing into it (%s)\n",
            self_, index, result_message(r));
    return r;
}

// The registrations inside memory being freed end as tcaDestroyHandle ends
// one: a cached key would otherwise reach whatever is allocated there next,
// through ucp_put_nbx.
Result UcxDevice::drop_registrations(uint64_t base, uint64_t size, tcaMemoryType type) {
    Result first = tcaSuccess;
    for (const auto &[index, reg] : regs_.take_range(base, size, type))
        if (const Result r = revoke(index, reg); r != tcaSuccess && first == tcaSuccess)
            first = r;
    return first;
}

}  // namespace tca::ucx
