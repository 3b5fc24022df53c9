// query_test.cpp - the API that describes the device (what tca_info prints,
// through nothing but tca.h): the topology of the running device and of a
// model without one, hops, the backend, the timing model's parameters.
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "harness.hpp"

namespace tca::test {
namespace {

TEST(Query, AModelNeedsNoDevice) {
    tcaTopologyAttr t{};
    ASSERT_EQ(tcaQueryModelTopology(16, 1, &t), tcaSuccess);
    EXPECT_EQ(t.num_nodes, 16);
    EXPECT_EQ(t.ring_size, 8);
    EXPECT_EQ(t.s_links, 1);
    EXPECT_EQ(t.window_size, uint64_t{1} << t.window_shift);
    EXPECT_EQ(t.region_size * 4, t.window_size);
    EXPECT_GE(t.bar_size, t.window_size * 16) << "every node's window inside the BAR";
    ASSERT_EQ(tcaQueryModelTopology(5, 0, &t), tcaSuccess);
    EXPECT_EQ(t.ring_size, 5);
    EXPECT_EQ(t.s_links, 0);
    // Shapes the model has no place for.
    EXPECT_EQ(tcaQueryModelTopology(5, 1, &t), tcaErrorInvalidValue);
    EXPECT_EQ(tcaQueryModelTopology(2, 1, &t), tcaErrorInvalidValue);
    EXPECT_EQ(tcaQueryModelTopology(0, 0, &t), tcaErrorInvalidValue);
    EXPECT_EQ(tcaQueryModelTopology(TCA_MAX_NODES + 1, 0, &t), tcaErrorInvalidValue);
    EXPECT_EQ(tcaQueryModelTopology(4, 0, nullptr), tcaErrorInvalidValue);
    // And without a device, the running device's queries say so.
    tcaBackendAttr b{};
    EXPECT_EQ(tcaQueryTopology(&t), tcaErrorNotInitialized);
    EXPECT_EQ(tcaQueryBackend(&b), tcaErrorNotInitialized);
    EXPECT_EQ(tcaSetProgressTakeover(5000), tcaErrorNotInitialized);
}

TEST(Query, ModelHopsFollowTheRingAndTheSLinks) {
    int h = -1;
    ASSERT_EQ(tcaModelHopCount(8, 0, 0, 1, &h), tcaSuccess);
    EXPECT_EQ(h, 1);
    ASSERT_EQ(tcaModelHopCount(8, 0, 0, 7, &h), tcaSuccess);
    EXPECT_EQ(h, 1) << "west is one hop on the ring";
    ASSERT_EQ(tcaModelHopCount(8, 0, 0, 4, &h), tcaSuccess);
    EXPECT_EQ(h, 4) << "the far side of an 8-node ring";
    ASSERT_EQ(tcaModelHopCount(16, 1, 0, 8, &h), tcaSuccess);
    EXPECT_EQ(h, 1) << "node 0's S link reaches node 8";
    ASSERT_EQ(tcaModelHopCount(8, 0, 3, 3, &h), tcaSuccess);
    EXPECT_EQ(h, 0);
    EXPECT_EQ(tcaModelHopCount(8, 0, 0, 8, &h), tcaErrorInvalidNode);
    EXPECT_EQ(tcaModelHopCount(8, 0, -1, 0, &h), tcaErrorInvalidNode);
    EXPECT_EQ(tcaModelHopCount(8, 0, 0, 1, nullptr), tcaErrorInvalidValue);
}

TEST(Query, TimingParametersComeFromTheEnvironmentWithoutADevice) {
    const char *variable = nullptr, *unit = nullptr, *meaning = nullptr;
    double value = -1;
    int pio = -1, count = 0;
    for (; tcaTimingParameter(count, &variable, &value, &unit, &meaning) == tcaSuccess; ++count)
        if (std::strcmp(variable, "TCA_PIO_LATENCY_NS") == 0)
            pio = count;
    ASSERT_GT(count, 10);
    ASSERT_GE(pio, 0) << "the PIO latency is a parameter";
    EXPECT_EQ(tcaTimingParameter(-1, &variable, &value, &unit, &meaning), tcaErrorInvalidValue);
    int timing = -1;
    setenv("TCA_TIMING", "on", 1);
    ASSERT_EQ(tcaTimingEnabled(&timing), tcaSuccess);
    EXPECT_EQ(timing, 1);
    setenv("TCA_TIMING", "maybe", 1);
    EXPECT_EQ(tcaTimingEnabled(&timing), tcaErrorInvalidValue);
    unsetenv("TCA_TIMING");
    ASSERT_EQ(tcaTimingEnabled(&timing), tcaSuccess);
    EXPECT_EQ(timing, 0);
    EXPECT_EQ(tcaTimingEnabled(nullptr), tcaErrorInvalidValue);
    setenv("TCA_PIO_LATENCY_NS", "900", 1);
    ASSERT_EQ(tcaTimingParameter(pio, &variable, &value, &unit, &meaning), tcaSuccess);
    EXPECT_EQ(value, 900.0);
    EXPECT_STREQ(unit, "ns");
    setenv("TCA_PIO_LATENCY_NS", "fast", 1);
    EXPECT_EQ(tcaTimingParameter(pio, &variable, &value, &unit, &meaning), tcaErrorInvalidValue)
        << "a bad value is refused by name, as tcaInit refuses it";
    unsetenv("TCA_PIO_LATENCY_NS");
}

TEST(Query, TheRunningDeviceDescribesItself) {
    setenv("TCA_PIO_LATENCY_NS", "800", 1);
    EXPECT_TRUE(run_nodes(3, [](int node, Board &b) {
        tcaTopologyAttr t{};
        NODE_OK(tcaQueryTopology(&t));
        NODE_CHECK(t.num_nodes == 3 && t.ring_size == 3 && t.s_links == 0);
        for (int to = 0; to < 3; ++to) {
            int running = -1, model = -2;
            NODE_OK(tcaGetHopCount(node, to, &running));
            NODE_OK(tcaModelHopCount(3, 0, node, to, &model));
            NODE_CHECK(running == model);
        }
        tcaBackendAttr a{};
        NODE_OK(tcaQueryBackend(&a));
        NODE_CHECK(std::strncmp(a.backend, "loopback", 8) == 0);
        NODE_CHECK(a.job_key[0] != '\0' && a.launch_source[0] != '\0' &&
                   a.put_mechanism[0] != '\0');
        NODE_CHECK(a.timeout_ns > 0 && a.spin_ns >= 0);
        NODE_CHECK(a.gpu_devices >= 0 || a.gpu_status[0] != '\0');  // a count, or why not
        // No progress thread of its own that takes over (the waiting thread drives it).
        NODE_CHECK(a.takeover_us == -1);
        NODE_CHECK(tcaSetProgressTakeover(5000) == tcaErrorNotSupported);
        NODE_CHECK(tcaSetProgressTakeover(-1) == tcaErrorInvalidValue);
        int timing = -1;
        NODE_OK(tcaTimingEnabled(&timing));
        NODE_CHECK(timing == 0);
        const char *variable = nullptr;
        double value = 0;
        bool seen = false;
        for (int i = 0; tcaTimingParameter(i, &variable, &value, nullptr, nullptr) == tcaSuccess;
             ++i)
            if (std::strcmp(variable, "TCA_PIO_LATENCY_NS") == 0)
                seen = value == 800.0;
        NODE_CHECK(seen);  // the device's value
        b.barrier();
        return 0;
    }));
    unsetenv("TCA_PIO_LATENCY_NS");
}

// btl tca sends every rendezvous by copy where the device says a copy into
// another process is dear: where single copy is off (TCA_SINGLE_COPY=0), or a
// measurement (TCA_SINGLE_COPY=auto) chose the bounce path, and then the put
// mechanism names it; never where single copy is forced on.
TEST(Query, HostPutsGoByTheTargetWhereSingleCopyIsOffOrDear) {
    for (const char *env : {"TCA_SINGLE_COPY=1", "TCA_SINGLE_COPY=0", "TCA_SINGLE_COPY=auto"}) {
        NodeOptions opt;
        opt.env = env;
        const bool measured = std::strcmp(env, "TCA_SINGLE_COPY=auto") == 0;
        const bool off = std::strcmp(env, "TCA_SINGLE_COPY=0") == 0;
        EXPECT_TRUE(run_nodes(
            2,
            [measured, off](int, Board &b) {
                tcaBackendAttr a{};
                NODE_OK(tcaQueryBackend(&a));
                const bool bounced = std::strstr(a.put_mechanism, "bounce") != nullptr;
                NODE_CHECK(!off || bounced);
                NODE_CHECK(a.host_puts_by_target == (off || (measured && bounced) ? 1 : 0));
                if (measured)
                    NODE_CHECK(std::strstr(a.put_mechanism, "(measured on node 0: ") != nullptr);
                b.barrier();
                return 0;
            },
            opt))
            << env;
    }
}

// TCA_SINGLE_COPY=auto: node 0 measures and every node takes its answer, so
// that ranks never put by different paths in one job (each measured for
// itself, a measurement near the rule's limit split them).
TEST(Query, EveryNodeTakesNodeZerosMeasuredPath) {
    NodeOptions opt;
    opt.env = "TCA_SINGLE_COPY=auto";
    EXPECT_TRUE(run_nodes(
        3,
        [](int node, Board &b) {
            tcaBackendAttr a{};
            NODE_OK(tcaQueryBackend(&a));
            NODE_CHECK(std::strstr(a.put_mechanism, "(measured on node 0: ") != nullptr);
            // The whole text, numbers included, is node 0's on every node.
            b.value[node].store(static_cast<int>(std::hash<std::string>{}(a.put_mechanism)));
            b.barrier();
            NODE_CHECK(b.value[node].load() == b.value[0].load());
            b.barrier();
            return 0;
        },
        opt));
}

}  // namespace
}  // namespace tca::test
