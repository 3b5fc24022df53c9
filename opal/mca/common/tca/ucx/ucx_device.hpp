// ucx_device.hpp - the PEACH2 model over UCX, for a sub-cluster that spans
// hosts (TCA_DEVICE=ucx): node n is PMIx rank first + n of the job (first is
// 0 unless the caller placed a sub-cluster of consecutive ranks: btl tca's
// btl_tca_subcluster_size), and nodes reach each other through UCX endpoints
// whose worker addresses travel through PMIx (pmix_exchange.hpp).
//
// Split by object, as UCX splits uct's mm transport:
//   wire.hpp                 what nodes send each other
//   local_registrations.*    this node's registrations (mm_md: keys handed out)
//   remote_keys.*            peers' keys cached here, and the revoke protocol's books
//   peers.*                  endpoints and what is known of each peer's life
//   notify_inbox.hpp         notifications that arrived, until taken
//   channel_runs.hpp         a DMA channel's started runs (bookkeeping)
//   ucx_device.cpp           start, stop, memory, registrations (this class's life)
//   ucx_keys.cpp             asking for keys, answering, revoking
//   ucx_writes.cpp           PIO writes, DMA rows, notifications (mm_ep: sends)
//   ucx_channels.cpp         DMA channels: runs issued, triggers, waits
//   ucx_handlers.cpp         active-message handlers (mm_iface: receives)
//   ucx_progress.cpp         progress, the progress thread, waits, counters, events
//
// How a write travels (wire.hpp has the sizes):
//   PIO writes      after a fence (a thread's PIO writes land in order, as
//                   PCIe posted writes do); up to kAmPioMax one eager active
//                   message with the data, the target copying the last
//                   8-byte word after the rest; larger, the body as a DMA
//                   row, then the last word (TCA_UCX_DMA=put: the body by
//                   ucp_put_nbx, a fence, the last word)
//   DMA rows        below kTaggedMin an active message with the data (eager,
//                   or UCX's rendezvous into the registration the target
//                   names after checking it); from kTaggedMin announced by an
//                   active message and sent tagged (DmaTaggedMsg);
//                   TCA_UCX_DMA=put and block-stride rows: ucp_put_nbx
//   notifications   a fence after the data, then an active message that
//                   counts (source, slot, tag) at the target (or inside a
//                   small row's own message); one naming a slot that a user
//                   of the target acquired, with another id, is refused there
//   DMA channels    a started chain's puts and notifications are issued on
//                   the starting thread up to its first trigger whose counter
//                   is short; the rest by whichever thread progresses the
//                   device once it moves (a wait, tcaProgress, the progress
//                   thread); the wait flushes the endpoints written to:
//                   complete means visible at the targets
//   timing model    (TCA_TIMING=1) the modelled time is spent on the issuing
//                   thread before the puts; the transport's cost comes on top
//
// Not modelled, refused by name: GPU memory (Debian's UCX has no CUDA) and
// PIO windows mapped into the address space (tcaPioMap: hosts share no
// memory).  Over software RMA (UCX_TLS=tcp) a put completes only while the
// target progresses: a progress thread per process does, asleep on the
// worker's events, and every blocking call of libtca progresses too.
//
// Locks, in the one order they may nest (a thread holding one takes only
// those after it; the leaves take nothing under them):
//   1. a DMA channel's lock (Channel::lock; one at a time per thread, see ChannelHold)
//   2. RemoteKeys' key lock (shared while a put is issued with a cached key)
//   3. leaves: RemoteKeys' books, LocalRegistrations, Peers, NotifyInbox,
//      alloc_lock_, serve_lock_ (try-locked only)
// Active-message handlers run inside worker progress, which any of the above
// may call: they take leaves only, and never call UCX.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/env_settings.hpp"
#include "base/event_word.hpp"
#include "base/internal_heap.hpp"
#include "device.hpp"
#include "ucx/channel_runs.hpp"
#include "ucx/local_registrations.hpp"
#include "ucx/notify_inbox.hpp"
#include "ucx/peers.hpp"
#include "ucx/pmix_exchange.hpp"
#include "ucx/remote_keys.hpp"
#include "ucx/ucp_transport.hpp"
#include "ucx/wire.hpp"

namespace tca::ucx {

// Which PMIx ranks are our nodes: node n is rank first + n.
struct Placement {
    int node;
    int nodes;
    int first;
};

class UcxDevice final : public Device {
public:
    UcxDevice(std::unique_ptr<PmixExchange> pmix, Placement place, const DeviceSettings &settings);
    ~UcxDevice() override;
    // UCX, the handlers, the internal memory, the published address, the
    // progress thread; *why says what failed.
    Result start(std::string *why);

