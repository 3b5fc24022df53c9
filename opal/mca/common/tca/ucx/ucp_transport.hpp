// ucp_transport.hpp - the UCX (UCP) operations the `ucx` device backend
// (ucx_device.cpp) is built from, as RAII types: a context and worker,
// endpoints to peers' workers, memory mapped for remote access with packed
// remote keys, puts (one whose last 8-byte word becomes visible after the
// rest: PIO store / DMA completion flag), fences, remote atomic adds
// (counters), active messages (header only, with data, or announcing a
// tagged send).  Nothing here knows the TCA model; the backend does.
//
// Every blocking call progresses the worker until its request completes or
// the deadline passes (tcaErrorTimeout), so no wait is unbounded.  Transports
// without hardware RDMA (tcp) complete a peer's put only while the target
// progresses its worker: a target must keep calling progress().
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/result.hpp"

namespace tca::ucx {

using Deadline = std::chrono::steady_clock::time_point;

class Worker;

// Counts a thread in while it lives (who waits on a worker: the progress
// thread stands aside meanwhile).
class ScopedCount {
public:
    explicit ScopedCount(std::atomic<int> &n) noexcept : n_(n) {
        n_.fetch_add(1, std::memory_order_acq_rel);
    }
    ~ScopedCount() { n_.fetch_sub(1, std::memory_order_acq_rel); }
    ScopedCount(const ScopedCount &) = delete;
    ScopedCount &operator=(const ScopedCount &) = delete;

private:
    std::atomic<int> &n_;
};

// ucp_init with RMA, 64-bit atomics, active messages, tag matching and wake-up events.
class Context {
public:
    // tcaErrorNotSupported (with *why) where UCX cannot start.
    static Result create(std::unique_ptr<Context> *out, std::string *why);
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;
    ucp_context_h get() const noexcept { return ctx_; }

private:
    explicit Context(ucp_context_h c) : ctx_(c) {}
    ucp_context_h ctx_;
};

// A worker; thread-safe only as UCX makes it (UCS_THREAD_MODE_MULTI).
class Worker {
public:
    static Result create(Context &ctx, std::unique_ptr<Worker> *out, std::string *why);
    ~Worker();
    Worker(const Worker &) = delete;
    Worker &operator=(const Worker &) = delete;
    ucp_worker_h get() const noexcept { return w_; }
    // This worker's address, for peers' endpoints (exchanged out of band).
    const std::vector<std::byte> &address() const noexcept { return address_; }
    // One pass of communication progress; true if something happened.
    bool progress() noexcept { return ucp_worker_progress(w_) != 0; }
    // Sleeps until the worker has something to progress or timeout_ms
    // passes (ucp_worker_arm + the worker's event fd; a plain nap where the
    // transports have no events).
    void sleep_for_events(int timeout_ms) noexcept;
    // Waits for `request` (a ucs_status_ptr_t of an _nbx call), progressing;
    // cancelled with tcaErrorPeerGone once *give_up is true (a peer that
    // failed, seen by another endpoint).
    Result wait(ucs_status_ptr_t request, Deadline deadline,
                const std::atomic<bool> *give_up = nullptr) noexcept;
    // Threads inside an operation now, issuing it or waiting for it (they
    // progress the worker themselves).
    int waiters() const noexcept { return waiters_.load(std::memory_order_acquire); }
    // Counts the calling thread among waiters() while it lives: from before
    // an operation is issued, as issuing may hold the worker's lock for long
    // (a large send is a sendmsg of all its data over tcp), and a progress
    // thread that called in meanwhile would spin on that lock, on the
    // caller's core.
    ScopedCount user() noexcept { return ScopedCount(waiters_); }
    // Active messages `id` go to handler(arg, header, length) inside
    // progress(); only the header is used (no payload), and it is valid
    // during the call only.  The handler must not call into UCX.
    using AmHandler = void (*)(void *arg, const void *header, size_t length);
    struct AmSlot {
        AmHandler handler;
        void *arg;
    };
    Result set_am_handler(unsigned id, AmHandler handler, void *arg) noexcept;
    // Active messages `id` that carry data (Endpoint::am_send_data) go to
    // handler(arg, header, header_length, data, length, &to) inside
    // progress().  Data that came with the message (eager) is at `data`: the
    // handler stores it itself.  Data still at the sender (rendezvous) comes
    // with data == nullptr: the handler sets `to` and UCX receives the data
    // there, after the call (the sender's am_send_data completes once it has
    // landed).  A result other than tcaSuccess refuses it; a sender waiting
    // for a rendezvous gets tcaErrorNotRegistered.  Like AmHandler, it must
    // not call into UCX.
    using AmDataHandler = Result (*)(void *arg, const void *header, size_t header_length,
                                     const void *data, size_t length, void **to);
    struct AmDataSlot {
        AmDataHandler handler;
        void *arg;
        ucp_worker_h worker;
    };
    Result set_am_data_handler(unsigned id, AmDataHandler handler, void *arg) noexcept;
    // Active messages `id` that announce a tagged send (Endpoint::tag_send
    // after am_send): handler(arg, header, header_length, &into) names where
    // the data goes, and a receive for it is posted after the call.  UCX
    // moves a large tagged message with its best rendezvous (over tcp the
    // receiver reads it from the socket straight into place, where an
    // active message's rendezvous data is copied once more).  A result other
    // than tcaSuccess refuses it: the data is received into nothing
    // (truncated) so the sender is not left waiting - except
    // tcaErrorInvalidValue, a header it could not read (no tag known).
    // Like AmHandler, it must not call into UCX.
    struct TagReceive {
        void *to;
        size_t size;
        uint64_t tag;
    };
    using AmTagHandler = Result (*)(void *arg, const void *header, size_t header_length,
                                    TagReceive *into);
    struct AmTagSlot {
        AmTagHandler handler;
        void *arg;
        ucp_worker_h worker;
    };
    Result set_am_tag_handler(unsigned id, AmTagHandler handler, void *arg) noexcept;
    // The largest active-message header this worker sends.
    size_t max_am_header() const noexcept { return max_am_header_; }

private:
    explicit Worker(ucp_worker_h w) : w_(w) {}
    ucp_worker_h w_;
    std::vector<std::byte> address_;
    size_t max_am_header_ = 0;
    std::atomic<int> waiters_{0};
    // Registers cb for active messages `id`, called back with `slot`.
    Result install_am(unsigned id, ucp_am_recv_callback_t cb, void *slot) noexcept;
    std::vector<std::unique_ptr<AmSlot>> am_slots_;  // stable addresses UCX calls back with
    std::vector<std::unique_ptr<AmDataSlot>> am_data_slots_;
    std::vector<std::unique_ptr<AmTagSlot>> am_tag_slots_;
};

// Memory of this process opened to peers' puts and atomics.
class MemoryMap {
public:
    static Result create(Context &ctx, void *addr, size_t size, std::unique_ptr<MemoryMap> *out);
    ~MemoryMap();
    MemoryMap(const MemoryMap &) = delete;
    MemoryMap &operator=(const MemoryMap &) = delete;
    // The packed remote key a peer unpacks (RemoteKey) to write here.
    const std::vector<std::byte> &packed_key() const noexcept { return packed_; }
    uint64_t base() const noexcept { return base_; }
    size_t size() const noexcept { return size_; }

private:
    MemoryMap(ucp_context_h c, ucp_mem_h m, uint64_t base, size_t size)
        : ctx_(c), mem_(m), base_(base), size_(size) {}
    ucp_context_h ctx_;
    ucp_mem_h mem_;
    uint64_t base_;
    size_t size_;
    std::vector<std::byte> packed_;
};

class RemoteKey;

// An endpoint to a peer's worker, closed (flushed, bounded) on destruction.
class Endpoint {
public:
    // report_peer_failure: a dead peer fails operations instead of leaving
    // them pending (UCP_ERR_HANDLING_MODE_PEER); UCX's shared-memory
    // transports cannot do it and refuse such an endpoint.
    static Result create(Worker &w, std::span<const std::byte> peer_address,
                         bool report_peer_failure, std::unique_ptr<Endpoint> *out);
    ~Endpoint();
    Endpoint(const Endpoint &) = delete;
    Endpoint &operator=(const Endpoint &) = delete;
    ucp_ep_h get() const noexcept { return ep_; }

