// shm_scan.hpp - listing our files in /dev/shm at a cost that other users
// cannot raise.  /dev/shm is world-writable: anyone can plant thousands of
// files under our names, and every start and every rendezvous poll lists
// the directory.  Files of another user (or not regular files) are judged
// by their directory entry alone (fstatat, no open), remembered, and not
// looked at again; a rendezvous poll skips the listing while the directory
// has not changed.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <functional>
#include <string>

namespace tca::loopback {

// Calls f(name) ("/<file>", a shm name) for every file of /dev/shm whose name
// starts with prefix (a shm name) that by its directory entry may be one of
// our files: a regular file of this user, mode 0600, one link.  The rest is
// skipped without being opened (named on stderr if warn); other users'
// entries are remembered and not looked at again.
// f must still open the file with open_own_segment_file (the entry may
// change between the listing and the open).
void for_each_own_entry(const std::string &prefix, bool warn,
                        const std::function<void(const std::string &)> &f);

// Says once per file (at most a few files) that a file under our prefix is
// not ours (planted by another user, or damaged), and why: it is left alone.
void warn_not_ours(const std::string &name, const std::string &why);

// The state of /dev/shm at a listing that found nothing of ours, so a poll
// can skip the next listing while nothing was added or removed.
class ShmDirStamp {
public:
    // Take before a listing.
    void take();
    // Forget it (the listing found something of ours, or a change).
    void clear() noexcept { valid_ = false; }
    // True when a listing now would see what the listing after take() saw:
    // the directory's change time, modification time and size (tmpfs: one
    // step per entry) are unchanged, and the stamp is younger than
    // kMaxAge (timestamps are coarse: a change in the same tick as take()
    // is caught by the next listing at the latest).
    bool unchanged() const;

    static constexpr std::chrono::milliseconds kMaxAge{250};

private:
    bool valid_ = false;
    struct stat st_ {};
    std::chrono::steady_clock::time_point taken_{};
};

}  // namespace tca::loopback
