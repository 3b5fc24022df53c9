// data_path_test.cpp - PIO and DMA put correctness: sizes 1 B - 64 MiB (odd
// ones included), chains of 1/16/17/255 descriptors, block-stride, 4 channels
// at once, the bounce path, and the published "reuse one chain" pattern.
#include <cstring>
#include <vector>

#include "harness.hpp"

namespace tca::test {
namespace {

constexpr int kRecvSlot = 0;  // board slot of node 1's receive buffer handle
constexpr int kAckSlot = 1;   // board slot of an "any handle" of node 0 (for acks)

// Sizes around every interesting boundary, up to 64 MiB.
const std::vector<size_t> kSizes = {1,        2,
                                    7,        8,
                                    63,       64,
                                    65,       4095,
                                    4096,     4097,
                                    65535,    65536,
                                    262143,   262145,
                                    1 << 20,  (3 << 20) + 5,
                                    16 << 20, (64 << 20) - 3,
                                    64 << 20};

// node 0 -> node 1: for each size, put by DMA (and PIO for small sizes) into
// node 1's memory of `type`; node 1 checks every byte and acknowledges.
int put_sizes(int node, Board &board, tcaMemoryType type, size_t max_size, bool use_pio) {
    const size_t cap = max_size;
    const tcaMemoryType my_type = node == 0 ? tcaMemoryCPU : type;  // the source is host memory
    void *buf = nullptr;
    NODE_OK(tcaMalloc(&buf, cap, my_type));
    tcaHandle mine;
    NODE_OK(tcaCreateHandle(&mine, buf, cap, my_type));
    board.publish(node, node == 0 ? kAckSlot : kRecvSlot, mine);
    board.barrier();
    tcaHandle peer = board.get(1 - node, node == 0 ? kRecvSlot : kAckSlot);
    uint32_t seed = 1;
    for (size_t size : kSizes) {
        if (size > cap)
            continue;
        for (int via_pio = 0; via_pio <= (use_pio && size <= 65536 ? 1 : 0); ++via_pio, ++seed) {
            if (node == 0) {
                fill_pattern(buf, size, seed);
                if (via_pio) {
                    NODE_OK(
                        tcaPioWrite(&peer, 0, buf, size, tcaDMANotify, 3, static_cast<int>(seed)));
                } else {
                    tcaDesc *d = tcaDescNew();
                    NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &mine, 0, size, tcaDMANotify, 3,
                                             static_cast<int>(seed)));
                    NODE_OK(tcaDescSet(d, 0));
                    NODE_OK(tcaStartDMADesc(0));
                    NODE_OK(tcaWaitDMAC(0));
                    NODE_OK(tcaDescFree(d));
                }
                NODE_OK(tcaWaitDMARecvDesc(&peer, 4, static_cast<int>(seed)));  // node 1 checked it
            } else {
                NODE_OK(tcaWaitDMARecvDesc(&peer, 3, static_cast<int>(seed)));
                size_t bad = 0;
                if (!check_pattern(buf, size, seed, &bad)) {
                    std::fprintf(stderr, "size %zu (%s): byte %zu wrong\n", size,
                                 via_pio ? "PIO" : "DMA", bad);
                    return 1;
                }
                char one = 0;
                NODE_OK(tcaPioWrite(&peer, 0, &one, 0, tcaDMANotify, 4, static_cast<int>(seed)));
            }
        }
    }
    NODE_OK(tcaDestroyHandle(&mine));
    NODE_OK(tcaFree(buf, my_type));
    return 0;
}

TEST(DataPath, HostMemoryAllSizes) {
    EXPECT_TRUE(run_nodes(
        2, [](int node, Board &b) { return put_sizes(node, b, tcaMemoryCPU, 64 << 20, true); }));
}

TEST(DataPath, InternalMemoryAllSizes) {
    NodeOptions opt;
    opt.env = "TCA_INTERNAL_SIZE=20M";
    EXPECT_TRUE(run_nodes(
        2, [](int node, Board &b) { return put_sizes(node, b, tcaMemoryInternal, 16 << 20, true); },
        opt));
}