    // [src, src+size) to remote_addr; returns once the source may be reused
    // and the data was handed to the transport (not yet visible remotely).
    Result put(const void *src, size_t size, uint64_t remote_addr, const RemoteKey &key,
               Deadline d) noexcept;
    // The PIO / completion-flag store: the body, a fence, then the last
    // 8-byte word - a target that sees the last word sees the rest.  size is
    // a multiple of 8 and at least 8.
    Result put_last_word_after(const void *src, size_t size, uint64_t remote_addr,
                               const RemoteKey &key, Deadline d) noexcept;
    // Orders every earlier operation on this endpoint before every later one.
    Result fence() noexcept;
    // Everything issued so far is complete at the target.
    Result flush(Deadline d) noexcept;
    // An active message of `length` header bytes (Worker::set_am_handler at
    // the peer); returns once the header may be reused.
    Result am_send(unsigned id, const void *header, size_t length, Deadline d) noexcept;
    // An active message of a header and `size` bytes of data at `data`
    // (Worker::set_am_data_handler at the peer), eager or by rendezvous as
    // UCX chooses by size (`eager`: eager whatever the size); returns once
    // the data may be reused (for a rendezvous: once it landed at the peer).
    Result am_send_data(unsigned id, const void *header, size_t length, const void *data,
                        size_t size, Deadline d, bool eager = false) noexcept;
    // A synchronous tagged send of [data, data+size) (received as
    // set_am_tag_handler says): returns once the peer has the data.
    Result tag_send(const void *data, size_t size, uint64_t tag, Deadline d) noexcept;
    // This endpoint fails (peer_failed, and waits end) when `other` does: an
    // endpoint without failure reports, beside one with them to the same peer.
    void follow_failures_of(const Endpoint &other) noexcept { also_failed_ = &other.failed_; }
    // *(uint64_t *)remote_addr += value at the target, atomically.
    Result atomic_add(uint64_t value, uint64_t remote_addr, const RemoteKey &key,
                      Deadline d) noexcept;
    // The peer failed (report_peer_failure endpoints): tcaErrorPeerGone from
    // then on, without issuing anything.
    bool peer_failed() const noexcept {
        return failed_.load(std::memory_order_acquire) ||
               (also_failed_ != nullptr && also_failed_->load(std::memory_order_acquire));
    }

private:
    explicit Endpoint(Worker &w) : worker_(w) {}
    static void on_error(void *self, ucp_ep_h, ucs_status_t) noexcept;
    Worker &worker_;
    ucp_ep_h ep_ = nullptr;
    std::atomic<bool> failed_{false};
    const std::atomic<bool> *also_failed_ = nullptr;  // follow_failures_of
};

// A peer's packed key unpacked for one endpoint.
class RemoteKey {
public:
    static Result create(Endpoint &ep, std::span<const std::byte> packed,
                         std::unique_ptr<RemoteKey> *out);
    ~RemoteKey();
    RemoteKey(const RemoteKey &) = delete;
    RemoteKey &operator=(const RemoteKey &) = delete;
    ucp_rkey_h get() const noexcept { return rkey_; }

private:
    explicit RemoteKey(ucp_rkey_h r) : rkey_(r) {}
    ucp_rkey_h rkey_;
};

}  // namespace tca::ucx
