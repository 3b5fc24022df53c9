// byte_copy.cpp - see byte_copy.hpp.
#include "loopback/byte_copy.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#if defined(__x86_64__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

namespace tca::loopback {

// The last word of a copy is stored exactly once, after the rest.  glibc's
// memcpy writes with overlapping stores (8..15 bytes: the first and the last
// 8, so an 8-byte copy stores the same word twice; longer copies rewrite
// their tail).  Programs poll a flag word that a PIO or DMA write sets and
// then clear it themselves (the published PIO marker protocol, tcaSendPIO's
// final word): a clear landing between two stores of the flag is undone by
// the second, and the next wait passes at once on stale data (seen as about
// 1 run in 20 of test/tca-api/pio_allreduce).  Short copies go out as
// non-overlapping constant-size pieces in address order, one store each (an
// aligned word is never torn); long ones as memcpy of all but the last 8
// bytes, then those 8 bytes in one store.
void copy_bytes(unsigned char *dst, const unsigned char *src, uint64_t n) {
    if (n >= 64) {
        std::memcpy(dst, src, n - 8);
        __builtin_memcpy(dst + n - 8, src + n - 8, 8);
        return;
    }
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8)
        __builtin_memcpy(dst + i, src + i, 8);
    if (i + 4 <= n)
        __builtin_memcpy(dst + i, src + i, 4), i += 4;
    if (i + 2 <= n)
        __builtin_memcpy(dst + i, src + i, 2), i += 2;
    if (i < n)
        dst[i] = src[i];
}

// Non-temporal 16-byte stores (SSE2, every x86-64) from dst's first 16-byte
// boundary, four pages at a time with their loads interleaved and prefetched
// (as glibc's large memcpy: for runs far beyond the cache, copied in 1 MiB
// pieces, this beat both the plain 64-byte loop and memcpy of the
// pieces).  The head, and a tail that holds the last word, go through
// copy_bytes after a fence, so the last word is still stored last.
namespace {
#if defined(__x86_64__)
inline void stream64(unsigned char *dst, const unsigned char *src) {
    const auto *s = reinterpret_cast<const __m128i *>(src);
    auto *d = reinterpret_cast<__m128i *>(dst);
    const __m128i a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1), c = _mm_loadu_si128(s + 2),
                  e = _mm_loadu_si128(s + 3);
    _mm_stream_si128(d, a);
    _mm_stream_si128(d + 1, b);
    _mm_stream_si128(d + 2, c);
    _mm_stream_si128(d + 3, e);
}
#endif
}  // namespace

void copy_streaming(unsigned char *dst, const unsigned char *src, uint64_t n) {
#if defined(__x86_64__)
    constexpr uint64_t kMin = 4096;  // below this the fence costs more than the cache it saves
    constexpr uint64_t kPage = 4096, kBlock = 4 * kPage;
    if (n >= kMin) {
        const uint64_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
        const uint64_t body =
            (n - head - 8) & ~uint64_t{63};  // whole 64-byte blocks, the last word left out
        copy_bytes(dst, src, head);
        unsigned char *d = dst + head;
        const unsigned char *s = src + head;
        uint64_t done = 0;
        for (; done + kBlock <= body; done += kBlock)
            for (uint64_t off = 0; off < kPage; off += 64)
                for (uint64_t p = 0; p < 4; ++p) {
                    const unsigned char *from = s + done + p * kPage + off;
                    _mm_prefetch(reinterpret_cast<const char *>(from) + 256, _MM_HINT_T0);
                    stream64(d + done + p * kPage + off, from);
                }
        for (; done < body; done += 64)
            stream64(d + done, s + done);
        _mm_sfence();  // the streamed bytes before the tail (and its last word)
        copy_bytes(d + body, s + body, n - head - body);
        return;
    }
#endif
    copy_bytes(dst, src, n);
}

void copy_rows(unsigned char *dst, uint64_t dst_pitch, const unsigned char *src, uint64_t src_pitch,
               uint64_t width, uint64_t height, bool streaming) {
    const auto copy = streaming ? copy_streaming : copy_bytes;
    if (height == 1 || (dst_pitch == width && src_pitch == width)) {
        copy(dst, src, width * height);
        return;
    }
    for (uint64_t r = 0; r < height; ++r)
        copy(dst + r * dst_pitch, src + r * src_pitch, width);
}

// The last-level cache is shared with every other core, and a VM reports its
// host's whole cache, far more than its own cores can keep (streaming won
// long before a run filled it): at most 8 MiB, and at most twice this core's
// L2 - a run that overflows L2 mostly misses anyway, so streaming it beats
// memcpy (docs/results.md).
uint64_t streaming_threshold() noexcept {
    static const uint64_t threshold = [] {
        uint64_t t = uint64_t{8} << 20;
        if (const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE); llc > 0)
            t = std::min(t, static_cast<uint64_t>(llc));
        if (const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE); l2 > 0)
            t = std::min(t, 2 * static_cast<uint64_t>(l2));
        return std::max(t, uint64_t{1} << 20);
    }();
    return threshold;
}

}  // namespace tca::loopback
