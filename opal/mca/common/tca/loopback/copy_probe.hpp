// copy_probe.hpp - which way PIO writes into another process's private memory
// go, measured at start-up: single copy (process_vm_writev) or the bounce path
// (the writer copies into the target's mailbox, the target's engine copies
// out behind it, both at once; DMA runs keep single copy: RemoteWriter).
// Which wins depends on the host, not on the code: on one 2-core VM
// process_vm_writev of 256 KiB took 15 us against 2 us for memcpy, and MPI
// latency through the bounce path was 0.33-0.4x that of single copy from
// 256 KiB up; on hosts where pinning pages is cheap single copy wins (vader
// defaults to it).
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

// Times both copies of `bytes`, interleaved, `repeats` times each.
CopyProbe probe_copies(size_t bytes = 256 * 1024, int repeats = 5);

// Single copy pays while it costs at most kSingleCopyMaxRatio memcpys: the
// bounce path's two copies overlap, and it measured about 1.5 memcpys of
// latency per transfer; single copy leaves the target's core alone, so it
// keeps ties.
constexpr double kSingleCopyMaxRatio = 2.0;
bool single_copy_pays(const CopyProbe &p) noexcept;

// "CMA 15.0 us, memcpy 2.0 us / 256 KiB" (or why process_vm_writev was refused).
std::string describe(const CopyProbe &p);

}  // namespace tca::loopback
