// descriptor.hpp - one PEACH2 DMA descriptor (contiguous or block-stride), the
// offload extension (trigger on a local counter, add to a remote counter), and
// the checks the hardware model applies before a descriptor is accepted.
#pragma once

#include "plugin_api.hpp"

#include <cstdint>
#include <vector>

#include "model/result.hpp"
#include "tca.h"

namespace tca {

struct Descriptor {
    tcaHandle dst{};
    tcaHandle src{};
    uint64_t dst_off = 0;
    uint64_t src_off = 0;
    uint64_t width = 0;   // bytes per row
    uint64_t height = 1;  // rows; 1 = contiguous
    uint64_t dst_pitch = 0;
    uint64_t src_pitch = 0;
    int flags = 0;
    int slot = 0;
    int tag = 0;
    // offload extension
    int wait_counter = -1;
    uint64_t wait_value = 0;
    uint64_t wait_step = 0;
    int add_counter = -1;
    uint64_t add_value = 0;

    uint64_t bytes() const noexcept { return width * height; }
    bool notifies() const noexcept { return (flags & (tcaDMANotify | tcaDMANotifySelf)) != 0; }
    // A triggered descriptor issues in run `epoch` (starts of its channel
    // since the chain was loaded) once its counter reaches this: thresholds
    // move by `step` every run, so monotonic counters serve every epoch
    // without re-arming (tcaDescSetTrigger).
    uint64_t trigger_threshold(uint64_t epoch) const noexcept {
        return wait_value + epoch * wait_step;
    }
};

// Flags a descriptor accepts (tcaDMAContinue: historical chains mark every
// descriptor but the last with it; a chain's length says the same here).
inline constexpr int kAllDescriptorFlags = tcaDMAUseInternal | tcaDMAUseNotifyInternal |
                                           tcaDMANotify | tcaDMANotifySelf | tcaDMAPipeline |
                                           tcaDMAContinue;

// Structural validity of a handle value (magic, region, node id).
TCA_PLUGIN_API Result check_handle(const tcaHandle *h, int num_nodes) noexcept;

// Does [off, off + span) fit in the registration?  Handles overflow.
bool range_fits(const tcaHandle &h, uint64_t off, uint64_t span) noexcept;

// Bytes touched by a block-stride access: (height-1)*pitch + width.
uint64_t strided_span(uint64_t width, uint64_t height, uint64_t pitch) noexcept;

// A PIO write's arguments, before any memory is touched: the handle, the
// source, flags (within `allowed`), the slot of a notification, the range.
TCA_PLUGIN_API Result check_pio_write(const tcaHandle &dst, int num_nodes, uint64_t off,
                                      const void *src, uint64_t size, int flags, int allowed_flags,
                                      int slot) noexcept;
// Everything the hardware model can decide without touching memory: handles,
// ranges, pitches, flags, slot, the put-only rule (source must be on `local_node`).
TCA_PLUGIN_API Result validate_descriptor(const Descriptor &d, int local_node,
                                          int num_nodes) noexcept;

}  // namespace tca
