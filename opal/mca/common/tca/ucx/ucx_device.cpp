// ucx_device.cpp - the PEACH2 model over UCX, for a sub-cluster that spans
// hosts (TCA_DEVICE=ucx): node n is PMIx rank first + n of the job (first
// is 0 unless the caller placed a sub-cluster of consecutive ranks: btl tca's
// btl_tca_subcluster_size), and nodes reach each other through UCX
// endpoints whose worker addresses travel through PMIx (ucx/pmix_exchange.hpp).
//
//   registrations   ucp_mem_map of the registered range; a peer asks the
//                   owner for the packed key by active message on first use
//                   and caches it per (node, registration index, key); the
//                   owner's tcaDestroyHandle revokes it at every node it gave
//                   it to, and returns once they confirmed that their puts
//                   with it have landed and none follows
//   PIO writes      after a fence (a thread's PIO writes land in order, as
//                   PCIe posted writes do); up to 256 KiB one eager active
//                   message with the data, the target copying the last
//                   8-byte word after the rest; larger, the body as a DMA
//                   row, then the last word (TCA_UCX_DMA=put: the body by
//                   ucp_put_nbx, a fence, the last word)
//   DMA puts        one row below 64 KiB: an active message with the data
//                   (eager, or UCX's rendezvous into the registration the
//                   target names after checking it); from 64 KiB announced
//                   by an active message and sent tagged (DmaTaggedMsg);
//                   TCA_UCX_DMA=put and block-stride rows: ucp_put_nbx
//   notifications   a fence after the data, then an active message that
//                   counts (source, slot, tag) at the target; one naming a
//                   slot that a user of the target acquired, with another id,
//                   is refused there (a line on the target's stderr, as for a
//                   refused counter add): it is not counted
//   DMA channels    a started chain's puts and notifications are issued on
//                   the starting thread up to its first trigger whose counter
//                   is short; the rest by whichever thread progresses the
//                   device once it moves (a wait, tcaProgress, the progress
//                   thread: ucx/channel_runs.hpp); a descriptor's counter add
//                   goes with its data in one message up to 256 KiB, else
//                   as an active message behind it; the wait flushes
//                   the endpoints they went to: complete means visible at
//                   the targets
//   counters, interrupts, node state
//                   active messages (counter add, interrupt, goodbye) and UCX's
//                   peer-failure reports
//   timing model    (TCA_TIMING=1) the modelled time is spent on the issuing
//                   thread before the puts: a PIO write waits its modelled
//                   latency, each descriptor of a chain its modelled end
//                   (ChainClock from the start, the ring's hops included); the
//                   transport's own cost comes on top
//
// Not modelled yet, refused by name: GPU memory (Debian's UCX has no CUDA)
// and PIO windows mapped into the address space (tcaPioMap: hosts share no
// memory).  Over software RMA (UCX_TLS=tcp) a put completes only while
// the target progresses: a progress thread per process does, asleep on the
// worker's events, and every blocking call of libtca progresses too.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <shared_mutex>
#include <system_error>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "device.hpp"
#include "loopback/env_settings.hpp"
#include "loopback/event_word.hpp"
#include "loopback/internal_heap.hpp"
#include "model/owned_id.hpp"
#include "ucx/channel_runs.hpp"
#include "ucx/pmix_exchange.hpp"
#include "ucx/ucp_transport.hpp"

namespace tca {

namespace {
using namespace ucx;

// The model's times as they are: the handoffs (the loopback's own cost of a
// delivery, which its delays leave out) are no part of UCX's path.
TimingModel on_top_of_transport(TimingModel m) {
    m.pio_handoff_ns = 0;
    m.dma_handoff_ns = 0;
    return m;
}

using Clock = std::chrono::steady_clock;

// ---- active messages: fixed headers, no payload ----
enum AmId : unsigned {
    kAmNotify = 11,
    kAmInterrupt,
    kAmCounterAdd,
    kAmKeyRequest,
    kAmKeyReply,
    kAmGoodbye,
    kAmKeyRevoke,     // owner -> a node it gave the key: forget it
    kAmKeyForgotten,  // that node -> owner: forgotten, and its puts with it have landed
    kAmWrite,         // a PIO write or one DMA row: WriteMsg, the data as the message's data
    kAmDmaTagged,     // a large DMA row: DmaTaggedMsg; the data follows as a tagged send
};

// A PIO write of up to kAmPioMax bytes travels as one eager active message
// with its data, which the target copies in, the last 8-byte word after the
// rest (kLastWordAfter; a ring slot of btl tca's 64 KiB eager limit is one
// message).  Over software RMA (UCX tcp) a put is a message there and an
// acknowledgement back, and a PIO write was two puts (body, last word):
// btl tca's 8 B latency was 3.5x pml ucx's.  Larger: the body as a DMA row,
// then the last word.  (A header-only message with the bytes copied in
// measured the same at 8 B: 7.33 against 7.29 us, medians of 6.)
constexpr size_t kAmPioMax = 256 * 1024;

// A DMA row travels as an active message with data too: over software RMA
// (UCX tcp, 1.13) a 4 MiB put ping-pong took 3x pml ucx's tagged
// rendezvous; btl tca's 4 MiB one-way went 7.8 ms -> 1.0 ms.
struct WriteMsg {
    tcaHandle dst;  // checked at the target against its registrations
    uint64_t off;
    uint64_t size;
    int32_t src;
    uint32_t flags;  // kLastWordAfter
    int32_t counter = -1;  // >= 0: added to (by `add`) once the data landed (tcaPioWriteCounterAdd)
    uint64_t add = 0;
    int32_t notify_slot = -1;  // >= 0: the row's notification (slot id, tag), counted once the data landed
    int32_t notify_tag = 0;
};
// A PIO write: the target copies its last 8-byte word after the rest.
constexpr uint32_t kLastWordAfter = 1;
// From kTaggedMin up a row is announced by an active message and its data
// sent tagged, on a second endpoint to the node that asks for no peer-failure
// reports: UCX 1.13 then moves it over tcp with its put rendezvous (the
// receiver reads the socket straight into place), where an endpoint with
// failure reports, and any large active message, get fragments the receiver
// copies once more (4 MiB one-way over btl tca: 1032 us against 700, pml
// ucx 590).  The send is synchronous (ends once the receiver has the data),
// so what follows on the first endpoint cannot overtake it; failures are
// still seen on the first endpoint, which the second follows.
struct DmaTaggedMsg {
    WriteMsg row;
    uint64_t tag;  // the sender's node in the top 16 bits, its count of tagged rows below
};
constexpr uint64_t kTaggedMin = 65536;
// A DMA row up to this size that notifies its target carries the
// notification in its own message, sent eager: one message where there were
// two (the published 8 B ping-pong without self-notification, one way: 10.9
// -> 4.5 us).  Larger rows keep UCX's rendezvous and a notification behind them.
constexpr uint64_t kNotifyInRowMax = 16384;

// What a target counts once a write's one message has landed.
struct CountAfter {
    int counter = -1;  // >= 0: added to by `add` (a PIO write up to kAmPioMax)
    uint64_t add = 0;
    int notify_slot = -1;  // >= 0: a notification (a DMA row up to kNotifyInRowMax)
    int notify_tag = 0;
};

struct NotifyMsg {
    int32_t src, slot, tag;
};
struct NodeMsg {  // interrupt, goodbye
    int32_t src;
};
struct CounterAddMsg {
    int32_t src, id;
    uint64_t add;
};
struct KeyRequestMsg {
    int32_t src;
    uint32_t reg_index;
    uint64_t key;
    uint64_t addr, size;  // as the handle says: a handle whose range was altered is refused
};
struct KeyRevokeMsg {  // also the answer, kAmKeyForgotten
    int32_t src;
    uint32_t reg_index;
    uint64_t key;
};
constexpr size_t kMaxPackedKey = 1024;
struct KeyReplyMsg {
    int32_t src;
    uint32_t reg_index;
    uint64_t key;
    uint64_t addr, size;  // the request's, to match it
    int32_t status;       // tcaSuccess, or why there is no key
    uint32_t key_length;  // bytes of packed_key in use
    uint64_t va_of_zero;  // the owner's virtual address of handle address 0 (internal memory: its base)
    unsigned char packed_key[kMaxPackedKey];
};

// A handler's fixed header: false (dropped) when the length is not T's.
template <class T>
bool read_header(const void *header, size_t length, T *out) noexcept {
    if (length != sizeof(T)) return false;
    std::memcpy(out, header, sizeof(T));
    return true;
}

constexpr const char *kAddressKey = "tca.ucx.worker";
constexpr uint64_t kCounterMax = (uint64_t{1} << 48) - 1;

// TCA_UCX_DMA=put sends DMA rows as ucp_put_nbx (to compare, and for a
// fabric where puts are cheaper than UCX's rendezvous); anything else, or
// unset: active messages.
bool dma_by_active_message() {
    const char *v = std::getenv("TCA_UCX_DMA");
    return v == nullptr || std::strcmp(v, "put") != 0;
}

// Which PMIx ranks are our nodes: node n is rank first + n.
struct UcxPlacement {
    int node;
    int nodes;
    int first;
};

class UcxDevice final : public Device {
public:
    UcxDevice(std::unique_ptr<PmixExchange> pmix, UcxPlacement place, const loopback::DeviceSettings &settings)
        : pmix_(std::move(pmix)), self_(place.node), n_(place.nodes), first_rank_(place.first),
          topo_(n_, settings.s_links && n_ >= 4 && n_ % 2 == 0), timing_(on_top_of_transport(settings.timing)),
          policy_(settings.policy), heap_(settings.internal_size), peers_(static_cast<size_t>(n_)),
          dma_by_am_(dma_by_active_message()), finished_(static_cast<size_t>(n_)) {
        std::random_device rd;
        next_key_ = (static_cast<uint64_t>(rd()) << 32 | rd()) | 1;
        for (auto &c : counters_) c.store(0, std::memory_order_relaxed);
        for (auto &f : finished_) f.store(false, std::memory_order_relaxed);
        events_.watch();  // interrupt_count() reads the count any time
    }

