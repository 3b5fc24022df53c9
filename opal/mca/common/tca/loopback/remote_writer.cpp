// remote_writer.cpp - the data path of every put (PIO and DMA alike).
#include "loopback/remote_writer.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <cinttypes>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "gpu/cuda_runtime.hpp"
#include "loopback/byte_copy.hpp"
#include "loopback/copy_probe.hpp"

namespace tca::loopback {

namespace {
constexpr size_t kMaxIov = 512;
constexpr int kBounceWakeAfterUs = 10;        // see wait_served
constexpr uint64_t kBouncePiece = 32 * 1024;  // the writer raises `filled` every piece

}  // namespace

RemoteWriter::RemoteWriter(NodeSet &nodes, CopyPath path)
    : nodes_(nodes), arenas_(nodes), measure_(path == CopyPath::Auto) {
    if (path == CopyPath::Bounce)
        cma_refused_ = true;  // also TCA_SINGLE_COPY=0 (tests, locked-down hosts)
}

// Measured, the choice is the PIO writes': their thread waits for them
// anyway, and the target's copy-out overlaps the writer's copy-in.  DMA runs
// keep single copy, which needs nothing of the target (an offloaded
// broadcast's children forward or compute while their parent writes).
// Where the kernel refuses single copy (the probe says so), everything
// bounces.
void RemoteWriter::settle(const CopyProbe &p, int measured_by) {
    chosen_because_ =
        " (measured on node " + std::to_string(measured_by) + ": " + describe(p) + ")";
    if (p.error != 0)
        cma_refused_ = true;
    else
        pio_bounces_ = !single_copy_pays(p);
    measured_dear_ = p.error != 0 || pio_bounces_;
    measure_ = false;
}

RemoteWriter::~RemoteWriter() = default;

RemoteWriter::IpcMapping::~IpcMapping() {
    if (ptr != nullptr)
        gpu::CudaRuntime::instance().ipc_close(ptr);
}

Result RemoteWriter::check_registration(const tcaHandle &h) const noexcept {
    if (h.reg_index >= kMaxRegistrations)
        return tcaErrorInvalidHandle;
    const RegistrationEntry &e = nodes_.view(h.node).registrations()[h.reg_index];
    if (e.key.load(std::memory_order_acquire) != h.key)
        return tcaErrorNotRegistered;  // stale or forged
    // The right key with other fields: a corrupted copy.  The region byte
    // decides how addr is used (an internal-memory offset or a pointer).
    if (e.base != h.addr || e.size != h.size || e.region != h.region)
        return tcaErrorInvalidHandle;
    return tcaSuccess;
}

// The entry's fields between two loads of its key: the owner zeroes the key
// before it reuses the entry, so fields read under one unchanged key belong
// to that registration.
Result RemoteWriter::read_registration(const tcaHandle &h, Registration *out) const noexcept {
    if (h.reg_index >= kMaxRegistrations)
        return tcaErrorInvalidHandle;
    const RegistrationEntry &e = nodes_.view(h.node).registrations()[h.reg_index];
    if (e.key.load(std::memory_order_acquire) != h.key)
        return tcaErrorNotRegistered;
    const bool same = e.base == h.addr && e.size == h.size && e.region == h.region;
    *out = Registration{e.arena, e.arena_off, e.arena_serial};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e.key.load(std::memory_order_relaxed) != h.key)
        return tcaErrorNotRegistered;
    return same ? tcaSuccess : tcaErrorInvalidHandle;
}

Result RemoteWriter::write(const tcaHandle &dst, const RowCopy &c, const PutBound &bound) {
    if (c.width == 0 || c.height == 0)
        return tcaSuccess;
    const int node = dst.node;
    if (dst.region == tcaMemoryCPU && node != nodes_.self()) {
        Registration reg{};
        if (Result r = read_registration(dst, &reg); r != tcaSuccess)
            return r;
        // A killed peer shows up as ESRCH from process_vm_writev; the flags
        // catch finished peers (whose memory may already be gone).
        if (nodes_.known_gone(node))
            return tcaErrorPeerGone;
        if (reg.arena != 0) {  // tcaMalloc'd: plain stores into our mapping of the owner's arena
            return arenas_.with(node, reg.arena - 1, reg.arena_serial, reg.arena_off, dst.size,
                                [&](unsigned char *p) { return write_local(p, c); });
        }
        if (single_copy() && !(c.by_pio && pio_bounces_)) {
            const Result r = write_cma(node, dst.addr, c);
            if (r != tcaErrorNotSupported)
                return r;  // NotSupported: just refused, fall through
        }
        return write_bounce(node, dst, dst.addr, c, bound);
    }
    if (Result r = check_registration(dst); r != tcaSuccess)
        return r;
    switch (static_cast<tcaMemoryType>(dst.region)) {
    case tcaMemoryInternal:
        return write_local(nodes_.view(node).internal() + dst.addr, c);
    case tcaMemoryCPU:
        return write_local(reinterpret_cast<unsigned char *>(dst.addr), c);
    case tcaMemoryGPU:
        return write_gpu(dst, c);
    }
    return tcaErrorInvalidHandle;
}

