// gpu_test.cpp - GPU memory (tcaMemoryGPU) through CUDA IPC.  Skips cleanly
// where there is no CUDA build or no GPU; runs the real path where there is.
#include <cstring>
#include <vector>

#include "harness.hpp"

namespace tca::test {
namespace {

// host(node 0) -> GPU(node 1) -> host(node 0 back through node 1's DMA)
TEST(Gpu, HostToRemoteGpuAndBack) {
    // Probe in a child: CUDA must not be initialised in the parent before fork().
    NodeOptions opt;
    const bool usable = run_nodes(1, [](int, Board &) {
        void *p = nullptr;
        const tcaResult rc = tcaMalloc(&p, 4096, tcaMemoryGPU);
        if (rc == tcaSuccess) tcaFree(p, tcaMemoryGPU);
        return rc == tcaSuccess ? 0 : 7;
    }, opt);
    if (!usable) GTEST_SKIP() << "no usable CUDA device (tcaMalloc(tcaMemoryGPU) failed)";
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

}  // namespace
}  // namespace tca::test
