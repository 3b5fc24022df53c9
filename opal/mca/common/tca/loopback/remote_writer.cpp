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

namespace tca::loopback {

namespace {
constexpr size_t kMaxIov = 512;
constexpr int kBounceWakeAfterUs = 10;  // see bounce_chunk

// The last word of a copy is stored exactly once, after the rest.  glibc's
// memcpy writes with overlapping stores (8..15 bytes: the first and the last
// 8, so an 8-byte copy stores the same word twice; longer copies rewrite
// their tail).  Programs poll a flag word that a PIO or DMA write sets and
// then clear it themselves (the published PIO marker protocol, tcaSendPIO's
// final word): a clear landing between two stores of the flag is undone by
// the second, and the next wait passes at once on stale data (seen as about
// 1 run in 20 of test/tca-api/pio_allreduce).  Short copies go out as
// non-overlapping constant-size pieces in address order, one store each (an
// aligned word is never torn); long ones as memcpy of all but the last 8
// bytes, then those 8 bytes in one store.
void copy_bytes(unsigned char *dst, const unsigned char *src, uint64_t n) {
    if (n >= 64) {
        std::memcpy(dst, src, n - 8);
        __builtin_memcpy(dst + n - 8, src + n - 8, 8);
        return;
    }
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) __builtin_memcpy(dst + i, src + i, 8);
    if (i + 4 <= n) __builtin_memcpy(dst + i, src + i, 4), i += 4;
    if (i + 2 <= n) __builtin_memcpy(dst + i, src + i, 2), i += 2;
    if (i < n) dst[i] = src[i];
}

void copy_rows(unsigned char *dst, uint64_t dst_pitch, const unsigned char *src, uint64_t src_pitch,
               uint64_t width, uint64_t height) {
    if (height == 1 || (dst_pitch == width && src_pitch == width)) {
        copy_bytes(dst, src, width * height);
        return;
    }
    for (uint64_t r = 0; r < height; ++r) copy_bytes(dst + r * dst_pitch, src + r * src_pitch, width);
}
}  // namespace

RemoteWriter::RemoteWriter(NodeSet &nodes, bool single_copy) : nodes_(nodes), arenas_(nodes) {
    if (!single_copy) cma_refused_ = true;  // TCA_SINGLE_COPY=0: forced bounce (tests, locked-down hosts)
}

RemoteWriter::~RemoteWriter() = default;

RemoteWriter::IpcMapping::~IpcMapping() {
    if (ptr != nullptr) gpu::CudaRuntime::instance().ipc_close(ptr);
}

Result RemoteWriter::check_registration(const tcaHandle &h) const noexcept {
    if (h.reg_index >= kMaxRegistrations) return tcaErrorInvalidHandle;
    const RegistrationEntry &e = nodes_.view(h.node).registrations()[h.reg_index];
    if (e.key.load(std::memory_order_acquire) != h.key) return tcaErrorNotRegistered;  // stale or forged
    // The right key with other fields: a corrupted copy.  The region byte
    // decides how addr is used (an internal-memory offset or a pointer).
    if (e.base != h.addr || e.size != h.size || e.region != h.region) return tcaErrorInvalidHandle;
    return tcaSuccess;
}

// The entry's fields between two loads of its key: the owner zeroes the key
// before it reuses the entry, so fields read under one unchanged key belong
// to that registration.
Result RemoteWriter::read_registration(const tcaHandle &h, Registration *out) const noexcept {
    if (h.reg_index >= kMaxRegistrations) return tcaErrorInvalidHandle;
    const RegistrationEntry &e = nodes_.view(h.node).registrations()[h.reg_index];
    if (e.key.load(std::memory_order_acquire) != h.key) return tcaErrorNotRegistered;
    const bool same = e.base == h.addr && e.size == h.size && e.region == h.region;
    *out = Registration{e.arena, e.arena_off, e.arena_serial};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e.key.load(std::memory_order_relaxed) != h.key) return tcaErrorNotRegistered;
    return same ? tcaSuccess : tcaErrorInvalidHandle;
}