TEST(DataPath, BouncePathWhenSingleCopyIsOff) {
    NodeOptions opt;
    opt.env = "TCA_SINGLE_COPY=0";
    EXPECT_TRUE(run_nodes(
        2, [](int node, Board &b) { return put_sizes(node, b, tcaMemoryCPU, 3 << 20, true); },
        opt));
}

// A chain of n descriptors, each moving its own 4 KiB + odd bytes block.
int chain_of(int node, Board &board, int n) {
    const size_t block = 4096 + 17;
    const size_t total = block * static_cast<size_t>(n);
    std::vector<unsigned char> buf(total);
    tcaHandle mine;
    tcaHandle peer = register_and_swap(node, board, buf.data(), total, tcaMemoryCPU, &mine);
    for (int round = 0; round < 3; ++round) {
        if (node == 0) {
            fill_pattern(buf.data(), total, static_cast<uint32_t>(n * 10 + round));
            tcaDesc *d = tcaDescNew();
            NODE_CHECK(d != nullptr);
            for (int i = 0; i < n; ++i) {
                // reverse order, so a chain that ran only its first descriptor fails
                const off_t off = static_cast<off_t>(block) * (n - 1 - i);
                NODE_OK(tcaDescSetMemcpy(d, &peer, off, &mine, off, block,
                                         i == n - 1 ? tcaDMANotify : 0, 1, round));
            }
            int len = 0;
            NODE_OK(tcaDescGetLength(d, &len));
            NODE_CHECK(len == n);
            NODE_OK(tcaDescSet(d, 1));
            NODE_OK(tcaStartDMADesc(1));
            NODE_OK(tcaWaitDMAC(1));
            tcaDescFree(d);
            NODE_OK(tcaWaitDMARecvDesc(&peer, 2, round));
        } else {
            NODE_OK(tcaWaitDMARecvDesc(&peer, 1, round));
            NODE_CHECK(check_pattern(buf.data(), total, static_cast<uint32_t>(n * 10 + round)));
            NODE_OK(tcaPioWrite(&peer, 0, nullptr, 0, tcaDMANotify, 2, round));
        }
    }
    return 0;
}

TEST(DataPath, ChainOf1) {
    EXPECT_TRUE(run_nodes(2, [](int n, Board &b) { return chain_of(n, b, 1); }));
}
TEST(DataPath, ChainOf16RegisterMode) {
    EXPECT_TRUE(run_nodes(2, [](int n, Board &b) { return chain_of(n, b, 16); }));
}
TEST(DataPath, ChainOf17TableMode) {
    EXPECT_TRUE(run_nodes(2, [](int n, Board &b) { return chain_of(n, b, 17); }));
}
TEST(DataPath, ChainOf255) {
    EXPECT_TRUE(run_nodes(2, [](int n, Board &b) { return chain_of(n, b, 255); }));
}

// Block-stride: a 37 x 129 sub-block of a pitched source into a differently
// pitched destination; bytes between the rows must stay untouched.
TEST(DataPath, BlockStride) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        const size_t width = 129, height = 37, src_pitch = 200, dst_pitch = 333;
        const size_t size = dst_pitch * (height + 2);
        std::vector<unsigned char> buf(size, 0xEE);
        tcaHandle mine;
        tcaHandle peer = register_and_swap(node, board, buf.data(), size, tcaMemoryCPU, &mine);
        if (node == 0) {
            fill_pattern(buf.data(), size, 42);
            tcaDesc *d = tcaDescNew();
            NODE_OK(tcaDescSetMemcpy2D(d, &peer, 5, dst_pitch, &mine, 3, src_pitch, width, height,
                                       tcaDMANotify, 0, 7));
            NODE_OK(tcaDescSet(d, 2));
            NODE_OK(tcaStartDMADesc(2));
            NODE_OK(tcaWaitDMAC(2));
            tcaDescFree(d);
        } else {
            NODE_OK(tcaWaitDMARecvDesc(&peer, 0, 7));
            std::vector<unsigned char> src(size);
            fill_pattern(src.data(), size, 42);
            for (size_t i = 0; i < size; ++i) {
                const bool inside =
                    i >= 5 && (i - 5) / dst_pitch < height && (i - 5) % dst_pitch < width;
                const unsigned char want =
                    inside ? src[3 + ((i - 5) / dst_pitch) * src_pitch + (i - 5) % dst_pitch]
                           : 0xEE;
                if (buf[i] != want) {
                    std::fprintf(stderr, "byte %zu: %u, want %u\n", i, buf[i], want);
                    return 1;
                }
            }
        }
        return 0;
    }));
}

