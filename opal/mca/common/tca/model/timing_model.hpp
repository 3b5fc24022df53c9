// timing_model.hpp - optional delays that make the loopback behave like PEACH2
// hardware, calibrated against the published figures (compat section 4):
// 782 ns adjacent PIO + 200-300 ns per extra hop, host DMA 3.3 GB/s with 255
// descriptors of 4 KiB and ~3.5 GB/s saturated, GPU-to-GPU DMA the B1
// ping-pong curve (2.0 us at 8 B, ~2.6 GB/s at 512 KiB, ~2.35 GB/s from
// 1 MiB) and the B2 block-stride curve.  Off by default (TCA_TIMING=1).
//
// Deadline based: the device delivers a descriptor's data no earlier than the
// modelled arrival of each part and its notification at the modelled end,
// both measured from the chain's start, whatever the real copy took (a copy
// slower than the model makes it late, never later by the model's time).
//
// TCA_TIMING=virtual: the same figures, in virtual time (virtual_clock.hpp):
// nothing is delayed, every arrival carries the virtual time it lands at and
// each node's clock follows them, so predictions do not depend on the host.
#pragma once

#include "plugin_api.hpp"

#include <cstdint>
#include <span>

namespace tca {

struct Descriptor;

struct TCA_PLUGIN_API TimingModel {
    bool enabled = false;       // the model's figures apply (TCA_TIMING=1 or virtual)
    bool virtual_time = false;  // ... in virtual time, not by delays (TCA_TIMING=virtual)
    // Whether the device delays puts and DMA in real time (TCA_TIMING=1).
    bool paced() const noexcept { return enabled && !virtual_time; }
    // Virtual time: the program's CPU time between device calls, times this
    // (a target CPU twice as fast as this host's: 0.5).
    double cpu_factor = 1.0;
    // Virtual time: what a thread runs after data it polls for landed, up to
    // this much, is the emulation's delivery, not computation (virtual_clock.hpp).
    double poll_reaction_ns = 2000;
    // Virtual time: of the CPU time between two device calls, this much
    // beyond the measured cost of the clock reads is taken as this host's
    // noise, not the program's computation: with more processes than cores
    // in a VM, a few hundred ns to a few us of an interval are preemption,
    // system calls and stolen time (tca_model_bench's B5 at 16 ranks shows
    // it: 2 us makes it exact).  Longer computations lose this much each.
    double cpu_slack_ns = 2000;
    // Virtual time: an MPI library's own cost per message over the device
    // (btl tca's send: the ring slot, the copy in, the header; its receive:
    // the poll, matching in ob1, the copy out), charged as modelled time
    // while the CPU time inside MPI is not (tca_wtime.c holds it).  Measured
    // on the development VM with the model off: 8 B one way 0.25-0.28 us,
    // of which the cache-line transfer about 0.1 (docs/virtual-time.md).
    double mpi_send_ns = 70;
    double mpi_recv_ns = 100;
    // PIO (host memory, posted writes)
    double pio_latency_ns = 782;  // one way to an adjacent node
    double hop_latency_ns = 250;  // each further ring hop (PIO and DMA)
    // DMA, every memory kind
    double chain_start_ns = 300;   // tcaStartDMADesc until the first descriptor issues
    double dma_latency_ns = 1700;  // issue until the first byte landed, notification included
    double desc_gap_ns = 64;       // between two descriptors of a chain; tcaDMAPipeline hides it
    double desc_fetch_ns =
        150;             // per descriptor read from a host table (table mode, no tcaDMAUseInternal)
    double row_ns = 40;  // least time per row of a 2-D descriptor
    // host memory at both ends
    double host_bandwidth_mb_s = 3500;
    // GPU memory at either end (the published curves are GPU to GPU)
    double gpu_bandwidth_mb_s = 2620;
    double gpu_small_bytes = 2048;              // up to this size a 1-D transfer streams at ...
    double gpu_small_bandwidth_mb_s = 12000;    // ... this rate (the flat 2.0-2.2 us part of B1)
    double gpu_large_bytes = 512 * 1024;        // above this size a transfer streams at ...
    double gpu_large_bandwidth_mb_s = 2350;     // ... this rate (B1 from 1 MiB)
    double gpu_2d_bandwidth_mb_s = 2950;        // rows of a 2-D descriptor (B2)
    double gpu_2d_large_bandwidth_mb_s = 2060;  // rows of a 2-D descriptor above gpu_large_bytes
    // The emulation's own cost of a delivery, already inside every modelled
    // delay: the store's or notification's cache-line transfer to the waiting
    // core and the wait's return.  The device delivers this much before the
    // modelled time, so that a program measures the modelled time.  Machine
    // dependent: tca_model_bench prints the emulation's one-way costs with the
    // model off, and the model-on path (deadline spin, queued run) adds its
    // own on top, more for DMA than for PIO (docs/results.md: the machine the
    // defaults below were set on).
    double pio_handoff_ns = 150;
    double dma_handoff_ns = 330;

