// copy_probe.hpp - which way PIO writes into another process's private
// memory go, measured at start-up: single copy (process_vm_writev) or the
// bounce path (the writer copies into the target's mailbox, the target's
// engine copies out behind it, both at once; DMA runs keep single copy:
// RemoteWriter).  Which wins depends on the host (what pinning a page costs
// there), not on the code: vader defaults to single copy, and where pinning
// is dear two copies win (docs/results.md has both kinds of host).
//
// One node of a sub-cluster measures and every node takes its answer
// (LoopbackDevice::start): ranks that each measured for themselves near the
// rule's limit took different paths in one job, and a job whose ranks
// disagree pays for both (a writer bouncing into a peer that chose single
// copy for its own puts and rendezvous).
#pragma once

#include <cstddef>
#include <string>

namespace tca::loopback {

struct CopyProbe {
    double single_copy_us = 0;  // process_vm_writev into this process, best of the repeats
    double memcpy_us = 0;       // memcpy of the same bytes, best of the repeats
    int error = 0;              // errno of a refused process_vm_writev (then single_copy_us is 0)
    size_t bytes = 0;
};

// Times both copies of `bytes`, interleaved, `repeats` times each; the best
// of each (a preempted repeat only makes a copy look dearer).
CopyProbe probe_copies(size_t bytes = 256 * 1024, int repeats = 15);

// Single copy pays while it costs at most kSingleCopyMaxRatio memcpys.  The
// memcpy timed here runs in one core's cache, but the two copies it stands
// for move every cache line between cores (the writer's into the target's
// memory, the target's out of it), each dearer than this memcpy, and they
// overlap only in part; single copy also leaves the target's core alone.
// The limit sits between the kinds of host measured (docs/results.md), far
// from both, so that a noisy measurement does not flip the answer.
constexpr double kSingleCopyMaxRatio = 3.0;
bool single_copy_pays(const CopyProbe &p) noexcept;

// "CMA <t> us, memcpy <t> us / <size> KiB" (or why process_vm_writev was refused).
std::string describe(const CopyProbe &p);

}  // namespace tca::loopback
