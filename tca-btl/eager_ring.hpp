// eager_ring.hpp - the eager path of btl tca: one ring per (sender, receiver)
// in the receiver's internal memory, written only by the sender (PIO stores),
// read only by the receiver.  Nothing here reads remote memory: the put-only
// device cannot.
//
// A slot is an 8-byte header word followed by the payload.  The sender stores
// the payload, then the header word with release order, so a receiver that
// sees the expected sequence number in the header sees the whole payload.
// Slots are never cleared: message k carries sequence k+1 (mod 2^32), so the
// previous occupant of a slot (k+1-slots) can never look like the expected one.
// The receiver returns credits (its consumed count) with one store into the
// sender's memory, lazily: every `credit_batch` messages.
//
// Where the device cannot map the peer's area (the ucx device), the sender
// fills a local copy of the slot and writes it with one PIO write
// (remote_area.hpp), and credits are a PIO write too.  There the header word
// ends the slot, right behind the payload: a PIO write's last 8-byte word
// lands after the rest, so one write (over UCX one active message, up to 256
// KiB) publishes a message.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "remote_area.hpp"

namespace tca::btl {

inline constexpr uint32_t kHeaderBytes = 8;
inline constexpr uint32_t kMaxRingPayload = (1u << 24) - 1;  // 24-bit size field

struct RingGeometry {
    uint32_t slots =
        0;  // messages in flight per (sender, receiver): a power of two (indices are masked)
    uint32_t stride = 0;  // bytes per slot: header + payload, cache-line multiple
    // Written by PIO: [payload, padding to 8 bytes, header word] ending at
    // the slot's end, instead of [header word, payload] from its start.
    bool header_last = false;

    static constexpr RingGeometry for_payload(uint32_t slots, uint32_t max_payload,
                                              bool header_last = false) noexcept {
        return {slots, (max_payload + kHeaderBytes + 63u) / 64u * 64u, header_last};
    }
    constexpr uint32_t max_payload() const noexcept { return stride - kHeaderBytes; }
    constexpr size_t bytes() const noexcept { return size_t{slots} * stride; }
    constexpr bool valid() const noexcept { return slots != 0 && (slots & (slots - 1)) == 0; }
    // Where message k goes: a mask, no division on the message path.
    constexpr size_t offset(uint64_t k) const noexcept {
        return static_cast<size_t>(k & (slots - 1)) * stride;
    }
    // In a slot: the header word, and the payload of a message of `size` bytes.
    static constexpr size_t padded(uint32_t size) noexcept {
        return (size_t{size} + 7u) & ~size_t{7};
    }
    constexpr size_t header_at() const noexcept { return header_last ? stride - kHeaderBytes : 0; }
    constexpr size_t payload_at(uint32_t size) const noexcept {
        return header_last ? stride - kHeaderBytes - padded(size) : kHeaderBytes;
    }
};

struct MessageHeader {
    uint32_t seq;
    uint8_t tag;
    uint32_t size;
};

// [63:40] size  [39:32] tag  [31:0] sequence
constexpr uint64_t encode_header(uint32_t seq, uint8_t tag, uint32_t size) noexcept {
    return (uint64_t{size} << 40) | (uint64_t{tag} << 32) | seq;
}
constexpr MessageHeader decode_header(uint64_t w) noexcept {
    return {static_cast<uint32_t>(w), static_cast<uint8_t>(w >> 32),
            static_cast<uint32_t>(w >> 40)};
}

using HeaderWord = std::atomic<uint64_t>;
static_assert(HeaderWord::is_always_lock_free && sizeof(HeaderWord) == kHeaderBytes);

// Sender side.  `ring` is the receiver's ring for this sender (at `ring_off`
// in the receiver's area); `consumed` is the word in the sender's own memory
// where the receiver stores how many messages it has consumed.
class RingWriter {
public:
    RingWriter(const RemoteArea &peer, size_t ring_off, const std::atomic<uint64_t> *consumed,
               RingGeometry g)
        : peer_(peer), ring_(peer.is_mapped() ? peer.at(ring_off) : nullptr), ring_off_(ring_off),
          staging_(peer.is_mapped() ? nullptr : std::make_unique<unsigned char[]>(g.stride)),
          consumed_(consumed), geo_(g) {}
    // A ring mapped at `ring`.
    RingWriter(unsigned char *ring, const std::atomic<uint64_t> *consumed, RingGeometry g)
        : RingWriter(RemoteArea::mapped(ring), 0, consumed, g) {}

