// device_area.hpp - a registered block of memory that other nodes write into:
// the device's internal memory when there is room (PIO target, plain stores
// on loopback), host memory otherwise (slower to write remotely, same
// semantics).  Owns the allocation and the registration.
#pragma once

#include <cstddef>

#include "tca.h"

namespace tca::coll {

class DeviceArea {
public:
    DeviceArea() = default;
    ~DeviceArea() { release(); }
    DeviceArea(const DeviceArea &) = delete;
    DeviceArea &operator=(const DeviceArea &) = delete;

    tcaResult allocate(size_t bytes);
    void release() noexcept;

    unsigned char *data() const noexcept { return static_cast<unsigned char *>(ptr_); }
    const tcaHandle &handle() const noexcept { return handle_; }

private:
    void *ptr_ = nullptr;
    tcaMemoryType type_ = tcaMemoryCPU;
    tcaHandle handle_{};
    bool registered_ = false;
};

}  // namespace tca::coll
