// descriptor.cpp - descriptor validation: the rules PEACH2 enforces (put only,
// source local) plus the range checks that turn silent corruption into errors.
#include "model/descriptor.hpp"
#include "model/owned_id.hpp"

#include <limits>

#include "model/address_map.hpp"

namespace tca {

Result check_handle(const tcaHandle *h, int num_nodes) noexcept {
    if (h == nullptr || h->magic != TCA_HANDLE_MAGIC)
        return tcaErrorInvalidHandle;
    if (h->region > static_cast<uint8_t>(tcaMemoryInternal))
        return tcaErrorInvalidHandle;
    if (static_cast<int>(h->node) >= num_nodes)
        return tcaErrorInvalidHandle;
    if (h->key == 0)
        return tcaErrorInvalidHandle;  // size 0 is valid (a handle of 0 bytes)
    return tcaSuccess;
}

bool range_fits(const tcaHandle &h, uint64_t off, uint64_t span) noexcept {
    return off <= h.size && span <= h.size - off;
}

uint64_t strided_span(uint64_t width, uint64_t height, uint64_t pitch) noexcept {
    if (height == 0 || width == 0)
        return 0;
    const uint64_t max = std::numeric_limits<uint64_t>::max();
    if (height - 1 != 0 && pitch > (max - width) / (height - 1))
        return max;
    return (height - 1) * pitch + width;
}

Result check_pio_write(const tcaHandle &dst, int num_nodes, uint64_t off, const void *src,
                       uint64_t size, int flags, int allowed_flags, int slot) noexcept {
    if (Result r = check_handle(&dst, num_nodes); r != tcaSuccess)
        return r;
    if (src == nullptr && size != 0)
        return tcaErrorInvalidValue;
    if (flags & ~allowed_flags)
        return tcaErrorInvalidValue;
    if ((flags & (tcaDMANotify | tcaDMANotifySelf)) &&
        (slot < 0 || owned_index(slot) >= TCA_NOTIFY_SLOTS))
        return tcaErrorInvalidSlot;
    return range_fits(dst, off, size) ? tcaSuccess : tcaErrorOutOfRange;
}

Result validate_descriptor(const Descriptor &d, int local_node, int num_nodes) noexcept {
    if (d.flags & ~kAllDescriptorFlags)
        return tcaErrorInvalidValue;
    if (Result r = check_handle(&d.dst, num_nodes); r != tcaSuccess)
        return r;
    if (Result r = check_handle(&d.src, num_nodes); r != tcaSuccess)
        return r;
    if (static_cast<int>(d.src.node) != local_node)
        return tcaErrorRemoteRead;
    if (d.notifies() && (d.slot < 0 || owned_index(d.slot) >= TCA_NOTIFY_SLOTS))
        return tcaErrorInvalidSlot;
    const auto bad_counter = [](int id) {
        return id >= 0 && owned_index(id) >= TCA_NUM_COUNTERS;
    };  // -1: none
    if (bad_counter(d.wait_counter) || bad_counter(d.add_counter))
        return tcaErrorInvalidCounter;
    if (d.height > 1 && (d.dst_pitch < d.width || d.src_pitch < d.width))
        return tcaErrorInvalidValue;
    if (!range_fits(d.dst, d.dst_off, strided_span(d.width, d.height, d.dst_pitch)))
        return tcaErrorOutOfRange;
    if (!range_fits(d.src, d.src_off, strided_span(d.width, d.height, d.src_pitch)))
        return tcaErrorOutOfRange;
    return tcaSuccess;
}

}  // namespace tca
