// shm_scan.cpp - bounded listings of /dev/shm (see shm_scan.hpp).
#include "loopback/shm_scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_set>

namespace tca::loopback {

namespace {

// Entries judged not ours, by inode and name.  Another user's file cannot
// become ours (only root can chown), so the judgement stands while the
// entry does; a removed and re-made name has a new inode.  Bounded: past
// kMaxRemembered entries are judged again each time (still without open).
class ForeignEntries {
public:
    bool known(ino_t ino, const char *name) {
        std::lock_guard g(lock_);
        return set_.count(key(ino, name)) != 0;
    }
    void remember(ino_t ino, const char *name) {
        std::lock_guard g(lock_);
        if (set_.size() < kMaxRemembered)
            set_.insert(key(ino, name));
    }

private:
    static constexpr size_t kMaxRemembered = 1 << 16;
    static std::string key(ino_t ino, const char *name) { return std::to_string(ino) + '/' + name; }
    std::mutex lock_;
    std::unordered_set<std::string> set_;
};

ForeignEntries &foreign() {
    static ForeignEntries *f = new ForeignEntries;  // never destroyed: scans may run during exit
    return *f;
}

}  // namespace

void warn_not_ours(const std::string &name, const std::string &why) {
    constexpr size_t kMaxTold = 8;  // a flood of planted files must not flood the log
    static std::mutex lock;
    static std::set<std::string> told;
    std::lock_guard g(lock);
    if (told.size() > kMaxTold || !told.insert(name).second)
        return;
    if (told.size() > kMaxTold)
        std::fprintf(stderr,
                     "tca: ignoring more files in /dev/shm that are not segments of this user\n");
    else
        std::fprintf(stderr,
                     "tca: ignoring /dev/shm%s: %s (not a segment of this user; not mapped)\n",
                     name.c_str(), why.c_str());
}

void for_each_own_entry(const std::string &prefix, bool warn,
                        const std::function<void(const std::string &)> &f) {
    DIR *d = opendir("/dev/shm");
    if (d == nullptr)
        return;
    const char *want = prefix.c_str() + 1;  // shm names start with '/'
    const size_t want_len = prefix.size() - 1;
    while (dirent *e = readdir(d)) {
        if (std::strncmp(e->d_name, want, want_len) != 0)
            continue;
        if (foreign().known(e->d_ino, e->d_name))
            continue;
        struct stat st {};
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;  // gone meanwhile
        char why[96] = "";
        if (!S_ISREG(st.st_mode)) {
            std::snprintf(why, sizeof why, "not a regular file");
        } else if (st.st_uid != geteuid()) {
            std::snprintf(why, sizeof why, "owned by uid %u, we are uid %u",
                          static_cast<unsigned>(st.st_uid), static_cast<unsigned>(geteuid()));
        }
        if (why[0] != '\0') {  // never ours: remembered
            foreign().remember(st.st_ino, e->d_name);
        } else if ((st.st_mode & 07777) !=
                   0600) {  // ours, but not made by us this way: judged each time
            std::snprintf(why, sizeof why, "mode %04o, expected 0600",
                          static_cast<unsigned>(st.st_mode & 07777));
        } else if (st.st_nlink != 1) {
            std::snprintf(why, sizeof why, "%u links, expected 1",
                          static_cast<unsigned>(st.st_nlink));
        }
        if (why[0] != '\0') {
            if (warn)
                warn_not_ours(std::string("/") + e->d_name, why);
            continue;
        }
        f(std::string("/") + e->d_name);
    }
    closedir(d);
}

void ShmDirStamp::take() {
    valid_ = stat("/dev/shm", &st_) == 0;
    taken_ = std::chrono::steady_clock::now();
}

bool ShmDirStamp::unchanged() const {
    if (!valid_ || std::chrono::steady_clock::now() - taken_ >= kMaxAge)
        return false;
    struct stat now {};
    if (stat("/dev/shm", &now) != 0)
        return false;
    return now.st_ino == st_.st_ino && now.st_size == st_.st_size && now.st_nlink == st_.st_nlink &&
           now.st_mtim.tv_sec == st_.st_mtim.tv_sec && now.st_mtim.tv_nsec == st_.st_mtim.tv_nsec &&
           now.st_ctim.tv_sec == st_.st_ctim.tv_sec && now.st_ctim.tv_nsec == st_.st_ctim.tv_nsec;
}

}  // namespace tca::loopback
