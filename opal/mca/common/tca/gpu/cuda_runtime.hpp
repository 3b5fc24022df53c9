// cuda_runtime.hpp - the few CUDA runtime calls the device needs (allocation,
// IPC handles, copies), loaded with dlopen at first use, so a CUDA build runs
// on machines without a GPU or without the CUDA runtime installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "model/result.hpp"

namespace tca::gpu {

class CudaRuntime {
public:
    static CudaRuntime &instance();

    bool compiled_in() const noexcept;  // built with --with-cuda
    bool available();                   // runtime loaded and >= 1 device
    int device_count();
    std::string unavailable_reason();

    Result allocate(void **ptr, size_t size);
    Result release(void *ptr);
    Result ipc_handle(void *ptr, unsigned char out[64]);
    // Cached by the caller.  *already_mapped: this process has that
    // allocation open already (through another handle of it); nothing opened.
    Result ipc_open(const unsigned char handle[64], void **ptr, bool *already_mapped);
    Result ipc_close(void *ptr);
    // Any direction (unified addressing); done when they return, device-to-
    // device and from pageable host memory included.
    Result copy(void *dst, const void *src, size_t n);
    Result copy_2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width,
                   size_t height);
    bool is_device_pointer(const void *p);
    // is_device_pointer without loading CUDA into a process that has not:
    // false unless a libcudart is already loaded (a GPU pointer implies one).
    bool is_device_pointer_if_loaded(const void *p);
    // The start (and length, if asked) of the CUDA allocation holding device
    // pointer p; also works on a pointer that an IPC open returned.
    bool allocation_base(const void *p, uint64_t *base, uint64_t *size = nullptr);
    std::string pci_bus_id(int device);

private:
    CudaRuntime() = default;
    bool load();
    struct Api;
    Api *api_ = nullptr;
    bool tried_ = false;
    std::string reason_;
};

}  // namespace tca::gpu
