// loopback_device.cpp - the software loopback implementation of Device: ties
// the node set, the writer, the notification inbox, the DMA engine and this
// process's memory (local_memory.hpp) together.
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
#include "loopback/local_memory.hpp"
#include "loopback/node_set.hpp"
#include "loopback/notifications.hpp"
#include "loopback/registration_lookup.hpp"
#include "loopback/remote_writer.hpp"
#include "loopback/shared_heap.hpp"
#include "loopback/term_cleanup.hpp"
#include "loopback/virtual_stamps.hpp"
#include "model/owned_id.hpp"

namespace tca {

namespace {
using namespace loopback;

class LoopbackDevice final : public Device {
public:
    LoopbackDevice(LaunchInfo li, const DeviceSettings &settings)
        : topo_(li.num_nodes, settings.s_links && li.num_nodes >= 4 && li.num_nodes % 2 == 0),
          timing_(settings.timing), nodes_(std::move(li), settings.policy),
          stamps_(nodes_, timing_), writer_(nodes_, settings.single_copy), sender_(),
          inbox_(nodes_.size()),
          engine_(
              nodes_, writer_, sender_, topo_, timing_, stamps_,
              [this](const tcaHandle &h, uint64_t off, const unsigned char **p, bool *gpu) {
                  return resolve_source(h, off, p, gpu);
              },
              settings.streaming_min),
          memory_(nodes_, topo_, settings) {}

    ~LoopbackDevice() override {
        disarm_term_cleanup();  // finalize unlinks and unmaps what the handler reads
        // Finalized must be visible before the engine drops the alive lock,
        // or peers would take the clean exit for a crash.
        nodes_.finalize(started_);
        engine_.stop_thread();
        memory_.shutdown();  // names gone; memory still held by the application stays mapped
    }

    Result start() {
        // Allow peers of this user to process_vm_writev into us even under
        // yama ptrace_scope=1 (vader does the same).
        prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
        if (Result r = nodes_.create_own(memory_.internal_size(), timing_.virtual_time);
            r != tcaSuccess)
            return r;
        stamps_.arm();
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
    VirtualClock *virtual_clock() noexcept override { return stamps_.clock(); }
    void app_enter() noexcept override { stamps_.enter(); }
    void app_leave() noexcept override { stamps_.leave(); }
    void app_hold(bool on) noexcept override { stamps_.hold(on); }
    // The sender pays its send cost; the message lands a PIO write of its
    // size later, plus the receiver's cost (it polls for it).
    Result virtual_message(int node, size_t bytes) override {
        if (node < 0 || node >= nodes_.size())
            return tcaErrorInvalidNode;
        if (!stamps_.on())
            return tcaSuccess;
        stamps_.consume_landings();  // it answers what landed (any thread)
        stamps_.clock()->charge(static_cast<int64_t>(timing_.mpi_send_ns));
        stamps_.landing_unannounced(
            node, link_stamp(node, bytes, static_cast<int64_t>(timing_.mpi_recv_ns)));
        return tcaSuccess;
    }

    DeviceInfo info() const override {
        DeviceInfo i;
        i.backend = "loopback";
        i.optimized = kBuiltOptimized;
        i.job_key = nodes_.info().job_key;
        i.launch_source = nodes_.info().source;
        i.put_mechanism = std::string(memory_.uses_shared_heap()
                                          ? "plain stores into tcaMalloc'd memory (shared heap); "
                                          : "") +
                          writer_.mechanism() +
                          (memory_.uses_shared_heap() ? " for other memory" : "");
        // Dear also where single copy is off: a put into private memory is
        // then two copies, the second by the target's CPU, and clients that
        // can copy otherwise (btl tca's copy protocol through its rings,
        // coll tca's staged broadcasts) do better so.
        i.host_puts_by_target = writer_.measured_dear() || !writer_.single_copy();
        i.peer_arenas_mapped = writer_.arenas_mapped();
        i.spin_ns = nodes_.policy().spin_ns;
        i.timeout_ns = nodes_.policy().timeout_ns;
        memory_.describe(&i);
        i.notify_depth = static_cast<int>(kNotifyTags);
        return i;
    }

    ResourceTable &resources() noexcept override { return resources_; }

    Result allocate(void **ptr, size_t size, tcaMemoryType type) override {
        return memory_.allocate(ptr, size, type);
    }
    Result release(void *ptr, tcaMemoryType type) override { return memory_.release(ptr, type); }
    Result register_memory(void *addr, size_t size, tcaMemoryType type, tcaHandle *out) override {
        return memory_.register_memory(addr, size, type, out);
    }
    Result deregister(const tcaHandle &h) override {
        if (Result r = check_handle(&h, nodes_.size()); r != tcaSuccess)
            return r;
        if (h.node != nodes_.self())
            return tcaErrorInvalidHandle;  // only the owner deregisters
        if (Result r = writer_.check_registration(h); r != tcaSuccess)
            return r;
        return memory_.deregister(h.reg_index, h.key);
    }
    Result registration_of_key(int node, uint32_t index, uint64_t key,
                               tcaHandle *out) const override {
        return loopback::registration_of_key(nodes_.view(node).registrations(), node, index, key,
                                             out);
    }
    Result find_host_registration(int node, uint64_t addr, uint64_t size,
                                  tcaHandle *out) const override {
        return loopback::find_host_registration(nodes_.view(node).registrations(), node, addr, size,
                                                out);
    }
    // deregister allocates nothing and its lock is never held while memory
    // is given back: safe in a memory-release hook.
    Result revoke(const tcaHandle &h) noexcept override { return deregister(h); }

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
        if (timing_.paced() && !(flags & kPioUntimed))
            spin_for_ns(timing_.pio_delay_ns(topo_.hops(nodes_.self(), dst.node)));
        RowCopy copy{static_cast<const unsigned char *>(src), size, off, size, size, 1, false};
        copy.by_pio = true;
        // Virtual time: its bytes stream at the host link's rate (a large PIO
        // put of the loopback stands for what PEACH2 would move by DMA).
        const int64_t stamp = link_stamp(dst.node, size, 0);
        if (!(flags & tcaDMANotify))
            stamps_.landing_unannounced(dst.node, stamp);
        // Synchronous: a target that does not take a bounce copy within the
        // timeout (stopped) fails the write with tcaErrorTimeout.
        if (Result r =
                writer_.write(dst, copy, PutBound::from_first_wait(nodes_.policy().timeout_ns));
            r != tcaSuccess)
            return r;
        return sender_.post_all(nodes_, dst.node, flags, slot, tag, stamp);
    }

