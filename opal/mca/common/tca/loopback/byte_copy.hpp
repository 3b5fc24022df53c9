// byte_copy.hpp - the CPU copies of the loopback data path: every store a put
// makes into another node's memory goes through here.
#pragma once

#include <cstdint>

namespace tca::loopback {

// The last word of the copy is stored exactly once, after the rest (programs
// poll a flag in a put's last word and clear it themselves).
void copy_bytes(unsigned char *dst, const unsigned char *src, uint64_t n);
// The same with non-temporal stores for the bulk: for runs larger than the
// last-level cache, where caching the destination only evicts what the
// next copy needs (glibc's memcpy switches likewise, but it sees one
// descriptor's piece at a time, never the run).
void copy_streaming(unsigned char *dst, const unsigned char *src, uint64_t n);
// Rows of a block-stride copy (height 1: one contiguous copy).
void copy_rows(unsigned char *dst, uint64_t dst_pitch, const unsigned char *src, uint64_t src_pitch,
               uint64_t width, uint64_t height, bool streaming);
// Bytes in one DMA run from which its copies stream: the last-level cache's
// size, at most twice this core's L2 and at most 8 MiB (TCA_STREAMING_MIN
// overrides it).
uint64_t streaming_threshold() noexcept;

}  // namespace tca::loopback
