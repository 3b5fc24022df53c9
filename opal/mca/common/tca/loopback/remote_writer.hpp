// remote_writer.hpp - moves bytes from local memory into a destination handle
// of any node, choosing the mechanism: plain stores into internal memory
// (every segment is mapped) and into tcaMalloc'd host memory (the owner's
// shared-heap arena, mapped on first use), single copy into other host memory
// of another process (cma_copy.hpp), the bounce mailbox where the kernel
// refuses that or it was measured dear (bounce_mailbox.hpp), and CUDA copies
// for GPU memory (kept here: no GPU was at hand to test a move).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "base/env_settings.hpp"
#include "loopback/bounce_mailbox.hpp"
#include "loopback/cma_copy.hpp"
#include "loopback/copy_probe.hpp"
#include "loopback/node_set.hpp"
#include "loopback/peer_arenas.hpp"
#include "loopback/row_copy.hpp"
#include "tca.h"

namespace tca::loopback {

class RemoteWriter {
public:
    RemoteWriter(NodeSet &nodes, CopyPath path);
    ~RemoteWriter();

    // Is the handle's registration still alive on its owner?
    Result check_registration(const tcaHandle &h) const noexcept;
    // Copy; returns once the data is visible at the destination.  On the
    // bounce path it waits for the target's engine at most as long as
    // `bound` allows (tcaErrorTimeout then; the bytes may be partly there).
    Result write(const tcaHandle &dst, const RowCopy &c, const PutBound &bound);
    // Target side of the bounce path: copy what the writers streamed so far
    // out of every posted mailbox into our memory (each in turn: no writer
    // waits behind another's whole row).
    bool service_bounce() { return bounce_.service(); }
    // A peer's request waits in one of our mailboxes (two loads: for hot paths).
    bool bounce_pending() const noexcept { return bounce_.pending(); }

    // TCA_SINGLE_COPY=auto: the paths wait for a measurement (single copy
    // until then), which one node makes for the whole sub-cluster so that
    // every node puts the same way (LoopbackDevice::start); settle() takes it.
    bool wants_measurement() const noexcept { return measure_; }
    void settle(const CopyProbe &p, int measured_by);

    bool single_copy() const noexcept { return !cma_.refused(); }
    // TCA_SINGLE_COPY=auto found single copy dear (or refused): PIO writes bounce.
    bool measured_dear() const noexcept { return measured_dear_; }
    // The paths and, where they were measured at start-up, why (it must
    // fit tcaBackendAttr::put_mechanism with the shared heap's words).
    std::string mechanism() const {
        const char *path = !single_copy() ? "bounce through the target's engine thread"
                           : pio_bounces_
                               ? "PIO writes bounced by the target, DMA by process_vm_writev"
                               : "process_vm_writev (single copy)";
        return path + chosen_because_;
    }
    // Other nodes' arenas mapped so far: puts into them were plain stores.
    uint64_t arenas_mapped() const noexcept { return arenas_.mapped(); }

private:
    struct Registration {  // a consistent copy of the owner's entry
        uint32_t arena;
        uint64_t arena_off, arena_serial;
    };
    Result read_registration(const tcaHandle &h, Registration *out) const noexcept;
    Result write_local(unsigned char *dst_base, const RowCopy &c);
    Result write_gpu(const tcaHandle &dst, const RowCopy &c);

    NodeSet &nodes_;
    PeerArenas arenas_;
    CmaCopy cma_;
    BounceMailbox bounce_;
    std::string chosen_because_;  // TCA_SINGLE_COPY=auto: " (measured: ...)"
    bool pio_bounces_ = false;    // TCA_SINGLE_COPY=auto found single copy dear: PIO writes bounce
    bool measured_dear_ = false;  // ... or the kernel refused it
    bool measure_;                // TCA_SINGLE_COPY=auto and not settled yet
    // One open CUDA IPC mapping of a peer's allocation.  Closed when the last
    // holder lets go: the cache, or a copy still running into it after the
    // mapping was evicted.
    struct IpcMapping {
        std::string handle;   // the handle it was opened with
        void *ptr = nullptr;  // the allocation's start, mapped here
        uint64_t size = 0;    // the allocation's length
        IpcMapping() = default;
        IpcMapping(const IpcMapping &) = delete;
        IpcMapping &operator=(const IpcMapping &) = delete;
        ~IpcMapping();
    };
    using MappingKey = std::pair<int, uint64_t>;  // (node, allocation start in that node)
    // The mapping of dst's allocation, opened if needed; needed_end: bytes
    // from the allocation's start the caller will touch.
    Result ipc_mapping(const tcaHandle &dst, uint64_t needed_end, std::shared_ptr<IpcMapping> *out);
    // Drops the cached mappings of `node` that overlap [start, end).
    void evict_overlapping(int node, uint64_t start, uint64_t end);

    std::mutex ipc_lock_;  // guards ipc_cache_
    // Per allocation, not per registration: CUDA maps an allocation once per
    // process (a second open, through another handle of it, fails with
    // "already mapped").  CUDA also refuses, as "already mapped", a new
    // allocation whose addresses overlap a freed one we still map (the
    // peer's cudaFree does not end our mapping): such stale mappings are
    // evicted and the open retried, as Open MPI's rgpusm cache does.
    std::map<MappingKey, std::shared_ptr<IpcMapping>> ipc_cache_;
};

}  // namespace tca::loopback
