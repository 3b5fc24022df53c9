// node_segment.hpp - create, attach, check and remove the per-node shm
// segments.  Names are /tca-<uid>-<job key>-<node>, mode 0600, so another
// user cannot open them and another job (other key) never sees them.
#pragma once

#include <cstdint>
#include <string>

#include "loopback/segment_layout.hpp"
#include "model/result.hpp"

namespace tca::loopback {

std::string segment_name(const std::string &job_key, int node);

enum class Liveness { Alive, Starting, Finalized, Dead };

// Is the node behind this segment running?  Dead = its engine thread died
// holding the robust alive lock (kill -9 included), or it never got going and
// its pid is gone.
Liveness check_liveness(SegmentHeader *h) noexcept;

// RAII owner of one mapping.
class MappedSegment {
public:
    MappedSegment() = default;
    MappedSegment(const MappedSegment &) = delete;
    MappedSegment &operator=(const MappedSegment &) = delete;
    MappedSegment(MappedSegment &&o) noexcept { *this = std::move(o); }
    MappedSegment &operator=(MappedSegment &&o) noexcept;
    ~MappedSegment() { reset(); }

    // Own node: create (clearing a dead predecessor), lay out and initialise.
    Result create(const std::string &job_key, int node, int num_nodes, uint64_t internal_size);
    // A peer: open if it exists and is Ready.  tcaErrorNotReady = not (yet) there.
    Result attach(const std::string &job_key, int node, int num_nodes);
    void reset() noexcept;

    bool mapped() const noexcept { return base_ != nullptr; }
    SegmentView view() const noexcept { return SegmentView(base_); }
    uint64_t size() const noexcept { return size_; }
    const std::string &name() const noexcept { return name_; }

private:
    void *base_ = nullptr;
    uint64_t size_ = 0;
    std::string name_;
};

// Remove segments of this user whose owner is dead (left by killed jobs).
// Returns how many were removed.
int remove_stale_segments() noexcept;

}  // namespace tca::loopback