Result RemoteWriter::write(const tcaHandle &dst, const RowCopy &c, const PutBound &bound) {
    if (c.width == 0 || c.height == 0) return tcaSuccess;
    const int node = dst.node;
    if (dst.region == tcaMemoryCPU && node != nodes_.self()) {
        Registration reg{};
        if (Result r = read_registration(dst, &reg); r != tcaSuccess) return r;
        // A killed peer shows up as ESRCH from process_vm_writev; the flags
        // catch finished peers (whose memory may already be gone).
        if (nodes_.known_gone(node)) return tcaErrorPeerGone;
        if (reg.arena != 0) {  // tcaMalloc'd: plain stores into our mapping of the owner's arena
            return arenas_.with(node, reg.arena - 1, reg.arena_serial, reg.arena_off, dst.size,
                                [&](unsigned char *p) { return write_local(p, c); });
        }
        if (single_copy()) {
            const Result r = write_cma(node, dst.addr, c);
            if (r != tcaErrorNotSupported) return r;  // NotSupported: just refused, fall through
        }
        return write_bounce(node, dst, dst.addr, c, bound);
    }
    if (Result r = check_registration(dst); r != tcaSuccess) return r;
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
    if (c.src_on_gpu) return gpu::CudaRuntime::instance().copy_2d(dst, c.dst_pitch ? c.dst_pitch : c.width, c.src,
                                                                    c.src_pitch ? c.src_pitch : c.width, c.width,
                                                                    c.height);
    copy_rows(dst, c.dst_pitch, c.src, c.src_pitch, c.width, c.height);
    return tcaSuccess;
}

void RemoteWriter::refuse_cma(int err) {
    if (!cma_refused_.exchange(true))
        std::fprintf(stderr,
                     "tca: node %d: process_vm_writev refused (%s): the kernel's ptrace rules "
                     "(/proc/sys/kernel/yama/ptrace_scope, containers) forbid single-copy puts; "
                     "falling back to bounce copies through the target's engine thread (slower, still correct)\n",
                     nodes_.self(), std::strerror(err));
}

Result RemoteWriter::write_cma(int node, uint64_t dst_addr, const RowCopy &c) {
    const pid_t pid = nodes_.view(node).header()->pid;
    std::vector<unsigned char> staging;
    if (c.src_on_gpu) {  // GPU -> remote host: stage through host memory
        staging.resize(c.width * c.height);
        if (Result r = gpu::CudaRuntime::instance().copy_2d(staging.data(), c.width, c.src,
                                                            c.src_pitch ? c.src_pitch : c.width, c.width, c.height);
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
            remote[i] = {reinterpret_cast<void *>(dst_addr + c.dst_off + (row + i) * c.dst_pitch), c.width};
            total += c.width;
        }
        ssize_t done = process_vm_writev(pid, local, n, remote, n, 0);
        if (done < 0) {
            const int err = errno;
            if (err == EPERM || err == EACCES || err == ENOSYS) {
                if (row != 0) return tcaErrorSystem;  // cannot happen midway; never half-write silently
                refuse_cma(err);
                return tcaErrorNotSupported;
            }
            if (err == ESRCH) return tcaErrorPeerGone;
            std::fprintf(stderr, "tca: node %d: process_vm_writev to node %d failed: %s (memory freed "
                         "without tcaDestroyHandle?)\n", nodes_.self(), node, std::strerror(err));
            return err == EFAULT ? tcaErrorNotRegistered : tcaErrorSystem;
        }
        // Short write (only at page-fault boundaries): finish row by row.
        if (static_cast<size_t>(done) < total) {
            size_t i = static_cast<size_t>(done) / c.width;
            uint64_t off = static_cast<size_t>(done) % c.width;
            for (; i < n; ++i, off = 0) {
                while (off < c.width) {
                    iovec l{const_cast<unsigned char *>(src + (row + i) * src_pitch) + off, c.width - off};
                    iovec r{reinterpret_cast<unsigned char *>(dst_addr + c.dst_off + (row + i) * c.dst_pitch) + off,
                            c.width - off};
                    const ssize_t k = process_vm_writev(pid, &l, 1, &r, 1, 0);
                    if (k <= 0) return errno == ESRCH ? tcaErrorPeerGone : tcaErrorSystem;
                    off += static_cast<uint64_t>(k);
                }
            }
        }
        row += n;
    }
    return tcaSuccess;
}

