// eager_ring.hpp - the eager path of btl tca: one ring per (sender, receiver)
// in the receiver's internal memory, written only by the sender (PIO stores),
// read only by the receiver.  Nothing here reads remote memory: the put-only
// device cannot.  The bytes of a ring (packed records or slots, and why):
// ring_format.hpp.
//
// The sender stores the payload, then the header word with release order, so
// a receiver that sees a header sees the whole payload.  The receiver returns
// credits (how far it has consumed: bytes of a packed ring, messages of a
// slot ring) with one store into the sender's memory, lazily: every half
// ring.
//
// Where the device cannot map the peer's area (the ucx device), the sender
// fills a local copy of the slot and writes it with one PIO write
// (remote_area.hpp), and credits are a PIO write too.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "remote_area.hpp"
#include "ring_format.hpp"

namespace tca::btl {

// Sender side.  `ring` is the receiver's ring for this sender (at `ring_off`
// in the receiver's area); `consumed` is the word in the sender's own memory
// where the receiver stores how far it has consumed.
class RingWriter {
public:
    RingWriter(const RemoteArea &peer, size_t ring_off, const std::atomic<uint64_t> *consumed,
               RingGeometry g)
        : peer_(peer), ring_(peer.is_mapped() ? peer.at(ring_off) : nullptr), ring_off_(ring_off),
          staging_(peer.is_mapped() ? nullptr : std::make_unique<unsigned char[]>(g.stride)),
          consumed_(consumed), geo_(g), ring_bytes_(g.bytes()),
          dirty_(peer.is_mapped() ? (g.bytes() / kRecordAlign + 63) / 64 : 0, 0) {}
    // A ring mapped at `ring`.
    RingWriter(unsigned char *ring, const std::atomic<uint64_t> *consumed, RingGeometry g)
        : RingWriter(RemoteArea::mapped(ring), 0, consumed, g) {}

    // Payload area for a message of up to `max` bytes (<= the geometry's
    // max_payload), or nullptr while the ring has no room for it.  commit()
    // publishes it; nothing else may take ring space in between.
    unsigned char *reserve(uint32_t max) noexcept {
        if (ring_ == nullptr)
            return slots_have_room() ? staging_.get() : nullptr;
        const size_t at = take(RingGeometry::record_bytes(max));
        if (at == kNoRoom)
            return nullptr;
        reserved_at_ = at;
        reserved_length_ = RingGeometry::record_bytes(max);
        return ring_ + at + kHeaderBytes;
    }
    // Publish the reserved message (size <= the reserved max): the header
    // word goes last.  Fails only where the slot is written by PIO and the
    // device refused (peer gone): the message is then not sent.
    tcaResult commit(uint8_t tag, uint32_t size) noexcept {
        if (ring_ != nullptr) {
            // Give back what the message did not use: nothing was taken behind it.
            const size_t at = reserved_at_, length = RingGeometry::record_bytes(size);
            if (length < reserved_length_) {
                // Its unused lines go back untouched.
                head_ -= reserved_length_ - length;
                next_pos_ = at + length;  // before the ring's end: the reserved record fit
            }
            lay_out(at, length);
            publish_record(at, length, tag, size);
            return tcaSuccess;
        }
        // [payload, padding, header] from the local copy, ending at the
        // slot's end (geo_.header_last): the write's last word lands last.
        const uint64_t word = encode_header(static_cast<uint32_t>(sent_ + 1), tag, size);
        const size_t padded = RingGeometry::padded(size);
        std::memcpy(staging_.get() + padded, &word, sizeof word);
        const size_t at = ring_off_ + geo_.offset(sent_) + geo_.stride - padded - kHeaderBytes;
        if (tcaResult r = peer_.write(at, staging_.get(), padded + kHeaderBytes); r != tcaSuccess)
            return r;
        ++sent_;
        ++published_;
        return tcaSuccess;
    }

