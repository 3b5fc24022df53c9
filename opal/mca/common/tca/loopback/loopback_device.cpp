// loopback_device.cpp - the software loopback implementation of Device: ties
// the node set, the writer, the notification inbox and the DMA engine together
// and owns registrations and allocations of this process.
#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <unordered_map>
#include <vector>

#include "base/build_info.hpp"
#include "device.hpp"
#include "gpu/cuda_runtime.hpp"
#include "loopback/dma_engine.hpp"
#include "base/env_settings.hpp"
#include "base/internal_heap.hpp"
#include "loopback/launch_info.hpp"
#include "loopback/launcher_cleanup.hpp"
#include "loopback/node_set.hpp"
#include "loopback/notifications.hpp"
#include "loopback/remote_writer.hpp"
#include "loopback/shared_heap.hpp"
#include "loopback/term_cleanup.hpp"
#include "model/owned_id.hpp"

namespace tca {

namespace {
using namespace loopback;

// Bytes a host allocation occupies (whole pages); 0 if size cannot be rounded.
size_t page_rounded(size_t size) noexcept {
    return size > SIZE_MAX - 4095 ? 0 : (size + 4095) / 4096 * 4096;
}

class LoopbackDevice final : public Device {
public:
    LoopbackDevice(LaunchInfo li, const DeviceSettings &settings)
        : topo_(li.num_nodes, settings.s_links && li.num_nodes >= 4 && li.num_nodes % 2 == 0),
          timing_(settings.timing), nodes_(std::move(li), settings.policy),
          writer_(nodes_, settings.single_copy), sender_(), inbox_(nodes_.size()),
          engine_(
              nodes_, writer_, sender_, topo_, timing_,
              [this](const tcaHandle &h, uint64_t off, const unsigned char **p, bool *gpu) {
                  return resolve_source(h, off, p, gpu);
              },
              settings.streaming_min),
          heap_(settings.internal_size), shared_heap_(nodes_),
          use_shared_heap_(settings.shared_heap) {
        std::random_device rd;
        next_key_ = (static_cast<uint64_t>(rd()) << 32 | rd()) | 1;
        for (uint32_t i = kMaxRegistrations; i-- > 0;)
            free_regs_.push_back(i);
    }

    ~LoopbackDevice() override {
        disarm_term_cleanup();  // finalize unlinks and unmaps what the handler reads
        // Finalized must be visible before the engine drops the alive lock,
        // or peers would take the clean exit for a crash.
        nodes_.finalize(started_);
        engine_.stop_thread();
        shared_heap_.shutdown();  // names gone; memory still held by the application stays mapped
    }

    Result start() {
        // Allow peers of this user to process_vm_writev into us even under
        // yama ptrace_scope=1 (vader does the same).
        prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
        if (Result r = nodes_.create_own(heap_.size()); r != tcaSuccess)
            return r;
        // However this process ends, nothing of it stays in /dev/shm: the
        // launcher removes it at the end of the job (MPI_Abort, SIGKILL), and
        // SIGTERM (a launcher ending an aborted job) removes it at once.
        register_launcher_cleanup(nodes_.segment_name(nodes_.self()));
        arm_term_cleanup(nodes_.segment_name(nodes_.self()), nodes_.own().arenas());
        if (Result r = engine_.start_thread(); r != tcaSuccess)
            return r;
        if (writer_.wants_measurement() && nodes_.self() == 0)
            publish_copy_probe(probe_copies());
        nodes_.publish_ready();
        if (Result r = nodes_.attach_all(); r != tcaSuccess)
            return r;
        if (writer_.wants_measurement())
            settle_copy_path();
        started_ = true;
        return tcaSuccess;
    }