// The mailbox protocol.  A writer holds the robust lock, waits until the
// mailbox is idle (request == done: nothing posted or being served), fills
// it and posts request = done + 1.  A server claims a request by setting
// kClaimed on it (compare-and-swap), copies, then clears the bit and stores
// done.  A writer that gives up (its bound ran out: a stopped target) takes
// an unclaimed request back (request = done again), so nobody serves it
// later; a claimed one it leaves to the server, and the mailbox stays busy -
// the next writer waits for idle - until served.  The same idle wait keeps a
// writer that recovers the lock from a dead writer (EOWNERDEAD) off a
// mailbox the target is still serving.
namespace {
constexpr uint64_t kClaimed = 1ull << 63;

bool mailbox_idle(const BounceArea *b) noexcept {
    return b->request.load(std::memory_order_acquire) == b->done.load(std::memory_order_acquire);
}
}  // namespace

template <class Ready>
Result RemoteWriter::wait_bounded(EventWord &ev, Ready &&ready, int node, const PutBound &bound) {
    bool over = false;
    auto until = [&] {
        if (ready()) return true;
        return over = bound.over();
    };
    if (Result r = nodes_.wait_until(ev, until, node, NodeSet::Patience::WhilePeerLives); r != tcaSuccess) return r;
    return over && !ready() ? tcaErrorTimeout : tcaSuccess;
}

Result RemoteWriter::write_bounce(int node, const tcaHandle &dst, uint64_t dst_addr, const RowCopy &c,
                                  const PutBound &bound) {
    if (nodes_.gone(node)) return tcaErrorPeerGone;  // the bounce needs the peer's engine
    BounceArea *b = nodes_.view(node).bounce();
    // Take the target's mailbox; keep serving our own mailbox meanwhile, or two
    // engines bouncing into each other would deadlock.
    auto locked = [&] {
        service_bounce();
        const int rc = pthread_mutex_trylock(&b->lock);
        if (rc == EOWNERDEAD) pthread_mutex_consistent(&b->lock);  // previous writer died
        return rc == 0 || rc == EOWNERDEAD;
    };
    if (Result r = wait_bounded(nodes_.own().header()->app_event, locked, node, bound); r != tcaSuccess) return r;
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
        for (uint64_t off = 0; off < c.width && result == tcaSuccess; off += kBounceSize) {
            const uint64_t len = std::min<uint64_t>(kBounceSize, c.width - off);
            result = bounce_chunk(node, dst, dst_row + off, src + off, len, c.src_on_gpu, bound);
        }
    }
    pthread_mutex_unlock(&b->lock);
    return result;
}

Result RemoteWriter::bounce_chunk(int node, const tcaHandle &dst, uint64_t dst_addr, const unsigned char *src,
                                  uint64_t len, bool src_on_gpu, const PutBound &bound) {
    SegmentView target = nodes_.view(node);
    BounceArea *b = target.bounce();
    if (src_on_gpu) {
        if (Result r = gpu::CudaRuntime::instance().copy(b->data, src, len); r != tcaSuccess) return r;
    } else {
        std::memcpy(b->data, src, len);
    }
    b->src_node = static_cast<uint32_t>(nodes_.self());
    b->dst_addr = dst_addr;
    b->dst_key = dst.key;
    b->dst_reg = dst.reg_index;
    b->len = len;
    const uint64_t seq = b->done.load(std::memory_order_acquire) + 1;  // idle: request == done
    b->request.store(seq, std::memory_order_release);
    auto done = [&] {
        service_bounce();
        return b->done.load(std::memory_order_acquire) == seq;
    };
    // A target inside MPI progress serves its mailbox itself (tcaProgress)
    // within a few microseconds: give it that long before waking its engine
    // thread, which would first have to take the core from that very thread.
    const auto patience = std::chrono::steady_clock::now() + std::chrono::microseconds(kBounceWakeAfterUs);
    while (!done() && std::chrono::steady_clock::now() < patience) cpu_relax();
    if (b->done.load(std::memory_order_acquire) != seq)
        target.header()->engine_event.wake_all();  // not served: its engine may be napping
    const Result r = wait_bounded(b->done_event, done, node, bound);
    if (r == tcaErrorTimeout) {
        // Take the request back unless the server has claimed it already.
        uint64_t expected = seq;
        b->request.compare_exchange_strong(expected, seq - 1, std::memory_order_acq_rel);
    }
    if (r != tcaSuccess) return r;
    return static_cast<Result>(b->status.load(std::memory_order_acquire));
}

