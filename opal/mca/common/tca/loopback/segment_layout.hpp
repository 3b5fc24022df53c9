// segment_layout.hpp - what one node keeps in its POSIX shared-memory segment:
// the liveness lock, event words, registration table, notification counts,
// counters, the bounce area (fallback when single-copy is refused), the table
// of the node's shared-heap arenas and the node's internal memory.  Every
// process of the sub-cluster maps every segment (and, on first use, the
// arenas named in its table).
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "base/event_word.hpp"
#include "tca.h"

namespace tca::loopback {

// 2: padded counters, 3: event words with listener lines, 4: start time,
// 5: notification counts per (source, slot, tag) instead of rings,
// 6: shared-heap arena table, arena fields in registrations,
// 9: one bounce mailbox per source node and the posted mask,
// 10: the mailboxes after the internal memory,
// 11: node 0's copy-path measurement in the header,
// 12: virtual-time stamps (notifications, counters, polled landings)
inline constexpr uint32_t kLayoutVersion = 12;
// The magic carries the layout version: a build reads only headers of its own
// layout, so two builds of one user (two installs, two work trees) never
// judge - and remove - each other's live segments by fields at other offsets.
// (Until version 3 the magic was the same for every layout.)
inline constexpr uint64_t kSegmentMagic =
    0x544341'4c4f'0000ull | kLayoutVersion;  // "TCALO" + version
inline constexpr uint32_t kMaxRegistrations = 4096;
inline constexpr uint32_t kNotifyTags =
    TCA_NOTIFY_TAGS;  // tags with notifications outstanding per (source, slot)
inline constexpr uint64_t kBounceSize = 256 * 1024;
inline constexpr uint32_t kMaxArenas = 64;  // shared-heap files per node (tcaMalloc CPU memory)

enum class SegmentState : uint32_t { Creating = 0, Ready = 1, Finalized = 2 };

// Written only by the owner; peers check key before writing (stale handles).
// One cache line per counter: a broadcast's counters are taken as a run of
// consecutive indices, some added to by the owner (go, done) and some by
// peers (data, credits); sharing lines made every add bounce them all.
// The word holds the counter's holder (the token of tcaCounterAcquire, 0
// if nobody holds it) in its top 16 bits and the count in the low 48: an add
// checks the holder and adds in one atomic step, so a late add for a
// released counter can never land in its next holder's count.
struct alignas(64) PaddedCounter {
    std::atomic<uint64_t> value;
    // TCA_TIMING=virtual: the latest virtual time an add landed (a max; the
    // line is the counter's anyway).
    std::atomic<int64_t> stamp;
};
static_assert(sizeof(PaddedCounter) == 64);
constexpr int kCounterTokenShift = 48;
constexpr uint64_t kCounterValueMask = (uint64_t{1} << kCounterTokenShift) - 1;
constexpr uint64_t counter_count(uint64_t word) noexcept {
    return word & kCounterValueMask;
}
constexpr uint32_t counter_holder(uint64_t word) noexcept {
    return static_cast<uint32_t>(word >> kCounterTokenShift);
}

// Peers read the fields between two loads of key (a seqlock: the owner
// zeroes key before it reuses an entry), so a torn read is never used.
struct RegistrationEntry {
    std::atomic<uint64_t> key{0};  // 0 = free
    uint64_t base = 0;
    uint64_t size = 0;
    uint32_t region = 0;
    // Host memory inside a shared-heap arena: arena slot + 1 (0 = private
    // memory, reached by process_vm_writev), the offset of base in the arena
    // file and the arena's serial (a slot reused by a new file is not it).
    uint32_t arena = 0;
    uint64_t arena_off = 0;
    uint64_t arena_serial = 0;
    uint64_t global = 0;  // the handle's global address (tcaHandleOfAddress rebuilds handles)
};

// One shared-heap arena of the node: a POSIX shm file the owner made
// (named <segment name>-h<16 hex digits>) that peers map once and then write
// with plain stores.  serial 0 = slot empty; the owner writes name and size,
// then the serial (release); a slot that gets a new file gets a new serial.
struct ArenaSlot {
    std::atomic<uint64_t> serial{0};
    uint64_t size = 0;
    char name[176] = {};
};

// One per (source node, slot) in the receiver's segment: per tag with
// notifications outstanding, one word tag << 32 | kClaimed | count.  The
// source adds to its tag's word by CAS with release (claiming a free word by
// CAS for a tag that has none); the receiver keeps its consumed counts
// privately and frees a word by CAS once it has consumed all of it.  Nothing
// the receiver leaves undone can hold the sender up: streams that are never
// waited on (published programs have several) cost one word per tag.
struct alignas(64) NotifyTable {
    static constexpr uint64_t kClaimed = 1ull << 31;
    static constexpr uint64_t kCountMask = kClaimed - 1;  // counts wrap at 2^31 outstanding
    std::atomic<uint64_t> words[kNotifyTags];             // 0 = free
};

// TCA_TIMING=virtual: the virtual arrival of each notification, one set
// per NotifyTable, by the notification's number in its word (the count
// before it mod kStampRing): the sender writes it before the count's
// release, the receiver reads the one it consumes.  More than kStampRing
// outstanding on one tag: a later one's stamp is read.  Only a segment made
// for virtual time has them (SegmentHeader::stamp_offset).
inline constexpr uint32_t kStampRing = 4;
struct NotifyStamps {
    std::atomic<int64_t> at[kNotifyTags][kStampRing];
};

// Mailbox of one source node in the target's segment (one per node, so
// that writers into one target never queue behind each other): a thread of
// the source streams a row through `data` (a ring) and this node's
// DMA-engine thread (or a thread of ours in MPI progress) moves it into its
// own memory behind it, so the two copies overlap; the server serves every
// posted mailbox in turn, a piece of each per pass.  Used only when
// process_vm_writev is refused.  Protocol: see remote_writer.cpp.
struct alignas(64) BounceArea {
    pthread_mutex_t lock;  // robust, process-shared: one writing thread of the source at a time
    std::atomic<uint64_t> request{0};
    std::atomic<uint64_t> done{0};
    std::atomic<int32_t> status{0};
    uint64_t dst_addr = 0;
    uint64_t dst_key = 0;
    uint32_t dst_reg = 0;
    uint64_t len = 0;
    std::atomic<uint64_t> filled{0};     // bytes of the row the writer has put into the ring so far
    std::atomic<uint64_t> drained{0};    // bytes of it the server has copied out
    std::atomic<uint32_t> cancelled{0};  // the writer gave up on a claimed request
    EventWord done_event;
    alignas(64) unsigned char data[kBounceSize];
};

struct alignas(64) SegmentHeader {
    uint64_t magic;
    uint32_t version;
    uint32_t num_nodes;
    uint32_t node_id;
    pid_t pid;
    uid_t uid;
    uint64_t
        start_time;  // the owner's start time (clock ticks after boot): a reused pid is not the owner
    char job_key[64];
    std::atomic<uint32_t> state;
    std::atomic<uint32_t> dead;           // set by whoever first sees the owner died
    std::atomic<uint64_t> attached_mask;  // bit i: node i has mapped this segment
    pthread_mutex_t alive_lock;           // held by the DMA-engine thread while the node lives
    EventWord app_event;                  // notifications, channel completions, counters
    EventWord engine_event;               // work for the DMA engine: chain starts, bounce requests
    // Bit n: node n posted a request in its mailbox (set by the writer after
    // posting, cleared by the server once the mailbox is idle): the server
    // looks only at those, and an idle node's progress reads one word.
    std::atomic<uint64_t> bounce_posted;
    uint64_t internal_size;
    uint64_t reg_offset, notify_offset, counter_offset, bounce_offset, internal_offset, total_size;
    uint64_t arena_offset;  // kMaxArenas ArenaSlots
    uint64_t stamp_offset;  // NotifyStamps per (source, slot); 0: none (not virtual time)
    // TCA_SINGLE_COPY=auto: node 0's measurement of single copy against
    // memcpy (copy_probe.hpp), which every node of the sub-cluster takes.
    // Written before state becomes Ready; copy_probe_done 0: not measured.
    uint32_t copy_probe_done;
    int32_t copy_probe_error;
    uint64_t copy_probe_bytes;
    double copy_probe_single_us, copy_probe_memcpy_us;
    // Per notification slot of this node: its holder's token (tcaSlotAcquire),
    // 0 while nobody holds it.  Senders read it before they write, so a
    // notification naming a held slot without the holder's id is refused.
    alignas(64) std::atomic<uint32_t> slot_holder[TCA_NOTIFY_SLOTS];
    // TCA_TIMING=virtual: data that lands here without a notification (what
    // a program polls for): how many such landings, the latest virtual
    // arrival among them (a max) and the monotonic wall clock at the latest
    // (written before the data: a reader that sees the data sees them).
    alignas(64) std::atomic<uint64_t> polled_count;
    std::atomic<int64_t> polled_stamp;
    std::atomic<int64_t> polled_wall_ns;
};

// Offsets of every part for a given node count and internal-memory size.
struct SegmentLayout {
    uint64_t reg_offset, notify_offset, counter_offset, bounce_offset, internal_offset, total_size;
    uint64_t arena_offset;
    uint64_t stamp_offset;  // 0 without notification stamps
    static SegmentLayout compute(uint32_t num_nodes, uint64_t internal_size,
                                 bool stamps = false) noexcept;
};

// Typed view of a mapped segment.
class SegmentView {
public:
    SegmentView() = default;
    explicit SegmentView(void *base) : base_(static_cast<unsigned char *>(base)) {}