    // TCA_SINGLE_COPY=auto: node 0 measures for the sub-cluster (before its
    // segment is Ready, so every node that attached it finds the answer).
    void publish_copy_probe(const CopyProbe &p) {
        SegmentHeader *h = nodes_.own().header();
        h->copy_probe_error = p.error;
        h->copy_probe_bytes = p.bytes;
        h->copy_probe_single_us = p.single_copy_us;
        h->copy_probe_memcpy_us = p.memcpy_us;
        h->copy_probe_done = 1;
    }
    // Node 0's answer; where node 0 measured nothing (it was told its path:
    // TCA_SINGLE_COPY differs between the ranks), our own measurement.
    void settle_copy_path() {
        const SegmentHeader *h = nodes_.view(0).header();
        if (h->copy_probe_done == 0) {
            writer_.settle(probe_copies(), nodes_.self());
            return;
        }
        CopyProbe p;
        p.error = h->copy_probe_error;
        p.bytes = h->copy_probe_bytes;
        p.single_copy_us = h->copy_probe_single_us;
        p.memcpy_us = h->copy_probe_memcpy_us;
        writer_.settle(p, 0);
    }

    int node_id() const noexcept override { return nodes_.self(); }
    const Topology &topology() const noexcept override { return topo_; }
    const TimingModel &timing() const noexcept override { return timing_; }

    DeviceInfo info() const override {
        DeviceInfo i;
        i.backend = "loopback";
        i.optimized = kBuiltOptimized;
        i.job_key = nodes_.info().job_key;
        i.launch_source = nodes_.info().source;
        i.put_mechanism =
            std::string(use_shared_heap_ ? "plain stores into tcaMalloc'd memory (shared heap); "
                                         : "") +
            writer_.mechanism() + (use_shared_heap_ ? " for other memory" : "");
        // Dear also where single copy is off: a put into private memory is
        // then two copies, the second by the target's CPU, and clients that
        // can copy otherwise (btl tca's copy protocol through its rings,
        // coll tca's staged broadcasts) do better so.
        i.host_puts_by_target = writer_.measured_dear() || !writer_.single_copy();
        i.heap_arenas = shared_heap_.arenas();
        i.heap_bytes = shared_heap_.bytes_in_use();
        i.peer_arenas_mapped = writer_.arenas_mapped();
        i.internal_size = heap_.size();
        i.internal_used = heap_.used();
        i.spin_ns = nodes_.policy().spin_ns;
        i.timeout_ns = nodes_.policy().timeout_ns;
        std::lock_guard g(reg_lock_);
        i.registrations = static_cast<int>(kMaxRegistrations - free_regs_.size());
        i.max_registrations = static_cast<int>(kMaxRegistrations);
        i.notify_depth = static_cast<int>(kNotifyTags);
        return i;
    }

    ResourceTable &resources() noexcept override { return resources_; }

    // Size 0 is valid (programs with zero shadow widths allocate it): a
    // distinct pointer of at least one byte, freed as any other.
    Result allocate(void **ptr, size_t size, tcaMemoryType type) override {
        if (ptr == nullptr)
            return tcaErrorInvalidValue;
        *ptr = nullptr;
        switch (type) {
        case tcaMemoryCPU: {
            if (use_shared_heap_ && shared_heap_.allocate(size, ptr) == tcaSuccess)
                return tcaSuccess;
            // No shared memory left (/dev/shm full, every arena slot taken):
            // private memory, which peers reach by process_vm_writev.
            const size_t rounded = page_rounded(std::max<size_t>(size, 1));
            if (rounded == 0)
                return tcaErrorNoMemory;  // near SIZE_MAX: would wrap to 0 bytes
            void *p = std::aligned_alloc(4096, rounded);
            if (p == nullptr)
                return tcaErrorNoMemory;
            std::lock_guard g(alloc_lock_);
            host_allocs_[p] = size;
            *ptr = p;
            return tcaSuccess;
        }
        case tcaMemoryGPU: {
            void *p = nullptr;
            if (Result r = gpu::CudaRuntime::instance().allocate(&p, std::max<size_t>(size, 1));
                r != tcaSuccess)
                return r;
            std::lock_guard g(alloc_lock_);
            gpu_allocs_[p] = size;
            *ptr = p;
            return tcaSuccess;
        }
        case tcaMemoryInternal: {
            const auto off = heap_.allocate(std::max<size_t>(size, 1));
            if (!off)
                return tcaErrorNoMemory;
            *ptr = nodes_.own().internal() + *off;
            return tcaSuccess;
        }
        }
        return tcaErrorInvalidValue;
    }