    // Virtual time: when `bytes` written now land at `node`, plus `extra` (0:
    // not virtual).  This node's link carries one write at a time: a write
    // starts once the bytes before it have left (a message's pieces, a
    // rendezvous's stream through the rings queue behind each other).
    int64_t link_stamp(int node, size_t bytes, int64_t extra) noexcept {
        if (!stamps_.on())
            return 0;
        const auto xfer = static_cast<int64_t>(timing_.transfer_ns(bytes, 1, false));
        const int64_t now = stamps_.now_ns();
        int64_t free = link_free_ns_.load(std::memory_order_relaxed), start = now;
        do {
            start = std::max(now, free);
        } while (
            !link_free_ns_.compare_exchange_weak(free, start + xfer, std::memory_order_relaxed));
        return pio_stamp(node) + (start - now) + xfer + extra;
    }

    // Virtual time: when a PIO write issued now lands at `node` (0: not virtual).
    int64_t pio_stamp(int node) const noexcept {
        if (!stamps_.on())
            return 0;
        return stamps_.now_ns() +
               static_cast<int64_t>(timing_.pio_ns(topo_.hops(nodes_.self(), node)));
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
        int64_t stamp = 0;
        const Result r = inbox_.take(
            nodes_, h.node, slot, tag, block, [&] { return writer_.check_registration(h); }, drive,
            stamps_.on() ? &stamp : nullptr);
        if (r == tcaSuccess)
            stamps_.advance_to(stamp);
        return r;
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
        const Result r = nodes_.counter_read(id, value);
        if (r == tcaSuccess)  // a poll that sees the count sees when it landed
            stamps_.advance_to(counter_stamp(id));
        return r;
    }
    int64_t counter_stamp(int id) const noexcept {
        if (!stamps_.on())
            return 0;
        return nodes_.own().counter_stamp(owned_index(id)).load(std::memory_order_relaxed);
    }
    Result counter_add(int id, uint64_t add) override {
        if (!counter_id_valid(id))
            return tcaErrorInvalidCounter;
        return nodes_.counter_add(nodes_.self(), id, add, stamps_.now_ns());
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
        if (r == tcaSuccess && held == tcaSuccess)
            stamps_.advance_to(counter_stamp(id));
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
        return nodes_.counter_add(node, id, add, pio_stamp(node));
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

    bool started_ = false;
    Topology topo_;
    TimingModel timing_;
    NodeSet nodes_;
    VirtualStamps stamps_;
    std::atomic<int64_t> link_free_ns_{0};  // virtual time: when this node's link is free
    RemoteWriter writer_;
    NotificationSender sender_;
    NotificationInbox inbox_;
    DmaEngine engine_;
    LocalMemory memory_;  // after nodes_: its shared heap's arenas are named in our segment
    ResourceTable resources_;
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
