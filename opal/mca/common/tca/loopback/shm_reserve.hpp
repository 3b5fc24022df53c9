// shm_reserve.hpp - every page of a shared file is reserved when the file is
// made.  Pages of a ftruncate'd tmpfs file are allocated at first touch, so
// once another process fills /dev/shm (it is world-writable) the next store
// into a notification table, a ring or a heap block raises SIGBUS.  Reserved
// pages cannot fail later: a full /dev/shm becomes an error at start (or at
// tcaMalloc), never a dead rank.  Open MPI's shmem components do the same.
#pragma once

#include <cstdint>
#include <string>

#include "model/result.hpp"

namespace tca::loopback {

// Reserve bytes [off, off + len) of the /dev/shm file fd (name for the
// message).  tcaSuccess, or tcaErrorNoMemory with a text that says what it
// needed and what the file system had free as the thread's error detail
// (tcaGetErrorDetail), also printed as a "tca:" line when `loud` (a start
// that fails; quiet where the caller has a fallback, as tcaMalloc has).
Result reserve_shm(int fd, uint64_t off, uint64_t len, const std::string &name, const char *what,
                   bool loud = true);

}  // namespace tca::loopback
