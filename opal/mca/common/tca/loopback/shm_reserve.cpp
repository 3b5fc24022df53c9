// shm_reserve.cpp - reserve the pages of shared files (see shm_reserve.hpp).
#include "loopback/shm_reserve.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>

#include <cstdio>
#include <cstring>

namespace tca::loopback {

namespace {
// Free bytes of the file system of fd, or UINT64_MAX when it reports no size
// (a tmpfs mounted without a limit says 0 blocks: then only fallocate knows).
uint64_t free_bytes(int fd) {
    struct statvfs fs {};
    if (fstatvfs(fd, &fs) != 0 || fs.f_blocks == 0)
        return UINT64_MAX;
    return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

std::string sized(uint64_t bytes) {
    if (bytes == UINT64_MAX)
        return "an unknown amount";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%llu bytes (%.1f MiB)", static_cast<unsigned long long>(bytes),
                  static_cast<double>(bytes) / (1 << 20));
    return buf;
}
}  // namespace

Result reserve_shm(int fd, uint64_t off, uint64_t len, const std::string &name, const char *what,
                   bool loud) {
    if (len == 0)
        return tcaSuccess;
    // More than the file system has free fails at once: fallocate would
    // first take every free page (everyone's shared memory) and only then
    // give up.
    const uint64_t before = free_bytes(fd);
    int rc = before != UINT64_MAX && len > before ? ENOSPC : 0;
    if (rc == 0)
        rc = posix_fallocate(fd, static_cast<off_t>(off), static_cast<off_t>(len));
    if (rc == 0)
        return tcaSuccess;
    char msg[512];
    std::snprintf(
        msg, sizeof msg,
        "cannot reserve %s of /dev/shm for the %s (/dev/shm%s): %s; /dev/shm has %s free. Free "
        "space in /dev/shm (or make it larger), or ask for less (TCA_INTERNAL_SIZE, smaller "
        "buffers)",
        sized(len).c_str(), what, name.c_str(), std::strerror(rc), sized(before).c_str());
    if (loud)
        std::fprintf(stderr, "tca: %s\n", msg);
    set_error_detail(msg);
    return tcaErrorNoMemory;
}

}  // namespace tca::loopback
