#include "device_area.hpp"

#include <cstring>
#include <initializer_list>

namespace tca::coll {

tcaResult DeviceArea::allocate(size_t bytes) {
    release();
    for (const tcaMemoryType t : {tcaMemoryInternal, tcaMemoryCPU}) {
        if (tcaMalloc(&ptr_, bytes, t) != tcaSuccess)
            continue;
        type_ = t;
        std::memset(ptr_, 0, bytes);
        const tcaResult r = tcaCreateHandle(&handle_, ptr_, bytes, t);
        if (r != tcaSuccess) {
            release();
            return r;
        }
        registered_ = true;
        return tcaSuccess;
    }
    ptr_ = nullptr;
    return tcaErrorNoMemory;
}

void DeviceArea::release() noexcept {
    if (registered_)
        tcaDestroyHandle(&handle_);
    registered_ = false;
    if (ptr_ != nullptr)
        tcaFree(ptr_, type_);
    ptr_ = nullptr;
}

}  // namespace tca::coll