    // ---- ucx_device.cpp ----
    int node_id() const noexcept override { return self_; }
    const Topology &topology() const noexcept override { return topo_; }
    const TimingModel &timing() const noexcept override { return timing_; }
    DeviceInfo info() const override;
    ResourceTable &resources() noexcept override { return resources_; }
    Result allocate(void **ptr, size_t size, tcaMemoryType type) override;
    Result release(void *ptr, tcaMemoryType type) override;
    Result register_memory(void *addr, size_t size, tcaMemoryType type, tcaHandle *out) override;
    Result deregister(const tcaHandle &h) override;
    Result validate(const Descriptor &d) const override;
    // Only this node's: a peer's table is on its host.
    Result registration_of_key(int node, uint32_t index, uint64_t key,
                               tcaHandle *out) const override;
    Result pio_map(const tcaHandle &, void **addr) override;
    std::string backing_path() const override { return ""; }

    // ---- ucx_writes.cpp ----
    Result pio_write(const tcaHandle &dst, uint64_t off, const void *src, size_t size, int flags,
                     int slot, int tag) override;
    Result pio_write_counter_add(const tcaHandle &dst, uint64_t off, const void *src, size_t size,
                                 int id, uint64_t add) override;

    // ---- ucx_channels.cpp ----
    Result load_chain(int channel, std::span<const Descriptor> chain) override;
    Result start_channel(int channel) override;
    Result wait_channel(int channel, bool block) override;
    Result abort_channel(int channel) override;

    // ---- ucx_progress.cpp ----
    Result take_notification(const tcaHandle &h, int slot, int tag, bool block) override;
    Result counter_read(int id, uint64_t *value) override;
    Result counter_add(int id, uint64_t add) override;
    Result counter_wait(int id, uint64_t value) override;
    Result counter_add_remote(int node, int id, uint64_t add) override;
    void counter_claim(int index, uint32_t holder) override;
    void slot_claim(int index, uint32_t holder) override;
    Result interrupt_raise(int node) override;
    Result node_state(int node, int *state) override;
    bool progress() override;
    Result set_progress_takeover(int64_t ns) override;
    uint32_t interrupt_count() noexcept override;
    Result interrupt_wait(uint32_t seen, int64_t timeout_ns) override;

private:
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
            if (g_.owns_lock())
                ++holding_channel;
        }
        ~ChannelHold() {
            if (g_.owns_lock())
                --holding_channel;
        }
        bool owns() const noexcept { return g_.owns_lock(); }
        ChannelHold(const ChannelHold &) = delete;
        ChannelHold &operator=(const ChannelHold &) = delete;

