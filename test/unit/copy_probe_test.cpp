// copy_probe_test.cpp - TCA_SINGLE_COPY=auto's measurement and its rule.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "loopback/copy_probe.hpp"

using tca::loopback::CopyProbe;
using tca::loopback::describe;
using tca::loopback::kSingleCopyMaxRatio;
using tca::loopback::probe_copies;
using tca::loopback::single_copy_pays;

// Both copies are timed (or the refusal of process_vm_writev is named).
TEST(CopyProbe, TimesBothCopiesOrNamesTheRefusal) {
    const CopyProbe p = probe_copies(64 * 1024, 3);
    EXPECT_EQ(p.bytes, 64u * 1024);
    EXPECT_GT(p.memcpy_us, 0.0);
    const std::string text = describe(p);
    if (p.error == 0) {
        EXPECT_GT(p.single_copy_us, 0.0);
        EXPECT_NE(text.find("CMA "), std::string::npos) << text;
        EXPECT_NE(text.find(" / 64 KiB"), std::string::npos) << text;
    } else {  // a host whose ptrace rules refuse it (containers): the bounce path
        EXPECT_FALSE(single_copy_pays(p));
        EXPECT_NE(text.find("refused"), std::string::npos) << text;
    }
}

// Single copy while it costs at most kSingleCopyMaxRatio memcpys; never
// where the kernel refused it.
TEST(CopyProbe, SingleCopyPaysUpToTheRatio) {
    CopyProbe p;
    p.bytes = 256 * 1024;
    p.memcpy_us = 2.0;
    p.single_copy_us = 2.0 * kSingleCopyMaxRatio;
    EXPECT_TRUE(single_copy_pays(p));
    p.single_copy_us = 1.0;
    EXPECT_TRUE(single_copy_pays(p));
    p.single_copy_us = 2.0 * kSingleCopyMaxRatio + 0.1;
    EXPECT_FALSE(single_copy_pays(p));
    p.single_copy_us = 15.0;  // a host where pinning is dear: 15 us against 2 us per 256 KiB
    EXPECT_FALSE(single_copy_pays(p));
    p.single_copy_us = 1.0;
    p.error = EPERM;
    EXPECT_FALSE(single_copy_pays(p));
    EXPECT_EQ(describe(p), "process_vm_writev refused: " + std::string(std::strerror(EPERM)));
}