    Result release(void *ptr, tcaMemoryType type) override {
        if (ptr == nullptr)
            return tcaErrorInvalidValue;
        switch (type) {
        case tcaMemoryCPU:
            // Registrations end before the memory can be reused: a peer's
            // later put fails (tcaErrorNotRegistered) instead of landing in it.
            if (const auto length = shared_heap_.block_length(ptr)) {
                drop_registrations(reinterpret_cast<uint64_t>(ptr), *length, type);
                return shared_heap_.release(ptr) ? tcaSuccess : tcaErrorInvalidValue;
            }
            [[fallthrough]];
        case tcaMemoryGPU: {
            size_t size = 0;
            {
                std::lock_guard g(alloc_lock_);
                auto &map = type == tcaMemoryCPU ? host_allocs_ : gpu_allocs_;
                auto it = map.find(ptr);
                if (it == map.end())
                    return tcaErrorInvalidValue;
                size = it->second;
                map.erase(it);
            }
            drop_registrations(reinterpret_cast<uint64_t>(ptr), std::max<size_t>(size, 1), type);
            if (type == tcaMemoryCPU) {
                std::free(ptr);
                return tcaSuccess;
            }
            return gpu::CudaRuntime::instance().release(ptr);
        }
        case tcaMemoryInternal: {
            const auto freed = heap_.release_at(nodes_.own().internal(), ptr);
            if (!freed)
                return tcaErrorInvalidValue;
            drop_registrations(freed->offset, freed->length, type);
            return tcaSuccess;
        }
        }
        return tcaErrorInvalidValue;
    }

    // Size 0 gives a valid handle of 0 bytes: 0-byte descriptors on it are
    // no-ops, anything else is out of range.
    Result register_memory(void *addr, size_t size, tcaMemoryType type, tcaHandle *out) override {
        if (out == nullptr || addr == nullptr)
            return tcaErrorInvalidValue;
        uint32_t arena = 0;
        uint64_t arena_off = 0, arena_serial = 0;
        tcaHandle h{};
        h.magic = TCA_HANDLE_MAGIC;
        h.node = static_cast<uint16_t>(nodes_.self());
        h.region = static_cast<uint8_t>(type);
        h.size = size;
        Region region = Region::Host;
        switch (type) {
        case tcaMemoryCPU:
            h.addr = reinterpret_cast<uint64_t>(addr);
            // [addr, addr + size) must not wrap around the address space.
            if (size > UINT64_MAX - h.addr)
                return tcaErrorOutOfRange;
            // Inside one tcaMalloc'd block (an interior pointer too): peers
            // write it with plain stores into their mapping of the arena.
            if (const auto loc = shared_heap_.locate(h.addr, size)) {
                arena = loc->slot + 1;
                arena_off = loc->offset;
                arena_serial = loc->serial;
            }
            break;
        case tcaMemoryInternal: {
            const auto off = heap_.offset_of(nodes_.own().internal(), addr, size);
            if (!off)
                return tcaErrorOutOfRange;
            h.addr = *off;
            region = Region::Internal;
            break;
        }
        case tcaMemoryGPU: {
            auto &cuda = gpu::CudaRuntime::instance();
            if (!cuda.available())
                return tcaErrorNotSupported;
            // IPC handles name whole allocations, and a peer's open gives
            // the allocation's start: the handle carries addr's offset in it.
            // The application's own cudaMalloc'd memory is asked of the driver
            // (registering an interior pointer as its own base would send
            // the peer's writes to the allocation's start).
            uint64_t base = reinterpret_cast<uint64_t>(addr);
            bool found = false;
            {
                std::lock_guard g(alloc_lock_);
                for (const auto &[p, n] : gpu_allocs_) {
                    const auto b = reinterpret_cast<uint64_t>(p);
                    if (reinterpret_cast<uint64_t>(addr) >= b &&
                        reinterpret_cast<uint64_t>(addr) < b + n) {
                        base = b;
                        found = true;
                    }
                }
            }
            if (!found && !cuda.allocation_base(addr, &base))
                return tcaErrorInvalidValue;
            if (Result r = cuda.ipc_handle(reinterpret_cast<void *>(base), h.ipc); r != tcaSuccess)
                return r;
            h.addr = reinterpret_cast<uint64_t>(addr);
            h.ipc_offset = h.addr - base;
            region = Region::Gpu0;
            break;
        }
        default:
            return tcaErrorInvalidValue;
        }
        std::lock_guard g(reg_lock_);
        if (free_regs_.empty())
            return tcaErrorNoMemory;
        const uint32_t idx = free_regs_.back();
        free_regs_.pop_back();
        next_key_ += 0x9E3779B97F4A7C16ull;  // distinct, hard-to-guess keys
        h.key = next_key_ | 1;
        h.reg_index = idx;
        const AddressMap &map = topo_.address_map();
        h.global = map.region_base(nodes_.self(), region) +
                   (global_next_[static_cast<int>(region)] % map.region_size());
        global_next_[static_cast<int>(region)] += (size + 4095) / 4096 * 4096;
        RegistrationEntry &e = nodes_.own().registrations()[idx];
        // The key is 0 here: peers that read the fields meanwhile discard
        // them (the fence keeps the new fields behind the zeroed key).
        std::atomic_thread_fence(std::memory_order_release);
        e.base = h.addr;
        e.size = h.size;
        e.region = h.region;
        e.arena = arena;
        e.arena_off = arena_off;
        e.arena_serial = arena_serial;
        e.key.store(h.key, std::memory_order_release);
        *out = h;
        return tcaSuccess;
    }

