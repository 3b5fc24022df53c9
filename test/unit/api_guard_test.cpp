// api_guard_test.cpp - no C++ exception crosses the C API: every entry point
// runs over a device whose every call throws (a std::exception, or
// std::bad_alloc where memory is asked for) and must answer with an error
// code (tcaErrorSystem, tcaErrorNoMemory), never let the exception out
// (which would end this process: the API is noexcept C).
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <vector>

#include "device.hpp"
#include "tca-api.h"
#include "tca.h"

namespace tca {
namespace {

[[noreturn]] void boom() {
    throw std::runtime_error("a device call failed");
}

class ThrowingDevice final : public Device {
public:
    int node_id() const noexcept override { return 0; }
    const Topology &topology() const noexcept override { return topo_; }
    const TimingModel &timing() const noexcept override { return timing_; }
    DeviceInfo info() const override { boom(); }
    ResourceTable &resources() noexcept override { return resources_; }
    Result allocate(void **, size_t, tcaMemoryType) override { throw std::bad_alloc(); }
    Result release(void *, tcaMemoryType) override { boom(); }
    Result register_memory(void *, size_t, tcaMemoryType, tcaHandle *) override {
        throw std::bad_alloc();
    }
    Result deregister(const tcaHandle &) override { boom(); }
    Result registration_of_key(int, uint32_t, uint64_t, tcaHandle *) const override { boom(); }
    Result find_host_registration(int, uint64_t, uint64_t, tcaHandle *) const override { boom(); }
    Result validate(const Descriptor &) const override { boom(); }
    Result pio_write(const tcaHandle &, uint64_t, const void *, size_t, int, int, int) override {
        boom();
    }
    Result pio_map(const tcaHandle &, void **) override { boom(); }
    Result load_chain(int, std::span<const Descriptor>) override { boom(); }
    Result start_channel(int) override { boom(); }
    Result wait_channel(int, bool) override { boom(); }
    Result abort_channel(int) override { boom(); }
    Result take_notification(const tcaHandle &, int, int, bool) override { boom(); }
    Result counter_read(int, uint64_t *) override { boom(); }
    Result counter_add(int, uint64_t) override { boom(); }
    Result counter_wait(int, uint64_t) override { boom(); }
    Result counter_add_remote(int, int, uint64_t) override { boom(); }
    void counter_claim(int, uint32_t) override { boom(); }
    void slot_claim(int, uint32_t) override { boom(); }
    Result interrupt_raise(int) override { boom(); }
    Result node_state(int, int *) override { boom(); }
    bool progress() override { boom(); }
    uint32_t interrupt_count() noexcept override { return 0; }
    Result interrupt_wait(uint32_t, int64_t) override { boom(); }
    Result set_progress_takeover(int64_t) override { boom(); }
    std::string backing_path() const override { boom(); }

private:
    Topology topo_{2, false};
    TimingModel timing_{};
    ResourceTable resources_{};
};

// An error the guard gives for a thrown exception.
bool guarded_error(tcaResult r) {
    return r == tcaErrorSystem || r == tcaErrorNoMemory;
}

TEST(ApiGuard, EveryEntryPointAnswersWhenTheDeviceThrows) {
    install_device_for_tests(std::make_unique<ThrowingDevice>());
    unsigned char buf[64] = {};
    void *p = buf;
    tcaHandle h{};
    h.magic = TCA_HANDLE_MAGIC;
    h.node = 1;
    h.size = sizeof buf;
    h.region = tcaMemoryCPU;
    h.key = 1;
    uint64_t v = 0;
    int i = 0;
    uint32_t u = 0;
    char text[256];
    // The four the review found unguarded, then every other entry point
    // that reaches the device.
    EXPECT_TRUE(guarded_error(tcaCounterAddRemote(1, 0, 1)));
    EXPECT_TRUE(guarded_error(tcaInterruptRaise(1)));
    EXPECT_TRUE(guarded_error(tcaNodeState(1, &i)));
    EXPECT_TRUE(guarded_error(tcaProgress(&i)));
    EXPECT_TRUE(guarded_error(tcaMalloc(&p, 64, tcaMemoryCPU)));
    EXPECT_TRUE(guarded_error(tcaFree(buf, tcaMemoryCPU)));
    EXPECT_TRUE(guarded_error(tcaCreateHandle(&h, buf, sizeof buf, tcaMemoryCPU)));
    EXPECT_TRUE(guarded_error(tcaDestroyHandle(&h)));
    EXPECT_TRUE(guarded_error(tcaHandleOfKey(0, 0, 1, &h)));
    EXPECT_TRUE(guarded_error(tcaHandleOfAddress(0, 0, 8, &h)));
    tcaDesc *d = tcaDescNew();
    ASSERT_NE(d, nullptr);
    EXPECT_TRUE(guarded_error(tcaDescSetMemcpy(d, &h, 0, &h, 0, 8, 0, 0, 0)));
    EXPECT_TRUE(guarded_error(tcaDescSetMemcpy2D(d, &h, 0, 8, &h, 0, 8, 8, 2, 0, 0, 0)));
    EXPECT_TRUE(guarded_error(tcaDescSet(d, 0)));
    EXPECT_EQ(tcaDescFree(d), tcaSuccess);  // no device involved
    EXPECT_TRUE(guarded_error(tcaStartDMADesc(0)));
    EXPECT_TRUE(guarded_error(tcaWaitDMAC(0)));
    EXPECT_TRUE(guarded_error(tcaTestDMAC(0, &i)));
    EXPECT_TRUE(guarded_error(tcaAbortDMAC(0)));
    EXPECT_TRUE(guarded_error(tcaWaitDMARecvDesc(&h, 0, 0)));
    EXPECT_TRUE(guarded_error(tcaTestDMARecvDesc(&h, 0, 0, &i)));
    EXPECT_TRUE(guarded_error(tcaPioWrite(&h, 0, buf, 8, 0, 0, 0)));
    EXPECT_TRUE(guarded_error(tcaPioMap(&h, &p)));
    EXPECT_TRUE(guarded_error(tcaCounterRead(0, &v)));
    EXPECT_TRUE(guarded_error(tcaCounterAdd(0, 1)));
    EXPECT_TRUE(guarded_error(tcaCounterWait(0, 1)));
    EXPECT_TRUE(guarded_error(tcaPioWriteCounterAdd(&h, 0, buf, 8, 0, 1)));
    EXPECT_TRUE(guarded_error(tcaInterruptWait(0, 10)));
    tcaDeviceAttr da;
    EXPECT_TRUE(guarded_error(tcaQueryDevice(&da)));
    tcaBackendAttr ba;
    EXPECT_TRUE(guarded_error(tcaQueryBackend(&ba)));
    EXPECT_TRUE(guarded_error(tcaSetProgressTakeover(5)));
    EXPECT_TRUE(guarded_error(tcaGetBackingPath(text, sizeof text)));
    int first = -1, slot = -1;
    // Acquiring claims the resource on the device (a throwing call).
    EXPECT_TRUE(guarded_error(tcaCounterAcquire(1, &first)));
    EXPECT_TRUE(guarded_error(tcaSlotAcquire(&slot)));
    tcaPIOHandle pio;
    EXPECT_EQ(tcaSetPIORegion(&pio, &h, 0, 8), tcaSuccess);  // checks only: no device call
    EXPECT_TRUE(guarded_error(tcaSendPIO(&pio, 0, buf, 16)));
    // Those that only read what cannot throw still answer.
    EXPECT_EQ(tcaGetNodeId(&i), tcaSuccess);
    EXPECT_EQ(tcaInterruptCount(&u), tcaSuccess);
    tcaTopologyAttr ta;
    EXPECT_EQ(tcaQueryTopology(&ta), tcaSuccess);
    install_device_for_tests(nullptr);
    EXPECT_EQ(tcaProgress(&i), tcaErrorNotInitialized);
}

}  // namespace
}  // namespace tca
