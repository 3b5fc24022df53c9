// cuda_runtime.cpp - dlopen'd CUDA runtime.  Compiled against the toolkit's
// headers when TCA_HAVE_CUDA is set (so the signatures are checked), a stub
// that reports tcaErrorNotSupported otherwise.
#include "gpu/cuda_runtime.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstring>
#include <mutex>

#ifdef TCA_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tca::gpu {

CudaRuntime &CudaRuntime::instance() {
    static CudaRuntime rt;
    return rt;
}

#ifdef TCA_HAVE_CUDA

struct CudaRuntime::Api {
    void *lib = nullptr;
    decltype(&cudaGetDeviceCount) getDeviceCount;
    decltype(&cudaMalloc) malloc_;
    decltype(&cudaFree) free_;
    decltype(&cudaIpcGetMemHandle) ipcGet;
    decltype(&cudaIpcOpenMemHandle) ipcOpen;
    decltype(&cudaIpcCloseMemHandle) ipcClose;
    decltype(&cudaMemcpyAsync) memcpy_;
    decltype(&cudaMemcpy2DAsync) memcpy2d;
    decltype(&cudaStreamSynchronize) streamSync;
    decltype(&cudaPointerGetAttributes) attrs;
    decltype(&cudaDeviceGetPCIBusId) busId;
    decltype(&cudaGetErrorString) errstr;
    decltype(&cudaGetLastError) lastError = nullptr;  // optional
};

namespace {
std::mutex load_lock;

template <class F>
bool sym(void *lib, const char *name, F *out) {
    *out = reinterpret_cast<F>(dlsym(lib, name));
    return *out != nullptr;
}
}  // namespace

bool CudaRuntime::compiled_in() const noexcept {
    return true;
}

constexpr const char *kCudartNames[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                        TCA_CUDA_LIBDIR "/libcudart.so"};

bool CudaRuntime::load() {
    std::lock_guard g(load_lock);
    if (tried_)
        return api_ != nullptr;
    tried_ = true;
    void *lib = nullptr;
    for (const char *n : kCudartNames) {
        lib = dlopen(n, RTLD_NOW | RTLD_LOCAL);
        if (lib)
            break;
    }
    if (!lib) {
        reason_ = "the CUDA runtime library (libcudart) could not be loaded";
        return false;
    }
    auto *a = new Api{};
    a->lib = lib;
    const bool ok =
        sym(lib, "cudaGetDeviceCount", &a->getDeviceCount) && sym(lib, "cudaMalloc", &a->malloc_) &&
        sym(lib, "cudaFree", &a->free_) && sym(lib, "cudaIpcGetMemHandle", &a->ipcGet) &&
        sym(lib, "cudaIpcOpenMemHandle", &a->ipcOpen) &&
        sym(lib, "cudaIpcCloseMemHandle", &a->ipcClose) &&
        sym(lib, "cudaMemcpyAsync", &a->memcpy_) && sym(lib, "cudaMemcpy2DAsync", &a->memcpy2d) &&
        sym(lib, "cudaStreamSynchronize", &a->streamSync) &&
        sym(lib, "cudaPointerGetAttributes", &a->attrs) &&
        sym(lib, "cudaDeviceGetPCIBusId", &a->busId) && sym(lib, "cudaGetErrorString", &a->errstr);
    (void) sym(lib, "cudaGetLastError", &a->lastError);
    if (!ok) {
        reason_ = "libcudart lacks a required symbol";
        dlclose(lib);
        delete a;
        return false;
    }
    int n = 0;
    const cudaError_t e = a->getDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        reason_ =
            e != cudaSuccess ? std::string("no CUDA device: ") + a->errstr(e) : "no CUDA device";
        // keep the library loaded: nothing else to do with it
        delete a;
        return false;
    }
    api_ = a;
    return true;
}

bool CudaRuntime::available() {
    return load();
}

int CudaRuntime::device_count() {
    if (!load())
        return 0;
    int n = 0;
    return api_->getDeviceCount(&n) == cudaSuccess ? n : 0;
}