    Result deregister(const tcaHandle &h) override {
        if (Result r = check_handle(&h, nodes_.size()); r != tcaSuccess)
            return r;
        if (h.node != nodes_.self())
            return tcaErrorInvalidHandle;  // only the owner deregisters
        if (Result r = writer_.check_registration(h); r != tcaSuccess)
            return r;
        std::lock_guard g(reg_lock_);
        nodes_.own().registrations()[h.reg_index].key.store(0, std::memory_order_release);
        free_regs_.push_back(h.reg_index);
        return tcaSuccess;
    }

    Result validate(const Descriptor &d) const override {
        if (Result r = validate_descriptor(d, nodes_.self(), nodes_.size()); r != tcaSuccess)
            return r;
        if (Result r = writer_.check_registration(d.src); r != tcaSuccess)
            return r;
        return writer_.check_registration(d.dst);
    }

    Result pio_write(const tcaHandle &dst, uint64_t off, const void *src, size_t size, int flags,
                     int slot, int tag) override {
        if (Result r = check_pio_write(dst, nodes_.size(), off, src, size, flags, kPioFlags, slot);
            r != tcaSuccess)
            return r;
        if (Result r = sender_.admit(nodes_, dst.node, flags, slot); r != tcaSuccess)
            return r;
        if (timing_.enabled && !(flags & kPioUntimed))
            spin_for_ns(timing_.pio_delay_ns(topo_.hops(nodes_.self(), dst.node)));
        RowCopy copy{static_cast<const unsigned char *>(src), size, off, size, size, 1, false};
        copy.by_pio = true;
        // Synchronous: a target that does not take a bounce copy within the
        // timeout (stopped) fails the write with tcaErrorTimeout.
        if (Result r =
                writer_.write(dst, copy, PutBound::from_first_wait(nodes_.policy().timeout_ns));
            r != tcaSuccess)
            return r;
        return sender_.post_all(nodes_, dst.node, flags, slot, tag);
    }

    Result pio_map(const tcaHandle &h, void **addr) override {
        if (addr == nullptr)
            return tcaErrorInvalidValue;
        if (Result r = check_handle(&h, nodes_.size()); r != tcaSuccess)
            return r;
        if (h.region != tcaMemoryInternal)
            return tcaErrorNotSupported;  // only windows of internal memory map
        if (Result r = writer_.check_registration(h); r != tcaSuccess)
            return r;
        if (h.node != nodes_.self() && nodes_.gone(h.node))
            return tcaErrorPeerGone;
        *addr = nodes_.view(h.node).internal() + h.addr;
        return tcaSuccess;
    }

