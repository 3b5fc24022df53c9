// model_test.cpp - the PEACH2 model without any process: address map, routing
// and hop counts, descriptor validation, results, launch info, internal heap.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>

#include "base/internal_heap.hpp"
#include "base/env_settings.hpp"
#include "loopback/launch_info.hpp"
#include "model/address_map.hpp"
#include "model/descriptor.hpp"
#include "model/timing_model.hpp"
#include "model/topology.hpp"

namespace tca {
namespace {

TEST(AddressMap, WindowsAreEqualAlignedAndDecode) {
    for (int n : {1, 2, 3, 8, 16, 17, 64}) {
        AddressMap m(n);
        EXPECT_EQ(m.window_size() & (m.window_size() - 1), 0u) << "power of two";
        EXPECT_LE(m.window_size() * static_cast<uint64_t>(n), AddressMap::kBarSize);
        for (int node = 0; node < n; ++node) {
            EXPECT_EQ(m.window_base(node) % m.window_size(), 0u);
            for (Region r : {Region::Host, Region::Gpu0, Region::Gpu1, Region::Internal}) {
                const uint64_t a = m.region_base(node, r) + 12345;
                auto d = m.decode(a);
                ASSERT_TRUE(d.has_value());
                EXPECT_EQ(d->node, node);
                EXPECT_EQ(d->region, r);
                EXPECT_EQ(d->offset, 12345u);
            }
        }
        EXPECT_FALSE(m.decode(AddressMap::kBarBase - 1).has_value());
        EXPECT_FALSE(m.decode(AddressMap::kBarBase + AddressMap::kBarSize).has_value());
    }
    EXPECT_EQ(AddressMap(16).window_size(), 32ull << 30);  // 512 GiB / 16 as on HA-PACS/TCA
    EXPECT_FALSE(
        AddressMap(3).decode(AddressMap(3).window_base(3)).has_value());  // unused 4th window
}

int ring_distance(int a, int b, int r) {
    const int d = ((b - a) % r + r) % r;
    return d <= r / 2 ? d : r - d;
}

TEST(Topology, RingHopsAreShortestDirection) {
    for (int n = 1; n <= 64; ++n) {
        Topology t(n, false);
        for (int a = 0; a < n; ++a)
            for (int b = 0; b < n; ++b)
                EXPECT_EQ(t.hops(a, b), ring_distance(a, b, n)) << n << ":" << a << "->" << b;
    }
}

TEST(Topology, PathFollowsLinks) {
    Topology t(16, false);
    for (int a = 0; a < 16; ++a)
        for (int b = 0; b < 16; ++b) {
            int at = a;
            for (int next : t.path(a, b)) {
                EXPECT_TRUE(next == t.east_of(at) || next == t.west_of(at));
                at = next;
            }
            EXPECT_EQ(at, b);
        }
}

TEST(Topology, RouteIsAnAddressRangeDecision) {
    Topology t(8, false);
    const AddressMap &m = t.address_map();
    EXPECT_EQ(t.route(0, m.region_base(0, Region::Host)), Port::North);
    EXPECT_EQ(t.route(0, m.region_base(1, Region::Internal) + 99), Port::East);
    EXPECT_EQ(t.route(0, m.region_base(4, Region::Gpu0)), Port::East);  // tie: east
    EXPECT_EQ(t.route(0, m.region_base(5, Region::Host)), Port::West);
    EXPECT_EQ(t.route(0, m.region_base(7, Region::Host)), Port::West);
    EXPECT_EQ(t.route(6, m.region_base(1, Region::Host)), Port::East);  // wraps around
}

TEST(Topology, SLinksJoinTwoRings) {
    Topology t(16, true);
    EXPECT_EQ(t.ring_size(), 8);
    EXPECT_EQ(t.south_of(3), 11);
    EXPECT_EQ(t.south_of(11), 3);
    for (int a = 0; a < 16; ++a)
        for (int b = 0; b < 16; ++b) {
            const bool same = (a < 8) == (b < 8);
            const int expect =
                same ? ring_distance(a % 8, b % 8, 8) : 1 + ring_distance(a % 8, b % 8, 8);
            EXPECT_EQ(t.hops(a, b), expect) << a << "->" << b;
        }
    EXPECT_EQ(t.route(2, t.address_map().window_base(13)), Port::South);
    EXPECT_THROW(Topology(6 + 1, true), std::invalid_argument);
    EXPECT_THROW(Topology(0, false), std::invalid_argument);
}

tcaHandle handle(int node, uint64_t size, tcaMemoryType type = tcaMemoryCPU) {
    tcaHandle h{};
    h.magic = TCA_HANDLE_MAGIC;
    h.node = static_cast<uint16_t>(node);
    h.region = static_cast<uint8_t>(type);
    h.size = size;
    h.key = 1;
    h.addr = 0x1000;
    return h;
}

Descriptor desc(int dst_node, int src_node, uint64_t size) {
    Descriptor d;
    d.dst = handle(dst_node, 4096);
    d.src = handle(src_node, 4096);
    d.width = size;
    d.dst_pitch = d.src_pitch = size;
    return d;
}

TEST(Descriptor, Validation) {
    EXPECT_EQ(validate_descriptor(desc(1, 0, 4096), 0, 2), tcaSuccess);
    EXPECT_EQ(validate_descriptor(desc(0, 0, 0), 0, 2), tcaSuccess);  // pure notification
    EXPECT_EQ(validate_descriptor(desc(0, 1, 8), 0, 2), tcaErrorRemoteRead);
    EXPECT_EQ(validate_descriptor(desc(1, 0, 4097), 0, 2), tcaErrorOutOfRange);
    EXPECT_EQ(validate_descriptor(desc(2, 0, 8), 0, 2), tcaErrorInvalidHandle);
    Descriptor d = desc(1, 0, 8);
    d.dst_off = 4089;
    EXPECT_EQ(validate_descriptor(d, 0, 2), tcaErrorOutOfRange);
    d.dst_off = UINT64_MAX;
    EXPECT_EQ(validate_descriptor(d, 0, 2), tcaErrorOutOfRange);
    d = desc(1, 0, 64);
    d.height = 64;
    d.dst_pitch = d.src_pitch = 64;
    EXPECT_EQ(validate_descriptor(d, 0, 2), tcaSuccess);  // exactly 4096 bytes
    d.dst_pitch = 65;
    EXPECT_EQ(validate_descriptor(d, 0, 2), tcaErrorOutOfRange);
    d.dst_pitch = 63;
    EXPECT_EQ(validate_descriptor(d, 0, 2), tcaErrorInvalidValue);  // rows would overlap
    d = desc(1, 0, 8);
    d.flags = tcaDMANotify;
    d.slot = TCA_NOTIFY_SLOTS;
    EXPECT_EQ(validate_descriptor(d, 0, 2), tcaErrorInvalidSlot);
    d.flags = 0x80;
    EXPECT_EQ(validate_descriptor(d, 0, 2), tcaErrorInvalidValue);
    d = desc(1, 0, 8);
    d.src.magic = 0;
    EXPECT_EQ(validate_descriptor(d, 0, 2), tcaErrorInvalidHandle);
    d = desc(1, 0, 8);
    d.add_counter = TCA_NUM_COUNTERS;
    EXPECT_EQ(validate_descriptor(d, 0, 2), tcaErrorInvalidCounter);
}

TEST(Descriptor, StridedSpanSaturates) {
    EXPECT_EQ(strided_span(10, 1, 0), 10u);
    EXPECT_EQ(strided_span(10, 3, 100), 210u);
    EXPECT_EQ(strided_span(0, 3, 100), 0u);
    EXPECT_EQ(strided_span(8, UINT64_MAX, UINT64_MAX / 2), UINT64_MAX);
}

TEST(Result, EveryCodeHasItsOwnMessage) {
    std::set<std::string> seen;
    for (int r = 0; r < tcaErrorResultCount; ++r) {
        const std::string m = result_message(static_cast<Result>(r));
        EXPECT_GT(m.size(), 5u);
        EXPECT_TRUE(seen.insert(m).second) << m;
    }
    EXPECT_STREQ(result_message(static_cast<Result>(-1)), "unknown TCA result code");
}

TEST(TimingModel, OffByDefaultAndEnvironmentOverrides) {
    unsetenv("TCA_TIMING");
    TimingModel off;
    ASSERT_EQ(timing_from_environment(&off), tcaSuccess);
    EXPECT_FALSE(off.enabled);
    EXPECT_EQ(off.pio_ns(3), 0);
    setenv("TCA_TIMING", "1", 1);
    setenv("TCA_GPU_BANDWIDTH_MBS", "1000", 1);
    setenv("TCA_LINK_BANDWIDTH_MBS", "2000", 1);  // the old name of the host bandwidth
    TimingModel on;
    ASSERT_EQ(timing_from_environment(&on), tcaSuccess);
    for (const char *v : {"TCA_TIMING", "TCA_GPU_BANDWIDTH_MBS", "TCA_LINK_BANDWIDTH_MBS"})
        unsetenv(v);
    EXPECT_TRUE(on.enabled);
    EXPECT_DOUBLE_EQ(on.gpu_bandwidth_mb_s, 1000);
    EXPECT_DOUBLE_EQ(on.host_bandwidth_mb_s, 2000);
    EXPECT_DOUBLE_EQ(on.pio_ns(3), 782 + 2 * 250);
    EXPECT_EQ(TimingModel::parameters().size(), 22u);  // every field is overridable and listed
    EXPECT_FALSE(on.virtual_time);
    EXPECT_TRUE(on.paced());
}

// TCA_TIMING=virtual: the model's figures, in virtual time (nothing paced);
// the spellings of on and off leave virtual time off.
TEST(TimingModel, VirtualTimeIsAModeOfTheModel) {
    for (const char *v : {"virtual", "VIRTUAL", "Virtual"}) {
        setenv("TCA_TIMING", v, 1);
        TimingModel m;
        ASSERT_EQ(timing_from_environment(&m), tcaSuccess) << v;
        EXPECT_TRUE(m.enabled && m.virtual_time && !m.paced()) << v;
        EXPECT_DOUBLE_EQ(m.pio_ns(1), 782);
    }
    for (const char *v : {"1", "on", "0", "off"}) {
        setenv("TCA_TIMING", v, 1);
        TimingModel m;
        ASSERT_EQ(timing_from_environment(&m), tcaSuccess) << v;
        EXPECT_FALSE(m.virtual_time) << v;
    }
    for (const char *v : {"virt", "virtual1", "2"}) {
        setenv("TCA_TIMING", v, 1);
        TimingModel m;
        EXPECT_EQ(timing_from_environment(&m), tcaErrorInvalidValue) << v;
    }
    unsetenv("TCA_TIMING");
}

// The model's formulas against PEACH2's published figures (compat section 4),
// every point within 10 %.
::testing::AssertionResult within(double model, double published, double tolerance = 0.10) {
    const double err = (model - published) / published;
    if (err > tolerance || err < -tolerance)
        return ::testing::AssertionFailure()
               << "model " << model << " vs published " << published << " (" << 100 * err << " %)";
    return ::testing::AssertionSuccess();
}

TimingModel published_model() {
    TimingModel m;
    m.enabled = true;
    return m;
}

TEST(TimingModel, HostPioAndHops) {
    const TimingModel m = published_model();
    EXPECT_TRUE(within(m.pio_ns(1), 782));
    for (int hops = 2; hops <= 8; ++hops) {
        const double per_hop = (m.pio_ns(hops) - m.pio_ns(1)) / (hops - 1);
        EXPECT_GE(per_hop, 200);
        EXPECT_LE(per_hop, 300);
    }
}

TEST(TimingModel, HostDmaBandwidth) {
    const TimingModel m = published_model();
    // chained DMA write: 3.3 GB/s with 255 descriptors of 4 KiB
    const double chain = m.chain_ns(255, 4096, false, 1, false, false);
    EXPECT_TRUE(within(255 * 4096 / chain * 1000, 3300));
    // CPU DMA saturating at 3.5 GB/s
    const double big = m.one_way_dma_ns(16u << 20, 1, false, 1);
    EXPECT_TRUE(within((16u << 20) / big * 1000, 3500));
    // the pipeline flag hides the gap between descriptors; a host table costs a fetch each
    EXPECT_LT(m.chain_ns(255, 4096, false, 1, true, false), chain);
    EXPECT_GT(m.chain_ns(255, 4096, false, 1, false, true), chain);
}

TEST(TimingModel, GpuPingPongB1) {
    const TimingModel m = published_model();
    const struct {
        uint64_t bytes;
        double us;
    } b1[] = {{8, 2.015},           {16, 2.017},        {32, 2.016},         {64, 2.015},
              {128, 2.015},         {256, 2.014},       {512, 2.041},        {1 << 10, 2.086},
              {2 << 10, 2.184},     {4 << 10, 3.540},   {8 << 10, 4.952},    {16 << 10, 7.929},
              {32 << 10, 14.403},   {64 << 10, 26.589}, {128 << 10, 51.645}, {256 << 10, 102.114},
              {512 << 10, 201.693}, {1 << 20, 447.694}, {2 << 20, 891.056},  {4 << 20, 1781.322}};
    for (const auto &p : b1)
        EXPECT_TRUE(within(m.one_way_dma_ns(p.bytes, 1, true, 1), p.us * 1000)) << p.bytes;
}

TEST(TimingModel, GpuBlockStrideB2) {
    const TimingModel m = published_model();
    const struct {
        uint64_t n;
        double us;
    } b2[] = {{2, 2.060},   {4, 2.151},    {8, 2.325},     {16, 2.680},    {32, 4.455},
              {64, 12.181}, {128, 45.080}, {256, 191.674}, {512, 1022.011}};
    for (const auto &p : b2)  // N rows of N doubles
        EXPECT_TRUE(within(m.one_way_dma_ns(p.n * 8, p.n, true, 1), p.us * 1000)) << "N = " << p.n;
}

// A chain's clock: descriptors land in order, each after the one before,
// and the notification time is what the formulas say.
// What both devices charge a descriptor: GPU memory at either end, the
// pipeline flag, a table fetch only in table mode and not for internal chains.
TEST(TimingModel, DescriptorCostFollowsTheDescriptor) {
    tca::Descriptor d;
    d.width = 64;
    d.height = 3;
    d.flags = tcaDMAPipeline;
    tca::DescriptorCost c = tca::DescriptorCost::of(d, 2, true);
    EXPECT_EQ(c.width, 64u);
    EXPECT_EQ(c.height, 3u);
    EXPECT_EQ(c.hops, 2);
    EXPECT_FALSE(c.gpu);
    EXPECT_TRUE(c.pipeline);
    EXPECT_TRUE(c.fetched);
    EXPECT_FALSE(tca::DescriptorCost::of(d, 2, false).fetched);
    d.flags = tcaDMAUseInternal;
    d.dst.region = tcaMemoryGPU;
    c = tca::DescriptorCost::of(d, 1, true);
    EXPECT_TRUE(c.gpu);
    EXPECT_FALSE(c.pipeline);
    EXPECT_FALSE(c.fetched);
    d.dst.region = tcaMemoryCPU;
    d.src.region = tcaMemoryGPU;
    EXPECT_TRUE(tca::DescriptorCost::of(d, 1, false).gpu);
}

TEST(TimingModel, ChainClockIsDeadlineBased) {
    const TimingModel m = published_model();
    ChainClock c;
    c.start(m, 1'000'000);
    const auto a = c.next(m, DescriptorCost{8, 1, true, 1, false, false});
    // the device delivers the handoff early: the program then sees the model
    EXPECT_NEAR(static_cast<double>(a.done_ns - 1'000'000),
                m.one_way_dma_ns(8, 1, true, 1) - m.dma_handoff_ns, 2);
    EXPECT_DOUBLE_EQ(m.pio_delay_ns(1), 782 - m.pio_handoff_ns);
    const auto b = c.next(m, DescriptorCost{4096, 1, false, 3, false, false});
    EXPECT_GE(b.first_byte_ns, a.done_ns);
    EXPECT_GE(b.done_ns - b.first_byte_ns, static_cast<int64_t>(m.transfer_ns(4096, 1, false)) - 1);
    ChainClock pipelined;
    pipelined.start(m, 1'000'000);
    pipelined.next(m, DescriptorCost{8, 1, true, 1, true, false});
    EXPECT_LT(pipelined.next(m, DescriptorCost{4096, 1, false, 3, true, false}).done_ns, b.done_ns);
}

TEST(LaunchInfo, Precedence) {
    unsetenv("TCA_JOB_KEY");
    unsetenv("TCA_NODE_ID");
    unsetenv("TCA_NUM_NODES");
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
    setenv("OMPI_MCA_ess_base_jobid", "12345", 1);
    loopback::LaunchInfo li;
    ASSERT_EQ(loopback::resolve_launch_info(nullptr, &li), tcaSuccess);
    EXPECT_EQ(li.node_id, 2);
    EXPECT_EQ(li.num_nodes, 4);
    EXPECT_EQ(li.job_key, "ompi.12345");
    setenv("TCA_JOB_KEY", "mine/with spaces", 1);
    setenv("TCA_NODE_ID", "1", 1);
    ASSERT_EQ(loopback::resolve_launch_info(nullptr, &li), tcaSuccess);
    EXPECT_EQ(li.job_key, "mine_with_spaces");
    EXPECT_EQ(li.node_id, 1);
    tcaInitParams p{"explicit", 0, 2};
    ASSERT_EQ(loopback::resolve_launch_info(&p, &li), tcaSuccess);
    EXPECT_EQ(li.job_key, "explicit");
    EXPECT_EQ(li.num_nodes, 2);
    tcaInitParams bad{"x", 5, 2};
    EXPECT_EQ(loopback::resolve_launch_info(&bad, &li), tcaErrorInvalidNode);
    tcaInitParams big{"x", 0, TCA_MAX_NODES + 1};
    EXPECT_EQ(loopback::resolve_launch_info(&big, &li), tcaErrorInvalidValue);
    for (const char *v : {"TCA_JOB_KEY", "TCA_NODE_ID", "OMPI_COMM_WORLD_LOCAL_RANK",
                          "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_MCA_ess_base_jobid"})
        unsetenv(v);
    EXPECT_LE(loopback::sanitize_job_key(std::string(200, 'k')).size(), 40u);
}

TEST(LaunchInfo, SlurmTaskLists) {
    EXPECT_EQ(loopback::slurm_tasks_on_node("4", 0), 4);
    EXPECT_EQ(loopback::slurm_tasks_on_node("2(x3),1", 0), 2);
    EXPECT_EQ(loopback::slurm_tasks_on_node("2(x3),1", 2), 2);
    EXPECT_EQ(loopback::slurm_tasks_on_node("2(x3),1", 3), 1);
    EXPECT_EQ(loopback::slurm_tasks_on_node("2(x3),1", 4), -1);
    EXPECT_EQ(loopback::slurm_tasks_on_node("2(x3,1", 0), -1);
    EXPECT_EQ(loopback::slurm_tasks_on_node("x", 0), -1);
}

// Each launcher's variables alone give the node (local rank, not MPI rank),
// the node count (local processes) and a job key; TCA_* still win.
TEST(LaunchInfo, LaunchersWithoutOpenMpi) {
    const char *all[] = {"TCA_JOB_KEY",
                         "TCA_NODE_ID",
                         "TCA_NUM_NODES",
                         "OMPI_COMM_WORLD_LOCAL_RANK",
                         "OMPI_COMM_WORLD_LOCAL_SIZE",
                         "OMPI_MCA_ess_base_jobid",
                         "PMIX_NAMESPACE",
                         "PMIX_RANK",
                         "MPIRUN_ID",
                         "MPIRUN_RANK",
                         "MPIRUN_NPROCS",
                         "MV2_COMM_WORLD_LOCAL_RANK",
                         "MV2_COMM_WORLD_LOCAL_SIZE",
                         "MV2_NODE_ID",
                         "MV2_NUM_NODES_IN_JOB",
                         "PMI_RANK",
                         "PMI_SIZE",
                         "MPI_LOCALRANKID",
                         "MPI_LOCALNRANKS",
                         "SLURM_JOB_ID",
                         "SLURM_STEP_ID",
                         "SLURM_LOCALID",
                         "SLURM_NODEID",
                         "SLURM_STEP_TASKS_PER_NODE",
                         "SLURM_TASKS_PER_NODE",
                         "PALS_RANKID"};
    auto clear = [&] {
        for (const char *v : all)
            unsetenv(v);
    };
    loopback::LaunchInfo li;
    clear();
    // mpirun_rsh, one process per host (the published runs): a one-node
    // sub-cluster per host, keyed by job and host.
    setenv("MPIRUN_ID", "991", 1);
    setenv("MPIRUN_RANK", "5", 1);
    setenv("MPIRUN_NPROCS", "16", 1);
    setenv("MV2_NUM_NODES_IN_JOB", "16", 1);
    setenv("MV2_NODE_ID", "7", 1);
    ASSERT_EQ(loopback::resolve_launch_info(nullptr, &li), tcaSuccess);
    EXPECT_EQ(li.node_id, 0);
    EXPECT_EQ(li.num_nodes, 1);
    EXPECT_EQ(li.job_key, "mv2.991.7");
    setenv("MV2_COMM_WORLD_LOCAL_RANK", "1", 1);
    setenv("MV2_COMM_WORLD_LOCAL_SIZE", "2", 1);
    ASSERT_EQ(loopback::resolve_launch_info(nullptr, &li), tcaSuccess);
    EXPECT_EQ(li.node_id, 1);
    EXPECT_EQ(li.num_nodes, 2);
    EXPECT_EQ(li.job_key, "mv2.991");
    EXPECT_NE(li.source.find("MVAPICH2"), std::string::npos);
    clear();
    setenv("SLURM_JOB_ID", "42", 1);
    setenv("SLURM_STEP_ID", "0", 1);
    setenv("SLURM_LOCALID", "2", 1);
    setenv("SLURM_NODEID", "1", 1);
    setenv("SLURM_TASKS_PER_NODE", "1,3", 1);
    ASSERT_EQ(loopback::resolve_launch_info(nullptr, &li), tcaSuccess);
    EXPECT_EQ(li.node_id, 2);
    EXPECT_EQ(li.num_nodes, 3);
    EXPECT_EQ(li.job_key, "slurm.42.0");
    clear();
    setenv("PMI_RANK", "3", 1);
    setenv("PMI_SIZE", "4", 1);
    setenv("MPI_LOCALRANKID", "0", 1);
    setenv("MPI_LOCALNRANKS", "4", 1);
    ASSERT_EQ(loopback::resolve_launch_info(nullptr, &li), tcaSuccess);
    EXPECT_EQ(li.node_id, 0);
    EXPECT_EQ(li.num_nodes, 4);
    EXPECT_EQ(li.job_key, "pmi.ppid." + std::to_string(getppid()));
    setenv("TCA_NODE_ID", "2", 1);  // an explicit setting still wins
    ASSERT_EQ(loopback::resolve_launch_info(nullptr, &li), tcaSuccess);
    EXPECT_EQ(li.node_id, 2);
    unsetenv("TCA_NODE_ID");
    unsetenv("MPI_LOCALRANKID");  // ranks spread over hosts tca cannot see
    testing::internal::CaptureStderr();
    EXPECT_EQ(loopback::resolve_launch_info(nullptr, &li), tcaErrorNotSupported);
    EXPECT_NE(testing::internal::GetCapturedStderr().find("PMI_SIZE=4"), std::string::npos);
    clear();
    setenv("PALS_RANKID", "3", 1);
    testing::internal::CaptureStderr();
    EXPECT_EQ(loopback::resolve_launch_info(nullptr, &li), tcaErrorNotSupported);
    const std::string msg = testing::internal::GetCapturedStderr();
    EXPECT_NE(msg.find("launcher whose environment tca cannot read (PALS_RANKID=3"),
              std::string::npos)
        << msg;
    clear();
    ASSERT_EQ(loopback::resolve_launch_info(nullptr, &li), tcaSuccess);  // a lone process
    EXPECT_EQ(li.source, "singleton");
}

TEST(InternalHeap, AllocateFreeCoalesce) {
    InternalHeap heap(1024);
    auto a = heap.allocate(100), b = heap.allocate(100), c = heap.allocate(100);
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(*a % 64, 0u);
    EXPECT_NE(*a, *b);
    EXPECT_FALSE(heap.allocate(1024).has_value());
    EXPECT_EQ(heap.release(*b).value_or(0), 128u);  // rounded up to the 64-byte alignment
    EXPECT_FALSE(heap.release(*b).has_value());     // double free refused
    EXPECT_TRUE(heap.release(*a).has_value());
    EXPECT_TRUE(heap.release(*c).has_value());
    EXPECT_EQ(heap.used(), 0u);
    EXPECT_TRUE(heap.allocate(1024).has_value());  // coalesced back into one block
}

}  // namespace
}  // namespace tca
