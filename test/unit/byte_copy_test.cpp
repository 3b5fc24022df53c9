// byte_copy_test.cpp - the loopback's CPU copies land every byte and nothing
// past the end, at any alignment of source and destination: plain copies and
// the non-temporal copy used for runs larger than the cache.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "loopback/byte_copy.hpp"

namespace tca::loopback {
namespace {

void expect_exact_copy(void (*copy)(unsigned char *, const unsigned char *, uint64_t)) {
    const uint64_t sizes[] = {0, 1, 7, 8, 63, 64, 4095, 4096, 4097, 65536 + 13, (1 << 20) + 7};
    std::vector<unsigned char> src((1 << 20) + 64), dst((1 << 20) + 128);
    for (size_t i = 0; i < src.size(); ++i)
        src[i] = static_cast<unsigned char>(i * 131 + 7);
    for (uint64_t n : sizes)
        for (size_t so : {0, 1, 8, 15})
            for (size_t d_off : {0, 3, 16, 33}) {
                std::memset(dst.data(), 0xee, dst.size());
                copy(dst.data() + d_off, src.data() + so, n);
                ASSERT_EQ(std::memcmp(dst.data() + d_off, src.data() + so, n), 0)
                    << n << " bytes, +" << so << " -> +" << d_off;
                for (size_t k = 0; k < d_off; ++k)
                    ASSERT_EQ(dst[k], 0xee);  // nothing before
                ASSERT_EQ(dst[d_off + n], 0xee) << n << " bytes: one past the end";
            }
}

TEST(ByteCopy, PlainCopyIsExact) {
    expect_exact_copy(copy_bytes);
}
TEST(ByteCopy, StreamingCopyIsExact) {
    expect_exact_copy(copy_streaming);
}

TEST(ByteCopy, RowsKeepTheirPitch) {
    std::vector<unsigned char> src(64 * 100), dst(96 * 100, 0);
    for (size_t i = 0; i < src.size(); ++i)
        src[i] = static_cast<unsigned char>(i);
    for (bool streaming : {false, true}) {
        std::fill(dst.begin(), dst.end(), 0);
        copy_rows(dst.data(), 96, src.data(), 64, 50, 100, streaming);
        for (size_t r = 0; r < 100; ++r) {
            ASSERT_EQ(std::memcmp(dst.data() + r * 96, src.data() + r * 64, 50), 0);
            ASSERT_EQ(dst[r * 96 + 50], 0);
        }
    }
}

TEST(ByteCopy, StreamingStartsBeyondTheCaches) {
    const uint64_t t = streaming_threshold();
    EXPECT_GE(t, uint64_t{1} << 20);
    EXPECT_LE(t, uint64_t{8} << 20);
    if (const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE); l2 >= (512 << 10)) {
        EXPECT_LE(t, 2 * static_cast<uint64_t>(l2));
    }
}

}  // namespace
}  // namespace tca::loopback
