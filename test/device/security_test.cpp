// security_test.cpp - /dev/shm is shared by every user: files another user
// plants under this user's segment names (the names an earlier release used,
// names of the current form, shared-heap arena names, hard links, a file whose size keeps changing, a
// header claiming its owner died) must never be mapped, written or removed,
// and the job must run as if they were not there.  That user cannot open our
// segments either.  Needs root (to act as a second, unprivileged user: it is
// created if missing); skipped otherwise.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "harness.hpp"
#include "loopback/segment_layout.hpp"  // to forge convincing headers

namespace tca::test {
namespace {

constexpr const char *kIntruder = "tca-intruder";

// The second user: created (system account, no home, no login) if missing.
bool intruder_ids(uid_t *uid, gid_t *gid) {
    passwd *pw = getpwnam(kIntruder);
    if (pw == nullptr) {
        const std::string cmd =
            std::string("useradd --system --no-create-home --shell /usr/sbin/nologin ") +
            kIntruder + " >/dev/null 2>&1";
        if (std::system(cmd.c_str()) != 0)
            return false;
        pw = getpwnam(kIntruder);
    }
    if (pw == nullptr || pw->pw_uid == 0)
        return false;
    *uid = pw->pw_uid;
    *gid = pw->pw_gid;
    return true;
}

struct Shared {
    char paths[2][256];          // the job's real segments
    std::atomic<int> published;  // nodes that filled paths
    std::atomic<int> probe;      // 1: the intruder could not open them (EACCES), 2: it could
    std::atomic<int> stop;       // end the size toggling
};

pid_t dead_pid() {
    const pid_t p = fork();
    if (p == 0)
        std::_Exit(0);
    waitpid(p, nullptr, 0);
    return p;
}

// A header an older release took for "our segment, owner dead": magic, our
// (root's) uid, a dead pid, state Ready with an unowned lock.
void forge_header(int fd, const std::string &key, int node, pid_t pid) {
    std::vector<unsigned char> buf(1 << 20, 0);
    auto *h = reinterpret_cast<loopback::SegmentHeader *>(buf.data());
    h->magic = loopback::kSegmentMagic;
    h->version = loopback::kLayoutVersion;
    h->num_nodes = 2;
    h->node_id = static_cast<uint32_t>(node);
    h->pid = pid;
    h->uid = 0;
    std::snprintf(h->job_key, sizeof h->job_key, "%s", key.c_str());
    h->state.store(static_cast<uint32_t>(loopback::SegmentState::Ready));
    h->total_size = buf.size();
    if (write(fd, buf.data(), buf.size()) != static_cast<ssize_t>(buf.size()))
        std::_Exit(9);
}

std::string planted_name(const std::string &key, int node, const char *suffix) {
    return "/dev/shm/tca-0-" + key + "-" + std::to_string(node) + suffix;
}

// Runs as the intruder: plants, probes the job's segments, toggles a size.
[[noreturn]] void intruder(uid_t uid, gid_t gid, const std::string &key, Shared *sh, pid_t dead) {
    if (setgroups(0, nullptr) != 0 || setresgid(gid, gid, gid) != 0 ||
        setresuid(uid, uid, uid) != 0)
        std::_Exit(20);
    std::vector<int> toggles;
    for (int node = 0; node < 2; ++node) {
        // The exact names an earlier release used, and names of today's form
        // (segments, and shared-heap arenas of a planted segment and of none).
        for (const char *suffix : {"", "-0123456789abcdef", "-0123456789abcdef-h0123456789abcdef",
                                   "-1111111111111111-h2222222222222222"}) {
            const std::string path = planted_name(key, node, suffix);
            const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
            if (fd < 0)
                std::_Exit(21);
            forge_header(fd, key, node, dead);
            close(fd);
        }
        // A hard link (two links) and a file whose size keeps changing.
        if (link(planted_name(key, node, "-0123456789abcdef").c_str(),
                 planted_name(key, node, "-fedcba9876543210").c_str()) != 0)
            std::_Exit(22);
        const int fd = open(planted_name(key, node, "-00000000deadbeef").c_str(),
                            O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0)
            std::_Exit(23);
        forge_header(fd, key, node, dead);
        toggles.push_back(fd);
    }
    sh->stop.store(0);
    sh->probe.store(-1);  // planted
    while (sh->published.load() < 2 && sh->stop.load() == 0)
        usleep(200);
    int probe = 1;
    for (auto &path : sh->paths) {
        if (path[0] == '\0')
            continue;
        const int fd = open(path, O_RDONLY);
        if (fd >= 0 || errno != EACCES)
            probe = 2;
        if (fd >= 0)
            close(fd);
    }
    sh->probe.store(probe);
    for (unsigned i = 0; sh->stop.load() == 0; ++i) {
        for (int fd : toggles)
            (void) ftruncate(fd, (i & 1) ? 0 : (1 << 20));
        usleep(50);
    }
    std::_Exit(0);
}

std::string read_file(const std::string &path) {
    std::string data;
    FILE *f = std::fopen(path.c_str(), "rb");
    if (f == nullptr)
        return data;
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
        data.append(buf, n);
    std::fclose(f);
    return data;
}

TEST(Security, FilesPlantedByAnotherUserAreNeverUsed) {
    if (geteuid() != 0)
        GTEST_SKIP() << "needs root to act as a second user";
    uid_t uid;
    gid_t gid;
    if (!intruder_ids(&uid, &gid))
        GTEST_SKIP() << "cannot create the user " << kIntruder;
    void *mem =
        mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    auto *sh = new (mem) Shared{};
    sh->probe.store(0);
    NodeOptions opt;
    opt.job_key = unique_job_key("planted");
    const std::string key = opt.job_key;
    const pid_t dead = dead_pid();
    const pid_t planter = fork();
    if (planter == 0)
        intruder(uid, gid, key, sh, dead);
    for (int i = 0; i < 5000 && sh->probe.load() == 0; ++i)
        usleep(1000);
    ASSERT_EQ(sh->probe.load(), -1) << "the second user could not plant its files";
    std::vector<std::string> planted;
    for (int node = 0; node < 2; ++node)
        for (const char *s :
             {"", "-0123456789abcdef", "-fedcba9876543210", "-0123456789abcdef-h0123456789abcdef",
              "-1111111111111111-h2222222222222222"})
            planted.push_back(planted_name(key, node, s));
    std::vector<std::string> before;
    for (auto &p : planted)
        before.push_back(read_file(p));

    EXPECT_TRUE(run_nodes(
        2,
        [sh](int node, Board &board) {
            NODE_OK(tcaGetBackingPath(sh->paths[node], sizeof sh->paths[node]));
            sh->published.fetch_add(1);
            auto [buf, mine, peer] = exchange_buffers(node, board, 1 << 20, tcaMemoryCPU);
            std::vector<unsigned char> out(1 << 20);
            fill_pattern(out.data(), out.size(), static_cast<uint32_t>(node + 1));
            NODE_OK(tcaPioWrite(&peer, 0, out.data(), out.size(), tcaDMANotify, 0, 1));
            NODE_OK(tcaWaitDMARecvDesc(&peer, 0, 1));
            NODE_CHECK(check_pattern(buf, 1 << 20, static_cast<uint32_t>(2 - node)));
            for (int i = 0; i < 5000 && sh->probe.load() < 1; ++i)
                usleep(1000);
            NODE_CHECK(sh->probe.load() == 1);  // the other user was refused our segments
            board.barrier();
            NODE_OK(tcaDestroyHandle(&mine));
            NODE_OK(tcaFree(buf, tcaMemoryCPU));
            return 0;
        },
        opt));
    // The next start sweeps leftovers: it must not touch the planted files either.
    EXPECT_TRUE(run_nodes(1, [](int, Board &) { return 0; }));
    sh->stop.store(1);
    waitpid(planter, nullptr, 0);
    for (size_t i = 0; i < planted.size(); ++i) {
        struct stat st {};
        EXPECT_EQ(stat(planted[i].c_str(), &st), 0) << planted[i] << " was removed";
        EXPECT_EQ(st.st_uid, uid) << planted[i];
        EXPECT_TRUE(read_file(planted[i]) == before[i]) << planted[i] << " was written";
    }
    for (int node = 0; node < 2; ++node)
        for (const char *s :
             {"", "-0123456789abcdef", "-fedcba9876543210", "-00000000deadbeef",
              "-0123456789abcdef-h0123456789abcdef", "-1111111111111111-h2222222222222222"})
            unlink(planted_name(key, node, s).c_str());
    munmap(mem, sizeof(Shared));
}

}  // namespace
}  // namespace tca::test

