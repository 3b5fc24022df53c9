// tca_api_dma.cpp - the C API of DMA descriptor chains (tca.h, "DMA
// descriptor chains"): building a chain, handing it to a channel, starting,
// waiting for and aborting it, and the notifications its descriptors raise.
// Argument checks, then one call into the process's Device, as tca_api.cpp.
#include <sys/types.h>

#include "api_guard.hpp"
#include "desc_registry.hpp"
#include "device.hpp"
#include "model/descriptor.hpp"
#include "tca.h"

using tca::descs;

namespace {
using tca::guarded;
using tca::on_device;

// desc (live, locked by the registry) gets d, checked by the device first.
tcaResult add_descriptor(tcaDesc *desc, const tca::Descriptor &d) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (desc->chain.size() >= TCA_MAX_DESCRIPTORS)
            return tcaErrorTooManyDescriptors;
        if (const tcaResult r = dev->validate(d); r != tcaSuccess)
            return r;
        desc->chain.push_back(d);
        return tcaSuccess;
    });
}

// f(Device *, channel index) on the channel dma_channel names, resolved as
// every channel call does (model/owned_id.hpp).
template <class F>
tcaResult on_channel(int dma_channel, F &&f) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        int ch = -1;
        if (const tcaResult r = dev->resources().channels.resolve(dma_channel, &ch);
            r != tcaSuccess)
            return r;
        return f(dev, ch);
    });
}

}  // namespace

