// ring_format.hpp - the bytes of btl tca's eager rings: their geometry and
// the 8-byte header word that publishes a message.  Two formats share one
// ring size (slots x stride bytes, as the area layout and the modex know it):
//
// * packed (rings the sender maps: the loopback device): messages are records
//   one after the other, [header word, payload, padding to a cache line], so
//   that a stream of small messages writes and reads consecutive lines (the
//   hardware prefetches those; slots one stride apart cost a page each and
//   are not prefetched, which held streams of small messages back).  Whole
//   lines: two messages in one line made the sender write a line the
//   receiver was reading.  The
//   header word holds the record's length; a record that does not fit before
//   the ring's end leaves a pad record there and goes to its start.  The
//   receiver zeroes the first word of every line of a record it consumed
//   before it returns the credits for it, so that a header position holds
//   zero or a new header, never a byte of an earlier lap's payload (which
//   could look like any header); the sender writes nothing but its records
//   (a zero it stored ahead of a header cost the header a line transfer).
// * slots (rings written by PIO: the ucx device, which cannot map a peer's
//   memory): one message per slot of `stride` bytes, [payload, padding,
//   header word] ending at the slot's end, one PIO write per message (its
//   last word lands last).  The header word holds a sequence number: message
//   k carries k+1, so a slot's previous occupant never looks like the next.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tca::btl {

inline constexpr uint32_t kHeaderBytes = 8;
inline constexpr uint32_t kMaxRingPayload = (1u << 24) - 1;  // 24-bit size field
// A packed ring's record that only fills the space up to the ring's end (no
// BTL tag is 0xff: MCA_BTL_TAG_MAX is one past the last).
inline constexpr uint8_t kPadTag = 0xff;
// Packed records start on cache lines.
inline constexpr size_t kRecordAlign = 64;

struct RingGeometry {
    // Messages of the largest size a ring holds at once (a power of two:
    // slot indices are masks); a packed ring holds more of smaller ones.
    uint32_t slots = 0;
    uint32_t stride = 0;  // bytes per slot: header + largest payload, cache-line multiple
    // Written by PIO: slots of [payload, padding, header word] ending at the
    // slot's end; else packed records.
    bool header_last = false;

    static constexpr RingGeometry for_payload(uint32_t slots, uint32_t max_payload,
                                              bool header_last = false) noexcept {
        return {slots, (max_payload + kHeaderBytes + 63u) / 64u * 64u, header_last};
    }
    constexpr uint32_t max_payload() const noexcept { return stride - kHeaderBytes; }
    // A line more than the slots: a packed ring holds `slots` messages of the
    // largest size and the header word behind them.
    constexpr size_t bytes() const noexcept { return size_t{slots} * stride + kRecordAlign; }
    constexpr bool valid() const noexcept { return slots != 0 && (slots & (slots - 1)) == 0; }
    constexpr bool packed() const noexcept { return !header_last; }
    // Slots: where message k goes (a mask, no division on the message path).
    constexpr size_t offset(uint64_t k) const noexcept {
        return static_cast<size_t>(k & (slots - 1)) * stride;
    }
    static constexpr size_t padded(uint32_t size) noexcept {
        return (size_t{size} + 7u) & ~size_t{7};
    }
    // Slots: the header word, and the payload of a message of `size` bytes.
    constexpr size_t header_at() const noexcept { return header_last ? stride - kHeaderBytes : 0; }
    constexpr size_t payload_at(uint32_t size) const noexcept {
        return header_last ? stride - kHeaderBytes - padded(size) : kHeaderBytes;
    }
    // Packed: bytes of a record that can hold `size` bytes of payload.
    static constexpr size_t record_bytes(uint32_t size) noexcept {
        return (kHeaderBytes + size_t{size} + kRecordAlign - 1) & ~(kRecordAlign - 1);
    }
};

struct MessageHeader {
    uint32_t seq;  // slots: the message's number + 1; packed: 0
    uint8_t tag;
    uint32_t size;    // payload bytes
    uint32_t length;  // packed: the record's bytes (header included); slots: 0
};

// Slots:  [63:40] size  [39:32] tag  [31:0] sequence
// Packed: [63:40] size  [39:32] tag  [31:0] record length (never 0: a zero
//         word is "nothing yet")
constexpr uint64_t encode_header(uint32_t low, uint8_t tag, uint32_t size) noexcept {
    return (uint64_t{size} << 40) | (uint64_t{tag} << 32) | low;
}
constexpr MessageHeader decode_slot_header(uint64_t w) noexcept {
    return {static_cast<uint32_t>(w), static_cast<uint8_t>(w >> 32), static_cast<uint32_t>(w >> 40),
            0};
}
constexpr MessageHeader decode_record_header(uint64_t w) noexcept {
    return {0, static_cast<uint8_t>(w >> 32), static_cast<uint32_t>(w >> 40),
            static_cast<uint32_t>(w)};
}

using HeaderWord = std::atomic<uint64_t>;
static_assert(HeaderWord::is_always_lock_free && sizeof(HeaderWord) == kHeaderBytes);

}  // namespace tca::btl