// All four channels loaded with their own chains and started together.
TEST(DataPath, FourChannelsAtOnce) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        const size_t part = (1 << 20) + 3;
        std::vector<unsigned char> buf(part * 4);
        tcaHandle mine;
        tcaHandle peer =
            register_and_swap(node, board, buf.data(), buf.size(), tcaMemoryCPU, &mine);
        for (int round = 0; round < 5; ++round) {
            if (node == 0) {
                tcaDesc *d[4];
                for (int ch = 0; ch < 4; ++ch) {
                    fill_pattern(buf.data() + part * ch, part,
                                 static_cast<uint32_t>(ch * 100 + round));
                    d[ch] = tcaDescNew();
                    for (int k = 0; k < 8; ++k) {  // 8 descriptors per channel
                        const size_t piece = part / 8 + (k == 7 ? part % 8 : 0);
                        const off_t off = static_cast<off_t>(part * ch + (part / 8) * k);
                        NODE_OK(tcaDescSetMemcpy(d[ch], &peer, off, &mine, off, piece,
                                                 k == 7 ? tcaDMANotify : 0, 10 + ch, round));
                    }
                    NODE_OK(tcaDescSet(d[ch], ch));
                }
                for (int ch = 0; ch < 4; ++ch)
                    NODE_OK(tcaStartDMADesc(ch));
                for (int ch = 0; ch < 4; ++ch)
                    NODE_OK(tcaWaitDMAC(ch));
                for (auto *x : d)
                    tcaDescFree(x);
                NODE_OK(tcaWaitDMARecvDesc(&peer, 20, round));
            } else {
                for (int ch = 0; ch < 4; ++ch)
                    NODE_OK(tcaWaitDMARecvDesc(&peer, 10 + ch, round));
                for (int ch = 0; ch < 4; ++ch)
                    NODE_CHECK(check_pattern(buf.data() + part * ch, part,
                                             static_cast<uint32_t>(ch * 100 + round)));
                NODE_OK(tcaPioWrite(&peer, 0, nullptr, 0, tcaDMANotify, 20, round));
            }
        }
        return 0;
    }));
}

// The published-program pattern: handles exchanged by value, one chain built
// once and started thousands of times, data checked afterwards.
TEST(DataPath, ReuseOneChainForThousandsOfIterations) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        const size_t size = 8192;
        const int iters = 3000;
        auto [buf, mine, peer] = exchange_buffers(node, board, size, tcaMemoryCPU);
        tcaDesc *d = tcaDescNew();
        NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &mine, 0, size, tcaDMANotify, 0, 0));
        NODE_OK(tcaDescSet(d, 0));
        auto *words = static_cast<uint32_t *>(buf);
        for (int i = 0; i < iters; ++i) {
            if ((i % 2) == node) {  // ping-pong: each side bumps the first word and sends it on
                words[0] = static_cast<uint32_t>(i);
                words[size / 4 - 1] = static_cast<uint32_t>(i) * 3u;
                NODE_OK(tcaStartDMADesc(0));
                NODE_OK(tcaWaitDMAC(0));
            } else {
                NODE_OK(tcaWaitDMARecvDesc(&peer, 0, 0));
                NODE_CHECK(words[0] == static_cast<uint32_t>(i));
                NODE_CHECK(words[size / 4 - 1] == static_cast<uint32_t>(i) * 3u);
            }
        }
        tcaDescFree(d);
        NODE_OK(tcaDestroyHandle(&mine));
        NODE_OK(tcaFree(buf, tcaMemoryCPU));
        return 0;
    }));
}