Result RemoteWriter::write_local(unsigned char *dst_base, const RowCopy &c) {
    unsigned char *dst = dst_base + c.dst_off;
    if (c.src_on_gpu)
        return gpu::CudaRuntime::instance().copy_2d(dst, c.dst_pitch ? c.dst_pitch : c.width, c.src,
                                                    c.src_pitch ? c.src_pitch : c.width, c.width,
                                                    c.height);
    copy_rows(dst, c.dst_pitch, c.src, c.src_pitch, c.width, c.height, c.streaming);
    return tcaSuccess;
}

void RemoteWriter::refuse_cma(int err) {
    if (!cma_refused_.exchange(true))
        std::fprintf(stderr,
                     "tca: node %d: process_vm_writev refused (%s): the kernel's ptrace rules "
                     "(/proc/sys/kernel/yama/ptrace_scope, containers) forbid single-copy puts; "
                     "falling back to bounce copies through the target's engine thread (slower, "
                     "still correct)\n",
                     nodes_.self(), std::strerror(err));
}

Result RemoteWriter::write_cma(int node, uint64_t dst_addr, const RowCopy &c) {
    const pid_t pid = nodes_.view(node).header()->pid;
    std::vector<unsigned char> staging;
    if (c.src_on_gpu) {  // GPU -> remote host: stage through host memory
        staging.resize(c.width * c.height);
        if (Result r = gpu::CudaRuntime::instance().copy_2d(staging.data(), c.width, c.src,
                                                            c.src_pitch ? c.src_pitch : c.width,
                                                            c.width, c.height);
            r != tcaSuccess)
            return r;
    }
    const unsigned char *src = c.src_on_gpu ? staging.data() : c.src;
    const uint64_t src_pitch = c.src_on_gpu ? c.width : c.src_pitch;
    iovec local[kMaxIov], remote[kMaxIov];
    for (uint64_t row = 0; row < c.height;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kMaxIov, c.height - row));
        size_t total = 0;
        for (size_t i = 0; i < n; ++i) {
            local[i] = {const_cast<unsigned char *>(src + (row + i) * src_pitch), c.width};
            remote[i] = {reinterpret_cast<void *>(dst_addr + c.dst_off + (row + i) * c.dst_pitch),
                         c.width};
            total += c.width;
        }
        ssize_t done = process_vm_writev(pid, local, n, remote, n, 0);
        if (done < 0) {
            const int err = errno;
            if (err == EPERM || err == EACCES || err == ENOSYS) {
                if (row != 0)
                    return tcaErrorSystem;  // cannot happen midway; never half-write silently
                refuse_cma(err);
                return tcaErrorNotSupported;
            }
            if (err == ESRCH)
                return tcaErrorPeerGone;
            std::fprintf(stderr,
                         "tca: node %d: process_vm_writev to node %d failed: %s (memory freed "
                         "without tcaDestroyHandle?)\n",
                         nodes_.self(), node, std::strerror(err));
            return err == EFAULT ? tcaErrorNotRegistered : tcaErrorSystem;
        }
        // Short write (only at page-fault boundaries): finish row by row.
        if (static_cast<size_t>(done) < total) {
            size_t i = static_cast<size_t>(done) / c.width;
            uint64_t off = static_cast<size_t>(done) % c.width;
            for (; i < n; ++i, off = 0) {
                while (off < c.width) {
                    iovec l{const_cast<unsigned char *>(src + (row + i) * src_pitch) + off,
                            c.width - off};
                    iovec r{reinterpret_cast<unsigned char *>(dst_addr + c.dst_off +
                                                              (row + i) * c.dst_pitch) +
                                off,
                            c.width - off};
                    const ssize_t k = process_vm_writev(pid, &l, 1, &r, 1, 0);
                    if (k <= 0)
                        return errno == ESRCH ? tcaErrorPeerGone : tcaErrorSystem;
                    off += static_cast<uint64_t>(k);
                }
            }
        }
        row += n;
    }
    return tcaSuccess;
}

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
Result RemoteWriter::wait_bounded(EventWord &ev, Ready &&ready, int node, const PutBound &bound) {
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

Result RemoteWriter::write_bounce(int node, const tcaHandle &dst, uint64_t dst_addr,
                                  const RowCopy &c, const PutBound &bound) {
    if (nodes_.gone(node))
        return tcaErrorPeerGone;  // the bounce needs the peer's engine
    BounceArea *b = nodes_.view(node).bounce(static_cast<uint32_t>(nodes_.self()));
    // Take our mailbox at the target (another thread of ours may be using
    // it); keep serving our own mailboxes meanwhile, or two engines bouncing
    // into each other would deadlock.
    auto locked = [&] {
        service_bounce();
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
        service_bounce();
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

Result RemoteWriter::bounce_row(int node, const tcaHandle &dst, uint64_t dst_addr,
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
Result RemoteWriter::wait_served(SegmentView target, Ready &&ready, int node,
                                 const PutBound &bound) {
    auto served = [&] {
        service_bounce();  // ours meanwhile: two writers into each other would deadlock
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

bool RemoteWriter::service_bounce() {
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
bool RemoteWriter::serve_mailbox(uint32_t src, Serving &s) {
    BounceArea *b = nodes_.own().bounce(src);
    if (s.req == 0)
        if (const Claim c = claim_bounce(b, s); c != Claim::Serving)
            return c == Claim::Refused;
    // Copy out what the writer has streamed in so far (the snapshot's length
    // bounds it whatever the shared `filled` says), in runs that stop at the
    // ring's end.
    const uint64_t filled = std::min(b->filled.load(std::memory_order_acquire), s.len);
    const bool progress = filled > s.copied;
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
RemoteWriter::Claim RemoteWriter::claim_bounce(BounceArea *b, Serving &s) {
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
void RemoteWriter::finish_bounce(BounceArea *b, Serving &s, Result status) {
    const uint64_t req = s.req;
    s = Serving{};
    b->status.store(status, std::memory_order_relaxed);
    b->request.store(req,
                     std::memory_order_relaxed);  // the claim bit off: idle once done is stored
    b->done.store(req, std::memory_order_release);
    b->done_event.notify();
}

Result RemoteWriter::write_gpu(const tcaHandle &dst, const RowCopy &c) {
    auto &cuda = gpu::CudaRuntime::instance();
    if (!cuda.available())
        return tcaErrorNotSupported;
    unsigned char *base = nullptr;
    std::shared_ptr<IpcMapping> mapping;  // held until the copy is done
    if (dst.node == nodes_.self()) {
        base = reinterpret_cast<unsigned char *>(dst.addr);
    } else {
        if (nodes_.known_gone(dst.node))
            return tcaErrorPeerGone;
        const uint64_t extent =
            c.dst_off + (c.height > 1 ? (c.height - 1) * c.dst_pitch : 0) + c.width;
        if (const Result r = ipc_mapping(dst, dst.ipc_offset + extent, &mapping); r != tcaSuccess)
            return r;
        base = static_cast<unsigned char *>(mapping->ptr) + dst.ipc_offset;
    }
    return cuda.copy_2d(base + c.dst_off, c.height > 1 ? c.dst_pitch : c.width, c.src,
                        c.height > 1 ? c.src_pitch : c.width, c.width, c.height);
}

Result RemoteWriter::ipc_mapping(const tcaHandle &dst, uint64_t needed_end,
                                 std::shared_ptr<IpcMapping> *out) {
    auto &cuda = gpu::CudaRuntime::instance();
    const std::string handle(reinterpret_cast<const char *>(dst.ipc), sizeof dst.ipc);
    const MappingKey key{dst.node, dst.addr - dst.ipc_offset};
    std::lock_guard g(ipc_lock_);
    if (auto it = ipc_cache_.find(key); it != ipc_cache_.end() && it->second->handle == handle) {
        *out = it->second;
        return tcaSuccess;
    }
    // New to us, or another handle at a known start (a new allocation at a
    // reused address, or the same allocation registered again).  Whatever
    // "already mapped" refers to is one of our mappings of that node: first
    // those overlapping the bytes needed, then any; an evicted mapping that a
    // copy still uses closes when that copy ends, so the last tries wait.
    constexpr int kTries = 1000;  // ~100 ms at most
    for (int attempt = 0; attempt < kTries; ++attempt) {
        void *p = nullptr;
        bool already_mapped = false;
        const Result r = cuda.ipc_open(dst.ipc, &p, &already_mapped);
        if (r == tcaSuccess) {
            auto m = std::make_shared<IpcMapping>();
            m->handle = handle;
            m->ptr = p;
            uint64_t mapped_base = 0;
            if (!cuda.allocation_base(p, &mapped_base, &m->size))
                m->size = needed_end;
            ipc_cache_[key] = m;
            *out = std::move(m);
            return tcaSuccess;
        }
        if (!already_mapped)
            return r;
        if (attempt == 0) {
            evict_overlapping(dst.node, key.second, key.second + std::max<uint64_t>(needed_end, 1));
        } else if (attempt == 1) {
            evict_overlapping(dst.node, 0, UINT64_MAX);
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
    }
    std::fprintf(stderr,
                 "tca: cudaIpcOpenMemHandle: node %d's allocation at 0x%" PRIx64
                 " stays \"already mapped\" after our mappings of that node were closed\n",
                 dst.node, key.second);
    return tcaErrorSystem;
}

void RemoteWriter::evict_overlapping(int node, uint64_t start, uint64_t end) {
    for (auto it = ipc_cache_.lower_bound({node, 0});
         it != ipc_cache_.end() && it->first.first == node;) {
        const uint64_t b = it->first.second, e = b + std::max<uint64_t>(it->second->size, 1);
        it = (b < end && start < e) ? ipc_cache_.erase(it) : std::next(it);
    }
}

}  // namespace tca::loopback
