// pending_gets.cpp - see pending_gets.hpp; the owner's check of a request too.
#include "pending_gets.hpp"

#include <new>

namespace tca::btl {

PendingGets::PendingGets(uint32_t capacity) : ops_(capacity) {}

int PendingGets::begin(int peer_node, const void *owner, size_t len, const tcaHandle &src,
                       uint64_t src_addr, const tcaHandle &dst, uint64_t dst_addr, uint64_t size,
                       tca_btl_get_request_t *req) noexcept {
    // The owner writes into our registration, from its own.
    if (len > TCA_BTL_OWNER_BYTES || src.node != static_cast<uint16_t>(peer_node) ||
        !inside(src, src_addr, size) || !inside(dst, dst_addr, size))
        return TCA_BTL_GET_BAD;
    *req = tca_btl_get_request_t{0, src_addr, dst_addr, size, src, dst};
    return ops_.begin(peer_node, owner, len, &req->cookie) ? TCA_BTL_GET_OK : TCA_BTL_GET_FULL;
}

int PendingGets::begin_small(int peer_node, const void *owner, size_t len, const tcaHandle &src,
                             uint64_t src_addr, const tcaHandle &dst, uint64_t dst_addr,
                             uint64_t size, tca_btl_get_small_t *req) noexcept {
    if (len > TCA_BTL_OWNER_BYTES || src.node != static_cast<uint16_t>(peer_node) ||
        src.region != tcaMemoryCPU || dst.region != tcaMemoryCPU || !inside(src, src_addr, size) ||
        !inside(dst, dst_addr, size))
        return TCA_BTL_GET_BAD;
    *req = tca_btl_get_small_t{0, src_addr, size, src.key, src.reg_index, src.node, src.region, 0};
    return ops_.begin(peer_node, owner, len, &req->cookie) ? TCA_BTL_GET_OK : TCA_BTL_GET_FULL;
}

void PendingGets::cancel(uint64_t cookie) noexcept {
    ops_.cancel(cookie);
}

int PendingGets::finish(const tca_btl_get_done_t &done, int from_node, void *owner) noexcept {
    return answer_code(ops_.finish(done.cookie, from_node, owner));
}

}  // namespace tca::btl

// ---- C interface (tca_btl_core.h) ----
struct tca_btl_gets {
    explicit tca_btl_gets(uint32_t capacity) : gets(capacity) {}
    tca::btl::PendingGets gets;
};

extern "C" {

tca_btl_gets_t *tca_btl_gets_new(uint32_t capacity) {
    return new (std::nothrow) tca_btl_gets(capacity);
}
void tca_btl_gets_free(tca_btl_gets_t *g) {
    delete g;
}
int tca_btl_get_begin(tca_btl_gets_t *g, int peer_node, const void *owner, size_t len,
                      const tcaHandle *src, uint64_t src_addr, const tcaHandle *dst,
                      uint64_t dst_addr, uint64_t size, tca_btl_get_request_t *req) {
    return g->gets.begin(peer_node, owner, len, *src, src_addr, *dst, dst_addr, size, req);
}
int tca_btl_get_begin_small(tca_btl_gets_t *g, int peer_node, const void *owner, size_t len,
                            const tcaHandle *src, uint64_t src_addr, const tcaHandle *dst,
                            uint64_t dst_addr, uint64_t size, tca_btl_get_small_t *req) {
    return g->gets.begin_small(peer_node, owner, len, *src, src_addr, *dst, dst_addr, size, req);
}
int tca_btl_get_small_servable(const tca_btl_get_small_t *req, const tcaHandle *reg,
                               int self_node) {
    return reg != nullptr && reg->node == static_cast<uint16_t>(self_node) &&
           req->reg_node == reg->node && reg->region == tcaMemoryCPU && req->reg_key == reg->key &&
           req->reg_index == reg->reg_index && tca::btl::inside(*reg, req->src_addr, req->size);
}
void tca_btl_get_cancel(tca_btl_gets_t *g, uint64_t cookie) {
    g->gets.cancel(cookie);
}
int tca_btl_get_finish(tca_btl_gets_t *g, const tca_btl_get_done_t *done, int from_node,
                       void *owner) {
    return g->gets.finish(*done, from_node, owner);
}
int tca_btl_gets_pending(const tca_btl_gets_t *g) {
    return g->gets.pending();
}

int tca_btl_get_request_servable(const tca_btl_get_request_t *req, int self_node, int peer_node) {
    return req->src.node == static_cast<uint16_t>(self_node) &&
           req->dst.node == static_cast<uint16_t>(peer_node) &&
           tca::btl::inside(req->src, req->src_addr, req->size) &&
           tca::btl::inside(req->dst, req->dst_addr, req->size);
}

}  // extern "C"
