// dma_engine.hpp - the emulated PEACH2 DMA controller: 4 channels, each runs
// its started chains in order on one engine thread per process, which naps
// while chains run and sleeps on a futex when there are none (no spinning
// helper threads); application threads that wait lend their cycles, and a
// short untriggered chain started on an idle channel runs on the starting
// thread itself.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "loopback/node_set.hpp"
#include "loopback/notifications.hpp"
#include "loopback/remote_writer.hpp"
#include "loopback/run_queue.hpp"
#include "loopback/virtual_stamps.hpp"
#include "model/descriptor.hpp"
#include "model/timing_model.hpp"
#include "model/topology.hpp"

namespace tca::loopback {

// Resolves a validated local source handle to a pointer (host, internal or GPU).
using SourceResolver =
    std::function<Result(const tcaHandle &, uint64_t off, const unsigned char **, bool *gpu)>;

class DmaEngine {
public:
    // streaming_min: bytes in a run from which its copies stream (0:
    // streaming_threshold(), byte_copy.hpp).
    DmaEngine(NodeSet &nodes, RemoteWriter &writer, NotificationSender &sender,
              const Topology &topo, const TimingModel &timing, VirtualStamps &stamps,
              SourceResolver resolve, uint64_t streaming_min = 0);
    ~DmaEngine();
    DmaEngine(const DmaEngine &) = delete;
    DmaEngine &operator=(const DmaEngine &) = delete;

    // Starts the thread; returns once it holds the node's alive lock.
    Result start_thread();
    void stop_thread();

    // As the hardware's channel: a load replaces the chain that later starts
    // run (runs already started keep theirs); a start on a busy channel
    // queues behind the runs before it.  An empty chain is a run that
    // completes at once.
    Result load(int channel, std::span<const Descriptor> chain);
    Result start(int channel);
    // Until every run started before the call has completed (block = false:
    // tcaErrorNotReady while one has not), at most the policy's timeout
    // (tcaErrorTimeout; the runs go on).  The first error of the runs it
    // waited for that no wait returned before this one began, else
    // tcaSuccess: every concurrent waiter of a failed run sees its error.
    // A blocking wait drives the engine.
    Result wait(int channel, bool block);
    // End the running chain between two descriptors and drop the queued
    // runs; they complete as tcaErrorAborted.
    void abort(int channel);
    // Do pending engine work on the calling thread if the engine is not busy
    // itself (a thread that waits anyway lends its cycles: no wake-up needed).
    // A bounce copy to a peer waits at most until `bound` (default: the
    // policy's timeout), then is left for later.
    bool progress();
    bool progress(const PutBound &bound);
    static constexpr int kAssistBurst = 8;  // descriptors per channel per progress()
    // Chains of at most this many bytes, without triggered descriptors, run
    // on the starting thread when the channel is idle (timing model off):
    // no hand-off to the engine thread on the latency path, while a larger
    // DMA still overlaps with the caller.
    static constexpr uint64_t kInlineMaxBytes = 64 * 1024;

    // Execute one descriptor now, on the calling thread (PIO and tests use it).
    // With the timing model on, data and notification wait for the modelled
    // times of `clock` (the running chain's), or of a chain of their own.
    Result execute(const Descriptor &d, ChainClock *clock, const PutBound &bound,
                   bool streaming = false);
    // How long a start running a short chain inline waits for a peer's engine.
    static constexpr int64_t kInlinePatienceNs = 10'000'000;

private:
    struct Chain {
        std::vector<Descriptor> descs;
        uint64_t last_run =
            0;  // the run (numbered by start) that uses it last: free once it completed
        bool register_mode = true;
        bool run_inline =
            false;  // short and untriggered: may run on the starting thread (timing model on: spinning its modelled time)
        bool streaming =
            false;  // moves at least streaming_min_ bytes: non-temporal copies (byte_copy.hpp)
    };
    struct Run {
        const Chain *chain = nullptr;
        uint64_t epoch =
            0;  // earlier starts since its chain was loaded: triggers move by epoch * step
        size_t first = 0;  // the descriptor it starts at (> 0: its start ran those before inline)
        int64_t vt_start = 0;  // virtual time: the starter's clock at the start
    };
    struct RunError {  // runs first..last (numbered from 1 by start order) ended with `result`
        uint64_t first, last;
        Result result;
    };
    static constexpr size_t kKeptErrors = 64;
    struct Channel {
        std::mutex app_lock;  // serialises load/start/abort from application threads
        // Chains loaded here, kept for reuse: a load refills one whose runs
        // completed (a channel loaded, started and reaped put after put, as
        // btl tca's DMA puts do, allocates nothing once warm).
        std::vector<std::unique_ptr<Chain>> chains;  // under app_lock
        Chain *loaded = nullptr;                     // under app_lock
        uint64_t starts_since_load = 0;              // under app_lock
        RunQueue<Run> queue;  // started runs, front = running (push: app_lock; pop: scan_lock_)
        std::atomic<uint64_t> started{0};  // written under app_lock only
        std::atomic<uint64_t> completed{0};
        std::mutex error_lock;
        std::deque<RunError> errors;  // the latest failed runs, oldest first (under error_lock)
        std::atomic<uint64_t> errors_upto{
            0};  // the last run any recorded error covers: waits past it take no lock
        std::atomic<uint64_t> reported{
            0};           // runs up to this one were waited for by a wait that returned
        size_t next = 0;  // scanner only (scan_lock_)
        bool charged = false;
        ChainClock clock;  // the timing model's clock of the running chain (engine thread only)
        // Virtual time: when the runs completed so far have (a wait moves its
        // node's clock there; the next run starts no earlier).
        std::atomic<int64_t> vt_done{0};
    };

    void run();
    bool chain_running() const noexcept;
    bool step(Channel &ch, const PutBound &bound);
    void finish_run(Channel &ch, Result r);
    void report_failure(Result r, size_t index) const;
    void run_inline(Channel &ch, const Chain &chain, uint64_t epoch);
    // The model's clock of a run taken up now (virtual time: from the start's
    // virtual time, after the channel's previous run).
    void start_clock(ChainClock &c, const Channel &ch, const Chain &chain,
                     int64_t vt_start) const noexcept;
    void record_error(Channel &ch, uint64_t first, uint64_t last, Result r);
    Result run_error(Channel &ch, uint64_t after, uint64_t upto);

    NodeSet &nodes_;
    const uint64_t streaming_min_;
    RemoteWriter &writer_;
    NotificationSender &sender_;
    const Topology &topo_;
    const TimingModel &timing_;
    VirtualStamps &stamps_;
    SourceResolver resolve_;
    std::array<Channel, TCA_NUM_DMA_CHANNELS> channels_;
    std::thread thread_;
    std::mutex
        scan_lock_;  // one scanner at a time: the engine thread or a client thread progressing it
    std::atomic<bool> stop_{false};
    std::atomic<int> interrupt_{0};  // > 0: a stop or an abort wants bounce waits to give up
    std::atomic<uint64_t> client_passes_{
        0};  // progress() calls from clients: the application is waiting
};

}  // namespace tca::loopback