    // One parameter: its environment variable, unit and meaning (tca_info,
    // README and timing_from_environment all use this table), and
    // the least and most it may be set to.
    struct Parameter {
        const char *variable;
        const char *unit;
        const char *meaning;
        double TimingModel::*field;
        double min, max;
    };
    static std::span<const Parameter> parameters();

    // One PIO write, issue to visible at the destination.
    double pio_ns(int hops) const noexcept;
    // What the device waits before it stores a PIO write: pio_ns less the handoff.
    double pio_delay_ns(int hops) const noexcept;
    // Time the bytes of one descriptor take on the link (no latency).
    double transfer_ns(uint64_t width, uint64_t height, bool gpu) const noexcept;
    // A one-descriptor chain, start to notification: what a published
    // ping-pong measures one way.
    double one_way_dma_ns(uint64_t width, uint64_t height, bool gpu, int hops) const noexcept;
    // A chain of n equal 1-D descriptors, start to the last notification.
    double chain_ns(int n, uint64_t bytes_each, bool gpu, int hops, bool pipeline,
                    bool fetched) const noexcept;
};

// What the model needs to know of one descriptor.
struct TCA_PLUGIN_API DescriptorCost {
    uint64_t width = 0;
    uint64_t height = 1;
    bool gpu = false;  // GPU memory at either end
    int hops = 1;
    bool pipeline = false;  // tcaDMAPipeline: issues without the gap after the previous one
    bool fetched = false;   // read from a host descriptor table

    // A chain's descriptor `d`, `hops` ring hops from its target; table_mode:
    // its chain is read from a host table (longer than the registers hold).
    static DescriptorCost of(const Descriptor &d, int hops, bool table_mode) noexcept;
};

// The modelled clock of one running chain (in steady_clock nanoseconds).
class TCA_PLUGIN_API ChainClock {
public:
    // table_mode: the chain's descriptors are read from a host table.  The
    // clock runs dma_handoff_ns ahead (see TimingModel).
    void start(const TimingModel &m, int64_t now_ns, bool table_mode = false) noexcept;
    bool table_mode() const noexcept { return table_mode_; }
    struct Window {
        int64_t first_byte_ns;  // the descriptor's first byte lands
        int64_t done_ns;        // its last byte landed: notification time
    };
    Window next(const TimingModel &m, const DescriptorCost &d) noexcept;
    // The next descriptor issues no earlier than t (a trigger that fired then).
    void hold_until(int64_t t) noexcept {
        if (issue_ns_ < t)
            issue_ns_ = t;
    }
    int64_t last_done_ns() const noexcept { return last_done_ns_; }

private:
    int64_t issue_ns_ = 0;
    int64_t last_done_ns_ = 0;
    bool first_ = true;
    bool table_mode_ = false;
};

TCA_PLUGIN_API int64_t now_ns() noexcept;  // steady_clock
// Busy-wait (a sleep is far too coarse for 782 ns).
TCA_PLUGIN_API void spin_until_ns(int64_t deadline_ns) noexcept;
TCA_PLUGIN_API void spin_for_ns(double ns) noexcept;

}  // namespace tca
