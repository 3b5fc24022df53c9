// gpu_buffer.hpp - what coll tca needs to know about a GPU broadcast buffer:
// is it GPU memory, which allocation holds it (CUDA IPC handles name whole
// allocations, so an interior pointer is registered as base + offset), and a
// copy out of it for the thread engine, whose PIO reads with the CPU.
//
// Asks the CUDA driver (libcuda) that the program has already loaded: a GPU
// pointer implies a CUDA context, hence a loaded libcuda, whether the program
// links the CUDA runtime statically or not.  A process without it never pays
// for CUDA, and a build without CUDA has no GPU buffers at all.  (libtca's
// own CUDA helpers are internal to libtca.so, which exports only the tca* C
// API: this is the coll core's small copy of the two calls it needs.)
#pragma once

#include <cstddef>

#include "tca.h"

namespace tca::coll {

struct GpuBuffer;

// Copies n bytes of GPU memory at src (inside g's allocation) to host memory,
// from any thread.
tcaResult gpu_copy_to_host(const GpuBuffer &g, void *dst, const void *src, size_t n);

struct GpuBuffer {
    bool on_gpu = false;
    void *base = nullptr;     // start of the CUDA allocation holding the buffer
    size_t offset = 0;        // of the buffer inside it
    void *context = nullptr;  // the allocation's CUcontext (copies from other threads)
    // How the thread engine reads it: gpu_copy_to_host.  The engine tests
    // put a counting copy here, so a host buffer standing in for GPU memory
    // runs the engine's GPU path and its reads are counted.
    tcaResult (*copy_to_host)(const GpuBuffer &g, void *dst, const void *src,
                              size_t n) = gpu_copy_to_host;
};

// On success *out says where p lives; host memory (or no CUDA in the process):
// on_gpu false.  tcaErrorNotSupported for GPU memory CUDA IPC cannot export.
tcaResult locate_buffer(const void *p, size_t bytes, GpuBuffer *out);

}  // namespace tca::coll
