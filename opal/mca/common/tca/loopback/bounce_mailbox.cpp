// bounce_mailbox.cpp - see bounce_mailbox.hpp.
#include "loopback/bounce_mailbox.hpp"

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "gpu/cuda_runtime.hpp"
#include "loopback/byte_copy.hpp"
#include "model/virtual_clock.hpp"

namespace tca::loopback {

namespace {
constexpr int kBounceWakeAfterUs = 10;        // see wait_served
constexpr uint64_t kBouncePiece = 32 * 1024;  // the writer raises `filled` every piece
}  // namespace

// The mailbox protocol.  A writer holds the robust lock, waits until the
// mailbox is idle (request == done: nothing posted or being served), posts
// request = done + 1 for one whole row, and then streams the row through the
// mailbox as a ring: piece by piece, raising `filled`, never overwriting
// what the server has not `drained` yet.  A server claims a request by
// setting kClaimed on it (compare-and-swap), copies out behind the writer,
// then clears the bit and stores done.  A writer that gives up (its bound ran
// out: a stopped target) marks the request kCancelled if unclaimed (the
// server then ends it without copying) or raises `cancelled` if claimed (the
// server ends it where it is); either way the mailbox stays busy - the next
// writer waits for idle - until the server has ended it.  The same idle wait
// keeps a writer that recovers the lock from a dead writer (EOWNERDEAD) off
// a mailbox the target is still serving; a writer that dies half way is
// noticed by the server (its process is gone).
namespace {
constexpr uint64_t kClaimed = 1ull << 63, kCancelled = 1ull << 62;

bool mailbox_idle(const BounceArea *b) noexcept {
    return b->request.load(std::memory_order_acquire) == b->done.load(std::memory_order_acquire);
}
}  // namespace

template <class Ready>
Result BounceMailbox::wait_bounded(EventWord &ev, Ready &&ready, int node, const PutBound &bound) {
    bool over = false;
    auto until = [&] {
        if (ready())
            return true;
        return over = bound.over();
    };
    if (Result r = nodes_.wait_until(ev, until, node, NodeSet::Patience::WhilePeerLives);
        r != tcaSuccess)
        return r;
    return over && !ready() ? tcaErrorTimeout : tcaSuccess;
}

Result BounceMailbox::write(int node, const tcaHandle &dst, uint64_t dst_addr, const RowCopy &c,
                            const PutBound &bound) {
    if (nodes_.gone(node))
        return tcaErrorPeerGone;  // the bounce needs the peer's engine
    BounceArea *b = nodes_.view(node).bounce(static_cast<uint32_t>(nodes_.self()));
    // Take our mailbox at the target (another thread of ours may be using
    // it); keep serving our own mailboxes meanwhile, or two engines bouncing
    // into each other would deadlock.
    auto locked = [&] {
        service();
        const int rc = pthread_mutex_trylock(&b->lock);
        if (rc == EOWNERDEAD)
            pthread_mutex_consistent(&b->lock);  // previous writer died
        return rc == 0 || rc == EOWNERDEAD;
    };
    if (Result r = wait_bounded(nodes_.own().header()->app_event, locked, node, bound);
        r != tcaSuccess)
        return r;
    // A writer before us may have left a request being served (it gave up,
    // or died): never refill the mailbox under the server.
    auto idle = [&] {
        service();
        return mailbox_idle(b);
    };
    Result result = wait_bounded(b->done_event, idle, node, bound);
    for (uint64_t row = 0; row < c.height && result == tcaSuccess; ++row) {
        const unsigned char *src = c.src + row * c.src_pitch;
        const uint64_t dst_row = dst_addr + c.dst_off + row * c.dst_pitch;
        if (c.width > 0)
            result = bounce_row(node, dst, dst_row, src, c.width, c.src_on_gpu, bound);
    }
    pthread_mutex_unlock(&b->lock);
    return result;
}

Result BounceMailbox::bounce_row(int node, const tcaHandle &dst, uint64_t dst_addr,
                                 const unsigned char *src, uint64_t len, bool src_on_gpu,
                                 const PutBound &bound) {
    SegmentView target = nodes_.view(node);
    const auto self = static_cast<uint32_t>(nodes_.self());
    BounceArea *b = target.bounce(self);
    b->dst_addr = dst_addr;
    b->dst_key = dst.key;
    b->dst_reg = dst.reg_index;
    b->len = len;
    b->filled.store(0, std::memory_order_relaxed);
    b->drained.store(0, std::memory_order_relaxed);
    b->cancelled.store(0, std::memory_order_relaxed);
    const uint64_t seq = b->done.load(std::memory_order_acquire) + 1;  // idle: request == done
    // Posted before the bytes: a target in MPI progress claims it at once and
    // copies each piece out while we copy the next one in.  The mask bit
    // after the request: a server that sees the bit finds the request.
    b->request.store(seq, std::memory_order_release);
    target.header()->bounce_posted.fetch_or(uint64_t{1} << self, std::memory_order_acq_rel);
    auto ended = [&] { return b->done.load(std::memory_order_acquire) == seq; };
    // Pieces divide the ring, so none wraps.  From GPU memory: half rings
    // (each CUDA copy has a fixed cost).
    const uint64_t piece = src_on_gpu ? kBounceSize / 2 : kBouncePiece;
    Result r = tcaSuccess;
    for (uint64_t off = 0; off < len && r == tcaSuccess; off += piece) {
        const uint64_t n = std::min(piece, len - off);
        if (off + n > kBounceSize) {  // wait until the bytes this piece overwrites are out
            const uint64_t need = off + n - kBounceSize;
            r = wait_served(
                target,
                [&] { return b->drained.load(std::memory_order_acquire) >= need || ended(); }, node,
                bound);
            if (r == tcaSuccess && ended())
                break;  // the server refused the request: its status says why
        }
        if (r != tcaSuccess)
            break;
        unsigned char *slot = b->data + off % kBounceSize;
        if (src_on_gpu)
            r = gpu::CudaRuntime::instance().copy(slot, src + off, n);
        else
            std::memcpy(slot, src + off, n);
        if (r == tcaSuccess)
            b->filled.store(off + n, std::memory_order_release);
    }
    if (r == tcaSuccess)
        r = wait_served(target, ended, node, bound);
    if (r != tcaSuccess) {
        // Give up.  Unclaimed: mark it so nobody serves it (a CAS, so a claim
        // and this cannot both win); claimed: ask the server to end it.
        uint64_t expected = seq;
        if (!b->request.compare_exchange_strong(expected, seq | kCancelled,
                                                std::memory_order_acq_rel))
            b->cancelled.store(1, std::memory_order_release);
        target.header()->engine_event.wake_all();  // the server ends it even if it sleeps
        return r;
    }
    return static_cast<Result>(b->status.load(std::memory_order_acquire));
}

// Waits (bounded) for the target to serve our mailbox request so far.
template <class Ready>
Result BounceMailbox::wait_served(SegmentView target, Ready &&ready, int node,
                                  const PutBound &bound) {
    auto served = [&] {
        service();  // ours meanwhile: two writers into each other would deadlock
        return ready();
    };
    // A target inside MPI progress serves its mailbox itself (tcaProgress)
    // within a few microseconds: give it that long before waking its engine
    // thread, which would first have to take the core from that very thread.
    const auto patience =
        std::chrono::steady_clock::now() + std::chrono::microseconds(kBounceWakeAfterUs);
    while (!served()) {
        if (std::chrono::steady_clock::now() < patience) {
            cpu_relax();
            continue;
        }
        target.header()->engine_event.wake_all();  // not served: its engine may be napping
        return wait_bounded(target.bounce(static_cast<uint32_t>(nodes_.self()))->done_event, served,
                            node, bound);
    }
    return tcaSuccess;
}

bool BounceMailbox::service() {
    std::atomic<uint64_t> &posted = nodes_.own().header()->bounce_posted;
    // Cheap look without the lock (the engine calls this on every pass)...
    if (posted.load(std::memory_order_acquire) == 0)
        return false;
    std::unique_lock g(service_lock_, std::try_to_lock);
    if (!g.owns_lock())
        return false;
    // One pass over every posted mailbox, a writer's pieces so far each: the
    // writers fill their rings while we drain the others'.
    bool progress = false;
    for (uint64_t mask = posted.load(std::memory_order_acquire); mask != 0; mask &= mask - 1) {
        const auto src = static_cast<uint32_t>(__builtin_ctzll(mask));
        if (src >= static_cast<uint32_t>(nodes_.size())) {  // no such node: nobody to serve
            posted.fetch_and(~(uint64_t{1} << src), std::memory_order_acq_rel);
            continue;
        }
        progress |= serve_mailbox(src, serving_[src]);
        BounceArea *b = nodes_.own().bounce(src);
        if (serving_[src].req == 0 && mailbox_idle(b)) {
            // Idle: clear its bit, then look again (a request posted between
            // the look and the clear sets the bit after posting: keep it).
            posted.fetch_and(~(uint64_t{1} << src), std::memory_order_acq_rel);
            if (!mailbox_idle(b))
                posted.fetch_or(uint64_t{1} << src, std::memory_order_acq_rel);
        }
    }
    return progress;
}

// service_lock_ held: one pass over the mailbox of source node src.
bool BounceMailbox::serve_mailbox(uint32_t src, Serving &s) {
    BounceArea *b = nodes_.own().bounce(src);
    if (s.req == 0)
        if (const Claim c = claim_bounce(b, s); c != Claim::Serving)
            return c == Claim::Refused;
    // Copy out what the writer has streamed in so far (the snapshot's length
    // bounds it whatever the shared `filled` says), in runs that stop at the
    // ring's end.
    const uint64_t filled = std::min(b->filled.load(std::memory_order_acquire), s.len);
    const bool progress = filled > s.copied;
    // Virtual time (a segment with stamps): the data lands now, not when its
    // writer recorded the landing before handing it to us (virtual_stamps.hpp).
    if (progress && nodes_.own().header()->stamp_offset != 0)
        nodes_.own().header()->polled_wall_ns.store(monotonic_ns(), std::memory_order_relaxed);
    while (s.copied < filled) {
        const uint64_t at = s.copied % kBounceSize,
                       n = std::min(filled - s.copied, kBounceSize - at);
        copy_bytes(reinterpret_cast<unsigned char *>(s.dst_addr) + s.copied, b->data + at, n);
        s.copied += n;
    }
    if (progress) {
        b->drained.store(s.copied, std::memory_order_release);
        b->done_event.notify();  // the writer may wait for room
    }
    if (s.copied < s.len) {
        if (b->cancelled.load(std::memory_order_acquire) != 0) {  // the writer gave up
            finish_bounce(b, s, tcaErrorTimeout);
            return true;
        }
        // A writer that died half way would hold the mailbox for ever; looked
        // at once a millisecond while it adds nothing (a process check).
        if (!progress) {
            const auto now = std::chrono::steady_clock::now();
            if (now >= s.look_at) {
                s.look_at = now + std::chrono::milliseconds(1);
                if (nodes_.gone(static_cast<int>(src)))
                    finish_bounce(b, s, tcaErrorPeerGone);
            }
        }
        return progress;
    }
    finish_bounce(b, s, tcaSuccess);
    return true;
}

// service_lock_ held.  Claims the posted request and checks it, on one
// snapshot of its fields: the writer (another process) can still change the
// shared copy between a check and a use.
BounceMailbox::Claim BounceMailbox::claim_bounce(BounceArea *b, Serving &s) {
    // The request is read only under the lock.  A request read before it can
    // be one another thread of ours has served meanwhile, after which the
    // writer already posted its next chunk: serving the stale number copied
    // that next chunk's bytes to this chunk's address and moved `done`
    // backwards (1 exchange in ~100 of a 64 MiB Sendrecv).
    uint64_t req = b->request.load(std::memory_order_acquire);
    if (req == b->done.load(std::memory_order_relaxed) || (req & kClaimed))
        return Claim::None;
    if (req & kCancelled) {  // given up before anyone claimed it: end it unread
        s.req = req & ~kCancelled;
        finish_bounce(b, s, tcaErrorTimeout);
        return Claim::Refused;
    }
    // Claim it: from here on the writer cannot take it back (a writer that
    // gave up first set kCancelled on it, and the claim fails).
    if (!b->request.compare_exchange_strong(req, req | kClaimed, std::memory_order_acq_rel))
        return Claim::None;
    s = Serving{req, b->dst_addr, b->len, 0, {}};
    const uint64_t dst_key = b->dst_key;
    const uint32_t dst_reg = b->dst_reg;
    // Check the target range against our own table: a peer never gets to
    // write outside memory we registered.
    const RegistrationEntry *e =
        dst_reg < kMaxRegistrations ? &nodes_.own().registrations()[dst_reg] : nullptr;
    if (e == nullptr || e->key.load(std::memory_order_acquire) != dst_key || s.dst_addr < e->base ||
        s.len > e->size || s.dst_addr - e->base > e->size - s.len) {
        finish_bounce(b, s, tcaErrorNotRegistered);
        return Claim::Refused;
    }
    return Claim::Serving;
}

// service_lock_ held: the request being served is done (status for the writer).
void BounceMailbox::finish_bounce(BounceArea *b, Serving &s, Result status) {
    const uint64_t req = s.req;
    s = Serving{};
    b->status.store(status, std::memory_order_relaxed);
    b->request.store(req,
                     std::memory_order_relaxed);  // the claim bit off: idle once done is stored
    b->done.store(req, std::memory_order_release);
    b->done_event.notify();
}

}  // namespace tca::loopback
