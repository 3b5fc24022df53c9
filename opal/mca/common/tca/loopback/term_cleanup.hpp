// term_cleanup.hpp - removes this node's /dev/shm files (its segment and its
// shared-heap arenas) when the process is ended by SIGTERM, which is how
// mpirun, Slurm and most launchers end the ranks of an aborted job before they
// send SIGKILL.  Without it, a sub-cluster whose processes all die leaves its
// files until the next start on that host sweeps them (survivors remove a dead
// peer's files, but an aborted job has no survivors), and on a host that runs
// no later job they stay.
#pragma once

#include <cstddef>
#include <string>

#include "segment_layout.hpp"

namespace tca::loopback {

// Arms the cleanup for this process's node: `segment` is its shm name ("/..."),
// `arenas` its segment's arena table (kMaxArenas slots, read in the handler).
// Installs the SIGTERM handler only where SIGTERM has its default action (an
// application's own handler is left alone); after cleaning, the handler
// restores the default action and re-raises, so the process still ends by
// SIGTERM.  A forked child does not clean its parent's files.
void arm_term_cleanup(const std::string &segment, const ArenaSlot *arenas) noexcept;
// Before the segment is unmapped (finalize).
void disarm_term_cleanup() noexcept;

}  // namespace tca::loopback
