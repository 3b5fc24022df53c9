// published_api_test.cpp - the published API of tca-api.h beyond tca.h:
// PIO windows whose writes run past the declared size but stay inside the
// registration (the registration is the bound), a message's final 8-byte
// word (a polled marker) becoming visible only after the rest of the
// message, the historical tcaDMAContinue flag, and GPU pointers registered
// as tcaMemoryCPU (what tcaCreateHandleList does) becoming GPU handles.
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
            const unsigned char want =
                i >= 3 * kStride ? 0x7f : static_cast<unsigned char>(0x10 + i / kStride);
            if (p[i] != want) {
                std::fprintf(stderr, "byte %zu: %#x, want %#x\n", i, p[i], want);
                return 1;
            }
        }
    }
    return 0;
}

TEST(PublishedApi, WindowOffsetsPastDeclaredSizeInsideRegistration) {
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
                        std::fprintf(stderr, "round %d, %zu B: marker seen before byte %zu\n",
                                     round, size, i);
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

TEST(PublishedApi, MarkerWordVisibleLast) {
    EXPECT_TRUE(run_nodes(2, marker_last));
}

TEST(PublishedApi, MarkerWordVisibleLastOnBouncePath) {
    NodeOptions opt;
    opt.env = "TCA_SINGLE_COPY=0";
    EXPECT_TRUE(run_nodes(2, marker_last, opt));
}

// Before tcaInit, and with NULL where a window or message belongs.
TEST(PublishedApi, PioArgumentsAndInitialisation) {
    NodeOptions opt;
    opt.init = false;
    EXPECT_TRUE(run_nodes(
        1,
        [](int node, Board &board) {
            tcaPIOHandle pio{};
            tcaHandle h{};
            char c = 0;
            NODE_EXPECT_RESULT(tcaErrorNotInitialized, tcaSetPIORegion(&pio, &h, 0, 8));
            NODE_EXPECT_RESULT(tcaErrorNotInitialized, tcaSendPIO(&pio, 0, &c, 1));
            NODE_EXPECT_RESULT(tcaErrorNotInitialized, tcaDMADescInt_Init());
            NODE_CHECK(tcaSendPIOCommit() == TCA_SUCCESS);
            NODE_OK(tcaInit());
            void *buf = nullptr;
            NODE_OK(tcaMalloc(&buf, 64, tcaMemoryCPU));
            NODE_OK(tcaCreateHandle(&h, buf, 64, tcaMemoryCPU));
            NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaSetPIORegion(nullptr, &h, 0, 8));
            NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaSendPIO(nullptr, 0, &c, 1));
            NODE_OK(tcaSetPIORegion(&pio, &h, 0, 8));  // a window on our own memory works too
            NODE_EXPECT_RESULT(tcaErrorInvalidValue, tcaSendPIO(&pio, 0, nullptr, 1));
            NODE_OK(tcaSendPIO(&pio, 0, nullptr, 0));
            const char msg[16] = "fifteen chars..";
            NODE_OK(tcaSendPIO(&pio, 48, const_cast<char *>(msg), sizeof msg));
            NODE_CHECK(std::memcmp(static_cast<char *>(buf) + 48, msg, sizeof msg) == 0);
            tcaHandle forged = h;
            forged.magic = 0;
            NODE_EXPECT_RESULT(tcaErrorInvalidHandle, tcaSetPIORegion(&pio, &forged, 0, 8));
            NODE_OK(tcaDMADescInt_Init());
            NODE_OK(tcaDestroyHandle(&h));
            NODE_OK(tcaFree(buf, tcaMemoryCPU));
            board.end_barrier(node);
            NODE_OK(tcaFinalize());
            return 0;
        },
        opt));
}

