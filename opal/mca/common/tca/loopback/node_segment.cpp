// node_segment.cpp - lifetime of the per-node segments, including the cleanup
// of segments left behind by killed processes (by survivors or the next start).
#include "loopback/node_segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <new>

namespace tca::loopback {

namespace {
constexpr uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::string user_prefix() { return "tca-" + std::to_string(getuid()) + "-"; }

bool pid_alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

void init_robust_mutex(pthread_mutex_t *m) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
}

// Maps only the header of a segment file (to inspect a segment we may remove).
SegmentHeader *map_header(int fd) {
    struct stat st {};
    if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(SegmentHeader)) return nullptr;
    void *p = mmap(nullptr, sizeof(SegmentHeader), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? nullptr : static_cast<SegmentHeader *>(p);
}

bool is_stale(SegmentHeader *h) {
    if (h->magic != kSegmentMagic || h->uid != getuid()) return false;
    const Liveness l = check_liveness(h);
    return l == Liveness::Dead || (l == Liveness::Finalized && !pid_alive(h->pid));
}
}  // namespace

SegmentLayout SegmentLayout::compute(uint32_t num_nodes, uint64_t internal_size) noexcept {
    SegmentLayout l{};
    l.reg_offset = align_up(sizeof(SegmentHeader), 4096);
    l.notify_offset = align_up(l.reg_offset + kMaxRegistrations * sizeof(RegistrationEntry), 4096);
    l.counter_offset =
        align_up(l.notify_offset + uint64_t(num_nodes) * TCA_NOTIFY_SLOTS * sizeof(NotifyRing), 4096);
    l.bounce_offset = align_up(l.counter_offset + TCA_NUM_COUNTERS * sizeof(PaddedCounter), 4096);
    l.internal_offset = align_up(l.bounce_offset + sizeof(BounceArea), 4096);
    l.total_size = align_up(l.internal_offset + internal_size, 4096);
    return l;
}

std::string segment_name(const std::string &job_key, int node) {
    return "/" + user_prefix() + job_key + "-" + std::to_string(node);
}

Liveness check_liveness(SegmentHeader *h) noexcept {
    if (h->state.load(std::memory_order_acquire) == static_cast<uint32_t>(SegmentState::Finalized))
        return Liveness::Finalized;
    if (h->dead.load(std::memory_order_acquire) != 0) return Liveness::Dead;
    if (h->state.load(std::memory_order_acquire) == static_cast<uint32_t>(SegmentState::Creating))
        return pid_alive(h->pid) ? Liveness::Starting : Liveness::Dead;  // its lock may not be taken yet
    const int rc = pthread_mutex_trylock(&h->alive_lock);
    if (rc == EBUSY) return Liveness::Alive;
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
    if (rc == 0) pthread_mutex_unlock(&h->alive_lock);
    // Ready but nobody holds the lock: the engine thread is gone.
    return h->state.load(std::memory_order_acquire) == static_cast<uint32_t>(SegmentState::Finalized)
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
    if (base_ != nullptr) munmap(base_, size_);
    base_ = nullptr;
    size_ = 0;
}

