// window_registrations_test.cpp - btl tca's registrations of window memory
// (tca-btl/window_registrations.hpp) on a one-node loopback device: memory
// given back ends exactly the registrations that overlap it, from a
// memory-release hook (nothing allocated there), and the window's own
// deregistration afterwards ends nothing else.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tca.h"
#include "window_registrations.hpp"

namespace {

using tca::btl::WindowRegistrations;

class WindowRegistrationsTest : public ::testing::Test {
protected:
    void SetUp() override {
        key_ = "windows-" + std::to_string(getpid());
        const tcaInitParams params{key_.c_str(), 0, 1};
        ASSERT_EQ(tcaInitWithParams(&params), tcaSuccess);
    }
    void TearDown() override { EXPECT_EQ(tcaFinalize(), tcaSuccess); }
    // A put of a byte into h at off, as a peer's would be (a PIO write).
    static tcaResult put_byte(tcaHandle h, uint64_t off) {
        const unsigned char b = 0x5a;
        return tcaPioWrite(&h, static_cast<off_t>(off), &b, 1, 0, 0, 0);
    }
    std::string key_;
};

TEST_F(WindowRegistrationsTest, MemoryGivenBackEndsOnlyTheRegistrationsOnIt) {
    WindowRegistrations windows(8);
    // Two windows in one buffer, a gap of 1 KiB before, between and after.
    std::vector<unsigned char> mem(4 * 1024);
    unsigned char *a = mem.data() + 1024, *b = mem.data() + 2560;
    const size_t len = 512;
    tcaHandle ha{}, hb{};
    uint32_t sa = 0, sb = 0;
    ASSERT_EQ(windows.add(a, len, &ha, &sa), tcaSuccess);
    ASSERT_EQ(windows.add(b, len, &hb, &sb), tcaSuccess);
    EXPECT_EQ(windows.live(), 2u);
    EXPECT_EQ(put_byte(ha, 0), tcaSuccess);
    // Bytes just before a, and just after it: not its memory (page rounding
    // would take them for it).
    windows.released(reinterpret_cast<uintptr_t>(a) - 64, 64);
    windows.released(reinterpret_cast<uintptr_t>(a) + len, 64);
    EXPECT_EQ(windows.revoked(), 0u);
    EXPECT_EQ(put_byte(ha, 0), tcaSuccess);
    // One byte of a: a goes, b stays.
    windows.released(reinterpret_cast<uintptr_t>(a) + 100, 1);
    EXPECT_EQ(windows.revoked(), 1u);
    EXPECT_EQ(put_byte(ha, 0), tcaErrorNotRegistered);
    EXPECT_EQ(put_byte(hb, 0), tcaSuccess);
    // The window lets go of both: a's ended already (its table slot may be
    // someone else's now), b's ends here.
    tcaHandle other{};
    std::vector<unsigned char> c(64);
    ASSERT_EQ(tcaCreateHandle(&other, c.data(), c.size(), tcaMemoryCPU), tcaSuccess);
    windows.remove(sa);
    windows.remove(sb);
    EXPECT_EQ(windows.live(), 0u);
    EXPECT_EQ(put_byte(hb, 0), tcaErrorNotRegistered);
    EXPECT_EQ(put_byte(other, 0), tcaSuccess);  // a newer registration is left alone
    EXPECT_EQ(tcaDestroyHandle(&other), tcaSuccess);
    EXPECT_EQ(tcaDestroyHandle(&ha), tcaErrorNotRegistered);  // ended once
}

TEST_F(WindowRegistrationsTest, SlotsAreReusedAndRunOut) {
    WindowRegistrations windows(2);
    std::vector<unsigned char> m(256);
    tcaHandle h[3];
    uint32_t s[3];
    ASSERT_EQ(windows.add(m.data(), 64, &h[0], &s[0]), tcaSuccess);
    ASSERT_EQ(windows.add(m.data() + 64, 64, &h[1], &s[1]), tcaSuccess);
    EXPECT_EQ(windows.add(m.data() + 128, 64, &h[2], &s[2]), tcaErrorNoResource);
    windows.remove(s[0]);
    ASSERT_EQ(windows.add(m.data() + 128, 64, &h[2], &s[2]), tcaSuccess);
    EXPECT_EQ(s[2], s[0]);
    windows.remove(s[1]);
    windows.remove(s[2]);
    windows.remove(s[2]);  // twice: nothing happens
    EXPECT_EQ(windows.live(), 0u);
}

// munmap of memory that a window still names, while other threads register
// and deregister windows: every registration on the unmapped pages ends,
// none elsewhere (TSan build too).
TEST_F(WindowRegistrationsTest, ReleasesRaceWithRegistrations) {
    WindowRegistrations windows(64);
    constexpr size_t kPage = 4096;
    std::vector<unsigned char> kept(kPage);
    std::thread churn([&] {
        for (int i = 0; i < 2000; ++i) {
            tcaHandle h{};
            uint32_t s = 0;
            if (windows.add(kept.data(), kept.size(), &h, &s) == tcaSuccess)
                windows.remove(s);
        }
    });
    for (int round = 0; round < 200; ++round) {
        void *p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(p, MAP_FAILED);
        tcaHandle h{};
        uint32_t s = 0;
        ASSERT_EQ(windows.add(p, kPage, &h, &s), tcaSuccess);
        windows.released(reinterpret_cast<uintptr_t>(p), kPage);  // what the hook says
        ASSERT_EQ(munmap(p, kPage), 0);
        EXPECT_EQ(put_byte(h, 0), tcaErrorNotRegistered);
        windows.remove(s);
    }
    churn.join();
    EXPECT_EQ(windows.revoked(), 200u);
    EXPECT_EQ(windows.live(), 0u);
}

}  // namespace
