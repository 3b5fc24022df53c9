// row_copy.hpp - one copy a put asks of a write mechanism: rows of bytes
// from local memory to an offset of the destination (remote_writer.hpp).
#pragma once

#include <cstdint>

namespace tca::loopback {

struct RowCopy {  // a contiguous (height 1) or block-stride transfer
    const unsigned char *src;
    uint64_t src_pitch;
    uint64_t dst_off;
    uint64_t dst_pitch;
    uint64_t width;
    uint64_t height;
    bool src_on_gpu;
    bool streaming =
        false;  // part of a run larger than the cache: non-temporal stores (byte_copy.hpp)
    bool by_pio = false;  // a PIO write (its thread waits for it), not a DMA run
};

}  // namespace tca::loopback
