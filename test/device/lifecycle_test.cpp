// lifecycle_test.cpp - shared-memory segments: gone after a normal end, gone
// after a killed process (survivors or the next start remove them), private
// to the user (mode 0600).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "harness.hpp"

namespace tca::test {
namespace {

TEST(Lifecycle, NoSegmentsAfterNormalEnd) {
    NodeOptions opt;
    opt.job_key = unique_job_key("normal");
    EXPECT_TRUE(run_nodes(4, [](int, Board &b) {
        b.barrier();
        return 0;
    }, opt));
    EXPECT_EQ(count_segments(opt.job_key), 0);
}

TEST(Lifecycle, SegmentsArePrivateToTheUser) {
    NodeOptions opt;
    opt.job_key = unique_job_key("mode");
    const std::string key = opt.job_key;
    EXPECT_TRUE(run_nodes(1, [key](int, Board &) {
        struct stat st {};
        char path[256];
        NODE_OK(tcaGetBackingPath(path, sizeof path));
        // /dev/shm/tca-<uid>-<key>-<node>-<16 random hex digits>
        const std::string prefix = "/dev/shm/tca-" + std::to_string(getuid()) + "-" + key + "-0-";
        NODE_CHECK(std::string(path).rfind(prefix, 0) == 0);
        NODE_CHECK(std::strlen(path) == prefix.size() + 16);
        NODE_CHECK(stat(path, &st) == 0);
        NODE_CHECK((st.st_mode & 07777) == 0600);
        NODE_CHECK(st.st_uid == getuid());
        NODE_CHECK(st.st_nlink == 1);
        return 0;
    }, opt));
}

// A whole job killed: nobody survives to clean up, so the next start of any
// job of this user removes the leftovers.
TEST(Lifecycle, NextStartRemovesSegmentsOfAKilledJob) {
    NodeOptions dead;
    dead.job_key = unique_job_key("dead");
    dead.killed_node = 0;
    EXPECT_TRUE(run_nodes(1, [](int, Board &) {
        raise(SIGKILL);
        return 1;
    }, dead));
    EXPECT_EQ(count_segments(dead.job_key), 1) << "the killed job should have left its segment";
    EXPECT_TRUE(run_nodes(1, [](int, Board &) { return 0; }));
    EXPECT_EQ(count_segments(dead.job_key), 0) << "the next start should have removed it";
}

// Restarting a killed node of the same job takes over its stale segment.
TEST(Lifecycle, RestartWithSameKeyAfterKill) {
    NodeOptions opt;
    opt.job_key = unique_job_key("restart");
    opt.killed_node = 0;
    EXPECT_TRUE(run_nodes(1, [](int, Board &) {
        raise(SIGKILL);
        return 1;
    }, opt));
    opt.killed_node = -1;
    EXPECT_TRUE(run_nodes(1, [](int, Board &) { return 0; }, opt));
    EXPECT_EQ(count_segments(opt.job_key), 0);
}

// Launch information from the environment (as under mpirun), no parameters.
TEST(Lifecycle, InitFromEnvironment) {
    NodeOptions opt;
    opt.init = false;
    const std::string key = unique_job_key("env");
    opt.env = "TCA_JOB_KEY=" + key + ";TCA_NUM_NODES=3";
    EXPECT_TRUE(run_nodes(3, [](int node, Board &) {
        setenv("TCA_NODE_ID", std::to_string(node).c_str(), 1);
        NODE_OK(tcaInit());
        int id = -1, n = -1, hops = -1;
        NODE_OK(tcaGetNodeId(&id));
        NODE_OK(tcaGetNumNodes(&n));
        NODE_OK(tcaGetHopCount(0, 2, &hops));
        NODE_CHECK(id == node && n == 3 && hops == 1);
        NODE_EXPECT_RESULT(tcaErrorInvalidNode, tcaGetHopCount(0, 3, &hops));
        NODE_OK(tcaFinalize());
        return 0;
    }, opt));
    EXPECT_EQ(count_segments(key), 0);
}

}  // namespace
}  // namespace tca::test