    Result load_chain(int channel, std::span<const Descriptor> chain) override {
        if (channel < 0 || channel >= TCA_NUM_DMA_CHANNELS)
            return tcaErrorInvalidChannel;
        if (chain.size() > TCA_MAX_DESCRIPTORS)
            return tcaErrorTooManyDescriptors;
        for (const Descriptor &d : chain)
            if (Result r = validate(d); r != tcaSuccess)
                return r;
        return engine_.load(channel, chain);
    }
    Result start_channel(int channel) override {
        if (channel < 0 || channel >= TCA_NUM_DMA_CHANNELS)
            return tcaErrorInvalidChannel;
        return engine_.start(channel);
    }
    Result wait_channel(int channel, bool block) override {
        if (channel < 0 || channel >= TCA_NUM_DMA_CHANNELS)
            return tcaErrorInvalidChannel;
        return engine_.wait(channel, block);
    }
    Result abort_channel(int channel) override {
        if (channel < 0 || channel >= TCA_NUM_DMA_CHANNELS)
            return tcaErrorInvalidChannel;
        engine_.abort(channel);
        return tcaSuccess;
    }

    Result take_notification(const tcaHandle &h, int slot, int tag, bool block) override {
        if (Result r = check_handle(&h, nodes_.size()); r != tcaSuccess)
            return r;
        if (slot < 0 || slot >= TCA_NOTIFY_SLOTS)
            return tcaErrorInvalidSlot;
        // A handle whose registration is gone (destroyed, freed, forged) names
        // nobody who will still notify: fail now, not after the timeout - but
        // only once nothing is queued, as data-then-destroy is legal.  Its
        // destruction happened after its owner's last post, so a post that
        // preceded it is seen by the take that follows the check.
        // A blocking wait runs pending DMA itself (published programs wait
        // only blocking, never call tcaProgress): no hand-off to a napping
        // engine thread between the peer's notification and our next start.
        // Bounded by this wait's timeout, as the wait itself.
        const PutBound bound = PutBound::from_first_wait(nodes_.policy().timeout_ns);
        const std::function<void()> drive = [this, &bound] { engine_.progress(bound); };
        return inbox_.take(
            nodes_, h.node, slot, tag, block, [&] { return writer_.check_registration(h); }, drive);
    }

    // Counters are named by id (owned_id.hpp): the token part must be the
    // counter's holder's (NodeSet checks it in the counter word).
    static bool counter_id_valid(int id) noexcept {
        return id >= 0 && owned_index(id) < TCA_NUM_COUNTERS;
    }
    Result counter_read(int id, uint64_t *value) override {
        if (!counter_id_valid(id))
            return tcaErrorInvalidCounter;
        if (value == nullptr)
            return tcaErrorInvalidValue;
        return nodes_.counter_read(id, value);
    }
    Result counter_add(int id, uint64_t add) override {
        if (!counter_id_valid(id))
            return tcaErrorInvalidCounter;
        return nodes_.counter_add(nodes_.self(), id, add);
    }
    Result counter_wait(int id, uint64_t value) override {
        if (!counter_id_valid(id))
            return tcaErrorInvalidCounter;
        Result held = tcaSuccess;
        const Result r = nodes_.wait_until(
            nodes_.own().header()->app_event,
            [&] {
                uint64_t now = 0;
                held = nodes_.counter_read(id, &now);  // released meanwhile: stop waiting
                return held != tcaSuccess || now >= value;
            },
            -1);
        return r != tcaSuccess ? r : held;
    }
    void counter_claim(int index, uint32_t holder) override { nodes_.counter_claim(index, holder); }
    void slot_claim(int index, uint32_t holder) override { nodes_.slot_claim(index, holder); }

    Result counter_add_remote(int node, int id, uint64_t add) override {
        if (node < 0 || node >= nodes_.size())
            return tcaErrorInvalidNode;
        if (!counter_id_valid(id))
            return tcaErrorInvalidCounter;
        if (node != nodes_.self() && nodes_.known_gone(node))
            return tcaErrorPeerGone;
        return nodes_.counter_add(node, id, add);
    }

    bool progress() override { return engine_.progress(); }