    private:
        std::unique_lock<std::mutex> g_;
    };
    static inline thread_local int holding_channel = 0;
    using Clock = std::chrono::steady_clock;

    static Result not_here(const char *what);
    Deadline deadline() const {
        return Clock::now() + std::chrono::nanoseconds(policy_.timeout_ns);
    }

    // Repeats `attempt` (progressing in between) until it is not
    // tcaErrorNotReady; once, without blocking, where block is false.  A
    // thread that waits here drives the worker as tcaProgress does: the
    // progress thread naps until TCA_TAKEOVER_US after the last wait (in a
    // ping-pong's gaps a woken progress thread would spin on the worker's
    // lock, held by the waiter, on the same core).
    template <class Attempt>
    Result wait_for(Attempt &&attempt, bool block) {
        progress();
        Result r = attempt();
        if (r != tcaErrorNotReady || !block)
            return r;
        const ScopedCount waiting(waiters_);  // the progress thread stands aside meanwhile
        const auto start = Clock::now();
        const auto end = start + std::chrono::nanoseconds(policy_.timeout_ns);
        for (unsigned spins = 1;; ++spins) {
            progress_worker();
            if ((r = attempt()) != tcaErrorNotReady)
                return r;
            if ((spins & 255) == 0) {
                mark_driven();
                const auto now = Clock::now();
                if (now >= end)
                    return tcaErrorTimeout;
                if (now - start > std::chrono::nanoseconds(policy_.spin_ns))
                    yield_core();
            }
        }
    }
    static void yield_core() noexcept;

    // ---- ucx_progress.cpp ----
    // UCX progress, then the key requests and revokes its handlers queued
    // (served by one caller at a time), then runs waiting for triggers.
    bool progress_worker();
    void progress_thread_body();
    void mark_driven() noexcept;
    // How much longer a client counts as driving the worker (<= 0: not now).
    int64_t driven_for() const noexcept;
    bool driven() const noexcept { return driven_for() > 0; }
    static bool counter_id_valid(int id) noexcept;
    // Without progress: what a trigger compares (an id checked for range).
    Result counter_now(int id, uint64_t *value) const noexcept;
    Result add_local_counter(int id, uint64_t add);
    bool slot_admits(int id) const noexcept;
    // An event of this node (an interrupt raised, a counter added to, a
    // notification counted): the count interrupt_wait watches moves.
    void event() noexcept { events_.notify(); }
    void deliver_local(int slot, int tag);

    // ---- ucx_channels.cpp ----
    bool pump_channels();
    bool pump(Channel &ch, bool starting = false);
    void note_waiting(Channel &ch);
    Result issue(const Descriptor &desc, ChannelRuns::RunState &run, std::vector<int> *written);

    // ---- ucx_keys.cpp ----
    Result fetch_remote_key(const tcaHandle &h);
    void answer_key_request(const KeyRequestMsg &req);
    void forget_key(const KeyRevokeMsg &m);
    Result revoke(uint32_t index, const Registration &reg);
    Result drop_registrations(uint64_t base, uint64_t size, tcaMemoryType type);

    // ---- ucx_writes.cpp ----
    Result write(const tcaHandle &dst, uint64_t off, const unsigned char *src, uint64_t width,
                 uint64_t rows, uint64_t src_pitch, uint64_t dst_pitch, bool last_word, Deadline d,
                 const CountAfter &then = {});
    Result write_remote(Endpoint &ep, const RemoteRegistration &reg, const tcaHandle &dst,
                        uint64_t off, const unsigned char *src, uint64_t width, uint64_t rows,
                        uint64_t src_pitch, uint64_t dst_pitch, bool last_word, Deadline d,
                        const CountAfter &then);
    Result write_row(Endpoint &ep, const tcaHandle &dst, uint64_t off, const unsigned char *src,
                     uint64_t size, Deadline d);
    Result pio_message(Endpoint &ep, const tcaHandle &dst, uint64_t off, const unsigned char *src,
                       uint64_t width, Deadline d, const CountAfter &then = {});
    bool row_carries_notification(uint64_t rows, uint64_t width) const noexcept;
    Result run_descriptor(const Descriptor &desc, Deadline d, std::vector<int> *written);
    static void note_written(int node, std::vector<int> *written);
    Result admit_local(int dst_node, int flags, int slot_id) const noexcept;
    Result notify_all(int dst_node, int flags, int slot_id, int tag, Deadline d);
    Result flush(const std::vector<int> &nodes, Deadline d);

    // ---- ucx_handlers.cpp ----
    Result install_handlers();
    static void on_notify(void *arg, const void *header, size_t length);
    static Result on_write(void *arg, const void *header, size_t length, const void *data,
                           size_t size, void **to);
    static Result on_dma_tagged(void *arg, const void *header, size_t length,
                                Worker::TagReceive *into);
    static void on_interrupt(void *arg, const void *header, size_t length);
    static void on_counter_add(void *arg, const void *header, size_t length);
    static void on_key_request(void *arg, const void *header, size_t length);
    static void on_key_revoke(void *arg, const void *header, size_t length);
    static void on_key_forgotten(void *arg, const void *header, size_t length);
    static void on_key_reply(void *arg, const void *header, size_t length);
    static void on_goodbye(void *arg, const void *header, size_t length);
    void notified_by(int src, int slot_id, int tag);
    void count_from(int src, int id, uint64_t add);

    std::unique_ptr<PmixExchange> pmix_;
    const int self_, n_;
    const int first_rank_;  // PMIx rank of node 0
    Topology topo_;
    const TimingModel timing_;
    WaitPolicy policy_;
    InternalHeap heap_;
    ResourceTable resources_;
    const bool dma_by_am_;  // DMA rows as active messages with data (TCA_UCX_DMA, default am)

    std::unique_ptr<Context> context_;
    std::unique_ptr<Worker> worker_;
    unsigned char *internal_ = nullptr;
    std::unique_ptr<MemoryMap> internal_map_;

    LocalRegistrations regs_;
    RemoteKeys remote_keys_;
    Peers peers_;
    NotifyInbox inbox_;
    std::mutex serve_lock_;  // one progress pass at a time serves the key queues

    std::mutex alloc_lock_;
    std::unordered_map<void *, size_t> host_allocs_;  // tcaMalloc'd host memory and its size

    std::atomic<uint64_t> tagged_rows_{0};  // rows sent tagged: their tags
    Channel channels_[TCA_NUM_DMA_CHANNELS];
    std::atomic<int> waiting_channels_{0};  // channels with runs not yet issued to their end
    std::atomic<uint64_t> counters_[TCA_NUM_COUNTERS];
    std::atomic<uint32_t> slot_holder_[TCA_NOTIFY_SLOTS] = {};  // 0: nobody holds it
    std::atomic<uint32_t> counter_holder_[TCA_NUM_COUNTERS] = {};
    EventWord events_;  // events (event()); every one moves its count (watched from the start)
    std::atomic<bool> stop_{false};
    std::atomic<int> waiters_{0};        // application threads inside wait_for
    std::atomic<int64_t> driven_ns_{0};  // the last tcaProgress or wait in libtca (now_ns)
    // A client that drove the worker this recently (driven_ns_) still drives
    // it: the progress thread naps (TCA_TAKEOVER_US at the start,
    // tcaSetProgressTakeover while the thread runs).
    std::atomic<int64_t> takeover_ns_;
    std::thread progress_thread_;
};

}  // namespace tca::ucx
