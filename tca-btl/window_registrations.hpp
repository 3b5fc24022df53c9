// window_registrations.hpp - registrations that live as long as the program
// keeps the memory: osc rdma's windows (MPI_Win_create, MPI_Win_attach, its
// state), held from the window's creation to MPI_Win_free.  A program may give
// such memory back before MPI_Win_free once its last epoch is over (free,
// MPI_Free_mem, freeing a shared window whose memory another window also
// exposes).  Kept in Open MPI's registration cache, they turned that into an
// abort ("Attempt to free memory that is still in use by an ongoing MPI
// communication"); kept here, they are not cached (a new window gets a new
// registration), and memory given back ends its registrations at once
// (released(), from Open MPI's memory-release hook): a late put into that
// memory, which may belong to someone else by then, fails instead of landing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tca.h"

namespace tca::btl {

class WindowRegistrations {
public:
    explicit WindowRegistrations(uint32_t capacity);
    WindowRegistrations(const WindowRegistrations &) = delete;
    WindowRegistrations &operator=(const WindowRegistrations &) = delete;

    // Registers [addr, addr + size) of host memory; *slot names it for remove().
    // tcaErrorNoResource when every slot is taken.
    tcaResult add(void *addr, size_t size, tcaHandle *out, uint32_t *slot);
    // The window is done with it: deregistered, unless its memory went first.
    void remove(uint32_t slot);
    // [addr, addr + len) was given back to the system: every registration
    // that overlaps it ends now (tcaRevokeHandle).  Runs inside munmap (Open
    // MPI's memory hook): allocates nothing; our lock is never held while
    // memory is released.  A device that cannot revoke from there
    // (tcaErrorNotSupported) deregisters at remove() as usual.
    void released(uintptr_t addr, size_t len) noexcept;

    // Registrations ended by released() so far (tests, verbose output).
    uint64_t revoked() const noexcept { return revoked_.load(std::memory_order_relaxed); }
    uint32_t live() const noexcept { return live_.load(std::memory_order_relaxed); }

private:
    enum class State : uint8_t { Free, Live, Revoked, Unrevokable };
    struct Entry {
        uintptr_t begin = 0, end = 0;  // the bytes registered, exactly (no page rounding)
        tcaHandle handle{};
        State state = State::Free;
    };

    std::mutex lock_;
    std::vector<Entry> entries_;  // fixed at construction: released() never allocates
    std::vector<uint32_t> free_;  // capacity for every slot, reserved at construction
    uint32_t high_ = 0;           // entries_[high_, ...) have never been used
    std::atomic<uint32_t> live_{0};
    std::atomic<uint64_t> revoked_{0};
};

}  // namespace tca::btl
