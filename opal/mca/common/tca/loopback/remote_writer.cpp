// remote_writer.cpp - the data path of every put (PIO and DMA alike): which
// mechanism moves it (cma_copy, bounce_mailbox, plain stores, CUDA).
#include "loopback/remote_writer.hpp"

#include <algorithm>
#include <cinttypes>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "gpu/cuda_runtime.hpp"
#include "loopback/byte_copy.hpp"
#include "loopback/copy_probe.hpp"

namespace tca::loopback {

RemoteWriter::RemoteWriter(NodeSet &nodes, CopyPath path)
    : nodes_(nodes), arenas_(nodes),
      // TCA_SINGLE_COPY=0 (tests, locked-down hosts): every private put bounces
      cma_(nodes, path == CopyPath::Bounce), bounce_(nodes), measure_(path == CopyPath::Auto) {}

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
        cma_.refuse_quietly();
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
            const Result r = cma_.write(node, dst.addr, c);
            if (r != tcaErrorNotSupported)
                return r;  // NotSupported: just refused, fall through
        }
        return bounce_.write(node, dst, dst.addr, c, bound);
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