    Result interrupt_raise(int node) override {
        if (node < 0 || node >= nodes_.size())
            return tcaErrorInvalidNode;
        if (node != nodes_.self() && nodes_.gone(node))
            return tcaErrorPeerGone;  // nobody left to wake
        nodes_.view(node).header()->app_event.notify();
        return tcaSuccess;
    }
    Result node_state(int node, int *state) override {
        if (node < 0 || node >= nodes_.size())
            return tcaErrorInvalidNode;
        if (node == nodes_.self()) {
            *state = TCA_NODE_ALIVE;
            return tcaSuccess;
        }
        switch (nodes_.liveness(node)) {  // a dead node's segment is removed here, once
        case Liveness::Dead:
            *state = TCA_NODE_DEAD;
            break;
        case Liveness::Finalized:
            *state = TCA_NODE_FINISHED;
            break;
        default:
            *state = TCA_NODE_ALIVE;
            break;
        }
        return tcaSuccess;
    }
    uint32_t interrupt_count() noexcept override {
        // From the first call on, every event of this node moves the count.
        return nodes_.own().header()->app_event.watch();
    }
    Result interrupt_wait(uint32_t seen, int64_t timeout_ns) override {
        return nodes_.own().header()->app_event.await_change(seen, timeout_ns) ? tcaSuccess
                                                                               : tcaErrorTimeout;
    }
    std::string backing_path() const override {
        return "/dev/shm" + nodes_.segment_name(nodes_.self());
    }

private:
    Result resolve_source(const tcaHandle &h, uint64_t off, const unsigned char **p, bool *gpu) {
        *gpu = false;
        switch (static_cast<tcaMemoryType>(h.region)) {
        case tcaMemoryCPU:
            *p = reinterpret_cast<const unsigned char *>(h.addr) + off;
            return tcaSuccess;
        case tcaMemoryInternal:
            *p = nodes_.own().internal() + h.addr + off;
            return tcaSuccess;
        case tcaMemoryGPU:
            *p = reinterpret_cast<const unsigned char *>(h.addr) + off;
            *gpu = true;
            return tcaSuccess;
        }
        return tcaErrorInvalidHandle;
    }

    // tcaFree of memory that still has handles: those handles go stale, so a
    // peer's put fails with tcaErrorNotRegistered instead of hitting freed memory.
    void drop_registrations(uint64_t base, uint64_t size, tcaMemoryType type) {
        std::lock_guard g(reg_lock_);
        RegistrationEntry *table = nodes_.own().registrations();
        for (uint32_t i = 0; i < kMaxRegistrations; ++i) {
            RegistrationEntry &e = table[i];
            if (e.key.load(std::memory_order_acquire) == 0 ||
                e.region != static_cast<uint32_t>(type))
                continue;
            if (e.base >= base && e.base < base + size) {
                e.key.store(0, std::memory_order_release);
                free_regs_.push_back(i);
            }
        }
    }

    bool started_ = false;
    Topology topo_;
    TimingModel timing_;
    NodeSet nodes_;
    RemoteWriter writer_;
    NotificationSender sender_;
    NotificationInbox inbox_;
    DmaEngine engine_;
    InternalHeap heap_;
    SharedHeap shared_heap_;  // after nodes_: its arenas are named in our segment
    bool use_shared_heap_;
    ResourceTable resources_;

    mutable std::mutex reg_lock_;
    std::vector<uint32_t> free_regs_;
    uint64_t next_key_ = 1;
    uint64_t global_next_[4] = {};

    std::mutex alloc_lock_;
    std::unordered_map<void *, size_t> host_allocs_;
    std::unordered_map<void *, size_t> gpu_allocs_;
};

}  // namespace

Result make_loopback_device(const tcaInitParams *params, std::unique_ptr<Device> *out) {
    LaunchInfo li;
    if (Result r = resolve_launch_info(params, &li); r != tcaSuccess)
        return r;
    DeviceSettings settings;
    if (Result r = DeviceSettings::from_environment(&settings); r != tcaSuccess)
        return r;
    auto dev = std::make_unique<LoopbackDevice>(std::move(li), settings);
    if (Result r = dev->start(); r != tcaSuccess)
        return r;
    *out = std::move(dev);
    return tcaSuccess;
}

}  // namespace tca
