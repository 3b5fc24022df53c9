// segment_test.cpp - white-box checks of the segment files: what counts as
// ours (owner, mode 0600, one link) and when a segment's owner is dead (pid
// and start time: pids are reused).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "loopback/node_segment.hpp"

namespace tca::loopback {
namespace {

std::string key_for(const char *what) {
    return std::string("t.seg.") + what + "." + std::to_string(getpid());
}

bool exists(const std::string &shm_name) {
    struct stat st {};
    return stat(("/dev/shm" + shm_name).c_str(), &st) == 0;
}

TEST(SegmentFiles, OnlyRegularFilesOfOursWithMode0600AndOneLink) {
    const std::string base = segment_prefix(key_for("files"), 0);
    const std::string good = base + "0000000000000001", loose = base + "0000000000000002",
                      linked = base + "0000000000000003", alias = base + "0000000000000004";
    int fd = shm_open(good.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    fchmod(fd, 0600);
    close(fd);
    fd = shm_open(loose.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    fchmod(fd, 0644);
    close(fd);
    fd = shm_open(linked.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    fchmod(fd, 0600);
    close(fd);
    ASSERT_EQ(link(("/dev/shm" + linked).c_str(), ("/dev/shm" + alias).c_str()), 0);
    ASSERT_EQ(
        symlink(("/dev/shm" + good).c_str(), ("/dev/shm" + base + "0000000000000005").c_str()), 0);

    struct stat st {};
    std::string why;
    fd = open_own_segment_file(good, &st, &why);
    EXPECT_GE(fd, 0) << why;
    if (fd >= 0)
        close(fd);
    EXPECT_LT(open_own_segment_file(loose, &st, &why), 0);
    EXPECT_NE(why.find("mode 0644"), std::string::npos) << why;
    EXPECT_LT(open_own_segment_file(linked, &st, &why), 0);
    EXPECT_NE(why.find("2 links"), std::string::npos) << why;
    EXPECT_LT(open_own_segment_file(base + "0000000000000005", &st, &why),
              0);  // a symlink: O_NOFOLLOW
    EXPECT_FALSE(why.empty());
    EXPECT_LT(open_own_segment_file(base + "0000000000000009", &st, &why),
              0);  // missing: no complaint
    EXPECT_TRUE(why.empty());
    for (const char *s : {"1", "2", "3", "4", "5"})
        shm_unlink((base + "000000000000000" + s).c_str());
}

// A segment whose owner's pid is alive but belongs to another process now
// (different start time) is stale: the sweep removes it.  While the start
// time matches, it stays.
TEST(SegmentFiles, SweepTellsAReusedPidFromTheOwner) {
    MappedSegment seg;
    ASSERT_EQ(seg.create(key_for("reuse"), 0, 1, 65536), tcaSuccess);  // state Creating, our pid
    SegmentHeader *h = seg.view().header();
    ASSERT_NE(h->start_time, 0u);
    EXPECT_EQ(h->start_time, process_start_time(getpid()));
    remove_stale_segments();
    EXPECT_TRUE(exists(seg.name())) << "the sweep removed a live owner's segment";
    h->start_time += 12345;  // as if our pid had been reused by another process
    remove_stale_segments();
    EXPECT_FALSE(exists(seg.name())) << "the sweep kept a segment whose owner is gone";
}

// Another build's segments (another layout version, e.g. an older install
// or work tree of the same user) are never judged by our sweep: their fields
// lie at other offsets, so a live one could look dead.
TEST(SegmentFiles, SweepLeavesOtherLayoutsAlone) {
    const std::string base = segment_prefix(key_for("layout"), 0);
    struct Planted {
        std::string name;
        uint64_t magic;
        uint32_t version;
    };
    const Planted planted[] = {
        {base + "00000000000000a3", 0x5443414c4f4f50ull, 3},  // the magic every layout up to 3 used
        {base + "00000000000000a5", kSegmentMagic, kLayoutVersion + 1},
    };
    for (const Planted &p : planted) {
        const int fd = shm_open(p.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
        ASSERT_GE(fd, 0);
        fchmod(fd, 0600);
        ASSERT_EQ(ftruncate(fd, 1 << 16), 0);
        void *m = mmap(nullptr, sizeof(SegmentHeader), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        ASSERT_NE(m, MAP_FAILED);
        auto *h = static_cast<SegmentHeader *>(m);
        h->magic = p.magic;
        h->version = p.version;
        h->uid = geteuid();
        h->pid = 0;  // read at our offsets: "owner gone"
        h->state.store(static_cast<uint32_t>(SegmentState::Ready));
        munmap(m, sizeof(SegmentHeader));
        close(fd);
    }
    remove_stale_segments();
    for (const Planted &p : planted) {
        EXPECT_TRUE(exists(p.name)) << "the sweep removed a segment of another layout: " << p.name;
        shm_unlink(p.name.c_str());
    }
}

// Notification stamps (TCA_TIMING=virtual) cost a segment nothing unless
// virtual time runs: then 1 KiB per (source, slot) after everything else.
TEST(SegmentLayout, NotificationStampsOnlyForVirtualTime) {
    const SegmentLayout plain = SegmentLayout::compute(16, 1 << 20);
    const SegmentLayout stamped = SegmentLayout::compute(16, 1 << 20, true);
    EXPECT_EQ(plain.stamp_offset, 0u);
    EXPECT_EQ(stamped.stamp_offset, plain.total_size);
    EXPECT_GE(stamped.total_size, plain.total_size + 16u * TCA_NOTIFY_SLOTS * 1024u);
    EXPECT_EQ(sizeof(NotifyStamps), kNotifyTags * kStampRing * sizeof(int64_t));
    EXPECT_EQ(stamped.internal_offset, plain.internal_offset);  // the hot parts stay put
}
}  // namespace
}  // namespace tca::loopback
