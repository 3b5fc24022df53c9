// peers.hpp - the other nodes of the ucx device as UCX endpoints (as uct's
// mm_ep keeps one per peer): made on first use from the worker address the
// node published through PMIx, the second endpoint for large rows' tagged
// data, and what this node knows of each peer's life (failed: UCX's
// peer-failure report; finished: its goodbye arrived).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "ucx/pmix_exchange.hpp"
#include "ucx/ucp_transport.hpp"

namespace tca::ucx {

class Peers {
public:
    // Node n is PMIx rank first_rank + n; an address not published within
    // wait_s seconds is an error of the write that needed it.
    Peers(PmixExchange &pmix, int self, int nodes, int first_rank, int wait_s)
        : pmix_(pmix), self_(self), first_rank_(first_rank), wait_s_(wait_s),
          peers_(static_cast<size_t>(nodes)), finished_(static_cast<size_t>(nodes)) {
        for (auto &f : finished_)
            f.store(false, std::memory_order_relaxed);
    }
    // Endpoints are made on `worker` (set once it exists, before any use).
    void attach(Worker *worker) noexcept { worker_ = worker; }

    // The endpoint to `node`, made on first use (with failure reports where
    // the transports give them); tcaErrorPeerGone once the peer failed.
    Result endpoint(int node, Endpoint **out) { return endpoint(node, {}, out); }
    // The same, made (if it is not yet) from the address the node sent
    // (empty: looked up through PMIx).
    Result endpoint(int node, std::span<const std::byte> address, Endpoint **out);
    // The node's second endpoint, without failure reports (DmaTaggedMsg),
    // following the first one's; after endpoint(node) succeeded.
    // tcaErrorNotSupported where UCX would not make it: rows go by active
    // message then.
    Result bulk_endpoint(int node, Endpoint **out);

    bool failed(int node) const;
    bool finished(int node) const noexcept {
        return finished_[node].load(std::memory_order_acquire);
    }
    void mark_finished(int node) noexcept {
        finished_[node].store(true, std::memory_order_release);
    }
    // Neither failed nor finished: it may still write to us.
    bool may_write(int node) const { return !finished(node) && !failed(node); }

    // At the end: a goodbye to every peer still there (after a fence: a peer
    // seeing it has seen the rest), and their endpoints flushed, by `d`.
    void say_goodbye(Deadline d);
    // Then the endpoints close (after the remote keys made on them went).
    void close();

private:
    struct Peer {
        std::unique_ptr<Endpoint> ep;
        std::unique_ptr<Endpoint> bulk;  // made on first use
        bool bulk_refused = false;
        std::vector<std::byte> address;  // the node's worker address, once known
    };

    PmixExchange &pmix_;
    const int self_, first_rank_, wait_s_;
    Worker *worker_ = nullptr;
    mutable std::mutex lock_;  // a leaf: nothing else is taken under it
    std::vector<Peer> peers_;
    std::vector<std::atomic<bool>> finished_;
};

}  // namespace tca::ucx
