// ucp_transport.cpp - see ucp_transport.hpp.
#include "ucx/ucp_transport.hpp"

#include <poll.h>

#include <algorithm>
#include <cstring>

namespace tca::ucx {
namespace {

// A UCX status as a TCA result: a peer that went away is tcaErrorPeerGone,
// the rest tcaErrorSystem (the caller adds what it was doing).
Result from_status(ucs_status_t s) noexcept {
    switch (s) {
    case UCS_OK:
        return tcaSuccess;
    case UCS_ERR_NO_MEMORY:
        return tcaErrorNoMemory;
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CANCELED:
        return tcaErrorPeerGone;
    case UCS_ERR_TIMED_OUT:
        return tcaErrorTimeout;
    case UCS_ERR_UNSUPPORTED:
        return tcaErrorNotSupported;
    case UCS_ERR_INVALID_ADDR:
        return tcaErrorNotRegistered;  // a target refused our data (am_data_trampoline)
    default:
        return tcaErrorSystem;
    }
}

}  // namespace

Result Context::create(std::unique_ptr<Context> *out, std::string *why) {
    ucp_config_t *config = nullptr;
    if (ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK) {
        if (why)
            *why = std::string("ucp_config_read: ") + ucs_status_string(s);
        return tcaErrorNotSupported;
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features =
        UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM | UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    params.mt_workers_shared = 1;
    ucp_context_h ctx = nullptr;
    const ucs_status_t s = ucp_init(&params, config, &ctx);
    ucp_config_release(config);
    if (s != UCS_OK) {
        if (why)
            *why = std::string("ucp_init: ") + ucs_status_string(s);
        return tcaErrorNotSupported;
    }
    out->reset(new Context(ctx));
    return tcaSuccess;
}

Context::~Context() {
    ucp_cleanup(ctx_);
}

Result Worker::create(Context &ctx, std::unique_ptr<Worker> *out, std::string *why) {
    ucp_worker_params_t params{};
    params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    params.thread_mode =
        UCS_THREAD_MODE_MULTI;  // the application and the progress thread both use it
    ucp_worker_h w = nullptr;
    if (ucs_status_t s = ucp_worker_create(ctx.get(), &params, &w); s != UCS_OK) {
        if (why)
            *why = std::string("ucp_worker_create: ") + ucs_status_string(s);
        return from_status(s);
    }
    std::unique_ptr<Worker> worker(new Worker(w));
    ucp_address_t *addr = nullptr;
    size_t len = 0;
    if (ucs_status_t s = ucp_worker_get_address(w, &addr, &len); s != UCS_OK) {
        if (why)
            *why = std::string("ucp_worker_get_address: ") + ucs_status_string(s);
        return from_status(s);
    }
    const auto *b = reinterpret_cast<const std::byte *>(addr);
    worker->address_.assign(b, b + len);
    ucp_worker_release_address(w, addr);
    ucp_worker_attr_t attr{};
    attr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
    if (ucp_worker_query(w, &attr) == UCS_OK)
        worker->max_am_header_ = attr.max_am_header;
    *out = std::move(worker);
    return tcaSuccess;
}

Worker::~Worker() {
    ucp_worker_destroy(w_);
}

Result Worker::wait(ucs_status_ptr_t request, Deadline deadline,
                    const std::atomic<bool> *give_up) noexcept {
    if (request == nullptr)
        return tcaSuccess;  // completed in place
    if (UCS_PTR_IS_ERR(request))
        return from_status(UCS_PTR_STATUS(request));
    const ScopedCount waiting(waiters_);
    ucs_status_t s;
    unsigned spins = 0;
    while ((s = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(w_);
        if ((++spins & 1023) != 0)
            continue;
        const bool gone = give_up != nullptr && give_up->load(std::memory_order_acquire);
        if (gone || std::chrono::steady_clock::now() >= deadline) {
            ucp_request_cancel(w_, request);
            while (ucp_request_check_status(request) == UCS_INPROGRESS)
                ucp_worker_progress(w_);
            ucp_request_free(request);
            return gone ? tcaErrorPeerGone : tcaErrorTimeout;
        }
    }
    ucp_request_free(request);
    return from_status(s);
}

namespace {
ucs_status_t am_trampoline(void *arg, const void *header, size_t header_length, void *, size_t,
                           const ucp_am_recv_param_t *) {
    const auto *slot = static_cast<const Worker::AmSlot *>(arg);
    slot->handler(slot->arg, header, header_length);
    return UCS_OK;  // nothing kept
}
// A rendezvous receive needs no notice of its end: the sender's request
// completes once the data landed.
void am_data_received(void *, ucs_status_t, size_t, void *) {}

ucs_status_t am_data_trampoline(void *arg, const void *header, size_t header_length, void *data,
                                size_t length, const ucp_am_recv_param_t *param) {
    const auto *slot = static_cast<const Worker::AmDataSlot *>(arg);
    const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    void *to = nullptr;
    const Result r =
        slot->handler(slot->arg, header, header_length, rndv ? nullptr : data, length, &to);
    if (!rndv)
        return UCS_OK;  // stored (or refused) by the handler; nothing kept
    if (r != tcaSuccess || to == nullptr)
        return UCS_ERR_INVALID_ADDR;  // the sender's send fails with it
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    p.cb.recv_am = am_data_received;
    const ucs_status_ptr_t req = ucp_am_recv_data_nbx(slot->worker, data, to, length, &p);
    if (UCS_PTR_IS_PTR(req))
        ucp_request_free(req);  // runs to its end without us
    return UCS_OK;
}
ucs_status_t am_tag_trampoline(void *arg, const void *header, size_t header_length, void *, size_t,
                               const ucp_am_recv_param_t *) {
    const auto *slot = static_cast<const Worker::AmTagSlot *>(arg);
    Worker::TagReceive into{nullptr, 0, 0};
    const Result r = slot->handler(slot->arg, header, header_length, &into);
    if (r == tcaErrorInvalidValue)
        return UCS_OK;  // not a message the handler could read: no tag to drain
    if (r != tcaSuccess) {
        into.to = nullptr;
        into.size = 0;  // refused: received into nothing, so the sender is let go
    }
    ucp_request_param_t p{};
    const ucs_status_ptr_t req =
        ucp_tag_recv_nbx(slot->worker, into.to, into.size, into.tag, ~ucp_tag_t{0}, &p);
    if (UCS_PTR_IS_PTR(req))
        ucp_request_free(req);  // runs to its end without us
    return UCS_OK;
}
}  // namespace

namespace {
// Keeps a handler's slot where UCX can call back with it; nullptr: no memory.
template <class Slot>
Slot *keep(std::vector<std::unique_ptr<Slot>> &slots, const Slot &slot) noexcept {
    try {
        slots.push_back(std::make_unique<Slot>(slot));
        return slots.back().get();
    } catch (...) {
        return nullptr;
    }
}
}  // namespace

Result Worker::install_am(unsigned id, ucp_am_recv_callback_t cb, void *slot) noexcept {
    if (slot == nullptr)
        return tcaErrorNoMemory;
    ucp_am_handler_param_t p{};
    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                   UCP_AM_HANDLER_PARAM_FIELD_ARG;
    p.id = id;
    p.cb = cb;
    p.arg = slot;
    return from_status(ucp_worker_set_am_recv_handler(w_, &p));
}

Result Worker::set_am_handler(unsigned id, AmHandler handler, void *arg) noexcept {
    return install_am(id, am_trampoline, keep(am_slots_, AmSlot{handler, arg}));
}

Result Worker::set_am_data_handler(unsigned id, AmDataHandler handler, void *arg) noexcept {
    return install_am(id, am_data_trampoline, keep(am_data_slots_, AmDataSlot{handler, arg, w_}));
}

Result Worker::set_am_tag_handler(unsigned id, AmTagHandler handler, void *arg) noexcept {
    return install_am(id, am_tag_trampoline, keep(am_tag_slots_, AmTagSlot{handler, arg, w_}));
}

Result Endpoint::am_send(unsigned id, const void *header, size_t length, Deadline d) noexcept {
    if (peer_failed())
        return tcaErrorPeerGone;
    const ScopedCount inside = worker_.user();
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_AM_SEND_FLAG_EAGER;  // headers only: no rendezvous
    return worker_.wait(ucp_am_send_nbx(ep_, id, header, length, nullptr, 0, &p), d);
}

Result Endpoint::am_send_data(unsigned id, const void *header, size_t length, const void *data,
                              size_t size, Deadline d, bool eager) noexcept {
    if (peer_failed())
        return tcaErrorPeerGone;
    const ScopedCount inside = worker_.user();
    ucp_request_param_t p{};  // by default eager or rendezvous, by size, as UCX's thresholds say
    if (eager) {
        p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        p.flags = UCP_AM_SEND_FLAG_EAGER;
    }
    return worker_.wait(ucp_am_send_nbx(ep_, id, header, length, data, size, &p), d);
}

Result Endpoint::tag_send(const void *data, size_t size, uint64_t tag, Deadline d) noexcept {
    if (peer_failed())
        return tcaErrorPeerGone;
    const ScopedCount inside = worker_.user();
    ucp_request_param_t p{};
    return worker_.wait(ucp_tag_send_sync_nbx(ep_, data, size, tag, &p), d, also_failed_);
}

void Worker::sleep_for_events(int timeout_ms) noexcept {
    int fd = -1;
    if (ucp_worker_get_efd(w_, &fd) != UCS_OK) {
        poll(nullptr, 0, std::min(timeout_ms, 1));
        return;
    }
    const ucs_status_t s = ucp_worker_arm(w_);
    if (s == UCS_ERR_BUSY)
        return;  // events pending: progress at once
    if (s != UCS_OK) {
        poll(nullptr, 0, std::min(timeout_ms, 1));
        return;
    }
    pollfd p{fd, POLLIN, 0};
    (void) poll(&p, 1, timeout_ms);
}

Result MemoryMap::create(Context &ctx, void *addr, size_t size, std::unique_ptr<MemoryMap> *out) {
    if (addr == nullptr || size == 0)
        return tcaErrorInvalidValue;
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = addr;
    params.length = size;
    ucp_mem_h mem = nullptr;
    if (ucs_status_t s = ucp_mem_map(ctx.get(), &params, &mem); s != UCS_OK)
        return from_status(s);
    std::unique_ptr<MemoryMap> m(
        new MemoryMap(ctx.get(), mem, reinterpret_cast<uint64_t>(addr), size));
    void *packed = nullptr;
    size_t len = 0;
    if (ucs_status_t s = ucp_rkey_pack(ctx.get(), mem, &packed, &len); s != UCS_OK)
        return from_status(s);
    const auto *b = static_cast<const std::byte *>(packed);
    m->packed_.assign(b, b + len);
    ucp_rkey_buffer_release(packed);
    *out = std::move(m);
    return tcaSuccess;
}

MemoryMap::~MemoryMap() {
    ucp_mem_unmap(ctx_, mem_);
}

Result Endpoint::create(Worker &w, std::span<const std::byte> peer_address,
                        bool report_peer_failure, std::unique_ptr<Endpoint> *out) {
    if (peer_address.empty())
        return tcaErrorInvalidValue;
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address = reinterpret_cast<const ucp_address_t *>(peer_address.data());
    std::unique_ptr<Endpoint> e(new Endpoint(w));
    if (report_peer_failure) {
        params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
        params.err_handler.cb = on_error;
        params.err_handler.arg = e.get();
    } else {
        params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    }
    if (ucs_status_t s = ucp_ep_create(w.get(), &params, &e->ep_); s != UCS_OK)
        return from_status(s);
    *out = std::move(e);
    return tcaSuccess;
}

void Endpoint::on_error(void *self, ucp_ep_h, ucs_status_t) noexcept {
    static_cast<Endpoint *>(self)->failed_.store(true, std::memory_order_release);
}

Endpoint::~Endpoint() {
    if (ep_ == nullptr)
        return;  // its create failed (a peer address nobody listens on)
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;  // a peer may be gone already: do not wait for it
    (void) worker_.wait(ucp_ep_close_nbx(ep_, &p),
                        std::chrono::steady_clock::now() + std::chrono::seconds(5));
}

Result Endpoint::put(const void *src, size_t size, uint64_t remote_addr, const RemoteKey &key,
                     Deadline d) noexcept {
    if (peer_failed())
        return tcaErrorPeerGone;
    const ScopedCount inside = worker_.user();
    if (size == 0)
        return tcaSuccess;
    ucp_request_param_t p{};
    return worker_.wait(ucp_put_nbx(ep_, src, size, remote_addr, key.get(), &p), d);
}

Result Endpoint::put_last_word_after(const void *src, size_t size, uint64_t remote_addr,
                                     const RemoteKey &key, Deadline d) noexcept {
    if (size < 8 || size % 8 != 0)
        return tcaErrorInvalidValue;
    if (peer_failed())
        return tcaErrorPeerGone;
    const ScopedCount inside = worker_.user();
    const size_t body = size - 8;
    ucp_request_param_t p{};
    // Both are in flight at once (a multi-fragment body and a short last word
    // can then arrive in either order): only the fence keeps the word last.
    ucs_status_ptr_t body_req = nullptr;
    if (body > 0) {
        body_req = ucp_put_nbx(ep_, src, body, remote_addr, key.get(), &p);
        if (UCS_PTR_IS_ERR(body_req))
            return from_status(UCS_PTR_STATUS(body_req));
        if (Result r = fence(); r != tcaSuccess) {
            (void) worker_.wait(body_req, d);
            return r;
        }
    }
    ucs_status_ptr_t last_req = ucp_put_nbx(ep_, static_cast<const unsigned char *>(src) + body, 8,
                                            remote_addr + body, key.get(), &p);
    const Result rb = worker_.wait(body_req, d);
    const Result rl = worker_.wait(last_req, d);
    return rb != tcaSuccess ? rb : rl;
}

Result Endpoint::fence() noexcept {
    // ucp_worker_fence orders the worker's operations on every endpoint:
    // what was issued before completes at its target before what follows.
    return from_status(ucp_worker_fence(worker_.get()));
}

Result Endpoint::flush(Deadline d) noexcept {
    if (peer_failed())
        return tcaErrorPeerGone;
    const ScopedCount inside = worker_.user();
    ucp_request_param_t p{};
    return worker_.wait(ucp_ep_flush_nbx(ep_, &p), d);
}

Result Endpoint::atomic_add(uint64_t value, uint64_t remote_addr, const RemoteKey &key,
                            Deadline d) noexcept {
    if (peer_failed())
        return tcaErrorPeerGone;
    const ScopedCount inside = worker_.user();
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_contig(sizeof(uint64_t));
    return worker_.wait(
        ucp_atomic_op_nbx(ep_, UCP_ATOMIC_OP_ADD, &value, 1, remote_addr, key.get(), &p), d);
}

Result RemoteKey::create(Endpoint &ep, std::span<const std::byte> packed,
                         std::unique_ptr<RemoteKey> *out) {
    if (packed.empty())
        return tcaErrorInvalidValue;
    ucp_rkey_h rkey = nullptr;
    if (ucs_status_t s = ucp_ep_rkey_unpack(ep.get(), packed.data(), &rkey); s != UCS_OK)
        return from_status(s);
    out->reset(new RemoteKey(rkey));
    return tcaSuccess;
}

RemoteKey::~RemoteKey() {
    ucp_rkey_destroy(rkey_);
}

}  // namespace tca::ucx