    // Take room for a message of up to `max` bytes that is written into it
    // later and published by publish(*index, ...): a sender packs straight
    // into the peer's ring, with no copy of its own.  Later messages may be
    // committed meanwhile; the receiver reads in order, so it sees them once
    // this one is published: every held record must be published (an empty
    // message of a tag the receiver skips, where the sender drops it).
    // Mapped rings only (a PIO write has one local copy of the slot):
    // nullptr there, and while the ring has no room.
    unsigned char *hold(uint32_t max, uint64_t *index) noexcept {
        if (ring_ == nullptr)
            return nullptr;
        const size_t length = RingGeometry::record_bytes(max);
        const size_t at = take(length);
        if (at == kNoRoom)
            return nullptr;
        lay_out(at, length);
        *index = static_cast<uint64_t>(at) << 32 | length;
        return ring_ + at + kHeaderBytes;
    }
    void publish(uint64_t index, uint8_t tag, uint32_t size) noexcept {
        publish_record(static_cast<size_t>(index >> 32), static_cast<uint32_t>(index), tag, size);
    }

    // Records can be held: the ring is mapped, not written by PIO.
    bool can_hold() const noexcept { return ring_ != nullptr; }
    // Messages taken (committed or held).
    uint64_t sent() const noexcept { return sent_; }
    // Messages published: grows by one with each (the receiver's traffic mark).
    uint64_t published() const noexcept { return published_; }
    const RingGeometry &geometry() const noexcept { return geo_; }

private:
    static constexpr size_t kNoRoom = ~size_t{0};
    static constexpr size_t kEarlyWrap = 64 * 1024;

    bool slots_have_room() const noexcept {
        return sent_ - consumed_->load(std::memory_order_acquire) < geo_.slots;
    }
    // Room for `bytes` more and the header word behind them: consumed by
    // the receiver, who zeroed the header words it consumed before it said so.
    bool packed_has_room(size_t bytes) const noexcept {
        return head_ + bytes + kHeaderBytes - consumed_->load(std::memory_order_acquire) <=
               ring_bytes_;
    }
    HeaderWord *header(size_t at) const noexcept {
        return reinterpret_cast<HeaderWord *>(ring_ + at);
    }

    // Which lines' first words may hold bytes of an old payload.  The word at
    // a header position must be zero until its record is published; the
    // receiver zeroes every header it consumed, and an untouched line is zero,
    // but the first word of a line inside a longer record is payload, and a
    // later lap may put a header there: the sender zeroes it then, before the
    // record in front of it is published.  Only then: a zero stored ahead of
    // every header made it wait for one more line (the next one) to come over
    // from the receiver, on the latency path of every message, and a receiver
    // that zeroed every line it read slowed mid-size streams.
    bool dirty(size_t at) const noexcept {
        const size_t line = at / kRecordAlign;
        return (dirty_[line / 64] >> (line % 64)) & 1u;
    }
    void set_dirty(size_t at, bool value) noexcept {
        const size_t line = at / kRecordAlign;
        const uint64_t bit = uint64_t{1} << (line % 64);
        dirty_[line / 64] = value ? dirty_[line / 64] | bit : dirty_[line / 64] & ~bit;
    }
    // The record [at, at + length) is written: its header line is clean once
    // consumed, its other lines hold payload; the header word behind it is
    // made zero now (before the record is published) if it may not be.
    void lay_out(size_t at, size_t length) noexcept {
        set_dirty(at, false);
        mark_dirty(at / kRecordAlign + 1, (at + length) / kRecordAlign);
        make_clean(at + length == ring_bytes_ ? 0 : at + length);
    }
    // Lines [first, end) dirty, a word of the bitmap at a time (a 32 KiB
    // record has 512 lines: one at a time, its bits were a visible part of
    // the message's cost).
    void mark_dirty(size_t first, size_t end) noexcept {
        while (first < end) {
            const size_t word = first / 64, bit = first % 64;
            const size_t n = end - first < 64 - bit ? end - first : 64 - bit;
            const uint64_t mask = (n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1)) << bit;
            dirty_[word] |= mask;
            first += n;
        }
    }
    void make_clean(size_t at) noexcept {
        if (!dirty(at))
            return;
        header(at)->store(0, std::memory_order_relaxed);
        set_dirty(at, false);
    }