    SegmentHeader *header() const noexcept { return reinterpret_cast<SegmentHeader *>(base_); }
    RegistrationEntry *registrations() const noexcept {
        return reinterpret_cast<RegistrationEntry *>(base_ + header()->reg_offset);
    }
    NotifyTable *notify_table(uint32_t src_node, uint32_t slot) const noexcept {
        auto *tables = reinterpret_cast<NotifyTable *>(base_ + header()->notify_offset);
        return tables + static_cast<size_t>(src_node) * TCA_NOTIFY_SLOTS + slot;
    }
    // The stamps of notify_table(src_node, slot), or nullptr (not virtual time).
    NotifyStamps *notify_stamps(uint32_t src_node, uint32_t slot) const noexcept {
        if (header()->stamp_offset == 0)
            return nullptr;
        auto *stamps = reinterpret_cast<NotifyStamps *>(base_ + header()->stamp_offset);
        return stamps + static_cast<size_t>(src_node) * TCA_NOTIFY_SLOTS + slot;
    }
    std::atomic<uint64_t> &counter(int idx) const noexcept {
        return reinterpret_cast<PaddedCounter *>(base_ + header()->counter_offset)[idx].value;
    }
    std::atomic<int64_t> &counter_stamp(int idx) const noexcept {
        return reinterpret_cast<PaddedCounter *>(base_ + header()->counter_offset)[idx].stamp;
    }
    // The mailbox of source node src (< num_nodes).
    BounceArea *bounce(uint32_t src) const noexcept {
        return reinterpret_cast<BounceArea *>(base_ + header()->bounce_offset) + src;
    }
    ArenaSlot *arenas() const noexcept {
        return reinterpret_cast<ArenaSlot *>(base_ + header()->arena_offset);
    }
    unsigned char *internal() const noexcept { return base_ + header()->internal_offset; }
    unsigned char *base() const noexcept { return base_; }

private:
    unsigned char *base_ = nullptr;
};

}  // namespace tca::loopback
