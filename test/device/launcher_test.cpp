// launcher_test.cpp - node discovery without Open MPI: N processes started
// with each launcher's environment faked (no launcher needed) find their node
// ids and node count from it, form one sub-cluster (a put with a notification
// between two of them), and an unknown launcher fails with a message saying so.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace tca::test {
namespace {

// Every variable any launcher reader looks at: a node starts from none of
// them, whatever the environment of the test run itself.
void clear_launcher_environment() {
    for (const char *v : {"TCA_JOB_KEY",
                          "TCA_NODE_ID",
                          "TCA_NUM_NODES",
                          "OMPI_COMM_WORLD_LOCAL_RANK",
                          "OMPI_COMM_WORLD_LOCAL_SIZE",
                          "OMPI_COMM_WORLD_SIZE",
                          "OMPI_MCA_ess_base_jobid",
                          "OMPI_MCA_orte_ess_jobid",
                          "PMIX_NAMESPACE",
                          "PMIX_RANK",
                          "PMIX_LOCAL_RANK",
                          "PMIX_LOCAL_SIZE",
                          "PMI_RANK",
                          "PMI_SIZE",
                          "PMI_JOBID",
                          "PMI_KVSNAME",
                          "MPI_LOCALRANKID",
                          "MPI_LOCALNRANKS",
                          "SLURM_JOB_ID",
                          "SLURM_JOBID",
                          "SLURM_STEP_ID",
                          "SLURM_STEPID",
                          "SLURM_LOCALID",
                          "SLURM_NODEID",
                          "SLURM_STEP_TASKS_PER_NODE",
                          "SLURM_NTASKS_PER_NODE",
                          "SLURM_TASKS_PER_NODE",
                          "SLURM_STEP_NUM_TASKS",
                          "MV2_COMM_WORLD_LOCAL_RANK",
                          "MV2_COMM_WORLD_LOCAL_SIZE",
                          "MV2_COMM_WORLD_RANK",
                          "MV2_COMM_WORLD_SIZE",
                          "MPIRUN_ID",
                          "MPIRUN_RANK",
                          "MPIRUN_NPROCS",
                          "MV2_NODE_ID",
                          "MV2_NUM_NODES_IN_JOB",
                          "PALS_RANKID",
                          "ALPS_APP_PE",
                          "FLUX_TASK_RANK",
                          "JSM_NAMESPACE_SIZE",
                          "MP_CHILD"})
        unsetenv(v);
}

void set(const char *name, const std::string &value) {
    setenv(name, value.c_str(), 1);
}

// Sets the launcher's variables for local rank `node` of `n` on this host.
// MPI ranks are deliberately not the node ids: rank = (node + 1) mod n, as in
// the published job scripts' unsorted host lists.
using FakeLauncher = std::function<void(int node, int n, const std::string &job)>;

void fake_mvapich2(int node, int n, const std::string &job) {
    const std::string rank = std::to_string((node + 1) % n);
    set("MPIRUN_ID", job);
    set("MPIRUN_RANK", rank);
    set("MPIRUN_NPROCS", std::to_string(n));
    set("MV2_COMM_WORLD_RANK", rank);
    set("MV2_COMM_WORLD_SIZE", std::to_string(n));
    set("MV2_COMM_WORLD_LOCAL_RANK", std::to_string(node));
    set("MV2_COMM_WORLD_LOCAL_SIZE", std::to_string(n));
    set("MV2_NODE_ID", "0");
    set("MV2_NUM_NODES_IN_JOB", "1");
}

// mpirun_rsh of MVAPICH2 versions that export no local rank: one host.
void fake_mvapich2_global_only(int node, int n, const std::string &job) {
    set("MPIRUN_ID", job);
    set("MPIRUN_RANK", std::to_string(node));
    set("MPIRUN_NPROCS", std::to_string(n));
    set("MV2_COMM_WORLD_SIZE", std::to_string(n));
    set("MV2_NODE_ID", "0");
    set("MV2_NUM_NODES_IN_JOB", "1");
}

void fake_slurm(int node, int n, const std::string &job) {
    set("SLURM_JOB_ID", job);
    set("SLURM_STEP_ID", "3");
    set("SLURM_LOCALID", std::to_string(node));
    set("SLURM_NODEID", "1");  // the second host of the step: its entry in the list counts
    set("SLURM_STEP_TASKS_PER_NODE", "1," + std::to_string(n) + "(x2)");
    set("SLURM_TASKS_PER_NODE", "7(x3)");  // the allocation's: the step's list wins
    set("SLURM_STEP_NUM_TASKS", std::to_string(n + 1));
}

// Hydra names no job: the processes of one job share the proxy (here: the
// test process, the parent of every node).
void fake_hydra(int node, int n, const std::string &) {
    set("PMI_RANK", std::to_string((node + 1) % n));
    set("PMI_SIZE", std::to_string(n));
    set("MPI_LOCALRANKID", std::to_string(node));
    set("MPI_LOCALNRANKS", std::to_string(n));
}

void fake_pmix(int node, int n, const std::string &job) {
    set("PMIX_NAMESPACE", job);
    set("PMIX_RANK", std::to_string((node + 1) % n));
    set("PMIX_LOCAL_RANK", std::to_string(node));
    set("PMIX_LOCAL_SIZE", std::to_string(n));
}

void fake_open_mpi(int node, int n, const std::string &job) {
    set("PMIX_NAMESPACE", job);
    set("PMIX_RANK", std::to_string((node + 1) % n));
    set("OMPI_COMM_WORLD_SIZE", std::to_string(n));
    set("OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(node));
    set("OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(n));
}

// n processes of one faked job: every one finds its node id and the node
// count from the launcher's variables alone, and the first and last form one
// sub-cluster with the others: the last puts into the first's host memory
// with a notification, the first checks the data after waiting for it.
void expect_one_subcluster(const FakeLauncher &fake, int n, const char *what) {
    NodeOptions opt;
    opt.init = false;
    const std::string job = unique_job_key(what);
    EXPECT_TRUE(run_nodes(
        n,
        [&](int node, Board &b) {
            clear_launcher_environment();
            fake(node, n, job);
            NODE_OK(tcaInit());
            int id = -1, count = -1;
            NODE_OK(tcaGetNodeId(&id));
            NODE_OK(tcaGetNumNodes(&count));
            NODE_CHECK(id == node);
            NODE_CHECK(count == n);
            constexpr size_t kBytes = 256;
            void *buf = nullptr;
            NODE_OK(tcaMalloc(&buf, kBytes, tcaMemoryCPU));
            std::memset(buf, 0, kBytes);
            tcaHandle mine{};
            NODE_OK(tcaCreateHandle(&mine, buf, kBytes, tcaMemoryCPU));
            NODE_CHECK(mine.node == node);
            b.publish(node, 0, mine);
            b.barrier();
            const int first = 0, last = n - 1;
            if (node == last) {
                fill_pattern(buf, kBytes, 77);
                tcaHandle dst = b.get(first, 0);
                NODE_OK(tcaPioWrite(&dst, 0, buf, kBytes, tcaDMANotify, 1, 5));
            } else if (node == first) {
                tcaHandle from = b.get(last, 0);
                NODE_OK(tcaWaitDMARecvDesc(&from, 1, 5));
                NODE_CHECK(check_pattern(buf, kBytes, 77));
            }
            b.barrier();
            NODE_OK(tcaDestroyHandle(&mine));
            NODE_OK(tcaFree(buf, tcaMemoryCPU));
            b.end_barrier(node);
            NODE_OK(tcaFinalize());
            return 0;
        },
        opt))
        << what;
}

TEST(Launcher, Mvapich2MpirunRsh) {
    expect_one_subcluster(fake_mvapich2, 3, "mv2");
}
TEST(Launcher, Mvapich2WithoutLocalRank) {
    expect_one_subcluster(fake_mvapich2_global_only, 2, "mv2g");
}
TEST(Launcher, SlurmSrun) {
    expect_one_subcluster(fake_slurm, 3, "slurm");
}
TEST(Launcher, PmiHydra) {
    expect_one_subcluster(fake_hydra, 3, "hydra");
}
TEST(Launcher, Pmix) {
    expect_one_subcluster(fake_pmix, 2, "pmix");
}
TEST(Launcher, OpenMpi) {
    expect_one_subcluster(fake_open_mpi, 2, "ompi");
}

// A launcher tca cannot read: tcaInit fails (not a later stale-handle error)
// and says why, naming the variable that gave the launcher away.
TEST(Launcher, UnknownLauncherFailsAndSaysSo) {
    NodeOptions opt;
    opt.init = false;
    EXPECT_TRUE(run_nodes(
        1,
        [](int, Board &) {
            clear_launcher_environment();
            set("PALS_RANKID", "1");  // Cray PALS: not read by tca
            int fds[2];
            NODE_CHECK(pipe(fds) == 0);
            const int saved = dup(2);
            dup2(fds[1], 2);
            const tcaResult r = tcaInit();
            dup2(saved, 2);
            close(fds[1]);
            char msg[2048] = {};
            const ssize_t k = read(fds[0], msg, sizeof msg - 1);
            NODE_CHECK(k > 0);
            NODE_EXPECT_RESULT(tcaErrorNotSupported, r);
            NODE_CHECK(std::strstr(msg, "launcher") != nullptr);
            NODE_CHECK(std::strstr(msg, "PALS_RANKID=1") != nullptr);
            NODE_CHECK(std::strstr(msg, "TCA_NODE_ID") != nullptr);
            return 0;
        },
        opt));
}

}  // namespace
}  // namespace tca::test