namespace tca::test {
namespace {

// Ten thousand files under this user's prefix and under the job's own
// segment names, none of them a segment (another user's, or wrong mode):
// any local process can make them.  A node waiting for a late peer polls
// /dev/shm every millisecond; the cost of those polls must not grow with the
// planted files (the old code opened each of them at every poll: a core
// busy for the whole wait, and starts slowed towards the timeout).  Counted:
// the opens of the planted files while the nodes start (inotify), fewer than
// there are files (the old code: all of them at every poll).  And the
// waiting node's CPU time as a share of its wait, which load on the machine
// does not inflate: 0.12-0.16 of a core on a 2-core VM, the old code a whole
// core; it fails only at 0.9 (the cost of a listing can double in a
// sanitizer build on a slow machine, and used to fail at half a core).  The
// files are left as they were.
struct WaitCost {
    double cpu_s = 0, wall_s = 0;
};
WaitCost cost_of_waiting_for_a_late_peer(const std::string &key) {
    NodeOptions opt;
    opt.init = false;
    opt.job_key = key;
    static double cpu[2];  // written by node 0 through a shared page: CPU and wall time
    auto *shared = static_cast<double *>(
        mmap(nullptr, sizeof cpu, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(shared, MAP_FAILED);
    EXPECT_TRUE(run_nodes(
        2,
        [&](int node, Board &board) {
            tcaInitParams p{key.c_str(), node, 2};
            if (node == 1)
                usleep(1000 * 1000);
            timespec t0{}, t1{};
            const auto w0 = std::chrono::steady_clock::now();
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
            NODE_OK(tcaInitWithParams(&p));
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
            if (node == 0) {
                shared[0] = static_cast<double>(t1.tv_sec - t0.tv_sec) +
                            1e-9 * static_cast<double>(t1.tv_nsec - t0.tv_nsec);
                shared[1] =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
            }
            board.barrier();
            auto [buf, mine, peer] = exchange_buffers(node, board, 4096, tcaMemoryCPU);
            std::vector<unsigned char> out(4096);
            fill_pattern(out.data(), out.size(), static_cast<uint32_t>(node + 7));
            NODE_OK(tcaPioWrite(&peer, 0, out.data(), out.size(), tcaDMANotify, 0, 1));
            NODE_OK(tcaWaitDMARecvDesc(&peer, 0, 1));
            NODE_CHECK(check_pattern(buf, 4096, static_cast<uint32_t>(8 - node)));
            board.barrier();
            NODE_OK(tcaDestroyHandle(&mine));
            NODE_OK(tcaFree(buf, tcaMemoryCPU));
            return 0;
        },
        opt));
    const WaitCost v{shared[0], shared[1]};
    munmap(shared, sizeof cpu);
    return v;
}

// Counts the opens of a set of /dev/shm files by anyone while it lives
// (inotify), in a process of its own that reads the events as they come, so
// the queue does not overflow in a run that opens few: not a thread, since
// run_nodes forks the test process (a fork beside a running thread can
// deadlock in the sanitizer builds' allocator).  ok() is false where inotify
// is not available here; overflowed(): more events came than the queue holds.
class ShmOpenCounter {
public:
    explicit ShmOpenCounter(const std::unordered_set<std::string> &names) {
        shared_ = static_cast<Shared *>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                                             MAP_SHARED | MAP_ANONYMOUS, -1, 0));
        if (shared_ == MAP_FAILED) {
            shared_ = nullptr;
            return;
        }
        int ready[2], stop[2];
        if (pipe(ready) != 0 || pipe(stop) != 0)
            return;
        child_ = fork();
        if (child_ == 0) {
            close(ready[0]);
            close(stop[1]);
            const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
            const bool watching = fd >= 0 && inotify_add_watch(fd, "/dev/shm", IN_OPEN) >= 0;
            shared_->ok = watching;
            const char c = 1;
            (void) !write(ready[1], &c, 1);  // watching (or not) from now on
            alignas(inotify_event) char buf[64 * 1024];
            for (bool last = false; watching;) {
                pollfd p[2] = {{fd, POLLIN, 0}, {stop[0], POLLIN, 0}};
                if (poll(p, 2, last ? 0 : 1000) < 0)
                    break;
                const ssize_t n = (p[0].revents & POLLIN) ? read(fd, buf, sizeof buf) : 0;
                for (ssize_t at = 0; n > 0 && at < n;) {
                    const auto *e = reinterpret_cast<const inotify_event *>(buf + at);
                    if (e->mask & IN_Q_OVERFLOW)
                        shared_->overflowed = true;
                    else if (e->len > 0 && names.count(e->name) != 0)
                        ++shared_->opens;
                    at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
                }
                if (n > 0)
                    continue;  // drain before looking at the stop again
                if (last)
                    break;
                last = (p[1].revents & (POLLIN | POLLHUP)) != 0;
            }
            std::_Exit(0);
        }
        close(ready[1]);
        close(stop[0]);
        stop_fd_ = stop[1];
        char c = 0;
        (void) !read(ready[0], &c, 1);
        close(ready[0]);
    }
    ~ShmOpenCounter() {
        stop();
        if (shared_ != nullptr)
            munmap(shared_, sizeof(Shared));
    }
    bool ok() const { return shared_ != nullptr && shared_->ok; }
    void stop() {
        if (stop_fd_ >= 0)
            close(stop_fd_);
        stop_fd_ = -1;
        if (child_ > 0) {
            int status = 0;
            waitpid(child_, &status, 0);
            child_ = -1;
        }
    }
    long opens() const { return shared_ != nullptr ? shared_->opens : 0; }
    bool overflowed() const { return shared_ != nullptr && shared_->overflowed; }

private:
    struct Shared {
        bool ok, overflowed;
        long opens;
    };
    Shared *shared_ = nullptr;
    pid_t child_ = -1;
    int stop_fd_ = -1;
};

TEST(Security, TenThousandPlantedFilesCostNothingWhileWaiting) {
    const WaitCost clean = cost_of_waiting_for_a_late_peer(unique_job_key("crowd"));
    const std::string key = unique_job_key("crowd");
    const std::string user = "/dev/shm/tca-" + std::to_string(geteuid()) + "-";
    uid_t other = 0;
    gid_t other_gid = 0;
    const bool can_chown = geteuid() == 0 && intruder_ids(&other, &other_gid);
    // Removed however the test ends (names of this run only: a run that
    // died leaves nothing a later one trips over).
    struct Planted {
        std::vector<std::string> paths;
        ~Planted() {
            for (const auto &p : paths)
                unlink(p.c_str());
        }
    } guard;
    std::vector<std::string> &planted = guard.paths;
    for (int i = 0; i < 10000; ++i) {
        char name[256];
        if (i < 9000)  // the job's own segment names, both nodes
            std::snprintf(name, sizeof name, "%s%s-%d-%016x", user.c_str(), key.c_str(), i % 2, i);
        else
            std::snprintf(name, sizeof name, "%sjunk-%s-%d", user.c_str(), key.c_str(), i);
        const int fd = open(name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        ASSERT_GE(fd, 0) << name << ": " << std::strerror(errno);
        planted.emplace_back(name);
        if (can_chown && i % 2 == 0) {
            ASSERT_EQ(fchown(fd, other, other_gid), 0);
        }
        ASSERT_EQ(fchmod(fd, 0644), 0);  // not 0600: not a segment, whoever owns it
        close(fd);
    }
    std::unordered_set<std::string> names;
    for (const auto &path : planted)
        names.insert(path.substr(std::strlen("/dev/shm/")));
    ShmOpenCounter counter(names);
    const WaitCost crowded = cost_of_waiting_for_a_late_peer(key);
    counter.stop();
    std::printf("CPU time of a node waiting for its peer (1 s late): %.3f s of %.3f s clean, "
                "%.3f s of %.3f s among 10000 planted files\n",
                clean.cpu_s, clean.wall_s, crowded.cpu_s, crowded.wall_s);
    if (counter.ok()) {
        std::printf("opens of the planted files meanwhile: %ld%s\n", counter.opens(),
                    counter.overflowed() ? " (and more: the event queue overflowed)" : "");
        EXPECT_FALSE(counter.overflowed()) << "more opens in /dev/shm than inotify could queue";
        EXPECT_LT(counter.opens(), static_cast<long>(planted.size()))
            << "the planted files were opened again and again (the old code: each at every poll)";
    } else {
        std::printf("(no inotify here: the opens of the planted files are not counted)\n");
    }
    ASSERT_GT(crowded.wall_s, 0.0);
    EXPECT_LT(crowded.cpu_s / crowded.wall_s, 0.9)
        << "the wait kept a core busy (the old code: all of it)";
    size_t left = 0;
    for (auto &p : planted) {
        struct stat st {};
        if (stat(p.c_str(), &st) == 0 && (st.st_mode & 07777) == 0644)
            ++left;
    }
    EXPECT_EQ(left, planted.size()) << "planted files were removed or changed";
}

}  // namespace
}  // namespace tca::test