std::string CudaRuntime::unavailable_reason() {
    load();
    return reason_;
}

namespace {
Result check(cudaError_t e, const char *what, decltype(&cudaGetErrorString) errstr) {
    if (e == cudaSuccess)
        return tcaSuccess;
    std::fprintf(stderr, "tca: %s failed: %s\n", what, errstr(e));
    return e == cudaErrorMemoryAllocation ? tcaErrorNoMemory : tcaErrorSystem;
}
}  // namespace

Result CudaRuntime::allocate(void **ptr, size_t size) {
    if (!load())
        return tcaErrorNotSupported;
    return check(api_->malloc_(ptr, size), "cudaMalloc", api_->errstr);
}
Result CudaRuntime::release(void *ptr) {
    if (!load())
        return tcaErrorNotSupported;
    return check(api_->free_(ptr), "cudaFree", api_->errstr);
}
Result CudaRuntime::ipc_handle(void *ptr, unsigned char out[64]) {
    if (!load())
        return tcaErrorNotSupported;
    cudaIpcMemHandle_t h;
    static_assert(sizeof h == 64);
    const Result r = check(api_->ipcGet(&h, ptr), "cudaIpcGetMemHandle", api_->errstr);
    if (r == tcaSuccess)
        __builtin_memcpy(out, &h, 64);
    return r;
}
Result CudaRuntime::ipc_open(const unsigned char handle[64], void **ptr, bool *already_mapped) {
    *already_mapped = false;
    if (!load())
        return tcaErrorNotSupported;
    cudaIpcMemHandle_t h;
    __builtin_memcpy(&h, handle, 64);
    const cudaError_t e = api_->ipcOpen(ptr, h, cudaIpcMemLazyEnablePeerAccess);
    if (e == cudaErrorAlreadyMapped) {
        if (api_->lastError != nullptr)
            (void) api_->lastError();  // not sticky; clear it
        *already_mapped = true;
        return tcaErrorSystem;
    }
    return check(e, "cudaIpcOpenMemHandle", api_->errstr);
}
Result CudaRuntime::ipc_close(void *ptr) {
    if (!load())
        return tcaErrorNotSupported;
    const cudaError_t e = api_->ipcClose(ptr);
    // At exit the CUDA runtime may be torn down before our mappings are
    // (static destructors, atexit order): it has unmapped them itself.
    if (e == cudaErrorCudartUnloading)
        return tcaSuccess;
    return check(e, "cudaIpcCloseMemHandle", api_->errstr);
}
// Copies complete before they return: a put's notification follows its
// data, and the target reads it in another process.  Plain cudaMemcpy does
// not wait for device-to-device copies (none of the host is involved) nor
// for the last leg of a copy from pageable host memory, so each copy is
// queued on the legacy default stream and that stream is waited for.  The
// legacy stream (not a stream of our own) also orders the copy after what
// the application queued there before it called MPI or TCA, e.g. a
// cudaMemcpy into the buffer that itself had not landed yet - as Open MPI's
// own CUDA copies (cuMemcpy) are ordered.
namespace {
const cudaStream_t kLegacyStream = nullptr;
}
Result CudaRuntime::copy(void *dst, const void *src, size_t n) {
    if (!load())
        return tcaErrorNotSupported;
    if (Result r = check(api_->memcpy_(dst, src, n, cudaMemcpyDefault, kLegacyStream),
                         "cudaMemcpyAsync", api_->errstr);
        r != tcaSuccess)
        return r;
    return check(api_->streamSync(kLegacyStream), "cudaStreamSynchronize", api_->errstr);
}
Result CudaRuntime::copy_2d(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h) {
    if (!load())
        return tcaErrorNotSupported;
    if (Result r = check(api_->memcpy2d(dst, dp, src, sp, w, h, cudaMemcpyDefault, kLegacyStream),
                         "cudaMemcpy2DAsync", api_->errstr);
        r != tcaSuccess)
        return r;
    return check(api_->streamSync(kLegacyStream), "cudaStreamSynchronize", api_->errstr);
}
bool CudaRuntime::is_device_pointer(const void *p) {
    if (!load())
        return false;
    cudaPointerAttributes a{};
    if (api_->attrs(&a, p) != cudaSuccess) {
        // Older runtimes fail for plain host memory and leave that error for
        // the program's next cudaGetLastError: take it back.
        if (api_->lastError)
            (void) api_->lastError();
        return false;
    }
    return a.type == cudaMemoryTypeDevice;
}
bool CudaRuntime::is_device_pointer_if_loaded(const void *p) {
    {
        std::lock_guard g(load_lock);
        if (!tried_) {
            // Walk the loaded objects' names (in memory), where
            // dlopen(RTLD_NOLOAD) searches the file system, too dear for
            // btl tca's memory registrations.
            const int in_process = dl_iterate_phdr(
                [](struct dl_phdr_info *info, size_t, void *) -> int {
                    return info->dlpi_name != nullptr &&
                           std::strstr(info->dlpi_name, "libcudart") != nullptr;
                },
                nullptr);
            if (!in_process)
                return false;
        }
    }
    return is_device_pointer(p);
}
// The driver's cuMemGetAddressRange (the runtime API has no equivalent);
// libcuda is loaded already where libcudart runs.
bool CudaRuntime::allocation_base(const void *p, uint64_t *base, uint64_t *size) {
    if (!load())
        return false;
    using range_fn = int (*)(unsigned long long *base, size_t *size, unsigned long long ptr);
    static range_fn range = [] {
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        return lib != nullptr ? reinterpret_cast<range_fn>(dlsym(lib, "cuMemGetAddressRange_v2"))
                              : nullptr;
    }();
    unsigned long long b = 0;
    size_t n = 0;
    if (range == nullptr || range(&b, &n, reinterpret_cast<unsigned long long>(p)) != 0)
        return false;
    *base = b;
    if (size != nullptr)
        *size = n;
    return true;
}
std::string CudaRuntime::pci_bus_id(int device) {
    if (!load())
        return {};
    char buf[32] = {};
    return api_->busId(buf, sizeof buf, device) == cudaSuccess ? std::string(buf) : std::string();
}