// tcaDescClear (extension): one descriptor cleared and refilled put after
// put, loaded while the runs started from its earlier contents are still
// queued (1 MiB: not run inline).  Each run moves its own region: a reload
// never changes a chain already started (the engine refills a chain in place
// only when no run holds it).
TEST(DataPath, AClearedDescriptorRefilledWhileEarlierRunsWaitMovesEachRegion) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        constexpr size_t kPart = 1 << 20;
        constexpr int kParts = 6;
        auto [buf, mine, peer] =
            exchange_buffers(node, board, kParts * kPart + kPart, tcaMemoryCPU);
        for (int round = 0; round < 3; ++round) {
            const uint32_t seed = 100 + static_cast<uint32_t>(round);
            if (node == 0) {
                for (int p = 0; p < kParts; ++p)
                    fill_pattern(static_cast<char *>(buf) + p * kPart, kPart, seed + p);
                tcaDesc *d = tcaDescNew();
                for (int p = 0; p < kParts; ++p) {
                    NODE_OK(tcaDescClear(d));
                    const off_t off = static_cast<off_t>(p * kPart);
                    NODE_OK(tcaDescSetMemcpy(d, &peer, off, &mine, off, kPart, tcaDMANotify, 1, p));
                    int len = 0;
                    NODE_OK(tcaDescGetLength(d, &len));
                    NODE_CHECK(len == 1);
                    NODE_OK(tcaDescSet(d, 2));
                    NODE_OK(tcaStartDMADesc(2));  // no wait: the earlier runs are still queued
                }
                NODE_OK(tcaWaitDMAC(2));
                NODE_OK(tcaDescFree(d));
                NODE_OK(tcaWaitDMARecvDesc(&peer, 2, round));  // node 1 checked them
            } else {
                std::memset(static_cast<char *>(buf) + kParts * kPart, 0x5a, kPart);
                for (int p = 0; p < kParts; ++p)
                    NODE_OK(tcaWaitDMARecvDesc(&peer, 1, p));
                for (int p = 0; p < kParts; ++p) {
                    size_t bad = 0;
                    if (!check_pattern(static_cast<char *>(buf) + p * kPart, kPart, seed + p,
                                       &bad)) {
                        std::fprintf(stderr, "round %d region %d: byte %zu wrong\n", round, p, bad);
                        return 1;
                    }
                }
                const auto *tail = static_cast<const unsigned char *>(buf) + kParts * kPart;
                for (size_t i = 0; i < kPart; ++i)
                    NODE_CHECK(tail[i] == 0x5a);
                char one = 0;
                NODE_OK(tcaPioWrite(&peer, 0, &one, 0, tcaDMANotify, 2, round));
            }
        }
        NODE_OK(tcaDestroyHandle(&mine));
        NODE_OK(tcaFree(buf, tcaMemoryCPU));
        return 0;
    }));
}

// Self-notify: the source waits on its own handle for local completion.
TEST(DataPath, SelfNotifyMeansLocalCompletion) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        const size_t size = 1 << 20;
        std::vector<unsigned char> buf(size);
        tcaHandle mine;
        tcaHandle peer = register_and_swap(node, board, buf.data(), size, tcaMemoryCPU, &mine);
        if (node == 0) {
            fill_pattern(buf.data(), size, 9);
            tcaDesc *d = tcaDescNew();
            NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &mine, 0, size, tcaDMANotifySelf, 5, 77));
            NODE_OK(tcaDescSet(d, 3));
            NODE_OK(tcaStartDMADesc(3));
            NODE_OK(tcaWaitDMARecvDesc(&mine, 5, 77));  // own handle: local completion
            int flag = 1;
            NODE_OK(tcaTestDMARecvDesc(&mine, 5, 77, &flag));  // consumed exactly once
            NODE_CHECK(flag == 0);
            NODE_OK(tcaWaitDMAC(3));
            tcaDescFree(d);
            board.value[0].store(1);
        } else {
            while (board.value[0].load() == 0)
                usleep(100);
            NODE_CHECK(
                check_pattern(buf.data(), size, 9));  // visible once the source saw completion
            int flag = 1;
            NODE_OK(tcaTestDMARecvDesc(&peer, 5, 77,
                                       &flag));  // no destination notification was asked for
            NODE_CHECK(flag == 0);
        }
        return 0;
    }));
}

}  // namespace
}  // namespace tca::test