    // Where a record of `length` bytes goes (kNoRoom: not now).  A record
    // that does not fit before the ring's end leaves a pad record there
    // (published at once) and goes to the start.  So does one that finds the
    // ring empty past kEarlyWrap: light traffic (a ping-pong) keeps to the
    // ring's first lines, which stay in both cores' caches (a ping-pong
    // through all 2 MiB of a ring moves lines that have left them).
    size_t take(size_t length) noexcept {
        const bool wrap =
            next_pos_ + length > ring_bytes_ ||
            (next_pos_ >= kEarlyWrap && head_ == consumed_->load(std::memory_order_acquire));
        if (wrap) {
            // The pad goes out on its own: waiting for room for both, a
            // sender could wait for credits that a receiver that consumed
            // everything had no cause to return (it returns every half ring;
            // a record of the largest size always fits in the other half).
            const size_t pad = ring_bytes_ - next_pos_;
            if (!packed_has_room(pad))
                return kNoRoom;
            set_dirty(next_pos_, false);  // a header (its other lines are left as they are)
            make_clean(0);
            header(next_pos_)->store(encode_header(static_cast<uint32_t>(pad), kPadTag, 0),
                                     std::memory_order_release);
            head_ += pad;
            next_pos_ = 0;
        }
        if (!packed_has_room(length))
            return kNoRoom;
        const size_t at = next_pos_;
        next_pos_ = at + length == ring_bytes_ ? 0 : at + length;
        head_ += length;
        ++sent_;
        return at;
    }
    void publish_record(size_t at, size_t length, uint8_t tag, uint32_t size) noexcept {
        header(at)->store(encode_header(static_cast<uint32_t>(length), tag, size),
                          std::memory_order_release);
        ++published_;
    }

    RemoteArea peer_;
    unsigned char *ring_;  // mapped (packed records); nullptr: PIO writes (slots)
    size_t ring_off_;
    std::unique_ptr<unsigned char[]> staging_;  // the slot's local copy, for PIO writes
    const std::atomic<uint64_t> *consumed_;
    RingGeometry geo_;
    size_t ring_bytes_;
    uint64_t sent_ = 0;  // messages taken (slots: the next slot to take)
    uint64_t published_ = 0;
    uint64_t head_ = 0;       // packed: bytes taken, pads included (credits count the same)
    size_t next_pos_ = 0;     // packed: where the next record goes (head_ mod ring_bytes_)
    size_t reserved_at_ = 0;  // packed: the record of reserve(), for commit()
    size_t reserved_length_ = 0;
    std::vector<uint64_t> dirty_;  // packed: a bit per line (see dirty())
};

// Receiver side.  `ring` is local (a packed ring's receiver writes it too:
// the first word of each line it consumed); the sender's `consumed` word is
// at `credit_off` in its area.
class RingReader {
public:
    RingReader(unsigned char *ring, const RemoteArea &sender, size_t credit_off,
               RingGeometry g) noexcept
        : ring_(ring), sender_(sender), credit_off_(credit_off), geo_(g), ring_bytes_(g.bytes()),
          batch_(credit_batch(g)) {}
    // The sender's word mapped at `credit`.
    RingReader(unsigned char *ring, std::atomic<uint64_t> *credit, RingGeometry g) noexcept
        : RingReader(ring, RemoteArea::mapped(reinterpret_cast<unsigned char *>(credit)), 0, g) {}

