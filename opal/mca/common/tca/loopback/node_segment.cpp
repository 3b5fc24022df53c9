// node_segment.cpp - lifetime of the per-node segments, including the cleanup
// of segments left behind by killed processes (by survivors or the next start).
#include "loopback/node_segment.hpp"
#include "loopback/shm_reserve.hpp"
#include "loopback/shm_scan.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <new>
#include <set>
#include <mutex>

namespace tca::loopback {

namespace {
constexpr uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

std::string user_prefix() {
    return "tca-" + std::to_string(geteuid()) + "-";
}

bool owner_alive(const SegmentHeader *h) {
    const pid_t pid = h->pid;
    if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM))
        return false;
    // The pid lives - but is it still the process that made the segment?
    const uint64_t t = process_start_time(pid);
    return t == 0 || h->start_time == 0 || t == h->start_time;
}

void init_robust_mutex(pthread_mutex_t *m) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
}

std::string random_suffix() {
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {
        // No entropy source (very old kernel): still unique, less secret.
        v = (static_cast<uint64_t>(getpid()) << 32) ^ static_cast<uint64_t>(time(nullptr)) ^
            reinterpret_cast<uintptr_t>(&v);
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
    return buf;
}

// Maps only the header of a verified segment file (to inspect it).
SegmentHeader *map_header(int fd, const struct stat &st) {
    if (static_cast<size_t>(st.st_size) < sizeof(SegmentHeader))
        return nullptr;
    void *p = mmap(nullptr, sizeof(SegmentHeader), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? nullptr : static_cast<SegmentHeader *>(p);
}

bool is_stale(SegmentHeader *h) {
    // Only headers of our own layout are judged: fields of another layout
    // lie at other offsets (the magic carries the version; check both).
    if (h->magic != kSegmentMagic || h->version != kLayoutVersion || h->uid != geteuid())
        return false;
    const Liveness l = check_liveness(h);
    return l == Liveness::Dead || (l == Liveness::Finalized && !owner_alive(h));
}

// Calls f(name, fd, st) for every /dev/shm file under prefix (a shm name,
// "/..."), that open_own_segment_file accepts; the descriptor is closed after
// f returns.  The rest is never mapped (and named once on stderr if warn).
// Arena files (shared heap, names <segment>-h<hex>) hold user data, never a
// header: the segment visitors skip them (Files::Segments).
using OwnFileVisitor = std::function<void(const std::string &name, int fd, const struct stat &st)>;
enum class Files { Segments, Arenas };
void for_each_own_file(const std::string &prefix, bool warn, const OwnFileVisitor &f,
                       Files which = Files::Segments) {
    for_each_own_entry(prefix, warn, [&](const std::string &name) {
        if (is_arena_name(name) != (which == Files::Arenas))
            return;
        struct stat st {};
        std::string why;
        const int fd = open_own_segment_file(name, &st, &why);
        if (fd < 0) {
            if (warn && !why.empty())
                warn_not_ours(name, why);
            return;
        }
        f(name, fd, st);
        close(fd);
    });
}
}  // namespace

uint64_t process_start_time(pid_t pid) noexcept {
    char path[64], buf[1024];
    std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
    FILE *f = std::fopen(path, "re");
    if (f == nullptr)
        return 0;
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    // Field 22; the command name (field 2) may hold spaces, so count from its ')'.
    const char *p = std::strrchr(buf, ')');
    if (p == nullptr)
        return 0;
    for (int field = 2; field < 22 && *p != '\0'; ++p)
        if (*p == ' ')
            ++field;
    return std::strtoull(p, nullptr, 10);
}

int open_own_segment_file(const std::string &name, struct stat *st, std::string *why) {
    why->clear();
    // O_NOFOLLOW: no symlink games; O_NONBLOCK: a planted FIFO does not block us.
    const int fd = shm_open(name.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0) {
        if (errno != ENOENT)
            *why = std::string("cannot open it: ") + std::strerror(errno);
        return -1;
    }
    char msg[160] = "";
    if (fstat(fd, st) != 0) {
        std::snprintf(msg, sizeof msg, "fstat failed: %s", std::strerror(errno));
    } else if (!S_ISREG(st->st_mode)) {
        std::snprintf(msg, sizeof msg, "not a regular file");
    } else if (st->st_uid != geteuid()) {
        std::snprintf(msg, sizeof msg, "owned by uid %u, we are uid %u",
                      static_cast<unsigned>(st->st_uid), static_cast<unsigned>(geteuid()));
    } else if ((st->st_mode & 07777) != 0600) {
        std::snprintf(msg, sizeof msg, "mode %04o, expected 0600",
                      static_cast<unsigned>(st->st_mode & 07777));
    } else if (st->st_nlink != 1) {
        std::snprintf(msg, sizeof msg, "%u links, expected 1", static_cast<unsigned>(st->st_nlink));
    } else {
        return fd;
    }
    close(fd);
    *why = msg;
    return -1;
}

SegmentLayout SegmentLayout::compute(uint32_t num_nodes, uint64_t internal_size,
                                     bool stamps) noexcept {
    SegmentLayout l{};
    l.reg_offset = align_up(sizeof(SegmentHeader), 4096);
    l.notify_offset = align_up(l.reg_offset + kMaxRegistrations * sizeof(RegistrationEntry), 4096);
    l.counter_offset = align_up(
        l.notify_offset + uint64_t(num_nodes) * TCA_NOTIFY_SLOTS * sizeof(NotifyTable), 4096);
    l.arena_offset = align_up(l.counter_offset + TCA_NUM_COUNTERS * sizeof(PaddedCounter), 4096);
    l.internal_offset = align_up(l.arena_offset + kMaxArenas * sizeof(ArenaSlot), 4096);
    // The mailboxes (256 KiB per source node, rarely touched) last, after
    // the internal memory that btl tca's rings live in: the hot parts of
    // the segment stay together at its start whatever the node count.
    l.bounce_offset = align_up(l.internal_offset + internal_size, 4096);
    l.total_size = align_up(l.bounce_offset + uint64_t(num_nodes) * sizeof(BounceArea), 4096);
    if (stamps) {  // virtual time only: 1 KiB per (source, slot)
        l.stamp_offset = l.total_size;
        l.total_size = align_up(
            l.stamp_offset + uint64_t(num_nodes) * TCA_NOTIFY_SLOTS * sizeof(NotifyStamps), 4096);
    }
    return l;
}

std::string segment_prefix(const std::string &job_key, int node) {
    return "/" + user_prefix() + job_key + "-" + std::to_string(node) + "-";
}

Liveness check_liveness(SegmentHeader *h) noexcept {
    if (h->state.load(std::memory_order_acquire) == static_cast<uint32_t>(SegmentState::Finalized))
        return Liveness::Finalized;
    if (h->dead.load(std::memory_order_acquire) != 0)
        return Liveness::Dead;
    if (h->state.load(std::memory_order_acquire) == static_cast<uint32_t>(SegmentState::Creating))
        return owner_alive(h) ? Liveness::Starting
                              : Liveness::Dead;  // its lock may not be taken yet
    const int rc = pthread_mutex_trylock(&h->alive_lock);
    if (rc == EBUSY)
        return Liveness::Alive;
    if (rc == EOWNERDEAD || rc == ENOTRECOVERABLE) {
        // Record the death in the header and hand the lock back in a normal
        // state: glibc leaves a not-recoverable robust mutex locked by the
        // checker, which would read as "alive" on the next check.
        h->dead.store(1, std::memory_order_release);
        if (rc == EOWNERDEAD) {
            pthread_mutex_consistent(&h->alive_lock);
            pthread_mutex_unlock(&h->alive_lock);
        }
        return Liveness::Dead;
    }
    if (rc == 0)
        pthread_mutex_unlock(&h->alive_lock);
    // Ready but nobody holds the lock: the engine thread is gone.
    return h->state.load(std::memory_order_acquire) ==
                   static_cast<uint32_t>(SegmentState::Finalized)
               ? Liveness::Finalized
               : Liveness::Dead;
}

MappedSegment &MappedSegment::operator=(MappedSegment &&o) noexcept {
    if (this != &o) {
        reset();
        base_ = o.base_;
        size_ = o.size_;
        name_ = std::move(o.name_);
        o.base_ = nullptr;
        o.size_ = 0;
    }
    return *this;
}

void MappedSegment::reset() noexcept {
    if (base_ != nullptr)
        munmap(base_, size_);
    base_ = nullptr;
    size_ = 0;
}

// The name has a random part, so it cannot be squatted and O_EXCL never
// meets a leftover.  Peers may find the file before it is complete: the
// magic goes last and the state says Creating until the node is up.
Result MappedSegment::create(const std::string &job_key, int node, int num_nodes,
                             uint64_t internal_size, bool stamps) {
    reset();
    const SegmentLayout layout =
        SegmentLayout::compute(static_cast<uint32_t>(num_nodes), internal_size, stamps);
    int fd = -1;
    for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
        name_ = segment_prefix(job_key, node) + random_suffix();
        fd = shm_open(name_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        std::fprintf(stderr, "tca: shm_open(%s) failed: %s\n", name_.c_str(), std::strerror(errno));
        return tcaErrorSystem;
    }
    auto fail = [&](const char *what) {
        std::fprintf(stderr, "tca: %s(/dev/shm%s, %llu bytes) failed: %s\n", what, name_.c_str(),
                     static_cast<unsigned long long>(layout.total_size), std::strerror(errno));
        close(fd);
        shm_unlink(name_.c_str());
        return tcaErrorSystem;
    };
    if (fchmod(fd, 0600) != 0)
        return fail("fchmod");  // exactly 0600, whatever the umask
    if (ftruncate(fd, static_cast<off_t>(layout.total_size)) != 0)
        return fail("ftruncate");
    // Every page now (shm_reserve.hpp): a full /dev/shm fails this start,
    // never a later store into the segment (ours or a peer's).
    if (reserve_shm(fd, 0, layout.total_size, name_, "node segment") != tcaSuccess) {
        close(fd);
        shm_unlink(name_.c_str());
        return tcaErrorNoMemory;
    }
    void *p = mmap(nullptr, layout.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return fail("mmap");
    close(fd);
    base_ = p;
    size_ = layout.total_size;

    auto *h = new (p) SegmentHeader{};
    h->version = kLayoutVersion;
    h->num_nodes = static_cast<uint32_t>(num_nodes);
    h->node_id = static_cast<uint32_t>(node);
    h->pid = getpid();
    h->uid = geteuid();
    h->start_time = process_start_time(getpid());
    std::snprintf(h->job_key, sizeof h->job_key, "%s", job_key.c_str());
    h->internal_size = internal_size;
    h->reg_offset = layout.reg_offset;
    h->notify_offset = layout.notify_offset;
    h->counter_offset = layout.counter_offset;
    h->bounce_offset = layout.bounce_offset;
    h->internal_offset = layout.internal_offset;
    h->total_size = layout.total_size;
    h->arena_offset = layout.arena_offset;
    h->stamp_offset = layout.stamp_offset;
    init_robust_mutex(&h->alive_lock);
    for (int src = 0; src < num_nodes; ++src) {
        auto *b = new (view().bounce(static_cast<uint32_t>(src))) BounceArea{};
        init_robust_mutex(&b->lock);
    }
    // The rest (registrations, rings, counters) is zero-filled by the kernel,
    // which is their initial state.
    h->state.store(static_cast<uint32_t>(SegmentState::Creating), std::memory_order_release);
    // The magic goes last: a stale-segment sweep that sees the magic also
    // sees the owner's pid (a header with the magic but no pid reads as
    // "owner dead" and would be removed under us).
    std::atomic_thread_fence(std::memory_order_release);
    h->magic = kSegmentMagic;

    if (Result r = check_no_live_twin(job_key, node); r != tcaSuccess) {
        shm_unlink(name_.c_str());
        reset();
        return r;
    }
    return tcaSuccess;
}

// Two live processes must not be the same node of the same job.  Segments of
// a dead predecessor (a killed run with the same key) are removed.
Result MappedSegment::check_no_live_twin(const std::string &job_key, int node) {
    Result result = tcaSuccess;
    for_each_own_file(
        segment_prefix(job_key, node), true,
        [&](const std::string &name, int fd, const struct stat &st) {
            if (name == name_ || result != tcaSuccess)
                return;
            SegmentHeader *h = map_header(fd, st);
            if (h == nullptr)
                return;
            if (h->magic == kSegmentMagic && h->node_id == static_cast<uint32_t>(node) &&
                std::strncmp(h->job_key, job_key.c_str(), sizeof h->job_key) == 0) {
                if (is_stale(h)) {
                    unlink_segment(name);
                } else if (check_liveness(h) != Liveness::Finalized) {
                    std::fprintf(stderr,
                                 "tca: /dev/shm%s belongs to a live process (pid %d) that already "
                                 "is node %d of job "
                                 "'%s': job key in use\n",
                                 name.c_str(), static_cast<int>(h->pid), node, job_key.c_str());
                    result = tcaErrorJobConflict;
                }
            }
            munmap(h, sizeof(SegmentHeader));
        });
    return result;
}

Result MappedSegment::attach(const std::string &job_key, int node, int num_nodes,
                             ShmDirStamp *unseen) {
    reset();
    // Nothing of ours was there at the last poll and nothing was added or
    // removed since: listing again would find the same (shm_scan.hpp).
    if (unseen != nullptr && unseen->unchanged())
        return tcaErrorNotReady;
    if (unseen != nullptr)
        unseen->take();
    bool seen = false;
    Result result = tcaErrorNotReady;
    for_each_own_file(
        segment_prefix(job_key, node), true,
        [&](const std::string &name, int fd, const struct stat &st) {
            seen = true;
            if (result != tcaErrorNotReady)
                return;
            if (static_cast<size_t>(st.st_size) < sizeof(SegmentHeader))
                return;  // still being sized
            void *p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE,
                           MAP_SHARED, fd, 0);
            if (p == MAP_FAILED) {
                result = tcaErrorSystem;
                return;
            }
            SegmentView v(p);
            SegmentHeader *h = v.header();
            auto drop = [&] { munmap(p, static_cast<size_t>(st.st_size)); };
            if (h->magic != kSegmentMagic || h->state.load(std::memory_order_acquire) !=
                                                 static_cast<uint32_t>(SegmentState::Ready)) {
                const bool stale = h->magic == kSegmentMagic && is_stale(h);
                drop();
                if (stale)
                    unlink_segment(name);  // left by a killed job: clean it
                return;
            }
            if (h->version != kLayoutVersion || h->uid != geteuid() ||
                h->num_nodes != static_cast<uint32_t>(num_nodes) ||
                h->node_id != static_cast<uint32_t>(node) ||
                std::strncmp(h->job_key, job_key.c_str(), sizeof h->job_key) != 0 ||
                h->total_size != static_cast<uint64_t>(st.st_size)) {
                std::fprintf(
                    stderr,
                    "tca: segment /dev/shm%s does not match this job (node count %u vs %d)\n",
                    name.c_str(), h->num_nodes, num_nodes);
                drop();
                result = tcaErrorJobConflict;
                return;
            }
            const bool dead =
                check_liveness(h) == Liveness::Dead;  // Ready, but its owner was killed
            if (dead && base_ != nullptr) {           // one dead candidate is enough
                drop();
                return;
            }
            reset();  // a live one wins over a dead one kept so far
            base_ = p;
            size_ = static_cast<uint64_t>(st.st_size);
            name_ = name;
            if (!dead)
                result = tcaSuccess;
        });
    // Only a dead one: this node started and died after our start swept the
    // leftovers.  Attach anyway; the usual liveness checks report it gone
    // (tcaErrorPeerGone) and remove its segment, as for any peer that dies.
    if (result == tcaErrorNotReady && base_ != nullptr)
        result = tcaSuccess;
    if (result != tcaSuccess)
        reset();
    // A file of ours that is not Ready yet changes without a directory
    // change: poll it again.
    if (seen && unseen != nullptr)
        unseen->clear();
    return result;
}

int remove_stale_segments() noexcept {
    int removed = 0;
    // Files that are not ours are skipped quietly: never mapped, never removed.
    for_each_own_file(
        "/" + user_prefix(), false, [&](const std::string &name, int fd, const struct stat &st) {
            bool stale = false;
            if (SegmentHeader *h = map_header(fd, st)) {
                stale = is_stale(h);
                munmap(h, sizeof(SegmentHeader));
            } else if (st.st_size == 0 && st.st_mtime + 60 < time(nullptr)) {
                stale = true;  // never sized: its creator died between open and ftruncate
            }
            if (stale)
                removed += unlink_segment(name);
        });
    // Arenas whose segment is gone: the node died after its segment was
    // removed (a survivor removes only what it saw), or it finished and died
    // before it removed its arenas.  An arena is made after its segment and
    // a live node's segment keeps its name, so this never hits a live one.
    for_each_own_file(
        "/" + user_prefix(), false,
        [&](const std::string &name, int, const struct stat &) {
            struct stat seg {};
            const std::string owner = "/dev/shm" + arena_segment_name(name);
            if (stat(owner.c_str(), &seg) != 0 && errno == ENOENT && shm_unlink(name.c_str()) == 0)
                ++removed;
        },
        Files::Arenas);
    return removed;
}

bool is_arena_name(const std::string &name) {
    // <segment: /tca-uid-key-node-16hex>-h<16hex>; job keys hold no '-'.
    const size_t h = name.rfind("-h");
    if (h == std::string::npos || name.size() != h + 2 + 16)
        return false;
    if (std::count(name.begin(), name.end(), '-') != 5)
        return false;
    return std::all_of(name.begin() + static_cast<long>(h) + 2, name.end(),
                       [](char c) { return std::isxdigit(c); });
}

std::string arena_segment_name(const std::string &arena) {
    return arena.substr(0, arena.rfind("-h"));
}

std::string new_arena_name(const std::string &segment) {
    return segment + "-h" + random_suffix();
}

int unlink_segment(const std::string &name) noexcept {
    int removed = shm_unlink(name.c_str()) == 0 ? 1 : 0;
    try {
        for_each_own_file(
            name + "-h", false,
            [&](const std::string &arena, int, const struct stat &) {
                if (shm_unlink(arena.c_str()) == 0)
                    ++removed;
            },
            Files::Arenas);
    } catch (...) {  // out of memory for a name: the next start's sweep removes them
    }
    return removed;
}

}  // namespace tca::loopback
