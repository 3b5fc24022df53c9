// remote_atomics.cpp - see remote_atomics.hpp.
#include "remote_atomics.hpp"

#include <atomic>
#include <new>
#include <type_traits>

namespace tca::btl {

namespace {

uint64_t operand_bytes(uint32_t flags) {
    return (flags & TCA_BTL_ATOMIC_32BIT) != 0 ? 4 : 8;
}

// reg: the registration the request names (its slot and key), host memory.
bool well_formed(const tca_btl_atomic_request_t &r, const tcaHandle &reg) {
    const uint64_t bytes = operand_bytes(r.flags);
    return r.op >= TCA_BTL_ATOMIC_ADD && r.op < TCA_BTL_ATOMIC_OPS_END &&
           (r.flags & ~uint32_t{TCA_BTL_ATOMIC_32BIT}) == 0 && r.addr % bytes == 0 &&
           reg.region == tcaMemoryCPU && r.reg_region == reg.region && r.reg_key == reg.key &&
           r.reg_index == reg.reg_index && r.reg_node == reg.node && inside(reg, r.addr, bytes);
}

// min/max have no fetch_ form before C++26: a compare-exchange loop.
template <class T, class Better>
T fetch_select(std::atomic_ref<T> a, T v, Better better) {
    T old = a.load(std::memory_order_relaxed);
    while (better(v, old) &&
           !a.compare_exchange_weak(old, v, std::memory_order_acq_rel, std::memory_order_relaxed)) {
    }
    return old;
}

// T is the signed type of the operand's width (MIN and MAX compare signed,
// as Open MPI's own emulations do); the bit operations do not care.
template <class T>
T run_on(T *p, uint32_t op, T v, T compare) {
    std::atomic_ref<T> a(*p);
    constexpr auto order = std::memory_order_acq_rel;
    switch (op) {
    case TCA_BTL_ATOMIC_ADD: {
        // Wrapping addition, without signed overflow: add as unsigned.
        using U = std::make_unsigned_t<T>;
        std::atomic_ref<U> u(*reinterpret_cast<U *>(p));
        return static_cast<T>(u.fetch_add(static_cast<U>(v), order));
    }
    case TCA_BTL_ATOMIC_AND:
        return a.fetch_and(v, order);
    case TCA_BTL_ATOMIC_OR:
        return a.fetch_or(v, order);
    case TCA_BTL_ATOMIC_XOR:
        return a.fetch_xor(v, order);
    case TCA_BTL_ATOMIC_SWAP:
        return a.exchange(v, order);
    case TCA_BTL_ATOMIC_MIN:
        return fetch_select(a, v, [](T x, T y) { return x < y; });
    case TCA_BTL_ATOMIC_MAX:
        return fetch_select(a, v, [](T x, T y) { return x > y; });
    default: {  // TCA_BTL_ATOMIC_CSWAP: v is the new value
        T expected = compare;
        a.compare_exchange_strong(expected, v, order, std::memory_order_acquire);
        return expected;  // the old value either way
    }
    }
}

}  // namespace

bool run_atomic(const tca_btl_atomic_request_t &req, const tcaHandle &reg, int self_node,
                uint64_t *old) noexcept {
    if (reg.node != static_cast<uint16_t>(self_node) || !well_formed(req, reg))
        return false;
    if ((req.flags & TCA_BTL_ATOMIC_32BIT) != 0) {
        const int32_t r =
            run_on(reinterpret_cast<int32_t *>(req.addr), req.op, static_cast<int32_t>(req.operand),
                   static_cast<int32_t>(req.compare));
        *old = static_cast<uint32_t>(r);
    } else {
        const int64_t r =
            run_on(reinterpret_cast<int64_t *>(req.addr), req.op, static_cast<int64_t>(req.operand),
                   static_cast<int64_t>(req.compare));
        *old = static_cast<uint64_t>(r);
    }
    return true;
}

int PendingAtomics::begin(int peer_node, const void *owner, size_t len, const tcaHandle &target,
                          uint64_t addr, uint32_t op, uint32_t flags, uint64_t operand,
                          uint64_t compare, tca_btl_atomic_request_t *req) noexcept {
    *req = tca_btl_atomic_request_t{};
    req->addr = addr;
    req->operand = operand;
    req->compare = compare;
    req->reg_key = target.key;
    req->reg_index = target.reg_index;
    req->reg_node = target.node;
    req->reg_region = target.region;
    req->flags = static_cast<uint8_t>(flags);
    req->op = op;
    if (len > TCA_BTL_OWNER_BYTES || target.node != static_cast<uint16_t>(peer_node) ||
        flags > UINT8_MAX || !well_formed(*req, target))
        return TCA_BTL_GET_BAD;
    return ops_.begin(peer_node, owner, len, &req->cookie) ? TCA_BTL_GET_OK : TCA_BTL_GET_FULL;
}

int PendingAtomics::finish(const tca_btl_atomic_done_t &done, int from_node, void *owner) noexcept {
    return answer_code(ops_.finish(done.cookie, from_node, owner));
}

}  // namespace tca::btl

// ---- C interface (tca_btl_core.h) ----
struct tca_btl_atomics {
    explicit tca_btl_atomics(uint32_t capacity) : atomics(capacity) {}
    tca::btl::PendingAtomics atomics;
};

extern "C" {

tca_btl_atomics_t *tca_btl_atomics_new(uint32_t capacity) {
    return new (std::nothrow) tca_btl_atomics(capacity);
}
void tca_btl_atomics_free(tca_btl_atomics_t *a) {
    delete a;
}
int tca_btl_atomic_begin(tca_btl_atomics_t *a, int peer_node, const void *owner, size_t len,
                         const tcaHandle *target, uint64_t addr, uint32_t op, uint32_t flags,
                         uint64_t operand, uint64_t compare, tca_btl_atomic_request_t *req) {
    return a->atomics.begin(peer_node, owner, len, *target, addr, op, flags, operand, compare, req);
}
void tca_btl_atomic_cancel(tca_btl_atomics_t *a, uint64_t cookie) {
    a->atomics.cancel(cookie);
}
int tca_btl_atomic_finish(tca_btl_atomics_t *a, const tca_btl_atomic_done_t *done, int from_node,
                          void *owner) {
    return a->atomics.finish(*done, from_node, owner);
}
int tca_btl_atomics_pending(const tca_btl_atomics_t *a) {
    return a->atomics.pending();
}
int tca_btl_atomic_run(const tca_btl_atomic_request_t *req, const tcaHandle *reg, int self_node,
                       uint64_t *old) {
    return reg != nullptr && tca::btl::run_atomic(*req, *reg, self_node, old) ? TCA_BTL_GET_OK
                                                                              : TCA_BTL_GET_BAD;
}

}  // extern "C"
