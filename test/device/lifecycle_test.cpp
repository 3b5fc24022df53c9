// lifecycle_test.cpp - shared-memory segments: gone after a normal end, gone
// after a killed process (survivors or the next start remove them), private
// to the user (mode 0600).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

#include "harness.hpp"

namespace tca::test {
namespace {

TEST(Lifecycle, NoSegmentsAfterNormalEnd) {
    NodeOptions opt;
    opt.job_key = unique_job_key("normal");
    EXPECT_TRUE(run_nodes(
        4,
        [](int, Board &b) {
            b.barrier();
            return 0;
        },
        opt));
    EXPECT_EQ(count_segments(opt.job_key), 0);
}

TEST(Lifecycle, SegmentsArePrivateToTheUser) {
    NodeOptions opt;
    opt.job_key = unique_job_key("mode");
    const std::string key = opt.job_key;
    EXPECT_TRUE(run_nodes(
        1,
        [key](int, Board &) {
            struct stat st {};
            char path[256];
            NODE_OK(tcaGetBackingPath(path, sizeof path));
            // /dev/shm/tca-<uid>-<key>-<node>-<16 random hex digits>
            const std::string prefix =
                "/dev/shm/tca-" + std::to_string(getuid()) + "-" + key + "-0-";
            NODE_CHECK(std::string(path).rfind(prefix, 0) == 0);
            NODE_CHECK(std::strlen(path) == prefix.size() + 16);
            NODE_CHECK(stat(path, &st) == 0);
            NODE_CHECK((st.st_mode & 07777) == 0600);
            NODE_CHECK(st.st_uid == getuid());
            NODE_CHECK(st.st_nlink == 1);
            return 0;
        },
        opt));
}

// A whole job killed: nobody survives to clean up, so the next start of any
// job of this user removes the leftovers.
TEST(Lifecycle, NextStartRemovesSegmentsOfAKilledJob) {
    NodeOptions dead;
    dead.job_key = unique_job_key("dead");
    dead.killed_node = 0;
    EXPECT_TRUE(run_nodes(
        1,
        [](int, Board &) {
            raise(SIGKILL);
            return 1;
        },
        dead));
    EXPECT_EQ(count_segments(dead.job_key), 1) << "the killed job should have left its segment";
    EXPECT_TRUE(run_nodes(1, [](int, Board &) { return 0; }));
    EXPECT_EQ(count_segments(dead.job_key), 0) << "the next start should have removed it";
}

// Restarting a killed node of the same job takes over its stale segment.
TEST(Lifecycle, RestartWithSameKeyAfterKill) {
    NodeOptions opt;
    opt.job_key = unique_job_key("restart");
    opt.killed_node = 0;
    EXPECT_TRUE(run_nodes(
        1,
        [](int, Board &) {
            raise(SIGKILL);
            return 1;
        },
        opt));
    opt.killed_node = -1;
    EXPECT_TRUE(run_nodes(
        1, [](int, Board &) { return 0; }, opt));
    EXPECT_EQ(count_segments(opt.job_key), 0);
}

// Launch information from the environment (as under mpirun), no parameters.
TEST(Lifecycle, InitFromEnvironment) {
    NodeOptions opt;
    opt.init = false;
    const std::string key = unique_job_key("env");
    opt.env = "TCA_JOB_KEY=" + key + ";TCA_NUM_NODES=3";
    EXPECT_TRUE(run_nodes(
        3,
        [](int node, Board &b) {
            setenv("TCA_NODE_ID", std::to_string(node).c_str(), 1);
            NODE_OK(tcaInit());
            int id = -1, n = -1, hops = -1;
            NODE_OK(tcaGetNodeId(&id));
            NODE_OK(tcaGetNumNodes(&n));
            NODE_OK(tcaGetHopCount(0, 2, &hops));
            NODE_CHECK(id == node && n == 3 && hops == 1);
            NODE_EXPECT_RESULT(tcaErrorInvalidNode, tcaGetHopCount(0, 3, &hops));
            b.end_barrier(node);  // a slower node may still be in the init rendezvous
            NODE_OK(tcaFinalize());
            return 0;
        },
        opt));
    EXPECT_EQ(count_segments(key), 0);
}

// TCA_DEVICE names the backend: anything but loopback and ucx is refused by
// name, loopback is the default's explicit name, and ucx outside a PMIx
// launcher (no mpirun here) fails with a reason instead of waiting for peers.
TEST(Lifecycle, TheDeviceIsChosenByName) {
    NodeOptions opt;
    opt.init = false;
    for (const char *env :
         {"TCA_DEVICE=bogus", "TCA_DEVICE=", "TCA_DEVICE=loopback", "TCA_DEVICE=ucx"}) {
        opt.env = env;
        opt.job_key = unique_job_key("device");
        EXPECT_TRUE(run_nodes(
            1,
            [](int, Board &) {
                const std::string which = getenv("TCA_DEVICE");
                const tcaResult r = tcaInit();
                if (which == "loopback") {
                    NODE_OK(r);
                    tcaDeviceAttr a{};
                    NODE_OK(tcaQueryDevice(&a));
                    tcaBackendAttr b{};
                    NODE_OK(tcaQueryBackend(&b));
                    NODE_CHECK(std::string(b.backend) == "loopback");
                    NODE_OK(tcaFinalize());
                } else if (which == "ucx") {
                    NODE_CHECK(r == tcaErrorNotSupported);
                } else {
                    NODE_CHECK(r == tcaErrorInvalidValue);
                }
                return 0;
            },
            opt))
            << env;
    }
}

// The harness ends every test with a barrier before tcaFinalize: a node whose
// body returns first must not tear its device down while a slower peer still
// writes to it (Counters.NoLostWakeUps failed that way under load).
TEST(Lifecycle, LastRemoteWriteBeforePeerReturnsIsSafe) {
    EXPECT_TRUE(run_nodes(2, [](int node, Board &) {
        if (node == 1) {
            usleep(300 * 1000);                     // node 0 is long done with its body
            NODE_OK(tcaCounterAddRemote(0, 7, 1));  // PeerGone if node 0 had finalized
        }
        return 0;
    }));
}

// A node that fails before a barrier of the body does not hang the others
// there either: they fail at once, not at the deadline.
TEST(Lifecycle, FailedNodeDoesNotHangABarrier) {
    NodeOptions opt;
    opt.timeout_s = 60;
    const auto t0 = std::chrono::steady_clock::now();
    const ::testing::AssertionResult r = run_nodes(
        3,
        [](int node, Board &b) {
            if (node == 2)
                std::_Exit(7);
            b.barrier();
            return 0;
        },
        opt);
    EXPECT_FALSE(r);
    EXPECT_NE(std::string(r.message()).find("node 0 exited 4"), std::string::npos) << r.message();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

// A node that fails before the final barrier does not hang the others there.
TEST(Lifecycle, FailedNodeDoesNotHangTheFinalBarrier) {
    NodeOptions opt;
    opt.timeout_s = 60;
    const auto t0 = std::chrono::steady_clock::now();
    const ::testing::AssertionResult r = run_nodes(
        2,
        [](int node, Board &) {
            if (node == 1)
                std::_Exit(7);
            return 0;
        },
        opt);
    EXPECT_FALSE(r);
    EXPECT_NE(std::string(r.message()).find("node 1 exited 7"), std::string::npos) << r.message();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

}  // namespace
}  // namespace tca::test