    // The next message, if it has fully arrived; the payload stays valid until release().
    bool peek(MessageHeader *h, const unsigned char **payload) noexcept {
        if (!geo_.packed()) {
            const uint64_t w =
                header(geo_.offset(read_) + geo_.header_at())->load(std::memory_order_acquire);
            if (static_cast<uint32_t>(w) != static_cast<uint32_t>(read_ + 1))
                return false;
            *h = decode_slot_header(w);
            *payload = ring_ + geo_.offset(read_) + geo_.payload_at(h->size);
            return true;
        }
        for (;;) {
            const uint64_t w = header(pos_)->load(std::memory_order_acquire);
            if (w == 0) {
                if (zeroed_ != read_)  // idle: zero some consumed headers
                    zero_headers(kIdleZeroHeaders);
                return false;
            }
            *h = decode_record_header(w);
            if (h->tag != kPadTag) {
                *payload = ring_ + pos_ + kHeaderBytes;
                return true;
            }
            advance(h->length);  // a pad: the rest of the ring, on at its start
        }
    }
    // Done with the message from peek() (h: what peek gave); hands back
    // credits every half ring.
    void release(const MessageHeader &h) noexcept { advance(geo_.packed() ? h.length : 1); }
    // A credit the device refuses (its sender is gone) is lost with the sender.
    void return_credits() noexcept {
        if (geo_.packed())
            zero_headers(~uint32_t{0});
        (void) sender_.store<uint64_t>(credit_off_, read_);
        returned_ = read_;
        since_returned_ = 0;
    }
    // How far we consumed: bytes of a packed ring, messages of a slot ring.
    uint64_t consumed() const noexcept { return read_; }

    // Half a ring: the sender keeps the other half while credits travel.
    static uint64_t credit_batch(const RingGeometry &g) noexcept {
        if (g.packed())
            return g.bytes() / 2;
        return g.slots > 1 ? g.slots / 2 : 1;
    }

private:
    HeaderWord *header(size_t at) const noexcept {
        return reinterpret_cast<HeaderWord *>(ring_ + at);
    }
    void advance(uint64_t by) noexcept {
        read_ += by;
        if (geo_.packed()) {
            pos_ += static_cast<size_t>(by);
            if (pos_ == ring_bytes_)
                pos_ = 0;
            // Also every few messages: a sender that learns soon that all was
            // consumed starts the ring again (take's early wrap).
            if (++since_returned_ >= kCreditMessages || read_ - returned_ >= batch_)
                return_credits();
            return;
        }
        if (read_ - returned_ >= batch_)
            return_credits();
    }

    // Packed: a consumed record's header word goes back to zero (the ring's
    // own memory: the receiver may write it), so that a later record whose
    // header lands there is seen only once published (the sender zeroes the
    // positions it cannot vouch for: RingWriter::dirty); done before the
    // credits that hand the record back (their store releases these).  Not at
    // once: a store into a line just read waits for the sender's copy to be
    // invalidated, and the reply the application sends next would wait
    // behind it (stores leave in order): in idle polls, and all that is left
    // before credits go back.  The headers still hold their records' lengths.
    void zero_headers(uint32_t most) noexcept {
        for (; zeroed_ < read_ && most > 0; --most) {
            HeaderWord *h = header(zero_pos_);
            const uint32_t length = decode_record_header(h->load(std::memory_order_relaxed)).length;
            h->store(0, std::memory_order_relaxed);
            zeroed_ += length;
            zero_pos_ += length;
            if (zero_pos_ == ring_bytes_)
                zero_pos_ = 0;
        }
    }
    static constexpr uint32_t kIdleZeroHeaders = 16;  // per idle poll
    static constexpr uint32_t kCreditMessages = 32;

    unsigned char *ring_;
    RemoteArea sender_;
    size_t credit_off_;
    RingGeometry geo_;
    size_t ring_bytes_;
    uint64_t batch_;
    uint64_t read_ = 0;  // packed: bytes consumed, pads included; slots: messages
    uint64_t returned_ = 0;
    size_t pos_ = 0;               // packed: where the next record's header is
    uint64_t zeroed_ = 0;          // packed: consumed lines up to here have their first word zeroed
    size_t zero_pos_ = 0;          // ... which is here in the ring
    uint32_t since_returned_ = 0;  // packed: messages consumed since credits last went back
};

}  // namespace tca::btl