// The segment is built under a private temporary name and link()ed to its
// real name only when its header is complete, so nobody ever sees (or judges
// stale) a half-initialised segment.  link() also gives O_EXCL semantics.
Result MappedSegment::create(const std::string &job_key, int node, int num_nodes, uint64_t internal_size) {
    reset();
    name_ = segment_name(job_key, node);
    const std::string tmp = "/" + user_prefix() + "tmp-" + std::to_string(getpid()) + "-" + job_key + "-" +
                            std::to_string(node);
    const SegmentLayout layout = SegmentLayout::compute(static_cast<uint32_t>(num_nodes), internal_size);
    shm_unlink(tmp.c_str());
    const int fd = shm_open(tmp.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
        std::fprintf(stderr, "tca: shm_open(%s) failed: %s\n", tmp.c_str(), std::strerror(errno));
        return tcaErrorSystem;
    }
    if (ftruncate(fd, static_cast<off_t>(layout.total_size)) != 0) {
        std::fprintf(stderr, "tca: ftruncate(%s, %llu) failed: %s\n", tmp.c_str(),
                     static_cast<unsigned long long>(layout.total_size), std::strerror(errno));
        close(fd);
        shm_unlink(tmp.c_str());
        return tcaErrorSystem;
    }
    void *p = mmap(nullptr, layout.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        shm_unlink(tmp.c_str());
        return tcaErrorSystem;
    }
    base_ = p;
    size_ = layout.total_size;

    auto *h = new (p) SegmentHeader{};
    h->version = kLayoutVersion;
    h->num_nodes = static_cast<uint32_t>(num_nodes);
    h->node_id = static_cast<uint32_t>(node);
    h->pid = getpid();
    h->uid = getuid();
    std::snprintf(h->job_key, sizeof h->job_key, "%s", job_key.c_str());
    h->internal_size = internal_size;
    h->reg_offset = layout.reg_offset;
    h->notify_offset = layout.notify_offset;
    h->counter_offset = layout.counter_offset;
    h->bounce_offset = layout.bounce_offset;
    h->internal_offset = layout.internal_offset;
    h->total_size = layout.total_size;
    init_robust_mutex(&h->alive_lock);
    auto *b = new (view().bounce()) BounceArea{};
    init_robust_mutex(&b->lock);
    // The rest (registrations, rings, counters) is zero-filled by the kernel,
    // which is their initial state.
    h->state.store(static_cast<uint32_t>(SegmentState::Creating), std::memory_order_release);
    // The magic goes last: another process's stale-segment sweep also sees
    // our temporary file, and a header with the magic but no pid yet reads
    // as "owner dead" - it unlinked the file under us (link() then failed
    // with ENOENT in 2 of 13 runs of the engine tests).
    std::atomic_thread_fence(std::memory_order_release);
    h->magic = kSegmentMagic;

    const std::string tmp_path = "/dev/shm" + tmp, path = "/dev/shm" + name_;
    Result result = tcaErrorJobConflict;
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (link(tmp_path.c_str(), path.c_str()) == 0) {
            result = tcaSuccess;
            break;
        }
        if (errno != EEXIST) {
            std::fprintf(stderr, "tca: link(%s) failed: %s\n", path.c_str(), std::strerror(errno));
            result = tcaErrorSystem;
            break;
        }
        // A segment of this name exists: take it over only if its owner is gone.
        const int old = shm_open(name_.c_str(), O_RDWR, 0600);
        if (old >= 0) {
            SegmentHeader *oh = map_header(old);
            const bool stale = oh == nullptr || is_stale(oh);
            if (oh != nullptr) munmap(oh, sizeof(SegmentHeader));
            close(old);
            if (!stale) {
                std::fprintf(stderr, "tca: segment %s belongs to a live process: job key in use\n", name_.c_str());
                break;
            }
            shm_unlink(name_.c_str());
        }
    }
    shm_unlink(tmp.c_str());
    if (result != tcaSuccess) reset();
    return result;
}

Result MappedSegment::attach(const std::string &job_key, int node, int num_nodes) {
    reset();
    name_ = segment_name(job_key, node);
    const int fd = shm_open(name_.c_str(), O_RDWR, 0600);
    if (fd < 0) return errno == ENOENT ? tcaErrorNotReady : tcaErrorSystem;
    struct stat st {};
    if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(SegmentHeader)) {
        close(fd);
        return tcaErrorNotReady;
    }
    if (st.st_uid != getuid()) {
        close(fd);
        return tcaErrorJobConflict;
    }
    void *p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return tcaErrorSystem;
    base_ = p;
    size_ = static_cast<uint64_t>(st.st_size);
    SegmentHeader *h = view().header();
    if (h->state.load(std::memory_order_acquire) != static_cast<uint32_t>(SegmentState::Ready)) {
        const bool stale = h->magic == kSegmentMagic && is_stale(h);
        reset();
        if (stale) shm_unlink(name_.c_str());  // left by a killed job: clean it
        return tcaErrorNotReady;
    }
    if (h->magic != kSegmentMagic || h->version != kLayoutVersion || h->uid != getuid() ||
        h->num_nodes != static_cast<uint32_t>(num_nodes) || h->node_id != static_cast<uint32_t>(node) ||
        std::strncmp(h->job_key, job_key.c_str(), sizeof h->job_key) != 0 || h->total_size != size_) {
        std::fprintf(stderr, "tca: segment %s does not match this job (node count %u vs %d)\n", name_.c_str(),
                     h->num_nodes, num_nodes);
        reset();
        return tcaErrorJobConflict;
    }
    return tcaSuccess;
}

int remove_stale_segments() noexcept {
    DIR *d = opendir("/dev/shm");
    if (d == nullptr) return 0;
    const std::string prefix = user_prefix();
    int removed = 0;
    while (dirent *e = readdir(d)) {
        if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
        const std::string name = std::string("/") + e->d_name;
        const int fd = shm_open(name.c_str(), O_RDWR, 0600);
        if (fd < 0) continue;
        struct stat st {};
        bool stale = false;
        if (SegmentHeader *h = map_header(fd)) {
            stale = is_stale(h);
            munmap(h, sizeof(SegmentHeader));
        } else if (fstat(fd, &st) == 0 && st.st_size == 0 && st.st_mtime + 60 < time(nullptr)) {
            stale = true;  // never sized: its creator died between open and ftruncate
        }
        close(fd);
        if (stale && shm_unlink(name.c_str()) == 0) ++removed;
    }
    closedir(d);
    return removed;
}

}  // namespace tca::loopback