extern "C" {

tcaDesc *tcaDescNew(void) {
    return descs().create();
}

tcaResult tcaDescFree(tcaDesc *desc) {
    if (desc == nullptr)
        return tcaErrorInvalidValue;
    return descs().destroy(desc) ? tcaSuccess : tcaErrorInvalidValue;
}

// Zero bytes (width 0 or height 0) is a valid no-op copy, as a 1-D size 0 is:
// published programs build such descriptors for empty halo sides.
tcaResult tcaDescSetMemcpy2D(tcaDesc *desc, tcaHandle *dst, off_t dst_off, size_t dst_pitch,
                             tcaHandle *src, off_t src_off, size_t src_pitch, size_t width,
                             size_t height, int flags, int wait_slot, int wait_tag) {
    if (desc == nullptr)
        return tcaErrorInvalidValue;
    if (dst == nullptr || src == nullptr)
        return tcaErrorInvalidHandle;
    if (dst_off < 0 || src_off < 0)
        return tcaErrorOutOfRange;
    tca::Descriptor d;
    d.dst = *dst;
    d.src = *src;
    d.dst_off = static_cast<uint64_t>(dst_off);
    d.src_off = static_cast<uint64_t>(src_off);
    d.width = width;
    d.height = height;
    d.dst_pitch = dst_pitch;
    d.src_pitch = src_pitch;
    d.flags = flags;
    d.slot = wait_slot;  // an id: checked against the target's holder when the descriptor runs
    d.tag = wait_tag;
    return descs().with(desc, [&](tcaDesc *live) { return add_descriptor(live, d); });
}

// A 1-D copy is the one-row 2-D copy of it.
tcaResult tcaDescSetMemcpy(tcaDesc *desc, tcaHandle *dst, off_t dst_off, tcaHandle *src,
                           off_t src_off, size_t size, int flags, int wait_slot, int wait_tag) {
    return tcaDescSetMemcpy2D(desc, dst, dst_off, size, src, src_off, size, size, 1, flags,
                              wait_slot, wait_tag);
}

tcaResult tcaDescSetTrigger(tcaDesc *desc, int counter, uint64_t value, uint64_t step) {
    return descs().with(desc, [&](tcaDesc *live) {
        if (live->chain.empty())
            return tcaErrorInvalidValue;
        if (counter < -1 || (counter >= 0 && tca::owned_index(counter) >= TCA_NUM_COUNTERS))
            return tcaErrorInvalidCounter;
        tca::Descriptor &d = live->chain.back();
        d.wait_counter = counter;
        d.wait_value = value;
        d.wait_step = step;
        return tcaSuccess;
    });
}

tcaResult tcaDescSetCounterAdd(tcaDesc *desc, int dst_counter, uint64_t add) {
    return descs().with(desc, [&](tcaDesc *live) {
        if (live->chain.empty())
            return tcaErrorInvalidValue;
        if (dst_counter < -1 ||
            (dst_counter >= 0 && tca::owned_index(dst_counter) >= TCA_NUM_COUNTERS))
            return tcaErrorInvalidCounter;
        tca::Descriptor &d = live->chain.back();
        d.add_counter = dst_counter;
        d.add_value = add;
        return tcaSuccess;
    });
}

tcaResult tcaDescGetLength(const tcaDesc *desc, int *count) {
    if (count == nullptr)
        return tcaErrorInvalidValue;
    return descs().with(desc, [&](tcaDesc *live) {
        *count = static_cast<int>(live->chain.size());
        return tcaSuccess;
    });
}

tcaResult tcaDescClear(tcaDesc *desc) {
    return descs().with(desc, [](tcaDesc *live) {
        live->chain.clear();  // keeps the capacity: the next chain of this size allocates nothing
        return tcaSuccess;
    });
}

// Channels are named by id (model/owned_id.hpp): an acquired channel only
// by its holder's id, one nobody holds by its plain number.
tcaResult tcaDescSet(tcaDesc *desc, int dma_channel) {
    return on_channel(dma_channel, [&](tca::Device *dev, int ch) {
        return guarded([&] {
            return descs().with(desc, [&](tcaDesc *live) {
                const tcaResult r = dev->load_chain(ch, live->chain);
                // A numbered channel used without acquiring it (published programs):
                // from now on no tcaChannelAcquire hands it to someone else.
                if (r == tcaSuccess && ch == dma_channel)
                    dev->resources().channels.note_direct_use(ch);
                return r;
            });
        });
    });
}

tcaResult tcaStartDMADesc(int dma_channel) {
    return on_channel(dma_channel, [](tca::Device *dev, int ch) { return dev->start_channel(ch); });
}

tcaResult tcaWaitDMAC(int dma_channel) {
    return on_channel(dma_channel,
                      [](tca::Device *dev, int ch) { return dev->wait_channel(ch, true); });
}

tcaResult tcaAbortDMAC(int dma_channel) {
    return on_channel(dma_channel, [](tca::Device *dev, int ch) { return dev->abort_channel(ch); });
}

tcaResult tcaTestDMAC(int dma_channel, int *done) {
    if (done == nullptr)
        return on_device([](tca::Device *) { return tcaErrorInvalidValue; });
    return on_channel(dma_channel, [&](tca::Device *dev, int ch) {
        return guarded([&] {
            const tcaResult r = dev->wait_channel(ch, false);
            *done = r != tcaErrorNotReady;
            return r == tcaErrorNotReady ? tcaSuccess : r;
        });
    });
}

// Slots are named by id as channels are, also by senders (descriptors, PIO
// writes): a held slot of any node takes notifications only under its
// holder's id, which the holder hands to its senders.
tcaResult tcaWaitDMARecvDesc(tcaHandle *handle, int slot, int tag) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (const tcaResult r = tca::check_handle(handle, dev->topology().num_nodes());
            r != tcaSuccess)
            return r;
        if (const tcaResult r = dev->resources().slots.resolve(slot, &slot); r != tcaSuccess)
            return r;
        return dev->take_notification(*handle, slot, tag, true);
    });
}

tcaResult tcaTestDMARecvDesc(tcaHandle *handle, int slot, int tag, int *flag) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (flag == nullptr)
            return tcaErrorInvalidValue;
        *flag = 0;
        if (const tcaResult r = tca::check_handle(handle, dev->topology().num_nodes());
            r != tcaSuccess)
            return r;
        if (const tcaResult r = dev->resources().slots.resolve(slot, &slot); r != tcaSuccess)
            return r;
        return guarded([&] {
            const tcaResult r = dev->take_notification(*handle, slot, tag, false);
            if (r == tcaErrorNotReady)
                return tcaSuccess;
            *flag = r == tcaSuccess;
            return r;
        });
    });
}

}  // extern "C"
