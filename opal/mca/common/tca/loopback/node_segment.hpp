// node_segment.hpp - create, find, check and remove the per-node shm
// segments.  Security model (the same as Open MPI's vader): only processes of
// the same user and job touch a segment.  Names are
// /tca-<uid>-<job key>-<node>-<16 random hex digits>, created exclusively with
// mode 0600; nothing found in /dev/shm is mapped before the descriptor itself
// shows it is a regular file of ours, mode 0600, with one link - so files
// planted by another user (a guessable name, a hard link, a file whose size
// changes under us) are never mapped, written or removed.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "loopback/segment_layout.hpp"
#include "model/result.hpp"

namespace tca::loopback {

// "/tca-<uid>-<job key>-<node>-": every segment of that node starts so (job
// keys are sanitised to [A-Za-z0-9._], so the prefix is unambiguous).
std::string segment_prefix(const std::string &job_key, int node);

enum class Liveness { Alive, Starting, Finalized, Dead };

// Is the node behind this segment running?  Dead = its engine thread died
// holding the robust alive lock (kill -9 included), or it never got going and
// its owner (pid and start time) is gone.
Liveness check_liveness(SegmentHeader *h) noexcept;

// This process's start time in clock ticks after boot (/proc/<pid>/stat), 0
// if unknown.  With the pid it names a process for good: pids are reused.
uint64_t process_start_time(pid_t pid) noexcept;

// Opens /dev/shm<name> for mapping only if the descriptor is a regular file
// owned by us, mode 0600, with exactly one link.  Returns the descriptor, or
// -1 with *why saying what was wrong (empty: it does not exist).
int open_own_segment_file(const std::string &name, struct stat *st, std::string *why);

// RAII owner of one mapping.
class ShmDirStamp;

class MappedSegment {
public:
    MappedSegment() = default;
    MappedSegment(const MappedSegment &) = delete;
    MappedSegment &operator=(const MappedSegment &) = delete;
    MappedSegment(MappedSegment &&o) noexcept { *this = std::move(o); }
    MappedSegment &operator=(MappedSegment &&o) noexcept;
    ~MappedSegment() { reset(); }

    // Own node: create under a fresh random name, lay out and initialise;
    // tcaErrorJobConflict if another live process already is this node.
    // stamps: with notification stamps (TCA_TIMING=virtual).
    Result create(const std::string &job_key, int node, int num_nodes, uint64_t internal_size,
                  bool stamps = false);
    // A peer: find its segment and map it once it is Ready.
    // tcaErrorNotReady = not (yet) there.  A poll passes the same `unseen`
    // each time: the listing is skipped while /dev/shm did not change since
    // a listing that found nothing of ours.
    Result attach(const std::string &job_key, int node, int num_nodes,
                  ShmDirStamp *unseen = nullptr);
    void reset() noexcept;

    bool mapped() const noexcept { return base_ != nullptr; }
    SegmentView view() const noexcept { return SegmentView(base_); }
    uint64_t size() const noexcept { return size_; }
    const std::string &name() const noexcept { return name_; }

private:
    Result check_no_live_twin(const std::string &job_key, int node);

    void *base_ = nullptr;
    uint64_t size_ = 0;
    std::string name_;
};

// Shared-heap arenas of a node are files named <segment name>-h<16 random
// hex digits>, made exclusively, mode 0600, like the segment, and checked
// with open_own_segment_file before a peer maps them.  They live and die
// with the segment: every place that removes a segment removes them too.
bool is_arena_name(const std::string &name);
std::string arena_segment_name(const std::string &arena);  // the segment an arena belongs to
std::string new_arena_name(const std::string &segment);
// shm_unlink the segment and its arenas; returns how many files went.
int unlink_segment(const std::string &name) noexcept;

// Remove segments of this user whose owner is dead (left by killed jobs),
// with their arenas, and arenas whose segment is gone; files of other users
// are never opened for mapping nor removed.
// Returns how many were removed.
int remove_stale_segments() noexcept;

}  // namespace tca::loopback
