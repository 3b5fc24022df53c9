// ucx_handlers.cpp - what a node does with the active messages it receives
// (as uct's mm_iface): inside worker progress, so no UCX calls and leaf
// locks only; a request that needs a send (a key request, a revoke) is
// queued for a progress pass that may call UCX.  Every handler checks a
// header's length against its type before reading it (read_header).
#include <cstdio>
#include <cstring>

#include "ucx/ucx_device.hpp"

namespace tca::ucx {

namespace {

// A PIO store's copy: its last 8-byte word after the rest, as a
// put_last_word_after (sizes that are not whole words: one copy).
void copy_last_word_after(unsigned char *to, const unsigned char *from, size_t size) {
    if (size >= 8 && size % 8 == 0) {
        std::memcpy(to, from, size - 8);
        std::atomic_thread_fence(std::memory_order_release);
        std::memcpy(to + size - 8, from + size - 8, 8);
    } else {
        std::memcpy(to, from, size);
    }
}

UcxDevice *device(void *arg) {
    return static_cast<UcxDevice *>(arg);
}

}  // namespace

Result UcxDevice::install_handlers() {
    const std::pair<unsigned, Worker::AmHandler> handlers[] = {
        {kAmNotify, on_notify},          {kAmInterrupt, on_interrupt},
        {kAmCounterAdd, on_counter_add}, {kAmKeyRequest, on_key_request},
        {kAmKeyReply, on_key_reply},     {kAmGoodbye, on_goodbye},
        {kAmKeyRevoke, on_key_revoke},   {kAmKeyForgotten, on_key_forgotten}};
    for (const auto &[id, h] : handlers)
        if (Result r = worker_->set_am_handler(id, h, this); r != tcaSuccess)
            return r;
    if (Result r = worker_->set_am_data_handler(kAmWrite, on_write, this); r != tcaSuccess)
        return r;
    return worker_->set_am_tag_handler(kAmDmaTagged, on_dma_tagged, this);
}

void UcxDevice::on_notify(void *arg, const void *header, size_t length) {
    NotifyMsg m;
    if (read_header(header, length, &m))
        device(arg)->notified_by(m.src, m.slot, m.tag);
}

// A notification another node sent (alone or in its row's message).
void UcxDevice::notified_by(int src, int slot_id, int tag) {
    if (src < 0 || src >= n_ || slot_id < 0 || owned_index(slot_id) >= TCA_NOTIFY_SLOTS)
        return;
    if (!slot_admits(slot_id)) {
        std::fprintf(
            stderr,
            "tca: node %d: a notification from node %d to slot %d was refused (the slot is held by "
            "another user here, and the sender did not name it by the holder's id)\n",
            self_, src, owned_index(slot_id));
        return;
    }
    inbox_.add(src, owned_index(slot_id), tag);
    event();
}

// Eager data is copied here under the registration lock (a destroy cannot
// unmap it meanwhile); rendezvous data lands at `to` after the call (the
// registration outlives it: the revoke waits for the sender, whose send ends
// when the data has landed).
Result UcxDevice::on_write(void *arg, const void *header, size_t length, const void *data,
                           size_t size, void **to) {
    UcxDevice *self = device(arg);
    WriteMsg m;
    if (!read_header(header, length, &m) || m.size != size)
        return tcaErrorInvalidValue;
    // Sent eager only (pio_message, a row with its notification): a count follows the copy.
    if ((m.counter >= 0 || m.notify_slot >= 0) && data == nullptr)
        return tcaErrorInvalidValue;
    const Result landed =
        m.dst.node != self->self_
            ? tcaErrorNotRegistered
            : self->regs_.land(m.dst, m.off, m.size, [&](unsigned char *into) {
                  if (data == nullptr)
                      *to = into;  // a rendezvous (never a PIO write: those are sent eager)
                  else if (m.flags & kLastWordAfter)
                      copy_last_word_after(into, static_cast<const unsigned char *>(data), size);
                  else
                      std::memcpy(into, data, size);
              });
    if (landed != tcaSuccess) {
        std::fprintf(
            stderr,
            "tca: node %d: a %s write from node %d was refused (not into a registration of this "
            "node, or past its end)\n",
            self->self_, (m.flags & kLastWordAfter) ? "PIO" : "DMA", m.src);
        return tcaErrorNotRegistered;
    }
    if (m.counter >= 0)
        self->count_from(m.src, m.counter, m.add);
    if (m.notify_slot >= 0)
        self->notified_by(m.src, m.notify_slot, m.notify_tag);
    return tcaSuccess;
}

// The receive of a tagged row: where it lands, checked as on_write.
Result UcxDevice::on_dma_tagged(void *arg, const void *header, size_t length,
                                Worker::TagReceive *into) {
    DmaTaggedMsg m;
    if (!read_header(header, length, &m))
        return tcaErrorInvalidValue;
    into->tag = m.tag;
    void *to = nullptr;
    if (Result r = on_write(arg, &m.row, sizeof m.row, nullptr, m.row.size, &to); r != tcaSuccess)
        return r;
    into->to = to;
    into->size = m.row.size;
    return tcaSuccess;
}

void UcxDevice::on_interrupt(void *arg, const void *, size_t length) {
    if (length == sizeof(NodeMsg))
        device(arg)->event();
}

void UcxDevice::on_counter_add(void *arg, const void *header, size_t length) {
    CounterAddMsg m;
    if (read_header(header, length, &m))
        device(arg)->count_from(m.src, m.id, m.add);
}

// A counter add another node sent (alone or after a write).
void UcxDevice::count_from(int src, int id, uint64_t add) {
    if (counter_id_valid(id) && add_local_counter(id, add) != tcaSuccess)
        std::fprintf(stderr,
                     "tca: node %d: a counter add from node %d to counter %d was refused (not held "
                     "with that "
                     "id, or past 2^48)\n",
                     self_, src, owned_index(id));
}

void UcxDevice::on_key_request(void *arg, const void *header, size_t length) {
    KeyRequestMsg m;
    if (read_header(header, length, &m) && m.src >= 0 && m.src < device(arg)->n_)
        device(arg)->remote_keys_.queue(m);
}

void UcxDevice::on_key_revoke(void *arg, const void *header, size_t length) {
    KeyRevokeMsg m;
    if (read_header(header, length, &m) && m.src >= 0 && m.src < device(arg)->n_)
        device(arg)->remote_keys_.queue(m);
}

void UcxDevice::on_key_forgotten(void *arg, const void *header, size_t length) {
    KeyRevokeMsg m;
    if (read_header(header, length, &m) && m.src >= 0 && m.src < device(arg)->n_)
        device(arg)->remote_keys_.confirmed(m.reg_index, m.key, m.src);
}

void UcxDevice::on_key_reply(void *arg, const void *header, size_t length) {
    if (length != sizeof(KeyReplyMsg))
        return;
    const auto *m = static_cast<const KeyReplyMsg *>(header);
    if (m->key_length > kMaxPackedKey)
        return;
    KeyAnswer a;
    a.status = static_cast<Result>(m->status);
    a.va_of_zero = m->va_of_zero;
    const auto *b = reinterpret_cast<const std::byte *>(m->packed_key);
    a.packed.assign(b, b + m->key_length);
    device(arg)->remote_keys_.answered(
        RegId{static_cast<int>(m->src), m->reg_index, m->key, m->addr, m->size}, std::move(a));
}

void UcxDevice::on_goodbye(void *arg, const void *header, size_t length) {
    NodeMsg m;
    if (read_header(header, length, &m) && m.src >= 0 && m.src < device(arg)->n_)
        device(arg)->peers_.mark_finished(m.src);
}

}  // namespace tca::ucx