#else  // !TCA_HAVE_CUDA

struct CudaRuntime::Api {};
bool CudaRuntime::compiled_in() const noexcept {
    return false;
}
bool CudaRuntime::load() {
    return false;
}
bool CudaRuntime::available() {
    return false;
}
int CudaRuntime::device_count() {
    return 0;
}
std::string CudaRuntime::unavailable_reason() {
    return "built without CUDA (configure --with-cuda)";
}
Result CudaRuntime::allocate(void **, size_t) {
    return tcaErrorNotSupported;
}
Result CudaRuntime::release(void *) {
    return tcaErrorNotSupported;
}
Result CudaRuntime::ipc_handle(void *, unsigned char[64]) {
    return tcaErrorNotSupported;
}
Result CudaRuntime::ipc_open(const unsigned char[64], void **, bool *already_mapped) {
    *already_mapped = false;
    return tcaErrorNotSupported;
}
Result CudaRuntime::ipc_close(void *) {
    return tcaErrorNotSupported;
}
Result CudaRuntime::copy(void *, const void *, size_t) {
    return tcaErrorNotSupported;
}
Result CudaRuntime::copy_2d(void *, size_t, const void *, size_t, size_t, size_t) {
    return tcaErrorNotSupported;
}
bool CudaRuntime::is_device_pointer(const void *) {
    return false;
}
bool CudaRuntime::is_device_pointer_if_loaded(const void *) {
    return false;
}
bool CudaRuntime::allocation_base(const void *, uint64_t *, uint64_t *) {
    return false;
}
std::string CudaRuntime::pci_bus_id(int) {
    return {};
}

#endif

}  // namespace tca::gpu
