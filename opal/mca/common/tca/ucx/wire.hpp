// wire.hpp - what nodes of the ucx device send each other: the active
// messages' ids and fixed headers (no payload but a write's data), and the
// sizes that decide how a write travels.  Every handler checks a header's
// length against its type before it reads it (read_header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tca.h"

namespace tca::ucx {

enum AmId : unsigned {
    kAmNotify = 11,
    kAmInterrupt,
    kAmCounterAdd,
    kAmKeyRequest,
    kAmKeyReply,
    kAmGoodbye,
    kAmKeyRevoke,     // owner -> a node it gave the key: forget it
    kAmKeyForgotten,  // that node -> owner: forgotten, and its puts with it have landed
    kAmWrite,         // a PIO write or one DMA row: WriteMsg, the data as the message's data
    kAmDmaTagged,     // a large DMA row: DmaTaggedMsg; the data follows as a tagged send
};

// A PIO write of up to kAmPioMax bytes travels as one eager active message
// with its data, which the target copies in, the last 8-byte word after the
// rest (kLastWordAfter; a ring slot of btl tca is one message).  Over
// software RMA (UCX tcp) a put is a message there and an acknowledgement
// back, and a PIO write as two puts (body, last word) cost two of them.
// Larger: the body as a DMA row, then the last word.
constexpr size_t kAmPioMax = 256 * 1024;

// A DMA row travels as an active message with data too: over software RMA a
// put is a message and its acknowledgement, where UCX moves an active
// message's data by its own rendezvous straight into place.
struct WriteMsg {
    tcaHandle dst;  // checked at the target against its registrations
    uint64_t off;
    uint64_t size;
    int32_t src;
    uint32_t flags;        // kLastWordAfter
    int32_t counter = -1;  // >= 0: added to (by `add`) once the data landed (tcaPioWriteCounterAdd)
    uint64_t add = 0;
    int32_t notify_slot =
        -1;  // >= 0: the row's notification (slot id, tag), counted once the data landed
    int32_t notify_tag = 0;
};
// A PIO write: the target copies its last 8-byte word after the rest.
constexpr uint32_t kLastWordAfter = 1;

// From kTaggedMin up a row is announced by an active message and its data
// sent tagged, on a second endpoint to the node that asks for no peer-failure
// reports: UCX then moves it over tcp with its put rendezvous (the receiver
// reads the socket straight into place), where an endpoint with failure
// reports, and any large active message, get fragments the receiver copies
// once more.  The send is synchronous (ends once the receiver has the data),
// so what follows on the first endpoint cannot overtake it; failures are
// still seen on the first endpoint, which the second follows.
struct DmaTaggedMsg {
    WriteMsg row;
    uint64_t tag;  // the sender's node in the top 16 bits, its count of tagged rows below
};
constexpr uint64_t kTaggedMin = 65536;

// A DMA row up to this size that notifies its target carries the
// notification in its own message, sent eager: one message where there were
// two.  Larger rows keep UCX's rendezvous and a notification behind them.
constexpr uint64_t kNotifyInRowMax = 16384;

// What a target counts once a write's one message has landed.
struct CountAfter {
    int counter = -1;  // >= 0: added to by `add` (a PIO write up to kAmPioMax)
    uint64_t add = 0;
    int notify_slot = -1;  // >= 0: a notification (a DMA row up to kNotifyInRowMax)
    int notify_tag = 0;
};

struct NotifyMsg {
    int32_t src, slot, tag;
};
struct NodeMsg {  // interrupt, goodbye
    int32_t src;
};
struct CounterAddMsg {
    int32_t src, id;
    uint64_t add;
};
// A key request carries the asking node's worker address: the owner answers
// on an endpoint made from it, never by a PMIx lookup from its progress
// thread (Open MPI 5's PMIx let such a lookup block for good now and then).
constexpr size_t kMaxWorkerAddress = 1024;
struct KeyRequestMsg {
    int32_t src;
    uint32_t reg_index;
    uint64_t key;
    uint64_t addr, size;      // as the handle says: a handle whose range was altered is refused
    uint32_t address_length;  // bytes of address in use (0: too long, look it up)
    unsigned char address[kMaxWorkerAddress];
};
struct KeyRevokeMsg {  // also the answer, kAmKeyForgotten
    int32_t src;
    uint32_t reg_index;
    uint64_t key;
};
constexpr size_t kMaxPackedKey = 1024;
struct KeyReplyMsg {
    int32_t src;
    uint32_t reg_index;
    uint64_t key;
    uint64_t addr, size;  // the request's, to match it
    int32_t status;       // tcaSuccess, or why there is no key
    uint32_t key_length;  // bytes of packed_key in use
    uint64_t
        va_of_zero;  // the owner's virtual address of handle address 0 (internal memory: its base)
    unsigned char packed_key[kMaxPackedKey];
};

// A handler's fixed header: false (dropped) when the length is not T's.
template <class T>
bool read_header(const void *header, size_t length, T *out) noexcept {
    if (length != sizeof(T))
        return false;
    std::memcpy(out, header, sizeof(T));
    return true;
}

// The PMIx key under which a node publishes its worker address.
constexpr const char *kAddressKey = "tca.ucx.worker";
// Counters hold 48 bits (as the loopback's, whose top bits hold the holder).
constexpr uint64_t kCounterMax = (uint64_t{1} << 48) - 1;

}  // namespace tca::ucx