    ~UcxDevice() override {
        stop_.store(true, std::memory_order_release);
        if (progress_thread_.joinable()) progress_thread_.join();
        // Peers learn that we finished (not died); then every endpoint is
        // flushed and closed, bounded, before the worker goes.
        const Deadline d = Clock::now() + std::chrono::seconds(2);
        const NodeMsg bye{self_};
        for (size_t n = 0; n < peers_.size(); ++n)  // not to those that finished before us
            if (peers_[n].ep && !peers_[n].ep->peer_failed() && !finished_[n].load(std::memory_order_acquire)) {
                (void) peers_[n].ep->fence();  // after everything we sent: a peer seeing it has seen the rest
                (void) peers_[n].ep->am_send(kAmGoodbye, &bye, sizeof bye, d);
            }
        for (size_t n = 0; n < peers_.size(); ++n)
            if (peers_[n].ep && !peers_[n].ep->peer_failed() && !finished_[n].load(std::memory_order_acquire))
                (void) peers_[n].ep->flush(d);
        remote_keys_.clear();
        for (auto &p : peers_) {
            p.bulk.reset();  // it follows p.ep's failures: first
            p.ep.reset();
        }
        regs_.clear();
        internal_map_.reset();
        worker_.reset();
        context_.reset();
        std::free(internal_);
    }

