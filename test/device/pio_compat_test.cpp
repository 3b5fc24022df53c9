// pio_compat_test.cpp - the published PIO API (tca-api.h): windows whose
// writes run past the declared size but stay inside the registration, the
// registration as the bound, and a message's final 8-byte word (a polled
// marker) becoming visible only after the rest of the message.
#include <atomic>
#include <cstring>
#include <vector>

#include "harness.hpp"
#include "tca-api.h"

namespace tca::test {
namespace {

constexpr size_t kStride = 64;
constexpr int kSteps = 4;  // the registration holds kSteps windows of kStride

int window_offsets(int node, Board &board) {
    const size_t total = kStride * kSteps;
    PairBuffers b = exchange_buffers(node, board, total, tcaMemoryCPU);
    if (node == 0) {
        tcaPIOHandle pio;
        // Declared as one stride, as published allreduces do; step i writes at i * stride.
        NODE_OK(tcaSetPIORegion(&pio, &b.peer, 0, kStride));
        for (int i = 0; i < kSteps; ++i) {
            unsigned char msg[kStride];
            std::memset(msg, 0x10 + i, sizeof msg);
            NODE_OK(tcaSendPIO(&pio, static_cast<size_t>(i) * kStride, msg, sizeof msg));
        }
        tcaSendPIOCommit();
        unsigned char one = 0;
        // Past the registration: refused, nothing written.
        NODE_EXPECT_RESULT(tcaErrorOutOfRange, tcaSendPIO(&pio, total, &one, 1));
        NODE_EXPECT_RESULT(tcaErrorOutOfRange, tcaSendPIO(&pio, total - 4, &one, 8));
        NODE_EXPECT_RESULT(tcaErrorOutOfRange, tcaSetPIORegion(&pio, &b.peer, total + 1, 0));
        NODE_EXPECT_RESULT(tcaErrorOutOfRange, tcaSetPIORegion(&pio, &b.peer, kStride, total));
        NODE_EXPECT_RESULT(tcaErrorOutOfRange, tcaSetPIORegion(&pio, &b.peer, -1, 8));
        NODE_EXPECT_RESULT(tcaErrorInvalidHandle, tcaSetPIORegion(&pio, nullptr, 0, 8));
        // A window that starts inside: offsets are relative to its start.
        NODE_OK(tcaSetPIORegion(&pio, &b.peer, 2 * kStride, 8));
        unsigned char last[kStride];
        std::memset(last, 0x7f, sizeof last);
        NODE_OK(tcaSendPIO(&pio, kStride, last, sizeof last));
        NODE_EXPECT_RESULT(tcaErrorOutOfRange, tcaSendPIO(&pio, kStride, last, sizeof last + 1));
        NODE_OK(tcaDMADescInt_Init());
    }
    board.barrier();
    if (node == 1) {
        const auto *p = static_cast<const unsigned char *>(b.buf);
        for (size_t i = 0; i < total; ++i) {
            const unsigned char want = i >= 3 * kStride ? 0x7f : static_cast<unsigned char>(0x10 + i / kStride);
            if (p[i] != want) {
                std::fprintf(stderr, "byte %zu: %#x, want %#x\n", i, p[i], want);
                return 1;
            }
        }
    }
    return 0;
}

TEST(PioCompat, WindowOffsetsPastDeclaredSizeInsideRegistration) {
    EXPECT_TRUE(run_nodes(2, window_offsets));
}

// node 0 sends messages of growing size whose last 8 bytes are the marker
// 255; node 1 polls the marker, then checks every other byte is already
// this message's, clears the marker and acknowledges through the board.
int marker_last(int node, Board &board) {
    const std::vector<size_t> sizes = {16, 72, 4104, 65544, 1 << 20};
    const size_t cap = 1 << 20;
    PairBuffers b = exchange_buffers(node, board, cap, tcaMemoryCPU);
    std::atomic<int> &acked = board.value[0];
    int round = 0;
    for (int rep = 0; rep < 20; ++rep) {
        for (size_t size : sizes) {
            ++round;
            const size_t body = size - 8;
            if (node == 0) {
                tcaPIOHandle pio;
                NODE_OK(tcaSetPIORegion(&pio, &b.peer, 0, 64));
                auto *msg = static_cast<unsigned char *>(b.buf);
                std::memset(msg, round & 0xff, body);
                const uint64_t marker = 255;
                std::memcpy(msg + body, &marker, 8);
                NODE_OK(tcaSendPIO(&pio, 0, msg, size));
                tcaSendPIOCommit();
                while (acked.load(std::memory_order_acquire) != round) {
                }
            } else {
                auto *p = static_cast<unsigned char *>(b.buf);
                std::atomic_ref<uint64_t> marker(*reinterpret_cast<uint64_t *>(p + body));
                while (marker.load(std::memory_order_acquire) != 255) {
                }
                for (size_t i = 0; i < body; ++i) {
                    if (p[i] != (round & 0xff)) {
                        std::fprintf(stderr, "round %d, %zu B: marker seen before byte %zu\n", round, size, i);
                        return 1;
                    }
                }
                marker.store(0, std::memory_order_relaxed);
                acked.store(round, std::memory_order_release);
            }
        }
    }
    return 0;
}

TEST(PioCompat, MarkerWordVisibleLast) { EXPECT_TRUE(run_nodes(2, marker_last)); }

TEST(PioCompat, MarkerWordVisibleLastOnBouncePath) {
    NodeOptions opt;
    opt.env = "TCA_SINGLE_COPY=0";
    EXPECT_TRUE(run_nodes(2, marker_last, opt));
}

}  // namespace
}  // namespace tca::test