// Historical chains flag every descriptor but the last with tcaDMAContinue.
TEST(PublishedApi, ContinueFlagAccepted) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        const size_t size = 4096;
        PairBuffers b = exchange_buffers(node, board, 2 * size, tcaMemoryCPU);
        if (node == 0) {
            fill_pattern(b.buf, 2 * size, 5);
            const tcaDMAFlag f = tcaDMAUseInternal | tcaDMAUseNotifyInternal | tcaDMANotify;
            tcaDesc *d = tcaDescNew();
            NODE_OK(
                tcaDescSetMemcpy(d, &b.peer, 0, &b.mine, 0, size, f | tcaDMAContinue, 0, 0x100));
            NODE_OK(tcaDescSetMemcpy(d, &b.peer, size, &b.mine, size, size, f, 0, 0x100));
            NODE_OK(tcaDescSet(d, 0));
            NODE_OK(tcaStartDMADesc(0));
            NODE_OK(tcaWaitDMAC(0));
            NODE_OK(tcaDescFree(d));
        } else {
            NODE_OK(tcaWaitDMARecvDesc(&b.peer, 0, 0x100));
            NODE_OK(tcaWaitDMARecvDesc(&b.peer, 0, 0x100));
            NODE_CHECK(check_pattern(b.buf, 2 * size, 5));
        }
        return 0;
    }));
}

// tcaCreateHandleList registers whatever pointer it is given as
// tcaMemoryCPU; tcaCreateHandle must recognise tcaMalloc'd GPU memory
// (interior pointers included) and make a GPU handle of it.
TEST(PublishedApi, GpuPointerPassedAsCpuIsRegisteredAsGpu) {
    // Probe in a child: CUDA must not be initialised in the parent before fork().
    const bool usable = run_nodes(1, [](int, Board &) {
        void *p = nullptr;
        const tcaResult rc = tcaMalloc(&p, 4096, tcaMemoryGPU);
        if (rc == tcaSuccess)
            tcaFree(p, tcaMemoryGPU);
        return rc == tcaSuccess ? 0 : 7;
    });
    if (!usable)
        GTEST_SKIP() << "no usable CUDA device (tcaMalloc(tcaMemoryGPU) failed)";
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        const size_t size = 1 << 20, inner = 4096;
        void *dev = nullptr, *host = nullptr;
        NODE_OK(tcaMalloc(&dev, size, tcaMemoryGPU));
        NODE_OK(tcaMalloc(&host, size, tcaMemoryCPU));
        tcaHandle whole, part, hhost;
        NODE_OK(tcaCreateHandle(&whole, dev, size, tcaMemoryCPU));
        NODE_OK(
            tcaCreateHandle(&part, static_cast<char *>(dev) + inner, size - inner, tcaMemoryCPU));
        NODE_OK(tcaCreateHandle(&hhost, host, size, tcaMemoryCPU));
        NODE_CHECK(whole.region == tcaMemoryGPU && part.region == tcaMemoryGPU &&
                   hhost.region == tcaMemoryCPU);
        board.publish(node, 0, part);
        board.publish(node, 1, hhost);
        board.barrier();
        if (node == 0) {  // host -> node 1's interior GPU handle -> back to our host buffer
            fill_pattern(host, 8192, 9);
            tcaHandle peer_part = board.get(1, 0);
            tcaDesc *d = tcaDescNew();
            NODE_OK(tcaDescSetMemcpy(d, &peer_part, 0, &hhost, 0, 8192, tcaDMANotify, 0, 1));
            NODE_OK(tcaDescSet(d, 0));
            NODE_OK(tcaStartDMADesc(0));
            NODE_OK(tcaWaitDMAC(0));
            NODE_OK(tcaDescFree(d));
            std::memset(host, 0, 8192);
            tcaHandle peer_host = board.get(1, 1);
            NODE_OK(tcaWaitDMARecvDesc(&peer_host, 1, 2));
            NODE_CHECK(check_pattern(host, 8192, 9));
        } else {
            tcaHandle peer_host = board.get(0, 1);
            NODE_OK(tcaWaitDMARecvDesc(&peer_host, 0, 1));
            tcaDesc *d = tcaDescNew();  // back from the whole-allocation handle at the same place
            NODE_OK(tcaDescSetMemcpy(d, &peer_host, 0, &whole, inner, 8192, tcaDMANotify, 1, 2));
            NODE_OK(tcaDescSet(d, 0));
            NODE_OK(tcaStartDMADesc(0));
            NODE_OK(tcaWaitDMAC(0));
            NODE_OK(tcaDescFree(d));
        }
        board.barrier();
        NODE_OK(tcaFree(dev, tcaMemoryGPU));
        return 0;
    }));
}

}  // namespace
}  // namespace tca::test
