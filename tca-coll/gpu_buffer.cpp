// gpu_buffer.cpp - see gpu_buffer.hpp.
#include "gpu_buffer.hpp"

#if defined(TCA_HAVE_CUDA)
#include <cuda.h>
#include <dlfcn.h>

#include <mutex>
#endif

namespace tca::coll {

#if defined(TCA_HAVE_CUDA)
namespace {

// The driver entry points, versioned names as cuda.h maps them.
struct Driver {
    CUresult (*pointer_attribute)(void *, CUpointer_attribute, CUdeviceptr) = nullptr;
    CUresult (*push)(CUcontext) = nullptr;
    CUresult (*pop)(CUcontext *) = nullptr;
    CUresult (*copy)(CUdeviceptr, CUdeviceptr, size_t) = nullptr;
    bool ok = false;
};

template <typename F>
bool sym(void *lib, const char *name, F *out) {
    *out = reinterpret_cast<F>(dlsym(lib, name));
    return *out != nullptr;
}

// nullptr while the process has no libcuda: then no pointer is a GPU
// pointer.  Looked up again until it appears (a program may initialise CUDA
// after MPI_Init); never loads it.
const Driver *driver() {
    static std::mutex lock;
    static Driver d;
    std::lock_guard g(lock);
    if (d.ok)
        return &d;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr)
        return nullptr;
    d.ok = sym(lib, "cuPointerGetAttribute", &d.pointer_attribute) &&
           sym(lib, "cuCtxPushCurrent_v2", &d.push) && sym(lib, "cuCtxPopCurrent_v2", &d.pop) &&
           sym(lib, "cuMemcpy", &d.copy);
    dlclose(lib);  // NOLOAD took a reference; the program's own keeps it loaded
    return d.ok ? &d : nullptr;
}

}  // namespace

tcaResult locate_buffer(const void *p, size_t bytes, GpuBuffer *out) {
    *out = GpuBuffer{};
    const Driver *d = driver();
    if (d == nullptr || p == nullptr)
        return tcaSuccess;
    const auto ptr = reinterpret_cast<CUdeviceptr>(p);
    unsigned int type = 0;
    // Host memory (malloc'd: CUDA_ERROR_INVALID_VALUE; cudaHostAlloc'd:
    // CU_MEMORYTYPE_HOST) is read and written by the CPU as before.
    if (d->pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr) != CUDA_SUCCESS ||
        type != CU_MEMORYTYPE_DEVICE)
        return tcaSuccess;
    CUdeviceptr base = 0;
    size_t size = 0;
    CUcontext ctx = nullptr;
    if (d->pointer_attribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr) != CUDA_SUCCESS ||
        d->pointer_attribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr) != CUDA_SUCCESS ||
        d->pointer_attribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, ptr) != CUDA_SUCCESS)
        return tcaErrorNotSupported;
    if (ptr < base || ptr - base > size || bytes > size - (ptr - base))
        return tcaErrorOutOfRange;
    out->on_gpu = true;
    out->base = reinterpret_cast<void *>(base);
    out->offset = static_cast<size_t>(ptr - base);
    out->context = ctx;
    return tcaSuccess;
}

tcaResult gpu_copy_to_host(const GpuBuffer &g, void *dst, const void *src, size_t n) {
    const Driver *d = driver();
    if (d == nullptr || !g.on_gpu)
        return tcaErrorNotSupported;
    // The engine's thread has no current context: borrow the allocation's.
    if (d->push(static_cast<CUcontext>(g.context)) != CUDA_SUCCESS)
        return tcaErrorNotSupported;
    const CUresult r =
        d->copy(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), n);
    CUcontext popped = nullptr;
    (void) d->pop(&popped);
    return r == CUDA_SUCCESS ? tcaSuccess : tcaErrorNotSupported;
}

#else  // no CUDA in this build: no buffer is GPU memory

tcaResult locate_buffer(const void *, size_t, GpuBuffer *out) {
    *out = GpuBuffer{};
    return tcaSuccess;
}
tcaResult gpu_copy_to_host(const GpuBuffer &, void *, const void *, size_t) {
    return tcaErrorNotSupported;
}

#endif

}  // namespace tca::coll
