// dma_engine.hpp - the emulated PEACH2 DMA controller: 4 channels, each runs
// its loaded chain in order on one engine thread per process, which naps
// while chains run and sleeps on a futex when there are none (no spinning
// helper threads); application threads that wait lend their cycles.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "loopback/node_set.hpp"
#include "loopback/notifications.hpp"
#include "loopback/remote_writer.hpp"
#include "model/descriptor.hpp"
#include "model/timing_model.hpp"
#include "model/topology.hpp"

namespace tca::loopback {

// Resolves a validated local source handle to a pointer (host, internal or GPU).
using SourceResolver = std::function<Result(const tcaHandle &, uint64_t off, const unsigned char **, bool *gpu)>;

class DmaEngine {
public:
    DmaEngine(NodeSet &nodes, RemoteWriter &writer, NotificationSender &sender, const Topology &topo,
              const TimingModel &timing, SourceResolver resolve);
    ~DmaEngine();
    DmaEngine(const DmaEngine &) = delete;
    DmaEngine &operator=(const DmaEngine &) = delete;

    // Starts the thread; returns once it holds the node's alive lock.
    Result start_thread();
    void stop_thread();

    Result load(int channel, std::span<const Descriptor> chain);
    Result start(int channel);
    Result wait(int channel, bool block);  // block = false: tcaErrorNotReady while running
    void abort(int channel);               // end the running chain between two descriptors
    // Do pending engine work on the calling thread if the engine is not busy
    // itself (a thread that waits anyway lends its cycles: no wake-up needed).
    bool assist();
    static constexpr int kAssistBurst = 8;  // descriptors per channel per assist()
    bool register_mode(int channel) const { return channels_[static_cast<size_t>(channel)].register_mode; }

    // Execute one descriptor now, on the calling thread (PIO and tests use it).
    // With the timing model on, data and notification wait for the modelled
    // times of `clock` (the running chain's), or of a chain of their own.
    Result execute(const Descriptor &d, ChainClock *clock = nullptr);

private:
    struct Channel {
        std::mutex app_lock;  // serialises load/start/wait from application threads
        std::vector<Descriptor> chain;
        bool register_mode = true;
        std::atomic<uint64_t> started{0};
        std::atomic<uint64_t> completed{0};
        std::atomic<int> error{tcaSuccess};
        size_t next = 0;  // engine thread only
        uint64_t loaded_at = 0;  // runs completed when the chain was loaded: triggers count epochs from there
        bool charged = false;
        ChainClock clock;  // the timing model's clock of the running chain (engine thread only)
    };

    void run();
    bool chain_running() const noexcept;
    bool step(Channel &ch);
    void finish_run(Channel &ch, Result r);

    NodeSet &nodes_;
    RemoteWriter &writer_;
    NotificationSender &sender_;
    const Topology &topo_;
    const TimingModel &timing_;
    SourceResolver resolve_;
    std::array<Channel, TCA_NUM_DMA_CHANNELS> channels_;
    std::thread thread_;
    std::mutex scan_lock_;  // one scanner at a time: the engine thread or an assisting thread
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> assists_{0};  // assist() calls: the application is waiting
};

}  // namespace tca::loopback