bool RemoteWriter::service_bounce() {
    BounceArea *b = nodes_.own().bounce();
    // Cheap look without the lock (the engine calls this on every pass)...
    if (b->request.load(std::memory_order_relaxed) == b->done.load(std::memory_order_relaxed)) return false;
    std::unique_lock g(service_lock_, std::try_to_lock);
    if (!g.owns_lock()) return false;
    // ...but the request is read only under the lock.  A request read before
    // it can be one another thread of ours has served meanwhile, after which
    // the writer already filled the mailbox with its next chunk: serving the
    // stale number copied that next chunk's bytes to this chunk's address and
    // moved `done` backwards (1 exchange in ~100 of a 64 MiB Sendrecv).
    uint64_t req = b->request.load(std::memory_order_acquire);
    if (req == b->done.load(std::memory_order_relaxed) || (req & kClaimed)) return false;
    // Claim it: from here on the writer cannot take it back (it gave up: the
    // request went back to `done` and the claim fails).
    if (!b->request.compare_exchange_strong(req, req | kClaimed, std::memory_order_acq_rel)) return false;
    // One snapshot of the fields, then only the snapshot: the writer (another
    // process) can still change the shared copy between a check and a use.
    const uint64_t dst_addr = b->dst_addr, dst_key = b->dst_key, len = b->len;
    const uint32_t dst_reg = b->dst_reg;
    Result status = tcaErrorNotRegistered;
    if (len > kBounceSize) {
        status = tcaErrorInvalidValue;  // more than the mailbox holds: never read past it
    } else if (dst_reg < kMaxRegistrations) {
        const RegistrationEntry &e = nodes_.own().registrations()[dst_reg];
        // Check the target range against our own table: a peer never gets to
        // write outside memory we registered.
        if (e.key.load(std::memory_order_acquire) == dst_key && dst_addr >= e.base && len <= e.size &&
            dst_addr - e.base <= e.size - len) {
            copy_bytes(reinterpret_cast<unsigned char *>(dst_addr), b->data, len);
            status = tcaSuccess;
        }
    }
    b->status.store(status, std::memory_order_relaxed);
    b->request.store(req, std::memory_order_relaxed);  // the claim bit off: idle once done is stored
    b->done.store(req, std::memory_order_release);
    b->done_event.notify();
    return true;
}

Result RemoteWriter::write_gpu(const tcaHandle &dst, const RowCopy &c) {
    auto &cuda = gpu::CudaRuntime::instance();
    if (!cuda.available()) return tcaErrorNotSupported;
    unsigned char *base = nullptr;
    std::shared_ptr<IpcMapping> mapping;  // held until the copy is done
    if (dst.node == nodes_.self()) {
        base = reinterpret_cast<unsigned char *>(dst.addr);
    } else {
        if (nodes_.known_gone(dst.node)) return tcaErrorPeerGone;
        const uint64_t extent = c.dst_off + (c.height > 1 ? (c.height - 1) * c.dst_pitch : 0) + c.width;
        if (const Result r = ipc_mapping(dst, dst.ipc_offset + extent, &mapping); r != tcaSuccess) return r;
        base = static_cast<unsigned char *>(mapping->ptr) + dst.ipc_offset;
    }
    return cuda.copy_2d(base + c.dst_off, c.height > 1 ? c.dst_pitch : c.width, c.src,
                        c.height > 1 ? c.src_pitch : c.width, c.width, c.height);
}

Result RemoteWriter::ipc_mapping(const tcaHandle &dst, uint64_t needed_end, std::shared_ptr<IpcMapping> *out) {
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
            if (!cuda.allocation_base(p, &mapped_base, &m->size)) m->size = needed_end;
            ipc_cache_[key] = m;
            *out = std::move(m);
            return tcaSuccess;
        }
        if (!already_mapped) return r;
        if (attempt == 0) {
            evict_overlapping(dst.node, key.second, key.second + std::max<uint64_t>(needed_end, 1));
        } else if (attempt == 1) {
            evict_overlapping(dst.node, 0, UINT64_MAX);
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
    }
    std::fprintf(stderr, "tca: cudaIpcOpenMemHandle: node %d's allocation at 0x%" PRIx64
                         " stays \"already mapped\" after our mappings of that node were closed\n",
                 dst.node, key.second);
    return tcaErrorSystem;
}

void RemoteWriter::evict_overlapping(int node, uint64_t start, uint64_t end) {
    for (auto it = ipc_cache_.lower_bound({node, 0}); it != ipc_cache_.end() && it->first.first == node;) {
        const uint64_t b = it->first.second, e = b + std::max<uint64_t>(it->second->size, 1);
        it = (b < end && start < e) ? ipc_cache_.erase(it) : std::next(it);
    }
}

}  // namespace tca::loopback
