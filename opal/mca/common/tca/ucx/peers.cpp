// peers.cpp - see peers.hpp.
#include "ucx/peers.hpp"

#include <cstdio>

#include "ucx/wire.hpp"

namespace tca::ucx {

Result Peers::endpoint(int node, std::span<const std::byte> address, Endpoint **out) {
    std::lock_guard g(lock_);
    Peer &p = peers_[node];
    if (!p.ep) {
        if (p.address.empty() && !address.empty())
            p.address.assign(address.begin(), address.end());
        if (p.address.empty()) {
            if (Result r = pmix_.get(first_rank_ + node, kAddressKey, wait_s_, &p.address);
                r != tcaSuccess) {
                p.address.clear();
                std::fprintf(stderr, "tca: node %d: no UCX address of node %d through PMIx (%s)\n",
                             self_, node,
                             r == tcaErrorTimeout ? "not published in time" : "not there");
                return r;
            }
        }
        // Peer failure reports where the transports can (tcp); UCX's
        // shared-memory transports refuse them: then node state only.
        if (Endpoint::create(*worker_, p.address, true, &p.ep) != tcaSuccess)
            if (Result r = Endpoint::create(*worker_, p.address, false, &p.ep); r != tcaSuccess)
                return r;
    }
    if (p.ep->peer_failed())
        return tcaErrorPeerGone;
    *out = p.ep.get();
    return tcaSuccess;
}

Result Peers::bulk_endpoint(int node, Endpoint **out) {
    std::lock_guard g(lock_);
    Peer &p = peers_[node];
    if (!p.ep || p.bulk_refused)
        return tcaErrorNotSupported;
    if (!p.bulk) {
        if (Endpoint::create(*worker_, p.address, false, &p.bulk) != tcaSuccess) {
            p.bulk_refused = true;
            return tcaErrorNotSupported;
        }
        p.bulk->follow_failures_of(*p.ep);
    }
    if (p.bulk->peer_failed())
        return tcaErrorPeerGone;
    *out = p.bulk.get();
    return tcaSuccess;
}

bool Peers::failed(int node) const {
    std::lock_guard g(lock_);
    const auto &ep = peers_[node].ep;
    return ep && ep->peer_failed();
}

void Peers::say_goodbye(Deadline d) {
    std::lock_guard g(lock_);
    const NodeMsg bye{self_};
    auto still_there = [&](size_t n) {
        return peers_[n].ep && !peers_[n].ep->peer_failed() &&
               !finished_[n].load(std::memory_order_acquire);
    };
    for (size_t n = 0; n < peers_.size(); ++n)
        if (still_there(n)) {
            (void) peers_[n]
                .ep->fence();  // after everything we sent: a peer seeing it has seen the rest
            (void) peers_[n].ep->am_send(kAmGoodbye, &bye, sizeof bye, d);
        }
    for (size_t n = 0; n < peers_.size(); ++n)
        if (still_there(n))
            (void) peers_[n].ep->flush(d);
}

void Peers::close() {
    std::lock_guard g(lock_);
    for (auto &p : peers_) {
        p.bulk.reset();  // it follows p.ep's failures: first
        p.ep.reset();
    }
}

}  // namespace tca::ucx
