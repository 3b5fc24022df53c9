// ucx_writes.cpp - what a node sends (as uct's mm_ep): PIO writes, DMA rows
// and notifications, each after a fence where the model orders it.  How each
// travels, and why: ucx_device.hpp and wire.hpp.
#include <cstring>

#include "ucx/ucx_device.hpp"

namespace tca::ucx {

Result UcxDevice::pio_write(const tcaHandle &dst, uint64_t off, const void *src, size_t size,
                            int flags, int slot, int tag) {
    if (Result r = check_pio_write(dst, n_, off, src, size, flags, kPioFlags, slot);
        r != tcaSuccess)
        return r;
    if (Result r = admit_local(dst.node, flags, slot); r != tcaSuccess)
        return r;
    if (timing_.enabled)
        spin_for_ns(timing_.pio_ns(topo_.hops(self_, dst.node)));  // 0 hops: none
    const Deadline d = deadline();
    if (Result r =
            write(dst, off, static_cast<const unsigned char *>(src), size, 1, 0, size, true, d);
        r != tcaSuccess)
        return r;
    return notify_all(dst.node, flags, slot, tag, d);
}

// One message where the write is one (on_write adds once the data is in): a
// broadcast segment and its count cost one send, not two.
Result UcxDevice::pio_write_counter_add(const tcaHandle &dst, uint64_t off, const void *src,
                                        size_t size, int id, uint64_t add) {
    if (dst.node == self_ || size == 0 || size > kAmPioMax)
        return Device::pio_write_counter_add(dst, off, src, size, id, add);
    if (!counter_id_valid(id))
        return tcaErrorInvalidCounter;
    if (Result r = check_pio_write(dst, n_, off, src, size, 0, kPioFlags, 0); r != tcaSuccess)
        return r;
    if (timing_.enabled)
        spin_for_ns(timing_.pio_ns(topo_.hops(self_, dst.node)));
    return write(dst, off, static_cast<const unsigned char *>(src), size, 1, 0, size, true,
                 deadline(), {.counter = id, .add = add});
}

// rows x width bytes from src (rows src_pitch apart) into dst+off (rows
// dst_pitch apart).  last_word: the PIO store (its last 8 bytes after the rest).
Result UcxDevice::write(const tcaHandle &dst, uint64_t off, const unsigned char *src,
                        uint64_t width, uint64_t rows, uint64_t src_pitch, uint64_t dst_pitch,
                        bool last_word, Deadline d, const CountAfter &then) {
    if (width == 0 || rows == 0)
        return tcaSuccess;
    if (dst.node == self_) {
        unsigned char *base = nullptr;
        if (Result r = regs_.local(dst, &base); r != tcaSuccess)
            return r;
        for (uint64_t i = 0; i < rows; ++i)
            std::memmove(base + off + i * dst_pitch, src + i * src_pitch, width);
        return tcaSuccess;
    }
    if (Result r = fetch_remote_key(dst); r != tcaSuccess)
        return r;
    Endpoint *ep = nullptr;
    if (Result r = peers_.endpoint(dst.node, &ep); r != tcaSuccess)
        return r;
    // A PIO write lands after this thread's earlier ones (tca.h), which may
    // still be in flight on any endpoint (a program's data, then the flag it
    // polls, as two writes).
    if (last_word)
        if (Result r = ep->fence(); r != tcaSuccess)
            return r;
    // Issued with the key held: a revoke waits for it, and its flush covers
    // what was issued.  Not cached (any more): the owner destroyed it since.
    return remote_keys_.with_key(reg_id(dst), [&](const RemoteRegistration &reg) {
        return write_remote(*ep, reg, dst, off, src, width, rows, src_pitch, dst_pitch, last_word,
                            d, then);
    });
}

Result UcxDevice::write_remote(Endpoint &ep, const RemoteRegistration &reg, const tcaHandle &dst,
                               uint64_t off, const unsigned char *src, uint64_t width,
                               uint64_t rows, uint64_t src_pitch, uint64_t dst_pitch,
                               bool last_word, Deadline d, const CountAfter &then) {
    if (last_word && rows == 1 && width <= kAmPioMax)
        return pio_message(ep, dst, off, src, width, d, then);
    if (then.counter >= 0)
        return tcaErrorInvalidValue;  // callers send such writes with their add apart
    if (then.notify_slot >= 0) {
        if (last_word || !row_carries_notification(rows, width))
            return tcaErrorInvalidValue;
        // Behind this thread's earlier writes, as a separate notification is (notify_all).
        if (Result r = ep.fence(); r != tcaSuccess)
            return r;
        WriteMsg m{dst, off, width, self_, 0u};
        m.notify_slot = then.notify_slot;
        m.notify_tag = then.notify_tag;
        return ep.am_send_data(kAmWrite, &m, sizeof m, src, width, d, true);
    }
    if (rows == 1 && dma_by_am_) {
        // A larger PIO write: the body, then its last word as a small PIO
        // write once the body landed (a rendezvous send ends then; an eager
        // one was copied in at the target before the word arrives behind it).
        const bool word_after = last_word && width > 8 && width % 8 == 0;
        const uint64_t body = word_after ? width - 8 : width;
        if (Result r = write_row(ep, dst, off, src, body, d); r != tcaSuccess || !word_after)
            return r;
        if (Result r = ep.fence(); r != tcaSuccess)
            return r;
        return pio_message(ep, dst, off + body, src + body, 8, d);
    }
    const uint64_t remote = reg.va_of_zero + dst.addr + off;
    for (uint64_t i = 0; i < rows; ++i) {
        const Result r =
            last_word && rows == 1 && width >= 8 && width % 8 == 0
                ? ep.put_last_word_after(src, width, remote, *reg.key, d)
                : ep.put(src + i * src_pitch, width, remote + i * dst_pitch, *reg.key, d);
        if (r != tcaSuccess)
            return r;
    }
    return tcaSuccess;
}

// One row by active message, or from kTaggedMin up announced on `ep` and
// sent tagged on the node's bulk endpoint (where it has none: by active
// message too).
Result UcxDevice::write_row(Endpoint &ep, const tcaHandle &dst, uint64_t off,
                            const unsigned char *src, uint64_t size, Deadline d) {
    const WriteMsg row{dst, off, size, self_, 0u};
    Endpoint *bulk = nullptr;
    if (size < kTaggedMin || peers_.bulk_endpoint(dst.node, &bulk) != tcaSuccess)
        return ep.am_send_data(kAmWrite, &row, sizeof row, src, size, d);
    const uint64_t seq =
        tagged_rows_.fetch_add(1, std::memory_order_relaxed) & ((uint64_t{1} << 48) - 1);
    const DmaTaggedMsg m{row, static_cast<uint64_t>(self_) << 48 | seq};
    if (Result r = ep.am_send(kAmDmaTagged, &m, sizeof m, d); r != tcaSuccess)
        return r;
    return bulk->tag_send(src, size, m.tag, d);
}

// A PIO write of up to kAmPioMax bytes: one eager message, the last word
// copied last at the target.
Result UcxDevice::pio_message(Endpoint &ep, const tcaHandle &dst, uint64_t off,
                              const unsigned char *src, uint64_t width, Deadline d,
                              const CountAfter &then) {
    const WriteMsg m{dst, off, width, self_, kLastWordAfter, then.counter, then.add};
    return ep.am_send_data(kAmWrite, &m, sizeof m, src, width, d, true);
}

// A row small enough to take its target's notification in its own (eager)
// message; write() checks its callers by the same rule.
bool UcxDevice::row_carries_notification(uint64_t rows, uint64_t width) const noexcept {
    return rows == 1 && dma_by_am_ && width > 0 && width <= kNotifyInRowMax;
}

Result UcxDevice::run_descriptor(const Descriptor &desc, Deadline d, std::vector<int> *written) {
    if (Result r = admit_local(desc.dst.node, desc.flags, desc.slot); r != tcaSuccess)
        return r;
    unsigned char *src = nullptr;
    if (Result r = regs_.local(desc.src, &src); r != tcaSuccess)
        return r;
    const uint64_t rows = desc.height, src_pitch = rows > 1 ? desc.src_pitch : desc.width;
    const uint64_t dst_pitch = rows > 1 ? desc.dst_pitch : desc.width;
    // A small row to another node takes its target's notification along.
    const bool notify_in_row = (desc.flags & tcaDMANotify) && desc.dst.node != self_ &&
                               row_carries_notification(rows, desc.width);
    CountAfter then;
    if (notify_in_row) {
        then.notify_slot = desc.slot;  // the id: the target checks it
        then.notify_tag = desc.tag;
    }
    if (Result r = write(desc.dst, desc.dst_off, src + desc.src_off, desc.width, rows, src_pitch,
                         dst_pitch, false, d, then);
        r != tcaSuccess)
        return r;
    if (desc.dst.node != self_)
        note_written(desc.dst.node, written);
    return notify_all(desc.dst.node, notify_in_row ? desc.flags & ~tcaDMANotify : desc.flags,
                      desc.slot, desc.tag, d);
}

// A node the channel's next wait flushes.
void UcxDevice::note_written(int node, std::vector<int> *written) {
    if (std::find(written->begin(), written->end(), node) == written->end())
        written->push_back(node);
}

// Our own slots are checked before anything is written (as the loopback
// checks every target's); another node checks the ones it holds when the
// notification arrives (notified_by).
Result UcxDevice::admit_local(int dst_node, int flags, int slot_id) const noexcept {
    const bool ours = (flags & tcaDMANotifySelf) || ((flags & tcaDMANotify) && dst_node == self_);
    return ours && !slot_admits(slot_id) ? tcaErrorNotAcquired : tcaSuccess;
}

// Notifications after the data: to the target behind a fence; to ourselves
// once the target has the data (a flush).
Result UcxDevice::notify_all(int dst_node, int flags, int slot_id, int tag, Deadline d) {
    const int slot = owned_index(slot_id);
    if (flags & tcaDMANotify) {
        if (dst_node == self_) {
            deliver_local(slot, tag);
        } else {
            Endpoint *ep = nullptr;
            if (Result r = peers_.endpoint(dst_node, &ep); r != tcaSuccess)
                return r;
            if (Result r = ep->fence(); r != tcaSuccess)
                return r;
            const NotifyMsg m{self_, slot_id, tag};  // the id: the target checks it
            if (Result r = ep->am_send(kAmNotify, &m, sizeof m, d); r != tcaSuccess)
                return r;
        }
    }
    if (flags & tcaDMANotifySelf) {
        if (dst_node != self_)
            if (Result r = flush({dst_node}, d); r != tcaSuccess)
                return r;
        deliver_local(slot, tag);
    }
    return tcaSuccess;
}

Result UcxDevice::flush(const std::vector<int> &nodes, Deadline d) {
    for (int node : nodes) {
        Endpoint *ep = nullptr;
        if (Result r = peers_.endpoint(node, &ep); r != tcaSuccess)
            return r;
        if (Result r = ep->flush(d); r != tcaSuccess)
            return r;
    }
    return tcaSuccess;
}

}  // namespace tca::ucx