    Result start(std::string *why) {
        if (n_ < 1 || n_ > TCA_MAX_NODES) {
            *why = "the job has " + std::to_string(n_) + " processes; a TCA sub-cluster has 1.." +
                   std::to_string(TCA_MAX_NODES) + " nodes";
            return tcaErrorNotSupported;
        }
        if (Result r = Context::create(&context_, why); r != tcaSuccess) return r;
        if (Result r = Worker::create(*context_, &worker_, why); r != tcaSuccess) return r;
        if (worker_->max_am_header() < sizeof(KeyReplyMsg)) {
            *why = "UCX's active-message headers hold " + std::to_string(worker_->max_am_header()) +
                   " bytes; the device needs " + std::to_string(sizeof(KeyReplyMsg));
            return tcaErrorNotSupported;
        }
        const std::pair<unsigned, Worker::AmHandler> handlers[] = {
            {kAmNotify, on_notify},       {kAmInterrupt, on_interrupt}, {kAmCounterAdd, on_counter_add},
            {kAmKeyRequest, on_key_request}, {kAmKeyReply, on_key_reply}, {kAmGoodbye, on_goodbye},
            {kAmKeyRevoke, on_key_revoke},   {kAmKeyForgotten, on_key_forgotten}};
        for (const auto &[id, h] : handlers)
            if (Result r = worker_->set_am_handler(id, h, this); r != tcaSuccess) {
                *why = "registering UCX active-message handlers failed";
                return r;
            }
        if (Result r = worker_->set_am_data_handler(kAmWrite, on_write, this);
            r != tcaSuccess || (r = worker_->set_am_tag_handler(kAmDmaTagged, on_dma_tagged, this)) != tcaSuccess) {
            *why = "registering UCX active-message handlers failed";
            return r;
        }
        internal_ = static_cast<unsigned char *>(std::aligned_alloc(4096, heap_.size()));
        if (internal_ == nullptr) return tcaErrorNoMemory;
        std::memset(internal_, 0, heap_.size());
        if (Result r = MemoryMap::create(*context_, internal_, heap_.size(), &internal_map_); r != tcaSuccess) {
            *why = "ucp_mem_map of the internal memory failed";
            return r;
        }
        if (Result r = pmix_->put(kAddressKey, worker_->address()); r != tcaSuccess) {
            *why = "publishing the worker address through PMIx failed";
            return r;
        }
        // Over software RMA (tcp) a peer's put, flush or active message
        // completes only while this worker progresses - also while the
        // application is elsewhere (in MPI, computing): one thread progresses
        // it, asleep on the worker's events when there is nothing to do.
        try {
            // While a thread of the application waits in libtca it progresses
            // the worker itself: then this one naps instead of competing for
            // the worker's lock and the core.
            progress_thread_ = std::thread([this] {
                while (!stop_.load(std::memory_order_acquire)) {
                    // While a client assists, until it may have stopped:
                    // each wake-up would take a busy core for nothing.
                    if (const int64_t left = assisted_for(); left > 0)
                        std::this_thread::sleep_for(std::chrono::nanoseconds(std::max<int64_t>(left, 200'000)));
                    else if (waiters_.load(std::memory_order_acquire) > 0 || worker_->waiters() > 0)
                        std::this_thread::sleep_for(std::chrono::microseconds(200));
                    else if (!progress())
                        worker_->sleep_for_events(50);
                }
            });
        } catch (const std::system_error &) {
            *why = "the progress thread could not start";
            return tcaErrorSystem;
        }
        return tcaSuccess;
    }

    int node_id() const noexcept override { return self_; }
    const Topology &topology() const noexcept override { return topo_; }
    const TimingModel &timing() const noexcept override { return timing_; }

    DeviceInfo info() const override {
        DeviceInfo i;
        i.backend = "ucx";
        i.job_key = pmix_->nspace();
        i.launch_source = "PMIx (rank " + std::to_string(first_rank_ + self_) + " of " +
                          std::to_string(pmix_->job_size()) + ")";
        if (n_ != pmix_->job_size())
            i.job_key += " ranks " + std::to_string(first_rank_) + ".." + std::to_string(first_rank_ + n_ - 1);
        unsigned major = 0, minor = 0, release = 0;
        ucp_get_version(&major, &minor, &release);
        const char *tls = std::getenv("UCX_TLS");
        i.put_mechanism = "UCX " + std::to_string(major) + "." + std::to_string(minor) + "." +
                          std::to_string(release) + (dma_by_am_ ? " active messages" : " puts") +
                          " (UCX_TLS=" + (tls != nullptr ? tls : "all") + ")";
        i.gpu_memory = false;  // refused by name (see the top)
        i.internal_size = heap_.size();
        i.internal_used = heap_.used();
        i.spin_ns = policy_.spin_ns;
        i.timeout_ns = policy_.timeout_ns;
        i.takeover_ns = takeover_ns_.load(std::memory_order_relaxed);
        std::lock_guard g(reg_lock_);
        i.registrations = static_cast<int>(regs_.size());
        i.max_registrations = static_cast<int>(kMaxRegistrations);
        i.notify_depth = 0;  // counts per (source, slot, tag) are not limited here
        return i;
    }

    ResourceTable &resources() noexcept override { return resources_; }

    Result allocate(void **ptr, size_t size, tcaMemoryType type) override {
        if (ptr == nullptr) return tcaErrorInvalidValue;
        *ptr = nullptr;
        switch (type) {
        case tcaMemoryCPU: {
            const size_t want = std::max<size_t>(size, 1);
            if (want > SIZE_MAX - 4095) return tcaErrorNoMemory;
            void *p = std::aligned_alloc(4096, (want + 4095) / 4096 * 4096);
            if (p == nullptr) return tcaErrorNoMemory;
            std::lock_guard g(alloc_lock_);
            host_allocs_[p] = want;
            *ptr = p;
            return tcaSuccess;
        }
        case tcaMemoryInternal: {
            const auto off = heap_.allocate(std::max<size_t>(size, 1));
            if (!off) return tcaErrorNoMemory;
            *ptr = internal_ + *off;
            return tcaSuccess;
        }
        case tcaMemoryGPU:
            return not_here("GPU memory (tcaMemoryGPU): that needs a CUDA-enabled UCX (docs/ucx-backend.md)");
        }
        return tcaErrorInvalidValue;
    }

    Result release(void *ptr, tcaMemoryType type) override {
        if (ptr == nullptr) return tcaErrorInvalidValue;
        if (type == tcaMemoryCPU) {
            size_t size = 0;
            {
                std::lock_guard g(alloc_lock_);
                auto it = host_allocs_.find(ptr);
                if (it == host_allocs_.end()) return tcaErrorInvalidValue;
                size = it->second;
                host_allocs_.erase(it);
            }
            drop_registrations(reinterpret_cast<uint64_t>(ptr), size, type);
            std::free(ptr);
            return tcaSuccess;
        }
        if (type == tcaMemoryInternal) {
            const auto freed = heap_.release_at(internal_, ptr);
            if (!freed) return tcaErrorInvalidValue;
            drop_registrations(freed->offset, freed->length, type);
            return tcaSuccess;
        }
        return tcaErrorInvalidValue;
    }

    Result register_memory(void *addr, size_t size, tcaMemoryType type, tcaHandle *out) override {
        if (out == nullptr || addr == nullptr) return tcaErrorInvalidValue;
        tcaHandle h{};
        h.magic = TCA_HANDLE_MAGIC;
        h.node = static_cast<uint16_t>(self_);
        h.region = static_cast<uint8_t>(type);
        h.size = size;
        std::unique_ptr<MemoryMap> map;
        switch (type) {
        case tcaMemoryCPU:
            h.addr = reinterpret_cast<uint64_t>(addr);
            if (size > UINT64_MAX - h.addr) return tcaErrorOutOfRange;
            if (size > 0)
                if (Result r = MemoryMap::create(*context_, addr, size, &map); r != tcaSuccess) return r;
            break;
        case tcaMemoryInternal: {
            const auto off = heap_.offset_of(internal_, addr, size);
            if (!off) return tcaErrorOutOfRange;
            h.addr = *off;  // an offset: the internal memory is mapped once
            break;
        }
        case tcaMemoryGPU:
            return not_here("GPU memory (tcaMemoryGPU): that needs a CUDA-enabled UCX (docs/ucx-backend.md)");
        default:
            return tcaErrorInvalidValue;
        }
        std::lock_guard g(reg_lock_);
        if (regs_.size() >= kMaxRegistrations) return tcaErrorNoMemory;
        uint32_t idx = 0;
        while (regs_.count(idx) != 0) ++idx;
        next_key_ += 0x9E3779B97F4A7C16ull;
        h.key = next_key_ | 1;
        h.reg_index = idx;
        h.global = topo_.address_map().region_base(self_, type == tcaMemoryInternal ? Region::Internal : Region::Host);
        regs_[idx] = Registration{h.key, h.addr, h.size, type, std::move(map)};
        *out = h;
        return tcaSuccess;
    }

    Result deregister(const tcaHandle &h) override {
        if (Result r = check_handle(&h, n_); r != tcaSuccess) return r;
        if (h.node != self_) return tcaErrorInvalidHandle;
        Registration gone;
        {
            std::lock_guard g(reg_lock_);
            auto it = regs_.find(h.reg_index);
            if (it == regs_.end() || it->second.key != h.key) return tcaErrorNotRegistered;
            gone = std::move(it->second);
            regs_.erase(it);  // from now on a key request for it is refused
        }
        return revoke(h.reg_index, gone);  // then `gone` is unmapped
    }

    Result validate(const Descriptor &d) const override {
        if (Result r = validate_descriptor(d, self_, n_); r != tcaSuccess) return r;
        return local_registration(d.src, nullptr);
    }

    Result pio_write(const tcaHandle &dst, uint64_t off, const void *src, size_t size, int flags, int slot,
                     int tag) override {
        if (Result r = check_pio_write(dst, n_, off, src, size, flags, kPioFlags, slot); r != tcaSuccess) return r;
        if (Result r = admit_local(dst.node, flags, slot); r != tcaSuccess) return r;
        if (timing_.enabled) spin_for_ns(timing_.pio_ns(topo_.hops(self_, dst.node)));  // 0 hops: none
        const Deadline d = deadline();
        if (Result r = write(dst, off, static_cast<const unsigned char *>(src), size, 1, 0, size, true, d);
            r != tcaSuccess)
            return r;
        return notify_all(dst.node, flags, slot, tag, d);
    }

    Result pio_map(const tcaHandle &, void **addr) override {
        if (addr != nullptr) *addr = nullptr;
        return not_here("PIO windows mapped into the address space (tcaPioMap): hosts share no memory");
    }

    Result load_chain(int channel, std::span<const Descriptor> chain) override {
        if (channel < 0 || channel >= TCA_NUM_DMA_CHANNELS) return tcaErrorInvalidChannel;
        if (chain.size() > TCA_MAX_DESCRIPTORS) return tcaErrorTooManyDescriptors;
        for (const Descriptor &desc : chain)
            if (Result r = validate(desc); r != tcaSuccess) return r;
        Channel &ch = channels_[channel];
        const ChannelHold g(ch);
        ch.runs.load(chain);
        return tcaSuccess;
    }

    // A start issues the run's puts and notifications here, up to its first
    // trigger whose counter is short (the sources of what was issued are
    // reusable when it returns); the rest goes on from whichever thread
    // comes by once the counter moves: a wait, tcaProgress, the progress
    // thread (pump_channels).  wait_channel flushes the endpoints written
    // to, so a finished wait means visible at every target.  Programs that
    // wait for notifications instead (most published ones) pay no round
    // trip per start.  The first error of the runs not yet waited for is kept.
    Result start_channel(int channel) override {
        if (channel < 0 || channel >= TCA_NUM_DMA_CHANNELS) return tcaErrorInvalidChannel;
        Channel &ch = channels_[channel];
        const ChannelHold g(ch);
        if (!ch.runs.loaded()) return tcaErrorEmptyChain;
        ch.runs.start();
        pump(ch, true);
        return tcaSuccess;
    }

    // Waits for the runs started before (issuing what their triggers let
    // go), then flushes, blocking or not, to its end (bounded by
    // TCA_TIMEOUT_MS): one round trip per endpoint written since the last wait.
    Result wait_channel(int channel, bool block) override {
        if (channel < 0 || channel >= TCA_NUM_DMA_CHANNELS) return tcaErrorInvalidChannel;
        Channel &ch = channels_[channel];
        return wait_for([&]() -> Result {
            const ChannelHold g(ch);
            pump(ch);
            if (!ch.runs.idle()) return tcaErrorNotReady;
            const Result flushed = flush(ch.unflushed, deadline());
            ch.unflushed.clear();
            const Result r = ch.runs.take_result();
            return r != tcaSuccess ? r : flushed;
        }, block);
    }

    // Runs waiting on their triggers are dropped; what was issued stays.
    Result abort_channel(int channel) override {
        if (channel < 0 || channel >= TCA_NUM_DMA_CHANNELS) return tcaErrorInvalidChannel;
        Channel &ch = channels_[channel];
        const ChannelHold g(ch);
        ch.runs.abort();
        note_waiting(ch);
        return tcaSuccess;
    }

    Result take_notification(const tcaHandle &h, int slot, int tag, bool block) override {
        if (Result r = check_handle(&h, n_); r != tcaSuccess) return r;
        if (slot < 0 || slot >= TCA_NOTIFY_SLOTS) return tcaErrorInvalidSlot;
        const int src = h.node;
        return wait_for([&]() -> Result {
            {
                std::lock_guard g(inbox_lock_);
                auto it = inbox_.find(std::make_tuple(src, slot, tag));
                if (it != inbox_.end() && it->second > 0) {
                    if (--it->second == 0) inbox_.erase(it);
                    return tcaSuccess;
                }
            }
            // A peer that failed, or finished (its goodbye came after its last
            // notification, on the same endpoint), will post nothing more.
            if (src != self_ && (peer_gone(src) || finished_[src].load(std::memory_order_acquire)))
                return tcaErrorPeerGone;
            return tcaErrorNotReady;
        }, block);
    }

    static bool counter_id_valid(int id) noexcept { return id >= 0 && owned_index(id) < TCA_NUM_COUNTERS; }
    Result counter_read(int id, uint64_t *value) override {
        if (!counter_id_valid(id)) return tcaErrorInvalidCounter;
        if (value == nullptr) return tcaErrorInvalidValue;
        progress();
        return counter_now(id, value);
    }
    // Without progress: what a trigger compares (an id checked for range).
    Result counter_now(int id, uint64_t *value) const noexcept {
        if (counter_holder_[owned_index(id)].load(std::memory_order_acquire) != owned_token(id))
            return tcaErrorNotAcquired;
        *value = counters_[owned_index(id)].load(std::memory_order_acquire);
        return tcaSuccess;
    }
    // A local add kicks the triggered descriptors waiting for it at once.
    Result counter_add(int id, uint64_t add) override {
        if (!counter_id_valid(id)) return tcaErrorInvalidCounter;
        const Result r = add_local_counter(id, add);
        if (r == tcaSuccess) pump_channels();
        return r;
    }
    Result counter_wait(int id, uint64_t value) override {
        if (!counter_id_valid(id)) return tcaErrorInvalidCounter;
        return wait_for([&]() -> Result {
            uint64_t now = 0;
            if (Result r = counter_read(id, &now); r != tcaSuccess) return r;
            return now >= value ? tcaSuccess : tcaErrorNotReady;
        }, true);
    }
    Result counter_add_remote(int node, int id, uint64_t add) override {
        if (node < 0 || node >= n_) return tcaErrorInvalidNode;
        if (!counter_id_valid(id)) return tcaErrorInvalidCounter;
        if (node == self_) return add_local_counter(id, add);
        Endpoint *ep = nullptr;
        if (Result r = endpoint(node, &ep); r != tcaSuccess) return r;
        // After this thread's earlier PIO writes, as on the loopback (coll
        // tca's thread engine writes a segment, then counts it at the child).
        if (Result r = ep->fence(); r != tcaSuccess) return r;
        const CounterAddMsg m{self_, id, add};
        return ep->am_send(kAmCounterAdd, &m, sizeof m, deadline());
    }
    // One message where the write is one (on_write adds once the data is
    // in): a broadcast segment and its count cost one send, not two.
    Result pio_write_counter_add(const tcaHandle &dst, uint64_t off, const void *src, size_t size, int id,
                                 uint64_t add) override {
        if (dst.node == self_ || size == 0 || size > kAmPioMax)
            return Device::pio_write_counter_add(dst, off, src, size, id, add);
        if (!counter_id_valid(id)) return tcaErrorInvalidCounter;
        if (Result r = check_pio_write(dst, n_, off, src, size, 0, kPioFlags, 0); r != tcaSuccess) return r;
        if (timing_.enabled) spin_for_ns(timing_.pio_ns(topo_.hops(self_, dst.node)));
        return write(dst, off, static_cast<const unsigned char *>(src), size, 1, 0, size, true, deadline(),
                     {.counter = id, .add = add});
    }
    void counter_claim(int index, uint32_t holder) override {
        counters_[index].store(0, std::memory_order_relaxed);
        counter_holder_[index].store(holder, std::memory_order_release);
    }
    void slot_claim(int index, uint32_t holder) override {
        slot_holder_[index].store(holder, std::memory_order_release);
    }
    // A notification into a slot held by someone else of this process is
    // refused, as on the loopback: named by its plain number or another id.
    bool slot_admits(int id) const noexcept {
        const uint32_t holder = slot_holder_[owned_index(id)].load(std::memory_order_acquire);
        return holder == 0 || holder == owned_token(id);
    }

    Result interrupt_raise(int node) override {
        if (node < 0 || node >= n_) return tcaErrorInvalidNode;
        if (node == self_) {
            event();
            return tcaSuccess;
        }
        if (peer_gone(node)) return tcaErrorPeerGone;
        Endpoint *ep = nullptr;
        if (Result r = endpoint(node, &ep); r != tcaSuccess) return r;
        const NodeMsg m{self_};
        return ep->am_send(kAmInterrupt, &m, sizeof m, deadline());
    }

    Result node_state(int node, int *state) override {
        if (node < 0 || node >= n_) return tcaErrorInvalidNode;
        progress();
        if (node == self_) *state = TCA_NODE_ALIVE;
        else if (finished_[node].load(std::memory_order_acquire)) *state = TCA_NODE_FINISHED;
        else if (peer_gone(node)) *state = TCA_NODE_DEAD;
        else *state = TCA_NODE_ALIVE;
        return tcaSuccess;
    }

    // tcaProgress: a client (btl tca's progress, on every MPI progress pass)
    // drives the worker; while it keeps doing so the progress thread naps.
    bool assist() override {
        mark_assisted();
        return progress();
    }
    Result set_progress_takeover(int64_t ns) override {
        takeover_ns_.store(ns, std::memory_order_relaxed);
        return tcaSuccess;
    }
    void mark_assisted() noexcept { assisted_ns_.store(now_ns(), std::memory_order_relaxed); }
    // How much longer a client counts as driving the worker (<= 0: not now).
    int64_t assisted_for() const noexcept {
        return takeover_ns_.load(std::memory_order_relaxed) - (now_ns() - assisted_ns_.load(std::memory_order_relaxed));
    }
    bool assisted() const noexcept { return assisted_for() > 0; }

    uint32_t interrupt_count() noexcept override {
        if (!assisted()) progress();
        return events_.seq.load(std::memory_order_acquire);
    }
    // Sleeps, as on the loopback: the worker is progressed meanwhile by the
    // device's progress thread, or by the application thread that drives it
    // (tcaProgress).  Spinning here took a core from that thread (the TCA
    // session's progress thread waits here for coll tca's broadcasts), and
    // while a thread drives the worker no other touches it here: UCX's
    // worker lock is a spin lock, and a holder preempted on a busy host
    // leaves the driving thread spinning out its time slice.
    Result interrupt_wait(uint32_t seen, int64_t timeout_ns) override {
        if (!assisted()) progress();
        return events_.await_change(seen, timeout_ns) ? tcaSuccess : tcaErrorTimeout;
    }

    std::string backing_path() const override { return ""; }

private:
    static constexpr size_t kMaxRegistrations = 1u << 16;

    struct Registration {
        uint64_t key = 0;
        uint64_t addr = 0;  // CPU: virtual address; internal: offset
        uint64_t size = 0;
        tcaMemoryType type = tcaMemoryCPU;
        std::unique_ptr<MemoryMap> map;  // CPU memory of size > 0
        uint64_t holders = 0;            // nodes given its key (bit n: node n)
    };
    struct Peer {
        std::unique_ptr<Endpoint> ep;
        std::unique_ptr<Endpoint> bulk;  // large rows' data (DmaTaggedMsg), made on first use
        bool bulk_refused = false;       // UCX would not make it: rows go by active message
    };
    struct RemoteRegistration {
        std::unique_ptr<RemoteKey> key;
        uint64_t va_of_zero = 0;
    };
    // node, index, key, and the range the handle names: a handle with an
    // altered range is a different one, asked of the owner (who refuses it).
    using RegId = std::tuple<int, uint32_t, uint64_t, uint64_t, uint64_t>;
    struct Channel {
        std::mutex lock;
        ChannelRuns runs;
        bool counted = false;        // among waiting_channels_
        std::vector<int> unflushed;  // nodes written since the last wait_channel
    };
    // Holds a channel's lock; while a thread holds one, its progress passes
    // issue no runs (pump_channels): issuing may progress the worker, and a
    // second channel lock taken there could be this thread's own.
    class ChannelHold {
    public:
        explicit ChannelHold(Channel &ch) : g_(ch.lock) { ++holding_channel; }
        ChannelHold(Channel &ch, std::try_to_lock_t) : g_(ch.lock, std::try_to_lock) {
            if (g_.owns_lock()) ++holding_channel;
        }
        ~ChannelHold() {
            if (g_.owns_lock()) --holding_channel;
        }
        bool owns() const noexcept { return g_.owns_lock(); }
        ChannelHold(const ChannelHold &) = delete;
        ChannelHold &operator=(const ChannelHold &) = delete;

    private:
        std::unique_lock<std::mutex> g_;
    };
    static inline thread_local int holding_channel = 0;
    struct KeyAnswer {
        Result status = tcaErrorNotReady;
        uint64_t va_of_zero = 0;
        std::vector<std::byte> packed;
    };

    static Result not_here(const char *what) {
        std::fprintf(stderr, "tca: the ucx device does not support %s\n", what);
        return tcaErrorNotSupported;
    }
    Deadline deadline() const { return Clock::now() + std::chrono::nanoseconds(policy_.timeout_ns); }

    // Repeats `attempt` (progressing in between) until it is not
    // tcaErrorNotReady; once, without blocking, where block is false.
    // A thread that waits here drives the worker as tcaProgress does: the
    // progress thread naps until TCA_TAKEOVER_US after the last wait (a published
    // ping-pong goes from wait to start to wait: in the gaps the woken
    // progress thread spun on the worker's lock, held by the waiter, on the
    // same core - 8 B one way 21 us, raw UCX 9.6).
    template <class Attempt>
    Result wait_for(Attempt &&attempt, bool block) {
        assist();
        Result r = attempt();
        if (r != tcaErrorNotReady || !block) return r;
        const ScopedCount waiting(waiters_);  // the progress thread stands aside meanwhile
        const auto start = Clock::now();
        const auto end = start + std::chrono::nanoseconds(policy_.timeout_ns);
        for (unsigned spins = 1;; ++spins) {
            progress();
            if ((r = attempt()) != tcaErrorNotReady) return r;
            if ((spins & 255) == 0) {
                mark_assisted();
                const auto now = Clock::now();
                if (now >= end) return tcaErrorTimeout;
                if (now - start > std::chrono::nanoseconds(policy_.spin_ns)) sched_yield();
            }
        }
    }

    // UCX progress, then the key requests its handlers queued (they must not
    // call into UCX themselves).  One caller at a time serves the queue.
    bool progress() {
        bool did = worker_->progress();
        // Every wait spins through here: look at the queue only when a
        // handler said it holds something.
        if (queued_.load(std::memory_order_acquire) == 0) return pump_channels() || did;
        std::unique_lock serving(serve_lock_, std::try_to_lock);
        if (!serving.owns_lock()) return pump_channels() || did;
        for (;;) {
            KeyRequestMsg req{};
            KeyRevokeMsg forget{};
            bool is_request = false;
            {
                std::lock_guard g(inbox_lock_);
                if (!key_requests_.empty()) {
                    req = key_requests_.front();
                    key_requests_.pop_front();
                    is_request = true;
                } else if (!revokes_.empty()) {
                    forget = revokes_.front();
                    revokes_.pop_front();
                } else {
                    break;
                }
                queued_.fetch_sub(1, std::memory_order_acq_rel);
            }
            if (is_request)
                answer_key_request(req);
            else
                forget_key(forget);
            did = true;
        }
        serving.unlock();
        return pump_channels() || did;
    }

    // Runs waiting for their triggers, from any thread's progress (the
    // handlers of remote counter adds must not call UCX): each channel whose
    // lock is free.  Not from a thread that holds a channel (it is issuing).
    bool pump_channels() {
        if (waiting_channels_.load(std::memory_order_acquire) == 0 || holding_channel > 0) return false;
        bool moved = false;
        for (Channel &ch : channels_) {
            const ChannelHold g(ch, std::try_to_lock);
            if (g.owns() && !ch.runs.idle()) moved |= pump(ch);
        }
        return moved;
    }
    // Issues what the channel's runs may issue now (its lock held).  A run
    // that ends is an event of the node, as a channel completion is on the
    // loopback - but not the run a start has just issued whole on its own
    // thread (every DMA put of btl tca would wake the session's sleeper).
    bool pump(Channel &ch, bool starting = false) {
        const size_t before = ch.runs.queued();
        const bool moved = ch.runs.pump(
            [&](const Descriptor &desc, ChannelRuns::RunState &run) { return issue(desc, run, &ch.unflushed); },
            [&](int id, uint64_t *value) { return counter_now(id, value); });
        size_t ended = before - ch.runs.queued();
        if (starting && ch.runs.idle() && ended > 0) --ended;  // the started run is the last of the queue
        if (ended > 0) event();
        note_waiting(ch);
        return moved;
    }
    void note_waiting(Channel &ch) {
        const bool waiting = !ch.runs.idle();
        if (waiting == ch.counted) return;
        ch.counted = waiting;
        waiting_channels_.fetch_add(waiting ? 1 : -1, std::memory_order_acq_rel);
    }
    // One descriptor of a run: its modelled time, its data, notifications,
    // then its counter add at the destination (behind the data, as on the loopback).
    Result issue(const Descriptor &desc, ChannelRuns::RunState &run, std::vector<int> *written) {
        if (timing_.enabled) {
            if (!run.clock_started) run.clock.start(timing_, now_ns(), run.table_mode);
            run.clock_started = true;
            const DescriptorCost cost = DescriptorCost::of(desc, topo_.hops(self_, desc.dst.node), run.table_mode);
            spin_until_ns(run.clock.next(timing_, cost).done_ns);
        }
        const bool remote_data = desc.dst.node != self_ && desc.bytes() > 0;
        const Deadline d = deadline();
        if (desc.add_counter >= 0 && remote_data && desc.height == 1 && desc.width <= kAmPioMax && !desc.notifies()) {
            // One eager message behind a fence, the count added once the
            // data is in (as tcaPioWriteCounterAdd): as a row and a separate
            // add, a 60 KiB segment went by UCX's rendezvous, a round trip
            // each that waits for the target to be scheduled.
            unsigned char *src = nullptr;
            if (Result r = local_registration(desc.src, &src); r != tcaSuccess) return r;
            note_written(desc.dst.node, written);
            run.wrote = true;
            return write(desc.dst, desc.dst_off, src + desc.src_off, desc.width, 1, 0, desc.width, true, d,
                         {.counter = desc.add_counter, .add = desc.add_value});
        }
        // Descriptor k's data lands before descriptor k+1's (published
        // programs poll a sequence number written after a packet): puts are
        // unordered in UCX (several lanes on a real fabric), so a fence
        // between them.  Over tcp they arrive in order anyway.
        if (run.wrote && remote_data) {
            Endpoint *ep = nullptr;
            if (Result r = endpoint(desc.dst.node, &ep); r != tcaSuccess) return r;
            if (Result r = ep->fence(); r != tcaSuccess) return r;
        }
        if (Result r = run_descriptor(desc, d, written); r != tcaSuccess) return r;
        run.wrote |= remote_data;
        if (desc.add_counter >= 0) return counter_add_remote(desc.dst.node, desc.add_counter, desc.add_value);
        return tcaSuccess;
    }

    // Our cached key of a peer's registration that the peer destroyed: gone
    // once no put of ours is being issued with it (those hold key_lock_
    // shared), then our puts to the owner are flushed (landed) before we
    // confirm.  A later write asks the owner again and is refused.
    void forget_key(const KeyRevokeMsg &m) {
        {
            std::unique_lock g(key_lock_);
            {
                std::lock_guard in(inbox_lock_);  // key_lock_, then inbox_lock_: the one order
                const RevokedKey k{m.src, m.reg_index, m.key};
                if (asking_.count(k) != 0) revoked_asks_.insert(k);  // an answer on its way is not cached
            }
            // Its entries (one per range a handle named) sit together: the id
            // is ordered by owner, index and key first.
            auto it = remote_keys_.lower_bound(RegId{m.src, m.reg_index, m.key, 0, 0});
            while (it != remote_keys_.end() && std::get<0>(it->first) == m.src &&
                   std::get<1>(it->first) == m.reg_index && std::get<2>(it->first) == m.key)
                it = remote_keys_.erase(it);
        }
        Endpoint *ep = nullptr;
        if (endpoint(m.src, &ep) != tcaSuccess) return;  // the owner is gone: nobody waits
        (void) ep->flush(deadline());
        const KeyRevokeMsg done{self_, m.reg_index, m.key};
        (void) ep->am_send(kAmKeyForgotten, &done, sizeof done, deadline());
    }

    // The owner's side: every node that was given the key of `reg` forgets
    // it and has its puts with it landed before the memory is unmapped (or,
    // freed by the program, reused).  Nodes that finished or failed write
    // nothing more.  At most TCA_TIMEOUT_MS; then tcaErrorTimeout, and the
    // registration is gone all the same.
    Result revoke(uint32_t index, const Registration &reg) {
        if (reg.holders == 0) return tcaSuccess;
        const KeyRevokeMsg m{self_, index, reg.key};
        uint64_t asked = 0;
        for (int n = 0; n < n_; ++n) {
            const uint64_t bit = uint64_t{1} << n;
            Endpoint *ep = nullptr;
            if (!(reg.holders & bit) || finished_[n].load(std::memory_order_acquire) || endpoint(n, &ep) != tcaSuccess)
                continue;
            if (ep->am_send(kAmKeyRevoke, &m, sizeof m, deadline()) == tcaSuccess) asked |= bit;
        }
        const auto id = std::make_pair(index, reg.key);
        const Result r = wait_for([&]() -> Result {
            std::lock_guard g(inbox_lock_);
            uint64_t pending = asked & ~forgotten_[id];
            for (int n = 0; n < n_; ++n)  // ep_lock_ inside inbox_lock_: the one order the two are taken in
                if ((pending >> n & 1) && (finished_[n].load(std::memory_order_acquire) || peer_gone(n)))
                    pending &= ~(uint64_t{1} << n);
            return pending == 0 ? tcaSuccess : tcaErrorNotReady;
        }, true);
        {
            std::lock_guard g(inbox_lock_);
            forgotten_.erase(id);
        }
        if (r != tcaSuccess)
            std::fprintf(stderr, "tca: node %d: tcaDestroyHandle: a node that holds the key of registration %u did "
                         "not confirm within TCA_TIMEOUT_MS that it stopped writing into it (%s)\n", self_, index,
                         result_message(r));
        return r;
    }

    void answer_key_request(const KeyRequestMsg &req) {
        auto reply = std::make_unique<KeyReplyMsg>();
        std::memset(reply.get(), 0, sizeof *reply);
        reply->src = self_;
        reply->reg_index = req.reg_index;
        reply->key = req.key;
        reply->addr = req.addr;
        reply->size = req.size;
        reply->status = tcaErrorNotRegistered;
        {
            std::lock_guard g(reg_lock_);
            auto it = regs_.find(req.reg_index);
            if (it != regs_.end() && it->second.key == req.key && it->second.addr == req.addr &&
                it->second.size == req.size) {
                Registration &reg = it->second;
                reg.holders |= uint64_t{1} << req.src;  // told before it could have the key: revoked at destroy
                const std::vector<std::byte> *packed = nullptr;
                if (reg.type == tcaMemoryInternal) {
                    packed = &internal_map_->packed_key();
                    reply->va_of_zero = reinterpret_cast<uint64_t>(internal_);
                } else if (reg.map) {
                    packed = &reg.map->packed_key();
                }
                if (packed == nullptr) {
                    reply->status = tcaSuccess;  // 0 bytes: nothing to write, no key needed
                } else if (packed->size() <= kMaxPackedKey) {
                    std::memcpy(reply->packed_key, packed->data(), packed->size());
                    reply->key_length = static_cast<uint32_t>(packed->size());
                    reply->status = tcaSuccess;
                } else {
                    reply->status = tcaErrorNotSupported;
                }
            }
        }
        Endpoint *ep = nullptr;
        if (endpoint(req.src, &ep) == tcaSuccess)
            (void) ep->am_send(kAmKeyReply, reply.get(), sizeof *reply, deadline());
    }

    // ---- active-message handlers (inside worker progress; no UCX calls) ----
    static void on_notify(void *arg, const void *header, size_t length) {
        NotifyMsg m;
        if (read_header(header, length, &m)) static_cast<UcxDevice *>(arg)->notified_by(m.src, m.slot, m.tag);
    }
    // A notification another node sent (alone or in its row's message).
    void notified_by(int src, int slot_id, int tag) {
        if (src < 0 || src >= n_ || slot_id < 0 || owned_index(slot_id) >= TCA_NOTIFY_SLOTS) return;
        if (!slot_admits(slot_id)) {
            std::fprintf(stderr, "tca: node %d: a notification from node %d to slot %d was refused (the slot is held "
                         "by another user here, and the sender did not name it by the holder's id)\n",
                         self_, src, owned_index(slot_id));
            return;
        }
        {
            std::lock_guard g(inbox_lock_);
            ++inbox_[std::make_tuple(src, owned_index(slot_id), tag)];
        }
        event();
    }
    // Where a peer's write of `size` bytes at dst+off lands: into a
    // registration of ours only, inside it (nullptr, with a line, where not).
    // Under reg_lock_, which keeps tcaDestroyHandle from unmapping it under a copy.
    unsigned char *landing_locked(const tcaHandle &dst, uint64_t off, uint64_t size, int src, const char *what) {
        unsigned char *base = nullptr;
        if (dst.node != self_ || local_registration_locked(dst, &base) != tcaSuccess || off > dst.size ||
            size > dst.size - off) {
            std::fprintf(stderr, "tca: node %d: a %s write from node %d was refused (not into a registration of "
                         "this node, or past its end)\n", self_, what, src);
            return nullptr;
        }
        return base + off;
    }
    // A PIO store's copy: its last 8-byte word after the rest, as a
    // put_last_word_after (sizes that are not whole words: one copy).
    static void copy_last_word_after(unsigned char *to, const unsigned char *from, size_t size) {
        if (size >= 8 && size % 8 == 0) {
            std::memcpy(to, from, size - 8);
            std::atomic_thread_fence(std::memory_order_release);
            std::memcpy(to + size - 8, from + size - 8, 8);
        } else {
            std::memcpy(to, from, size);
        }
    }
    // Eager data is copied here under the registration lock, rendezvous data
    // lands at `to` after the call (the registration outlives it:
    // tcaDestroyHandle's revoke waits for the sender, whose send ends when
    // the data has landed).
    static Result on_write(void *arg, const void *header, size_t length, const void *data, size_t size,
                               void **to) {
        auto *self = static_cast<UcxDevice *>(arg);
        WriteMsg m;
        if (!read_header(header, length, &m) || m.size != size) return tcaErrorInvalidValue;
        // Sent eager only (pio_message, write() with a notification): a count follows the copy.
        if ((m.counter >= 0 || m.notify_slot >= 0) && data == nullptr) return tcaErrorInvalidValue;
        {
            std::lock_guard g(self->reg_lock_);
            unsigned char *into =
                self->landing_locked(m.dst, m.off, m.size, m.src, (m.flags & kLastWordAfter) ? "PIO" : "DMA");
            if (into == nullptr) return tcaErrorNotRegistered;
            if (data == nullptr)
                *to = into;  // a rendezvous (never a PIO write: those are sent eager)
            else if (m.flags & kLastWordAfter)
                copy_last_word_after(into, static_cast<const unsigned char *>(data), size);
            else
                std::memcpy(into, data, size);
        }
        if (m.counter >= 0) self->count_from(m.src, m.counter, m.add);
        if (m.notify_slot >= 0) self->notified_by(m.src, m.notify_slot, m.notify_tag);
        return tcaSuccess;
    }
    // The receive of a tagged row: where it lands, checked as on_write.
    static Result on_dma_tagged(void *arg, const void *header, size_t length, Worker::TagReceive *into) {
        DmaTaggedMsg m;
        if (!read_header(header, length, &m)) return tcaErrorInvalidValue;
        into->tag = m.tag;
        void *to = nullptr;
        if (Result r = on_write(arg, &m.row, sizeof m.row, nullptr, m.row.size, &to); r != tcaSuccess) return r;
        into->to = to;
        into->size = m.row.size;
        return tcaSuccess;
    }
    static void on_interrupt(void *arg, const void *, size_t length) {
        if (length == sizeof(NodeMsg)) static_cast<UcxDevice *>(arg)->event();
    }
    static void on_counter_add(void *arg, const void *header, size_t length) {
        CounterAddMsg m;
        if (read_header(header, length, &m)) static_cast<UcxDevice *>(arg)->count_from(m.src, m.id, m.add);
    }
    // A counter add another node sent (alone or after a write).
    void count_from(int src, int id, uint64_t add) {
        if (counter_id_valid(id) && add_local_counter(id, add) != tcaSuccess)
            std::fprintf(stderr, "tca: node %d: a counter add from node %d to counter %d was refused (not held "
                         "with that id, or past 2^48)\n", self_, src, owned_index(id));
    }
    // A request the next serving progress pass answers (it may call UCX).
    template <class Msg>
    static void queue_to_serve(void *arg, const void *header, size_t length, std::deque<Msg> UcxDevice::*queue) {
        auto *self = static_cast<UcxDevice *>(arg);
        Msg m;
        if (!read_header(header, length, &m) || m.src < 0 || m.src >= self->n_) return;
        std::lock_guard g(self->inbox_lock_);
        (self->*queue).push_back(m);
        self->queued_.fetch_add(1, std::memory_order_acq_rel);
    }
    static void on_key_request(void *arg, const void *header, size_t length) {
        queue_to_serve(arg, header, length, &UcxDevice::key_requests_);
    }
    static void on_key_revoke(void *arg, const void *header, size_t length) {
        queue_to_serve(arg, header, length, &UcxDevice::revokes_);
    }
    static void on_key_forgotten(void *arg, const void *header, size_t length) {
        auto *self = static_cast<UcxDevice *>(arg);
        KeyRevokeMsg m;
        if (!read_header(header, length, &m)) return;
        if (m.src < 0 || m.src >= self->n_) return;
        std::lock_guard g(self->inbox_lock_);
        self->forgotten_[std::make_pair(m.reg_index, m.key)] |= uint64_t{1} << m.src;
    }
    static void on_key_reply(void *arg, const void *header, size_t length) {
        auto *self = static_cast<UcxDevice *>(arg);
        if (length != sizeof(KeyReplyMsg)) return;
        const auto *m = static_cast<const KeyReplyMsg *>(header);
        if (m->key_length > kMaxPackedKey) return;
        KeyAnswer a;
        a.status = static_cast<Result>(m->status);
        a.va_of_zero = m->va_of_zero;
        const auto *b = reinterpret_cast<const std::byte *>(m->packed_key);
        a.packed.assign(b, b + m->key_length);
        std::lock_guard g(self->inbox_lock_);
        self->key_answers_[RegId{static_cast<int>(m->src), m->reg_index, m->key, m->addr, m->size}] = std::move(a);
    }
    static void on_goodbye(void *arg, const void *header, size_t length) {
        auto *self = static_cast<UcxDevice *>(arg);
        NodeMsg m;
        if (!read_header(header, length, &m)) return;
        if (m.src >= 0 && m.src < self->n_) self->finished_[m.src].store(true, std::memory_order_release);
    }

    Result add_local_counter(int id, uint64_t add) {
        const int idx = owned_index(id);
        if (counter_holder_[idx].load(std::memory_order_acquire) != owned_token(id)) return tcaErrorNotAcquired;
        uint64_t cur = counters_[idx].load(std::memory_order_relaxed);
        do {
            if (add > kCounterMax - cur) return tcaErrorInvalidValue;
        } while (!counters_[idx].compare_exchange_weak(cur, cur + add, std::memory_order_acq_rel));
        event();
        return tcaSuccess;
    }

    bool peer_gone(int node) {
        std::lock_guard g(ep_lock_);
        const auto &ep = peers_[node].ep;
        return ep && ep->peer_failed();
    }

    // The endpoint to `node`, made on first use from the address it published.
    Result endpoint(int node, Endpoint **out) {
        std::lock_guard g(ep_lock_);
        Peer &p = peers_[node];
        if (!p.ep) {
            std::vector<std::byte> address;
            const int wait_s = static_cast<int>(std::max<int64_t>(1, policy_.timeout_ns / 1'000'000'000));
            if (Result r = pmix_->get(first_rank_ + node, kAddressKey, wait_s, &address); r != tcaSuccess) {
                std::fprintf(stderr, "tca: node %d: no UCX address of node %d through PMIx (%s)\n", self_, node,
                             r == tcaErrorTimeout ? "not published in time" : "not there");
                return r;
            }
            // Peer failure reports where the transports can (tcp); UCX's
            // shared-memory transports refuse them: then node state only.
            if (Endpoint::create(*worker_, address, true, &p.ep) != tcaSuccess)
                if (Result r = Endpoint::create(*worker_, address, false, &p.ep); r != tcaSuccess) return r;
        }
        if (p.ep->peer_failed()) return tcaErrorPeerGone;
        *out = p.ep.get();
        return tcaSuccess;
    }

    // The node's second endpoint, without failure reports (DmaTaggedMsg);
    // after endpoint(node) succeeded.
    Result bulk_endpoint(int node, Endpoint **out) {
        std::lock_guard g(ep_lock_);
        Peer &p = peers_[node];
        if (!p.ep || p.bulk_refused) return tcaErrorNotSupported;
        if (!p.bulk) {
            std::vector<std::byte> address;
            if (pmix_->get(first_rank_ + node, kAddressKey, 1, &address) != tcaSuccess ||
                Endpoint::create(*worker_, address, false, &p.bulk) != tcaSuccess) {
                p.bulk_refused = true;
                return tcaErrorNotSupported;
            }
            p.bulk->follow_failures_of(*p.ep);
        }
        if (p.bulk->peer_failed()) return tcaErrorPeerGone;
        *out = p.bulk.get();
        return tcaSuccess;
    }

    static RegId reg_id(const tcaHandle &h) { return RegId{h.node, h.reg_index, h.key, h.addr, h.size}; }

    // The owner's key for a remote handle, asked for on first use and cached.
    // Used under key_lock_ (shared), looked up again there: the owner may
    // revoke it meanwhile.
    Result fetch_remote_key(const tcaHandle &h) {
        const RegId id = reg_id(h);
        {
            std::shared_lock g(key_lock_);
            if (remote_keys_.count(id) != 0) return tcaSuccess;
        }
        Endpoint *ep = nullptr;
        if (Result r = endpoint(h.node, &ep); r != tcaSuccess) return r;
        // The owner may revoke the key between its answer and our caching it
        // (the revoke can even overtake the answer): forget_key marks what is
        // being asked for, and a marked answer is not cached.
        const RevokedKey asked{h.node, h.reg_index, h.key};
        {
            std::lock_guard g(inbox_lock_);
            ++asking_[asked];
        }
        KeyAnswer answer;
        const KeyRequestMsg req{self_, h.reg_index, h.key, h.addr, h.size};
        Result waited = ep->am_send(kAmKeyRequest, &req, sizeof req, deadline());
        if (waited == tcaSuccess) waited = wait_for([&]() -> Result {
            std::lock_guard g(inbox_lock_);
            auto it = key_answers_.find(id);
            // ep_lock_ inside inbox_lock_: the one order the two are taken in.
            if (it == key_answers_.end()) return peer_gone(h.node) ? tcaErrorPeerGone : tcaErrorNotReady;
            answer = std::move(it->second);
            key_answers_.erase(it);
            return tcaSuccess;
        }, true);
        RemoteRegistration reg;
        if (waited == tcaSuccess && answer.status == tcaSuccess) {
            reg.va_of_zero = answer.va_of_zero;
            if (!answer.packed.empty()) waited = RemoteKey::create(*ep, answer.packed, &reg.key);
        }
        std::unique_lock keys(key_lock_);  // forget_key marks under it too: nothing slips between
        bool revoked = false;
        {
            std::lock_guard g(inbox_lock_);
            revoked = revoked_asks_.count(asked) != 0;
            if (--asking_[asked] == 0) {
                asking_.erase(asked);
                revoked_asks_.erase(asked);
            }
        }
        if (waited != tcaSuccess) return waited;
        if (answer.status != tcaSuccess) return answer.status;
        if (revoked) return tcaErrorNotRegistered;  // destroyed by its owner meanwhile
        remote_keys_.emplace(id, std::move(reg));
        return tcaSuccess;
    }

    // The local address of one of our registrations (the source of a put).
    Result local_registration(const tcaHandle &h, unsigned char **base) const {
        std::lock_guard g(reg_lock_);
        return local_registration_locked(h, base);
    }
    Result local_registration_locked(const tcaHandle &h, unsigned char **base) const {
        auto it = regs_.find(h.reg_index);
        // The range too: a handle whose size was altered must not reach past the registration.
        if (it == regs_.end() || it->second.key != h.key || it->second.addr != h.addr || it->second.size != h.size)
            return tcaErrorNotRegistered;
        if (base != nullptr)
            *base = h.region == tcaMemoryInternal ? internal_ + h.addr : reinterpret_cast<unsigned char *>(h.addr);
        return tcaSuccess;
    }

    // rows x width bytes from src (rows src_pitch apart) into dst+off (rows
    // dst_pitch apart).  last_word: the PIO store (its last 8 bytes after the rest).
    Result write(const tcaHandle &dst, uint64_t off, const unsigned char *src, uint64_t width, uint64_t rows,
                 uint64_t src_pitch, uint64_t dst_pitch, bool last_word, Deadline d, const CountAfter &then = {}) {
        if (width == 0 || rows == 0) return tcaSuccess;
        if (dst.node == self_) {
            unsigned char *base = nullptr;
            if (Result r = local_registration(dst, &base); r != tcaSuccess) return r;
            for (uint64_t i = 0; i < rows; ++i) std::memmove(base + off + i * dst_pitch, src + i * src_pitch, width);
            return tcaSuccess;
        }
        if (Result r = fetch_remote_key(dst); r != tcaSuccess) return r;
        Endpoint *ep = nullptr;
        if (Result r = endpoint(dst.node, &ep); r != tcaSuccess) return r;
        // A PIO write lands after this thread's earlier ones (tca.h), which
        // may still be in flight on any endpoint (a program's data, then the
        // flag it polls, as two writes).
        if (last_word)
            if (Result r = ep->fence(); r != tcaSuccess) return r;
        std::shared_lock keys(key_lock_);  // the key is not forgotten while our puts with it are issued
        const auto it = remote_keys_.find(reg_id(dst));
        if (it == remote_keys_.end()) return tcaErrorNotRegistered;  // revoked since: the owner destroyed it
        const RemoteRegistration *reg = &it->second;
        const uint64_t remote = reg->va_of_zero + dst.addr + off;
        // (Under the key's lock too: the revoke's flush covers it.)
        if (last_word && rows == 1 && width <= kAmPioMax)
            return pio_message(*ep, dst, off, src, width, d, then);
        if (then.counter >= 0) return tcaErrorInvalidValue;  // callers send such writes with their add apart
        if (then.notify_slot >= 0) {
            if (last_word || !row_carries_notification(rows, width)) return tcaErrorInvalidValue;
            // Behind this thread's earlier writes, as a separate notification
            // is (notify_all).
            if (Result r = ep->fence(); r != tcaSuccess) return r;
            WriteMsg m{dst, off, width, self_, 0u};
            m.notify_slot = then.notify_slot;
            m.notify_tag = then.notify_tag;
            return ep->am_send_data(kAmWrite, &m, sizeof m, src, width, d, true);
        }
        if (rows == 1 && dma_by_am_) {
            // A larger PIO write: the body, then its last word as a small
            // PIO write once the body landed (a rendezvous send ends then;
            // an eager one was copied in at the target before the word
            // arrives behind it).
            const bool word_after = last_word && width > 8 && width % 8 == 0;
            const uint64_t body = word_after ? width - 8 : width;
            if (Result r = write_row(*ep, dst, off, src, body, d); r != tcaSuccess || !word_after) return r;
            if (Result r = ep->fence(); r != tcaSuccess) return r;
            return pio_message(*ep, dst, off + body, src + body, 8, d);
        }
        for (uint64_t i = 0; i < rows; ++i) {
            const Result r = last_word && rows == 1 && width >= 8 && width % 8 == 0
                                 ? ep->put_last_word_after(src, width, remote, *reg->key, d)
                                 : ep->put(src + i * src_pitch, width, remote + i * dst_pitch, *reg->key, d);
            if (r != tcaSuccess) return r;
        }
        return tcaSuccess;
    }

    // One row by active message, or from kTaggedMin up announced on `ep` and
    // sent tagged on the node's bulk endpoint (where it has none: by active
    // message too).
    Result write_row(Endpoint &ep, const tcaHandle &dst, uint64_t off, const unsigned char *src, uint64_t size,
                     Deadline d) {
        const WriteMsg row{dst, off, size, self_, 0u};
        Endpoint *bulk = nullptr;
        if (size < kTaggedMin || bulk_endpoint(dst.node, &bulk) != tcaSuccess)
            return ep.am_send_data(kAmWrite, &row, sizeof row, src, size, d);
        const uint64_t seq = tagged_rows_.fetch_add(1, std::memory_order_relaxed) & ((uint64_t{1} << 48) - 1);
        const DmaTaggedMsg m{row, static_cast<uint64_t>(self_) << 48 | seq};
        if (Result r = ep.am_send(kAmDmaTagged, &m, sizeof m, d); r != tcaSuccess) return r;
        return bulk->tag_send(src, size, m.tag, d);
    }

    // A PIO write of up to kAmPioMax bytes: one eager message, the last word
    // copied last at the target.
    Result pio_message(Endpoint &ep, const tcaHandle &dst, uint64_t off, const unsigned char *src, uint64_t width,
                       Deadline d, const CountAfter &then = {}) {
        const WriteMsg m{dst, off, width, self_, kLastWordAfter, then.counter, then.add};
        return ep.am_send_data(kAmWrite, &m, sizeof m, src, width, d, true);
    }

    // A row small enough to take its target's notification in its own
    // (eager) message; write() checks its callers by the same rule.
    bool row_carries_notification(uint64_t rows, uint64_t width) const noexcept {
        return rows == 1 && dma_by_am_ && width > 0 && width <= kNotifyInRowMax;
    }

    Result run_descriptor(const Descriptor &desc, Deadline d, std::vector<int> *written) {
        if (Result r = admit_local(desc.dst.node, desc.flags, desc.slot); r != tcaSuccess) return r;
        unsigned char *src = nullptr;
        if (Result r = local_registration(desc.src, &src); r != tcaSuccess) return r;
        const uint64_t rows = desc.height, src_pitch = rows > 1 ? desc.src_pitch : desc.width;
        const uint64_t dst_pitch = rows > 1 ? desc.dst_pitch : desc.width;
        // A small row to another node takes its target's notification along.
        const bool notify_in_row =
            (desc.flags & tcaDMANotify) && desc.dst.node != self_ && row_carries_notification(rows, desc.width);
        CountAfter then;
        if (notify_in_row) {
            then.notify_slot = desc.slot;  // the id: the target checks it
            then.notify_tag = desc.tag;
        }
        if (Result r = write(desc.dst, desc.dst_off, src + desc.src_off, desc.width, rows, src_pitch, dst_pitch,
                             false, d, then);
            r != tcaSuccess)
            return r;
        if (desc.dst.node != self_) note_written(desc.dst.node, written);
        return notify_all(desc.dst.node, notify_in_row ? desc.flags & ~tcaDMANotify : desc.flags, desc.slot,
                          desc.tag, d);
    }

    // A node the channel's next wait flushes.
    static void note_written(int node, std::vector<int> *written) {
        if (std::find(written->begin(), written->end(), node) == written->end()) written->push_back(node);
    }

    // Our own slots are checked before anything is written (as the loopback
    // checks every target's); another node checks the ones it holds when the
    // notification arrives (on_notify).
    Result admit_local(int dst_node, int flags, int slot_id) const noexcept {
        const bool ours = (flags & tcaDMANotifySelf) || ((flags & tcaDMANotify) && dst_node == self_);
        return ours && !slot_admits(slot_id) ? tcaErrorNotAcquired : tcaSuccess;
    }

    // Notifications after the data: to the target behind a fence; to
    // ourselves once the target has the data (a flush).
    Result notify_all(int dst_node, int flags, int slot_id, int tag, Deadline d) {
        const int slot = owned_index(slot_id);
        if (flags & tcaDMANotify) {
            if (dst_node == self_) {
                deliver_local(slot, tag);
            } else {
                Endpoint *ep = nullptr;
                if (Result r = endpoint(dst_node, &ep); r != tcaSuccess) return r;
                if (Result r = ep->fence(); r != tcaSuccess) return r;
                const NotifyMsg m{self_, slot_id, tag};  // the id: the target checks it
                if (Result r = ep->am_send(kAmNotify, &m, sizeof m, d); r != tcaSuccess) return r;
            }
        }
        if (flags & tcaDMANotifySelf) {
            if (dst_node != self_)
                if (Result r = flush({dst_node}, d); r != tcaSuccess) return r;
            deliver_local(slot, tag);
        }
        return tcaSuccess;
    }
    void deliver_local(int slot, int tag) {
        {
            std::lock_guard g(inbox_lock_);
            ++inbox_[std::make_tuple(self_, slot, tag)];
        }
        event();
    }

    // An event of this node (an interrupt raised, a counter added to, a
    // notification counted): the count interrupt_wait watches moves, as the
    // loopback's event word does (coll tca's thread engine waits on it for
    // its counters).
    void event() noexcept { events_.notify(); }

    Result flush(const std::vector<int> &nodes, Deadline d) {
        for (int node : nodes) {
            Endpoint *ep = nullptr;
            if (Result r = endpoint(node, &ep); r != tcaSuccess) return r;
            if (Result r = ep->flush(d); r != tcaSuccess) return r;
        }
        return tcaSuccess;
    }

    void drop_registrations(uint64_t base, uint64_t size, tcaMemoryType type) {
        std::lock_guard g(reg_lock_);
        for (auto it = regs_.begin(); it != regs_.end();) {
            if (it->second.type == type && it->second.addr >= base && it->second.addr < base + size)
                it = regs_.erase(it);
            else
                ++it;
        }
    }

    std::unique_ptr<PmixExchange> pmix_;
    const int self_, n_;
    const int first_rank_;  // PMIx rank of node 0
    Topology topo_;
    const TimingModel timing_;
    loopback::WaitPolicy policy_;
    loopback::InternalHeap heap_;
    ResourceTable resources_;

    std::unique_ptr<Context> context_;
    std::unique_ptr<Worker> worker_;
    unsigned char *internal_ = nullptr;
    std::unique_ptr<MemoryMap> internal_map_;

    mutable std::mutex reg_lock_;
    std::map<uint32_t, Registration> regs_;
    uint64_t next_key_ = 1;

    std::mutex alloc_lock_;
    std::unordered_map<void *, size_t> host_allocs_;

    std::mutex ep_lock_;
    std::vector<Peer> peers_;
    const bool dma_by_am_;  // DMA rows as active messages with data (TCA_UCX_DMA, default am)
    std::atomic<uint64_t> tagged_rows_{0};  // rows sent tagged: their tags
    std::shared_mutex key_lock_;  // shared: a put being issued with a key; exclusive: a key added or forgotten
    std::map<RegId, RemoteRegistration> remote_keys_;

    std::mutex inbox_lock_;  // what the handlers fill
    std::map<std::tuple<int, int, int>, uint64_t> inbox_;
    std::deque<KeyRequestMsg> key_requests_;
    std::deque<KeyRevokeMsg> revokes_;
    std::atomic<int> queued_{0};  // key_requests_.size() + revokes_.size(), read without the lock
    std::map<std::pair<uint32_t, uint64_t>, uint64_t> forgotten_;  // (index, key) -> nodes that confirmed
    using RevokedKey = std::tuple<int, uint32_t, uint64_t>;           // owner, index, key
    std::map<RevokedKey, int> asking_;                                 // keys being asked for, by how many threads
    std::set<RevokedKey> revoked_asks_;                                // of those, revoked meanwhile
    std::map<RegId, KeyAnswer> key_answers_;
    std::mutex serve_lock_;

    Channel channels_[TCA_NUM_DMA_CHANNELS];
    std::atomic<int> waiting_channels_{0};  // channels with runs not yet issued to their end
    std::atomic<uint64_t> counters_[TCA_NUM_COUNTERS];
    std::atomic<uint32_t> slot_holder_[TCA_NOTIFY_SLOTS] = {};  // 0: nobody holds it
    std::atomic<uint32_t> counter_holder_[TCA_NUM_COUNTERS] = {};
    loopback::EventWord events_;  // events (event()); every one moves its count (watched from the start)
    std::vector<std::atomic<bool>> finished_;
    std::atomic<bool> stop_{false};
    std::atomic<int> waiters_{0};  // application threads inside wait_for
    std::atomic<int64_t> assisted_ns_{0};  // the last tcaProgress or wait in libtca (now_ns)
    // A client that drove the worker this recently (assisted_ns_) still
    // drives it: the progress thread naps (TCA_TAKEOVER_US at the start,
    // tcaSetProgressTakeover while the thread runs).
    std::atomic<int64_t> takeover_ns_{policy_.takeover_ns};
    std::thread progress_thread_;
};

}  // namespace

namespace {
Result make_ucx_device(const tcaInitParams *params, std::unique_ptr<Device> *out) {
    loopback::DeviceSettings settings;
    if (Result r = loopback::DeviceSettings::from_environment(&settings); r != tcaSuccess) return r;
    std::unique_ptr<PmixExchange> pmix;
    std::string why;
    if (Result r = PmixExchange::open(&pmix, &why); r != tcaSuccess) {
        std::fprintf(stderr, "tca: TCA_DEVICE=ucx: %s\n", why.c_str());
        return r;
    }
    // Nodes are the job's PMIx ranks; a caller that places both the node and
    // the count names a sub-cluster of consecutive ranks (first = rank - node).
    UcxPlacement place{pmix->rank(), pmix->job_size(), 0};
    const bool placed = params != nullptr && params->node_id >= 0 && params->num_nodes > 0;
    if (placed) place = {params->node_id, params->num_nodes, pmix->rank() - params->node_id};
    const bool fits = place.node < place.nodes && place.first >= 0 && place.first + place.nodes <= pmix->job_size();
    if (!fits || (!placed && params != nullptr &&
                  ((params->node_id >= 0 && params->node_id != pmix->rank()) ||
                   (params->num_nodes > 0 && params->num_nodes != pmix->job_size())))) {
        std::fprintf(stderr, "tca: TCA_DEVICE=ucx: node %d of %d asked for, but the ucx device's nodes are the job's "
                     "PMIx ranks, or a run of consecutive ones (this is rank %d of %d)\n", params->node_id,
                     params->num_nodes, pmix->rank(), pmix->job_size());
        return tcaErrorInvalidValue;
    }
    auto dev = std::make_unique<UcxDevice>(std::move(pmix), place, settings);
    if (Result r = dev->start(&why); r != tcaSuccess) {
        std::fprintf(stderr, "tca: TCA_DEVICE=ucx: %s\n", why.empty() ? "start failed" : why.c_str());
        return r;
    }
    *out = std::move(dev);
    return tcaSuccess;
}

}  // namespace

}  // namespace tca

// The plugin's one export (tca_ucx.map): libtca's TCA_DEVICE=ucx calls it.
extern "C" __attribute__((visibility("default"))) tcaResult tca_ucx_make_device(const tcaInitParams *params, tca::Device **out) {
    try {
        std::unique_ptr<tca::Device> dev;
        const tcaResult r = tca::make_ucx_device(params, &dev);
        *out = r == tcaSuccess ? dev.release() : nullptr;
        return r;
    } catch (const std::bad_alloc &) {
        return tcaErrorNoMemory;
    } catch (...) {
        return tcaErrorSystem;
    }
}
