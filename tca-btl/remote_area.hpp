// remote_area.hpp - how this process's stores reach a peer's btl area.  On
// the loopback device the area is mapped (tcaPioMap) and a store is a plain
// store.  The ucx device cannot map it (hosts share no memory): there each
// store is a PIO write through the device, which lands after the calling
// thread's earlier ones (tca.h), so "payload, then header word" keeps its
// meaning.  Nothing here reads the peer's area: the device cannot.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "tca.h"

namespace tca::btl {

class RemoteArea {
public:
    static RemoteArea mapped(unsigned char *base) noexcept { return RemoteArea(base, tcaHandle{}); }
    static RemoteArea by_pio(const tcaHandle &area) noexcept { return RemoteArea(nullptr, area); }

    bool is_mapped() const noexcept { return base_ != nullptr; }
    // Only where is_mapped().
    unsigned char *at(size_t off) const noexcept { return base_ + off; }

    // A word of the area: a release store, or a PIO write of its bytes.
    template <class T>
    tcaResult store(size_t off, T value) const noexcept {
        static_assert(std::atomic<T>::is_always_lock_free && sizeof(std::atomic<T>) == sizeof(T));
        if (is_mapped()) {
            reinterpret_cast<std::atomic<T> *>(base_ + off)
                ->store(value, std::memory_order_release);
            return tcaSuccess;
        }
        return write(off, &value, sizeof value);
    }
    // Bytes, for the PIO side (a copy of the handle: the API takes it non-const).
    tcaResult write(size_t off, const void *src, size_t size) const noexcept {
        tcaHandle h = handle_;
        return tcaPioWrite(&h, static_cast<off_t>(off), src, size, 0, 0, 0);
    }

private:
    RemoteArea(unsigned char *base, const tcaHandle &h) noexcept : base_(base), handle_(h) {}
    unsigned char *base_;
    tcaHandle handle_;
};

}  // namespace tca::btl