    // Payload area of the next slot (or of its local copy), or nullptr while the ring is full.
    unsigned char *reserve() noexcept {
        if (!has_room())
            return nullptr;
        return ring_ != nullptr ? slot(next_) + kHeaderBytes : staging_.get();
    }
    // Publish the reserved slot: the header word goes last.  Fails only
    // where the slot is written by PIO and the device refused (peer gone):
    // the message is then not sent.
    tcaResult commit(uint8_t tag, uint32_t size) noexcept {
        if (ring_ != nullptr) {
            publish(next_++, tag, size);
            return tcaSuccess;
        }
        // [payload, padding, header] from the local copy, ending at the
        // slot's end (geo_.header_last): the write's last word lands last.
        const uint64_t word = encode_header(static_cast<uint32_t>(next_ + 1), tag, size);
        const size_t padded = RingGeometry::padded(size);
        std::memcpy(staging_.get() + padded, &word, sizeof word);
        const size_t at = ring_off_ + geo_.offset(next_) + geo_.stride - padded - kHeaderBytes;
        if (tcaResult r = peer_.write(at, staging_.get(), padded + kHeaderBytes); r != tcaSuccess)
            return r;
        ++next_;
        ++published_;
        return tcaSuccess;
    }

    // Take the next slot for a message that is written into it later and
    // published by publish(*index, ...): a sender packs straight into the
    // peer's ring, with no copy of its own.  Later messages may be committed
    // meanwhile; the receiver reads in order, so it sees them once this one is
    // published: every held slot must be published (an empty message of a
    // tag the receiver skips, where the sender drops it).  Mapped rings only
    // (a PIO write has one local copy of the slot): nullptr there, and while
    // the ring is full.
    unsigned char *hold(uint64_t *index) noexcept {
        if (ring_ == nullptr || !has_room())
            return nullptr;
        *index = next_;
        return slot(next_++) + kHeaderBytes;
    }
    void publish(uint64_t index, uint8_t tag, uint32_t size) noexcept {
        header(index)->store(encode_header(static_cast<uint32_t>(index + 1), tag, size),
                             std::memory_order_release);
        ++published_;
    }

    // Slots can be held: the ring is mapped, not written by PIO.
    bool can_hold() const noexcept { return ring_ != nullptr; }
    // Slots taken (committed or held).
    uint64_t sent() const noexcept { return next_; }
    // Messages published: grows by one with each (the receiver's traffic mark).
    uint64_t published() const noexcept { return published_; }
    const RingGeometry &geometry() const noexcept { return geo_; }

private:
    bool has_room() const noexcept {
        return next_ - consumed_->load(std::memory_order_acquire) < geo_.slots;
    }
    unsigned char *slot(uint64_t k) const noexcept { return ring_ + geo_.offset(k); }
    HeaderWord *header(uint64_t k) const noexcept {
        return reinterpret_cast<HeaderWord *>(slot(k));
    }

    RemoteArea peer_;
    unsigned char *ring_;  // mapped; nullptr: PIO writes
    size_t ring_off_;
    std::unique_ptr<unsigned char[]> staging_;  // the slot's local copy, for PIO writes
    const std::atomic<uint64_t> *consumed_;
    RingGeometry geo_;
    uint64_t next_ = 0;  // the next slot to take
    uint64_t published_ = 0;
};

// Receiver side.  `ring` is local; the sender's `consumed` word is at
// `credit_off` in its area.
class RingReader {
public:
    RingReader(const unsigned char *ring, const RemoteArea &sender, size_t credit_off,
               RingGeometry g, uint32_t credit_batch) noexcept
        : ring_(ring), sender_(sender), credit_off_(credit_off), geo_(g),
          batch_(credit_batch ? credit_batch : 1) {}
    // The sender's word mapped at `credit`.
    RingReader(const unsigned char *ring, std::atomic<uint64_t> *credit, RingGeometry g,
               uint32_t credit_batch) noexcept
        : RingReader(ring, RemoteArea::mapped(reinterpret_cast<unsigned char *>(credit)), 0, g,
                     credit_batch) {}

    // The next message, if it has fully arrived; the payload stays valid until release().
    bool peek(MessageHeader *h, const unsigned char **payload) const noexcept {
        const uint64_t w = header(read_)->load(std::memory_order_acquire);
        if (static_cast<uint32_t>(w) != static_cast<uint32_t>(read_ + 1))
            return false;
        *h = decode_header(w);
        *payload = slot(read_) + geo_.payload_at(h->size);
        return true;
    }
    // Done with the message from peek(); hands back credits every batch.
    void release() noexcept {
        ++read_;
        if (read_ - returned_ >= batch_)
            return_credits();
    }
    // A credit the device refuses (its sender is gone) is lost with the sender.
    void return_credits() noexcept {
        (void) sender_.store<uint64_t>(credit_off_, read_);
        returned_ = read_;
    }
    uint64_t consumed() const noexcept { return read_; }

private:
    const unsigned char *slot(uint64_t k) const noexcept { return ring_ + geo_.offset(k); }
    const HeaderWord *header(uint64_t k) const noexcept {
        return reinterpret_cast<const HeaderWord *>(slot(k) + geo_.header_at());
    }

    const unsigned char *ring_;
    RemoteArea sender_;
    size_t credit_off_;
    RingGeometry geo_;
    uint32_t batch_;
    uint64_t read_ = 0;
    uint64_t returned_ = 0;
};

}  // namespace tca::btl
