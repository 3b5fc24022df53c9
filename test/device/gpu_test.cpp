// gpu_test.cpp - GPU memory (tcaMemoryGPU) through CUDA IPC.  Skips cleanly
// where there is no CUDA build or no GPU; runs the real path where there is.
#include <cstdio>
#include <cstring>
#include <vector>

#include "harness.hpp"

namespace tca::test {
namespace {

// Probed in a child: CUDA must not be initialised in the parent before fork().
bool gpu_usable() {
    return run_nodes(1, [](int, Board &) {
        void *p = nullptr;
        const tcaResult rc = tcaMalloc(&p, 4096, tcaMemoryGPU);
        if (rc == tcaSuccess)
            tcaFree(p, tcaMemoryGPU);
        return rc == tcaSuccess ? 0 : 7;
    });
}

// host(node 0) -> GPU(node 1) -> host(node 0 back through node 1's DMA)
TEST(Gpu, HostToRemoteGpuAndBack) {
    if (!gpu_usable())
        GTEST_SKIP() << "no usable CUDA device (tcaMalloc(tcaMemoryGPU) failed)";
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        const size_t size = (4 << 20) + 13;
        void *host = nullptr, *dev = nullptr;
        NODE_OK(tcaMalloc(&host, size, tcaMemoryCPU));
        tcaHandle hhost, hdev;
        NODE_OK(tcaCreateHandle(&hhost, host, size, tcaMemoryCPU));
        board.publish(node, 0, hhost);
        if (node == 1) {
            NODE_OK(tcaMalloc(&dev, size, tcaMemoryGPU));
            NODE_OK(tcaCreateHandle(&hdev, dev, size, tcaMemoryGPU));
            board.publish(node, 1, hdev);
        }
        board.barrier();
        if (node == 0) {
            tcaHandle peer_gpu = board.get(1, 1);
            fill_pattern(host, size, 31);
            tcaDesc *d = tcaDescNew();
            NODE_OK(tcaDescSetMemcpy(d, &peer_gpu, 0, &hhost, 0, size, tcaDMANotify, 0, 1));
            NODE_OK(tcaDescSet(d, 0));
            NODE_OK(tcaStartDMADesc(0));
            NODE_OK(tcaWaitDMAC(0));
            tcaDescFree(d);
            std::memset(host, 0, size);
            tcaHandle peer = board.get(1, 0);
            NODE_OK(tcaWaitDMARecvDesc(&peer, 1, 2));  // node 1 sent it back from its GPU
            NODE_CHECK(check_pattern(host, size, 31));
        } else {
            tcaHandle peer_host = board.get(0, 0);
            NODE_OK(tcaWaitDMARecvDesc(&peer_host, 0, 1));
            tcaDesc *d = tcaDescNew();  // GPU (local source) -> node 0 host
            NODE_OK(tcaDescSetMemcpy(d, &peer_host, 0, &hdev, 0, size, tcaDMANotify, 1, 2));
            NODE_OK(tcaDescSet(d, 0));
            NODE_OK(tcaStartDMADesc(0));
            NODE_OK(tcaWaitDMAC(0));
            tcaDescFree(d);
            NODE_OK(tcaDestroyHandle(&hdev));
            NODE_OK(tcaFree(dev, tcaMemoryGPU));
        }
        board.barrier();
        return 0;
    }));
}

// A peer frees a GPU buffer we have written to (our IPC mapping of it
// stays open) and allocates new ones, which CUDA may place at the freed
// addresses: inside the old range, and at the old start with more bytes.
// CUDA refuses to open such an allocation while the stale mapping lives
// ("already mapped"); keeping the stale mapping instead would write into
// the freed memory.  Every write must land in the new buffers.
TEST(Gpu, PeerReallocatesFreedAddresses) {
    if (!gpu_usable())
        GTEST_SKIP() << "no usable CUDA device (tcaMalloc(tcaMemoryGPU) failed)";
    EXPECT_TRUE(run_nodes(2, [](int node, Board &board) {
        // Rounds of GPU buffers on node 1, in bytes; each round frees the last.
        const std::vector<std::vector<size_t>> rounds = {
            {4 << 20}, {1 << 20, 1 << 20, 1 << 20}, {8 << 20}};
        const size_t most = 8 << 20;
        void *host = nullptr;
        NODE_OK(tcaMalloc(&host, most, tcaMemoryCPU));
        tcaHandle hhost;
        NODE_OK(tcaCreateHandle(&hhost, host, most, tcaMemoryCPU));
        uint32_t seed = 50;
        int reused = 0;
        std::vector<uint64_t> earlier;  // node 0: the addresses written so far
        for (const auto &sizes : rounds) {
            std::vector<void *> dev(sizes.size());
            std::vector<tcaHandle> hdev(sizes.size());
            if (node == 1) {
                for (size_t i = 0; i < sizes.size(); ++i) {
                    NODE_OK(tcaMalloc(&dev[i], sizes[i], tcaMemoryGPU));
                    NODE_OK(tcaCreateHandle(&hdev[i], dev[i], sizes[i], tcaMemoryGPU));
                    board.publish(1, static_cast<int>(i), hdev[i]);
                }
            }
            board.barrier();
            if (node == 0) {  // one DMA write per buffer, each from a pattern of its own
                for (size_t i = 0; i < sizes.size(); ++i) {
                    tcaHandle peer = board.get(1, static_cast<int>(i));
                    for (uint64_t a : earlier)
                        reused += a == peer.addr;
                    earlier.push_back(peer.addr);
                    fill_pattern(host, sizes[i], seed + static_cast<uint32_t>(i));
                    tcaDesc *d = tcaDescNew();
                    NODE_OK(tcaDescSetMemcpy(d, &peer, 0, &hhost, 0, sizes[i], tcaDMAUseInternal, 0,
                                             0));
                    NODE_OK(tcaDescSet(d, 0));
                    NODE_OK(tcaStartDMADesc(0));
                    NODE_OK(tcaWaitDMAC(0));
                    tcaDescFree(d);
                }
            }
            board.barrier();
            if (node == 1) {  // read each buffer back through a local DMA and check it
                for (size_t i = 0; i < sizes.size(); ++i) {
                    std::memset(host, 0, sizes[i]);
                    tcaDesc *d = tcaDescNew();
                    NODE_OK(tcaDescSetMemcpy(d, &hhost, 0, &hdev[i], 0, sizes[i], tcaDMAUseInternal,
                                             0, 0));
                    NODE_OK(tcaDescSet(d, 0));
                    NODE_OK(tcaStartDMADesc(0));
                    NODE_OK(tcaWaitDMAC(0));
                    tcaDescFree(d);
                    NODE_CHECK(check_pattern(host, sizes[i], seed + static_cast<uint32_t>(i)));
                    NODE_OK(tcaDestroyHandle(&hdev[i]));
                    NODE_OK(tcaFree(dev[i], tcaMemoryGPU));
                }
            }
            seed += 10;
            board.barrier();
        }
        if (node == 0)
            std::printf("node 1 reused an address written to before: %d times\n", reused);
        NODE_OK(tcaDestroyHandle(&hhost));
        tcaFree(host, tcaMemoryCPU);
        board.barrier();
        return 0;
    }));
}

}  // namespace
}  // namespace tca::test
